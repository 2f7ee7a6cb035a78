//! Core errors as JS `Error` objects with the core's stable `name` (`SchemaError`,
//! `NotFoundError`, ...) plus the variant's fields as properties. The worker copies `name`,
//! `message` and these properties into its reply; `www/ibexdb.js` rebuilds the matching
//! `Error` subclass on the page.

use ibexdb::Error;
use js_sys::Reflect;
use wasm_bindgen::JsValue;

fn set(o: &JsValue, k: &str, v: JsValue) {
    // Setting a property on a fresh Error object cannot throw.
    let _ = Reflect::set(o, &JsValue::from_str(k), &v);
}

fn s(v: &str) -> JsValue {
    JsValue::from_str(v)
}

fn n(v: u64) -> JsValue {
    JsValue::from_f64(v as f64)
}

/// A JS error with a stable name and detail properties.
pub fn to_js(e: &Error) -> JsValue {
    let err: JsValue = js_sys::Error::new(&e.to_string()).into();
    set(&err, "name", s(e.name()));
    match e {
        Error::InvalidKey { key, .. } => set(&err, "key", s(key)),
        Error::InvalidValue { path, .. } => set(&err, "path", s(path)),
        Error::Schema {
            collection,
            field,
            rule,
        } => {
            set(&err, "collection", s(collection));
            set(&err, "field", s(field));
            set(&err, "rule", s(rule));
        }
        Error::InvalidSchema { collection, .. } => set(&err, "collection", s(collection)),
        Error::SchemaVersion {
            stored, version, ..
        } => {
            set(&err, "stored", n(u64::from(*stored)));
            set(&err, "version", n(u64::from(*version)));
        }
        Error::TooLarge { size, limit, .. } => {
            set(&err, "size", n(*size));
            set(&err, "limit", n(*limit));
        }
        Error::NotFound { key } => set(&err, "key", s(key)),
        Error::Corrupt {
            offset, next_valid, ..
        } => {
            set(&err, "offset", n(*offset));
            if let Some(nv) = next_valid {
                set(&err, "nextValid", n(*nv));
            }
        }
        Error::Signature { .. }
        | Error::Storage(_)
        | Error::Permission { .. }
        | Error::Auth { .. }
        | Error::Decrypt { .. } => set(&err, "kind", s(e.kind().unwrap_or_default())),
        Error::Limit { .. } => set(&err, "limit", s(e.kind().unwrap_or_default())),
        _ => {}
    }
    err
}

/// `Result` of the exported methods.
pub type JsResult<T> = Result<T, JsValue>;

/// Convert a core result.
pub trait IntoJs<T> {
    fn js(self) -> JsResult<T>;
}

impl<T> IntoJs<T> for Result<T, Error> {
    fn js(self) -> JsResult<T> {
        self.map_err(|e| to_js(&e))
    }
}
