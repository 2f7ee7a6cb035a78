//! Exchange without a server: the whole history as one bundle (the core's `IBEXBND1` format),
//! and receiving one.

use super::Engine;
use crate::error::{IntoJs, JsResult};
use ibexdb::{decode_bundle, encode_bundle};
use serde_json::json;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
impl Engine {
    /// Every commit and seal as one bundle (for another peer's `receive`).
    #[wasm_bindgen(js_name = exportCommits)]
    pub fn export_commits(&self) -> JsResult<Vec<u8>> {
        let (commits, seals) = self.repo()?.export().js()?;
        Ok(encode_bundle(&commits, &seals))
    }

    /// Verify and apply a bundle from another peer (JSON report). All or nothing.
    pub fn receive(&mut self, bundle: &[u8]) -> JsResult<String> {
        let (commits, seals) = decode_bundle(bundle).js()?;
        let rep = self.repo_mut()?.receive(&commits, &seals).js()?;
        Ok(
            json!({"applied": rep.applied, "duplicates": rep.duplicates, "pending": rep.pending})
                .to_string(),
        )
    }
}
