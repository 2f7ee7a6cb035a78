//! The causal buffer (docs/design.md §5.4): commits whose parents have not all been applied
//! wait here, indexed by the parents they miss, until the last one arrives. On replay it
//! orders a commit whose frame precedes its parent's (possible only after a repair); on
//! receive it holds a peer's commits that arrived before their parents. Waiting commits are
//! not stored: they are lost on close and must be received again.

use crate::commit::{Commit, CommitId};
use crate::graph::Graph;
use std::collections::HashMap;

/// Where a waiting commit's bytes are.
pub(super) enum Stored {
    /// Already in the log at this offset (replay, or a repaired log with a hole).
    InLog(u64),
    /// Received from a peer, not stored yet.
    Bytes(Vec<u8>),
}

struct Pending {
    commit: Commit,
    stored: Stored,
    missing: usize,
}

/// Commits whose parents have not arrived yet, indexed by what they wait for.
#[derive(Default)]
pub(super) struct Waiting {
    pending: HashMap<CommitId, Pending>,
    by_parent: HashMap<CommitId, Vec<CommitId>>,
}

impl Waiting {
    pub(super) fn contains(&self, id: &CommitId) -> bool {
        self.pending.contains_key(id)
    }

    /// Number of commits waiting.
    pub(super) fn len(&self) -> usize {
        self.pending.len()
    }

    pub(super) fn defer(
        &mut self,
        commit: Commit,
        id: CommitId,
        stored: Stored,
        missing: &[CommitId],
    ) {
        for p in missing {
            self.by_parent.entry(*p).or_default().push(id);
        }
        self.pending.insert(
            id,
            Pending {
                commit,
                stored,
                missing: missing.len(),
            },
        );
    }

    /// The commits that become ready once `arrived` is applied; the caller applies each and
    /// calls this again for it.
    pub(super) fn ready(&mut self, arrived: &CommitId) -> Vec<(Commit, CommitId, Stored)> {
        let mut out = Vec::new();
        for child in self.by_parent.remove(arrived).unwrap_or_default() {
            // A child dropped by `discard_dependents` (another of its parents was refused).
            let Some(p) = self.pending.get_mut(&child) else {
                continue;
            };
            p.missing -= 1;
            if p.missing == 0 {
                let p = self.pending.remove(&child).unwrap();
                out.push((p.commit, child, p.stored));
            }
        }
        out
    }
}

impl Waiting {
    /// Drop every commit that waits, directly or not, on `id` (which will never be applied).
    /// Returns how many were dropped.
    pub(super) fn discard_dependents(&mut self, id: &CommitId) -> usize {
        let mut n = 0;
        let mut stack = vec![*id];
        while let Some(a) = stack.pop() {
            for child in self.by_parent.remove(&a).unwrap_or_default() {
                if self.pending.remove(&child).is_some() {
                    n += 1;
                    stack.push(child);
                }
            }
        }
        n
    }
}

/// The parents of `commit` that `graph` has not applied.
pub(super) fn missing_parents(graph: &Graph, commit: &Commit) -> Vec<CommitId> {
    commit
        .parents
        .iter()
        .filter(|p| !graph.by_id.contains_key(p))
        .copied()
        .collect()
}
