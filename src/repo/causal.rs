//! The causal buffer (docs/design.md §5.4): commits whose parents have not all been applied
//! wait here, indexed by the parents they miss, until the last one arrives. On replay it
//! orders a commit whose frame precedes its parent's (possible only after a repair); on
//! receive it holds a peer's commits that arrived before their parents. Waiting commits are
//! not stored: they are lost on close and must be received again.

use super::RepoOptions;
use crate::commit::{Commit, CommitId, PublicKey};
use crate::error::{Error, Result};
use crate::graph::Graph;
use std::collections::{HashMap, HashSet};

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

/// Refuse a checked batch (before anything of it is stored) that would make more commits wait
/// than `opts.max_pending`, or leave more ids sealed without their commit than
/// `opts.max_unknown_sealed`. A commit counts as waiting unless its parents are applied or come
/// earlier in the batch (parents before children, as peers send them), so a batch in another
/// order may be counted high.
pub(super) fn check_room(
    graph: &Graph,
    wait: &Waiting,
    batch: &[(&Commit, CommitId)],
    cover: &HashMap<CommitId, Vec<PublicKey>>,
    opts: &RepoOptions,
) -> Result<()> {
    let mut ready = HashSet::new();
    for (c, id) in batch {
        if c.parents
            .iter()
            .all(|p| graph.by_id.contains_key(p) || ready.contains(p))
        {
            ready.insert(*id);
        }
    }
    let waiting = wait.len() + batch.len() - ready.len();
    if waiting > opts.max_pending {
        return Err(Error::Limit {
            what: "pending commits".into(),
            detail: format!(
                "{waiting} commits would wait for missing parents; this repository holds at most {}",
                opts.max_pending
            ),
        });
    }
    let unknown = cover
        .keys()
        .filter(|id| !graph.by_id.contains_key(*id) && !ready.contains(*id))
        .filter(|id| !graph.seal_cover.contains_key(*id))
        .count();
    let sealed = graph.seal_cover.len() + unknown;
    if unknown > 0 && sealed > opts.max_unknown_sealed {
        return Err(Error::Limit {
            what: "sealed unknown commits".into(),
            detail: format!(
                "seals would cover {sealed} commits this repository does not have; it holds at most {}",
                opts.max_unknown_sealed
            ),
        });
    }
    Ok(())
}
