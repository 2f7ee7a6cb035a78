//! Optional per-collection schemas: field types, required fields, defaults, declared indexes.
//! A write that breaks the schema is rejected with an error naming the field and the rule.
//! `stored.rs`: schemas stored in the repository (the reserved collection `_schema`,
//! versioned, docs/design.md §2.4) and the check of a received change against one.

mod stored;

pub use stored::{
    check_change, parse_schema_change, schema_value, SchemaWrite, StoredSchema, SCHEMA_COLLECTION,
};

use crate::error::{Error, Result};
use crate::value::{Map, Name, Value};
use std::collections::BTreeMap;

/// The type a field must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldType {
    Any,
    Null,
    Boolean,
    Number,
    /// A number with no fractional part.
    Integer,
    String,
    /// Binary data (`Value::Bytes`).
    Bytes,
    List,
    Map,
    Set,
}

impl FieldType {
    pub fn parse(s: &str) -> Option<FieldType> {
        Some(match s {
            "any" => FieldType::Any,
            "null" => FieldType::Null,
            "boolean" => FieldType::Boolean,
            "number" => FieldType::Number,
            "integer" => FieldType::Integer,
            "string" => FieldType::String,
            "bytes" => FieldType::Bytes,
            "list" => FieldType::List,
            "map" => FieldType::Map,
            "set" => FieldType::Set,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            FieldType::Any => "any",
            FieldType::Null => "null",
            FieldType::Boolean => "boolean",
            FieldType::Number => "number",
            FieldType::Integer => "integer",
            FieldType::String => "string",
            FieldType::Bytes => "bytes",
            FieldType::List => "list",
            FieldType::Map => "map",
            FieldType::Set => "set",
        }
    }

    pub fn accepts(self, v: &Value) -> bool {
        matches!(
            (self, v),
            (FieldType::Any, _)
                | (FieldType::Null, Value::Null)
                | (FieldType::Boolean, Value::Bool(_))
                | (FieldType::Number, Value::Number(_))
                | (FieldType::String, Value::String(_))
                | (FieldType::Bytes, Value::Bytes(_))
                | (FieldType::List, Value::List(_))
                | (FieldType::Map, Value::Map(_))
                | (FieldType::Set, Value::Set(_))
        ) || matches!((self, v), (FieldType::Integer, Value::Number(n)) if n.fract() == 0.0)
    }
}

/// One field's rules.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldSpec {
    pub ty: FieldType,
    pub required: bool,
    pub default: Option<Value>,
    /// Whether `null` is accepted in addition to `ty`.
    pub nullable: bool,
}

/// A collection's schema.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Schema {
    pub fields: BTreeMap<String, FieldSpec>,
    /// Whether fields not listed are accepted.
    pub allow_other_fields: bool,
    /// Declared secondary indexes: each a field path (`count`, `address.city`).
    pub indexes: Vec<String>,
    /// Declared full-text indexes (`{"field": path, "kind": "text"}`): field paths.
    pub text_indexes: Vec<String>,
}

impl Schema {
    /// Parse the JSON form:
    /// `{"fields": {"title": {"type": "string", "required": true}, "count": {"type": "number",
    /// "default": 0}}, "indexes": ["count"], "allowOtherFields": true}`.
    pub fn from_json(collection: &str, j: &serde_json::Value) -> Result<Schema> {
        let bad = |reason: String| invalid(collection, reason);
        let obj = j
            .as_object()
            .ok_or_else(|| bad("schema must be an object".into()))?;
        for k in obj.keys() {
            if !["fields", "indexes", "allowOtherFields"].contains(&k.as_str()) {
                return Err(bad(format!("unknown schema property {k:?}")));
            }
        }
        let mut schema = Schema {
            allow_other_fields: true,
            ..Schema::default()
        };
        if let Some(a) = obj.get("allowOtherFields") {
            schema.allow_other_fields = a
                .as_bool()
                .ok_or_else(|| bad("allowOtherFields must be a boolean".into()))?;
        }
        if let Some(fields) = obj.get("fields") {
            let fields = fields
                .as_object()
                .ok_or_else(|| bad("fields must be an object".into()))?;
            for (name, spec) in fields {
                let spec = field_spec(collection, name, spec)?;
                schema.fields.insert(name.clone(), spec);
            }
        }
        if let Some(ix) = obj.get("indexes") {
            (schema.indexes, schema.text_indexes) = index_paths(collection, ix)?;
        }
        Ok(schema)
    }

    fn err(collection: &str, field: &str, rule: String) -> Error {
        Error::Schema {
            collection: collection.to_string(),
            field: field.to_string(),
            rule,
        }
    }

    pub(crate) fn check_field(&self, collection: &str, name: &str, v: &Value) -> Result<()> {
        match self.fields.get(name) {
            Some(spec) => {
                if spec.ty.accepts(v) || (spec.nullable && *v == Value::Null) {
                    Ok(())
                } else {
                    Err(Self::err(
                        collection,
                        name,
                        format!("must be a {}, got a {}", spec.ty.name(), v.type_name()),
                    ))
                }
            }
            None if self.allow_other_fields => Ok(()),
            None => Err(Self::err(
                collection,
                name,
                "is not declared and the schema allows no other fields".into(),
            )),
        }
    }

    /// Fill defaults and check a whole item (for puts).
    pub fn check_item(&self, collection: &str, item: &mut Map) -> Result<()> {
        for (name, spec) in &self.fields {
            if !item.contains_key(name) {
                if let Some(d) = &spec.default {
                    item.insert(Name::new(name), d.clone());
                } else if spec.required {
                    return Err(Self::err(collection, name, "is required".into()));
                }
            }
        }
        for (name, v) in item.iter() {
            self.check_field(collection, name, v)?;
        }
        Ok(())
    }

    /// Check one field assignment (for updates). `None` = removing the field.
    pub fn check_assign(&self, collection: &str, name: &str, v: Option<&Value>) -> Result<()> {
        if crate::attach::is_attachment_field(name) {
            // An attachment (`attach/`): not a field a schema describes.
            return Ok(());
        }
        match v {
            Some(v) => self.check_field(collection, name, v),
            None => match self.fields.get(name) {
                Some(spec) if spec.required => Err(Self::err(
                    collection,
                    name,
                    "is required and cannot be removed".into(),
                )),
                _ => Ok(()),
            },
        }
    }

    /// Check that a field may receive set edits.
    pub fn check_set_edit(&self, collection: &str, name: &str) -> Result<()> {
        match self.fields.get(name) {
            Some(spec) if !matches!(spec.ty, FieldType::Set | FieldType::Any) => Err(Self::err(
                collection,
                name,
                format!("is a {}, not a set", spec.ty.name()),
            )),
            None if !self.allow_other_fields => Err(Self::err(
                collection,
                name,
                "is not declared and the schema allows no other fields".into(),
            )),
            _ => Ok(()),
        }
    }
}

fn invalid(collection: &str, reason: String) -> Error {
    Error::InvalidSchema {
        collection: collection.to_string(),
        reason,
    }
}

/// One entry of `fields`: `{"type", "required", "default", "nullable"}`.
fn field_spec(collection: &str, name: &str, spec: &serde_json::Value) -> Result<FieldSpec> {
    let bad = |reason: String| invalid(collection, reason);
    crate::value::validate_field_name(name, "").map_err(|e| bad(e.to_string()))?;
    let spec = spec
        .as_object()
        .ok_or_else(|| bad(format!("field {name:?} must be an object")))?;
    for k in spec.keys() {
        if !["type", "required", "default", "nullable"].contains(&k.as_str()) {
            return Err(bad(format!("field {name:?}: unknown property {k:?}")));
        }
    }
    let ty = match spec.get("type") {
        None => FieldType::Any,
        Some(t) => t
            .as_str()
            .and_then(FieldType::parse)
            .ok_or_else(|| bad(format!("field {name:?}: unknown type {t}")))?,
    };
    let flag = |k: &str| -> Result<bool> {
        match spec.get(k) {
            None => Ok(false),
            Some(v) => v
                .as_bool()
                .ok_or_else(|| bad(format!("field {name:?}: {k} must be a boolean"))),
        }
    };
    let required = flag("required")?;
    let nullable = flag("nullable")?;
    let default = match spec.get("default") {
        None => None,
        Some(d) => {
            let v = crate::value::from_tree(d).map_err(|e| bad(e.to_string()))?;
            if !(ty.accepts(&v) || nullable && v == Value::Null) {
                return Err(bad(format!(
                    "field {name:?}: default is a {}, not a {}",
                    v.type_name(),
                    ty.name()
                )));
            }
            Some(v)
        }
    };
    Ok(FieldSpec {
        ty,
        required,
        default,
        nullable,
    })
}

/// `indexes`: field paths (dot-separated, non-empty segments), duplicates dropped. Set fields
/// are indexed per element (for `contains`). An entry may also be `{"field": path, "kind":
/// "sorted" | "text"}`: a `text` index serves `match` (full-text search). Returns the sorted and
/// the text paths.
fn index_paths(collection: &str, ix: &serde_json::Value) -> Result<(Vec<String>, Vec<String>)> {
    let bad = |reason: String| invalid(collection, reason);
    let ix = ix
        .as_array()
        .ok_or_else(|| bad("indexes must be an array of field paths".into()))?;
    let mut out: Vec<String> = Vec::new();
    let mut text: Vec<String> = Vec::new();
    for p in ix {
        let (p, is_text) = match p {
            serde_json::Value::String(p) => (p.as_str(), false),
            serde_json::Value::Object(o) => {
                if let Some(k) = o.keys().find(|k| !["field", "kind"].contains(&k.as_str())) {
                    return Err(bad(format!(
                        "unknown index property {k:?} (expected field, kind)"
                    )));
                }
                let field = o
                    .get("field")
                    .and_then(|f| f.as_str())
                    .ok_or_else(|| bad("an index object needs a \"field\" path string".into()))?;
                let is_text = match o.get("kind") {
                    None => false,
                    Some(k) if k == "sorted" => false,
                    Some(k) if k == "text" => true,
                    Some(k) => {
                        return Err(bad(format!(
                            "unknown index kind {k} for {field:?} (expected \"sorted\" or \"text\")"
                        )))
                    }
                };
                (field, is_text)
            }
            _ => {
                return Err(bad(
                    "indexes must be an array of field paths or {field, kind} objects".into(),
                ))
            }
        };
        if p.is_empty() || p.split('.').any(str::is_empty) {
            return Err(bad(format!("bad index path {p:?}")));
        }
        let list = if is_text { &mut text } else { &mut out };
        if !list.iter().any(|x| x == p) {
            list.push(p.to_string());
        }
    }
    Ok((out, text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::map;

    #[test]
    fn schema_checks_name_the_field() {
        let j = serde_json::json!({
            "fields": {"title": {"type": "string", "required": true},
                       "count": {"type": "integer", "default": 0},
                       "tags": {"type": "set"}},
            "indexes": ["count"], "allowOtherFields": false
        });
        let s = Schema::from_json("items", &j).unwrap();
        let mut ok = map! {"title" => "x"}.as_map();
        s.check_item("items", &mut ok).unwrap();
        assert_eq!(ok.get("count"), Some(&Value::from(0i64)));
        let mut bad = map! {"title" => 3i64}.as_map();
        match s.check_item("items", &mut bad) {
            Err(Error::Schema { field, rule, .. }) => {
                assert_eq!(field, "title");
                assert!(rule.contains("string"), "{rule}");
            }
            other => panic!("{other:?}"),
        }
        let mut missing = map! {"count" => 1i64}.as_map();
        assert!(
            matches!(s.check_item("items", &mut missing), Err(Error::Schema { field, .. }) if field == "title")
        );
        let mut extra = map! {"title" => "x", "zzz" => 1i64}.as_map();
        assert!(s.check_item("items", &mut extra).is_err());
        assert!(s
            .check_assign("items", "count", Some(&Value::from(1.5)))
            .is_err());
        assert!(s.check_assign("items", "title", None).is_err());
        assert!(s.check_set_edit("items", "count").is_err());
        assert!(
            Schema::from_json("x", &serde_json::json!({"fields": {"a": {"type": "nope"}}}))
                .is_err()
        );
    }

    #[test]
    fn index_kinds() {
        let s = Schema::from_json(
            "notes",
            &serde_json::json!({"indexes": ["n", {"field": "title", "kind": "text"},
                {"field": "n", "kind": "sorted"}, {"field": "body"}, {"field": "title", "kind": "text"}]}),
        )
        .unwrap();
        assert_eq!(s.indexes, ["n", "body"]);
        assert_eq!(s.text_indexes, ["title"]);
        for (j, want) in [
            (
                serde_json::json!({"field": "t", "kind": "fuzzy"}),
                "unknown index kind \"fuzzy\"",
            ),
            (serde_json::json!({"kind": "text"}), "needs a \"field\""),
            (
                serde_json::json!({"field": "t", "size": 3}),
                "unknown index property \"size\"",
            ),
            (
                serde_json::json!({"field": "a..b", "kind": "text"}),
                "bad index path",
            ),
            (serde_json::json!(3), "field paths or {field, kind} objects"),
        ] {
            let e = Schema::from_json("notes", &serde_json::json!({"indexes": [j]})).unwrap_err();
            assert!(matches!(e, Error::InvalidSchema { .. }), "{e:?}");
            assert!(e.to_string().contains(want), "{e}");
        }
    }
}
