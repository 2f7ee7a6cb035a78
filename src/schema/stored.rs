//! Schemas stored in the repository (docs/design.md §2.4): the reserved collection `_schema`
//! holds one item per collection, `_schema/<collection>` = the schema's JSON form plus
//! `"version": n` (a whole number ≥ 1). They are signed data like `_acl`: they sync, verify
//! and show in `history`; only an owner changes them (anyone, in an unowned repository); a
//! version never goes down; and every received commit is checked against the schemas of its
//! causal past ([`check_change`], applied by the permission rule, `access::judge`).

use super::Schema;
use crate::codec::{Reader, Writer};
use crate::commit::{Change, FieldOp, Op};
use crate::error::{Error, Result};
use crate::value::{Map, Value};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// The reserved collection holding the stored schemas.
pub const SCHEMA_COLLECTION: &str = "_schema";

/// Most a version may be (a version is a `u32` in snapshots).
const MAX_VERSION: u32 = 1 << 30;

/// One stored schema: its version, its item's canonical bytes (what equality and snapshots
/// use) and the schema they parse to.
#[derive(Debug, Clone)]
pub struct StoredSchema {
    pub version: u32,
    pub bytes: Arc<[u8]>,
    pub schema: Arc<Schema>,
}

impl PartialEq for StoredSchema {
    fn eq(&self, other: &Self) -> bool {
        self.version == other.version && self.bytes == other.bytes
    }
}

impl Eq for StoredSchema {}

impl Hash for StoredSchema {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.version.hash(h);
        self.bytes.hash(h);
    }
}

impl StoredSchema {
    /// Parse a `_schema` item's value (`collection` names the schema in errors).
    pub fn from_map(collection: &str, m: &Map) -> Result<StoredSchema> {
        let bad = |reason: String| Error::InvalidSchema {
            collection: collection.to_string(),
            reason,
        };
        let version = match m.get("version") {
            Some(Value::Number(n)) if n.fract() == 0.0 && *n >= 1.0 && *n <= MAX_VERSION as f64 => {
                *n as u32
            }
            Some(v) => {
                return Err(bad(format!(
                    "version must be a whole number from 1 to {MAX_VERSION}, got {}",
                    crate::value::to_tree(v)
                )))
            }
            None => return Err(bad("a stored schema needs a version".into())),
        };
        let mut rest = m.clone();
        rest.remove("version");
        let schema = Schema::from_json(collection, &crate::value::to_tree(&Value::Map(rest)))?;
        let mut w = Writer::new();
        Value::Map(m.clone()).encode(&mut w);
        Ok(StoredSchema {
            version,
            bytes: w.into_inner().into(),
            schema: Arc::new(schema),
        })
    }

    /// Rebuild from the canonical bytes (snapshots).
    pub fn from_bytes(collection: &str, bytes: &[u8]) -> Result<StoredSchema> {
        let mut r = Reader::new(bytes, "stored schema");
        let v = Value::decode(&mut r)?;
        r.finish()?;
        match v {
            Value::Map(m) => StoredSchema::from_map(collection, &m),
            _ => Err(r.err("a stored schema is a map")),
        }
    }
}

/// The `_schema` item of `schema` at `version` (what an upgrade writes).
pub fn schema_value(version: u32, schema: &serde_json::Value) -> Result<Map> {
    let mut m = match crate::value::from_tree(schema)? {
        Value::Map(m) => m,
        _ => Map::new(),
    };
    m.insert("version".into(), Value::from(version as i64));
    Ok(m)
}

/// What one `_schema` change says: collection `collection` gets `schema`.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaWrite {
    pub collection: String,
    pub schema: StoredSchema,
}

/// The meaning of a change to [`SCHEMA_COLLECTION`] (`None` for any other collection): only
/// puts of a well-formed versioned schema of a valid, non-reserved collection name;
/// `InvalidSchemaError` naming the problem otherwise (local writes and received commits alike).
pub fn parse_schema_change(ch: &Change) -> Result<Option<SchemaWrite>> {
    if ch.collection != SCHEMA_COLLECTION {
        return Ok(None);
    }
    let name: String = ch.id.chars().take(120).collect();
    let bad = |reason: &str| Error::InvalidSchema {
        collection: name.clone(),
        reason: reason.to_string(),
    };
    if crate::key::validate_collection(&ch.id).is_err() || ch.id.starts_with('_') {
        return Err(bad(
            "a _schema item is named after an application collection ([A-Za-z0-9_-], not reserved)",
        ));
    }
    match &ch.op {
        Op::Put(m) => Ok(Some(SchemaWrite {
            collection: ch.id.clone(),
            schema: StoredSchema::from_map(&ch.id, m)?,
        })),
        _ => Err(bad(
            "the _schema collection accepts only puts of a versioned schema",
        )),
    }
}

/// Check a data change against its collection's stored schema, as every replica does for a
/// received commit: a put must hold every required field (defaults were the writer's to
/// fill) and only fields of the declared types; a patch's assignments, removals and set edits
/// follow the same rules as local writes. A delete is always allowed.
pub fn check_change(schema: &Schema, ch: &Change) -> Result<()> {
    let c = ch.collection.as_str();
    match &ch.op {
        Op::Delete => Ok(()),
        Op::Put(m) => {
            for (name, spec) in &schema.fields {
                if spec.required && !m.contains_key(name) {
                    return Err(Schema::err(c, name, "is required".into()));
                }
            }
            for (name, v) in m.iter() {
                schema.check_field(c, name, v)?;
            }
            Ok(())
        }
        Op::Patch(fields) => {
            for (name, op) in fields {
                match op {
                    FieldOp::Assign(v) => schema.check_assign(c, name, Some(v))?,
                    FieldOp::Unset => schema.check_assign(c, name, None)?,
                    FieldOp::SetEdit { .. } => schema.check_set_edit(c, name)?,
                }
            }
            Ok(())
        }
    }
}
