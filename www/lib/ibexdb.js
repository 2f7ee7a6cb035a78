// ibexdb: a local-first database for the browser. The public ES module (no bundler needed;
// www/ibexdb.js re-exports it):
//
//   import { open } from './ibexdb.js';
//   const db = await open('notes');
//   await db.put('notes/1', { title: 'Hello', tags: new Set(['inbox']) });
//   const note = await db.get('notes/1');
//
// The engine (Rust compiled to WebAssembly) runs in a dedicated worker (worker.js) and
// keeps its files in OPFS. Calls made in the same tick travel to the worker as one message and
// come back as one (with durability 'flush' they also share one OPFS flush). Types: ibexdb.d.ts.

import { decode, decodeMany, decodeRows, encode, encodeObject } from './codec.js';
import { TxnBuilder } from './txn.js';
import { ClosedError, IbexError, InvalidKeyError, InvalidValueError, StorageUnavailableError, fromWire } from './errors.js';
import { checkEnvironment, compileWasm, startWorker, watchViolations, workerFailure } from './loader.js';
import { MAX_SYNC_URLS, WASM_URL, checkName, isSyncUrls } from './policy.js';

export * from './errors.js';

/** @typedef {import('./ibexdb.js').Item} Item */
/** @typedef {import('./ibexdb.js').Row} Row */
/**
 * @template {Item} [T=Item]
 * @typedef {import('./ibexdb.js').LiveQuery<T>} PublicLiveQuery
 */
/** @typedef {import('./ibexdb.js').Database} PublicDatabase */
/** @typedef {import('./ibexdb.js').LiveChange} LiveChange */
/** @typedef {import('./ibexdb.js').OpenOptions} OpenOptions */
/** @typedef {import('./errors.js').WireError} WireError */

/**
 * A live-query change as the engine sends it: `[id, value, pos]` rows, `[id, from, to]` moves.
 * @typedef {object} WireChange
 * @property {[string, any, number][]} added
 * @property {string[]} removed
 * @property {[string, any, number][]} changed
 * @property {[string, number, number][]} moved
 */

/** What the worker said when it opened the repository. @typedef {{identity: string | null, trusted: boolean, role: 'owner' | 'client', sync?: WireSyncStatus | null}} OpenInfo */
/** @typedef {import('./ibexdb.js').SyncStatus} SyncStatus */
/** A sync status as the worker sends it (`lastError` in wire form). @typedef {Omit<SyncStatus, 'lastError'> & {lastError: WireError | null}} WireSyncStatus */

/** @type {SyncStatus} */
const SYNC_OFF = Object.freeze({
  state: 'off',
  url: null,
  urls: null,
  cursor: 0,
  pushFrom: 0,
  pending: 0,
  serverHead: null,
  rights: null,
  connects: 0,
  received: 0,
  pushed: 0,
  acked: 0,
  lastError: null,
  saved: null,
});

/**
 * A status from the worker, with its error rebuilt as an `IbexError` subclass.
 * @param {WireSyncStatus} w
 * @returns {SyncStatus}
 */
function reviveStatus(w) {
  return { ...w, lastError: w.lastError ? /** @type {import('./errors.js').IbexError} */ (fromWire(w.lastError)) : null };
}

/** @type {Promise<WebAssembly.Module | null> | null} the engine's wasm, compiled once per page */
let wasmModule = null;

/**
 * Compile the engine's wasm on the page, once, and hand the module to every worker: a worker
 * then neither fetches nor compiles it (only instantiates), and the first compile overlaps the
 * worker's start-up. Null when it can't be done here (the worker then loads it itself, and
 * reports any real error).
 */
function pageWasm() {
  wasmModule ??= compileWasm(WASM_URL).catch(() => null);
  return wasmModule;
}

/** @type {<T>(x: T) => T} */
const identity = (x) => x;
/** @param {string} t @returns {any} */
const parseJson = (t) => JSON.parse(t);
const none = () => undefined;

/**
 * Apply one live-query change to the previous rows (see LiveChange in the core): replace the
 * values of `changed`, drop `removed` and `moved`, insert `added` and `moved` at their new
 * positions in ascending order.
 * @param {Row[]} rows
 * @param {WireChange} ch
 * @returns {Row[]}
 */
function applyChange(rows, ch) {
  const changed = new Map();
  for (const [id, value] of ch.changed) changed.set(id, value);
  const removed = new Set(ch.removed);
  const moved = new Set();
  for (const [id] of ch.moved) moved.add(id);
  /** @type {Row[]} */
  const out = [];
  /** @type {Map<string, Row>} */
  const moving = new Map();
  for (const r of rows) {
    const row = changed.has(r.id) ? { id: r.id, value: changed.get(r.id) } : r;
    if (moved.has(r.id)) moving.set(r.id, row);
    else if (!removed.has(r.id)) out.push(row);
  }
  /** @type {[number, Row][]} */
  const ins = [];
  for (const [id, value, pos] of ch.added) ins.push([pos, { id, value }]);
  for (const [id, , to] of ch.moved) ins.push([to, moving.get(id) ?? { id, value: changed.get(id) }]);
  ins.sort((a, b) => a[0] - b[0]);
  for (const [p, row] of ins) out.splice(Math.min(p, out.length), 0, row);
  return out;
}

/**
 * A live query: `results` is always the latest snapshot (replaced, never mutated).
 * @template {Item} [T=Item]
 * @implements {PublicLiveQuery<T>}
 */
class LiveQuery {
  /**
   * @param {Database} db
   * @param {number} subId this page's id for it
   * @param {((rows: import('./ibexdb.js').Row<T>[], change: import('./ibexdb.js').LiveChange<T> | null) => void) | undefined} onChange
   */
  constructor(db, subId, onChange) {
    this._db = db;
    this._subId = subId;
    this._onChange = onChange;
    /** @type {import('./ibexdb.js').Row<T>[]} */
    this.results = [];
    this._epoch = '';
    this._liveId = -1;
    this.closed = false;
  }

  /** @param {import('./ibexdb.js').Row<T>[]} rows @param {import('./ibexdb.js').LiveChange<T> | null} change */
  _set(rows, change) {
    this.results = rows;
    if (this._onChange) {
      try {
        this._onChange(rows, change);
      } catch (e) {
        // An app callback error must not break delivery to other live queries.
        queueMicrotask(() => {
          throw e;
        });
      }
    }
  }

  /** Stop receiving updates. */
  close() {
    if (this.closed) return;
    this.closed = true;
    this._db._live.delete(this._subId);
    if (!this._db._closed) this._db._send('unsubscribe', [this._subId], none).catch(() => {});
  }
}

/**
 * An open database (one repository). Create with `open()`.
 * @implements {PublicDatabase}
 */
export class Database {
  /**
   * @param {string} name
   * @param {Worker} worker its worker, opened
   * @param {OpenInfo} info
   * @param {'flush' | 'relaxed'} durability
   * @param {OpenOptions['onError']} onError
   */
  constructor(name, worker, info, durability, onError) {
    this.name = name;
    /** Public key (hex) that signs this repository's commits; null in trusted mode. */
    this.identity = info.identity ?? null;
    this.trusted = !!info.trusted;
    this.durability = durability;
    this._worker = worker;
    this._role = info.role;
    this._onError = onError;
    this._seq = 0;
    /** @type {[number, string, ...unknown[]][]} calls of this tick, not sent yet */
    this._queue = [];
    /** @type {ArrayBuffer[]} buffers of this tick's calls, transferred with them */
    this._transfer = [];
    /** @type {Map<number, [(v: any) => void, (e: unknown) => void, (payload: any) => any]>} seq -> [resolve, reject, decode] */
    this._calls = new Map();
    /** @type {Map<number, LiveQuery<any>>} subId -> its live query (T is the app's claim about its values) */
    this._live = new Map();
    this._nextSub = 1;
    this._closed = false;
    /** @type {{promise: Promise<WireError | undefined>, resolve: (error: WireError | undefined) => void} | null} */
    this._closing = null;
    this._scheduled = false;
    /** @type {SyncStatus} the latest sync status the worker reported */
    this._syncStatus = info.sync ? reviveStatus(info.sync) : SYNC_OFF;
    /** @type {Set<(status: SyncStatus) => void>} */
    this._syncListeners = new Set();
    worker.onmessage = (ev) => this._onMessage(ev.data);
    worker.onerror = (ev) => {
      ev.preventDefault?.();
      this._fail(new StorageUnavailableError(`the ibexdb worker failed: ${ev.message ?? 'unknown error'}`));
    };
    this._onHide = () => worker.postMessage({ type: 'hide' });
    if (typeof addEventListener === 'function') addEventListener('pagehide', this._onHide);
  }

  /** Whether this tab's worker holds the repository's files ('owner') or reaches another tab's. */
  get role() {
    return this._role;
  }

  /**
   * This device's public key for this repository (98 hex digits, a compressed P-384 point):
   * what another replica's owner passes to `grant`. Null in trusted mode.
   */
  get publicKey() {
    return this.identity;
  }

  /**
   * Queue one call for this tick's batch.
   * @template T
   * @param {string} op
   * @param {unknown[]} args
   * @param {(payload: any) => T} dec decodes the worker's payload
   * @returns {Promise<T>}
   */
  _send(op, args, dec) {
    if (this._closed) return Promise.reject(new ClosedError(`database ${this.name} is closed`));
    const seq = ++this._seq;
    return new Promise((resolve, reject) => {
      this._calls.set(seq, [resolve, reject, dec]);
      this._queue.push([seq, op, ...args]);
      if (!this._scheduled) {
        this._scheduled = true;
        queueMicrotask(() => this._flushQueue());
      }
    });
  }

  _flushQueue() {
    this._scheduled = false;
    if (this._queue.length === 0) return;
    const ops = this._queue;
    const transfer = this._transfer;
    this._queue = [];
    this._transfer = [];
    this._worker.postMessage({ type: 'batch', durability: this.durability, ops }, transfer);
  }

  /** @param {any} m a message from the worker (worker.js) */
  _onMessage(m) {
    switch (m.type) {
      case 'results':
        if (m.live) this._applyLive(m.live);
        for (const [seq, ok, payload] of m.results) {
          const c = this._calls.get(seq);
          if (!c) continue;
          this._calls.delete(seq);
          if (ok) {
            let v;
            try {
              v = c[2](payload);
            } catch (e) {
              c[1](e);
              continue;
            }
            c[0](v);
          } else {
            c[1](fromWire(payload));
          }
        }
        break;
      case 'live':
        this._applyLive(m);
        break;
      case 'role':
        this._role = m.role;
        break;
      case 'sync-status':
        this._setSyncStatus(reviveStatus(m.status));
        break;
      case 'background-error': {
        const err = fromWire(m.error);
        if (this._onError) this._onError(err);
        else console.warn('ibexdb background error', err);
        break;
      }
      case 'closed':
        this._closing?.resolve(m.error);
        break;
      default:
    }
  }

  /**
   * Live-query resets (fresh rows, after the engine was reopened or this tab attached) and changes.
   * @param {{epoch: string, changes?: string, resets?: [number, string, number, string | null][]}} m
   */
  _applyLive(m) {
    for (const [subId, epoch, liveId, rowsJson] of m.resets ?? []) {
      const lq = this._live.get(subId);
      if (!lq || rowsJson === null) continue;
      lq._epoch = epoch;
      lq._liveId = liveId;
      lq._set(decodeRows(rowsJson), null);
    }
    if (m.changes) {
      /** @type {Map<number, WireChange> | null} */
      let byId = null;
      for (const lq of this._live.values()) {
        if (lq._epoch !== m.epoch) continue;
        byId ??= new Map(decode(m.changes));
        const ch = byId.get(lq._liveId);
        if (!ch) continue;
        /** @type {LiveChange} */
        const change = {
          added: ch.added.map(([id, value, pos]) => ({ id, value, pos })),
          removed: ch.removed,
          changed: ch.changed.map(([id, value, pos]) => ({ id, value, pos })),
          moved: ch.moved.map(([id, from, to]) => ({ id, from, to })),
        };
        lq._set(applyChange(lq.results, ch), change);
      }
    }
  }

  /** @param {unknown} err */
  _fail(err) {
    this._closed = true;
    for (const [, c] of this._calls) c[1](err);
    this._calls.clear();
    this._setSyncStatus({ ...SYNC_OFF, lastError: err instanceof Error ? /** @type {any} */ (err) : null });
    this._syncListeners.clear();
  }

  /** A newer sync status: keep it and tell the listeners. @param {SyncStatus} st */
  _setSyncStatus(st) {
    this._syncStatus = st;
    for (const cb of [...this._syncListeners]) {
      try {
        cb(st);
      } catch (e) {
        // An app callback error must not stop the other listeners.
        queueMicrotask(() => {
          throw e;
        });
      }
    }
  }

  // ----- reads -------------------------------------------------------------------------

  /** The item at `key` (`collection/id`), or undefined. @param {string} key @returns {Promise<any>} */
  get(key) {
    return this._send('get', [key], decode);
  }

  /** Items at `keys` (undefined where missing), in order. @param {string[]} keys @returns {Promise<any[]>} */
  getMany(keys) {
    if (!Array.isArray(keys)) return Promise.reject(new InvalidKeyError('getMany needs an array of keys'));
    return this._send('getMany', [JSON.stringify(keys)], decodeMany);
  }

  /**
   * Rows `{id, value}` matching a query.
   * @template {Item} [T=Item]
   * @param {import('./ibexdb.js').Query} q
   * @returns {Promise<import('./ibexdb.js').Row<T>[]>}
   */
  query(q) {
    return this._encoded(() => encode(q, 'query'), (t) => this._send('query', [t], decodeRows));
  }

  /** The plan the engine would use for a query. @param {import('./ibexdb.js').Query} q @returns {Promise<Record<string, unknown>>} */
  explain(q) {
    return this._encoded(() => encode(q, 'query'), (t) => this._send('explain', [t], parseJson));
  }

  /**
   * Number of items in `collection` (matching `where`, if given).
   * @param {string} collection @param {import('./ibexdb.js').Where} [where] @returns {Promise<number>}
   */
  count(collection, where) {
    return this._encoded(
      () => (where === undefined ? null : encode(where, 'where')),
      (t) => this._send('count', [collection, t], identity),
    );
  }

  /** Ids of the items in `collection`, in order. @param {string} collection @returns {Promise<string[]>} */
  keys(collection) {
    return this._send('keys', [collection], parseJson);
  }

  /**
   * Aggregates: `{collection, where?, aggregates: {name: {sum|min|max|avg|count: field}}, groupBy?}`.
   * @param {import('./ibexdb.js').AggregateQuery} q @returns {Promise<Record<string, import('./ibexdb.js').Value>>}
   */
  aggregate(q) {
    return this._encoded(() => encode(q, 'aggregate'), (t) => this._send('aggregate', [t], decode));
  }

  /**
   * A live query. Resolves once its first results are in; `results` then always holds the
   * latest rows. `onChange(results, change)` is called with the first results (change null),
   * then after every change.
   * @template {Item} [T=Item]
   * @param {import('./ibexdb.js').Query} q
   * @param {(results: import('./ibexdb.js').Row<T>[], change: import('./ibexdb.js').LiveChange<T> | null) => void} [onChange]
   * @returns {Promise<LiveQuery<T>>}
   */
  live(q, onChange) {
    return this._encoded(
      () => encode(q, 'query'),
      (t) => {
        const subId = this._nextSub++;
        /** @type {LiveQuery<T>} */
        const lq = new LiveQuery(this, subId, onChange);
        this._live.set(subId, lq);
        return this._send('subscribe', [subId, t], /** @type {(p: [string, number, string]) => [string, number, string]} */ (identity)).then(
          ([epoch, liveId, rowsJson]) => {
            lq._epoch = epoch;
            lq._liveId = liveId;
            lq._set(decodeRows(rowsJson), null);
            return lq;
          },
          /** @param {unknown} e */
          (e) => {
            this._live.delete(subId);
            throw e;
          },
        );
      },
    );
  }

  /** The commits that changed `key`, oldest first. @param {string} key @returns {Promise<import('./ibexdb.js').HistoryEntry[]>} */
  history(key) {
    return this._send('history', [key], decode);
  }

  // ----- writes ------------------------------------------------------------------------

  /** Replace the item at `key`. @param {string} key @param {import('./ibexdb.js').Item} value @returns {Promise<void>} */
  put(key, value) {
    return this._encoded(() => encodeObject(value, key), (t) => this._send('put', [key, t], none));
  }

  /**
   * Change some fields of an existing item (NotFoundError if it does not exist).
   * @param {string} key @param {import('./ibexdb.js').Item} fields @returns {Promise<void>}
   */
  update(key, fields) {
    return this._encoded(() => encodeObject(fields, key), (t) => this._send('update', [key, t], none));
  }

  /** Delete the item at `key`. @param {string} key @returns {Promise<void>} */
  delete(key) {
    return this._send('delete', [key], none);
  }

  /**
   * Run `fn(tx)` (synchronously) to collect writes, then commit them atomically as one commit.
   * Resolves with `fn`'s return value once committed.
   * @template R
   * @param {(tx: TxnBuilder) => R} fn
   * @returns {Promise<R>}
   */
  transaction(fn) {
    const tx = new TxnBuilder();
    /** @type {R} */
    let ret;
    try {
      ret = fn(tx);
      if (ret && typeof (/** @type {any} */ (ret)).then === 'function') {
        throw new TypeError('the transaction callback must be synchronous (collect writes, then await the transaction)');
      }
    } catch (e) {
      return Promise.reject(e);
    }
    if (tx.size === 0) return Promise.resolve(ret);
    // The bytes' buffer is transferred to the worker, not copied.
    const bytes = tx.bytes();
    this._transfer.push(bytes.buffer);
    return this._send('txn', [bytes], () => ret);
  }

  /**
   * Declare (or replace) a collection's schema: `{fields: {...}, indexes: [...], allowOtherFields}`.
   * @param {string} collection @param {import('./ibexdb.js').Schema} schema @returns {Promise<void>}
   */
  defineSchema(collection, schema) {
    return this._encoded(() => JSON.stringify(schema), (t) => this._send('defineSchema', [collection, t], none));
  }

  // ----- durability, integrity, identity, storage --------------------------------------

  /** Make every write so far durable in OPFS. @returns {Promise<void>} */
  flush() {
    return this._send('flush', [], none);
  }

  /** Re-prove the repository: every hash, signature, snapshot and index. @returns {Promise<import('./ibexdb.js').VerifyReport>} */
  verify() {
    return this._send('verify', [], parseJson);
  }

  /** The identity (secret key) in a form `open(name, {identity})` accepts. Keep it secret. @returns {Promise<string | null>} */
  exportIdentity() {
    return this._send('exportIdentity', [], identity);
  }

  /** Every commit and seal of this repository as bytes (for another replica's `receive`). @returns {Promise<Uint8Array<ArrayBuffer>>} */
  exportCommits() {
    return this._send('export', [], identity);
  }

  /**
   * Verify and apply commits exported by another replica (all or nothing).
   * @param {Uint8Array} bundle @returns {Promise<import('./ibexdb.js').ReceiveReport>}
   */
  receive(bundle) {
    if (!(bundle instanceof Uint8Array)) return Promise.reject(new InvalidValueError('receive needs a Uint8Array from exportCommits()'));
    return this._send('receive', [bundle], parseJson);
  }

  // ----- access list ---------------------------------------------------------------------

  /**
   * Give a key (another device's `db.publicKey`) a role in this repository: `owner` (may also
   * change the access list), `writer` or `reader`. Only an owner may (PermissionError). The
   * grant is an ordinary signed commit: it syncs like any write, and every replica and the
   * server enforce it.
   * @param {string} publicKey @param {import('./ibexdb.js').Role} role @returns {Promise<void>}
   */
  grant(publicKey, role) {
    return this._send('grant', [publicKey, role], none);
  }

  /** Take a key's role away (PermissionError for the last owner). @param {string} publicKey @returns {Promise<void>} */
  revoke(publicKey) {
    return this._send('revoke', [publicKey], none);
  }

  /**
   * Let anyone (any key, or an anonymous session) read and/or write. Only an owner may.
   * @param {{read: boolean, write: boolean}} flags @returns {Promise<void>}
   */
  setPublic(flags) {
    if (!flags || typeof flags.read !== 'boolean' || typeof flags.write !== 'boolean') {
      return Promise.reject(new InvalidValueError('setPublic needs {read: boolean, write: boolean}', { path: 'flags' }));
    }
    return this._send('setPublic', [flags.read, flags.write], none);
  }

  /** The access list as this replica knows it. @returns {Promise<import('./ibexdb.js').Members>} */
  members() {
    return this._send('members', [], parseJson);
  }

  // ----- sync ------------------------------------------------------------------------------

  /**
   * Sync with an ibexdb-server (`ws://host:port`), or with the nodes of one deployment (a list
   * of URLs: the first is dialed, and every failed dial, dropped connection or UnavailableError
   * moves to the next, round again), or with the current one(s) when called without a URL;
   * `null` stops. The tab that owns the files holds the WebSocket (another tab's call is
   * forwarded to it; a tab that takes over ownership resumes sync by itself).
   *
   * Resolves once this replica is `synced`: it has received everything the server had when the
   * connection was made and the server acknowledged every local commit, including the writes
   * made before this call. Rejects with the server's refusal (`PermissionError`, `AuthError`,
   * ...) when sync reaches the `error` state, and with `ClosedError` if sync is stopped or the
   * database closed meanwhile. It keeps waiting while the server cannot be reached.
   * @param {string | string[] | null} [url]
   * @returns {Promise<void>}
   */
  sync(url) {
    if (url === null) return this._send('sync', [null], none);
    if (url !== undefined && !isSyncUrls(url)) {
      return Promise.reject(new InvalidValueError(`sync needs a ws:// or wss:// URL or a list of 1-${MAX_SYNC_URLS} of them, got ${JSON.stringify(url)}`, { path: 'url' }));
    }
    return this._send('sync', [url], (t) => reviveStatus(JSON.parse(t))).then((st) => {
      if (st.state === 'off') throw new InvalidValueError('sync is off: pass the server URL', { path: 'url' });
      return this._waitSynced(st);
    });
  }

  /**
   * Resolve at the first `synced` status from `st` on; reject at `error` or `off`.
   * @param {SyncStatus} st the status when the wait starts
   * @returns {Promise<void>}
   */
  _waitSynced(st) {
    return new Promise((resolve, reject) => {
      /** @param {SyncStatus} s */
      const check = (s) => {
        if (s.state === 'synced') resolve();
        else if (s.state === 'error') reject(s.lastError ?? new IbexError('sync failed'));
        else if (s.state === 'off') reject(new ClosedError('sync was stopped before it completed'));
        else return false;
        this._syncListeners.delete(check);
        return true;
      };
      if (!check(st)) this._syncListeners.add(check);
    });
  }

  /** Where sync stands: state, position, counters, last error. @returns {Promise<SyncStatus>} */
  syncStatus() {
    return this._send('syncStatus', [], (t) => reviveStatus(JSON.parse(t)));
  }

  /**
   * Call `cb(status)` whenever sync's state, server or last error changes (in every tab of
   * the repository). Returns a function that stops the calls.
   * @param {(status: SyncStatus) => void} cb
   * @returns {() => void}
   */
  onSyncStatus(cb) {
    if (typeof cb !== 'function') throw new TypeError('onSyncStatus needs a function');
    /** @param {SyncStatus} s */
    const f = (s) => {
      cb(s);
    };
    this._syncListeners.add(f);
    return () => this._syncListeners.delete(f);
  }

  /** Origin usage and quota, whether storage is persistent, and this repository's bytes. @returns {Promise<import('./ibexdb.js').StorageInfo>} */
  async storageInfo() {
    const [est, persisted, stats] = await Promise.all([
      navigator.storage.estimate(),
      navigator.storage.persisted ? navigator.storage.persisted() : Promise.resolve(false),
      this._send('stats', [], parseJson),
    ]);
    return {
      usage: est.usage ?? 0,
      quota: est.quota ?? 0,
      persisted,
      repository: {
        logBytes: stats.logBytes,
        snapshotBytes: stats.snapshotBytes,
        totalBytes: stats.logBytes + stats.snapshotBytes + (this.identity ? 48 : 0),
        items: stats.items,
        commits: stats.commits,
      },
    };
  }

  /**
   * Seal, flush, snapshot and release the files (another tab may take over); stop the worker.
   * @returns {Promise<void>}
   */
  async close() {
    if (this._closing) {
      await this._closing.promise;
      return undefined;
    }
    /** @type {(error: WireError | undefined) => void} */
    let resolve = () => {};
    /** @type {Promise<WireError | undefined>} */
    const promise = new Promise((r) => (resolve = r));
    this._closing = { promise, resolve };
    this._flushQueue();
    this._worker.postMessage({ type: 'close' });
    const error = await promise;
    this._closed = true;
    for (const lq of this._live.values()) lq.closed = true;
    this._live.clear();
    this._fail(new ClosedError(`database ${this.name} is closed`));
    if (typeof removeEventListener === 'function') removeEventListener('pagehide', this._onHide);
    this._worker.terminate();
    if (error) throw fromWire(error);
    return undefined;
  }

  /** @internal Test hook: make the engine panic (the call rejects with PanicError). @param {string} [msg] */
  _debugPanic(msg = 'panic requested by a test') {
    return this._send('debugPanic', [msg], none);
  }

  /**
   * Encode an argument, then send; an encoding error rejects (never throws synchronously).
   * @template T
   * @param {() => string | null} enc
   * @param {(text: any) => Promise<T>} then
   * @returns {Promise<T>}
   */
  _encoded(enc, then) {
    let t;
    try {
      t = enc();
    } catch (e) {
      return Promise.reject(e);
    }
    return then(t);
  }
}

/**
 * Open (or create) the repository `name`.
 * @param {string} name 1-128 characters: letters, digits, '_', '-', '.'
 * @param {OpenOptions} [options]
 * @returns {Promise<Database>}
 */
export async function open(name, options = {}) {
  checkName(name);
  const durability = options.durability ?? 'flush';
  if (durability !== 'flush' && durability !== 'relaxed') {
    throw new InvalidValueError(`options.durability must be 'flush' or 'relaxed', got ${JSON.stringify(durability)}`, { path: 'options.durability' });
  }
  checkEnvironment();
  // Ask for persistent storage (the browser may refuse; storageInfo() reports the outcome).
  const persist = navigator.storage.persist ? navigator.storage.persist().catch(() => false) : Promise.resolve(false);
  const wasm = pageWasm();
  const csp = watchViolations();
  const started = startWorker(name);
  const worker = started.worker;
  /** @type {OpenInfo} */
  const info = await new Promise((resolve, reject) => {
    // Listen before awaiting anything: a worker whose script fails to load reports it once.
    worker.onmessage = (ev) => {
      const m = ev.data;
      if (m.type === 'opened') resolve(m);
      else if (m.type === 'open-failed') reject(fromWire(m.error));
      else if (m.type === 'boot-failed') workerFailure(started, csp.violations, m.message).then(reject, reject);
    };
    worker.onerror = (ev) => {
      ev.preventDefault?.();
      // Without a message the worker's script did not load; either way, find out why.
      workerFailure(started, csp.violations, ev.message).then(reject, reject);
    };
    wasm.then((module) => {
      const msg = {
        type: 'open',
        name,
        options: {
          trusted: !!options.trusted,
          identity: options.identity,
          recovery: options.recovery,
          quotaBytes: options.quotaBytes,
          schemas: options.schemas,
        },
        wasm: module,
      };
      try {
        worker.postMessage(msg);
      } catch (e) {
        // A module that can't be cloned to the worker: let the worker load the wasm itself.
        if (/** @type {any} */ (e)?.name !== 'DataCloneError') throw e;
        worker.postMessage({ ...msg, wasm: null });
      }
    }).catch(reject);
  })
    .catch((e) => {
      worker.terminate();
      throw e;
    })
    .finally(() => {
      csp.stop();
      started.started();
    });
  await persist;
  const db = new Database(name, worker, info, durability, options.onError);
  if (options.sync != null) {
    try {
      // Start, do not wait for the server: the database works offline.
      if (!isSyncUrls(options.sync)) throw new InvalidValueError(`options.sync must be a ws:// or wss:// URL or a list of 1-${MAX_SYNC_URLS} of them, got ${JSON.stringify(options.sync)}`, { path: 'options.sync' });
      await db._send('sync', [options.sync], none);
    } catch (e) {
      await db.close().catch(() => {});
      throw e;
    }
  }
  return db;
}
