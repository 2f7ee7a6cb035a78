//! The permission rule on receive (docs/design.md §6.4), and a sync server's admission rules.
//!
//! Every replica checks each received commit against the access list of its causal past
//! (`access::check_commit`). The commits of a batch whose parents are present are checked
//! before anything is stored, in batch order, each seeing the access lists of the batch's
//! earlier commits; a commit waiting for its parents is checked when they arrive.
//!
//! A sync server adds, for a session's push ([`Admission::Server`]): a new commit must also be
//! allowed by the server's *current* access list merged with its past, so a revoked key cannot
//! push even on top of an old history; the session's own key must be allowed to write (by the
//! access list the push itself leaves, so a new repository's root may come from any session
//! its grants let write); a server that does not host unowned repositories refuses an unowned
//! root. A second root is refused on every replica.

use super::Repo;
use crate::access::{check_commit, Acl};
use crate::commit::{Commit, CommitId, PublicKey};
use crate::error::{Error, PermissionErrorKind, Result};
use crate::store::Storage;
use std::collections::HashMap;

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

impl<S: Storage> Repo<S> {
    /// Check the ready commits of a batch (in order) before anything is stored.
    pub(super) fn admit_batch(
        &self,
        admission: &Admission,
        accepted: &[(Commit, CommitId, &Vec<u8>)],
    ) -> Result<()> {
        let mut prov = Provisional {
            after: HashMap::new(),
            current: self.graph.current_acl().clone(),
            have_root: !self.graph.commits.is_empty(),
        };
        for (commit, id, _) in accepted {
            let after = if commit.parents.is_empty() {
                self.admit_root(admission, &prov, commit, id)?
            } else {
                let Some(past) = self.batch_past(commit, &prov.after) else {
                    continue; // waits for its parents; checked when they arrive
                };
                admit(admission, &prov.current, &past, commit, id)?
            };
            prov.have_root |= commit.parents.is_empty();
            prov.current.join(&after);
            prov.after.insert(*id, after);
        }
        if let Admission::Server { session, .. } = admission {
            if !accepted.is_empty() && !session_may_write(&prov.current, session.as_ref()) {
                return Err(denied(
                    PermissionErrorKind::CannotWrite,
                    "this session's key may not write to the repository",
                ));
            }
        }
        Ok(())
    }

    /// The rule for a waiting commit whose parents just arrived.
    pub(super) fn admit_ready(
        &self,
        admission: &Admission,
        commit: &Commit,
        id: &CommitId,
    ) -> Result<()> {
        let parents: Vec<u32> = commit.parents.iter().map(|p| self.graph.by_id[p]).collect();
        let past = self.graph.past_acl(&parents);
        admit(admission, self.graph.current_acl(), &past, commit, id).map(|_| ())
    }

    /// A root: it must be the only root (or join other unowned roots), and a server may refuse
    /// unowned ones.
    fn admit_root(
        &self,
        admission: &Admission,
        prov: &Provisional,
        commit: &Commit,
        id: &CommitId,
    ) -> Result<Acl> {
        let after = check_commit(&Acl::default(), commit, commit.stamp(id))?;
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

/// The rule for one commit with a known past, plus a server's check against its current list.
fn admit(
    admission: &Admission,
    current: &Acl,
    past: &Acl,
    commit: &Commit,
    id: &CommitId,
) -> Result<Acl> {
    let stamp = commit.stamp(id);
    let after = check_commit(past, commit, stamp)?;
    if matches!(admission, Admission::Server { .. }) {
        let mut now = current.clone();
        now.join(past);
        check_commit(&now, commit, stamp)?;
    }
    Ok(after)
}

/// May a session (its key, or anonymous) push to a repository with this access list?
fn session_may_write(acl: &Acl, session: Option<&PublicKey>) -> bool {
    match session {
        Some(k) => acl.can_write(k),
        None => !acl.owned() || acl.public().1,
    }
}
