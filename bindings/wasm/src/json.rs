//! JSON text <-> core values without an intermediate `serde_json::Value` tree.
//!
//! Values cross the worker boundary as JSON strings (the page encodes them; see
//! `www/codec.js`). Sets are written `{"$set": ["a", "b"]}`, exactly as in
//! `ibexdb::Value::from_json` / `to_json`; parsing here must accept the same texts with the same
//! meaning, only faster (one pass, no `serde_json::Value` allocated per node).

use ibexdb::value::{Map, Name, Set, Value};
use ibexdb::Error;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use std::fmt;

/// Parse a JSON text into a value.
pub fn parse_value(text: &str) -> Result<Value, Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let v = ValueSeed.deserialize(&mut de).map_err(|e| bad_json(&e))?;
    de.end().map_err(|e| bad_json(&e))?;
    Ok(v)
}

/// Parse a JSON text that must be an object (an item or a set of fields).
pub fn parse_map(text: &str, what: &str) -> Result<Map, Error> {
    match parse_value(text)? {
        Value::Map(m) => Ok(m),
        other => Err(Error::InvalidValue {
            path: what.to_string(),
            reason: format!("must be an object, got a {}", other.type_name()),
        }),
    }
}

/// Parse any JSON text into `serde_json::Value` (queries, schemas, options).
pub fn parse_json(text: &str) -> Result<serde_json::Value, Error> {
    serde_json::from_str(text).map_err(|e| bad_json(&e))
}

pub(crate) fn bad_json(e: &serde_json::Error) -> Error {
    Error::InvalidValue {
        path: String::new(),
        reason: format!("malformed JSON from the page: {e}"),
    }
}

/// A `DeserializeSeed` that builds a core [`Value`] directly.
pub struct ValueSeed;

impl<'de> DeserializeSeed<'de> for ValueSeed {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

fn number<E: de::Error>(n: f64) -> Result<Value, E> {
    Value::number(n).map_err(|_| E::custom("numbers must be finite"))
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
        Ok(Value::String(s.to_owned()))
    }
    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
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
        let Some(first) = map.next_key::<String>()? else {
            return Ok(Value::Map(Map::new()));
        };
        let v = map.next_value_seed(ValueSeed)?;
        if first == "$set" {
            if let Value::List(elems) = &v {
                // Same rule as Value::from_json: a lone "$set" key holding an array is a set,
                // and its elements must be strings.
                let Some(k2) = map.next_key::<String>()? else {
                    let mut s = Vec::with_capacity(elems.len());
                    for e in elems {
                        match e {
                            Value::String(x) => s.push(x.as_str()),
                            _ => {
                                return Err(de::Error::custom("$set: set elements must be strings"))
                            }
                        }
                    }
                    // Collected, not inserted one by one: sorted once.
                    return Ok(Value::Set(s.into_iter().collect::<Set>()));
                };
                m.push((first.into(), v));
                let v2 = map.next_value_seed(ValueSeed)?;
                m.push((k2.into(), v2));
                while let Some(k) = map.next_key::<String>()? {
                    let v = map.next_value_seed(ValueSeed)?;
                    m.push((k.into(), v));
                }
                return Ok(Value::Map(m.into_iter().collect()));
            }
        }
        m.push((first.into(), v));
        while let Some(k) = map.next_key::<String>()? {
            let v = map.next_value_seed(ValueSeed)?;
            m.push((k.into(), v));
        }
        Ok(Value::Map(m.into_iter().collect()))
    }
}

/// Serializes a value as JSON (sets as `{"$set": [...]}`; integral numbers without a
/// fraction, like `Value::to_json`).
pub struct J<'a>(pub &'a Value);

/// Serializes a map as a JSON object.
pub struct JMap<'a>(pub &'a Map);

impl Serialize for J<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Null => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Number(n) => {
                if n.fract() == 0.0 && n.abs() < 9.007_199_254_740_992e15 {
                    s.serialize_i64(*n as i64)
                } else {
                    s.serialize_f64(*n)
                }
            }
            Value::String(x) => s.serialize_str(x),
            Value::List(l) => {
                let mut seq = s.serialize_seq(Some(l.len()))?;
                for v in l {
                    seq.serialize_element(&J(v))?;
                }
                seq.end()
            }
            Value::Map(m) => JMap(m).serialize(s),
            Value::Set(set) => {
                let mut o = s.serialize_map(Some(1))?;
                o.serialize_entry("$set", &SetElems(set))?;
                o.end()
            }
        }
    }
}

struct SetElems<'a>(&'a Set);

impl Serialize for SetElems<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|e| e.as_str()))
    }
}

impl Serialize for JMap<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut o = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            o.serialize_entry(k.as_str(), &J(v))?;
        }
        o.end()
    }
}

/// `[[id, value], ...]` for query results and live-query rows.
pub struct Rows<'a>(pub &'a [(String, Map)]);

impl Serialize for Rows<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for (id, m) in self.0 {
            seq.serialize_element(&(id, JMap(m)))?;
        }
        seq.end()
    }
}

/// Serialize to a JSON string. Serializing these types cannot fail (string keys, finite
/// numbers), so an error here is a bug.
pub fn to_string<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("serializing a core value to JSON cannot fail")
}

/// Serialize as JSON into `out` (appending).
pub fn write<T: Serialize>(out: &mut Vec<u8>, v: &T) {
    serde_json::to_writer(out, v).expect("serializing a core value to JSON cannot fail")
}

/// Whether a value holds a set anywhere (its JSON then has `{"$set": [...]}` objects).
pub fn has_set(v: &Value) -> bool {
    match v {
        Value::Set(_) => true,
        Value::List(l) => l.iter().any(has_set),
        Value::Map(m) => map_has_set(m),
        _ => false,
    }
}

/// Whether any field of a map holds a set (see [`has_set`]).
pub fn map_has_set(m: &Map) -> bool {
    m.values().any(has_set)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_like_the_core() {
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
            assert_eq!(
                parse_value(text).unwrap(),
                Value::from_json(&j).unwrap(),
                "{text}"
            );
        }
        assert!(parse_value(r#"{"$set":[1]}"#).is_err());
        assert!(parse_value(r#"{"a":1"#).is_err());
        assert!(parse_value(r#"{"a":1} x"#).is_err());
    }

    #[test]
    fn writes_like_the_core() {
        let text =
            r#"{"t":"x\"\n","n":1.5,"i":3,"s":{"$set":["a","b"]},"l":[null,true,-2],"m":{}}"#;
        let v = parse_value(text).unwrap();
        let out = to_string(&J(&v));
        let back: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(back, v.to_json());
        let mut buf = b"old".to_vec();
        buf.clear();
        write(&mut buf, &J(&v));
        assert_eq!(buf, out.as_bytes());
    }

    #[test]
    fn finds_sets() {
        for (text, want) in [
            (r#"{"a":1,"b":"x"}"#, false),
            (r#"{"a":{"$set":[]}}"#, true),
            (r#"{"a":[1,{"b":{"$set":["x"]}}]}"#, true),
            (r#"{"a":{"b":{"c":null}},"$set":["x"]}"#, false),
        ] {
            let v = parse_value(text).unwrap();
            assert_eq!(has_set(&v), want, "{text}");
        }
    }
}
