//! Invites (docs/design.md §6.4 "Invites"): a capability in the access list. An owner writes
//! `_acl/invite-<id>` = `{"invite": <invite public key hex>, "role": r, "expires": ms, "uses": n}`;
//! the invite key is derived from a one-time secret S that only the link carries. A device that
//! holds S redeems by writing its own member item `_acl/<its key hex>` =
//! `{"role": r, "invite": <id hex>, "proof": <signature hex>}`, the proof being the invite key's
//! signature over [`proof_message`]. Whether a redemption counts is decided, like every commit,
//! by the access list of its causal past (`redeem.rs`); concurrent redemptions of one invite are
//! ordered by commit id and only the first `uses` give a role (`acl.rs`, `InviteState`).

use super::role::Role;
use crate::commit::{Identity, PublicKey, Signature};
use sha2::{Digest, Sha256};

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
