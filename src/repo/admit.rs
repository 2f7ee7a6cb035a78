//! The permission rule on receive (docs/design.md §6.4), and a sync server's admission rules.
//!
//! Every replica judges each received commit against the access list of its causal past
//! (`access::check_commit`); one that does not count is stored without effect (the graph
//! decides, `Graph::add_commit`), so nothing here refuses it. A malformed `_acl` change, a
//! root that writes `_acl` without claiming ownership and a second root are refused.
//!
//! A sync server adds, for a session's push ([`Admission::Server`]): a new commit that counts
//! must also be allowed by the server's *current* access list merged with its past (a revoked
//! key cannot push on top of an old history), unless a descendant in the same push, by a key
//! the list before the push allows, vouches for it; the session's own key must be allowed to
//! write (by the access list the push itself leaves, so a new repository's root may come from
//! any session its grants let write); a server that does not host unowned repositories refuses
//! an unowned root.

use super::Repo;
use crate::access::{check_commit_bytes, is_void, redeemer, Acl, ACL_COLLECTION};
use crate::commit::{Commit, CommitId, PublicKey};
use crate::error::{Error, PermissionErrorKind, Result};
use crate::schema::SCHEMA_COLLECTION;
use crate::store::Storage;
use std::collections::{HashMap, HashSet};

/// Who is pushing, for the rules applied on receive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// A replica receiving from a peer: the rule only.
    Peer,
    /// A sync server storing a push from a session (`None`: an anonymous session).
    Server {
        session: Option<PublicKey>,
        /// Whether a session may create a repository with an unowned root (open to all).
        allow_unowned: bool,
    },
}

fn denied(kind: PermissionErrorKind, detail: impl Into<String>) -> Error {
    Error::Permission {
        kind,
        detail: detail.into(),
    }
}

/// The batch's view while checking it: the access list after each checked commit, and what
/// the repository would look like with them.
struct Provisional {
    after: HashMap<CommitId, Acl>,
    current: Acl,
    have_root: bool,
}

/// What a server thinks of one ready commit of a push.
struct Verdict<'c> {
    commit: &'c Commit,
    id: CommitId,
    /// The server's check against its current list failed with this error.
    denied_now: Option<Error>,
    /// It counts and its author's rights before the push: (may write, may administer).
    vouches: (bool, bool),
    /// Only an owner vouches for it (it counts and changes `_acl`).
    needs_owner: bool,
}

impl<S: Storage> Repo<S> {
    /// Check the ready commits of a batch (in order) before anything is stored. A commit the
    /// rule refuses does not count: it is stored without effect (its descendants connect). A
    /// server refuses the push if a new commit its current list denies is not vouched for.
    /// `new_seals`: the batch brings seals that are not stored yet.
    pub(super) fn admit_batch(
        &self,
        admission: &Admission,
        accepted: &[(Commit, CommitId, &Vec<u8>)],
        new_seals: bool,
        now: u64,
    ) -> Result<()> {
        if matches!(admission, Admission::Server { .. }) {
            self.check_redemption_stamps(accepted, now)?;
        }
        let mut prov = Provisional {
            after: HashMap::new(),
            current: self.graph.current_acl().clone(),
            have_root: !self.graph.commits.is_empty(),
        };
        let before = self.graph.current_acl();
        let server = matches!(admission, Admission::Server { .. });
        let mut verdicts = Vec::new();
        for (commit, id, bytes) in accepted {
            let bytes = Some(bytes.as_slice());
            let (after, denied_now, counts) = if commit.parents.is_empty() {
                (
                    self.admit_root(admission, &prov, (commit, id), bytes)?,
                    None,
                    true,
                )
            } else {
                let Some(past) = self.batch_past(commit, &prov.after) else {
                    continue; // waits for its parents; checked when they arrive
                };
                match admit(admission, &prov.current, &past, (commit, id), bytes)? {
                    Judged::Counts(after, denied_now) => (after, denied_now, true),
                    // A server stores a commit that does not count only if vouched for.
                    Judged::Void(e) => (past, server.then_some(e), false),
                }
            };
            let author = &commit.author;
            let vouches = (
                counts && denied_now.is_none() && !commit.trusted && before.can_write(author),
                counts && denied_now.is_none() && !commit.trusted && before.can_administer(author),
            );
            let acl = commit
                .changes
                .iter()
                .any(|c| c.collection == ACL_COLLECTION || c.collection == SCHEMA_COLLECTION);
            verdicts.push(Verdict {
                commit,
                id: *id,
                denied_now,
                vouches,
                needs_owner: counts && acl,
            });
            prov.have_root |= commit.parents.is_empty();
            prov.current.join(&after);
            prov.after.insert(*id, after);
        }
        check_vouched(verdicts)?;
        // A push that stores anything needs write permission, one that brings only new seals
        // too: a reader cannot make the server store anything. (Commits and seals already
        // stored are acknowledged to anyone: a reader's replica re-sends what it holds.)
        if let Admission::Server { session, .. } = admission {
            let stores = !accepted.is_empty() || new_seals;
            let redeems = redeems_only(accepted, session.as_ref());
            if stores && !redeems && !session_may_write(&prov.current, session.as_ref()) {
                return Err(denied(
                    PermissionErrorKind::CannotWrite,
                    "this session's key may not write to the repository",
                ));
            }
        }
        Ok(())
    }

    /// A server refuses a redemption stamped more than `max_clock_skew_ms` before its clock
    /// (`invite-expired`): a redeemer cannot backdate its commit into an invite's lifetime
    /// (replicas refuse stamps more than that ahead of theirs, §5.4).
    fn check_redemption_stamps(
        &self,
        accepted: &[(Commit, CommitId, &Vec<u8>)],
        now: u64,
    ) -> Result<()> {
        let skew = self.opts.max_clock_skew_ms;
        for (c, id, _) in accepted {
            let ms = c.hlc >> 16;
            if ms.saturating_add(skew) < now && redeemer(c).is_some() {
                return Err(denied(
                    PermissionErrorKind::InviteExpired,
                    format!(
                        "redemption {} is stamped {ms} ms, more than {skew} ms before this server's clock ({now} ms)",
                        id.to_hex()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// A server's check of a waiting commit whose parents just arrived: `Err` if its current
    /// list denies it or it does not count (nothing in the push can vouch for it any more: it
    /// is dropped, with what waits on it). A replica keeps every such commit; whether it counts
    /// is decided when it is added to the graph.
    pub(super) fn admit_ready(
        &self,
        admission: &Admission,
        commit: &Commit,
        id: &CommitId,
        bytes: Option<&[u8]>,
    ) -> Result<()> {
        let parents: Vec<u32> = commit.parents.iter().map(|p| self.graph.by_id[p]).collect();
        let past = self.graph.past_acl(&parents);
        match admit(
            admission,
            self.graph.current_acl(),
            &past,
            (commit, id),
            bytes,
        )? {
            Judged::Counts(_, Some(e)) => Err(e),
            Judged::Void(e) if matches!(admission, Admission::Server { .. }) => Err(e),
            _ => Ok(()),
        }
    }

    /// A root: it must be the only root (or join other unowned roots), and a server may refuse
    /// unowned ones.
    fn admit_root(
        &self,
        admission: &Admission,
        prov: &Provisional,
        (commit, id): (&Commit, &CommitId),
        bytes: Option<&[u8]>,
    ) -> Result<Acl> {
        let after = check_commit_bytes(&Acl::default(), commit, id, bytes)?;
        self.check_founder(commit, &after)?;
        if prov.have_root && (prov.current.owned() || after.owned()) {
            return Err(denied(
                PermissionErrorKind::ForeignRoot,
                format!(
                    "commit {} founds another repository than {:?} (a second root)",
                    id.to_hex(),
                    self.opts.name
                ),
            ));
        }
        if let Admission::Server { allow_unowned, .. } = admission {
            if !after.owned() && !*allow_unowned {
                return Err(denied(
                    PermissionErrorKind::CannotCreate,
                    "this server hosts only owned repositories: the root must make its signed author owner",
                ));
            }
        }
        Ok(after)
    }

    /// The access list of a batch commit's causal past, if all its parents are known (applied,
    /// or checked earlier in the batch).
    fn batch_past(&self, commit: &Commit, batch: &HashMap<CommitId, Acl>) -> Option<Acl> {
        let mut past: Option<Acl> = None;
        for p in &commit.parents {
            let acl = match self.graph.by_id.get(p) {
                Some(&i) => self.graph.acls.get(self.graph.commits[i as usize].acl),
                None => batch.get(p)?,
            };
            match &mut past {
                Some(a) => a.join(acl),
                None => past = Some(acl.clone()),
            }
        }
        past
    }
}

/// What the rule says of a commit with a known past.
enum Judged {
    /// It counts: the access list after it, and the error of a server's check against its
    /// current list if that check failed.
    Counts(Acl, Option<Error>),
    /// Its author lacked the right in its causal past (why): stored without effect.
    Void(Error),
}

/// The rule for one commit with a known past, plus a server's check against its current list.
/// Errors other than the rule's (a malformed `_acl` change) refuse the commit. `bytes`: the
/// commit's, for one decoded access-only (its stored-schema check reads them).
fn admit(
    admission: &Admission,
    current: &Acl,
    past: &Acl,
    (commit, id): (&Commit, &CommitId),
    bytes: Option<&[u8]>,
) -> Result<Judged> {
    let after = match check_commit_bytes(past, commit, id, bytes) {
        Ok(after) => after,
        // The rule's verdicts that depend on the past (rights, the stored schemas, §2.4).
        Err(e) if is_void(&e) => return Ok(Judged::Void(e)),
        Err(e) => return Err(e),
    };
    let mut denied_now = None;
    if matches!(admission, Admission::Server { .. }) {
        let mut now = current.clone();
        now.join(past);
        // The current list for rights only: a commit's schemas are those of its causal past
        // (a write made on an older version, concurrently with an upgrade, counts; §2.4), whose
        // check just passed; so the elided changes are not read again (no bytes).
        now.schemas = past.schemas.clone();
        denied_now = check_commit_bytes(&now, commit, id, None).err();
    }
    Ok(Judged::Counts(after, denied_now))
}

/// A server accepts a new commit its current list denies (a revoked key's commit built on an
/// old history), or one that does not count, only when the same push carries a descendant of
/// it, counting and allowed now, whose author the list before the push lets write (or
/// administer, if the denied commit counts and changes `_acl`): an honest replica that
/// received the commit vouches for it, and its own commits are not refused for it. Otherwise
/// the push is refused.
fn check_vouched(verdicts: Vec<Verdict<'_>>) -> Result<()> {
    if verdicts.iter().all(|v| v.denied_now.is_none()) {
        return Ok(());
    }
    // Ids with a vouching descendant: (by a writer, by an owner).
    let (mut by_writer, mut by_owner) = (HashSet::new(), HashSet::new());
    let mut refusal = None;
    for v in verdicts.iter().rev() {
        let w = v.vouches.0 || by_writer.contains(&v.id);
        let a = v.vouches.1 || by_owner.contains(&v.id);
        for p in &v.commit.parents {
            if w {
                by_writer.insert(*p);
            }
            if a {
                by_owner.insert(*p);
            }
        }
        if let Some(e) = &v.denied_now {
            if !(if v.needs_owner { a } else { w }) {
                refusal = Some(e.clone());
            }
        }
    }
    refusal.map_or(Ok(()), Err)
}

/// Whether a push holds only the session's own redemptions: a key not yet in the list may push
/// them (each is judged by the rule, and refused if it does not count).
fn redeems_only(accepted: &[(Commit, CommitId, &Vec<u8>)], session: Option<&PublicKey>) -> bool {
    session.is_some()
        && !accepted.is_empty()
        && accepted
            .iter()
            .all(|(c, _, _)| redeemer(c).as_ref() == session)
}

/// May a session (its key, or anonymous) push to a repository with this access list?
fn session_may_write(acl: &Acl, session: Option<&PublicKey>) -> bool {
    match session {
        Some(k) => acl.can_write(k),
        None => !acl.owned() || acl.public().1,
    }
}
