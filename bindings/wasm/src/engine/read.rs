//! Reads: items by key (as JSON text, or into a reused buffer), queries, counts, aggregates,
//! explain and history.

use super::Engine;
use crate::error::{to_js, IntoJs, JsResult};
use crate::json::{parse_json, to_string};
use ibexdb::{AggregateQuery, Error, FieldOp, HistoryEntry, Op, Query};
use serde_json::json;
use wasm_bindgen::prelude::*;

pub(super) fn query_of(text: &str) -> Result<Query, Error> {
    Query::from_json(&parse_json(text)?)
}

fn history_json(h: &[HistoryEntry]) -> serde_json::Value {
    let op = |op: &Op| match op {
        Op::Put(m) => json!({"type": "put", "value": m}),
        Op::Delete => json!({"type": "delete"}),
        Op::Patch(fields) => {
            let mut o = serde_json::Map::new();
            // Attachments (docs/design.md §6.7) apart from the fields, by their names.
            let mut att = serde_json::Map::new();
            for (k, f) in fields {
                if let Some(n) = ibexdb::attachment_name(k) {
                    let d = match f {
                        FieldOp::Assign(v) => ibexdb::descriptor_of(v).map(|a| {
                            json!({"attach": {"hash": ibexdb::hex(&a.hash), "size": a.size, "type": a.media_type}})
                        }),
                        _ => None,
                    };
                    att.insert(n.to_owned(), d.unwrap_or(json!({"detach": true})));
                    continue;
                }
                o.insert(
                    k.clone(),
                    match f {
                        FieldOp::Assign(v) => json!({"assign": v}),
                        FieldOp::Unset => json!({"unset": true}),
                        FieldOp::SetEdit { add, remove } => json!({
                            "add": add.iter().collect::<Vec<_>>(),
                            "remove": remove.keys().collect::<Vec<_>>(),
                        }),
                    },
                );
            }
            if att.is_empty() {
                json!({"type": "patch", "fields": o})
            } else {
                json!({"type": "patch", "fields": o, "attachments": att})
            }
        }
    };
    serde_json::Value::Array(
        h.iter()
            .map(|e| {
                json!({
                    "commit": e.commit.to_hex(),
                    "author": e.author.to_hex(),
                    "time": e.time_ms,
                    "hlc": e.hlc.to_string(),
                    "trusted": e.trusted,
                    "op": op(&e.op),
                })
            })
            .collect(),
    )
}

#[wasm_bindgen]
impl Engine {
    /// The item at `key` as JSON, or undefined.
    pub fn get(&mut self, key: &str) -> JsResult<Option<String>> {
        let r = self.repo_mut()?;
        Ok(r.get(key).js()?.map(to_string))
    }

    /// Address (in wasm memory) of two u32s, `[ptr, len]`, where `getInto` leaves its text.
    /// Fixed for the engine's lifetime.
    #[wasm_bindgen(js_name = outSlot)]
    pub fn out_slot(&self) -> u32 {
        self.slot.as_ptr() as u32
    }

    /// `get` without allocating a JS string in the glue: writes the item's JSON (UTF-8) into a
    /// buffer reused across calls and its `[ptr, len]` at `outSlot`, for the caller to decode
    /// straight from wasm memory before the next engine call. Returns 0 when the item does not
    /// exist, else 1, plus 2 when it holds a set somewhere (so the caller knows whether
    /// `{"$set": [...]}` objects need reviving without scanning the text), plus 4 when it holds
    /// bytes (`{"$bytes": i}`: take them with `takeBytes`).
    #[wasm_bindgen(js_name = getInto)]
    pub fn get_into(&mut self, key: &str) -> JsResult<u32> {
        let r = self.repo.as_mut().ok_or_else(|| to_js(&Error::Closed))?;
        let Some(m) = r.get(key).js()? else {
            return Ok(0);
        };
        let mut out = self.out.borrow_mut();
        out.clear();
        if out.capacity() > 1 << 20 {
            // Don't keep a huge item's buffer forever.
            out.shrink_to(1024);
        }
        crate::json::write(&mut out, m);
        self.slot[0].set(out.as_ptr() as u32);
        self.slot[1].set(out.len() as u32);
        let set = if crate::json::map_has_set(m) { 2 } else { 0 };
        let bytes = if crate::json::has_bytes() { 4 } else { 0 };
        Ok(1 | set | bytes)
    }

    /// The bytes of the `{"$bytes": i}` placeholders in the text the last call returned, as
    /// `Uint8Array`s (each a copy out of wasm memory, in an `ArrayBuffer` of its own that the
    /// worker transfers to the page), or undefined when it held none. Taking them clears them:
    /// call it right after the call whose text it is.
    #[wasm_bindgen(js_name = takeBytes)]
    pub fn take_bytes(&self) -> Option<js_sys::Array> {
        let out = crate::json::OUT.with(|o| std::mem::take(&mut *o.borrow_mut()));
        if out.is_empty() {
            return None;
        }
        Some(
            out.iter()
                .map(|b| js_sys::Uint8Array::from(&b[..]))
                .collect(),
        )
    }

    /// JSON array of items (null where missing) for a JSON array of keys.
    #[wasm_bindgen(js_name = getMany)]
    pub fn get_many(&mut self, keys: &str) -> JsResult<String> {
        let r = self.repo_mut()?;
        let keys: Vec<String> =
            serde_json::from_str(keys).map_err(|e| to_js(&crate::json::bad_json(&e)))?;
        // Each item is written out before the next read (a read may load a cold block).
        let mut out = Vec::with_capacity(2 + keys.len() * 64);
        out.push(b'[');
        for (i, k) in keys.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            crate::json::write(&mut out, &r.get(k).js()?);
        }
        out.push(b']');
        Ok(String::from_utf8(out).expect("JSON is UTF-8"))
    }

    /// Rows `[[id, item], ...]` of a query (JSON).
    pub fn query(&mut self, q: &str) -> JsResult<String> {
        let r = self.repo_mut()?;
        let q = query_of(q).js()?;
        let res = r.query(&q).js()?;
        Ok(to_string(&res.rows))
    }

    /// A page of a query: `{"rows": [[id, item], ...], "cursor": text | null}` (JSON); the
    /// cursor (with a limit and at least one row) is what `after` takes for the next page.
    #[wasm_bindgen(js_name = queryPage)]
    pub fn query_page(&mut self, q: &str) -> JsResult<String> {
        let r = self.repo_mut()?;
        let q = query_of(q).js()?;
        let res = r.query(&q).js()?;
        Ok(to_string(&json!({"rows": res.rows, "cursor": res.cursor})))
    }

    /// The plan a query would use (JSON).
    pub fn explain(&mut self, q: &str) -> JsResult<String> {
        let r = self.repo_mut()?;
        let q = query_of(q).js()?;
        Ok(r.explain(&q).js()?.to_json().to_string())
    }

    /// Number of items of `collection` matching `where` (a JSON where clause, or undefined).
    pub fn count(&mut self, collection: &str, r#where: Option<String>) -> JsResult<f64> {
        let r = self.repo_mut()?;
        let n = match r#where {
            None => r.count(collection, None),
            Some(w) => {
                let q = json!({"collection": collection, "where": parse_json(&w).js()?});
                let q = Query::from_json(&q).js()?;
                if q.key.is_some() {
                    return Err(to_js(&Error::InvalidQuery {
                        reason: "$id is allowed only in a query's where (query, page, live, \
                                 explain), not in count"
                            .into(),
                    }));
                }
                r.count(collection, q.filter.as_ref())
            }
        }
        .js()?;
        Ok(n as f64)
    }

    /// The ids of `collection` in order (JSON array).
    pub fn keys(&mut self, collection: &str) -> JsResult<String> {
        let r = self.repo_mut()?;
        Ok(to_string(&r.keys(collection).js()?))
    }

    /// Run an aggregate query (JSON in, JSON out).
    pub fn aggregate(&mut self, q: &str) -> JsResult<String> {
        let r = self.repo_mut()?;
        let q = AggregateQuery::from_json(&parse_json(q).js()?).js()?;
        // The result is built as a JSON tree: bytes (a min or max) go to the sink then.
        crate::json::collecting(|| r.aggregate(&q).map(|v| v.to_string())).js()
    }

    /// The commits that changed `key`, oldest first (JSON).
    pub fn history(&mut self, key: &str) -> JsResult<String> {
        let r = self.repo_mut()?;
        let h = r.history(key).js()?;
        Ok(crate::json::collecting(|| history_json(&h).to_string()))
    }
}
