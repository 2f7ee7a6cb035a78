//! What every connection of the server shares: the configuration, the store, the open
//! repositories, the connection limits, the shutdown flag, TLS. Made by `start`.

use crate::auth::Auth;
use crate::backend::Backend;
use crate::config::Config;
use crate::limits::{ConnLimiter, CreateLimiter, PushBudgets};
use crate::metrics::Metrics;
use crate::registry::Registry;
use crate::shutdown::Shutdown;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;

pub struct Server {
    pub cfg: Arc<Config>,
    pub backend: Backend,
    pub metrics: Arc<Metrics>,
    pub registry: Arc<Registry>,
    pub conns: Arc<ConnLimiter>,
    /// Push budgets per source address (they outlive connections).
    pub budgets: PushBudgets,
    /// Repositories created per source address (`--creates-per-ip`).
    pub creates: Arc<CreateLimiter>,
    pub shutdown: Shutdown,
    pub tls: Option<TlsAcceptor>,
    /// Bearer-token checks (`--auth-jwks`), if configured.
    pub auth: Option<Auth>,
    pub refusing: Arc<Semaphore>,
    /// The `host:port` forms a session proof may name (`Config::hosts`).
    pub hosts: Vec<String>,
    pub next_conn: AtomicU64,
    /// Attachment bytes per repository (`--max-repo-attachment-bytes`).
    pub attach_usage: Arc<crate::attach_index::AttachUsage>,
}

impl Server {
    pub fn next_conn(&self) -> u64 {
        self.next_conn.fetch_add(1, Relaxed)
    }
}
