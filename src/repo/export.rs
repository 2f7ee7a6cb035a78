//! What a repository hands to peers: stored commits and seals, by id or by position in the
//! commit table (the sync layer numbers commits by it, docs/design.md §12), and the whole
//! history as one export (bundles, §12.1).

use super::Repo;
use crate::commit::CommitId;
use crate::error::{Error, Result};
use crate::store::Storage;

/// Commits (id, bytes) in log order and seals, as exported for another peer.
pub type Export = (Vec<(CommitId, Vec<u8>)>, Vec<Vec<u8>>);

impl<S: Storage> Repo<S> {
    /// The stored bytes of a commit.
    pub fn commit_bytes(&self, id: &CommitId) -> Result<Vec<u8>> {
        let idx = *self
            .graph
            .by_id
            .get(id)
            .ok_or_else(|| Error::NotFound { key: id.to_hex() })?;
        Ok(self
            .log
            .read_frame(self.graph.commits[idx as usize].offset)?
            .1)
    }

    /// The stored bytes of the commit at position `i` of the commit table (the order in which
    /// commits were applied: parents before children). The sync layer numbers commits by it.
    pub fn commit_bytes_at(&self, i: usize) -> Result<Vec<u8>> {
        let c = self.graph.commits.get(i).ok_or_else(|| Error::NotFound {
            key: format!("commit #{i}"),
        })?;
        Ok(self.log.read_frame(c.offset)?.1)
    }

    /// Number of stored seals.
    pub fn seal_count(&self) -> usize {
        self.graph.seal_offsets.len()
    }

    /// The stored bytes of the `i`-th stored seal (storage order).
    pub fn seal_bytes(&self, i: usize) -> Result<Vec<u8>> {
        let &o = self
            .graph
            .seal_offsets
            .get(i)
            .ok_or_else(|| Error::NotFound {
                key: format!("seal #{i}"),
            })?;
        Ok(self.log.read_frame(o)?.1)
    }

    /// Every commit (log order: parents before children) with its id, and every seal, as
    /// stored.
    pub fn export(&self) -> Result<Export> {
        let mut commits = Vec::with_capacity(self.graph.commits.len());
        for c in &self.graph.commits {
            commits.push((c.id, self.log.read_frame(c.offset)?.1));
        }
        let mut seals = Vec::with_capacity(self.graph.seal_offsets.len());
        for &o in &self.graph.seal_offsets {
            seals.push(self.log.read_frame(o)?.1);
        }
        Ok((commits, seals))
    }
}
