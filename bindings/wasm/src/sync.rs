//! Sync for the worker: the core's `sync::Client` driven from JS, which owns the WebSocket
//! (`www/lib/worker/sync.js`). Messages cross as `Uint8Array` (the protocol bytes of design §12), events as
//! JSON text. The client lives in the `Engine` (one per repository); after a panic the worker
//! gets a fresh engine and calls `syncStart` again from its last durable position.

use crate::engine::{seal_check_js, Engine};
use crate::error::{IntoJs, JsResult};
use ibexdb::{Client, ClientEvent, Message, Seal, SealCheck};
use js_sys::Array;
use serde_json::json;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
impl Engine {
    /// Create the sync state for repository `name` on the server at `url` (as dialed: it is
    /// bound into the session proof), resuming after server sequence `cursor`, with the first
    /// `push_from` commit-table entries known to the server.
    #[wasm_bindgen(js_name = syncStart)]
    pub fn sync_start(
        &mut self,
        name: &str,
        url: &str,
        cursor: f64,
        push_from: f64,
    ) -> JsResult<()> {
        let client = Client::new(name, url, cursor as u64, push_from as usize).js()?;
        *self.sync_slot() = Some(client);
        Ok(())
    }

    /// A new connection: nothing is sent until the server's challenge arrives.
    #[wasm_bindgen(js_name = syncConnect)]
    pub fn sync_connect(&mut self) -> JsResult<()> {
        self.repo_and_sync()?.1.connect();
        Ok(())
    }

    /// Sync with the server at `url` from the next connection on (its proof names it), keeping
    /// the cursor and the push position: the nodes of one deployment share sequence numbers
    /// (docs/design.md §12.5), so the worker moves along its URL list without starting over.
    #[wasm_bindgen(js_name = syncSetUrl)]
    pub fn sync_set_url(&mut self, url: &str) -> JsResult<()> {
        self.repo_and_sync()?.1.set_url(url);
        Ok(())
    }

    /// The seals of a server message, for the worker to verify with WebCrypto before
    /// `syncHandle(bytes, true)`: `[authorKey (49 bytes, compressed), message, signature (96
    /// bytes, r ‖ s)]` per seal (ECDSA P-384 with SHA-384). Empty for a message without seals;
    /// undefined when a seal does not decode (then `syncHandle(bytes, false)` reports it).
    #[wasm_bindgen(js_name = syncSealChecks)]
    pub fn sync_seal_checks(bytes: &[u8]) -> Option<Array> {
        let Ok(Message::Commits { seals, .. }) = Message::decode(bytes) else {
            return Some(Array::new());
        };
        let out = Array::new();
        for b in &seals {
            let seal = Seal::decode(b).ok()?;
            out.push(&seal_check_js(&SealCheck::of(&seal)));
        }
        Some(out)
    }

    /// Handle one message from the server; received commits are verified and applied (live
    /// queries see them; the worker flushes like any write). Returns the event as JSON:
    /// `{event: 'challenge'|'welcome'|'received'|'acked'|'error', ..., cursor, pushFrom,
    /// pending, refused}`; an `error` carries the server's `code`, `name`, `kind` (or null) and
    /// `message`. After `challenge`, `syncOutgoing` returns the signed `Hello`.
    #[wasm_bindgen(js_name = syncHandle)]
    /// `vouched`: the worker verified the signature of every seal in the message itself
    /// (`syncSealChecks`, WebCrypto); the core then skips only those signature checks.
    pub fn sync_handle(&mut self, bytes: &[u8], vouched: bool) -> JsResult<String> {
        let msg = Message::decode(bytes).js()?;
        let (repo, c) = self.repo_and_sync()?;
        {
            let event = if vouched {
                c.handle_vouched(repo, msg)
            } else {
                c.handle(repo, msg)
            };
            let ev = match event.js()? {
                ClientEvent::Challenged { server_time_ms } => {
                    json!({"event": "challenge", "serverTimeMs": server_time_ms})
                }
                ClientEvent::Welcome { head, rights } => json!({"event": "welcome", "head": head,
                    "rights": {"read": rights.read, "write": rights.write, "administer": rights.administer}}),
                ClientEvent::Received {
                    applied,
                    duplicates,
                    ..
                } => json!({"event": "received", "applied": applied, "duplicates": duplicates}),
                ClientEvent::Acked { count } => json!({"event": "acked", "count": count}),
                ClientEvent::ServerError {
                    code,
                    name,
                    kind,
                    message,
                } => {
                    json!({"event": "error", "code": code as u32, "name": name, "kind": kind,
                        "message": message})
                }
            };
            let mut ev = ev;
            ev["cursor"] = json!(c.cursor());
            ev["pushFrom"] = json!(c.push_from());
            ev["pending"] = json!(repo.commit_count().saturating_sub(c.push_from()));
            ev["refused"] = json!(c.refused());
            Ok(ev.to_string())
        }
    }

    /// Local commit-table entries not yet known to the server (0 once everything local was
    /// acknowledged or came from the server).
    #[wasm_bindgen(js_name = syncPending)]
    pub fn sync_pending(&self) -> JsResult<f64> {
        let count = self.repo()?.commit_count();
        Ok(count.saturating_sub(self.sync_client()?.push_from()) as f64)
    }

    /// The next `Push` (local commits the server lacks, sealed first), or undefined.
    #[wasm_bindgen(js_name = syncOutgoing)]
    pub fn sync_outgoing(&mut self) -> JsResult<Option<Vec<u8>>> {
        let (repo, c) = self.repo_and_sync()?;
        Ok(c.outgoing(repo).js()?.map(|m| m.encode()))
    }
}
