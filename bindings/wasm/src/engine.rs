//! `Engine`: one repository over OPFS files, with synchronous methods for the worker.
//!
//! Values, queries and results cross as JSON strings (sets as `{"$set": [...]}`); commit
//! bundles as `Uint8Array`. Errors are thrown as JS `Error`s with the core's stable `name`.
//! The engine never flushes, seals or snapshots by itself: the worker decides when (group
//! commit, relaxed-flush timer, seal timer; see `www/worker.js`).

use crate::error::{to_js, IntoJs, JsResult};
use crate::json::{parse_json, parse_map, to_string};
use crate::opfs::{OpfsStorage, Quota};
use crate::txn_ops;
use ibexdb::HistoryEntry;
use ibexdb::{AggregateQuery, LiveId, Query};
use ibexdb::{CommitId, Error, Identity, Recovery, Repo, RepoOptions, Schema, Txn};
use ibexdb::{FieldOp, Op};
use serde_json::json;
use std::cell::{Cell, RefCell};
use wasm_bindgen::prelude::*;

/// The repository engine of one worker.
#[wasm_bindgen]
pub struct Engine {
    repo: Option<Repo<OpfsStorage>>,
    /// Reused output buffer of `getInto` (JSON text of the last item read).
    out: RefCell<Vec<u8>>,
    /// `[ptr, len]` of the text in `out`, at a fixed address (`outSlot`) that JS reads from
    /// wasm memory: boxed so it does not move with the `Engine`.
    slot: Box<[Cell<u32>; 2]>,
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

fn query_of(text: &str) -> Result<Query, Error> {
    Query::from_json(&parse_json(text)?)
}

fn history_json(h: &[HistoryEntry]) -> serde_json::Value {
    let op = |op: &Op| match op {
        Op::Put(m) => json!({"type": "put", "value": m}),
        Op::Delete => json!({"type": "delete"}),
        Op::Patch(fields) => {
            let mut o = serde_json::Map::new();
            for (k, f) in fields {
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
            json!({"type": "patch", "fields": o})
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

const BUNDLE_MAGIC: &[u8; 8] = b"IBEXBND1";

fn put_u32(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&(n as u32).to_le_bytes());
}

/// Bundle: magic, u32 commit count, each (32-byte id, u32 len, bytes), u32 seal count, each
/// (u32 len, bytes). Little-endian.
fn encode_bundle(commits: &[(CommitId, Vec<u8>)], seals: &[Vec<u8>]) -> Vec<u8> {
    let size: usize = commits.iter().map(|c| 36 + c.1.len()).sum::<usize>()
        + seals.iter().map(|s| 4 + s.len()).sum::<usize>();
    let mut out = Vec::with_capacity(16 + size);
    out.extend_from_slice(BUNDLE_MAGIC);
    put_u32(&mut out, commits.len());
    for (id, b) in commits {
        out.extend_from_slice(&id.0);
        put_u32(&mut out, b.len());
        out.extend_from_slice(b);
    }
    put_u32(&mut out, seals.len());
    for s in seals {
        put_u32(&mut out, s.len());
        out.extend_from_slice(s);
    }
    out
}

type Bundle = (Vec<(CommitId, Vec<u8>)>, Vec<Vec<u8>>);

fn decode_bundle(b: &[u8]) -> Result<Bundle, Error> {
    let bad = |reason: &str| Error::Decode {
        what: "commit bundle".into(),
        reason: reason.into(),
    };
    let mut pos = 0usize;
    let mut take = |n: usize| -> Result<&[u8], Error> {
        let end = pos
            .checked_add(n)
            .filter(|&e| e <= b.len())
            .ok_or_else(|| bad("truncated"))?;
        let s = &b[pos..end];
        pos = end;
        Ok(s)
    };
    if take(8)? != BUNDLE_MAGIC {
        return Err(bad("bad magic"));
    }
    let u32_at = |s: &[u8]| u32::from_le_bytes(s.try_into().unwrap()) as usize;
    let nc = u32_at(take(4)?);
    let mut commits = Vec::with_capacity(nc.min(1 << 16));
    for _ in 0..nc {
        let id = CommitId(take(32)?.try_into().unwrap());
        let len = u32_at(take(4)?);
        commits.push((id, take(len)?.to_vec()));
    }
    let ns = u32_at(take(4)?);
    let mut seals = Vec::with_capacity(ns.min(1 << 16));
    for _ in 0..ns {
        let len = u32_at(take(4)?);
        seals.push(take(len)?.to_vec());
    }
    if pos != b.len() {
        return Err(bad("trailing bytes"));
    }
    Ok((commits, seals))
}

#[wasm_bindgen]
impl Engine {
    /// Open (or create) a repository on two sync access handles (`snapshot` may be null).
    /// `options` is JSON: `{"trusted": bool, "acceptTrusted": bool, "recovery": "strict" |
    /// "repair", "quotaBytes": n, "maxClockSkewMs": n}`. `secret` is the 48-byte identity
    /// secret (required unless trusted).
    pub fn open(
        log: JsValue,
        snapshot: JsValue,
        options: &str,
        secret: Option<Vec<u8>>,
    ) -> JsResult<Engine> {
        Self::open_inner(log, snapshot, options, secret).js()
    }

    fn open_inner(
        log: JsValue,
        snapshot: JsValue,
        options: &str,
        secret: Option<Vec<u8>>,
    ) -> Result<Engine, Error> {
        let o = parse_json(options)?;
        let trusted = opt_bool(&o, "trusted")?.unwrap_or(false);
        let quota = opt_u64(&o, "quotaBytes")?.map(Quota::new);
        let identity = match (&secret, trusted) {
            (Some(s), false) => Some(Identity::from_secret_bytes(s)?),
            _ => None,
        };
        let mut opts = RepoOptions::new(identity, clock());
        opts.trusted = trusted;
        opts.accept_trusted = opt_bool(&o, "acceptTrusted")?.unwrap_or(trusted);
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
            out: RefCell::new(Vec::with_capacity(1024)),
            slot: Box::new([Cell::new(0), Cell::new(0)]),
        })
    }

    /// Derive an identity from 48 bytes of entropy; returns its 48-byte secret.
    #[wasm_bindgen(js_name = identityFromEntropy)]
    pub fn identity_from_entropy(entropy: &[u8]) -> JsResult<Vec<u8>> {
        let e: &[u8; 48] = entropy.try_into().map_err(|_| {
            to_js(&Error::InvalidValue {
                path: "entropy".into(),
                reason: "must be 48 bytes".into(),
            })
        })?;
        Ok(Identity::from_entropy(e).secret_bytes().to_vec())
    }

    /// The public key (hex) of a 48-byte identity secret.
    #[wasm_bindgen(js_name = publicKeyOf)]
    pub fn public_key_of(secret: &[u8]) -> JsResult<String> {
        Ok(Identity::from_secret_bytes(secret).js()?.public().to_hex())
    }

    fn repo(&self) -> JsResult<&Repo<OpfsStorage>> {
        self.repo.as_ref().ok_or_else(|| to_js(&Error::Closed))
    }

    pub(crate) fn repo_mut(&mut self) -> JsResult<&mut Repo<OpfsStorage>> {
        self.repo.as_mut().ok_or_else(|| to_js(&Error::Closed))
    }

    /// This repository's author key (hex); null in trusted mode.
    pub fn identity(&self) -> JsResult<Option<String>> {
        let r = self.repo()?;
        Ok(r.identity().map(|i| i.public().to_hex()))
    }

    /// The 48-byte identity secret; null in trusted mode.
    #[wasm_bindgen(js_name = identitySecret)]
    pub fn identity_secret(&self) -> JsResult<Option<Vec<u8>>> {
        Ok(self.repo()?.identity().map(|i| i.secret_bytes().to_vec()))
    }

    // ----- reads -----------------------------------------------------------------------

    /// The item at `key` as JSON, or undefined.
    pub fn get(&self, key: &str) -> JsResult<Option<String>> {
        let r = self.repo()?;
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
    /// exist, 1 when it does, 3 when it does and holds a set somewhere (so the caller knows
    /// whether `{"$set": [...]}` objects need reviving without scanning the text).
    #[wasm_bindgen(js_name = getInto)]
    pub fn get_into(&self, key: &str) -> JsResult<u32> {
        let r = self.repo()?;
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
        Ok(if crate::json::map_has_set(m) { 3 } else { 1 })
    }

    /// JSON array of items (null where missing) for a JSON array of keys.
    #[wasm_bindgen(js_name = getMany)]
    pub fn get_many(&self, keys: &str) -> JsResult<String> {
        let r = self.repo()?;
        let keys: Vec<String> =
            serde_json::from_str(keys).map_err(|e| to_js(&crate::json::bad_json(&e)))?;
        let mut items = Vec::with_capacity(keys.len());
        for k in &keys {
            items.push(r.get(k).js()?);
        }
        Ok(to_string(&items))
    }

    /// Rows `[[id, item], ...]` of a query (JSON).
    pub fn query(&self, q: &str) -> JsResult<String> {
        let r = self.repo()?;
        let q = query_of(q).js()?;
        let res = r.query_engine().run(r.state(), &q).js()?;
        Ok(to_string(&res.rows))
    }

    /// The plan a query would use (JSON).
    pub fn explain(&self, q: &str) -> JsResult<String> {
        let r = self.repo()?;
        let q = query_of(q).js()?;
        Ok(r.query_engine()
            .explain(r.state(), &q)
            .js()?
            .to_json()
            .to_string())
    }

    /// Number of items of `collection` matching `where` (a JSON where clause, or undefined).
    pub fn count(&self, collection: &str, r#where: Option<String>) -> JsResult<f64> {
        let r = self.repo()?;
        let n = match r#where {
            None => r.query_engine().count(r.state(), collection, None),
            Some(w) => {
                let q = json!({"collection": collection, "where": parse_json(&w).js()?});
                let q = Query::from_json(&q).js()?;
                r.query_engine()
                    .count(r.state(), collection, q.filter.as_ref())
            }
        }
        .js()?;
        Ok(n as f64)
    }

    /// The ids of `collection` in order (JSON array).
    pub fn keys(&self, collection: &str) -> JsResult<String> {
        let r = self.repo()?;
        Ok(to_string(&r.query_engine().keys(r.state(), collection)))
    }

    /// Run an aggregate query (JSON in, JSON out).
    pub fn aggregate(&self, q: &str) -> JsResult<String> {
        let r = self.repo()?;
        let q = AggregateQuery::from_json(&parse_json(q).js()?).js()?;
        Ok(r.query_engine().aggregate(r.state(), &q).js()?.to_string())
    }

    /// The commits that changed `key`, oldest first (JSON).
    pub fn history(&self, key: &str) -> JsResult<String> {
        let r = self.repo()?;
        Ok(history_json(&r.history(key).js()?).to_string())
    }

    // ----- writes ----------------------------------------------------------------------

    fn commit(&mut self, txn: Txn) -> JsResult<()> {
        self.repo_mut()?.commit(txn).js()?;
        Ok(())
    }

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

    /// Commit a transaction given as JSON ops (see `txn_ops`), atomically, as one commit.
    pub fn transact(&mut self, ops: &str) -> JsResult<()> {
        self.repo()?;
        let txn = txn_ops::build(txn_ops::parse(ops).js()?).js()?;
        self.commit(txn)
    }

    /// Declare a collection's schema (JSON; see `Schema::from_json`).
    #[wasm_bindgen(js_name = defineSchema)]
    pub fn define_schema(&mut self, collection: &str, schema: &str) -> JsResult<()> {
        let s = Schema::from_json(collection, &parse_json(schema).js()?).js()?;
        self.repo_mut()?.define_schema(collection, s).js()
    }

    // ----- live queries ----------------------------------------------------------------

    /// Start a live query: `{"id": n, "rows": [[id, item], ...]}`.
    pub fn subscribe(&mut self, q: &str) -> JsResult<String> {
        let q = query_of(q).js()?;
        let (qe, state) = self.repo_mut()?.query_engine_mut();
        let (id, rows) = qe.subscribe(state, q).js()?;
        Ok(format!("{{\"id\":{},\"rows\":{}}}", id.0, to_string(&rows)))
    }

    pub fn unsubscribe(&mut self, id: f64) -> JsResult<bool> {
        Ok(self
            .repo_mut()?
            .query_engine_mut()
            .0
            .unsubscribe(LiveId(id as u64)))
    }

    /// Changes of live queries since the last call, or undefined:
    /// `[[id, {"added": [[id, item, pos]], "removed": [id], "changed": [[id, item, pos]],
    /// "moved": [[id, from, to]]}], ...]`.
    #[wasm_bindgen(js_name = takeLiveChanges)]
    pub fn take_live_changes(&mut self) -> JsResult<Option<String>> {
        let changes = self.repo_mut()?.query_engine_mut().0.take_live_changes();
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

    // ----- durability ------------------------------------------------------------------

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

    /// Re-prove the repository (JSON report).
    pub fn verify(&mut self) -> JsResult<String> {
        let v = self.repo_mut()?.verify().js()?;
        Ok(json!({
            "commits": v.commits,
            "seals": v.seals,
            "signaturesVerified": v.signatures_verified,
            "trustedCommits": v.trusted_commits,
            "unsealed": v.unsealed,
            "items": v.items,
            "logBytes": v.log_bytes,
            "snapshotChecked": v.snapshot_checked,
        })
        .to_string())
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
            "items": r.state().len(),
            "pending": r.pending(),
            "open": {
                "fromSnapshot": rep.from_snapshot,
                "replayedFrames": rep.replayed_frames,
                "truncatedTail": rep.truncated_tail.map(|(a, b)| [a, b]),
                "repaired": rep.repaired.iter().map(|(a, b)| [*a, *b]).collect::<Vec<_>>(),
            },
        })
        .to_string())
    }

    // ----- exchange --------------------------------------------------------------------

    /// Every commit and seal as one bundle (for another peer's `receiveBundle`).
    #[wasm_bindgen(js_name = exportBundle)]
    pub fn export_bundle(&self) -> JsResult<Vec<u8>> {
        let (commits, seals) = self.repo()?.export().js()?;
        Ok(encode_bundle(&commits, &seals))
    }

    /// Verify and apply a bundle from another peer (JSON report). All or nothing.
    #[wasm_bindgen(js_name = receiveBundle)]
    pub fn receive_bundle(&mut self, bundle: &[u8]) -> JsResult<String> {
        let (commits, seals) = decode_bundle(bundle).js()?;
        let rep = self.repo_mut()?.receive(&commits, &seals).js()?;
        Ok(
            json!({"applied": rep.applied, "duplicates": rep.duplicates, "pending": rep.pending})
                .to_string(),
        )
    }

    /// Flush and release the files (the caller closes the handles). Idempotent.
    pub fn close(&mut self) -> JsResult<()> {
        if let Some(r) = self.repo.take() {
            r.close().js()?;
        }
        Ok(())
    }

    /// Test hook: panic inside the engine (the worker must survive and reopen).
    #[wasm_bindgen(js_name = panicForTest)]
    pub fn panic_for_test(&self, msg: &str) {
        panic!("{msg}");
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
