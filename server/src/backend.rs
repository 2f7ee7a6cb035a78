//! Which store this server keeps its repositories in (`--data DIR` or `--store postgres://…`):
//! made once at start-up, shared by the registry and every repository thread.

use crate::config::{Config, Store};
use crate::files;
use crate::metrics::Metrics;
use crate::pg::Pg;
use std::sync::Arc;

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

    /// Whether the store can be reached (`/healthz`): the file store always; PostgreSQL while
    /// this node's LISTEN connection is up.
    pub fn reachable(&self) -> bool {
        match self {
            Backend::Files => true,
            Backend::Postgres(pg) => pg.listening(),
        }
    }
}
