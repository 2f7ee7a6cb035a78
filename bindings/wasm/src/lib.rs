//! ibexdb's WebAssembly bindings: the engine that runs inside a dedicated Web Worker.
//!
//! Thin by design: [`Engine`] wraps one `ibexdb::Repo` over OPFS sync access handles
//! ([`opfs::OpfsStorage`]); values cross as JSON text ([`json`]); errors become JS `Error`s
//! with the core's stable names ([`error`]). Flushing, sealing, snapshots, batching and
//! multi-tab ownership are the worker's job (`www/lib/worker.js` + `www/lib/worker/`, `www/lib/engine.js`).
//!
//! The wasm32 target cannot unwind: a panic traps the instance. The panic hook installed at
//! start-up hands the message to `globalThis.__ibexdbPanic(message)` (if defined) before the
//! trap, so the worker can report a `PanicError` and reopen the engine in a fresh instance.

mod engine;
pub mod error;
pub mod json;
pub mod opfs;
pub mod sync;

pub use engine::Engine;

use wasm_bindgen::prelude::*;

/// Install the panic hook (runs once when the module is instantiated).
#[wasm_bindgen(start)]
pub fn start() {
    std::panic::set_hook(Box::new(|info| {
        let msg = info.to_string();
        let global = js_sys::global();
        if let Ok(f) = js_sys::Reflect::get(&global, &JsValue::from_str("__ibexdbPanic")) {
            if let Some(f) = f.dyn_ref::<js_sys::Function>() {
                let _ = f.call1(&JsValue::UNDEFINED, &JsValue::from_str(&msg));
            }
        }
    }));
}
