//! Graceful shutdown: SIGTERM or Ctrl-C sets one flag that the accept loop, every connection
//! and the health endpoint watch.

use tokio::sync::watch;

pub struct Shutdown {
    tx: watch::Sender<bool>,
}

impl Shutdown {
    pub fn new() -> Shutdown {
        Shutdown {
            tx: watch::channel(false).0,
        }
    }

    pub fn trigger(&self) {
        self.tx.send_replace(true);
    }

    pub fn is_set(&self) -> bool {
        *self.tx.borrow()
    }

    /// Resolves once shutdown has begun.
    pub async fn wait(&self) {
        let mut rx = self.tx.subscribe();
        let _ = rx.wait_for(|set| *set).await;
    }
}

/// Wait for SIGTERM or Ctrl-C (SIGINT).
pub async fn signalled() {
    use tokio::signal::unix::{signal, SignalKind};
    let Ok(mut term) = signal(SignalKind::terminate()) else {
        let _ = tokio::signal::ctrl_c().await;
        return;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}
