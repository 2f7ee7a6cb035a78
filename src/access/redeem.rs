//! Redeeming an invite (docs/design.md §6.4 "Invites"): the rule a redemption must pass in its
//! causal past, the redemption commit a device builds from a link alone, and how a server
//! recognizes one.

use super::acl::{InviteState, InviteStatus};
use super::invite::{
    invite_id, invite_identity, proof_message, prove, InviteId, INVITE_SECRET_LEN,
};
use super::parse::{parse_change, redeem_value, AclWrite, ACL_COLLECTION};
use super::role::Role;
use crate::commit::{Change, Commit, CommitId, Identity, Op, PublicKey, Seal, Signature};
use crate::error::{Error, PermissionErrorKind, Result};

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
    let commit = Commit {
        trusted: false,
        author: author.public(),
        hlc: ms << 16,
        parents,
        changes: vec![Change {
            collection: ACL_COLLECTION.into(),
            id: author.public().to_hex(),
            op: Op::Put(redeem_value(role, &id, &proof)),
        }],
    };
    let bytes = commit.encode();
    let cid = CommitId::of(&bytes);
    let seal = Seal::create(author, repo, &[cid]).encode();
    (cid, bytes, seal)
}

/// The key `c` redeems an invite for, if it is a redemption (one `_acl` change, signed, for
/// its own author): what a server lets a key not yet in the list push.
pub fn redeemer(c: &Commit) -> Option<PublicKey> {
    match (c.changes.as_slice(), c.trusted) {
        ([ch], false) => match parse_change(ch) {
            Ok(Some(AclWrite::Redeem { key, .. })) if key == c.author => Some(key),
            _ => None,
        },
        _ => None,
    }
}
