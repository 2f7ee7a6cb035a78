//! `Engine`: one repository over OPFS files, with synchronous methods for the worker.
//!
//! Values, queries and results cross as JSON strings (sets as `{"$set": [...]}`); commit
//! bundles as `Uint8Array`. Errors are thrown as JS `Error`s with the core's stable `name`.
//! The engine never flushes, seals or snapshots by itself: the worker decides when (group
//! commit, relaxed-flush timer, seal timer; see `www/lib/worker.js` and `www/lib/policy.js`).
//!
//! The methods are grouped by job, one `#[wasm_bindgen] impl Engine` block per file: opening
//! and identity here, `read.rs` (items, queries, history), `write.rs` (writes and schemas),
//! `schemas.rs` (stored
//! schema versions, upgrades, pending migrations), `live.rs` (live queries), `maintenance.rs` (flush, seal, snapshot, stats), `verify.rs`
//! (`verify`, and its WebCrypto form), `access.rs` (grants, revocations, members) and
//! `exchange.rs` (bundles); sync is in `../sync.rs`.

mod access;
mod attach;
mod exchange;
mod invites;
mod live;
mod maintenance;
mod read;
mod schemas;
mod verify;
mod write;

pub(crate) use verify::seal_check_js;

use crate::error::{to_js, IntoJs, JsResult};
use crate::json::parse_json;
use crate::opfs::{OpfsStorage, Quota};
use ibexdb::{Client, Error, Identity, PublicKey, Recovery, Repo, RepoOptions};
use std::cell::{Cell, RefCell};
use wasm_bindgen::prelude::*;

/// The repository engine of one worker.
#[wasm_bindgen]
pub struct Engine {
    repo: Option<Repo<OpfsStorage>>,
    /// The sync client (`../sync.rs`), once `syncStart` made it; it lives and dies with this
    /// engine (after a panic the worker makes a new engine and starts sync again).
    sync: Option<Client>,
    /// Reused output buffer of `getInto` (JSON text of the last item read).
    out: RefCell<Vec<u8>>,
    /// `[ptr, len]` of the text in `out`, at a fixed address (`outSlot`) that JS reads from
    /// wasm memory: boxed so it does not move with the `Engine`.
    slot: Box<[Cell<u32>; 2]>,
    /// `quotaBytes`' limit, shared by the log, the snapshot and the attachment files the
    /// worker writes (`attach.rs`: `quotaCharge`).
    quota: Option<std::rc::Rc<Quota>>,
}

fn sync_not_started() -> wasm_bindgen::JsValue {
    js_sys::Error::new("sync is not started (call syncStart first)").into()
}

fn clock() -> ibexdb::Clock {
    Box::new(|| js_sys::Date::now() as u64)
}

fn opt_bool(o: &serde_json::Value, k: &str) -> Result<Option<bool>, Error> {
    match o.get(k) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::Bool(b)) => Ok(Some(*b)),
        Some(v) => Err(Error::InvalidValue {
            path: format!("options.{k}"),
            reason: format!("must be a boolean, got {v}"),
        }),
    }
}

fn opt_u64(o: &serde_json::Value, k: &str) -> Result<Option<u64>, Error> {
    match o.get(k) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| Error::InvalidValue {
            path: format!("options.{k}"),
            reason: format!("must be a non-negative integer, got {v}"),
        }),
    }
}

#[wasm_bindgen]
impl Engine {
    /// Open (or create) a repository on two sync access handles (`snapshot` may be null).
    /// `options` is JSON: `{"name": string (required: bound into seals), "trusted": bool, "acceptTrusted": bool, "recovery": "strict" |
    /// "repair", "quotaBytes": n, "maxClockSkewMs": n, "expectedFounder": hex key}`. `secret` is the 48-byte identity
    /// secret (required unless trusted); `public`, its 49-byte compressed public key as stored
    /// beside it, spares deriving it (checked before the first write).
    pub fn open(
        log: JsValue,
        snapshot: JsValue,
        options: &str,
        secret: Option<Vec<u8>>,
        public: Option<Vec<u8>>,
    ) -> JsResult<Engine> {
        Self::open_inner(log, snapshot, options, secret, public).js()
    }

    fn open_inner(
        log: JsValue,
        snapshot: JsValue,
        options: &str,
        secret: Option<Vec<u8>>,
        public: Option<Vec<u8>>,
    ) -> Result<Engine, Error> {
        let o = parse_json(options)?;
        let trusted = opt_bool(&o, "trusted")?.unwrap_or(false);
        let quota = opt_u64(&o, "quotaBytes")?.map(Quota::new);
        let identity = match (&secret, &public, trusted) {
            (Some(s), Some(p), false) => Some(Identity::from_parts(s, p)?),
            (Some(s), None, false) => Some(Identity::from_secret_bytes(s)?),
            _ => None,
        };
        let name = match o.get("name") {
            Some(serde_json::Value::String(n)) => n.clone(),
            _ => {
                return Err(Error::InvalidValue {
                    path: "options.name".into(),
                    reason: "the repository name is required".into(),
                })
            }
        };
        let mut opts = RepoOptions::new(&name, identity, clock());
        opts.trusted = trusted;
        opts.accept_trusted = opt_bool(&o, "acceptTrusted")?.unwrap_or(trusted);
        if let Some(hex) = o.get("expectedFounder").and_then(|v| v.as_str()) {
            opts.expected_founder =
                Some(access::public_key(hex).map_err(|_| Error::InvalidValue {
                    path: "options.owner".into(),
                    reason: "a public key is 98 hex digits (the founder's db.publicKey)".into(),
                })?);
        }
        if let Some(ms) = opt_u64(&o, "maxClockSkewMs")? {
            opts.max_clock_skew_ms = ms;
        }
        opts.recovery = match o.get("recovery").and_then(|v| v.as_str()) {
            None | Some("strict") => Recovery::Strict,
            Some("repair") => Recovery::Repair,
            Some(other) => {
                return Err(Error::InvalidValue {
                    path: "options.recovery".into(),
                    reason: format!("must be \"strict\" or \"repair\", got {other:?}"),
                })
            }
        };
        let log = OpfsStorage::new(log, quota.clone())?;
        let snap = if snapshot.is_null() || snapshot.is_undefined() {
            None
        } else {
            Some(OpfsStorage::new(snapshot, quota.clone())?)
        };
        let repo = Repo::open(log, snap, opts)?;
        Ok(Engine {
            repo: Some(repo),
            sync: None,
            out: RefCell::new(Vec::with_capacity(1024)),
            slot: Box::new([Cell::new(0), Cell::new(0)]),
            quota,
        })
    }

    /// Derive an identity from 48 bytes of entropy; returns its 48-byte secret. The identity
    /// passed its self-test (`Identity::generate`: its public key derived twice, a test
    /// signature verified); a SignatureError when no candidate did.
    #[wasm_bindgen(js_name = identityFromEntropy)]
    pub fn identity_from_entropy(entropy: &[u8]) -> JsResult<Vec<u8>> {
        let e: &[u8; 48] = entropy.try_into().map_err(|_| {
            to_js(&Error::InvalidValue {
                path: "entropy".into(),
                reason: "must be 48 bytes".into(),
            })
        })?;
        Ok(Identity::generate(e).js()?.secret_bytes().to_vec())
    }

    /// A new identity from 48 bytes of entropy, self-tested (`Identity::generate`): its 48-byte
    /// secret, then its 49-byte compressed public key (the identity file's 97 bytes, §11.5), so
    /// that the caller need not derive the public key again (and test it again: ~10 ms in wasm).
    #[wasm_bindgen(js_name = newIdentity)]
    pub fn new_identity(entropy: &[u8]) -> JsResult<Vec<u8>> {
        let e: &[u8; 48] = entropy.try_into().map_err(|_| {
            to_js(&Error::InvalidValue {
                path: "entropy".into(),
                reason: "must be 48 bytes".into(),
            })
        })?;
        let id = Identity::generate(e).js()?;
        let mut out = id.secret_bytes().to_vec();
        out.extend_from_slice(&id.public().0);
        Ok(out)
    }

    /// The public key (hex) of a 48-byte identity secret, self-tested before it is stored
    /// (`Identity::from_secret_bytes_checked`).
    /// Accept a key pair made by WebCrypto (`generateKey`, exported: the 48-byte secret and the
    /// 49-byte compressed public key) once the core derives the same public key
    /// (`Identity::from_generated_pair`): the secret and the public key, 97 bytes, as
    /// `newIdentity`. A `SignatureError` otherwise (the caller falls back to `newIdentity`).
    #[wasm_bindgen(js_name = acceptGeneratedIdentity)]
    pub fn accept_generated_identity(secret: &[u8], public: &[u8]) -> JsResult<Vec<u8>> {
        let id = Identity::from_generated_pair(secret, public).js()?;
        let mut out = id.secret_bytes().to_vec();
        out.extend_from_slice(&id.public().0);
        Ok(out)
    }

    #[wasm_bindgen(js_name = publicKeyOf)]
    pub fn public_key_of(secret: &[u8]) -> JsResult<String> {
        Ok(Identity::from_secret_bytes_checked(secret)
            .js()?
            .public()
            .to_hex())
    }

    /// The uncompressed form (`04 ‖ x ‖ y`, 97 bytes) of a compressed public key (49 bytes):
    /// what WebCrypto imports (`raw`, or a JWK's `x` and `y`).
    #[wasm_bindgen(js_name = uncompressedKey)]
    pub fn uncompressed_key(compressed: &[u8]) -> JsResult<Vec<u8>> {
        let key = PublicKey::from_bytes(compressed).js()?;
        Ok(key.uncompressed().js()?.to_vec())
    }

    pub(crate) fn repo(&self) -> JsResult<&Repo<OpfsStorage>> {
        self.repo.as_ref().ok_or_else(|| to_js(&Error::Closed))
    }

    pub(crate) fn repo_mut(&mut self) -> JsResult<&mut Repo<OpfsStorage>> {
        self.repo.as_mut().ok_or_else(|| to_js(&Error::Closed))
    }

    /// The sync client's slot (`None` until `syncStart`).
    pub(crate) fn sync_slot(&mut self) -> &mut Option<Client> {
        &mut self.sync
    }

    /// The repository and the sync client together (a server message changes both).
    pub(crate) fn repo_and_sync(&mut self) -> JsResult<(&mut Repo<OpfsStorage>, &mut Client)> {
        let repo = self.repo.as_mut().ok_or_else(|| to_js(&Error::Closed))?;
        let client = self.sync.as_mut().ok_or_else(sync_not_started)?;
        Ok((repo, client))
    }

    /// The sync client (an error until `syncStart`).
    pub(crate) fn sync_client(&self) -> JsResult<&Client> {
        self.sync.as_ref().ok_or_else(sync_not_started)
    }

    /// This repository's public key (hex: its commits' author); null in trusted mode.
    #[wasm_bindgen(js_name = publicKey)]
    pub fn public_key(&self) -> JsResult<Option<String>> {
        let r = self.repo()?;
        Ok(r.identity().map(|i| i.public().to_hex()))
    }

    /// The 48-byte identity secret; null in trusted mode.
    #[wasm_bindgen(js_name = identitySecret)]
    pub fn identity_secret(&self) -> JsResult<Option<Vec<u8>>> {
        Ok(self.repo()?.identity().map(|i| i.secret_bytes().to_vec()))
    }

    /// Flush and release the files (the caller closes the handles). Idempotent.
    pub fn close(&mut self) -> JsResult<()> {
        if let Some(r) = self.repo.take() {
            r.close().js()?;
        }
        Ok(())
    }

    /// Flush and let go of the files without freeing the repository's memory: for a worker
    /// that ends right after (the page API's close terminates it), where dropping every loaded
    /// item costs milliseconds the app would wait for and the worker's end frees anyway.
    #[wasm_bindgen(js_name = closeWithoutFree)]
    pub fn close_without_free(&mut self) -> JsResult<()> {
        if let Some(mut r) = self.repo.take() {
            let flushed = r.flush_for_close();
            std::mem::forget(r);
            flushed.js()?;
        }
        Ok(())
    }

    /// Test hook: panic inside the engine (the worker must survive and reopen).
    #[wasm_bindgen(js_name = panicForTest)]
    pub fn panic_for_test(&self, msg: &str) {
        panic!("{msg}");
    }
}
