//! JSON-like values plus a string set, their canonical binary encoding, a total order used by
//! sorting and indexes, and JSON conversion.

use crate::codec::{Reader, Writer};
pub use crate::compact::{Map, Name, Set};
use crate::error::{Error, Result};
use std::cmp::Ordering;

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
    String(String),
    List(Vec<Value>),
    Map(Map),
    /// A set of strings that merges element-wise (add-wins).
    Set(Set),
}

const T_NULL: u8 = 0;
const T_FALSE: u8 = 1;
const T_TRUE: u8 = 2;
const T_NUMBER: u8 = 3;
const T_STRING: u8 = 4;
const T_LIST: u8 = 5;
const T_MAP: u8 = 6;
const T_SET: u8 = 7;

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
            Value::List(_) => "list",
            Value::Map(_) => "map",
            Value::Set(_) => "set",
        }
    }

    fn rank(&self) -> u8 {
        match self {
            Value::Null => 0,
            Value::Bool(_) => 1,
            Value::Number(_) => 2,
            Value::String(_) => 3,
            Value::List(_) => 4,
            Value::Map(_) => 5,
            Value::Set(_) => 6,
        }
    }

    /// The total order used by sorts and indexes: null < booleans < numbers < strings
    /// (bytewise UTF-8) < lists < maps < sets; containers compare element by element.
    pub fn total_cmp(&self, other: &Value) -> Ordering {
        match (self, other) {
            (Value::Bool(a), Value::Bool(b)) => a.cmp(b),
            (Value::Number(a), Value::Number(b)) => a.total_cmp(b),
            (Value::String(a), Value::String(b)) => a.as_bytes().cmp(b.as_bytes()),
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
                    validate_field_name(k, path)?;
                    v.validate_at(&format!("{path}.{k}"), depth + 1)?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Append the canonical encoding.
    pub fn encode(&self, w: &mut Writer) {
        match self {
            Value::Null => w.u8(T_NULL),
            Value::Bool(false) => w.u8(T_FALSE),
            Value::Bool(true) => w.u8(T_TRUE),
            Value::Number(n) => {
                w.u8(T_NUMBER);
                w.u64(n.to_bits());
            }
            Value::String(s) => {
                w.u8(T_STRING);
                w.lp(s.as_bytes());
            }
            Value::List(l) => {
                w.u8(T_LIST);
                w.varint(l.len() as u64);
                for v in l {
                    v.encode(w);
                }
            }
            Value::Map(m) => {
                w.u8(T_MAP);
                w.varint(m.len() as u64);
                for (k, v) in m {
                    w.lp(k.as_bytes());
                    v.encode(w);
                }
            }
            Value::Set(s) => {
                w.u8(T_SET);
                w.varint(s.len() as u64);
                for e in s {
                    w.lp(e.as_bytes());
                }
            }
        }
    }

    /// Length of the canonical encoding, without encoding.
    pub fn encoded_len(&self) -> usize {
        fn lp(n: usize) -> usize {
            varint_len(n as u64) + n
        }
        match self {
            Value::Null | Value::Bool(_) => 1,
            Value::Number(_) => 9,
            Value::String(s) => 1 + lp(s.len()),
            Value::List(l) => {
                1 + varint_len(l.len() as u64) + l.iter().map(Value::encoded_len).sum::<usize>()
            }
            Value::Map(m) => Value::map_encoded_len(m),
            Value::Set(s) => {
                1 + varint_len(s.len() as u64) + s.iter().map(|e| lp(e.len())).sum::<usize>()
            }
        }
    }

    /// Length of the canonical encoding of `Value::Map(m)`.
    pub fn map_encoded_len(m: &Map) -> usize {
        1 + varint_len(m.len() as u64)
            + m.iter()
                .map(|(k, v)| varint_len(k.len() as u64) + k.len() + v.encoded_len())
                .sum::<usize>()
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        self.encode(&mut w);
        w.into_inner()
    }

    /// Decode one value, rejecting non-canonical forms (unsorted or duplicate map keys and set
    /// elements, non-finite or negative-zero numbers, excessive depth).
    pub fn decode(r: &mut Reader<'_>) -> Result<Value> {
        Self::decode_at(r, 0)
    }

    fn decode_at(r: &mut Reader<'_>, depth: usize) -> Result<Value> {
        if depth > MAX_DEPTH {
            return Err(r.err("value nested too deeply"));
        }
        Ok(match r.u8()? {
            T_NULL => Value::Null,
            T_FALSE => Value::Bool(false),
            T_TRUE => Value::Bool(true),
            T_NUMBER => {
                let n = f64::from_bits(r.u64()?);
                if !n.is_finite() || (n == 0.0 && n.is_sign_negative()) {
                    return Err(r.err("non-canonical number"));
                }
                Value::Number(n)
            }
            T_STRING => Value::String(r.str()?.to_owned()),
            T_LIST => {
                let n = r.count(1, usize::MAX)?;
                let mut l = Vec::with_capacity(n);
                for _ in 0..n {
                    l.push(Self::decode_at(r, depth + 1)?);
                }
                Value::List(l)
            }
            T_MAP => {
                let n = r.count(2, usize::MAX)?;
                let mut m = Map::with_capacity(n);
                let mut last: Option<&str> = None;
                for _ in 0..n {
                    let k = r.str()?;
                    if last.is_some_and(|l| l >= k) {
                        return Err(r.err("map keys not strictly ascending"));
                    }
                    last = Some(k);
                    let v = Self::decode_at(r, depth + 1)?;
                    m.push_ordered(Name::new(k), v);
                }
                Value::Map(m)
            }
            T_SET => Value::Set(decode_str_set(r)?),
            t => return Err(r.err(format!("unknown value tag {t}"))),
        })
    }

    /// Convert from JSON. Sets are written `{"$set": ["a", "b"]}`.
    pub fn from_json(j: &serde_json::Value) -> Result<Value> {
        Ok(match j {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => Value::number(
                n.as_f64()
                    .ok_or_else(|| Error::invalid_value("", "number out of range"))?,
            )?,
            serde_json::Value::String(s) => Value::String(s.clone()),
            serde_json::Value::Array(a) => {
                Value::List(a.iter().map(Value::from_json).collect::<Result<_>>()?)
            }
            serde_json::Value::Object(o) => {
                if o.len() == 1 {
                    if let Some(serde_json::Value::Array(a)) = o.get("$set") {
                        // Collected, not inserted one by one: sorted once.
                        let s = a
                            .iter()
                            .map(|e| match e {
                                serde_json::Value::String(x) => Ok(x.as_str()),
                                _ => Err(Error::invalid_value(
                                    "$set",
                                    "set elements must be strings",
                                )),
                            })
                            .collect::<Result<Set>>()?;
                        return Ok(Value::Set(s));
                    }
                }
                // Collected, not inserted one by one: sorted once whatever the key order.
                Value::Map(
                    o.iter()
                        .map(|(k, v)| Ok((Name::new(k), Value::from_json(v)?)))
                        .collect::<Result<Map>>()?,
                )
            }
        })
    }

    /// Convert to JSON (sets as `{"$set": [...]}`).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Number(n) => {
                if n.fract() == 0.0 && n.abs() < 9.007_199_254_740_992e15 {
                    serde_json::Value::from(*n as i64)
                } else {
                    serde_json::Number::from_f64(*n)
                        .map(serde_json::Value::Number)
                        .unwrap_or(serde_json::Value::Null)
                }
            }
            Value::String(s) => serde_json::Value::String(s.clone()),
            Value::List(l) => serde_json::Value::Array(l.iter().map(Value::to_json).collect()),
            Value::Map(m) => serde_json::Value::Object(
                m.iter()
                    .map(|(k, v)| (k.as_str().to_owned(), v.to_json()))
                    .collect(),
            ),
            Value::Set(s) => {
                let mut o = serde_json::Map::new();
                o.insert(
                    "$set".into(),
                    serde_json::Value::Array(
                        s.iter()
                            .map(|e| serde_json::Value::String(e.as_str().to_owned()))
                            .collect(),
                    ),
                );
                serde_json::Value::Object(o)
            }
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

fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Decode a strictly ascending set of strings.
pub(crate) fn decode_str_set(r: &mut Reader<'_>) -> Result<Set> {
    let n = r.count(1, usize::MAX)?;
    let mut s = Set::with_capacity(n);
    let mut last: Option<&str> = None;
    for _ in 0..n {
        let e = r.str()?;
        if last.is_some_and(|l| l >= e) {
            return Err(r.err("set elements not strictly ascending"));
        }
        last = Some(e);
        s.push_ordered(Name::new(e));
    }
    Ok(s)
}

/// Field names: non-empty, at most [`MAX_FIELD_NAME`] bytes, no control characters, and no
/// `.` (dots address nested fields in queries).
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
        Value::String(s.to_owned())
    }
}
impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::String(s)
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
    () => { $crate::value::Value::Map(Default::default()) };
    ($($k:expr => $v:expr),+ $(,)?) => {{
        let mut m = $crate::value::Map::new();
        $( m.insert($crate::value::Name::from($k), $crate::value::Value::from($v)); )+
        $crate::value::Value::Map(m)
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_round_trips_and_rejects_noncanonical() {
        let v = map! { "a" => 1i64, "b" => "x", "s" => Value::set(["p", "q"]) };
        let b = v.to_bytes();
        let mut r = Reader::new(&b, "value");
        assert_eq!(Value::decode(&mut r).unwrap(), v);
        r.finish().unwrap();
        // Unsorted set.
        let mut w = Writer::new();
        w.u8(T_SET);
        w.varint(2);
        w.lp(b"q");
        w.lp(b"p");
        assert!(Value::decode(&mut Reader::new(&w.buf, "value")).is_err());
        // Negative zero.
        let mut w = Writer::new();
        w.u8(T_NUMBER);
        w.u64((-0.0f64).to_bits());
        assert!(Value::decode(&mut Reader::new(&w.buf, "value")).is_err());
    }

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

    #[test]
    fn encoded_len_matches() {
        let v = map! { "a" => 1i64, "b" => "x".repeat(200), "s" => Value::set(["p", "q"]),
        "l" => Value::List(vec![Value::Null, Value::from(true)]) };
        assert_eq!(v.encoded_len(), v.to_bytes().len());
    }

    #[test]
    fn json_round_trip_with_sets() {
        let j: serde_json::Value =
            serde_json::from_str(r#"{"t":"x","n":1.5,"s":{"$set":["b","a"]},"l":[null,true]}"#)
                .unwrap();
        let v = Value::from_json(&j).unwrap();
        assert_eq!(v.get_path("s"), Some(&Value::set(["a", "b"])));
        assert_eq!(Value::from_json(&v.to_json()).unwrap(), v);
    }
}
