//! The server's side of one repository (docs/design.md §12.2): sequence numbers, catch-up
//! from a cursor in batches, and verified, durable pushes relayed to subscribers. Who may
//! read and push is the repository's access list (§6.4): sessions are checked on `hello`, and
//! pushes go through the server's admission rules (`Repo::receive_as`).

use super::seals::SealIndex;
use super::wire::{Message, Rights, BATCH_BYTES};
use crate::access::Acl;
use crate::commit::{CommitId, PublicKey, Seal};
use crate::error::{Error, PermissionErrorKind, Result};
use crate::repo::{Admission, Repo};
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
    /// The push changed the access list: re-check who may still read.
    pub access_changed: bool,
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

    /// The repository, for reads that may load cold items.
    pub fn repo_mut(&mut self) -> &mut Repo<S> {
        &mut self.repo
    }

    pub fn into_repo(self) -> Repo<S> {
        self.repo
    }

    /// The last sequence number (= number of stored commits).
    pub fn head(&self) -> u64 {
        self.repo.commit_count() as u64
    }

    /// What `session` (`None`: anonymous) may do in this repository now. An empty repository
    /// (not created yet) is open: the first push creates it (see `Repo::receive_as`).
    pub fn rights(&self, session: Option<&PublicKey>) -> Rights {
        let acl = self.repo.access();
        Rights {
            read: acl.can_read(session),
            write: match session {
                Some(k) => acl.can_write(k),
                None => !acl.owned() || acl.public().1,
            },
            administer: session.is_some_and(|k| acl.can_administer(k)),
        }
    }

    /// The reply to a `Hello` from `session` with `cursor`: a `Welcome` carrying the head and
    /// the session's rights, then `Commits` messages for every commit after the cursor. A
    /// cursor past the head (the client knew a server that had more) is treated as 0. A
    /// session that may not read gets `PermissionError`.
    pub fn hello(
        &self,
        repo_name: &str,
        cursor: u64,
        session: Option<&PublicKey>,
    ) -> Result<Vec<Message>> {
        let (welcome, from) = self.subscribe(repo_name, cursor, session)?;
        let mut out = vec![welcome];
        out.extend(self.range(from, self.head(), &HashSet::new())?);
        Ok(out)
    }

    /// `Commits` messages for sequences `from + 1 ..= to`, leaving out `skip`.
    pub fn range(&self, from: u64, to: u64, skip: &HashSet<CommitId>) -> Result<Vec<Message>> {
        commits_messages(&self.repo, &self.seals, from as usize, to as usize, skip)
    }

    /// The `Welcome` answering a `Hello` from `session` with `cursor`, without the catch-up,
    /// and the sequence the catch-up starts after (a cursor past the head restarts from 0):
    /// for a server that streams catch-up with [`Hub::batch`] as its queue drains. A session
    /// that may not read gets `PermissionError`.
    pub fn subscribe(
        &self,
        repo_name: &str,
        cursor: u64,
        session: Option<&PublicKey>,
    ) -> Result<(Message, u64)> {
        let rights = self.rights(session);
        if !rights.read {
            return Err(Error::Permission {
                kind: PermissionErrorKind::CannotRead,
                detail: format!("this session may not read repository {repo_name:?}"),
            });
        }
        let head = self.head();
        let from = if cursor > head { 0 } else { cursor };
        let welcome = Message::Welcome {
            repo: repo_name.to_string(),
            head,
            rights,
        };
        Ok((welcome, from))
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

    /// How many ids the `seals` of a push would newly cover without their commits: not stored,
    /// not in `commits`, not covered by a stored seal already. A server bounds this per session
    /// (a reader of many sessions cannot fill the repository's `max_unknown_sealed`). Seals
    /// that do not decode count nothing here: the push refuses them.
    pub fn unknown_sealed(&self, commits: &[(CommitId, Vec<u8>)], seals: &[Vec<u8>]) -> usize {
        let g = self.repo.graph();
        let pushed: HashSet<&CommitId> = commits.iter().map(|(id, _)| id).collect();
        let mut unknown = HashSet::new();
        for b in seals {
            let Ok(seal) = Seal::decode(b) else { continue };
            for id in seal.ids {
                if !g.by_id.contains_key(&id)
                    && !g.seal_cover.contains_key(&id)
                    && !pushed.contains(&id)
                {
                    unknown.insert(id);
                }
            }
        }
        unknown.len()
    }

    /// Verify and store a push. On error nothing was stored (a verification error) or the
    /// repository must be closed and reopened (a storage error: frames may be half written).
    /// On success everything new is flushed to storage before this returns.
    /// `admission` names the pushing session (`Admission::Server`); `Admission::Peer` skips
    /// the server's rules (a test, or a trusted relay).
    pub fn push(
        &mut self,
        admission: &Admission,
        commits: &[(CommitId, Vec<u8>)],
        seals: &[Vec<u8>],
    ) -> Result<PushOutcome> {
        let from = self.head();
        let before = self.repo.access().clone();
        let report = self.repo.receive_as(admission, commits, seals)?;
        self.stored(from, before, report.pending, commits)
    }

    /// Take in commits and seals that the server's own durable store handed back: rows that
    /// another node of the deployment verified (signatures and admission) before it stored
    /// them, as a repository's own log is trusted at open. Every check but the seals'
    /// signatures runs again (ids, parents, the permission rule: [`Repo::receive_vouched`]),
    /// so a replica still cannot diverge silently; `verify()` re-proves every signature.
    pub fn push_stored(
        &mut self,
        commits: &[(CommitId, Vec<u8>)],
        seals: &[Vec<u8>],
    ) -> Result<PushOutcome> {
        let from = self.head();
        let before = self.repo.access().clone();
        let report = self.repo.receive_vouched(commits, seals)?;
        self.stored(from, before, report.pending, commits)
    }

    /// Flush what a push took in and say what it acknowledged.
    fn stored(
        &mut self,
        from: u64,
        before: Acl,
        pending: usize,
        commits: &[(CommitId, Vec<u8>)],
    ) -> Result<PushOutcome> {
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
            pending,
            access_changed: *self.repo.access() != before,
        })
    }
}
