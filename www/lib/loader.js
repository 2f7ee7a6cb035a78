// How ibexdb gets going on a page: whether the page can run it at all, the engine's wasm
// (fetched and compiled once, on the page or in the worker) and the worker itself. The module
// may be served by the page's own origin or by another one (a CDN); a worker's script must be
// same-origin, so from another origin the worker starts from a blob: URL that imports the real
// worker module by its absolute URL (which, like the wasm, must then be served with CORS).
//
// Where ibexdb cannot work, the failure is a StorageUnavailableError whose `kind` names the
// reason and whose message says what to do (docs/design.md §15.2, §15.3):
//
//   insecure-context  the page is not https:// (or http://localhost)
//   opaque-origin     a sandboxed iframe without allow-same-origin, a data: URL
//   no-opfs           storage 'opfs' and the browser has no OPFS (storage.js adds storage-denied, opfs,
//                     no-sync-handles, no-indexeddb, storage-mismatch)
//   no-storage        storage 'auto' and the browser has neither OPFS nor IndexedDB
//   no-worker, no-locks
//   csp               the Content-Security-Policy forbids the wasm or the worker
//   wasm-load         the wasm cannot be fetched or compiled (404, CORS)
//   worker-load       the worker module cannot be loaded (404, CORS, MIME type)
//
// Nothing here runs at import time; the page side (checkEnvironment, startWorker, workerFailure)
// uses `document` and `location` only when called.

import { StorageUnavailableError } from './errors.js';

/** The worker module, relative to this one. (Bundlers find it through the literal `new Worker(new URL('./worker.js', import.meta.url))` in startWorker.) */
const WORKER_FILE = './worker.js';

/** @param {string} message @param {string} kind */
const unavailable = (message, kind) => new StorageUnavailableError(message, { kind });

/** @param {unknown} e */
const describe = (e) => (e instanceof Error ? `${e.name}: ${e.message}` : String(e));

/**
 * Throw StorageUnavailableError when this page cannot run ibexdb with `storage` (open()'s option).
 * @param {'auto' | 'opfs' | 'indexeddb' | 'memory'} [storage]
 */
export function checkEnvironment(storage = 'auto') {
  if (typeof self !== 'undefined' && self.origin === 'null') {
    throw unavailable(
      'ibexdb needs a page with an origin of its own: this one has an opaque origin (a sandboxed iframe without allow-same-origin, or a data: URL), which has no storage. Load it from a normal https:// page, or add allow-same-origin to the iframe\'s sandbox',
      'opaque-origin',
    );
  }
  if (globalThis.isSecureContext === false) {
    const where = typeof location === 'undefined' ? 'this page' : `${location.protocol}//${location.host}`;
    throw unavailable(
      `ibexdb needs a secure context, and ${where} is not one (the browser hides OPFS and Web Locks there): serve the page over https://, or from http://localhost or http://127.0.0.1 while developing`,
      'insecure-context',
    );
  }
  const opfs = typeof navigator !== 'undefined' && !!navigator.storage && typeof navigator.storage.getDirectory === 'function';
  const idb = typeof indexedDB !== 'undefined' && indexedDB !== null;
  if (storage === 'indexeddb' && !idb) throw unavailable('this browser has no IndexedDB (storage: \'indexeddb\'): use storage \'auto\'', 'no-indexeddb');
  if (storage === 'auto' && !opfs && !idb) {
    throw unavailable('this browser keeps no files for ibexdb: it has neither the Origin Private File System nor IndexedDB (storage: \'memory\' runs without keeping data)', 'no-storage');
  }
  if (storage === 'opfs' && !opfs) {
    throw unavailable(
      'this browser has no Origin Private File System (navigator.storage.getDirectory), where ibexdb keeps its files: use a current Chrome, Edge, Firefox or Safari',
      'no-opfs',
    );
  }
  if (typeof Worker === 'undefined') throw unavailable('this browser has no Web Workers, which ibexdb runs its engine in', 'no-worker');
  if (!navigator.locks) throw unavailable('this browser has no Web Locks (navigator.locks), which ibexdb coordinates tabs with: use a current Chrome, Edge, Firefox or Safari', 'no-locks');
}

/**
 * Fetch and compile the engine's wasm. Uses streaming compilation when the server sends
 * `application/wasm`, and compiles the bytes otherwise (a plain static server that does not know
 * the type). Failures become StorageUnavailableError (`wasm-load`, or `csp`).
 * @param {URL} url
 * @returns {Promise<WebAssembly.Module>}
 */
export async function compileWasm(url) {
  const crossOrigin = typeof self !== 'undefined' && url.origin !== self.origin;
  let res;
  try {
    res = await fetch(url);
  } catch (e) {
    throw unavailable(
      `cannot fetch ibexdb's engine (${url}): ${describe(e)}. ` +
        (crossOrigin ? 'It comes from another origin: that server must send Access-Control-Allow-Origin, and ' : '') +
        "the page's Content-Security-Policy must allow it in connect-src",
      'wasm-load',
    );
  }
  if (!res.ok) {
    throw unavailable(`cannot fetch ibexdb's engine (${url}): HTTP ${res.status}. Deploy the package's wasm/ folder next to ibexdb.js`, 'wasm-load');
  }
  try {
    const type = (res.headers.get('Content-Type') ?? '').split(';')[0].trim().toLowerCase();
    if (type === 'application/wasm') return await WebAssembly.compileStreaming(res);
    return await WebAssembly.compile(await res.arrayBuffer());
  } catch (e) {
    if (/Content.Security.Policy|wasm-eval|unsafe-eval/i.test(describe(e))) {
      throw unavailable(
        `the Content-Security-Policy forbids WebAssembly, and ibexdb's engine is WebAssembly: add 'wasm-unsafe-eval' to script-src (${describe(e)})`,
        'csp',
      );
    }
    throw unavailable(`ibexdb's engine (${url}) does not compile: ${describe(e)}`, 'wasm-load');
  }
}

/** @returns {boolean} whether this module is served by the page's own origin */
function sameOrigin() {
  return new URL(import.meta.url).origin === self.origin;
}

/**
 * The source of the blob: worker that starts the worker module `href` from another origin. It
 * imports it dynamically: a module worker's static imports count as worker scripts (CSP
 * `worker-src`), a dynamic import as a script (`script-src`, where a site lists its CDN). Messages
 * that arrive while the module loads are kept and delivered to it afterwards; a failed import is
 * reported as `{type: 'boot-failed', message}`.
 * @param {string} href
 */
const bootstrapSource = (href) => `const early = [];
self.onmessage = (e) => early.push(e);
import(${JSON.stringify(href)}).then(
  () => { for (const e of early) self.dispatchEvent(new MessageEvent('message', { data: e.data })); },
  (e) => { self.onmessage = null; self.postMessage({ type: 'boot-failed', message: String(e && e.message || e) }); },
);
`;

/**
 * Start the worker of repository `name`: from this module's folder when it is same-origin,
 * else from a blob: URL that imports the worker module by its absolute URL. `started()` is to be
 * called once the worker has answered (the bootstrap URL is then released).
 * @param {string} name
 * @returns {{worker: Worker, href: string, crossOrigin: boolean, started: () => void}}
 */
export function startWorker(name) {
  const href = new URL(WORKER_FILE, import.meta.url).href;
  if (sameOrigin()) {
    const worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module', name: `ibexdb:${name}` });
    return { worker, href, crossOrigin: false, started: () => {} };
  }
  const boot = URL.createObjectURL(new Blob([bootstrapSource(href)], { type: 'text/javascript' }));
  const worker = new Worker(boot, { type: 'module', name: `ibexdb:${name}` });
  return { worker, href, crossOrigin: true, started: () => URL.revokeObjectURL(boot) };
}

/**
 * Start the helper thread that verifies seal signatures for verify() (./worker/verify-thread.js),
 * from the page: the database worker gets a MessagePort to it (a worker started inside a worker
 * sometimes never starts in Firefox, and the database worker would wait on it frozen). Like
 * startWorker, from a blob: URL when this module is served by another origin. Null where it
 * cannot start (the database worker then verifies on its own thread). `stop()` ends it.
 * @returns {{worker: Worker, stop: () => void} | null}
 */
export function startVerifyThread() {
  if (typeof Worker !== 'function') return null;
  try {
    if (sameOrigin()) {
      const worker = new Worker(new URL('./worker/verify-thread.js', import.meta.url), { type: 'module', name: 'ibexdb:verify' });
      return { worker, stop: () => worker.terminate() };
    }
    const boot = URL.createObjectURL(new Blob([bootstrapSource(new URL('./worker/verify-thread.js', import.meta.url).href)], { type: 'text/javascript' }));
    const worker = new Worker(boot, { type: 'module', name: 'ibexdb:verify' });
    return {
      worker,
      stop: () => {
        worker.terminate();
        URL.revokeObjectURL(boot);
      },
    };
  } catch {
    return null;
  }
}

/**
 * Content-Security-Policy violations reported to this document from now on (the worker's
 * creation is checked against the page's policy; the violation names the directive).
 * @returns {{violations: SecurityPolicyViolationEvent[], stop: () => void}}
 */
export function watchViolations() {
  /** @type {SecurityPolicyViolationEvent[]} */
  const violations = [];
  if (typeof document === 'undefined') return { violations, stop: () => {} };
  /** @param {SecurityPolicyViolationEvent} ev */
  const onViolation = (ev) => violations.push(ev);
  document.addEventListener('securitypolicyviolation', onViolation);
  return { violations, stop: () => document.removeEventListener('securitypolicyviolation', onViolation) };
}

/**
 * Why the worker did not start (its `error` event carries no reason when its script did not
 * load): a CSP violation, or what fetching the worker module shows.
 * @param {{href: string, crossOrigin: boolean}} started what startWorker returned
 * @param {SecurityPolicyViolationEvent[]} violations reported since the worker was created
 * @param {string} [reason] what the worker said, if anything
 * @returns {Promise<StorageUnavailableError>}
 */
export async function workerFailure({ href, crossOrigin }, violations, reason) {
  await new Promise((r) => setTimeout(r, 0)); // violation events are queued as tasks
  const v = violations.find((ev) => ev.effectiveDirective === 'worker-src' || ev.effectiveDirective === 'script-src' || ev.effectiveDirective === 'child-src');
  if (v) {
    const allow = crossOrigin
      ? 'blob: (loaded from another origin, ibexdb starts its worker from a blob: URL)'
      : `'self' (the worker is ${href})`;
    return unavailable(
      `the Content-Security-Policy blocked ibexdb's worker (${v.effectiveDirective} does not allow ${v.blockedURI || 'it'}): add ${allow} to worker-src`,
      'csp',
    );
  }
  const cors = crossOrigin ? ' It comes from another origin: that server must send Access-Control-Allow-Origin.' : '';
  let res;
  try {
    res = await fetch(href);
  } catch (e) {
    return unavailable(`cannot load ibexdb's worker (${href}): ${describe(e)}.${cors}`, 'worker-load');
  }
  if (!res.ok) return unavailable(`cannot load ibexdb's worker (${href}): HTTP ${res.status}. Deploy worker.js and worker/ next to ibexdb.js`, 'worker-load');
  const type = res.headers.get('Content-Type') ?? '';
  if (!/javascript|ecmascript/i.test(type)) {
    return unavailable(`cannot load ibexdb's worker (${href}): it is served as ${JSON.stringify(type)}; modules need a JavaScript MIME type (text/javascript)`, 'worker-load');
  }
  return unavailable(
    `ibexdb's worker (${href}) did not start${reason ? ` (${reason})` : "; the browser's console has the cause"}.` +
      (crossOrigin ? ` A blob: worker inherits the page's Content-Security-Policy: its script-src must allow ${new URL(href).origin}, and its connect-src the wasm.${cors}` : ''),
    'worker-load',
  );
}

/** Whether the origin's storage is persistent (`navigator.storage.persisted()`; false where it cannot say). @returns {Promise<boolean>} */
export async function persistedNow() {
  try {
    return navigator.storage.persisted ? (await navigator.storage.persisted()) === true : false;
  } catch {
    return false;
  }
}

/** `navigator.storage.persist()` (may wait for the user's answer to a prompt); false where it fails. @returns {Promise<boolean>} */
export async function askPersist() {
  try {
    return navigator.storage.persist ? (await navigator.storage.persist()) === true : false;
  } catch {
    return false;
  }
}
