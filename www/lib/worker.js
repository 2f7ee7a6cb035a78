// The dedicated module worker behind one `open()` on the page (ibexdb.js). This module wires
// the worker's concerns together and speaks the page protocol; each concern is a module of its
// own under worker/, holding its own state:
//
//   worker/ownership.js    multi-tab ownership: Web Locks, the BroadcastChannel, owner / client
//   worker/batch.js        batches: apply op by op, group commit, panic recovery
//   worker/live.js         live queries: subscriptions, epochs, delivering changes
//   worker/maintenance.js  timers: relaxed flush, seal + flush + snapshot check (policy.js)
//   worker/sync.js         sync with an ibexdb-server over a WebSocket
//   worker/crypto.js       WebCrypto seal signatures on sync's critical path and in verify()
//   worker/verify.js       verify(): seal signatures by WebCrypto, every other check by the engine
//
// Page <-> worker protocol (one message per batch each way):
//   page -> worker  {type:'open', name, options, wasm?}       wasm: a WebAssembly.Module, null (load it here),
//                                                            or 'follows' (a `wasm` message brings it)
//                   {type:'wasm', module}                   the module the page compiled (null: load it here)
//                   {type:'batch', durability, ops: [[seq, op, ...args], ...]}
//                   {type:'hide'}                         (pagehide: flush now, best effort)
//                   {type:'close'}
//                   {type:'verify-port', port}              verify()'s helper thread (a MessagePort, or null)
//                   {type:'verify-failed'}                  that helper thread failed to start
//                   {type:'token', id, token?, error?}      the page's answer to a token ask
//   worker -> page  {type:'opened', publicKey, trusted, role, sync} | {type:'open-failed', error}
//                   {type:'results', results: [[seq, ok, payload], ...], live?}
//                   {type:'live', epoch, changes?, resets?}   live-query updates
//                   {type:'role', role}                      this tab took over ownership
//                   {type:'sync-status', status}             sync's state, URL or last error changed
//                   {type:'received'}                        sync applied commits from a server
//                   {type:'background-error', error}         a relaxed flush / seal failed
//                   {type:'closed', error?}
//                   {type:'verify-thread'}                   start verify()'s helper thread, send its port
//                   {type:'token', id}                       sync is about to dial: the app's bearer token,
//                                                            please (open()'s syncToken; sync-token.js)
// Values, queries and results travel as JSON text (codec.js); a result holding bytes values as
// `{json, bytes}` (codec.js EngineText), its Uint8Arrays' buffers transferred; errors as
// {name, message, ...}.
//
// One promise chain (`run`) serializes all work on the engine: batches, timers, sync messages,
// recovery and takeover.

import { transferables } from './codec.js';
import { ClosedError, fromWire, toWire } from './errors.js';
import { TOKEN_TIMEOUT_MS, checkToken, unavailable } from './sync-token.js';
import { provideWasmModule } from './engine.js';
import { Batches } from './worker/batch.js';
import { LiveQueries } from './worker/live.js';
import { Maintenance } from './worker/maintenance.js';
import { Ownership } from './worker/ownership.js';
import { SyncManager } from './worker/sync.js';
import { localAttachments } from './worker/attach-ops.js';

/** @typedef {import('./errors.js').WireError} WireError */
/** One op of a batch: `[seq, op, ...args]`. @typedef {[number, string, ...any[]]} Op */
/** One op's answer: `[seq, 1, payload]` or `[seq, 0, error]`. @typedef {[number, 0 | 1, unknown]} Result */

/**
 * The `open` message from the page.
 * @typedef {object} OpenMessage
 * @property {string} name
 * @property {WorkerOptions} [options]
 * @property {WebAssembly.Module | null | 'follows'} [wasm] the engine's wasm, compiled by the page ('follows': in a `wasm` message)
 */

/**
 * What open() passes on to the worker (the engine's options plus schemas to declare, and
 * whether the page has a `syncToken` to ask for before each dial).
 * @typedef {import('./engine.js').EngineOptions & {syncToken?: boolean}} WorkerOptions
 */

/**
 * What the concerns share: this worker's id, the repository, the engine (when this worker
 * owns the files), the work chain and the way to the page. Each concern keeps its own state.
 * @typedef {object} Runtime
 * @property {string} id this worker (its client lock and live-query epochs are named after it)
 * @property {string} name the repository
 * @property {WorkerOptions} options
 * @property {import('./engine.js').EngineHandle | null} engine the engine, once this worker owns the files
 * @property {() => import('./engine.js').EngineHandle} owned the engine (throws ClosedError without one)
 * @property {<T>(f: () => T | Promise<T>) => Promise<T>} run run `f` on the work chain, after all work queued before
 * @property {(msg: object) => void} post send to this worker's page
 * @property {(msg: object) => void} broadcast send to the other tabs' workers
 * @property {() => boolean} isOwner whether this worker owns the files now
 * @property {string[] | null} syncUrl the sync servers the repository syncs with (as the owner last reported them):
 *   a worker that takes over ownership resumes sync with it
 */

/** @type {Promise<unknown>} */
let chain = Promise.resolve();

/** @type {Runtime} */
const rt = {
  id: crypto.randomUUID(),
  name: '',
  options: {},
  engine: null,
  owned() {
    if (!this.engine) throw new ClosedError(`repository ${this.name} is not open in this worker`);
    return this.engine;
  },
  run(f) {
    const p = chain.then(f);
    chain = p.catch(() => {});
    return p;
  },
  // Bytes in results and live changes are transferred to the page, not copied (codec.js).
  post: (msg) => self.postMessage(msg, { transfer: transferables(msg) }),
  broadcast: (msg) => ownership.broadcast(msg),
  isOwner: () => ownership.role === 'owner',
  syncUrl: null,
};

/** Reopen the engine from OPFS after a panic (or a failed flush); re-create its live queries. */
async function recover() {
  maintenance.cancel();
  await rt.owned().recover();
  live.renew();
}

/** @type {Map<number, {resolve: (t: string) => void, reject: (e: unknown) => void, timer: ReturnType<typeof setTimeout>}>} token asks waiting for the page */
const tokenAsks = new Map();
let tokenSeq = 0;

/**
 * Ask the page for the app's bearer token (it calls open()'s `syncToken`), before a dial. The
 * answer is handed to that dial only; nothing here keeps it.
 * @returns {Promise<string>}
 */
function askToken() {
  return new Promise((resolve, reject) => {
    const id = ++tokenSeq;
    // The page's own timeout answers first; this one covers a page that is gone or frozen.
    const timer = setTimeout(() => {
      tokenAsks.delete(id);
      reject(unavailable(`the page did not answer the token request within ${TOKEN_TIMEOUT_MS + 2000} ms`));
    }, TOKEN_TIMEOUT_MS + 2000);
    tokenAsks.set(id, { resolve, reject, timer });
    rt.post({ type: 'token', id });
  });
}

/** The page's answer to token ask `m.id`. @param {{id: number, token?: unknown, error?: any}} m */
function tokenAnswer(m) {
  const ask = tokenAsks.get(m.id);
  if (!ask) return;
  tokenAsks.delete(m.id);
  clearTimeout(ask.timer);
  if (m.error) ask.reject(fromWire(m.error));
  else {
    try {
      ask.resolve(checkToken(m.token));
    } catch (e) {
      ask.reject(e);
    }
  }
}

const live = new LiveQueries(rt);
const maintenance = new Maintenance(rt, { recover });
const sync = new SyncManager({
  get name() {
    return rt.name;
  },
  engine: () => rt.engine,
  run: (f) => rt.run(f),
  afterReceive: () => {
    maintenance.schedule();
    live.deliver(live.take());
    // The page's schema upgrader checks versions and migrates what arrived (schema-upgrade.js).
    rt.post({ type: 'received' });
  },
  afterPush: () => maintenance.schedule(),
  localAttachments: () => localAttachments(rt.engine),
  // open()'s syncToken lives on the page: asked for before every dial.
  get token() {
    return rt.options.syncToken ? askToken : undefined;
  },
  onStatus: (status) => {
    rt.syncUrl = status.urls;
    rt.post({ type: 'sync-status', status });
    rt.broadcast({ type: 'sync-status', status });
  },
});
const batches = new Batches(rt, { live, sync, maintenance, recover });
const ownership = new Ownership(rt, { live, batches, sync });

/** Stop the timers and sync (saving its position; other tabs keep its URL), then close the engine or leave the owner. */
async function close() {
  if (ownership.closed) return undefined;
  maintenance.cancel();
  await sync.stop({ quiet: true }).catch(() => {});
  return ownership.close();
}

self.onmessage = (ev) => {
  const m = ev.data;
  switch (m?.type) {
    case 'open':
      rt.run(() => ownership.open(m)).then(
        (info) => rt.post({ type: 'opened', ...info }),
        (e) => rt.post({ type: 'open-failed', error: toWire(e) }),
      );
      break;
    case 'wasm':
      provideWasmModule(m.module ?? null);
      break;
    case 'batch':
      rt.run(() => ownership.pageBatch(m.ops, m.durability));
      break;
    case 'close':
      rt.run(close).then((error) => rt.post({ type: 'closed', error }));
      break;
    case 'hide':
      if (rt.isOwner()) {
        rt.run(() => maintenance.flushNow());
        rt.run(() => sync.saveNow()).catch(() => {});
      }
      break;
    case 'verify-port':
      batches.crypto?.helperPort(m.port ?? null);
      break;
    case 'verify-failed':
      batches.crypto?.helperFailed();
      break;
    case 'token':
      tokenAnswer(m);
      break;
    default:
  }
};
