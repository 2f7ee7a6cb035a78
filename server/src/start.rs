//! The server's life: start (the store: data directory or PostgreSQL, listener, TLS), serve
//! until SIGTERM or Ctrl-C, then shut down gracefully (stop accepting, let connections finish
//! their pushes and tell them, close every repository with a snapshot) and return.

use crate::auth::{Auth, RemoteOptions};
use crate::backend::Backend;
use crate::config::{Config, Store};
use crate::limits::{ConnLimiter, CreateLimiter, PushBudgets};
use crate::listener;
use crate::log;
use crate::metrics::Metrics;
use crate::pg::{self, listen::Notice, listen::OnNotice};
use crate::registry::Registry;
use crate::server::Server;
use crate::shutdown::{self, Shutdown};
use crate::tls;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// Connections told "too many connections" at once (the rest are closed untold).
const REFUSING_AT_ONCE: usize = 32;

/// Run the server to its end; the process exit code.
pub async fn run(cfg: Config) -> i32 {
    let cfg = Arc::new(cfg);
    let metrics = Arc::new(Metrics::default());
    let backend = match Backend::connect(&cfg, &metrics).await {
        Ok(b) => b,
        Err(e) => {
            eprintln!("ibexdb-server: {e}");
            return 1;
        }
    };
    let tls = match (&cfg.tls_cert, &cfg.tls_key) {
        (Some(c), Some(k)) => match tls::acceptor(c, k) {
            Ok(a) => Some(a),
            Err(e) => {
                eprintln!("{e}");
                return 1;
            }
        },
        _ => None,
    };
    let auth = match (&cfg.auth_jwks, &cfg.auth_audience) {
        (Some(jwks), Some(aud)) => {
            let opts = RemoteOptions {
                ca: cfg.auth_jwks_ca.clone(),
                min_interval: cfg.auth_jwks_refresh,
            };
            let claims = (aud.as_str(), cfg.auth_issuer.as_deref());
            match Auth::load(jwks, claims, cfg.auth_leeway_s, opts).await {
                Ok(a) => Some(a),
                Err(e) => {
                    eprintln!("ibexdb-server: {e}");
                    return 1;
                }
            }
        }
        _ => None,
    };
    let listener = match TcpListener::bind(&cfg.listen).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("cannot listen on {}: {e}", cfg.listen);
            return 1;
        }
    };
    let hosts = match listener.local_addr() {
        Ok(bound) => cfg.hosts(bound),
        Err(_) => Vec::new(),
    };
    let server = Arc::new(Server {
        hosts,
        registry: Registry::new(cfg.clone(), metrics.clone(), backend.clone()),
        backend: backend.clone(),
        conns: ConnLimiter::new(
            cfg.max_connections,
            cfg.max_connections_per_ip,
            cfg.reserved_connections,
        ),
        budgets: PushBudgets::new(
            cfg.push_rate,
            cfg.push_burst,
            cfg.push_bytes_rate,
            cfg.push_bytes_burst,
        ),
        creates: CreateLimiter::new(cfg.creates_per_ip),
        shutdown: Shutdown::new(),
        tls,
        auth,
        refusing: Arc::new(Semaphore::new(REFUSING_AT_ONCE)),
        next_conn: AtomicU64::new(1),
        attach_usage: Default::default(),
        cfg,
        metrics,
    });
    let addr = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    println!("ibexdb-server listening on {addr}");
    let _ = std::io::stdout().flush();
    let scheme = if server.tls.is_some() { "wss" } else { "ws" };
    log::event(
        "start",
        &[
            ("listen", &addr),
            ("scheme", &scheme),
            ("store", &store_name(&server.cfg.store)),
            ("auth", &server.auth.as_ref().map_or(0, |a| a.key_count())),
        ],
    );
    if let Backend::Postgres(pg) = &backend {
        let registry = server.registry.clone();
        let on_notice: OnNotice = Arc::new(move |n| match n {
            Notice::Stored { name, head } => registry.notify(name, head),
            Notice::Missed => registry.notify_all(),
        });
        tokio::spawn(pg::listen::run(pg.clone(), on_notice));
    }
    tokio::spawn(close_idle_repos(server.clone()));
    if server.auth.as_ref().is_some_and(|a| a.is_remote()) {
        tokio::spawn(refresh_jwks(server.clone()));
    }
    let accepting = tokio::spawn(listener::accept_loop(server.clone(), listener));
    shutdown::signalled().await;
    stop(&server, accepting).await;
    0
}

/// A JWKS URL's keys, fetched again every `--auth-jwks-max-age-ms` (a key the provider removed
/// is not trusted past it).
async fn refresh_jwks(server: Arc<Server>) {
    loop {
        tokio::time::sleep(server.cfg.auth_jwks_max_age).await;
        if let Some(auth) = &server.auth {
            auth.refresh("max-age").await;
        }
    }
}

/// The store for the log: the data directory, or PostgreSQL's hosts and database (never the
/// password).
fn store_name(store: &Store) -> String {
    match store {
        Store::Files(dir) => dir.display().to_string(),
        Store::Postgres(url) => match url.parse::<tokio_postgres::Config>() {
            Ok(c) => format!(
                "postgres:{:?}/{}",
                c.get_hosts(),
                c.get_dbname().unwrap_or("")
            ),
            Err(_) => "postgres".into(),
        },
    }
}

/// Close idle repositories every so often; repositories whose last look at the store failed
/// look again.
async fn close_idle_repos(server: Arc<Server>) {
    let every = (server.cfg.repo_idle / 4).clamp(Duration::from_millis(20), Duration::from_secs(1));
    loop {
        tokio::time::sleep(every).await;
        server.registry.close_idle();
        server.registry.retry_stale();
    }
}

async fn stop(server: &Arc<Server>, accepting: tokio::task::JoinHandle<()>) {
    log::event(
        "shutdown",
        &[("connections", &server.metrics.connections.load(Relaxed))],
    );
    server.shutdown.trigger();
    let _ = accepting.await;
    let deadline = tokio::time::Instant::now() + server.cfg.shutdown_timeout;
    while server.metrics.connections.load(Relaxed) > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    server.registry.close_all(server.cfg.shutdown_timeout).await;
    log::event(
        "stopped",
        &[("connections", &server.metrics.connections.load(Relaxed))],
    );
}
