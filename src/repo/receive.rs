//! Receiving commits and seals from a peer (docs/design.md §5.4). Every check runs before
//! anything is stored, and the first failure refuses the whole batch: first the seals
//! ([`Repo::check_seals`]), then each commit ([`Repo::check_commit`]), then, for the commits
//! whose parents are present, a sync server's admission rules (`admit.rs`); then the batch is
//! stored ([`Repo::store_received`]), seals first, and commits whose parents are missing wait
//! in the causal buffer. A commit the permission rule refuses is not an error: it is stored
//! and does not count (§6.4), so the commits that descend from it connect.

use super::admit::Admission;
use super::causal::{check_room, missing_parents, Stored};
use super::write::check_size;
use super::Repo;
use crate::commit::{Commit, CommitId, FieldOp, Op, PublicKey, Seal};
use crate::error::{Error, Result, SignatureErrorKind};
use crate::store::log::{FRAME_COMMIT, FRAME_SEAL};
use crate::store::Storage;
use crate::value::Value;
use std::collections::{HashMap, HashSet};

/// What `receive()` did.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReceiveReport {
    pub applied: usize,
    pub duplicates: usize,
    /// Waiting for missing parents.
    pub pending: usize,
    /// Commits that do not count (their author lacked the right in their causal past; stored
    /// without effect, docs/design.md §6.4), plus, on a sync server, commits that waited for
    /// their parents and, once they arrived, its current access list denied: dropped (with
    /// the commits waiting on them).
    pub refused: usize,
}

/// The seals of a batch that prove something new, and what they cover (id → sealing authors).
struct CheckedSeals<'b> {
    seals: Vec<(Seal, &'b Vec<u8>)>,
    cover: HashMap<CommitId, Vec<PublicKey>>,
}

impl<S: Storage> Repo<S> {
    /// Accept commits (each with the id the sender claims for it) and seals from another peer.
    /// Everything is verified before anything is applied: a batch with one bad commit is
    /// refused whole. Commits whose parents are missing wait in memory until they arrive.
    pub fn receive(
        &mut self,
        commits: &[(CommitId, Vec<u8>)],
        seals: &[Vec<u8>],
    ) -> Result<ReceiveReport> {
        self.receive_with(&Admission::Peer, commits, seals)
    }

    /// [`Repo::receive`] with the admission rules of a sync server for a session (see
    /// [`Admission`]): on top of the rule every replica applies, new commits must be allowed by
    /// the server's current access list, and the session itself must be allowed to write.
    pub fn receive_as(
        &mut self,
        admission: &Admission,
        commits: &[(CommitId, Vec<u8>)],
        seals: &[Vec<u8>],
    ) -> Result<ReceiveReport> {
        self.receive_with(admission, commits, seals)
    }

    /// [`Repo::receive`] from a peer, for a caller that verified the signature of every seal
    /// in `seals` itself (a browser worker with WebCrypto, several times faster than the core's
    /// P-384 in wasm): the seals' signatures are not verified again; every other check runs.
    /// A caller whose own check failed calls [`Repo::receive`], which reports the error.
    /// `verify()` re-proves every signature as always.
    pub fn receive_vouched(
        &mut self,
        commits: &[(CommitId, Vec<u8>)],
        seals: &[Vec<u8>],
    ) -> Result<ReceiveReport> {
        self.receive_checked(&Admission::Peer, commits, seals, true)
    }

    fn receive_with(
        &mut self,
        admission: &Admission,
        commits: &[(CommitId, Vec<u8>)],
        seals: &[Vec<u8>],
    ) -> Result<ReceiveReport> {
        self.receive_checked(admission, commits, seals, false)
    }

    /// `vouched`: the caller verified every seal's signature.
    fn receive_checked(
        &mut self,
        admission: &Admission,
        commits: &[(CommitId, Vec<u8>)],
        seals: &[Vec<u8>],
        vouched: bool,
    ) -> Result<ReceiveReport> {
        let checked = self.check_seals(seals, vouched)?;
        let acl_before = self.graph.acl;
        let now = (self.opts.clock)();
        let mut report = ReceiveReport::default();
        let mut accepted: Vec<(Commit, CommitId, &Vec<u8>)> = Vec::new();
        let mut seen = HashSet::new();
        for (claimed, b) in commits {
            let (commit, id) = self.wait.decode(b)?;
            check_claimed_id(&id, claimed)?;
            if self.graph.by_id.contains_key(&id) || self.wait.contains(&id) || !seen.insert(id) {
                report.duplicates += 1;
                continue;
            }
            self.check_commit(&commit, &id, &checked.cover, now)?;
            accepted.push((commit, id, b));
        }
        let new: Vec<(&Commit, CommitId, usize)> = accepted
            .iter()
            .map(|(c, id, b)| (c, *id, b.len()))
            .collect();
        check_room(&self.graph, &self.wait, &new, &checked.cover, &self.opts)?;
        let encrypted = self.check_batch_sealed(&accepted)?;
        self.admit_batch(admission, &accepted, !checked.seals.is_empty(), now)?;
        self.encrypted_root = encrypted;
        let (applied, refused) = self.store_received(admission, checked.seals, accepted)?;
        report.applied = applied;
        report.refused = refused;
        report.pending = self.wait.len();
        if self.graph.acl != acl_before {
            // A new member (an invite redeemed without the owner): its keys (§6.8).
            self.share_keys_as_owner()?;
        }
        // Every key this device holds given to a revoked member: an owner's starts an epoch.
        self.merge_epochs_as_owner()?;
        Ok(report)
    }

    /// Decode every seal and verify those that prove something new. A seal that proves
    /// nothing new (every id it covers is already sealed here by the same author, or by an
    /// earlier seal in this batch) is neither verified nor stored again: re-sent seals cost
    /// nothing and never pile up in the log.
    /// `vouched`: the caller verified the signatures already (see [`Repo::receive_vouched`]).
    fn check_seals<'b>(&self, seals: &'b [Vec<u8>], vouched: bool) -> Result<CheckedSeals<'b>> {
        let mut out = CheckedSeals {
            seals: Vec::with_capacity(seals.len()),
            cover: HashMap::new(),
        };
        for b in seals {
            let seal = Seal::decode(b)?;
            self.check_seal_repo(&seal)?;
            let new_coverage = seal.ids.iter().any(|id| {
                !out.cover.get(id).is_some_and(|a| a.contains(&seal.author))
                    && !self.graph.is_sealed_by(id, &seal.author)
            });
            if !new_coverage {
                continue;
            }
            if !vouched {
                seal.verify()?;
            }
            for id in &seal.ids {
                out.cover.entry(*id).or_default().push(seal.author);
            }
            out.seals.push((seal, b));
        }
        Ok(out)
    }

    /// A seal made for another repository proves nothing here: the history was copied.
    pub(super) fn check_seal_repo(&self, seal: &Seal) -> Result<()> {
        if seal.repo == self.opts.name {
            return Ok(());
        }
        Err(Error::sig(
            SignatureErrorKind::WrongRepository,
            format!(
                "a seal made for repository {:?} was received by {:?}",
                seal.repo, self.opts.name
            ),
        ))
    }

    /// The checks of one new commit: its signature (or trusted status), the rules of local
    /// writes, and the clock skew against `now`.
    fn check_commit(
        &self,
        commit: &Commit,
        id: &CommitId,
        cover: &HashMap<CommitId, Vec<PublicKey>>,
        now: u64,
    ) -> Result<()> {
        if commit.trusted {
            if !self.opts.accept_trusted {
                return Err(Error::sig(
                    SignatureErrorKind::Unsigned,
                    format!(
                        "commit {} is unsigned (trusted mode) and this peer requires signatures",
                        id.to_hex()
                    ),
                ));
            }
        } else {
            self.check_sealed(commit, id, cover)?;
        }
        check_received(commit)?;
        let ms = commit.hlc >> 16;
        if ms > now.saturating_add(self.opts.max_clock_skew_ms) {
            return Err(Error::ClockSkew {
                hlc_ms: ms,
                now_ms: now,
            });
        }
        Ok(())
    }

    /// A signed commit must be covered by a seal of its own author, in this batch (`cover`) or
    /// stored earlier for a commit that had not arrived.
    fn check_sealed(
        &self,
        commit: &Commit,
        id: &CommitId,
        cover: &HashMap<CommitId, Vec<PublicKey>>,
    ) -> Result<()> {
        let by = |v: Option<&Vec<PublicKey>>| v.is_some_and(|a| a.contains(&commit.author));
        if by(cover.get(id)) || by(self.graph.seal_cover.get(id)) {
            return Ok(());
        }
        if cover.contains_key(id) || self.graph.seal_cover.contains_key(id) {
            return Err(Error::sig(
                SignatureErrorKind::WrongKey,
                format!(
                    "commit {} is sealed only by keys other than its author",
                    id.to_hex()
                ),
            ));
        }
        Err(Error::sig(
            SignatureErrorKind::Missing,
            format!(
                "commit {} arrived without a seal from its author",
                id.to_hex()
            ),
        ))
    }

    /// Store a checked batch: every seal frame first (a torn tail then drops commits, never a
    /// signed commit's seal), then each commit, applied at once if its parents are present,
    /// else held in the causal buffer. Returns how many commits were applied and how many
    /// waiting ones the rule refused once ready.
    fn store_received(
        &mut self,
        admission: &Admission,
        seals: Vec<(Seal, &Vec<u8>)>,
        accepted: Vec<(Commit, CommitId, &Vec<u8>)>,
    ) -> Result<(usize, usize)> {
        for (seal, b) in &seals {
            let offset = self.log.append(FRAME_SEAL, b)?;
            self.graph.add_seal(seal, offset);
        }
        let (mut applied, mut refused) = (0, 0);
        for (commit, id, b) in accepted {
            let missing = missing_parents(&self.graph, &commit);
            if missing.is_empty() {
                let (a, r) = self.add_ready(admission, commit, id, Stored::Bytes(b.clone()))?;
                applied += a;
                refused += r;
            } else {
                self.wait
                    .defer(commit, id, Stored::Bytes(b.clone()), &missing);
            }
        }
        Ok((applied, refused))
    }

    /// Apply a commit whose parents are present, then every waiting commit it completes. A
    /// waiting commit that breaks the permission rule once its parents are known is dropped,
    /// with everything that waits on it. Returns (applied, refused).
    fn add_ready(
        &mut self,
        admission: &Admission,
        commit: Commit,
        id: CommitId,
        stored: Stored,
    ) -> Result<(usize, usize)> {
        let (mut n, mut refused) = (0, 0);
        let mut stack = vec![(commit, id, stored)];
        let first = id;
        while let Some((mut commit, id, stored)) = stack.pop() {
            // The batch's own ready commits were admitted before anything was stored.
            let bytes = stored.bytes();
            // A commit that waited for the root is judged by its flag now (§6.8).
            let unsealed = id != first && self.unsealed_data(&commit, &id);
            if unsealed || id != first && self.admit_ready(admission, &commit, &id, bytes).is_err()
            {
                refused += 1 + self.wait.discard_dependents(&id);
                continue;
            }
            // Decrypted before its items are loaded and it is applied (§6.8).
            self.graph.open_sealed(&mut commit, &id);
            // Before the append: a failed load rebuilds the state from the log.
            self.restore_written_indexes(&commit.changes);
            self.warm_changes(&commit.changes)?;
            let offset = match &stored {
                Stored::InLog(o) | Stored::Logged(o, _) => *o,
                Stored::Bytes(b) => self.log.append(FRAME_COMMIT, b)?,
            };
            self.hlc = self.hlc.max(commit.hlc);
            let bytes = stored.bytes();
            let idx = self
                .graph
                .add_commit(commit, id, offset, bytes, &mut self.query);
            if let Some(b) = bytes {
                self.release_far(b, offset)?;
            }
            if self.graph.commits[idx as usize].counts {
                n += 1;
            } else {
                refused += 1;
            }
            self.apply_opened()?;
            stack.extend(self.wait.ready(&id)?);
        }
        Ok((n, refused))
    }
}

/// The id is the hash of the bytes: anything else was tampered with on the way.
fn check_claimed_id(id: &CommitId, claimed: &CommitId) -> Result<()> {
    if id == claimed {
        return Ok(());
    }
    Err(Error::sig(
        SignatureErrorKind::Tampered,
        format!(
            "commit bytes hash to {} but were sent as {}",
            id.to_hex(),
            claimed.to_hex()
        ),
    ))
}

/// The structural and size rules a local write obeys, applied to a received commit, so a peer
/// cannot make this replica store what it could not have written itself: nested field names,
/// nesting depth, finite numbers, and `MAX_ITEM_BYTES` per change (measured as for a local
/// write). Schemas are local and not applied (docs/design.md §13).
fn check_received(commit: &Commit) -> Result<()> {
    for ch in &commit.changes {
        // A malformed `_acl` change is refused whatever the access list says.
        crate::access::parse_change(ch)?;
        // The path names a refused value in the error; it is built only then (a string per
        // field of every received item cost ~10% of the initial sync).
        let valid = |field: &str, v: &Value| match v.validate("") {
            Ok(()) => Ok(()),
            Err(_) => v.validate(&format!("{}/{}.{field}", ch.collection, ch.id)),
        };
        let size = match &ch.op {
            Op::Delete => 0,
            Op::Put(m) => {
                for (name, v) in m {
                    valid(name, v)?;
                }
                Value::map_encoded_len(m)
            }
            Op::Patch(ops) => {
                let mut size = 0;
                for (name, fop) in ops {
                    match fop {
                        FieldOp::Assign(v) => {
                            valid(name, v)?;
                            size += v.encoded_len();
                        }
                        FieldOp::Unset => {}
                        FieldOp::SetEdit { add, .. } => {
                            size += add.iter().map(|e| e.len() + 5).sum::<usize>();
                        }
                    }
                }
                size
            }
        };
        check_size(&ch.collection, &ch.id, size)?;
    }
    Ok(())
}
