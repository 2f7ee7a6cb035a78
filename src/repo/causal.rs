//! The causal buffer (docs/design.md §5.4): commits whose parents have not all been applied
//! wait here, indexed by the parents they miss, until the last one arrives. On replay it
//! orders a commit whose frame precedes its parent's (possible only after a repair); on
//! receive it holds a peer's commits that arrived before their parents. Waiting commits are
//! not stored: they are lost on close and must be received again. A received commit waits
//! *encoded* (its bytes, decoded again once ready): a peer's orphans cost what it sent, not
//! their decoded size, and are bounded in bytes (`RepoOptions::max_pending_bytes`).

use super::RepoOptions;
use crate::commit::{Commit, CommitId, PublicKey};
use crate::error::{Error, Result};
use crate::graph::Graph;
use std::collections::{HashMap, HashSet};

/// Where a waiting commit's bytes are.
pub(super) enum Stored {
    /// Already in the log at this offset (replay, or a repaired log with a hole).
    InLog(u64),
    /// Already in the log at this offset, its bytes kept: a commit of an access-only
    /// repository's log that waits (its stored-schema check reads them,
    /// `access::check_commit_bytes`).
    Logged(u64, Vec<u8>),
    /// Received from a peer, not stored yet.
    Bytes(Vec<u8>),
}

impl Stored {
    /// The commit's bytes, when they are at hand.
    pub(super) fn bytes(&self) -> Option<&[u8]> {
        match self {
            Stored::Bytes(b) | Stored::Logged(_, b) => Some(b),
            Stored::InLog(_) => None,
        }
    }
}

struct Pending {
    /// Decoded only for a commit of the log (replay); a received one is decoded when ready.
    commit: Option<Commit>,
    stored: Stored,
    missing: usize,
}

/// Commits whose parents have not arrived yet, indexed by what they wait for.
#[derive(Default)]
pub(super) struct Waiting {
    /// Commits are decoded access-only (`RepoOptions::access_only`): see [`Waiting::decode`].
    access_only: bool,
    pending: HashMap<CommitId, Pending>,
    by_parent: HashMap<CommitId, Vec<CommitId>>,
    /// Bytes of the received commits waiting (`Stored::Bytes`).
    bytes: usize,
}

impl Waiting {
    pub(super) fn new(access_only: bool) -> Waiting {
        Waiting {
            access_only,
            ..Waiting::default()
        }
    }

    /// Decode a commit of this repository, received or logged, as its options say (the one
    /// place a repository decodes the commits it applies).
    pub(super) fn decode(&self, bytes: &[u8]) -> Result<(Commit, CommitId)> {
        if self.access_only {
            Commit::decode_access_only(bytes)
        } else {
            Commit::decode(bytes)
        }
    }

    /// Whether commits are decoded access-only.
    pub(super) fn access_only(&self) -> bool {
        self.access_only
    }

    pub(super) fn contains(&self, id: &CommitId) -> bool {
        self.pending.contains_key(id)
    }

    /// Number of commits waiting.
    pub(super) fn len(&self) -> usize {
        self.pending.len()
    }

    /// Bytes of the received commits waiting.
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    fn removed(&mut self, p: &Pending) {
        if let Stored::Bytes(b) = &p.stored {
            self.bytes -= b.len();
        }
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
        let commit = match &stored {
            Stored::InLog(_) => Some(commit),
            Stored::Logged(..) => None,
            Stored::Bytes(b) => {
                self.bytes += b.len();
                None
            }
        };
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
    pub(super) fn ready(&mut self, arrived: &CommitId) -> Result<Vec<(Commit, CommitId, Stored)>> {
        let mut out = Vec::new();
        for child in self.by_parent.remove(arrived).unwrap_or_default() {
            // A child dropped by `discard_dependents` (another of its parents was refused).
            let Some(p) = self.pending.get_mut(&child) else {
                continue;
            };
            p.missing -= 1;
            if p.missing == 0 {
                let p = self.pending.remove(&child).unwrap();
                self.removed(&p);
                let commit = match (p.commit, &p.stored) {
                    (Some(c), _) => c,
                    (None, Stored::Bytes(b) | Stored::Logged(_, b)) => self.decode(b)?.0,
                    (None, Stored::InLog(_)) => unreachable!("logged commits wait decoded"),
                };
                out.push((commit, child, p.stored));
            }
        }
        Ok(out)
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
                if let Some(p) = self.pending.remove(&child) {
                    self.removed(&p);
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
    batch: &[(&Commit, CommitId, usize)],
    cover: &HashMap<CommitId, Vec<PublicKey>>,
    opts: &RepoOptions,
) -> Result<()> {
    let mut ready = HashSet::new();
    let mut waiting_bytes = wait.bytes();
    for (c, id, len) in batch {
        if c.parents
            .iter()
            .all(|p| graph.by_id.contains_key(p) || ready.contains(p))
        {
            ready.insert(*id);
        } else {
            waiting_bytes += len;
        }
    }
    if waiting_bytes > wait.bytes() && waiting_bytes > opts.max_pending_bytes {
        return Err(Error::Limit {
            what: "parked bytes".into(),
            detail: format!(
                "{waiting_bytes} bytes of commits would wait for missing parents; this repository holds at most {} (a server's --max-parked-bytes)",
                opts.max_pending_bytes
            ),
        });
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
