//! Invites (docs/design.md §6.4 "Invites"): a capability in the access list. An owner writes
//! `_acl/invite-<id>` = `{"invite": <invite public key hex>, "role": r, "expires": ms, "uses": n}`;
//! the invite key is derived from a one-time secret S that only the link carries. A device that
//! holds S redeems by writing its own member item `_acl/<its key hex>` =
//! `{"role": r, "invite": <id hex>, "proof": <signature hex>}`, the proof being the invite key's
//! signature over [`proof_message`]. Whether a redemption counts is decided, like every commit,
//! by the access list of its causal past ([`check_redemption`]); concurrent redemptions of one
//! invite are ordered by commit id and only the first `uses` give a role ([`InviteState`]).

use super::acl::Register;
use super::role::Role;
use crate::commit::{CommitId, Identity, PublicKey, Signature};
use crate::error::{Error, PermissionErrorKind, Result};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Length of an invite id (the first bytes of SHA-256 of the invite public key).
pub const INVITE_ID_LEN: usize = 16;
/// Length of an invite secret.
pub const INVITE_SECRET_LEN: usize = 32;
/// The most uses one invite may allow.
pub const MAX_INVITE_USES: u32 = 1000;
/// The prefix of an invite's item id in `_acl`.
pub const INVITE_PREFIX: &str = "invite-";

/// An invite's id.
pub type InviteId = [u8; INVITE_ID_LEN];

/// What an owner's invite says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct InviteDef {
    /// The public commitment to the secret: the key derived from it.
    pub key: PublicKey,
    pub role: Role,
    /// The last millisecond (Unix epoch) at which a redemption may be stamped.
    pub expires: u64,
    pub uses: u32,
}

/// An invite as an access list knows it: its definition's uncovered writes (`None`: revoked)
/// and every redemption merged in, by commit id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct InviteState {
    pub(crate) def: Register<Option<InviteDef>>,
    pub(crate) redeemed: BTreeMap<CommitId, Redemption>,
}

/// One redemption: who, for which role, under a definition allowing `uses`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Redemption {
    pub key: PublicKey,
    pub role: Role,
    pub uses: u32,
}

/// Where an invite stands in an access list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InviteStatus {
    Open(InviteDef),
    Revoked,
}

impl InviteState {
    /// The invite's definition: revoked if any uncovered write revokes it (least privilege),
    /// otherwise the definition of the least commit id among concurrent writes.
    pub fn status(&self) -> Option<InviteStatus> {
        let heads = &self.def.heads;
        if heads.is_empty() {
            return None;
        }
        if heads.iter().any(|w| w.value.is_none()) {
            return Some(InviteStatus::Revoked);
        }
        heads[0].value.map(InviteStatus::Open)
    }

    /// The redemptions that count: ordered by commit id, the one of rank `i` (from 0) counts
    /// iff `i` is below the uses of the definition it was judged against. Two concurrent
    /// redemptions of a single-use invite: the least commit id counts, the other gives no
    /// role, whichever replica merges them and in whatever order.
    pub fn effective(&self) -> impl Iterator<Item = (&CommitId, &Redemption)> + '_ {
        self.redeemed
            .iter()
            .enumerate()
            .filter(|(i, (_, r))| *i < r.uses as usize)
            .map(|(_, e)| e)
    }

    pub(crate) fn join(&mut self, other: &InviteState) {
        self.def.join(&other.def);
        for (k, v) in &other.redeemed {
            self.redeemed.insert(*k, *v);
        }
    }
}

/// The key pair of an invite, derived from its secret.
pub fn invite_identity(secret: &[u8; INVITE_SECRET_LEN]) -> Identity {
    let a = Sha256::new()
        .chain_update(b"ibexdb-invite-key/1/a")
        .chain_update(secret)
        .finalize();
    let b = Sha256::new()
        .chain_update(b"ibexdb-invite-key/1/b")
        .chain_update(secret)
        .finalize();
    let mut entropy = [0u8; 48];
    entropy[..32].copy_from_slice(&a);
    entropy[32..].copy_from_slice(&b[..16]);
    Identity::from_entropy(&entropy)
}

/// An invite's id: the first 16 bytes of SHA-256 of its public key.
pub fn invite_id(key: &PublicKey) -> InviteId {
    let h = Sha256::digest(key.0);
    h[..INVITE_ID_LEN].try_into().unwrap()
}

/// What the invite key signs to prove a redemption: the domain, the invite id, the redeemer's
/// key and the role's byte.
pub fn proof_message(id: &InviteId, redeemer: &PublicKey, role: Role) -> Vec<u8> {
    let mut m = b"ibexdb-invite-redeem/1".to_vec();
    m.extend_from_slice(id);
    m.extend_from_slice(&redeemer.0);
    m.push(Role::code(Some(role)));
    m
}

/// The proof a holder of `secret` gives for `redeemer`.
pub fn prove(secret: &[u8; INVITE_SECRET_LEN], redeemer: &PublicKey, role: Role) -> Signature {
    let ident = invite_identity(secret);
    let id = invite_id(&ident.public());
    ident.sign(&proof_message(&id, redeemer, role))
}

fn refused(kind: PermissionErrorKind, detail: String) -> Error {
    Error::Permission { kind, detail }
}

/// The rule for a redemption by `author` at `hlc` of invite `id` for `role` with `proof`,
/// against `state`, the invite as the commit's causal past knows it.
pub fn check_redemption(
    state: Option<&InviteState>,
    id: &InviteId,
    author: &PublicKey,
    role: Role,
    proof: &Signature,
    hlc: u64,
) -> Result<()> {
    let name = crate::commit::hex(id);
    let unknown = || {
        refused(
            PermissionErrorKind::InviteInvalid,
            format!("invite {name} is not in the commit's causal past"),
        )
    };
    let state = state.ok_or_else(unknown)?;
    let def = match state.status().ok_or_else(unknown)? {
        InviteStatus::Revoked => {
            return Err(refused(
                PermissionErrorKind::InviteRevoked,
                format!("invite {name} was revoked"),
            ))
        }
        InviteStatus::Open(d) => d,
    };
    if def.role != role {
        return Err(refused(
            PermissionErrorKind::InviteInvalid,
            format!(
                "invite {name} grants {}, not {}",
                def.role.name(),
                role.name()
            ),
        ));
    }
    if def
        .key
        .verify(&proof_message(id, author, role), proof)
        .is_err()
    {
        return Err(refused(
            PermissionErrorKind::InviteInvalid,
            format!("the proof for invite {name} is not the invite key's signature"),
        ));
    }
    let ms = hlc >> 16;
    if ms > def.expires {
        return Err(refused(
            PermissionErrorKind::InviteExpired,
            format!(
                "invite {name} expired at {} ms, redeemed at {ms}",
                def.expires
            ),
        ));
    }
    if state.effective().count() >= def.uses as usize {
        return Err(refused(
            PermissionErrorKind::InviteUsed,
            format!("invite {name} has no use left (uses {})", def.uses),
        ));
    }
    Ok(())
}

/// A redemption commit made without the repository's history (a device that may not read
/// yet, docs/design.md §6.4 "Invites"): by `author`, on `parents` (the invite's commit, which
/// the link names), stamped `ms`, with its seal for repository `repo`. Its id, its bytes and
/// the seal's bytes, as a push carries them.
pub fn redemption_commit(
    author: &Identity,
    repo: &str,
    secret: &[u8; INVITE_SECRET_LEN],
    role: Role,
    parents: Vec<CommitId>,
    ms: u64,
) -> (CommitId, Vec<u8>, Vec<u8>) {
    let id = invite_id(&invite_identity(secret).public());
    let proof = prove(secret, &author.public(), role);
    let commit = crate::commit::Commit {
        trusted: false,
        author: author.public(),
        hlc: ms << 16,
        parents,
        changes: vec![crate::commit::Change {
            collection: super::ACL_COLLECTION.into(),
            id: author.public().to_hex(),
            op: crate::commit::Op::Put(super::redeem_value(role, &id, &proof)),
        }],
    };
    let bytes = commit.encode();
    let cid = CommitId::of(&bytes);
    let seal = crate::commit::Seal::create(author, repo, &[cid]).encode();
    (cid, bytes, seal)
}

/// The key `c` redeems an invite for, if it is a redemption (one `_acl` change, signed, for
/// its own author): what a server lets a key not yet in the list push.
pub fn redeemer(c: &crate::commit::Commit) -> Option<PublicKey> {
    match (c.changes.as_slice(), c.trusted) {
        ([ch], false) => match super::parse_change(ch) {
            Ok(Some(super::AclWrite::Redeem { key, .. })) if key == c.author => Some(key),
            _ => None,
        },
        _ => None,
    }
}
