//! `verify()` two ways: the core verifying every seal signature itself (`verify`), or the
//! worker verifying them with WebCrypto first (`sealChecksAll`, then `verifyVouched`; see
//! `www/lib/worker/verify.js`). The reports are JSON text.

use super::Engine;
use crate::error::{IntoJs, JsResult};
use ibexdb::{SealCheck, VerifyReport};
use js_sys::{Array, Uint8Array};
use serde_json::json;
use wasm_bindgen::prelude::*;

/// A seal check as the worker's WebCrypto code takes it: `[authorKey (49 bytes, compressed),
/// message, signature (96 bytes, r ‖ s)]`, ECDSA P-384 with SHA-384.
pub(crate) fn seal_check_js(c: &SealCheck) -> Array {
    Array::of3(
        &Uint8Array::from(&c.author.0[..]),
        &Uint8Array::from(&c.message[..]),
        &Uint8Array::from(&c.signature.0[..]),
    )
}

fn report_json(v: &VerifyReport) -> String {
    json!({
        "commits": v.commits,
        "seals": v.seals,
        "signaturesVerified": v.signatures_verified,
        "signaturesVouched": v.signatures_vouched,
        "trustedCommits": v.trusted_commits,
        "unsealed": v.unsealed,
        "items": v.items,
        "logBytes": v.log_bytes,
        "snapshotChecked": v.snapshot_checked,
    })
    .to_string()
}

#[wasm_bindgen]
impl Engine {
    /// Re-prove the repository, every seal signature with the core's own P-384 (JSON report).
    pub fn verify(&mut self) -> JsResult<String> {
        Ok(report_json(&self.repo_mut()?.verify().js()?))
    }

    /// Every seal of the log as a signature check, for the worker to verify with WebCrypto
    /// before `verifyVouched`: `[logLength, [check, ...]]` (checks as `syncSealChecks` gives
    /// them). Damage in the log is thrown, as `verify` would report it.
    #[wasm_bindgen(js_name = sealChecksAll)]
    pub fn seal_checks_all(&mut self) -> JsResult<Array> {
        let listed = self.repo_mut()?.seal_checks_all().js()?;
        let checks: Array = listed.checks.iter().map(seal_check_js).collect();
        Ok(Array::of2(
            &JsValue::from_f64(listed.log_len as f64),
            &checks,
        ))
    }

    /// `verify` for a worker that verified every signature `sealChecksAll` listed (`logLength`
    /// from it, with nothing written in between): those signatures are counted in
    /// `signaturesVouched` and not verified again; every other check runs.
    #[wasm_bindgen(js_name = verifyVouched)]
    pub fn verify_vouched(&mut self, log_length: f64) -> JsResult<String> {
        let v = self.repo_mut()?.verify_vouched(log_length as u64).js()?;
        Ok(report_json(&v))
    }
}
