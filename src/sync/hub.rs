//! The server's side of one repository (docs/design.md §12.2): sequence numbers, catch-up
//! from a cursor in batches, and verified, durable pushes relayed to subscribers.

use super::seals::SealIndex;
use super::wire::{Message, BATCH_BYTES};
use crate::commit::CommitId;
use crate::error::Result;
use crate::repo::Repo;
use crate::store::Storage;
use std::collections::HashSet;

/// Positions `start..end` of the commit table, with the commits sent for them
/// (position, id, bytes).
type Batch = (usize, usize, Vec<(usize, CommitId, Vec<u8>)>);

/// Commits at commit-table positions `from..to` (skipping `skip`), at most about
/// [`BATCH_BYTES`] per message, as `(from, to, positions)` ranges.
fn batches<S: Storage>(
    repo: &Repo<S>,
    from: usize,
    to: usize,
    skip: &HashSet<CommitId>,
) -> Result<Vec<Batch>> {
    let core = repo.graph();
    let mut out = Vec::new();
    let mut start = from;
    let mut cur = Vec::new();
    let mut bytes = 0;
    for p in from..to {
        let id = core.commits[p].id;
        if !skip.contains(&id) {
            let b = repo.commit_bytes_at(p)?;
            bytes += b.len() + 40;
            cur.push((p, id, b));
        }
        if bytes >= BATCH_BYTES {
            out.push((start, p + 1, std::mem::take(&mut cur)));
            start = p + 1;
            bytes = 0;
        }
    }
    if start < to {
        out.push((start, to, cur));
    }
    Ok(out)
}

fn commits_messages<S: Storage>(
    repo: &Repo<S>,
    seals: &SealIndex,
    from: usize,
    to: usize,
    skip: &HashSet<CommitId>,
) -> Result<Vec<Message>> {
    let mut out = Vec::new();
    for (a, b, list) in batches(repo, from, to, skip)? {
        let positions: Vec<usize> = list.iter().map(|(p, _, _)| *p).collect();
        let seals = seals.seals_for(repo, &positions)?;
        out.push(Message::Commits {
            from: a as u64,
            to: b as u64,
            commits: list.into_iter().map(|(_, id, b)| (id, b)).collect(),
            seals,
        });
    }
    Ok(out)
}

/// What a push did on the server.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PushOutcome {
    /// The pushed commits now stored durably (new or already there): the `Ack`.
    pub ack: Vec<CommitId>,
    /// Sequences `from + 1 ..= to` were added by this push (relay them).
    pub from: u64,
    pub to: u64,
    /// Pushed commits that wait for parents the server does not have (not stored, not acked).
    pub pending: usize,
}

/// The server's side of one repository: sequence numbers, catch-up, verified durable pushes.
pub struct Hub<S: Storage> {
    repo: Repo<S>,
    seals: SealIndex,
}

impl<S: Storage> Hub<S> {
    pub fn new(repo: Repo<S>) -> Result<Hub<S>> {
        let mut seals = SealIndex::default();
        seals.refresh(&repo)?;
        Ok(Hub { repo, seals })
    }

    pub fn repo(&self) -> &Repo<S> {
        &self.repo
    }

    pub fn into_repo(self) -> Repo<S> {
        self.repo
    }

    /// The last sequence number (= number of stored commits).
    pub fn head(&self) -> u64 {
        self.repo.commit_count() as u64
    }

    /// The reply to a `Hello` with `cursor`: a `Hello` carrying the head, then `Commits`
    /// messages for every commit after the cursor. A cursor past the head (the client knew a
    /// server that had more) is treated as 0.
    pub fn hello(&self, repo_name: &str, cursor: u64) -> Result<Vec<Message>> {
        let head = self.head();
        let from = if cursor > head { 0 } else { cursor };
        let mut out = vec![Message::Hello {
            repo: repo_name.to_string(),
            cursor: head,
        }];
        out.extend(self.range(from, head, &HashSet::new())?);
        Ok(out)
    }

    /// `Commits` messages for sequences `from + 1 ..= to`, leaving out `skip`.
    pub fn range(&self, from: u64, to: u64, skip: &HashSet<CommitId>) -> Result<Vec<Message>> {
        commits_messages(&self.repo, &self.seals, from as usize, to as usize, skip)
    }

    /// The reply to a `Hello` with `cursor` without the catch-up: the `Hello` carrying the
    /// head, and the sequence to stream from (the cursor, or 0 for a cursor past the head).
    /// A server that streams catch-up in bounded steps uses this with [`Hub::batch`].
    pub fn subscribe(&self, repo_name: &str, cursor: u64) -> Result<(Message, u64)> {
        let head = self.head();
        let from = if cursor > head { 0 } else { cursor };
        let hello = Message::Hello {
            repo: repo_name.to_string(),
            cursor: head,
        };
        Ok((hello, from))
    }

    /// One `Commits` message starting after sequence `from` (`from < to`): the commits up to
    /// `to`, stopping after about `max_bytes` (at least one sequence; [`BATCH_BYTES`] is what
    /// `hello` and `range` use), leaving out `skip`. Its `to` field says where the next one
    /// starts.
    pub fn batch(
        &self,
        from: u64,
        to: u64,
        skip: &HashSet<CommitId>,
        max_bytes: usize,
    ) -> Result<Message> {
        let (from, to) = (from as usize, to as usize);
        let core = self.repo.graph();
        let (mut end, mut bytes) = (from, 0);
        let mut list = Vec::new();
        while end < to && (bytes < max_bytes || end == from) {
            let id = core.commits[end].id;
            if !skip.contains(&id) {
                let b = self.repo.commit_bytes_at(end)?;
                bytes += b.len() + 40;
                list.push((end, id, b));
            }
            end += 1;
        }
        let positions: Vec<usize> = list.iter().map(|(p, _, _)| *p).collect();
        let seals = self.seals.seals_for(&self.repo, &positions)?;
        Ok(Message::Commits {
            from: from as u64,
            to: end as u64,
            commits: list.into_iter().map(|(_, id, b)| (id, b)).collect(),
            seals,
        })
    }

    /// Flush, then write the repository's snapshot (false when it was opened without a
    /// snapshot file). See [`Repo::write_snapshot`].
    pub fn write_snapshot(&mut self) -> Result<bool> {
        self.repo.write_snapshot()
    }

    /// Verify and store a push. On error nothing was stored (a verification error) or the
    /// repository must be closed and reopened (a storage error: frames may be half written).
    /// On success everything new is flushed to storage before this returns.
    pub fn push(
        &mut self,
        commits: &[(CommitId, Vec<u8>)],
        seals: &[Vec<u8>],
    ) -> Result<PushOutcome> {
        let from = self.head();
        let report = self.repo.receive(commits, seals)?;
        self.repo.flush()?;
        self.seals.refresh(&self.repo)?;
        let ack = commits
            .iter()
            .map(|(id, _)| *id)
            .filter(|id| self.repo.has_commit(id))
            .collect();
        Ok(PushOutcome {
            ack,
            from,
            to: self.head(),
            pending: report.pending,
        })
    }
}
