//! Durability and upkeep: flush, seal, snapshot, and the stats the worker's policies read
//! (`verify` is in `verify.rs`).

use super::Engine;
use crate::error::{to_js, IntoJs, JsResult};
use ibexdb::{Error, Signature, SIGNATURE_LEN};
use js_sys::{Array, Uint8Array};
use serde_json::json;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
impl Engine {
    /// Write buffered frames with one write call and flush them.
    pub fn flush(&mut self) -> JsResult<()> {
        self.repo_mut()?.flush().js()
    }

    /// Whether anything waits to be written or flushed.
    #[wasm_bindgen(js_name = hasUnflushed)]
    pub fn has_unflushed(&self) -> JsResult<bool> {
        Ok(self.repo()?.has_unflushed())
    }

    /// Sign every unsealed local commit (one signature per batch). Returns the seals made.
    /// The seal frames are buffered: flush afterwards.
    pub fn seal(&mut self) -> JsResult<u32> {
        Ok(self.repo_mut()?.seal().js()?.len() as u32)
    }

    /// What to sign to seal the unsealed local commits with WebCrypto (ECDSA P-384, SHA-384):
    /// `[count, message]`, or undefined when nothing waits for a seal. Then `sealWith`.
    #[wasm_bindgen(js_name = sealRequest)]
    pub fn seal_request(&self) -> JsResult<Option<Array>> {
        Ok(self.repo()?.seal_request().map(|r| {
            Array::of2(
                &JsValue::from_f64(r.count as f64),
                &Uint8Array::from(&r.message[..]),
            )
        }))
    }

    /// Seal the first `count` unsealed commits with a 96-byte `r ‖ s` signature the worker made
    /// over `sealRequest`'s message with this repository's key (not re-checked: every receiver
    /// and `verify()` check it). The seal frame is buffered: flush afterwards.
    #[wasm_bindgen(js_name = sealWith)]
    pub fn seal_with(&mut self, count: u32, signature: &[u8]) -> JsResult<()> {
        let sig: [u8; SIGNATURE_LEN] = signature.try_into().map_err(|_| {
            to_js(&Error::InvalidValue {
                path: "signature".into(),
                reason: format!("a signature is {SIGNATURE_LEN} bytes (r ‖ s)"),
            })
        })?;
        self.repo_mut()?
            .seal_with(count as usize, Signature(sig))
            .js()?;
        Ok(())
    }

    /// Local commits waiting for a seal.
    pub fn unsealed(&self) -> JsResult<u32> {
        Ok(self.repo()?.unsealed() as u32)
    }

    /// Log bytes not covered by the snapshot.
    #[wasm_bindgen(js_name = tailBytes)]
    pub fn tail_bytes(&self) -> JsResult<f64> {
        Ok(self.repo()?.tail_bytes() as f64)
    }

    /// Flush, then write a snapshot of the whole state.
    #[wasm_bindgen(js_name = writeSnapshot)]
    pub fn write_snapshot(&mut self) -> JsResult<bool> {
        self.repo_mut()?.write_snapshot().js()
    }

    /// Sizes and counters (JSON).
    pub fn stats(&self) -> JsResult<String> {
        let r = self.repo()?;
        let rep = r.open_report();
        Ok(json!({
            "logBytes": r.log_len(),
            "snapshotBytes": r.snapshot_bytes().js()?,
            "tailBytes": r.tail_bytes(),
            "unsealed": r.unsealed(),
            "unflushed": r.has_unflushed(),
            "commits": r.commit_count(),
            "items": r.item_count(),
            "pending": r.pending(),
            "open": {
                "fromSnapshot": rep.from_snapshot,
                "replayedFrames": rep.replayed_frames,
                "truncatedTail": rep.truncated_tail.map(|(a, b)| [a, b]),
                "repaired": rep.repaired.iter().map(|(a, b)| [*a, *b]).collect::<Vec<_>>(),
                "snapshotMs": rep.snapshot_ms,
                "replayMs": rep.replay_ms,
            },
        })
        .to_string())
    }
}
