//! What a change to the reserved `_acl` collection means, and the shapes it must have: a member
//! item `_acl/<public key hex>` is `{"role": …}` or deleted; `_acl/public` is
//! `{"read": bool, "write": bool}` or deleted; no patches.

use super::role::Role;
use crate::commit::{Change, Op, PublicKey};
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
    let key = parse_member_id(&ch.id)?;
    let role = match &ch.op {
        Op::Delete => None,
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
