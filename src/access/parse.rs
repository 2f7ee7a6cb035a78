//! What a change to the reserved `_acl` collection means, and the shapes it must have: a member
//! item `_acl/<public key hex>` is `{"role": …}` or deleted; `_acl/public` is
//! `{"read": bool, "write": bool}` or deleted; no patches.

use super::invite::{
    invite_id, InviteDef, InviteId, INVITE_ID_LEN, INVITE_PREFIX, MAX_INVITE_USES,
};
use super::role::Role;
use crate::commit::{Change, Op, PublicKey, Signature, SIGNATURE_LEN};
use crate::error::{Error, Result};
use crate::value::{Map, Value};

/// The reserved collection holding the access list.
pub const ACL_COLLECTION: &str = "_acl";
/// The id of the public switches inside [`ACL_COLLECTION`].
pub const PUBLIC_ID: &str = "public";

/// What one `_acl` change says.
#[derive(Debug, Clone, PartialEq)]
pub enum AclWrite {
    /// Give `key` a role (`Some`) or take its role away (`None`).
    Member(PublicKey, Option<Role>),
    /// Set the public switches (a delete turns both off).
    Public { read: bool, write: bool },
    /// Write an invite (`Some`) or revoke it (`None`): `_acl/invite-<id hex>`.
    Invite(InviteId, Option<InviteDef>),
    /// Redeem an invite: `_acl/<key hex>` = `{"role", "invite", "proof"}`.
    Redeem {
        key: PublicKey,
        role: Role,
        invite: InviteId,
        proof: Signature,
    },
}

/// The value of a member item for `role`.
pub fn member_value(role: Role) -> Map {
    let mut m = Map::new();
    m.insert("role".into(), Value::from(role.name()));
    m
}

/// The value of the public item.
pub fn public_value(read: bool, write: bool) -> Map {
    let mut m = Map::new();
    m.insert("read".into(), Value::Bool(read));
    m.insert("write".into(), Value::Bool(write));
    m
}

/// Most encoded bytes of an `_acl` change's op kept by an access-only decode (a member is
/// `{"role": …}`, the public item two booleans): a longer one is refused before it is built.
const MAX_ACL_OP_BYTES: usize = 256;

fn bad(id: &str, reason: &str) -> Error {
    let id: String = id.chars().take(120).collect();
    Error::invalid_value(&format!("{ACL_COLLECTION}/{id}"), reason)
}

impl crate::commit::Commit {
    /// [`Commit::decode`](crate::commit::Commit::decode) for a replica that keeps only the
    /// access list and the stored schemas (a sync server, `RepoOptions::access_only`,
    /// docs/design.md §12.4): every rule of the decoder and of a received write is checked,
    /// only the `_acl` changes (each a well-formed grant, revocation or public switch, at most
    /// 256 bytes) and the `_schema` changes (each a well-formed versioned schema) are built, or
    /// refused at once, and the others stand as one [`Change::elided`] marker (the permission
    /// rule sees that the commit writes data; the stored-schema check reads their shapes from
    /// the bytes, [`Commit::visit_shapes`](crate::commit::Commit::visit_shapes)). See
    /// [`Commit::decode_keeping`](crate::commit::Commit::decode_keeping).
    pub fn decode_access_only(bytes: &[u8]) -> Result<(Self, crate::commit::CommitId)> {
        let keep = [
            (ACL_COLLECTION, MAX_ACL_OP_BYTES),
            (
                crate::schema::SCHEMA_COLLECTION,
                crate::value::MAX_ITEM_BYTES,
            ),
        ];
        Self::decode_keeping(bytes, &keep, &|c| {
            parse_change(c)?;
            crate::schema::parse_schema_change(c).map(|_| ())
        })
    }
}

/// The access-list meaning of a change; `None` for a change outside [`ACL_COLLECTION`]. A
/// change inside it that is not a well-formed grant, revocation or public switch is
/// `InvalidValueError`.
pub fn parse_change(ch: &Change) -> Result<Option<AclWrite>> {
    if ch.collection != ACL_COLLECTION {
        return Ok(None);
    }
    if ch.id == PUBLIC_ID {
        return parse_public(&ch.op).map(Some);
    }
    if let Some(hex) = ch.id.strip_prefix(INVITE_PREFIX) {
        return parse_invite(&ch.id, hex, &ch.op).map(Some);
    }
    let key = parse_member_id(&ch.id)?;
    let role = match &ch.op {
        Op::Delete => None,
        Op::Put(m) if m.len() == 3 => return parse_redeem(&ch.id, key, m).map(Some),
        Op::Put(m) => Some(parse_role(&ch.id, m)?),
        Op::Patch(_) => {
            return Err(bad(
                &ch.id,
                "the _acl collection accepts only put and delete",
            ))
        }
    };
    Ok(Some(AclWrite::Member(key, role)))
}

/// A member id: the 98 lowercase hex digits of a compressed P-384 public key.
fn parse_member_id(id: &str) -> Result<PublicKey> {
    let lower = id.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'));
    let bytes = crate::commit::from_hex(id).filter(|_| lower);
    let key = bytes.and_then(|b| PublicKey::from_bytes(&b).ok());
    key.ok_or_else(|| {
        bad(
            id,
            "a member id is a P-384 public key (98 lowercase hex digits) or \"public\"",
        )
    })
}

fn lower_hex(s: &str) -> Option<Vec<u8>> {
    let lower = s.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'));
    crate::commit::from_hex(s).filter(|_| lower)
}

const INVITE_SHAPE: &str = r#"an invite is {"invite": <its public key, 98 lowercase hex digits>, "role": "owner" | "writer" | "reader", "expires": <ms since the epoch, a whole number>, "uses": <1 to 1000>}, its id "invite-" + the 32 hex digits of the first 16 bytes of SHA-256 of its key"#;

/// `_acl/invite-<id>`: an invite's definition, or its revocation (a delete).
fn parse_invite(id: &str, hex: &str, op: &Op) -> Result<AclWrite> {
    let inv: InviteId = lower_hex(hex)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| bad(id, INVITE_SHAPE))?;
    let m = match op {
        Op::Delete => return Ok(AclWrite::Invite(inv, None)),
        Op::Put(m) => m,
        Op::Patch(_) => return Err(bad(id, "the _acl collection accepts only put and delete")),
    };
    let whole = |v: Option<&Value>, max: f64| match v {
        Some(Value::Number(n)) if n.fract() == 0.0 && *n >= 0.0 && *n <= max => Some(*n as u64),
        _ => None,
    };
    let key = match m.get("invite") {
        Some(Value::String(s)) => lower_hex(s).and_then(|b| PublicKey::from_bytes(&b).ok()),
        _ => None,
    };
    let role = match m.get("role") {
        Some(Value::String(s)) => Role::parse(s),
        _ => None,
    };
    let expires = whole(m.get("expires"), 9_007_199_254_740_991.0);
    let uses = whole(m.get("uses"), MAX_INVITE_USES as f64).filter(|&u| u >= 1);
    match (m.len(), key, role, expires, uses) {
        (4, Some(key), Some(role), Some(expires), Some(uses)) if invite_id(&key) == inv => {
            Ok(AclWrite::Invite(
                inv,
                Some(InviteDef {
                    key,
                    role,
                    expires,
                    uses: uses as u32,
                }),
            ))
        }
        _ => Err(bad(id, INVITE_SHAPE)),
    }
}

/// `_acl/<key>` = `{"role", "invite", "proof"}`: a redemption by `key`.
fn parse_redeem(id: &str, key: PublicKey, m: &Map) -> Result<AclWrite> {
    let role = match m.get("role") {
        Some(Value::String(s)) => Role::parse(s),
        _ => None,
    };
    let invite: Option<InviteId> = match m.get("invite") {
        Some(Value::String(s)) if s.len() == 2 * INVITE_ID_LEN => {
            lower_hex(s).and_then(|b| b.try_into().ok())
        }
        _ => None,
    };
    let proof = match m.get("proof") {
        Some(Value::String(s)) if s.len() == 2 * SIGNATURE_LEN => {
            lower_hex(s).and_then(|b| b.try_into().ok()).map(Signature)
        }
        _ => None,
    };
    match (role, invite, proof) {
        (Some(role), Some(invite), Some(proof)) => Ok(AclWrite::Redeem {
            key,
            role,
            invite,
            proof,
        }),
        _ => Err(bad(
            id,
            r#"a redemption is {"role": …, "invite": <32 hex digits>, "proof": <192 hex digits>}"#,
        )),
    }
}

/// The `_acl` value of an invite.
pub fn invite_value(def: &InviteDef) -> Map {
    let mut m = Map::new();
    m.insert("invite".into(), Value::from(def.key.to_hex().as_str()));
    m.insert("role".into(), Value::from(def.role.name()));
    m.insert("expires".into(), Value::Number(def.expires as f64));
    m.insert("uses".into(), Value::Number(def.uses as f64));
    m
}

/// The `_acl` value of a redemption.
pub fn redeem_value(role: Role, invite: &InviteId, proof: &Signature) -> Map {
    let mut m = Map::new();
    m.insert("role".into(), Value::from(role.name()));
    m.insert(
        "invite".into(),
        Value::from(crate::commit::hex(invite).as_str()),
    );
    m.insert(
        "proof".into(),
        Value::from(crate::commit::hex(&proof.0).as_str()),
    );
    m
}

fn parse_role(id: &str, m: &Map) -> Result<Role> {
    let role = match (m.len(), m.get("role")) {
        (1, Some(Value::String(s))) => Role::parse(s),
        _ => None,
    };
    role.ok_or_else(|| bad(id, r#"a member is {"role": "owner" | "writer" | "reader"}"#))
}

fn parse_public(op: &Op) -> Result<AclWrite> {
    let off = AclWrite::Public {
        read: false,
        write: false,
    };
    match op {
        Op::Delete => Ok(off),
        Op::Put(m) => match (m.len(), m.get("read"), m.get("write")) {
            (2, Some(Value::Bool(read)), Some(Value::Bool(write))) => Ok(AclWrite::Public {
                read: *read,
                write: *write,
            }),
            _ => Err(bad(
                PUBLIC_ID,
                r#"the public switches are {"read": boolean, "write": boolean}"#,
            )),
        },
        Op::Patch(_) => Err(bad(
            PUBLIC_ID,
            "the _acl collection accepts only put and delete",
        )),
    }
}
