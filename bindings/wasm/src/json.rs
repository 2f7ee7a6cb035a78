//! JSON text from the page -> core values, and results back to JSON text.
//!
//! The codec itself is the core's (`impl Deserialize/Serialize for ibexdb::Value`, one pass,
//! no `serde_json::Value` tree); this file only adds the boundary's error wording, the
//! "does this item hold a set" hint `getInto` returns, and the bytes beside the text: results
//! are serialized inside [`collecting`], so a bytes value is written `{"$bytes": i}` and its
//! bytes wait in [`OUT`] until the caller takes them (`Engine::takeBytes`, right after the call
//! that made the text: the indices count from 0 for each text).

use ibexdb::{with_bytes_sink, Error, Map, Value};
use serde::Serialize;
use std::cell::RefCell;
use std::sync::Arc;

thread_local! {
    /// The bytes of the last result's `{"$bytes": i}` placeholders, in order.
    pub(crate) static OUT: RefCell<Vec<Arc<[u8]>>> = const { RefCell::new(Vec::new()) };
}

/// Run `f` (which serializes a result) with bytes values collected into [`OUT`].
pub fn collecting<R>(f: impl FnOnce() -> R) -> R {
    let mut sink = OUT.with(|o| std::mem::take(&mut *o.borrow_mut()));
    let r = with_bytes_sink(&mut sink, f);
    OUT.with(|o| *o.borrow_mut() = sink);
    r
}

/// Whether the last results left bytes to take.
pub fn has_bytes() -> bool {
    OUT.with(|o| !o.borrow().is_empty())
}

/// Parse a JSON text into a value.
pub fn parse_value(text: &str) -> Result<Value, Error> {
    serde_json::from_str(text).map_err(|e| bad_json(&e))
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

/// Serialize to a JSON string. Serializing these types cannot fail (string keys, finite
/// numbers), so an error here is a bug.
pub fn to_string<T: Serialize>(v: &T) -> String {
    collecting(|| serde_json::to_string(v)).expect("serializing a core value to JSON cannot fail")
}

/// Serialize as JSON into `out` (appending).
pub fn write<T: Serialize>(out: &mut Vec<u8>, v: &T) {
    collecting(|| serde_json::to_writer(out, v))
        .expect("serializing a core value to JSON cannot fail")
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

    /// Results put bytes beside the text; indices count on until the bytes are taken.
    #[test]
    fn bytes_wait_beside_the_text_until_taken() {
        OUT.with(|o| o.borrow_mut().clear());
        let v = parse_value(r#"{"a":{"$bytes":"AAE="},"l":[{"$bytes":""}],"s":"x"}"#).unwrap();
        assert!(!has_bytes());
        assert_eq!(
            to_string(&v),
            r#"{"a":{"$bytes":0},"l":[{"$bytes":1}],"s":"x"}"#
        );
        assert!(has_bytes());
        let mut out = Vec::new();
        write(&mut out, &v);
        assert_eq!(out, br#"{"a":{"$bytes":2},"l":[{"$bytes":3}],"s":"x"}"#);
        let taken = OUT.with(|o| std::mem::take(&mut *o.borrow_mut()));
        let lens: Vec<usize> = taken.iter().map(|b| b.len()).collect();
        assert_eq!(lens, [2, 0, 2, 0]);
        assert_eq!(&taken[0][..], &[0, 1]);
        // Outside `collecting`, the core's JSON form.
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"a":{"$bytes":"AAE="},"l":[{"$bytes":""}],"s":"x"}"#
        );
        assert!(!has_bytes());
    }

    #[test]
    fn malformed_text_names_the_page() {
        for text in [r#"{"$set":[1]}"#, r#"{"a":1"#, r#"{"a":1} x"#] {
            match parse_value(text) {
                Err(Error::InvalidValue { path, reason }) => {
                    assert_eq!(path, "");
                    assert!(
                        reason.starts_with("malformed JSON from the page: "),
                        "{reason}"
                    );
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }
}
