//! Attachments (docs/design.md §6.7): the commit that records one (its bytes already stored
//! by the worker under their hash), the one that removes it, an item's list, and the hashes
//! every visible item refers to (what the worker keeps when it reclaims files).

use super::Engine;
use crate::error::{to_js, IntoJs, JsResult};
use ibexdb::{from_hex, hex, Attachment, Error, Txn};
use serde_json::json;
use wasm_bindgen::prelude::*;

fn invalid(path: &str, reason: &str) -> JsValue {
    to_js(&Error::InvalidValue {
        path: path.into(),
        reason: reason.into(),
    })
}

fn descriptor_json(name: &str, a: &Attachment) -> serde_json::Value {
    json!({"name": name, "hash": hex(&a.hash), "size": a.size, "type": a.media_type})
}

#[wasm_bindgen]
impl Engine {
    /// Record attachment `name` of the item at `key`: SHA-256 `hash` (64 hex digits), `size`
    /// bytes, media type `media_type` (one commit, buffered until `flush`; NotFoundError when
    /// the item does not exist).
    pub fn attach(
        &mut self,
        key: &str,
        name: &str,
        hash: &str,
        size: f64,
        media_type: &str,
    ) -> JsResult<()> {
        let hash: [u8; 32] = from_hex(hash)
            .and_then(|h| h.try_into().ok())
            .ok_or_else(|| invalid("hash", "64 hex digits"))?;
        if !(size >= 0.0 && size.fract() == 0.0) {
            return Err(invalid("size", "a whole number"));
        }
        let a = Attachment {
            hash,
            size: size as u64,
            media_type: media_type.to_owned(),
        };
        let mut txn = Txn::new();
        txn.attach(key, name, &a).js()?;
        self.repo_mut()?.commit(txn).js()?;
        Ok(())
    }

    /// Remove attachment `name` of the item at `key` (NotFoundError when the item does not
    /// exist; nothing is written when it has no such attachment).
    pub fn detach(&mut self, key: &str, name: &str) -> JsResult<bool> {
        let r = self.repo_mut()?;
        if !r.attachments(key).js()?.iter().any(|(n, _)| n == name) {
            ibexdb::validate_attachment_name(name).js()?;
            if r.get(key).js()?.is_none() {
                return Err(to_js(&Error::NotFound { key: key.into() }));
            }
            return Ok(false);
        }
        let mut txn = Txn::new();
        txn.detach(key, name).js()?;
        r.commit(txn).js()?;
        Ok(true)
    }

    /// JSON array of the attachments of the item at `key`: `{name, hash, size, type}` by name
    /// (empty when it has none or does not exist).
    pub fn attachments(&mut self, key: &str) -> JsResult<String> {
        let list = self.repo_mut()?.attachments(key).js()?;
        let out: Vec<_> = list.iter().map(|(n, a)| descriptor_json(n, a)).collect();
        Ok(serde_json::Value::Array(out).to_string())
    }

    /// Count `bytes` of attachment files against `quotaBytes` (shared with the log and the
    /// snapshot): QuotaExceededError when they do not fit (nothing counted then). No-op
    /// without a limit.
    #[wasm_bindgen(js_name = quotaCharge)]
    pub fn quota_charge(&self, bytes: f64) -> JsResult<()> {
        match &self.quota {
            Some(q) => q
                .charge(bytes as u64)
                .map_err(|e| to_js(&Error::Storage(e))),
            None => Ok(()),
        }
    }

    /// Give back bytes counted by `quotaCharge` (a file removed, or never made visible).
    #[wasm_bindgen(js_name = quotaRelease)]
    pub fn quota_release(&self, bytes: f64) {
        if let Some(q) = &self.quota {
            q.release(bytes as u64);
        }
    }

    /// JSON array of the hashes (hex) every visible item's attachments refer to.
    #[wasm_bindgen(js_name = attachmentHashes)]
    pub fn attachment_hashes(&mut self) -> JsResult<String> {
        let set = self.repo_mut()?.attachment_hashes().js()?;
        let out: Vec<String> = set.iter().map(|h| hex(h)).collect();
        Ok(serde_json::to_string(&out).expect("strings"))
    }

    /// Whether the repository is end-to-end encrypted (docs/design.md §6.8): its attachment
    /// bytes are not offered to or asked of a sync server (their hashes would tell equal files
    /// apart).
    #[wasm_bindgen(js_name = isEncrypted)]
    pub fn is_encrypted(&self) -> JsResult<bool> {
        Ok(self.repo()?.is_encrypted())
    }
}

/// An incremental SHA-256 for the worker, which hashes an attachment chunk by chunk while it
/// writes it (WebCrypto's `digest` needs the whole input at once).
#[wasm_bindgen]
pub struct Sha256Stream(Option<ibexdb::Sha256Stream>);

impl Default for Sha256Stream {
    fn default() -> Self {
        Sha256Stream::new()
    }
}

#[wasm_bindgen]
impl Sha256Stream {
    #[wasm_bindgen(constructor)]
    pub fn new() -> Sha256Stream {
        Sha256Stream(Some(ibexdb::Sha256Stream::new()))
    }

    /// Feed the next bytes (copied into wasm memory for the call).
    pub fn update(&mut self, bytes: &[u8]) {
        if let Some(h) = &mut self.0 {
            h.update(bytes);
        }
    }

    /// The digest as 64 lowercase hex digits (once; then the hasher is spent).
    pub fn finish(&mut self) -> String {
        hex(&self.0.take().unwrap_or_default().finish())
    }
}
