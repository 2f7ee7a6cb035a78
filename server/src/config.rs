//! The command line: every flag, its default, and the `--help` text (docs/design.md §12.3).

use ibexdb::MAX_MESSAGE_BYTES;
use std::path::PathBuf;
use std::time::Duration;

const MIB: u64 = 1 << 20;

/// Where the repositories are kept.
#[derive(Debug, Clone, PartialEq)]
pub enum Store {
    /// The embedded file store: `DIR/NAME.log` and `DIR/NAME.snapshot` (one node).
    Files(PathBuf),
    /// PostgreSQL at this connection URL (any number of nodes share it).
    Postgres(String),
}

/// Everything the server is told on its command line.
#[derive(Debug, Clone)]
pub struct Config {
    pub store: Store,
    pub listen: String,
    /// URLs clients use to reach this server (bound into their session proofs, §12.3).
    pub public_urls: Vec<String>,
    pub accept_trusted: bool,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    pub max_message_bytes: usize,
    pub max_connections: usize,
    pub max_connections_per_ip: usize,
    pub push_rate: f64,
    pub push_burst: f64,
    pub push_bytes_rate: f64,
    pub push_bytes_burst: f64,
    pub queue_bytes: usize,
    pub queue_messages: usize,
    pub batch_bytes: usize,
    pub max_parked_bytes: usize,
    /// Largest attachment a client may upload, and the most attachment bytes one repository
    /// keeps (docs/design.md §12.2, *Attachment bytes*).
    pub max_attachment_bytes: u64,
    pub max_repo_attachment_bytes: u64,
    pub max_unknown_sealed: usize,
    pub session_unknown_sealed_bytes: usize,
    pub message_timeout: Duration,
    pub reserved_connections: usize,
    pub max_repos: usize,
    pub max_repos_per_ip: usize,
    pub creates_per_ip: usize,
    /// Sessions without read right that wait for a grant, per source address and per repository.
    pub max_waiting_per_ip: usize,
    pub max_waiting_per_repo: usize,
    /// Longest a session waits for a grant.
    pub max_waiting: Duration,
    pub repo_idle: Duration,
    pub repo_retry: Duration,
    pub handshake_timeout: Duration,
    pub idle_timeout: Duration,
    pub snapshot_tail_bytes: u64,
    pub shutdown_timeout: Duration,
    /// PostgreSQL connections per node (the pool repository threads share).
    pub pg_connections: usize,
    /// Longest wait for one PostgreSQL operation (connect, query, commit).
    pub pg_timeout: Duration,
    /// Bearer tokens (docs/design.md §12.4): the JWKS file, the audience, the issuer.
    /// A file, or an `https://` URL (`http://` to a loopback address) fetched and refreshed.
    pub auth_jwks: Option<String>,
    /// The CA certificates (PEM) an `https://` JWKS URL is verified against (else the system's).
    pub auth_jwks_ca: Option<PathBuf>,
    /// At most one fetch of a JWKS URL per this when tokens name unknown keys.
    pub auth_jwks_refresh: Duration,
    /// A JWKS URL is fetched again at least this often.
    pub auth_jwks_max_age: Duration,
    pub auth_audience: Option<String>,
    pub auth_issuer: Option<String>,
    /// Clock difference tolerated on a token's `exp` and `nbf`; a session ends at `exp` plus it.
    pub auth_leeway_s: u64,
}

/// One flag: name, value name (empty for a switch), default shown in `--help`, description.
type Flag = (&'static str, &'static str, &'static str, &'static str);

const FLAGS: &[Flag] = &[
    (
        "--data",
        "DIR",
        "(this or --store)",
        "directory of the repositories: NAME.log and NAME.snapshot (one node)",
    ),
    (
        "--store",
        "URL",
        "(this or --data)",
        "postgres://USER@HOST:PORT/DB: keep repositories in PostgreSQL; any number of nodes may share it",
    ),
    (
        "--pg-connections",
        "N",
        "16",
        "PostgreSQL connections per node, shared by its repositories (plus one for LISTEN)",
    ),
    (
        "--pg-timeout-ms",
        "MS",
        "5000",
        "longest wait for one PostgreSQL operation; past it the client gets UnavailableError",
    ),
    (
        "--listen",
        "HOST:PORT",
        "127.0.0.1:8787",
        "address for WebSocket, /healthz and /metrics (port 0: any)",
    ),
    (
        "--public-url",
        "URL",
        "the listen address",
        "a ws:// or wss:// URL clients dial (repeatable; their session proofs name it)",
    ),
    (
        "--accept-trusted",
        "",
        "off",
        "accept unsigned (trusted-mode) commits where the access list lets anyone write, and let keyless sessions create unowned (public) repositories",
    ),
    (
        "--tls-cert",
        "FILE",
        "none",
        "PEM certificate chain: serve wss:// and https:// (with --tls-key)",
    ),
    (
        "--tls-key",
        "FILE",
        "none",
        "PEM private key (PKCS#8, PKCS#1 or SEC1)",
    ),
    (
        "--max-message-bytes",
        "N",
        "16777216",
        "largest WebSocket message or frame (at most 83886080)",
    ),
    (
        "--max-connections",
        "N",
        "10000",
        "connections held at once",
    ),
    (
        "--max-connections-per-ip",
        "N",
        "256",
        "connections held at once from one source address (IPv4) or /64 (IPv6)",
    ),
    (
        "--reserved-connections",
        "N",
        "1000",
        "the last N places of --max-connections go only to addresses holding fewer than 2",
    ),
    (
        "--push-rate",
        "N",
        "200",
        "pushes per second per client address (an IPv4 address or IPv6 /64; token bucket rate, shared by its connections, not refilled by reconnecting)",
    ),
    (
        "--push-burst",
        "N",
        "400",
        "pushes a client address may make at once (token bucket size)",
    ),
    (
        "--push-bytes-rate",
        "N",
        "8388608",
        "pushed bytes per second per connection",
    ),
    (
        "--push-bytes-burst",
        "N",
        "33554432",
        "pushed bytes at once per connection (at least --max-message-bytes)",
    ),
    (
        "--queue-bytes",
        "N",
        "8388608",
        "bytes queued to one connection; a live reader past it is dropped",
    ),
    (
        "--queue-messages",
        "N",
        "4096",
        "messages queued to one connection; a live reader past it is dropped",
    ),
    (
        "--batch-bytes",
        "N",
        "65536",
        "target bytes of one catch-up message (1024..=1048576)",
    ),
    (
        "--max-parked-bytes",
        "N",
        "67108864",
        "bytes of commits per repository waiting for missing parents (kept encoded)",
    ),
    (
        "--max-attachment-bytes",
        "N",
        "1073741824",
        "largest attachment a client may upload (LimitError `attachment size`)",
    ),
    (
        "--max-repo-attachment-bytes",
        "N",
        "10737418240",
        "attachment bytes one repository keeps (LimitError `attachment bytes`; 0: no uploads)",
    ),
    (
        "--max-unknown-sealed",
        "N",
        "100000",
        "ids per repository covered by seals whose commits are missing",
    ),
    (
        "--session-unknown-sealed-bytes",
        "N",
        "1048576",
        "bytes of ids (32 each) one session's seals may leave covered without their commits",
    ),
    (
        "--max-repos",
        "N",
        "256",
        "repositories open at once (the least recently used idle one is closed)",
    ),
    (
        "--max-repos-per-ip",
        "N",
        "16",
        "repositories one source address may use at once (keep it below --max-repos)",
    ),
    (
        "--creates-per-ip",
        "N",
        "60",
        "repositories one source address may create per minute (token bucket)",
    ),
    (
        "--max-waiting-per-ip",
        "N",
        "8",
        "sessions of one source address waiting for a grant (not yet readers) at once",
    ),
    (
        "--max-waiting-per-repo",
        "N",
        "64",
        "sessions waiting for a grant in one repository at once (when full, a session from an address holding fewer places takes one from the address holding the most)",
    ),
    (
        "--max-waiting-ms",
        "MS",
        "600000",
        "longest a session waits for a grant before it is refused and closed",
    ),
    (
        "--repo-idle-ms",
        "MS",
        "60000",
        "close a repository no connection used for this long",
    ),
    (
        "--repo-retry-ms",
        "MS",
        "5000",
        "after a repository failed to open, answer Unavailable this long",
    ),
    (
        "--handshake-timeout-ms",
        "MS",
        "10000",
        "from accept to the client's Hello (TLS, HTTP, WebSocket)",
    ),
    (
        "--idle-timeout-ms",
        "MS",
        "60000",
        "close a connection silent this long (pinged after half of it)",
    ),
    (
        "--message-timeout-ms",
        "MS",
        "60000",
        "a message begun must be complete within this (pongs do not extend it)",
    ),
    (
        "--snapshot-tail-bytes",
        "N",
        "67108864",
        "write NAME.snapshot when the log grew this much past it",
    ),
    (
        "--shutdown-timeout-ms",
        "MS",
        "10000",
        "on SIGTERM, wait this long for connections to finish",
    ),
    (
        "--auth-jwks",
        "FILE|URL",
        "none",
        "a JWKS (JSON) of the app's identity provider: every connection must present a bearer token it signed (ES256, RS256); its ibexdb_repos and ibexdb_create claims bound what it may open or create. An https:// URL (http:// only to 127.0.0.1, [::1], localhost) is fetched at start, again when a token names an unknown kid, and hourly; a failed or oversized fetch keeps the keys",
    ),
    (
        "--auth-jwks-ca",
        "FILE",
        "system",
        "CA certificates (PEM) an https:// --auth-jwks URL is verified against (default: SSL_CERT_FILE, else the system bundle)",
    ),
    (
        "--auth-jwks-refresh-ms",
        "MS",
        "30000",
        "at most one fetch of the --auth-jwks URL per this (from the end of the last) when tokens name unknown keys",
    ),
    (
        "--auth-jwks-max-age-ms",
        "MS",
        "3600000",
        "fetch the --auth-jwks URL again at least this often (a key the provider removed stops being trusted within it)",
    ),
    (
        "--auth-audience",
        "AUD",
        "none",
        "the aud a bearer token must name (required with --auth-jwks)",
    ),
    (
        "--auth-issuer",
        "ISS",
        "any",
        "the iss a bearer token must carry",
    ),
    (
        "--auth-leeway-s",
        "S",
        "60",
        "clock difference tolerated on a bearer token's exp and nbf; a session ends (AuthError token-expired) at exp plus this",
    ),
    ("--help", "", "", "print this help"),
];

/// The `--help` text.
pub fn help() -> String {
    let mut s = String::from(
        "ibexdb-server: verifies, stores and relays signed commits over WebSocket.\n\n\
         usage: ibexdb-server --data DIR | --store postgres://… [--listen HOST:PORT] [FLAGS]\n\n\
         The listener also answers plain HTTP GET /healthz and GET /metrics (Prometheus).\n\
         SIGTERM or Ctrl-C: stop accepting, finish pushes, tell clients, write snapshots, exit 0.\n\n\
         flags (default in brackets):\n",
    );
    for (name, value, default, what) in FLAGS {
        let flag = format!("{name} {value}");
        let default = if default.is_empty() {
            String::new()
        } else {
            format!(" [{default}]")
        };
        s.push_str(&format!("  {flag:<28} {what}{default}\n"));
    }
    s
}

impl Config {
    fn defaults(store: Store) -> Config {
        Config {
            store,
            listen: "127.0.0.1:8787".into(),
            public_urls: Vec::new(),
            accept_trusted: false,
            tls_cert: None,
            tls_key: None,
            max_message_bytes: 16 * MIB as usize,
            max_connections: 10_000,
            max_connections_per_ip: 256,
            push_rate: 200.0,
            push_burst: 400.0,
            push_bytes_rate: 8.0 * MIB as f64,
            push_bytes_burst: 32.0 * MIB as f64,
            queue_bytes: 8 * MIB as usize,
            queue_messages: 4096,
            batch_bytes: 64 << 10,
            max_parked_bytes: 64 * MIB as usize,
            max_attachment_bytes: 1 << 30,
            max_repo_attachment_bytes: 10 << 30,
            max_unknown_sealed: 100_000,
            session_unknown_sealed_bytes: MIB as usize,
            message_timeout: Duration::from_secs(60),
            reserved_connections: 1000,
            max_repos: 256,
            max_repos_per_ip: 16,
            creates_per_ip: 60,
            max_waiting_per_ip: 8,
            max_waiting_per_repo: 64,
            max_waiting: Duration::from_secs(600),
            repo_idle: Duration::from_secs(60),
            repo_retry: Duration::from_secs(5),
            handshake_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            snapshot_tail_bytes: 64 * MIB,
            shutdown_timeout: Duration::from_secs(10),
            pg_connections: 16,
            pg_timeout: Duration::from_secs(5),
            auth_jwks: None,
            auth_jwks_ca: None,
            auth_jwks_refresh: Duration::from_secs(30),
            auth_jwks_max_age: Duration::from_secs(3600),
            auth_audience: None,
            auth_issuer: None,
            auth_leeway_s: crate::auth::LEEWAY_S,
        }
    }

    /// The `host:port` forms clients may have dialed: the `--public-url`s, and the bound address
    /// (the loopback names too for a loopback or unspecified address).
    pub fn hosts(&self, bound: std::net::SocketAddr) -> Vec<String> {
        let mut hosts: Vec<String> = self
            .public_urls
            .iter()
            .filter_map(|u| ibexdb::url_authority(u))
            .collect();
        let port = bound.port();
        if bound.ip().is_unspecified() || bound.ip().is_loopback() {
            for h in ["localhost", "127.0.0.1", "[::1]"] {
                hosts.push(format!("{h}:{port}"));
            }
        }
        if !bound.ip().is_unspecified() {
            hosts.push(bound.to_string());
        }
        hosts
    }

    /// Parse `--flag value` and `--flag=value` arguments. `Ok(None)` means `--help`.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Option<Config>, String> {
        let mut cfg = Config::defaults(Store::Files(PathBuf::new()));
        let mut store = None;
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let (name, inline) = match arg.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (arg.clone(), None),
            };
            let Some(flag) = FLAGS.iter().find(|f| f.0 == name) else {
                return Err(format!("unknown argument {arg:?} (see --help)"));
            };
            if name == "--help" {
                return Ok(None);
            }
            let value = match (flag.1.is_empty(), inline) {
                (true, None) => String::new(),
                (true, Some(_)) => return Err(format!("{name} takes no value")),
                (false, Some(v)) => v,
                (false, None) => args.next().ok_or_else(|| format!("{name} needs a value"))?,
            };
            match name.as_str() {
                "--data" | "--store" if store.is_some() => {
                    return Err("give one of --data DIR and --store URL".into())
                }
                "--data" => store = Some(Store::Files(PathBuf::from(value))),
                "--store" => store = Some(postgres_url(&value)?),
                _ => cfg.set(&name, &value)?,
            }
        }
        cfg.store = store.ok_or("--data DIR or --store URL is required (see --help)")?;
        cfg.check()?;
        Ok(Some(cfg))
    }

    fn set(&mut self, name: &str, v: &str) -> Result<(), String> {
        match name {
            "--listen" => self.listen = v.to_string(),
            "--public-url" => {
                if ibexdb::url_authority(v).is_none() {
                    return Err(format!("--public-url {v:?} is not a ws:// or wss:// URL"));
                }
                self.public_urls.push(v.to_string());
            }
            "--accept-trusted" => self.accept_trusted = true,
            "--tls-cert" => self.tls_cert = Some(PathBuf::from(v)),
            "--tls-key" => self.tls_key = Some(PathBuf::from(v)),
            "--max-message-bytes" => self.max_message_bytes = int(name, v)? as usize,
            "--max-connections" => self.max_connections = int(name, v)? as usize,
            "--max-connections-per-ip" => self.max_connections_per_ip = int(name, v)? as usize,
            "--push-rate" => self.push_rate = int(name, v)? as f64,
            "--push-burst" => self.push_burst = int(name, v)? as f64,
            "--push-bytes-rate" => self.push_bytes_rate = int(name, v)? as f64,
            "--push-bytes-burst" => self.push_bytes_burst = int(name, v)? as f64,
            "--queue-bytes" => self.queue_bytes = int(name, v)? as usize,
            "--queue-messages" => self.queue_messages = int(name, v)? as usize,
            "--batch-bytes" => self.batch_bytes = int(name, v)? as usize,
            "--max-parked-bytes" => self.max_parked_bytes = int(name, v)? as usize,
            "--max-attachment-bytes" => self.max_attachment_bytes = int(name, v)?,
            "--max-repo-attachment-bytes" => self.max_repo_attachment_bytes = int(name, v)?,
            "--max-unknown-sealed" => self.max_unknown_sealed = int(name, v)? as usize,
            "--session-unknown-sealed-bytes" => {
                self.session_unknown_sealed_bytes = int(name, v)? as usize
            }
            "--message-timeout-ms" => self.message_timeout = ms(name, v)?,
            "--reserved-connections" => self.reserved_connections = int(name, v)? as usize,
            "--max-repos" => self.max_repos = int(name, v)? as usize,
            "--max-repos-per-ip" => self.max_repos_per_ip = int(name, v)? as usize,
            "--creates-per-ip" => self.creates_per_ip = int(name, v)? as usize,
            "--max-waiting-per-ip" => self.max_waiting_per_ip = int(name, v)? as usize,
            "--max-waiting-per-repo" => self.max_waiting_per_repo = int(name, v)? as usize,
            "--max-waiting-ms" => self.max_waiting = ms(name, v)?,
            "--repo-idle-ms" => self.repo_idle = ms(name, v)?,
            "--repo-retry-ms" => self.repo_retry = ms(name, v)?,
            "--handshake-timeout-ms" => self.handshake_timeout = ms(name, v)?,
            "--idle-timeout-ms" => self.idle_timeout = ms(name, v)?,
            "--snapshot-tail-bytes" => self.snapshot_tail_bytes = int(name, v)?,
            "--shutdown-timeout-ms" => self.shutdown_timeout = ms(name, v)?,
            "--pg-connections" => self.pg_connections = int(name, v)? as usize,
            "--pg-timeout-ms" => self.pg_timeout = ms(name, v)?,
            "--auth-jwks" => {
                if crate::jwks_fetch::is_url(v) {
                    crate::jwks_fetch::parse(v).map_err(|e| format!("--auth-jwks {e}"))?;
                }
                self.auth_jwks = Some(v.to_string())
            }
            "--auth-jwks-ca" => self.auth_jwks_ca = Some(PathBuf::from(v)),
            "--auth-jwks-refresh-ms" => self.auth_jwks_refresh = ms(name, v)?,
            "--auth-jwks-max-age-ms" => self.auth_jwks_max_age = ms(name, v)?,
            "--auth-audience" => self.auth_audience = Some(v.to_string()),
            "--auth-issuer" => self.auth_issuer = Some(v.to_string()),
            "--auth-leeway-s" => self.auth_leeway_s = int(name, v)?,
            _ => unreachable!("flag {name} listed but not handled"),
        }
        Ok(())
    }

    fn check(&self) -> Result<(), String> {
        if self.max_message_bytes < 1024 || self.max_message_bytes > MAX_MESSAGE_BYTES {
            return Err(format!(
                "--max-message-bytes must be 1024..={MAX_MESSAGE_BYTES}"
            ));
        }
        if self.push_bytes_burst < self.max_message_bytes as f64 {
            return Err("--push-bytes-burst must be at least --max-message-bytes".into());
        }
        if self.auth_jwks.is_some() != self.auth_audience.is_some() {
            return Err("--auth-jwks and --auth-audience go together".into());
        }
        if self.auth_issuer.is_some() && self.auth_jwks.is_none() {
            return Err("--auth-issuer needs --auth-jwks".into());
        }
        if self.auth_jwks_ca.is_some()
            && !self
                .auth_jwks
                .as_deref()
                .is_some_and(|j| j.starts_with("https://"))
        {
            return Err("--auth-jwks-ca needs an https:// --auth-jwks URL".into());
        }
        if self.tls_cert.is_some() != self.tls_key.is_some() {
            return Err("--tls-cert and --tls-key go together".into());
        }
        let zero = [
            ("--max-connections", self.max_connections),
            ("--max-connections-per-ip", self.max_connections_per_ip),
            ("--queue-messages", self.queue_messages),
            ("--max-repos", self.max_repos),
            ("--max-repos-per-ip", self.max_repos_per_ip),
            ("--creates-per-ip", self.creates_per_ip),
            ("--pg-connections", self.pg_connections),
        ];
        if let Some((n, _)) = zero.iter().find(|(_, v)| *v == 0) {
            return Err(format!("{n} must be at least 1"));
        }
        if self.batch_bytes < 1024 || self.batch_bytes > 1 << 20 {
            return Err("--batch-bytes must be 1024..=1048576".into());
        }
        if self.queue_bytes < 4 * self.batch_bytes {
            return Err("--queue-bytes must hold four batches (--batch-bytes)".into());
        }
        if self.push_rate <= 0.0 || self.push_bytes_rate <= 0.0 || self.push_burst < 1.0 {
            return Err("push rates must be positive and --push-burst at least 1".into());
        }
        Ok(())
    }
}

/// `--store URL`: a PostgreSQL URL (`postgres://` or `postgresql://`) the client accepts.
fn postgres_url(v: &str) -> Result<Store, String> {
    if !(v.starts_with("postgres://") || v.starts_with("postgresql://")) {
        return Err(format!("--store wants a postgres:// URL, got {v:?}"));
    }
    v.parse::<tokio_postgres::Config>()
        .map_err(|e| format!("--store {v:?}: {e}"))?;
    Ok(Store::Postgres(v.to_string()))
}

fn int(name: &str, v: &str) -> Result<u64, String> {
    v.parse()
        .map_err(|_| format!("{name} wants a whole number, got {v:?}"))
}

fn ms(name: &str, v: &str) -> Result<Duration, String> {
    Ok(Duration::from_millis(int(name, v)?.max(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn flags_parse_with_defaults_and_errors() {
        let c = Config::parse(args("--data d --max-repos=3 --idle-timeout-ms 500"))
            .unwrap()
            .unwrap();
        assert_eq!(
            (c.max_repos, c.idle_timeout),
            (3, Duration::from_millis(500))
        );
        assert_eq!(c.listen, "127.0.0.1:8787");
        assert!(Config::parse(args("--help")).unwrap().is_none());
        assert!(Config::parse(args("--listen x")).is_err(), "no --data");
        let pg = Config::parse(args("--store postgres://u@127.0.0.1:5/db"))
            .unwrap()
            .unwrap();
        assert_eq!(
            pg.store,
            Store::Postgres("postgres://u@127.0.0.1:5/db".into())
        );
        assert!(Config::parse(args("--data d --store postgres://h/db")).is_err());
        assert!(Config::parse(args("--store mysql://h/db")).is_err());
        assert!(Config::parse(args("--data d --pg-connections 0")).is_err());
        assert!(Config::parse(args("--data d --nope")).is_err());
        assert!(Config::parse(args("--data d --max-repos x")).is_err());
        assert!(Config::parse(args("--data d --tls-cert c")).is_err());
        assert!(Config::parse(args("--data d --auth-jwks k.json")).is_err());
        assert!(Config::parse(args("--data d --auth-audience a")).is_err());
        assert!(Config::parse(args("--data d --auth-issuer i")).is_err());
        let a = Config::parse(args("--data d --auth-jwks k.json --auth-audience a"))
            .unwrap()
            .unwrap();
        assert_eq!(a.auth_audience.as_deref(), Some("a"));
        assert_eq!(a.auth_leeway_s, 60);
        // A JWKS URL: https, or http to loopback only; a CA file only for https.
        let url = "--data d --auth-audience a --auth-jwks";
        assert!(Config::parse(args(&format!("{url} https://idp.example/jwks"))).is_ok());
        assert!(Config::parse(args(&format!("{url} http://127.0.0.1:9/jwks"))).is_ok());
        assert!(Config::parse(args(&format!("{url} http://idp.example/jwks"))).is_err());
        assert!(Config::parse(args(&format!("{url} k.json --auth-jwks-ca ca.pem"))).is_err());
        assert!(Config::parse(args("--data d --max-message-bytes 999999999")).is_err());
        // --batch-bytes is a flag (it was validated but missing from FLAGS: refused as unknown).
        let b = Config::parse(args("--data d --batch-bytes 262144"))
            .unwrap()
            .unwrap();
        assert_eq!(b.batch_bytes, 262144);
        assert!(Config::parse(args("--data d --batch-bytes 512")).is_err());
        assert!(
            Config::parse(args("--data d --batch-bytes 1048576 --queue-bytes 2000000")).is_err()
        );
        for f in FLAGS {
            assert!(help().contains(f.0), "{} documented", f.0);
        }
    }
}
