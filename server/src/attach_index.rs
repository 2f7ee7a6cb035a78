//! Which attachments a repository's stored commits record: what an upload of bytes is checked
//! against (docs/design.md §12.2, *Attachment bytes*). Built on first use by reading the
//! repository's commits once (each decoded in turn, none kept), then extended over the commits
//! stored since. Holds 40 bytes per distinct `(hash, size)`, so its memory follows the
//! repository's history, like the server's commit table.

use ibexdb::{attachments_in, Commit, Error, Hub, Storage};
use std::collections::HashSet;

#[derive(Default)]
pub struct AttachIndex {
    /// Commit-table positions below this are indexed.
    to: usize,
    refs: HashSet<([u8; 32], u64)>,
}

impl AttachIndex {
    /// Whether a stored commit records attachment `hash` of `size` bytes. An encrypted
    /// repository's attach ops are inside its ciphertext: none is found there.
    pub fn refers<S: Storage>(
        &mut self,
        hub: &Hub<S>,
        hash: [u8; 32],
        size: u64,
    ) -> Result<bool, Error> {
        let repo = hub.repo();
        let count = repo.commit_count();
        while self.to < count {
            let bytes = repo.commit_bytes_at(self.to)?;
            if let Ok((c, _)) = Commit::decode(&bytes) {
                for a in attachments_in(&c) {
                    self.refs.insert((a.hash, a.size));
                }
            }
            self.to += 1;
        }
        Ok(self.refs.contains(&(hash, size)))
    }

    /// Forget everything (the repository was reopened: its commit table may differ).
    pub fn reset(&mut self) {
        *self = AttachIndex::default();
    }
}

/// Attachment bytes per repository: on disk, plus those reserved by uploads under way (one
/// entry per repository that had an upload since the server started).
#[derive(Default)]
pub struct AttachUsage(std::sync::Mutex<std::collections::HashMap<String, u64>>);

impl AttachUsage {
    /// Reserve `n` bytes for repository `name` if its total stays within `max`; `on_disk`
    /// gives the bytes its files hold, asked the first time.
    pub fn reserve(&self, name: &str, n: u64, max: u64, on_disk: impl FnOnce() -> u64) -> bool {
        let mut t = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let used = t.entry(name.to_string()).or_insert_with(on_disk);
        if used.saturating_add(n) > max {
            return false;
        }
        *used += n;
        true
    }

    /// Whether repository `name`'s total is counted already.
    pub fn knows(&self, name: &str) -> bool {
        let t = self.0.lock().unwrap_or_else(|e| e.into_inner());
        t.contains_key(name)
    }

    /// Give back a reservation that stored nothing.
    pub fn release(&self, name: &str, n: u64) {
        let mut t = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(used) = t.get_mut(name) {
            *used = used.saturating_sub(n);
        }
    }
}
