//! The PostgreSQL store (`--store postgres://…`): any number of interchangeable nodes keep
//! their repositories in one PostgreSQL database and hold only caches (docs/design.md §12.5).
//!
//! Each open repository is a *replica* on the node: a core `Repo` over `MemStorage`, built
//! from the repository's rows in sequence order, so the `Hub`'s commit-table positions are
//! the sequence numbers stored in PostgreSQL. A push is verified against the replica inside
//! the transaction that holds the repository's row lock, after the replica has taken in what
//! other nodes stored; it is acknowledged only after that transaction committed. The
//! committing transaction NOTIFYs the other nodes, which take the new rows into their
//! replicas and relay them to their own subscribers.
//!
//! | file         | what                                                                  |
//! |--------------|-----------------------------------------------------------------------|
//! | `mod.rs`     | `Pg`: the connection settings, the pool, running a query from a thread |
//! | `pool.rs`    | a bounded pool of connections, re-made when they break                |
//! | `schema.rs`  | versioned migrations, applied at start-up                             |
//! | `rows.rs`    | every SQL statement: repositories, commits, seals, snapshots, NOTIFY  |
//! | `replica.rs` | `PgRepo`: the replica, built and brought up to date from the rows     |
//! | `push.rs`    | the push transaction                                                  |
//! | `listen.rs`  | LISTEN: notices from other nodes to the repository threads            |
//! | `attachments.rs` | attachment bytes: a file's row and its chunk rows                 |

mod attachments;
pub mod listen;
mod pool;
mod push;
mod replica;
mod rows;
mod schema;

pub use attachments::Put;
pub use replica::PgRepo;

use crate::config::Config;
use crate::metrics::Metrics;
use ibexdb::Error;
use pool::Pool;
use std::fmt::Display;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

/// The notification channel: payload `"HEAD NAME"` (repository NAME now has HEAD commits).
pub const CHANNEL: &str = "ibexdb_commits";

/// A node's link to PostgreSQL, shared by its repository threads.
pub struct Pg {
    config: tokio_postgres::Config,
    pool: Pool,
    /// The longest wait for one operation (`--pg-timeout-ms`).
    timeout: Duration,
    metrics: Arc<Metrics>,
    runtime: tokio::runtime::Handle,
    /// The LISTEN connection is up (`/healthz` answers 503 while it is not).
    listening: AtomicBool,
}

/// An error of PostgreSQL (unreachable, a failed statement, a timeout) as the client sees it.
pub fn unavailable(e: impl Display) -> Error {
    Error::Unavailable {
        detail: format!("PostgreSQL: {e}"),
    }
}

impl Pg {
    /// Connect, apply the schema's migrations, and keep a pool of `--pg-connections`.
    pub async fn connect(
        url: &str,
        cfg: &Config,
        metrics: &Arc<Metrics>,
    ) -> Result<Arc<Pg>, String> {
        let mut config: tokio_postgres::Config = url.parse().map_err(|e| format!("{e}"))?;
        config
            .application_name("ibexdb-server")
            .connect_timeout(cfg.pg_timeout)
            .tcp_user_timeout(cfg.pg_timeout)
            .keepalives_idle(Duration::from_secs(5))
            .keepalives_interval(Duration::from_secs(1))
            .keepalives_retries(3);
        let pool = Pool::new(config.clone(), cfg.pg_connections, cfg.pg_timeout);
        schema::migrate(&pool)
            .await
            .map_err(|e| format!("cannot prepare the PostgreSQL schema: {e}"))?;
        Ok(Arc::new(Pg {
            config,
            pool,
            timeout: cfg.pg_timeout,
            metrics: metrics.clone(),
            runtime: tokio::runtime::Handle::current(),
            listening: AtomicBool::new(false),
        }))
    }

    /// Whether repository `name` holds at least one commit (a repository is created only by
    /// its verified root: a name without commits does not exist).
    pub async fn exists(&self, name: &str) -> Result<bool, Error> {
        let mut conn = self.pool.get().await?;
        let db = rows::Db::new(&*conn.client(), self.timeout);
        let found = db.repo(name).await.map_err(|e| e.error().clone())?;
        conn.release();
        Ok(found.is_some_and(|(_, head)| head > 0))
    }

    pub fn listening(&self) -> bool {
        self.listening.load(SeqCst)
    }

    /// Run `f` to completion on the calling repository thread (never a runtime thread): the
    /// connections' I/O is driven by the server's runtime.
    fn run<F: Future>(&self, f: F) -> F::Output {
        self.runtime.block_on(f)
    }
}
