//! The JSON form of values (docs/design.md §2.2), streaming both ways through serde: parsing
//! builds a [`Value`] in one pass (no `serde_json::Value` tree per node), writing serializes
//! straight from it.
//!
//! JSON maps one to one, except that an object with exactly one key `"$set"` whose value is an
//! array is a set (its elements must be strings; duplicates collapse), and an object with
//! exactly one key `"$bytes"` is bytes: its value is their standard base64 (with padding), or,
//! in output written inside [`with_bytes_sink`], the index of the bytes in the sink (the
//! page↔worker path, docs/design.md §2.2: no base64 there; there a long string is
//! `{"$bytes": -1 - i}`, its UTF-8 in the sink). A lone `"$bytes"` holding anything
//! else is refused (the form is reserved). Numbers must be finite;
//! they are written as integers when integral and below 2^53 in magnitude, else as floats.
//! Nesting is bounded by the parser (serde_json stops at 128 levels); [`Value::validate`]
//! applies the data model's own limit later.

use super::{Map, Name, Set, Value};
use crate::error::{Error, Result};
use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;

/// Strings of at least this many bytes of UTF-8 go to an active sink too (as `{"$bytes": -1 - i}`):
/// below it, JSON text is cheaper than a buffer of their own (docs/design.md §3.3).
const TEXT_SINK_MIN: usize = crate::large::FAR_MIN;
/// The reason given when a `{"$set": [...]}` holds something other than a string.
const SET_ELEMENTS: &str = "set elements must be strings";
/// The reason given for NaN or an infinity.
const FINITE: &str = "numbers must be finite";
/// The reason given for a lone `"$bytes"` key that is not base64 text.
const BYTES_FORM: &str = "a lone \"$bytes\" key must hold the base64 of the bytes";

thread_local! {
    /// Where [`with_bytes_sink`] collects the bytes values serialized meanwhile.
    static SINK: RefCell<Option<Vec<Arc<[u8]>>>> = const { RefCell::new(None) };
}

/// Run `f` with bytes values serialized to JSON as `{"$bytes": i}`: `i` is the index of their
/// bytes in `sink`, where they are appended (shared with the value, not copied); and strings of
/// 16 KiB or more of UTF-8 as `{"$bytes": -1 - i}`, their UTF-8 at index `i` (copied). For a
/// host that carries bytes beside the JSON text (the wasm bindings: the worker transfers them
/// to the page as `Uint8Array`s, and the page decodes the strings' with `TextDecoder`). Indices continue from what `sink` held, so several results can share
/// one sink. Outside `f` (and in other threads), bytes serialize as base64 text.
pub fn with_bytes_sink<R>(sink: &mut Vec<Arc<[u8]>>, f: impl FnOnce() -> R) -> R {
    let prev = SINK.with(|s| s.replace(Some(std::mem::take(sink))));
    let r = f();
    *sink = SINK.with(|s| s.replace(prev)).unwrap_or_default();
    r
}

/// The index `b` takes in the active sink, if there is one.
fn sink_push(b: &Arc<[u8]>) -> Option<usize> {
    SINK.with(|s| {
        let mut s = s.borrow_mut();
        let v = s.as_mut()?;
        v.push(b.clone());
        Some(v.len() - 1)
    })
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Each byte's value as a base64 digit, 0xff for a byte that is not one.
const B64_VALUE: [u8; 256] = {
    let mut t = [0xff; 256];
    let mut i = 0;
    while i < 64 {
        t[B64[i] as usize] = i as u8;
        i += 1;
    }
    t
};

/// Standard base64 with padding.
pub(crate) fn base64(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len().div_ceil(3) * 4);
    for c in b.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(B64[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decode standard base64 with padding (canonical only: unused bits must be zero).
pub(crate) fn unbase64(s: &str) -> Option<Vec<u8>> {
    let s = s.as_bytes();
    if s.len() % 4 != 0 {
        return None;
    }
    let val = |c: u8| match B64_VALUE[c as usize] {
        0xff => None,
        v => Some(u32::from(v)),
    };
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    for (i, q) in s.chunks(4).enumerate() {
        let last = i == s.len() / 4 - 1;
        let pad = if last {
            q.iter().rev().take_while(|&&c| c == b'=').count()
        } else {
            0
        };
        if pad > 2 {
            return None;
        }
        let mut n = 0u32;
        for &c in &q[..4 - pad] {
            n = (n << 6) | val(c)?;
        }
        n <<= 6 * pad as u32;
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        if n & ((1 << (8 * pad)) - 1) != 0 {
            return None;
        }
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out)
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

/// A value from a JSON tree (query operands, schema defaults), with the errors the core gives
/// for a bad value: `InvalidValue` at `$set` for a set element that is not a string.
pub(crate) fn from_tree(j: &serde_json::Value) -> Result<Value> {
    Value::deserialize(j).map_err(|e| {
        let msg = e.to_string();
        for form in ["$set", "$bytes"] {
            if let Some(reason) = msg.strip_prefix(form).and_then(|m| m.strip_prefix(": ")) {
                return Error::invalid_value(form, reason);
            }
        }
        Error::invalid_value("", msg)
    })
}

/// A value as a JSON tree (query and aggregate output).
pub(crate) fn to_tree(v: &Value) -> serde_json::Value {
    serde_json::to_value(v).expect("a value always converts to JSON")
}

struct ValueSeed;

impl<'de> DeserializeSeed<'de> for ValueSeed {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

fn number<E: de::Error>(n: f64) -> Result<Value, E> {
    Value::number(n).map_err(|_| E::custom(FINITE))
}

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Value, E> {
        number(n as f64)
    }
    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Value, E> {
        number(n as f64)
    }
    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Value, E> {
        number(n)
    }
    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(Name::new(s)))
    }
    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(Name::from_string(s)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(v) = seq.next_element_seed(ValueSeed)? {
            out.push(v);
        }
        Ok(Value::List(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        // Fields are gathered, then sorted once by `collect` (keys arrive in document order;
        // inserting one by one into the sorted `Map` would be quadratic for a large object).
        let mut m: Vec<(Name, Value)> = Vec::new();
        let Some(first) = map.next_key_seed(NameSeed)? else {
            return Ok(Value::Map(Map::new()));
        };
        let v = map.next_value_seed(ValueSeed)?;
        if first == "$bytes" {
            let Some(k2) = map.next_key_seed(NameSeed)? else {
                return bytes_of(&v);
            };
            m.push((first, v));
            let v2 = map.next_value_seed(ValueSeed)?;
            m.push((k2, v2));
            return rest_of_map(map, m);
        }
        if first == "$set" {
            if let Value::List(elems) = &v {
                // A lone "$set" key holding an array is a set.
                let Some(k2) = map.next_key_seed(NameSeed)? else {
                    return set_of(elems);
                };
                m.push((first, v));
                let v2 = map.next_value_seed(ValueSeed)?;
                m.push((k2, v2));
                return rest_of_map(map, m);
            }
        }
        m.push((first, v));
        rest_of_map(map, m)
    }
}

/// An object's key as a [`Name`], straight from the parser's text: a short key costs no
/// allocation (a `String` key would cost one, and its free, per field).
struct NameSeed;

impl<'de> DeserializeSeed<'de> for NameSeed {
    type Value = Name;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Name, D::Error> {
        d.deserialize_str(NameVisitor)
    }
}

struct NameVisitor;

impl<'de> Visitor<'de> for NameVisitor {
    type Value = Name;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E>(self, s: &str) -> Result<Name, E> {
        Ok(Name::new(s))
    }
    fn visit_string<E>(self, s: String) -> Result<Name, E> {
        Ok(Name::from_string(s))
    }
}

/// The set written `{"$set": elems}`: every element must be a string.
fn set_of<E: de::Error>(elems: &[Value]) -> Result<Value, E> {
    let mut s = Vec::with_capacity(elems.len());
    for e in elems {
        match e {
            Value::String(x) => s.push(x.as_str()),
            _ => return Err(E::custom(format!("$set: {SET_ELEMENTS}"))),
        }
    }
    // Collected, not inserted one by one: sorted once.
    Ok(Value::Set(s.into_iter().collect::<Set>()))
}

/// The bytes written `{"$bytes": "<base64>"}`.
fn bytes_of<E: de::Error>(v: &Value) -> Result<Value, E> {
    match v {
        Value::String(s) => match unbase64(s) {
            Some(b) => Ok(Value::Bytes(b.into())),
            None => Err(E::custom(format!(
                "$bytes: {BYTES_FORM} (not valid base64)"
            ))),
        },
        _ => Err(E::custom(format!("$bytes: {BYTES_FORM}"))),
    }
}

/// Read the remaining entries of an object after those in `m`.
fn rest_of_map<'de, A: MapAccess<'de>>(
    mut map: A,
    mut m: Vec<(Name, Value)>,
) -> Result<Value, A::Error> {
    while let Some(k) = map.next_key_seed(NameSeed)? {
        let v = map.next_value_seed(ValueSeed)?;
        m.push((k, v));
    }
    Ok(Value::Map(m.into_iter().collect()))
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Null => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Number(n) => {
                if n.fract() == 0.0 && n.abs() < 9.007_199_254_740_992e15 {
                    s.serialize_i64(*n as i64)
                } else {
                    s.serialize_f64(*n)
                }
            }
            Value::String(x) if x.len() >= TEXT_SINK_MIN => {
                // A long string crosses beside the text as its UTF-8 (no escaping here, no
                // JSON parse of it there): `{"$bytes": -1 - i}`.
                match sink_push(&Arc::from(x.as_bytes())) {
                    Some(i) => {
                        let mut o = s.serialize_map(Some(1))?;
                        o.serialize_entry("$bytes", &(-1 - i as i64))?;
                        o.end()
                    }
                    None => s.serialize_str(x),
                }
            }
            Value::String(x) => s.serialize_str(x),
            Value::Bytes(b) => {
                let mut o = s.serialize_map(Some(1))?;
                match sink_push(b) {
                    Some(i) => o.serialize_entry("$bytes", &i)?,
                    None => o.serialize_entry("$bytes", &base64(b))?,
                }
                o.end()
            }
            Value::List(l) => {
                let mut seq = s.serialize_seq(Some(l.len()))?;
                for v in l {
                    seq.serialize_element(v)?;
                }
                seq.end()
            }
            Value::Map(m) => m.serialize(s),
            Value::Far(_) => Err(serde::ser::Error::custom(
                "a large value was not loaded (docs/design.md §6.6)",
            )),
            Value::Set(set) => {
                let mut o = s.serialize_map(Some(1))?;
                o.serialize_entry("$set", set)?;
                o.end()
            }
        }
    }
}

/// A map is a JSON object.
/// An item's attachments (fields behind `ATTACHMENT_PREFIX`, which no user field name
/// can hold) are left out: they are read with `Repo::attachments`, not as fields.
impl Serialize for Map {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let hidden = super::is_attachment_field;
        let n = self.iter().filter(|(k, _)| !hidden(k)).count();
        let mut o = s.serialize_map(Some(n))?;
        for (k, v) in self {
            if !hidden(k) {
                o.serialize_entry(k.as_str(), v)?;
            }
        }
        o.end()
    }
}

/// A set on its own is the array of its elements (inside a value it is `{"$set": [...]}`).
impl Serialize for Set {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter().map(Name::as_str))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> serde_json::Result<Value> {
        serde_json::from_str(text)
    }

    #[test]
    fn json_round_trip_with_sets() {
        let v = parse(r#"{"t":"x","n":1.5,"s":{"$set":["b","a"]},"l":[null,true]}"#).unwrap();
        assert_eq!(v.get_path("s"), Some(&Value::set(["a", "b"])));
        assert_eq!(from_tree(&to_tree(&v)).unwrap(), v);
    }

    #[test]
    fn text_and_tree_parse_alike() {
        for text in [
            r#"{"t":"x","n":1.5,"s":{"$set":["b","a"]},"l":[null,true,-0.0,1e300]}"#,
            r#"{"$set":["a"],"x":1}"#,
            r#"{"x":1,"$set":["a"]}"#,
            r#"{"$set":"notalist"}"#,
            r#"{"a":{"b":{"c":[1,2,{"$set":[]}]}}}"#,
            r#"[]"#,
            r#"-12"#,
        ] {
            let j: serde_json::Value = serde_json::from_str(text).unwrap();
            assert_eq!(parse(text).unwrap(), from_tree(&j).unwrap(), "{text}");
        }
        assert_eq!(
            parse(r#"{"$set":["b","a","b"]}"#).unwrap(),
            Value::set(["a", "b"])
        );
        assert!(matches!(
            parse(r#"{"$set":"x"}"#).unwrap(),
            Value::Map(m) if m.len() == 1
        ));
        assert!(parse(r#"{"$set":[1]}"#).is_err());
        assert!(parse(r#"{"a":1"#).is_err());
        assert!(parse(r#"{"a":1} x"#).is_err());
        assert_eq!(parse("-0.0").unwrap(), Value::Number(0.0));
    }

    #[test]
    fn long_strings_cross_a_sink_as_utf8() {
        let long = format!("\"é€😀\\\n\u{0}{}", "x".repeat(TEXT_SINK_MIN));
        let short = "y".repeat(TEXT_SINK_MIN - 1);
        let v = Value::Map(
            [
                ("a", Value::from(long.as_str())),
                ("l", Value::List(vec![Value::from(long.as_str())])),
                ("s", Value::from(short.as_str())),
            ]
            .into_iter()
            .map(|(k, v)| (Name::from(k), v))
            .collect(),
        );
        let mut sink = Vec::new();
        let text = with_bytes_sink(&mut sink, || serde_json::to_string(&v).unwrap());
        assert_eq!(
            text,
            format!(r#"{{"a":{{"$bytes":-1}},"l":[{{"$bytes":-2}}],"s":"{short}"}}"#)
        );
        assert_eq!(sink.len(), 2);
        assert_eq!(&sink[0][..], long.as_bytes());
        // Outside a sink: JSON text, and it parses back.
        let plain = serde_json::to_string(&v).unwrap();
        assert_eq!(parse(&plain).unwrap(), v);
    }

    #[test]
    fn bytes_as_base64_and_through_a_sink() {
        let v = parse(r#"{"b":{"$bytes":"AAH/"},"e":{"$bytes":""},"x":{"$bytes":"YQ==","y":1}}"#)
            .unwrap();
        assert_eq!(v.get_path("b"), Some(&Value::from(&[0u8, 1, 255][..])));
        assert_eq!(v.get_path("e"), Some(&Value::from(Vec::new())));
        assert!(matches!(v.get_path("x"), Some(Value::Map(m)) if m.len() == 2));
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"b":{"$bytes":"AAH/"},"e":{"$bytes":""},"x":{"$bytes":"YQ==","y":1}}"#
        );
        let mut sink = vec![Arc::from(&b"first"[..])];
        let text = with_bytes_sink(&mut sink, || serde_json::to_string(&v).unwrap());
        assert_eq!(
            text,
            r#"{"b":{"$bytes":1},"e":{"$bytes":2},"x":{"$bytes":"YQ==","y":1}}"#
        );
        assert_eq!(sink.len(), 3);
        assert_eq!(&sink[1][..], &[0, 1, 255]);
        assert_eq!(
            serde_json::to_string(&v).unwrap().matches("$bytes").count(),
            3
        );
        for bad in [
            r#"{"$bytes":1}"#,
            r#"{"$bytes":"AAH"}"#,
            r#"{"$bytes":"YR=="}"#,
            r#"{"$bytes":"Y==="}"#,
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        match from_tree(&serde_json::json!({"$bytes": [1]})) {
            Err(Error::InvalidValue { path, .. }) => assert_eq!(path, "$bytes"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn base64_round_trips() {
        for n in 0..70usize {
            let b: Vec<u8> = (0..n).map(|i| (i * 37 + n) as u8).collect();
            let t = base64(&b);
            assert_eq!(unbase64(&t).as_deref(), Some(&b[..]), "{t}");
        }
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(unbase64("Zm8"), None);
        assert_eq!(unbase64("Z=8="), None);
    }

    #[test]
    fn tree_errors_name_the_set() {
        let j = serde_json::json!({"$set": [1]});
        match from_tree(&j) {
            Err(Error::InvalidValue { path, reason }) => {
                assert_eq!(path, "$set");
                assert_eq!(reason, SET_ELEMENTS);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn writes_integers_and_sets() {
        let text =
            r#"{"t":"x\"\n","n":1.5,"i":3,"s":{"$set":["a","b"]},"l":[null,true,-2],"m":{}}"#;
        let v = parse(text).unwrap();
        let out = serde_json::to_string(&v).unwrap();
        assert_eq!(
            out,
            r#"{"i":3,"l":[null,true,-2],"m":{},"n":1.5,"s":{"$set":["a","b"]},"t":"x\"\n"}"#
        );
        assert_eq!(parse(&out).unwrap(), v);
        assert_eq!(
            serde_json::to_string(&Value::Number(1e300)).unwrap(),
            "1e+300"
        );
        assert_eq!(
            serde_json::to_string(&Value::Number(9007199254740992.0)).unwrap(),
            "9007199254740992.0"
        );
    }
}
