//! The permission rule (docs/design.md §6.4): a commit checked against the access list of its
//! causal past. A commit the rule refuses does not count: replicas store it (its descendants
//! connect) without applying it.

use super::{check_redemption, parse_change, Acl, AclWrite, Role};
use crate::commit::{Change, Commit, CommitId, FieldOp, ShapeVisitor};
use crate::error::{Error, PermissionErrorKind, Result};
use crate::schema::Schema;
use crate::schema::{check_change, parse_schema_change, SchemaWrite};

fn denied(kind: PermissionErrorKind, detail: String) -> Error {
    Error::Permission { kind, detail }
}

/// The `_acl` writes of a commit, its `_schema` writes, and whether it changes anything else.
fn split(commit: &Commit) -> Result<(Vec<AclWrite>, Vec<SchemaWrite>, bool)> {
    let mut writes = Vec::new();
    let mut schemas = Vec::new();
    let mut data = false;
    for ch in &commit.changes {
        if let Some(w) = parse_change(ch)? {
            writes.push(w);
        } else if let Some(s) = parse_schema_change(ch)? {
            schemas.push(s);
        } else {
            data = true;
        }
    }
    Ok((writes, schemas, data))
}

/// Whether an error of [`check_commit`] is a verdict that depends on the commit's past (its
/// author's rights, the stored schemas, docs/design.md §2.4): the commit is stored and does
/// not count. Any other error (a malformed `_acl` or `_schema` change) refuses it.
pub fn is_void(e: &Error) -> bool {
    matches!(
        e,
        Error::Permission { .. } | Error::Schema { .. } | Error::SchemaVersion { .. }
    )
}

/// Check `commit` (whose id is `id`) against `past`, the access list of its causal past (the
/// empty list for a root), and return the access list after it. The answer depends only on
/// the commit and its ancestry.
pub fn check_commit(past: &Acl, commit: &Commit, id: &CommitId) -> Result<Acl> {
    check_commit_bytes(past, commit, id, None)
}

/// [`check_commit`] of a commit that may have been decoded access-only (its data changes
/// elided, [`Commit::decode_access_only`]): `bytes` are its encoded form, from which the
/// stored-schema check reads the shapes of those changes. Without them, elided changes pass
/// that check unseen.
pub fn check_commit_bytes(
    past: &Acl,
    commit: &Commit,
    id: &CommitId,
    bytes: Option<&[u8]>,
) -> Result<Acl> {
    Ok(judge(past, commit, id, bytes)?.unwrap_or_else(|| past.clone()))
}

/// [`check_commit_bytes`] without copying `past` when the commit leaves the list as it was:
/// `Ok(None)` for a commit that counts and writes no `_acl` item.
pub(crate) fn judge(
    past: &Acl,
    commit: &Commit,
    id: &CommitId,
    bytes: Option<&[u8]>,
) -> Result<Option<Acl>> {
    let (writes, schemas, data) = split(commit)?;
    if let Some(AclWrite::Redeem { .. }) =
        writes.iter().find(|w| matches!(w, AclWrite::Redeem { .. }))
    {
        check_redeem(past, commit, &writes, &schemas, data)?;
        let mut after = past.clone();
        after.apply(*id, &writes);
        return Ok(Some(after));
    }
    let founder = if commit.parents.is_empty() {
        check_root(commit, &writes)?.then_some(commit.author)
    } else {
        check_child(past, commit, &writes, data)?;
        past.founder
    };
    check_schema_writes(past, commit, &schemas)?;
    if writes.is_empty() && schemas.is_empty() && founder == past.founder {
        check_data(past, commit, bytes)?;
        return Ok(None);
    }
    let mut after = past.clone();
    after.founder = founder;
    after.apply(*id, &writes);
    after.apply_schemas(*id, &schemas);
    check_data(&after, commit, bytes)?;
    Ok(Some(after))
}

/// A redemption commit (§6.4 "Invites") holds its author's own redemption and nothing else,
/// and the invite allows it in the commit's causal past.
fn check_redeem(
    past: &Acl,
    commit: &Commit,
    writes: &[AclWrite],
    schemas: &[SchemaWrite],
    data: bool,
) -> Result<()> {
    let alone = writes.len() == 1 && schemas.is_empty() && !data;
    let Some(AclWrite::Redeem {
        key,
        role,
        invite,
        proof,
    }) = writes.first().filter(|_| alone)
    else {
        return Err(denied(
            PermissionErrorKind::InviteInvalid,
            "a redemption commit holds its author's redemption and nothing else".into(),
        ));
    };
    if commit.trusted || commit.parents.is_empty() || *key != commit.author {
        return Err(denied(
            PermissionErrorKind::InviteInvalid,
            "an invite is redeemed by a signed commit on the invite's history, for its own author"
                .into(),
        ));
    }
    check_redemption(past.invite(invite), invite, key, *role, proof, commit.hlc)
}

/// `_schema` writes (docs/design.md §2.4) need an owner in an owned repository (anyone may
/// write them in an unowned one), and a version no lower than the repository's in the
/// commit's causal past.
fn check_schema_writes(past: &Acl, commit: &Commit, schemas: &[SchemaWrite]) -> Result<()> {
    if schemas.is_empty() {
        return Ok(());
    }
    let root = commit.parents.is_empty();
    if !root && past.owned() && (commit.trusted || !past.can_administer(&commit.author)) {
        return Err(denied(
            PermissionErrorKind::CannotAdminister,
            format!(
                "key {}… may not change the stored schemas (owners only)",
                &commit.author.to_hex()[..16]
            ),
        ));
    }
    let current = past.schema_version();
    if let Some(w) = schemas.iter().find(|w| w.schema.version < current) {
        return Err(Error::SchemaVersion {
            stored: current,
            version: w.schema.version,
            reason: format!(
                "the schema of {:?} at version {} is older than the repository's version {current}: versions never go down",
                w.collection, w.schema.version
            ),
        });
    }
    Ok(())
}

/// Every data change against its collection's stored schema in `list` (the commit's causal
/// past with the commit's own `_schema` writes): `SchemaError` naming the field otherwise. The
/// changes an access-only decode elided are checked field by field from `bytes` by
/// [`ShapeCheck`] (only those of collections with a stored schema).
fn check_data(list: &Acl, commit: &Commit, bytes: Option<&[u8]>) -> Result<()> {
    if list.schemas.is_empty() {
        return Ok(());
    }
    for ch in &commit.changes {
        if ch.is_elided() || ch.collection.starts_with('_') {
            continue;
        }
        if let Some(s) = list.stored_schema(&ch.collection) {
            check_change(&s.schema, ch)?;
        }
    }
    if let (Some(bytes), true) = (bytes, commit.changes.iter().any(Change::is_elided)) {
        let mut check = ShapeCheck {
            list,
            cur: None,
            seen: Vec::new(),
        };
        Commit::visit_shapes(bytes, &mut check)?;
    }
    Ok(())
}

/// [`check_change`] field by field, over the shapes of a commit's changes
/// ([`Commit::visit_shapes`]): a field's kind (and an integer's number) is all a schema looks
/// at, so the verdict is the same; a put's missing required field is found at its end, so
/// when a put breaks two rules the error may name the other. It holds the required fields
/// seen in the current put, a subset of the schema's: never more than the schema's size.
struct ShapeCheck<'l> {
    list: &'l Acl,
    /// The current change's schema and whether it is a put.
    cur: Option<(&'l Schema, bool)>,
    /// The required fields the current put has (cleared at each change, its room kept).
    seen: Vec<&'l str>,
}

impl ShapeVisitor for ShapeCheck<'_> {
    fn wanted(&self, collection: &str) -> bool {
        !collection.starts_with('_') && self.list.stored_schema(collection).is_some()
    }

    fn begin(&mut self, collection: &str, put: bool) {
        let list: &Acl = self.list;
        self.cur = list.stored_schema(collection).map(|s| (&*s.schema, put));
        self.seen.clear();
    }

    fn field(&mut self, c: &str, name: &str, op: &FieldOp) -> Result<()> {
        let Some((schema, put)) = self.cur else {
            return Ok(());
        };
        match op {
            FieldOp::Assign(v) if put => {
                schema.check_field(c, name, v)?;
                if let Some((n, _)) = schema
                    .fields
                    .get_key_value(name)
                    .filter(|(_, f)| f.required)
                {
                    self.seen.push(n.as_str());
                }
                Ok(())
            }
            FieldOp::Assign(v) => schema.check_assign(c, name, Some(v)),
            FieldOp::Unset => schema.check_assign(c, name, None),
            FieldOp::SetEdit { .. } => schema.check_set_edit(c, name),
        }
    }

    fn end(&mut self, c: &str) -> Result<()> {
        let Some((schema, true)) = self.cur.take() else {
            return Ok(());
        };
        // A put's fields are distinct: it has them all when it has as many.
        let required = schema.fields.iter().filter(|(_, f)| f.required);
        if required.clone().count() == self.seen.len() {
            return Ok(());
        }
        let missing = required
            .map(|(n, _)| n)
            .find(|n| !self.seen.contains(&n.as_str()));
        match missing {
            Some(n) => Err(Error::Schema {
                collection: c.to_string(),
                field: n.clone(),
                rule: "is required".into(),
            }),
            None => Ok(()),
        }
    }
}

/// A root founds the repository: it is owned iff the root makes its own (signed) author owner,
/// and only such a root may write the access list.
fn check_root(commit: &Commit, writes: &[AclWrite]) -> Result<bool> {
    let claim = AclWrite::Member(commit.author, Some(Role::Owner));
    let owned = !commit.trusted && writes.contains(&claim);
    if !writes.is_empty() && !owned {
        return Err(denied(
            PermissionErrorKind::CannotAdminister,
            "a root commit may write the access list only when it makes its signed author owner"
                .into(),
        ));
    }
    Ok(owned)
}

fn check_child(past: &Acl, commit: &Commit, writes: &[AclWrite], data: bool) -> Result<()> {
    let author = &commit.author;
    let who = || author.to_hex()[..16].to_string();
    // An unsigned commit's author is not proven: it gets only what anyone gets.
    let anyone = !past.owned() || past.public().1;
    if !writes.is_empty() && (commit.trusted || !past.can_administer(author)) {
        return Err(denied(
            PermissionErrorKind::CannotAdminister,
            format!("key {}… may not change the access list", who()),
        ));
    }
    // The founder is the root of authority: only it changes its own role.
    let founder = past.founder.filter(|f| f != author);
    if writes
        .iter()
        .any(|w| matches!(w, AclWrite::Member(k, _) if Some(*k) == founder))
    {
        return Err(denied(
            PermissionErrorKind::CannotAdminister,
            format!(
                "key {}… may not change the role of the repository's founder",
                who()
            ),
        ));
    }
    let may_write = if commit.trusted {
        anyone
    } else {
        past.can_write(author)
    };
    if data && !may_write {
        return Err(denied(
            PermissionErrorKind::CannotWrite,
            format!("key {}… may not write to this repository", who()),
        ));
    }
    Ok(())
}
