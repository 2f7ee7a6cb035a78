//! Writes: put, update, delete, transactions in their binary form (one commit each, buffered
//! until `flush`), and schemas.

use super::Engine;
use crate::error::{IntoJs, JsResult};
use crate::json::{parse_json, parse_map};
use ibexdb::{Schema, Txn};
use wasm_bindgen::prelude::*;

impl Engine {
    fn commit(&mut self, txn: Txn) -> JsResult<()> {
        self.repo_mut()?.commit(txn).js()?;
        Ok(())
    }
}

#[wasm_bindgen]
impl Engine {
    /// Replace the item at `key` with a JSON object (one commit, buffered until `flush`).
    pub fn put(&mut self, key: &str, value: &str) -> JsResult<()> {
        self.repo()?;
        let m = parse_map(value, key).js()?;
        let mut txn = Txn::new();
        txn.put(key, m).js()?;
        self.commit(txn)
    }

    /// Change fields of an existing item (NotFoundError if it does not exist).
    pub fn update(&mut self, key: &str, fields: &str) -> JsResult<()> {
        self.repo()?;
        let m = parse_map(fields, key).js()?;
        let mut txn = Txn::new();
        txn.update(key, m).js()?;
        self.commit(txn)
    }

    /// Delete the item at `key`.
    pub fn delete(&mut self, key: &str) -> JsResult<()> {
        self.repo()?;
        let mut txn = Txn::new();
        txn.delete(key).js()?;
        self.commit(txn)
    }

    /// Commit a transaction given in its binary form (docs/design.md §3.3, what the JS
    /// `TxnBuilder` writes), atomically, as one commit (no JSON text on either side).
    #[wasm_bindgen(js_name = transactBytes)]
    pub fn transact_bytes(&mut self, ops: &[u8]) -> JsResult<()> {
        self.repo()?;
        let txn = Txn::from_bytes(ops).js()?;
        self.commit(txn)
    }

    /// Declare a collection's schema (JSON; see `Schema::from_json`).
    #[wasm_bindgen(js_name = defineSchema)]
    pub fn define_schema(&mut self, collection: &str, schema: &str) -> JsResult<()> {
        let s = Schema::from_json(collection, &parse_json(schema).js()?).js()?;
        self.repo_mut()?.define_schema(collection, s).js()
    }
}
