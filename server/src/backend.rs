//! Which store this server keeps its repositories in (`--data DIR` or `--store postgres://…`):
//! made once at start-up, shared by the registry and every repository thread.

use crate::config::{Config, Store};
use crate::files;
use crate::metrics::Metrics;
use crate::pg::Pg;
use std::sync::Arc;

/// The core log's header (docs/design.md §4): a log no longer than it holds nothing.
const LOG_HEADER_LEN: u64 = 16;

/// Where this server keeps its repositories (`--data` or `--store`).
#[derive(Clone)]
pub enum Backend {
    Files,
    Postgres(Arc<Pg>),
}

impl Backend {
    /// The backend `cfg` names; PostgreSQL is connected and its schema migrated.
    pub async fn connect(cfg: &Arc<Config>, metrics: &Arc<Metrics>) -> Result<Backend, String> {
        match &cfg.store {
            Store::Files(dir) => files::create_data_dir(dir)
                .map(|_| Backend::Files)
                .map_err(|e| format!("cannot create {}: {e}", dir.display())),
            Store::Postgres(url) => Pg::connect(url, cfg, metrics).await.map(Backend::Postgres),
        }
    }

    /// Whether repository `name` exists in the store (holds a commit), looked up without
    /// opening or creating anything: the file store's log or snapshot is not empty.
    pub async fn exists(&self, cfg: &Config, name: &str) -> Result<bool, ibexdb::Error> {
        match (self, &cfg.store) {
            (Backend::Postgres(pg), _) => pg.exists(name).await,
            (Backend::Files, Store::Files(dir)) => {
                let len = |ext: &str| {
                    std::fs::metadata(dir.join(format!("{name}.{ext}"))).map_or(0, |m| m.len())
                };
                // A log that holds its 16-byte header only has no commit.
                Ok(len("log") > LOG_HEADER_LEN || len("snapshot") > 0)
            }
            (Backend::Files, _) => Ok(false),
        }
    }

    /// Whether the store can be reached (`/healthz`): the file store always; PostgreSQL while
    /// this node's LISTEN connection is up.
    pub fn reachable(&self) -> bool {
        match self {
            Backend::Files => true,
            Backend::Postgres(pg) => pg.listening(),
        }
    }
}
