//! The repository's access list (docs/design.md §6.4): reading it, changing it (grants,
//! revocations and the public switches are ordinary commits to the reserved `_acl`
//! collection), and the rule applied to this replica's own commits before they are written.

use super::Repo;
use crate::access::{
    self, invite_id, invite_identity, invite_value, member_value, prove, public_value,
    redeem_value, Acl, InviteDef, InviteId, InviteStatus, Role, ACL_COLLECTION, INVITE_PREFIX,
    INVITE_SECRET_LEN, PUBLIC_ID,
};
use crate::commit::{Change, Commit, CommitId, Op, PublicKey};
use crate::error::{Error, PermissionErrorKind, Result};
use crate::store::Storage;
use crate::txn::Txn;

impl<S: Storage> Repo<S> {
    /// The access list of everything this replica holds (the merge of every commit's).
    pub fn access(&self) -> &Acl {
        self.graph.current_acl()
    }

    /// Whether the commit `id` counts (`None`: not applied here). A commit whose author lacked
    /// the right in its causal past is stored without effect (docs/design.md §6.4).
    pub fn counts(&self, id: &CommitId) -> Option<bool> {
        let &i = self.graph.by_id.get(id)?;
        Some(self.graph.commits[i as usize].counts)
    }

    /// Give `key` a role. Only an owner may; the commit is an ordinary (sealed, synced) one.
    pub fn grant(&mut self, key: &PublicKey, role: Role) -> Result<Option<CommitId>> {
        let mut txn = Txn::new();
        txn.put(&member_key(key), member_value(role))?;
        self.wrap_epochs_to(key, &mut txn)?;
        self.commit(txn)
    }

    /// Take `key`'s role away. Refused if it would leave the repository without an owner.
    pub fn revoke(&mut self, key: &PublicKey) -> Result<Option<CommitId>> {
        let acl = self.access();
        if acl.role(key).is_none() {
            return Ok(None);
        }
        if acl.role(key) == Some(Role::Owner) && acl.owners() == 1 {
            return Err(Error::Permission {
                kind: PermissionErrorKind::CannotAdminister,
                detail: "revoking the last owner would leave the repository without one".into(),
            });
        }
        let mut txn = Txn::new();
        txn.delete(&member_key(key))?;
        self.new_epoch(Some(key), &mut txn)?;
        self.commit(txn)
    }

    /// Set the public switches: anyone may read, anyone may write.
    pub fn set_public(&mut self, read: bool, write: bool) -> Result<Option<CommitId>> {
        let mut txn = Txn::new();
        txn.put(
            &format!("{ACL_COLLECTION}/{PUBLIC_ID}"),
            public_value(read, write),
        )?;
        self.commit(txn)
    }

    /// Write an invite (owners only, §6.4 "Invites"): whoever holds `secret` (≥ 128 random
    /// bits: the caller's RNG, the core has none) may redeem it for `role` until `expires` (ms
    /// since the epoch), `uses` times. The access list holds the key derived from the secret,
    /// never the secret. Returns the invite's id and the commit.
    pub fn invite(
        &mut self,
        secret: &[u8; INVITE_SECRET_LEN],
        role: Role,
        expires: u64,
        uses: u32,
    ) -> Result<(InviteId, Option<CommitId>)> {
        let key = invite_identity(secret).public();
        let id = invite_id(&key);
        let def = InviteDef {
            key,
            role,
            expires,
            uses,
        };
        let mut txn = Txn::new();
        txn.put(&invite_key(&id), invite_value(&def))?;
        let c = self.commit(txn)?;
        Ok((id, c))
    }

    /// Revoke an invite before it is used up: later redemptions do not count.
    pub fn revoke_invite(&mut self, id: &InviteId) -> Result<Option<CommitId>> {
        let mut txn = Txn::new();
        txn.delete(&invite_key(id))?;
        self.commit(txn)
    }

    /// Redeem the invite whose secret is `secret`: one commit granting this replica's key the
    /// invite's role, with the invite key's signature as proof. The invite must be in what
    /// this replica holds; a revoked, expired, used-up or unknown invite is a typed
    /// `PermissionError` (`invite-revoked`, `invite-expired`, `invite-used`,
    /// `invite-invalid`) and nothing is written.
    ///
    /// A key that already has the invite's role or a higher one writes nothing (`Ok(None)`):
    /// the invite keeps its use for someone else. A key whose role an owner's entry sets (a
    /// grant, or a revocation) is refused `invite-invalid` before anything is written: the
    /// owner's entry rules (§6.4), so the redemption would spend a use and change nothing.
    pub fn redeem(&mut self, secret: &[u8; INVITE_SECRET_LEN]) -> Result<Option<CommitId>> {
        let id = invite_id(&invite_identity(secret).public());
        let role = match self.access().invite(&id).and_then(|s| s.status()) {
            Some(InviteStatus::Open(d)) => {
                let acl = self.access();
                if acl.role(&self.author).is_some_and(|have| have >= d.role) {
                    return Ok(None);
                }
                if acl.entry_written(&self.author) {
                    return Err(Error::Permission {
                        kind: PermissionErrorKind::InviteInvalid,
                        detail: format!(
                            "this key's role is set by an owner's entry ({}); invite {} would not change it",
                            acl.role(&self.author).map_or("revoked", Role::name),
                            crate::commit::hex(&id)
                        ),
                    });
                }
                d.role
            }
            Some(InviteStatus::Revoked) => Role::Reader,
            None => {
                return Err(Error::Permission {
                    kind: PermissionErrorKind::InviteInvalid,
                    detail: format!(
                        "invite {} is not in this replica's history (sync it first)",
                        crate::commit::hex(&id)
                    ),
                })
            }
        };
        let proof = prove(secret, &self.author, role);
        let mut txn = Txn::new();
        txn.put(&member_key(&self.author), redeem_value(role, &id, &proof))?;
        self.commit(txn)
    }

    /// The root's ownership claim, added to this replica's first commit in signed mode: the
    /// creator of a repository is its owner.
    pub(super) fn founding_claim(&self, changes: &mut Vec<Change>) {
        let first = self.graph.commits.is_empty() && self.wait.len() == 0;
        if !first || self.opts.trusted || self.opts.identity.is_none() {
            return;
        }
        let id = self.author.to_hex();
        if changes
            .iter()
            .any(|c| c.collection == ACL_COLLECTION && c.id == id)
        {
            return;
        }
        changes.push(Change {
            collection: ACL_COLLECTION.to_string(),
            id,
            op: Op::Put(member_value(Role::Owner)),
        });
    }

    /// The rule, for a commit this replica is about to make: refused here, before it is
    /// written, rather than by every peer later.
    pub(super) fn check_own_commit(&self, commit: &Commit, id: &CommitId) -> Result<()> {
        let parents: Vec<u32> = commit.parents.iter().map(|p| self.graph.by_id[p]).collect();
        let past = self.graph.past_acl(&parents);
        let after = access::check_commit(&past, commit, id)?;
        if commit.parents.is_empty() {
            self.check_founder(commit, &after)?;
        }
        Ok(())
    }

    /// At open: a replica that already holds a root by another founder than the pinned one
    /// (received before the application pinned it) is refused like a received one.
    pub(super) fn check_stored_founder(&self) -> Result<()> {
        let Some(expected) = &self.opts.expected_founder else {
            return Ok(());
        };
        let Some(root) = self.graph.commits.iter().find(|c| c.parents.is_empty()) else {
            return Ok(());
        };
        let author = self.graph.authors[root.author as usize];
        let after = self.graph.acls.get(root.acl);
        if !root.trusted && author == *expected && after.role(expected) == Some(Role::Owner) {
            return Ok(());
        }
        Err(Error::Permission {
            kind: PermissionErrorKind::WrongFounder,
            detail: format!(
                "repository {:?} here was founded by {}, not by the expected owner {}",
                self.opts.name,
                &author.to_hex()[..16],
                &expected.to_hex()[..16]
            ),
        })
    }

    /// A root against the founder the application pinned (`RepoOptions::expected_founder`):
    /// its signed author must be that key and the root must make it owner.
    pub(super) fn check_founder(&self, root: &Commit, after: &Acl) -> Result<()> {
        let Some(expected) = &self.opts.expected_founder else {
            return Ok(());
        };
        let founded =
            !root.trusted && root.author == *expected && after.role(expected) == Some(Role::Owner);
        if founded {
            return Ok(());
        }
        Err(Error::Permission {
            kind: PermissionErrorKind::WrongFounder,
            detail: format!(
                "repository {:?} was founded by {}, not by the expected owner {}",
                self.opts.name,
                &root.author.to_hex()[..16],
                &expected.to_hex()[..16]
            ),
        })
    }
}

/// The `_acl` key of an invite.
fn invite_key(id: &InviteId) -> String {
    format!("{ACL_COLLECTION}/{INVITE_PREFIX}{}", crate::commit::hex(id))
}

/// The `_acl` key of a member.
fn member_key(key: &PublicKey) -> String {
    format!("{ACL_COLLECTION}/{}", key.to_hex())
}
