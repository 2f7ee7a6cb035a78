//! Values (docs/design.md §2.2): JSON-like values plus a string set, with a total order used
//! by sorting and indexes. Their binary encoding (§3.2) is in `encode.rs`, their JSON form
//! (one streaming codec, serde) in `json.rs`; the containers are [`Map`], [`Set`] and [`Name`]
//! (`map.rs`, `set.rs`, `name.rs`).

mod encode;
mod json;
mod map;
mod name;
mod set;

pub(crate) use encode::{
    check_str_set, check_value, decode_str_set, shallow_value, skip_value, varint_bytes, T_FAR,
};
#[cfg(test)]
pub(crate) use encode::{
    T_BYTES, T_FALSE, T_LIST, T_MAP, T_NULL, T_NUMBER, T_SET, T_STRING, T_TRUE,
};
pub use json::with_bytes_sink;
pub(crate) use json::{from_tree, to_tree};
pub use map::Map;
pub use name::Name;
pub use set::Set;

use crate::error::{Error, Result};
use std::cmp::Ordering;
use std::sync::Arc;

/// Deepest nesting of lists and maps accepted.
pub const MAX_DEPTH: usize = 32;
/// Largest encoded item (all fields) accepted in one write.
pub const MAX_ITEM_BYTES: usize = 16 << 20;
/// Longest field name in bytes.
pub const MAX_FIELD_NAME: usize = 1024;

/// A field value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    /// Always finite; `-0.0` is normalized to `0.0`.
    Number(f64),
    /// Held inline up to [`Name::INLINE`] bytes (22, 14 on wasm32): short strings cost no allocation.
    String(Name),
    /// Binary data, compared byte-wise; a register like a string (merged whole). Shared: cloning
    /// the value (a live query's row, a merge) does not copy the bytes.
    Bytes(Arc<[u8]>),
    List(Vec<Value>),
    Map(Map),
    /// A set of strings that merges element-wise (add-wins).
    Set(Set),
    /// A large string or bytes value held in the repository's log, not in memory
    /// (docs/design.md §6.6, `large.rs`): only a loaded item's top-level field holds one, and
    /// the repository loads it before anything reads it (a read, a query that filters or
    /// sorts on it, an index, a live query, a snapshot).
    Far(Arc<Far>),
}

/// Where a large value's bytes are in the log (docs/design.md §6.6): `len` bytes of content
/// (the UTF-8 of a string, or the bytes) from offset `at`, whose CRC-32 is `crc`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Far {
    /// A bytes value (else a string).
    pub bytes: bool,
    pub at: u64,
    pub len: u32,
    pub crc: u32,
}

impl Value {
    /// A number value; fails on NaN or infinity.
    pub fn number(n: f64) -> Result<Value> {
        if !n.is_finite() {
            return Err(Error::invalid_value("", "numbers must be finite"));
        }
        Ok(Value::Number(if n == 0.0 { 0.0 } else { n }))
    }

    pub fn set<I: IntoIterator<Item = S>, S: Into<Name>>(items: I) -> Value {
        Value::Set(items.into_iter().map(Into::into).collect())
    }

    /// The name of this value's type as used in schemas and errors.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(_) => "number",
            Value::String(_) => "string",
            Value::Bytes(_) => "bytes",
            Value::List(_) => "list",
            Value::Map(_) => "map",
            Value::Set(_) => "set",
            Value::Far(f) if f.bytes => "bytes",
            Value::Far(_) => "string",
        }
    }

    fn rank(&self) -> u8 {
        match self {
            Value::Null => 0,
            Value::Bool(_) => 1,
            Value::Number(_) => 2,
            Value::String(_) => 3,
            Value::Bytes(_) => 4,
            Value::List(_) => 5,
            Value::Map(_) => 6,
            Value::Set(_) => 7,
            Value::Far(f) => 3 + u8::from(f.bytes),
        }
    }

    /// The total order used by sorts and indexes: null < booleans < numbers < strings
    /// (bytewise UTF-8) < bytes (byte-wise) < lists < maps < sets; containers compare element
    /// by element.
    pub fn total_cmp(&self, other: &Value) -> Ordering {
        match (self, other) {
            (Value::Bool(a), Value::Bool(b)) => a.cmp(b),
            (Value::Number(a), Value::Number(b)) => a.total_cmp(b),
            (Value::String(a), Value::String(b)) => a.as_bytes().cmp(b.as_bytes()),
            (Value::Bytes(a), Value::Bytes(b)) => a[..].cmp(&b[..]),
            (Value::List(a), Value::List(b)) => {
                for (x, y) in a.iter().zip(b) {
                    let o = x.total_cmp(y);
                    if o != Ordering::Equal {
                        return o;
                    }
                }
                a.len().cmp(&b.len())
            }
            (Value::Map(a), Value::Map(b)) => {
                for ((ka, va), (kb, vb)) in a.iter().zip(b) {
                    let o = ka.cmp(kb).then_with(|| va.total_cmp(vb));
                    if o != Ordering::Equal {
                        return o;
                    }
                }
                a.len().cmp(&b.len())
            }
            (Value::Set(a), Value::Set(b)) => a.iter().cmp(b.iter()),
            // Never reached by a query: the repository loads far values first (`large.rs`).
            (Value::Far(a), Value::Far(b)) => (a.at, a.len).cmp(&(b.at, b.len)),
            (Value::Far(_), _) | (_, Value::Far(_)) if self.rank() == other.rank() => {
                matches!(self, Value::Far(_)).cmp(&matches!(other, Value::Far(_)))
            }
            _ => self.rank().cmp(&other.rank()),
        }
    }

    /// Check structural rules: finite numbers, depth, field names. `path` names the location.
    pub fn validate(&self, path: &str) -> Result<()> {
        self.validate_at(path, 0)
    }

    fn validate_at(&self, path: &str, depth: usize) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(Error::invalid_value(
                path,
                format!("nesting deeper than {MAX_DEPTH}"),
            ));
        }
        match self {
            Value::Number(n) if !n.is_finite() => {
                Err(Error::invalid_value(path, "numbers must be finite"))
            }
            Value::List(l) => {
                for (i, v) in l.iter().enumerate() {
                    v.validate_at(&format!("{path}[{i}]"), depth + 1)?;
                }
                Ok(())
            }
            Value::Map(m) => {
                for (k, v) in m {
                    let at = if path.is_empty() {
                        k.to_string()
                    } else {
                        format!("{path}.{k}")
                    };
                    validate_field_name(k, &at)?;
                    v.validate_at(&at, depth + 1)?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// The map inside a `Value::Map` (panics otherwise; for tests and literals).
    pub fn as_map(self) -> Map {
        match self {
            Value::Map(m) => m,
            other => panic!("not a map: {other:?}"),
        }
    }

    /// Look up a dotted path (`a.b.c`) inside maps.
    pub fn get_path(&self, path: &str) -> Option<&Value> {
        let mut cur = self;
        for part in path.split('.') {
            match cur {
                Value::Map(m) => cur = m.get(part)?,
                _ => return None,
            }
        }
        Some(cur)
    }
}

/// The size limit of one write ([`MAX_ITEM_BYTES`]) of item `coll/id`, for local writes,
/// received ones and those a sync server checks without building them alike.
pub(crate) fn check_item_size(coll: &str, id: &str, size: usize) -> Result<()> {
    if size > MAX_ITEM_BYTES {
        return Err(Error::TooLarge {
            what: format!("item {coll}/{id}"),
            size: size as u64,
            limit: MAX_ITEM_BYTES as u64,
        });
    }
    Ok(())
}

/// Field names: non-empty, at most [`MAX_FIELD_NAME`] bytes, no control characters, and no
/// `.` (dots address nested fields in queries).
/// The first character of an attachment's field name (U+0001; `attach/`, docs/design.md §6.7).
/// No user field name can begin with it (control characters are refused below), so
/// attachments never collide with fields; readers leave such fields out of an item's JSON.
pub const ATTACHMENT_PREFIX: char = '\u{1}';

/// Whether a field name is an attachment's.
pub fn is_attachment_field(field: &str) -> bool {
    field.starts_with(ATTACHMENT_PREFIX)
}

pub fn validate_field_name(name: &str, path: &str) -> Result<()> {
    let bad = |reason: &str| {
        Err(Error::invalid_value(
            path,
            format!("field name {name:?} {reason}"),
        ))
    };
    if name.is_empty() {
        return bad("is empty");
    }
    if name.len() > MAX_FIELD_NAME {
        return bad("is too long");
    }
    if name.contains('.') {
        return bad("contains '.'");
    }
    if name.chars().any(char::is_control) {
        return bad("contains a control character");
    }
    Ok(())
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::String(Name::new(s))
    }
}
impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::String(Name::from_string(s))
    }
}
impl From<Vec<u8>> for Value {
    fn from(b: Vec<u8>) -> Self {
        Value::Bytes(b.into())
    }
}
impl From<&[u8]> for Value {
    fn from(b: &[u8]) -> Self {
        Value::Bytes(b.into())
    }
}
impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}
impl From<f64> for Value {
    /// Panics on non-finite input in debug builds; use [`Value::number`] for untrusted input.
    fn from(n: f64) -> Self {
        debug_assert!(n.is_finite());
        Value::Number(if n == 0.0 { 0.0 } else { n })
    }
}
impl From<i64> for Value {
    fn from(n: i64) -> Self {
        Value::Number(n as f64)
    }
}
impl From<Map> for Value {
    fn from(m: Map) -> Self {
        Value::Map(m)
    }
}
impl From<Set> for Value {
    fn from(s: Set) -> Self {
        Value::Set(s)
    }
}

/// Build a map value: `map! { "title" => "x", "count" => 3 }`.
#[macro_export]
macro_rules! map {
    () => { $crate::Value::Map(Default::default()) };
    ($($k:expr => $v:expr),+ $(,)?) => {{
        let mut m = $crate::Map::new();
        $( m.insert($crate::Name::from($k), $crate::Value::from($v)); )+
        $crate::Value::Map(m)
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_is_total_across_types() {
        let vals = [
            Value::Null,
            Value::Bool(false),
            Value::Bool(true),
            Value::Number(-1.0),
            Value::Number(2.0),
            Value::from("a"),
            Value::from("b"),
            Value::from(&b""[..]),
            Value::from(&b"\0"[..]),
            Value::from(&b"\xff"[..]),
            Value::from(&b"\xff\0"[..]),
            Value::List(vec![]),
            map! {},
            Value::set(["x"]),
        ];
        for (i, a) in vals.iter().enumerate() {
            for (j, b) in vals.iter().enumerate() {
                assert_eq!(a.total_cmp(b), i.cmp(&j), "{a:?} vs {b:?}");
            }
        }
    }
}
