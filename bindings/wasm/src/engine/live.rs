//! Live queries: subscribe, unsubscribe, and the changes since the last call.

use super::read::query_of;
use super::Engine;
use crate::error::{IntoJs, JsResult};
use crate::json::to_string;
use ibexdb::LiveId;
use wasm_bindgen::prelude::*;

/// A live query just started: its id, and its first rows as JSON text (`[[id, item], ...]`,
/// passed on to the page as they are).
#[wasm_bindgen]
pub struct LiveStart {
    id: u64,
    rows: String,
}

#[wasm_bindgen]
impl LiveStart {
    #[wasm_bindgen(getter)]
    pub fn id(&self) -> f64 {
        self.id as f64
    }

    /// The first rows (taken: a second call returns an empty string).
    #[wasm_bindgen(js_name = takeRows)]
    pub fn take_rows(&mut self) -> String {
        std::mem::take(&mut self.rows)
    }
}

#[wasm_bindgen]
impl Engine {
    /// Start a live query.
    pub fn subscribe(&mut self, q: &str) -> JsResult<LiveStart> {
        let q = query_of(q).js()?;
        let (id, rows) = self.repo_mut()?.subscribe(q).js()?;
        Ok(LiveStart {
            id: id.0,
            rows: to_string(&rows),
        })
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
