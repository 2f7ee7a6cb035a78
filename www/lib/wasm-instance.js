// The engine's wasm instances in a worker: the compiled module (shared by every instance), the
// first instance, fresh ones after a panic, and telling a trap from an error.
//
// A Rust panic aborts the instance it happened in (a trap: `unreachable`), and wasm-bindgen's
// objects of that instance are unusable afterwards; the bindings' panic hook hands the panic's
// message to `__ibexdbPanic` first. EngineHandle (engine.js) then marks itself dead and, on
// `recover()`, opens the repository again in a fresh instance made here from the same module.

import * as glue0 from '../../pkg/ibexdb.js';
import { PanicError, fromWire } from './errors.js';
import { compileWasm } from './loader.js';
import { WASM_URL } from './policy.js';

/**
 * The wasm-bindgen glue next to the wasm (statically imported above for the first instance; a
 * fresh instance after a panic imports it again by this URL). Written as a literal relative to
 * this module so that bundlers emit the glue as a file of its own and rewrite the URL.
 */
const PKG_JS = new URL('../../pkg/ibexdb.js', import.meta.url);

/** The wasm-bindgen glue module (pkg/ibexdb.js): one wasm instance per imported copy. @typedef {typeof glue0} Glue */
/** @typedef {{glue: Glue, memory: WebAssembly.Memory}} Instance */

/** @type {Promise<WebAssembly.Module> | null} the compiled wasm, shared by every instance */
let compiled = null;
/** @type {Promise<Instance> | null} the first instance */
let first = null;
/** Fresh instances made so far (each imports the glue under its own URL). */
let freshInstances = 0;
/** @type {string | null} the message of the last panic (from the bindings' panic hook) */
let lastPanic = null;
/** @type {any} */ (globalThis).__ibexdbPanic = (/** @type {unknown} */ msg) => {
  lastPanic = String(msg);
};

/** @type {((module: WebAssembly.Module | null) => void) | null} hands `compiled` the module the page is still compiling */
let fromPage = null;
/** Whether the page's `wasm` message came already (it may come before the open gets to `expectWasmModule`). */
let pageAnswered = false;

/**
 * The page is compiling the wasm and will send the module (`provideWasmModule`): the instance
 * waits for it instead of fetching and compiling here, and everything before it (the files, the
 * lock) runs meanwhile. When the page sends null (it could not compile, or not clone the module
 * to this worker), this worker fetches and compiles the wasm itself.
 */
export function expectWasmModule() {
  // Answered already: with a module (in use), or with null (the first instance compiles here).
  if (compiled !== null || fromPage !== null || pageAnswered) return;
  compiled = new Promise((/** @type {(m: WebAssembly.Module | null) => void} */ resolve) => (fromPage = resolve))
    .then((m) => m ?? compileWasm(WASM_URL))
    .catch((e) => {
      compiled = null;
      throw e;
    });
}

/**
 * Use a `WebAssembly.Module` compiled elsewhere (the page compiles it once and sends it to every
 * worker it starts, so a worker neither fetches nor compiles). Ignored once a module is in use;
 * null answers `expectWasmModule` with "compile it here".
 * @param {WebAssembly.Module | null} module
 */
export function provideWasmModule(module) {
  const ok = module instanceof WebAssembly.Module;
  pageAnswered = true;
  if (fromPage !== null) {
    const resolve = fromPage;
    fromPage = null;
    resolve(ok ? module : null);
  } else if (compiled === null && ok) compiled = Promise.resolve(module);
}

/**
 * Start fetching, compiling and instantiating the wasm now (e.g. while a lock is awaited);
 * the next open uses it. Errors surface at that open.
 */
export function preloadWasm() {
  loadWasm(false).catch(() => {});
}

/**
 * A wasm instance. `fresh` forces a new one (after a trap the old one is unusable): the glue
 * module is imported again under a new URL so that it holds a new instance, compiled from the
 * same WebAssembly.Module.
 * @param {boolean} fresh
 * @returns {Promise<Instance>}
 */
export function loadWasm(fresh) {
  if (fresh) freshInstances++;
  if (freshInstances === 0 && first) return first;
  compiled ??= compileWasm(WASM_URL).catch((e) => {
    compiled = null;
    throw e;
  });
  const p = instantiate(freshInstances === 0 ? PKG_JS.href : `${PKG_JS.href}?instance=${freshInstances}`);
  if (freshInstances === 0) {
    first = p;
    p.catch(() => {
      first = null;
    });
  }
  return p;
}

/**
 * @param {string} url the glue module (one instance per URL)
 * @returns {Promise<Instance>}
 */
async function instantiate(url) {
  // The first instance uses the statically imported glue (fetched with this module).
  /** @type {Glue} */
  const glue =
    url === PKG_JS.href
      ? glue0
      : await import(url).catch((e) => {
          throw new PanicError(`the engine panicked and cannot be restarted: a fresh copy of its glue (${url}) did not load (${e?.message ?? e}); reopen the database`);
        });
  const exports = await glue.default({ module_or_path: await compiled });
  return { glue, memory: /** @type {WebAssembly.Memory} */ (exports.memory) };
}

/**
 * Whether a value thrown by the glue is a trap (the instance is dead) rather than an error the
 * engine returned.
 * @param {unknown} e
 */
export function isTrap(e) {
  return e instanceof WebAssembly.RuntimeError || (e instanceof Error && e.name === 'Error' && /recursive use of an object|unreachable/.test(e.message));
}

/**
 * The PanicError for a trap, with the panic's message when the hook caught one.
 * @param {unknown} e the trap
 * @returns {PanicError}
 */
export function panicError(e) {
  const msg = lastPanic ?? String(/** @type {any} */ (e)?.message ?? e);
  lastPanic = null;
  return new PanicError(`the engine panicked: ${msg}`);
}

/**
 * An error the engine returned, as its IbexError subclass (the bindings throw JS `Error`s whose
 * `name` is the core's stable name); anything else as it is.
 * @param {any} e
 * @returns {unknown}
 */
export function engineError(e) {
  if (e && typeof e === 'object' && typeof e.name === 'string' && e.name.endsWith('Error') && e.name !== 'Error') {
    return fromWire(/** @type {any} */ ({ ...e, name: e.name, message: e.message }));
  }
  return e;
}
