//! Live queries: subscribe, unsubscribe, and the changes since the last call.

use super::read::query_of;
use super::Engine;
use crate::error::{IntoJs, JsResult};
use crate::json::to_string;
use ibexdb::LiveId;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
impl Engine {
    /// Start a live query: `{"id": n, "rows": [[id, item], ...]}`.
    pub fn subscribe(&mut self, q: &str) -> JsResult<String> {
        let q = query_of(q).js()?;
        let (id, rows) = self.repo_mut()?.subscribe(q).js()?;
        Ok(format!("{{\"id\":{},\"rows\":{}}}", id.0, to_string(&rows)))
    }

    pub fn unsubscribe(&mut self, id: f64) -> JsResult<bool> {
        Ok(self.repo_mut()?.unsubscribe(LiveId(id as u64)))
    }

    /// Changes of live queries since the last call, or undefined:
    /// `[[id, {"added": [[id, item, pos]], "removed": [id], "changed": [[id, item, pos]],
    /// "moved": [[id, from, to]]}], ...]`.
    #[wasm_bindgen(js_name = takeLiveChanges)]
    pub fn take_live_changes(&mut self) -> JsResult<Option<String>> {
        let changes = self.repo_mut()?.take_live_changes();
        if changes.is_empty() {
            return Ok(None);
        }
        let out: Vec<_> = changes
            .iter()
            .map(|(id, c)| {
                (
                    id.0,
                    LiveOut {
                        added: live_rows(&c.added),
                        removed: &c.removed,
                        changed: live_rows(&c.changed),
                        moved: &c.moved,
                    },
                )
            })
            .collect();
        Ok(Some(to_string(&out)))
    }
}

type LiveRow<'a> = (&'a String, &'a ibexdb::Map, &'a usize);

fn live_rows(v: &[(String, ibexdb::Map, usize)]) -> Vec<LiveRow<'_>> {
    v.iter().map(|(i, m, p)| (i, m, p)).collect()
}

#[derive(serde::Serialize)]
struct LiveOut<'a> {
    added: Vec<LiveRow<'a>>,
    removed: &'a [String],
    changed: Vec<LiveRow<'a>>,
    moved: &'a [(String, usize, usize)],
}
