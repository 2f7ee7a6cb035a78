//! How a repository thread learns that other nodes stored commits (PostgreSQL's NOTIFY, routed
//! by the registry): a flag and the highest head noticed, shared by the registry (which queues a
//! `Refresh`) and the thread (which takes the notices when it looks).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};

/// Notices that other nodes stored commits, coalesced: at most one `Refresh` waits in a
/// repository thread's queue, whatever the rate of notices.
#[derive(Default)]
pub struct Wakeup {
    queued: AtomicBool,
    /// The highest head noticed since the thread last looked (`u64::MAX`: look anyway).
    seen: AtomicU64,
    /// The thread's last look failed: look again at the next tick.
    stale: AtomicBool,
    /// The thread's copy holds a commit: the repository exists (the registry answers
    /// `exists` from it without asking the store).
    exists: AtomicBool,
}

impl Wakeup {
    /// Record a notice of `head`; true when a `Refresh` must be queued.
    pub fn notice(&self, head: u64) -> bool {
        self.seen.fetch_max(head, SeqCst);
        !self.queued.swap(true, SeqCst)
    }

    /// Whether the thread's last look failed (clears it): the registry's tick retries it.
    pub fn take_stale(&self) -> bool {
        self.stale.swap(false, SeqCst)
    }

    /// The thread's side: its look at the store failed; the registry's tick retries it.
    pub fn failed(&self) {
        self.stale.store(true, SeqCst);
    }

    /// The thread's side: whether its copy holds a commit now.
    pub fn set_exists(&self, exists: bool) {
        self.exists.store(exists, SeqCst);
    }

    /// Whether the open repository holds a commit.
    pub fn exists(&self) -> bool {
        self.exists.load(SeqCst)
    }

    /// The thread's side: the highest head noticed, if past `head` (`u64::MAX`: unknown, ask
    /// the store); clears the notices.
    pub fn take(&self, head: u64) -> Option<u64> {
        self.queued.store(false, SeqCst);
        Some(self.seen.swap(0, SeqCst)).filter(|&seen| seen > head)
    }
}
