// The dedicated module worker behind one `open()` on the page (ibexdb.js).
//
// Page <-> worker protocol (one message per batch each way):
//   page -> worker  {type:'open', name, options}
//                   {type:'batch', durability, ops: [[seq, op, ...args], ...]}
//                   {type:'hide'}                         (pagehide: flush now, best effort)
//   worker -> page  {type:'opened', identity, trusted, role} | {type:'open-failed', error}
//                   {type:'results', results: [[seq, ok, payload], ...], live?}
//                   {type:'live', epoch, changes?, resets?}   live-query updates
//                   {type:'role', role}                      this tab took over ownership
//                   {type:'background-error', error}         a relaxed flush / seal failed
// Values, queries and results travel as JSON text (codec.js); errors as {name, message, ...}.
//
// Ownership across tabs: OPFS sync access handles are exclusive, so per repository name one
// worker holds the Web Lock `ibexdb:<name>` and owns the files (the "owner"). Workers of other
// tabs are "clients": they forward batches over BroadcastChannel `ibexdb:<name>` and wait for
// the lock; when the owner goes away the lock passes to one of them, which opens the files
// and announces itself; the others re-attach and re-send unanswered requests (writes are
// idempotent: put/update/delete/set edits re-applied give the same state).
//
// Durability (owner): with 'flush' the whole batch is applied, then flushed once (group
// commit), then answered. With 'relaxed' the answer goes out after applying; a timer flushes
// within RELAXED_FLUSH_MS. Sealing (one P-384 signature over all unsealed commits) runs on a
// timer SEAL_DELAY_MS after a write, off the critical path, and its frame is flushed too; a
// snapshot is written from the same timer when one is due and on close. The schedule, its
// delays and the snapshot rule are policy.js's; this worker only sets the timers.

import { openEngine, preloadWasm, provideWasmModule } from './engine.js';
import { ClosedError, PanicError, StorageUnavailableError, toWire } from './errors.js';
import {
  ATTACH_TIMEOUT_MS, MAINTENANCE_RETRY_MS, armMaintenance, channelName, checkName, clientLockName, idleMaintenance,
  nextDeadline, ownerLockName, runMaintenance,
} from './policy.js';
import { checkStorage } from './storage.js';
import { SyncManager } from './sync.js';

const WRITES = new Set(['put', 'update', 'delete', 'txn', 'receive']);

const myId = crypto.randomUUID();
let repoName = '';
/** @type {any} */
let options = {};
/** @type {'opening'|'owner'|'client'|'closing'|'closed'} */
let role = 'opening';
/** @type {import('./engine.js').EngineHandle | null} */
let engine = null;
/** @type {BroadcastChannel | null} */
let channel = null;
let epoch = '';
let epochGen = 0;
let closed = false;
/** Resolves to release the locks this worker holds. */
let releaseLocks = () => {};
const lockAbort = new AbortController();

/** Serializes all work on the engine (batches, timers, recovery, takeover). */
let chain = Promise.resolve();
function enqueue(f) {
  const p = chain.then(f);
  chain = p.catch(() => {});
  return p;
}

/** This page's live queries: subId -> query JSON (re-subscribed after recovery / takeover). */
const localSubs = new Map();
/** This page's schemas: collection -> schema JSON (sent to a new owner on attach). */
const localSchemas = new Map();

// ----- owner state -------------------------------------------------------------------------

/** `${origin}|${subId}` -> {origin, subId, q, liveId}; origin is 'local' or a client id. */
const subs = new Map();
let remoteSubs = 0;
/** Clients whose departure (their lock freed) is being watched. */
const watched = new Set();

// ----- client state ------------------------------------------------------------------------

let nextRid = 1;
/** rid -> {durability, ops} sent to the owner, not answered yet. */
const pending = new Map();
let attachResolve = null;

/**
 * The background work of policy.js (relaxed flush, seal + flush + snapshot check) on timers:
 * armed after every batch that wrote, run on the work chain between batches.
 */
class MaintenanceTimer {
  constructor() {
    /** @type {import('./policy.js').Maintenance} */
    this.deadlines = idleMaintenance();
    this.timer = 0;
    /** The deadline the timer is set for. */
    this.timerAt = 0;
    /** A run is queued on the work chain (the timer is set again after it). */
    this.queued = false;
  }

  /** After work that may have left writes unflushed or commits unsealed. */
  schedule() {
    if (!engine || engine.dead) return;
    armMaintenance(this.deadlines, engine, performance.now());
    this._setTimer();
  }

  _setTimer() {
    const at = nextDeadline(this.deadlines);
    if (at === 0 || this.queued || (this.timer && this.timerAt <= at)) return;
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => {
      this.timer = 0;
      this.queued = true;
      // A timer may fire a little before its deadline on the performance.now() clock.
      enqueue(() => background(() => runMaintenance(this.deadlines, engine, Math.max(performance.now(), at)))).finally(() => {
        this.queued = false;
        this._setTimer();
      });
    }, Math.max(0, at - performance.now()));
  }

  /** Forget what is pending (the engine was reopened or is closing). */
  cancel() {
    clearTimeout(this.timer);
    this.timer = 0;
    this.deadlines = idleMaintenance();
  }

  /** Arm again later, after background work failed (its frames stay buffered). */
  retryLater() {
    setTimeout(() => this.schedule(), MAINTENANCE_RETRY_MS);
  }
}
const maintenance = new MaintenanceTimer();

/** Sync with a server (owner only; sync.js). */
const sync = new SyncManager({
  get name() {
    return repoName;
  },
  engine: () => engine,
  run: (f) => enqueue(f),
  afterReceive: () => {
    maintenance.schedule();
    deliverLive();
  },
  afterPush: () => maintenance.schedule(),
});

/** Send live-query changes made outside a batch (commits received by sync). */
function deliverLive() {
  if (subs.size === 0) return;
  const live = engine.takeLiveChanges();
  if (!live) return;
  if (remoteSubs > 0) channel?.postMessage({ type: 'live', epoch, changes: live });
  if ([...subs.values()].some((s) => s.origin === 'local')) post({ type: 'live', epoch, changes: live });
}

function post(msg, transfer) {
  self.postMessage(msg, transfer ?? []);
}

function wireErr(e) {
  return toWire(e);
}

// ----- executing batches (owner) -----------------------------------------------------------

function subKey(origin, subId) {
  return `${origin}|${subId}`;
}

function subscribe(origin, subId, q) {
  const key = subKey(origin, subId);
  const old = subs.get(key);
  if (old) {
    engine.unsubscribe(old.liveId);
    subs.delete(key);
    if (origin !== 'local') remoteSubs--;
  }
  const { id: liveId, rowsJson } = engine.subscribeJson(q);
  subs.set(key, { origin, subId, q, liveId });
  if (origin !== 'local') remoteSubs++;
  return [epoch, liveId, rowsJson];
}

function unsubscribe(origin, subId) {
  const key = subKey(origin, subId);
  const s = subs.get(key);
  if (!s) return false;
  subs.delete(key);
  if (origin !== 'local') remoteSubs--;
  return engine.unsubscribe(s.liveId);
}

/** Run one op on the engine (synchronously). */
function exec(op, a, origin) {
  switch (op) {
    case 'get':
      return engine.getJson(a[0]);
    case 'getMany':
      return engine.getManyJson(a[0]);
    case 'put':
      return engine.putJson(a[0], a[1]);
    case 'update':
      return engine.updateJson(a[0], a[1]);
    case 'delete':
      return engine.delete(a[0]);
    case 'txn':
      return engine.transaction(a[0]);
    case 'query':
      return engine.queryJson(a[0]);
    case 'explain':
      return engine.explainJson(a[0]);
    case 'count':
      return engine.countJson(a[0], a[1]);
    case 'keys':
      return engine.keysJson(a[0]);
    case 'aggregate':
      return engine.aggregateJson(a[0]);
    case 'history':
      return engine.historyJson(a[0]);
    case 'defineSchema':
      return engine.defineSchemaJson(a[0], a[1]);
    case 'subscribe':
      return subscribe(origin, a[0], a[1]);
    case 'unsubscribe':
      return unsubscribe(origin, a[0]);
    case 'flush':
      engine.flush();
      return undefined;
    case 'verify':
      return engine.verifyJson();
    case 'stats':
      return engine.statsJson();
    case 'identity':
      return { identity: engine.identity, trusted: engine.trusted };
    case 'exportIdentity':
      return engine.exportIdentity();
    case 'export':
      return engine.exportBundle();
    case 'receive':
      return engine.receiveBundleJson(a[0]);
    case 'sync':
      if (a[0] == null) sync.stop();
      else sync.start(a[0]);
      return undefined;
    case 'syncStatus':
      return JSON.stringify(sync.status());
    case 'debugPanic':
      return engine.panicForTest(a[0]);
    default:
      throw new TypeError(`unknown operation ${op}`);
  }
}

/**
 * Apply a batch, group-commit it, answer. Returns [results, liveChangesText|undefined].
 * A panic fails only the op that caused it: the engine is reopened from OPFS in a fresh wasm
 * instance and the rest of the batch runs again (none of it had been acknowledged).
 */
async function runBatch(ops, durability, origin) {
  const results = new Array(ops.length);
  const failed = new Set();
  for (let round = 0; ; round++) {
    let panicAt = -1;
    let wrote = false;
    for (let i = 0; i < ops.length; i++) {
      if (failed.has(i)) continue;
      const [seq, op, ...args] = ops[i];
      try {
        const out = exec(op, args, origin);
        results[i] = [seq, 1, out];
        if (WRITES.has(op)) wrote = true;
      } catch (e) {
        if (e instanceof PanicError) {
          panicAt = i;
          results[i] = [seq, 0, wireErr(e)];
          break;
        }
        results[i] = [seq, 0, wireErr(e)];
      }
    }
    if (panicAt < 0 && wrote && durability === 'flush') {
      try {
        engine.flush();
      } catch (e) {
        if (!(e instanceof PanicError) || round > 2) {
          // Not durable: none of this batch's writes is acknowledged, and memory goes back to
          // what is on disk.
          for (let i = 0; i < ops.length; i++) {
            if (WRITES.has(ops[i][1]) && results[i][1] === 1) results[i] = [ops[i][0], 0, wireErr(e)];
          }
          await recover();
          return [results, undefined];
        }
        panicAt = ops.length; // the flush itself trapped: run the whole batch again
      }
    }
    if (panicAt >= 0) {
      if (panicAt < ops.length) failed.add(panicAt);
      await recover();
      continue;
    }
    if (wrote) {
      maintenance.schedule();
      sync.nudge();
    }
    let live;
    try {
      live = subs.size > 0 ? engine.takeLiveChanges() : undefined;
    } catch (e) {
      live = undefined;
    }
    return [results, live];
  }
}

/** Reopen the engine from OPFS after a panic (or a failed flush); re-create live queries. */
async function recover() {
  maintenance.cancel();
  await engine.recover();
  await resubscribeAll();
}

/** New engine instance: new epoch, re-subscribe every live query, send resets. */
async function resubscribeAll() {
  epoch = `${myId}:${++epochGen}`;
  const all = [...subs.values()];
  subs.clear();
  remoteSubs = 0;
  /** @type {Map<string, any[]>} */
  const resets = new Map();
  for (const s of all) {
    let r;
    try {
      r = subscribe(s.origin, s.subId, s.q);
    } catch (e) {
      r = [epoch, -1, null, wireErr(e)];
    }
    if (!resets.has(s.origin)) resets.set(s.origin, []);
    resets.get(s.origin).push([s.subId, ...r]);
  }
  for (const [origin, list] of resets) {
    if (origin === 'local') post({ type: 'live', epoch, resets: list });
    else channel?.postMessage({ type: 'live', to: origin, epoch, resets: list });
  }
}

/** Run timer work; failures are reported to the page (the data stays buffered for a retry). */
async function background(f) {
  if (role !== 'owner' || !engine) return;
  try {
    f();
  } catch (e) {
    if (e instanceof PanicError) await recover();
    post({ type: 'background-error', error: wireErr(e) });
    // Retry later (a failed write leaves the frames buffered).
    if (!engine.dead) maintenance.retryLater();
  }
}

// ----- becoming owner / client -------------------------------------------------------------

/** Ask for the repository lock; resolves with whether it was granted (then held until close). */
function requestLock(ifAvailable) {
  return new Promise((resolve, reject) => {
    const opts = ifAvailable ? { ifAvailable: true } : { signal: lockAbort.signal };
    navigator.locks
      .request(ownerLockName(repoName), opts, (lock) => {
        resolve(!!lock);
        if (!lock) return undefined;
        return new Promise((release) => {
          const prev = releaseLocks;
          releaseLocks = () => {
            prev();
            release();
          };
        });
      })
      .catch((e) => {
        if (e?.name === 'AbortError') resolve(false);
        else reject(e);
      });
  });
}

async function becomeOwner() {
  engine = await openEngine(repoName, { ...options, schemas: undefined });
  for (const [c, s] of localSchemas) engine.defineSchemaJson(c, s);
  epoch = `${myId}:${++epochGen}`;
  const wasClient = role === 'client';
  role = 'owner';
  if (wasClient) {
    // Re-create this page's live queries on the new engine, then take over the requests the
    // old owner never answered.
    for (const [subId, q] of localSubs) subs.set(subKey('local', subId), { origin: 'local', subId, q, liveId: -1 });
    await resubscribeAll();
    post({ type: 'role', role: 'owner' });
  }
  channel?.postMessage({ type: 'owner', from: myId });
  if (wasClient) {
    const reqs = [...pending.entries()].sort((a, b) => a[0] - b[0]);
    pending.clear();
    for (const [, req] of reqs) await handleLocalBatch(req.ops, req.durability);
  }
}

function attachMessage() {
  return { type: 'attach', from: myId, schemas: [...localSchemas], subs: [...localSubs] };
}

/** Join the owner as a client; resolves with the owner's identity info. */
function attach() {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      attachResolve = null;
      reject(new StorageUnavailableError(`repository ${repoName} is held by another tab that does not answer`));
    }, ATTACH_TIMEOUT_MS);
    attachResolve = (info) => {
      clearTimeout(timer);
      resolve(info);
    };
    channel.postMessage(attachMessage());
  });
}

// ----- channel (between tabs) --------------------------------------------------------------

function onChannel(ev) {
  const m = ev.data;
  if (!m || closed) return;
  if (role === 'owner') {
    if (m.type === 'attach') enqueue(() => ownerAttach(m));
    else if (m.type === 'req') enqueue(() => ownerRequest(m));
    else if (m.type === 'detach') enqueue(() => dropClient(m.from));
    return;
  }
  if (role !== 'client' && role !== 'opening') return;
  if (m.to !== undefined && m.to !== myId) return;
  switch (m.type) {
    case 'attached':
      if (m.resets?.length) post({ type: 'live', epoch: m.epoch, resets: m.resets });
      attachResolve?.(m);
      attachResolve = null;
      break;
    case 'res': {
      if (!pending.delete(m.rid)) return; // answered already (a re-sent duplicate)
      post({ type: 'results', results: m.results });
      break;
    }
    case 'live':
      post({ type: 'live', epoch: m.epoch, changes: m.changes, resets: m.resets });
      break;
    case 'owner':
      if (role === 'client') {
        // A new owner: re-attach (schemas, live queries), then re-send what is unanswered.
        channel.postMessage(attachMessage());
        for (const [rid, req] of [...pending.entries()].sort((a, b) => a[0] - b[0])) {
          channel.postMessage({ type: 'req', from: myId, rid, durability: req.durability, ops: req.ops });
        }
      }
      break;
    default:
  }
}

function watchClient(id) {
  if (watched.has(id)) return;
  watched.add(id);
  // The client holds this lock for its lifetime: it is granted to us when the client is gone.
  navigator.locks
    .request(clientLockName(id), { signal: lockAbort.signal }, () => {
      watched.delete(id);
      enqueue(() => dropClient(id));
    })
    .catch(() => {});
}

function dropClient(id) {
  if (role !== 'owner') return;
  for (const s of [...subs.values()]) if (s.origin === id) unsubscribe(id, s.subId);
}

async function ownerAttach(m) {
  if (role !== 'owner') return;
  watchClient(m.from);
  const errors = [];
  for (const [c, s] of m.schemas ?? []) {
    try {
      engine.defineSchemaJson(c, s);
    } catch (e) {
      errors.push(wireErr(e));
    }
  }
  const resets = [];
  for (const [subId, q] of m.subs ?? []) {
    try {
      resets.push([subId, ...subscribe(m.from, subId, q)]);
    } catch (e) {
      resets.push([subId, epoch, -1, null, wireErr(e)]);
    }
  }
  channel.postMessage({
    type: 'attached',
    to: m.from,
    epoch,
    identity: engine.identity,
    trusted: engine.trusted,
    resets,
    errors,
  });
}

async function ownerRequest(m) {
  if (role !== 'owner') return;
  const [results, live] = await runBatch(m.ops, m.durability, m.from);
  // Live changes first, so a tab's live results are current when its call resolves.
  if (live) {
    channel.postMessage({ type: 'live', epoch, changes: live });
    if ([...subs.values()].some((s) => s.origin === 'local')) post({ type: 'live', epoch, changes: live });
  }
  channel.postMessage({ type: 'res', to: m.from, rid: m.rid, results });
}

// ----- page messages -----------------------------------------------------------------------

async function handleLocalBatch(ops, durability) {
  // Track this page's live queries and schemas (for recovery, takeover and attach).
  for (const [, op, a0, a1] of ops) {
    if (op === 'subscribe') localSubs.set(a0, a1);
    else if (op === 'unsubscribe') localSubs.delete(a0);
    else if (op === 'defineSchema') localSchemas.set(a0, a1);
  }
  if (role === 'owner') {
    const [results, live] = await runBatch(ops, durability, 'local');
    if (live && remoteSubs > 0) channel?.postMessage({ type: 'live', epoch, changes: live });
    const hasLocal = live && [...subs.values()].some((s) => s.origin === 'local');
    post({ type: 'results', results, live: hasLocal ? { epoch, changes: live } : undefined });
  } else if (role === 'client') {
    const rid = nextRid++;
    pending.set(rid, { ops, durability });
    channel.postMessage({ type: 'req', from: myId, rid, durability, ops });
  } else {
    post({ type: 'results', results: ops.map(([seq]) => [seq, 0, wireErr(new ClosedError('the database is closed'))]) });
  }
}

async function handleOpen(m) {
  repoName = m.name;
  options = m.options ?? {};
  checkName(repoName);
  checkStorage();
  if (!navigator.locks) throw new StorageUnavailableError('Web Locks (navigator.locks) are not available');
  // The page sends the module it compiled (once per page); instantiate it while the lock is
  // requested. A client never uses it (one small instance, no files).
  if (m.wasm) provideWasmModule(m.wasm);
  preloadWasm();
  for (const [c, s] of Object.entries(options.schemas ?? {})) localSchemas.set(c, JSON.stringify(s));
  channel = new BroadcastChannel(channelName(repoName));
  channel.onmessage = onChannel;
  // Held for this worker's lifetime, so an owner can tell when this tab is gone.
  navigator.locks.request(clientLockName(myId), () => new Promise((release) => {
    const prev = releaseLocks;
    releaseLocks = () => {
      prev();
      release();
    };
  }));
  if (await requestLock(true)) {
    await becomeOwner();
  } else {
    role = 'client';
    // Wait in line for the lock: granted when the owner goes away. If that happens before the
    // owner answered our attach, take over right here (the work chain is busy with this open).
    const granted = requestLock(false).then((got) => (got && !closed ? true : new Promise(() => {})));
    const first = await Promise.race([attach().then((info) => ({ info })), granted.then(() => ({ info: null }))]);
    if (!first.info) {
      attachResolve = null;
      await becomeOwner();
    } else {
      granted.then(() => enqueue(() => becomeOwner())).catch((e) => post({ type: 'background-error', error: wireErr(e) }));
      for (const e of first.info.errors ?? []) throw Object.assign(new Error(e.message), e);
      return { identity: first.info.identity, trusted: first.info.trusted, role };
    }
  }
  return { identity: engine.identity, trusted: !!options.trusted, role };
}

async function handleClose() {
  if (closed) return;
  closed = true;
  maintenance.cancel();
  const wasOwner = role === 'owner';
  role = 'closing';
  sync.stop();
  let error;
  if (wasOwner && engine) {
    try {
      await engine.close();
    } catch (e) {
      error = wireErr(e);
    }
  } else {
    channel?.postMessage({ type: 'detach', from: myId });
  }
  role = 'closed';
  lockAbort.abort();
  releaseLocks();
  channel?.close();
  channel = null;
  return error;
}

self.onmessage = (ev) => {
  const m = ev.data;
  switch (m?.type) {
    case 'open':
      enqueue(() => handleOpen(m)).then(
        (info) => post({ type: 'opened', ...info }),
        (e) => post({ type: 'open-failed', error: wireErr(e) }),
      );
      break;
    case 'batch':
      enqueue(() => handleLocalBatch(m.ops, m.durability));
      break;
    case 'close':
      enqueue(() => handleClose()).then((error) => post({ type: 'closed', error }));
      break;
    case 'hide':
      if (role === 'owner') {
        enqueue(() =>
          background(() => {
            if (engine.seal() > 0 || engine.hasUnflushed()) engine.flush();
          }),
        );
      }
      break;
    default:
  }
};
