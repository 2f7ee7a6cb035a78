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

import { argBoolean, argCollection, argFunction, argKey, argKeys, argObject, argPublicKey, argQuery, argString, argWhere, describe, isPlainObject } from './args.js';
import { decode, decodeMany, decodePage, decodeRows, encode, encodeObject } from './codec.js';
import { TxnBuilder, txnBytes } from './txn.js';
import { ClosedError, IbexError, InvalidValueError, StorageUnavailableError, fromWire, toWire } from './errors.js';
import { fetchToken, unavailable } from './sync-token.js';
import { LiveQuery, applyChange, publicChange } from './live-query.js';
import { Collection } from './collection.js';
import { askPersist, checkEnvironment, compileWasm, persistedNow, startVerifyThread, startWorker, watchViolations, workerFailure } from './loader.js';
import { MAX_SYNC_URLS, WASM_URL, checkName, isSyncUrls } from './policy.js';
import { waitSynced } from './sync-wait.js';
import { startSchemas } from './schema-upgrade.js';
import { checkOptions } from './open-options.js';
import { exportPassphrase, openIdentity, wrapIdentity } from './identity-wrap.js';
import { inviteOptions, parseInvite, redeemIfMore, sendInvite } from './invite.js';
import { sendAttach, sendAttachment, sendAttachments, sendDetach } from './attachments-page.js';

export * from './errors.js';

/** @typedef {import('./ibexdb.js').Item} Item */
/** @typedef {import('./ibexdb.js').Database} PublicDatabase */
/** @typedef {import('./ibexdb.js').OpenOptions} OpenOptions */
/** @typedef {import('./errors.js').WireError} WireError */
/** @typedef {import('./live-query.js').WireChange} WireChange */
/** @typedef {import('./codec.js').EngineText} EngineText */
/** An op of the worker (worker/ops.js): a public method's name. @typedef {import('./worker/ops.js').OpName} OpName */
/**
 * @template {OpName} K
 * @typedef {import('./worker/ops.js').OpArgs<K>} OpArgs
 */

/** What the worker said when it opened the repository. @typedef {{publicKey: string | null, trusted: boolean, role: 'owner' | 'client', sync?: WireSyncStatus | null, storage?: 'opfs' | 'indexeddb' | 'memory'}} OpenInfo */
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
   * @param {boolean} persisted whether the origin's storage is persistent, as read on open
   */
  constructor(name, worker, info, durability, onError, persisted) {
    this.name = name;
    /**
     * This device's public key for this repository (98 hex digits, a compressed P-384 point):
     * it signs the commits made here, and it is what another replica's owner passes to
     * `grant`. Null in trusted mode.
     */
    this.publicKey = info.publicKey ?? null;
    this.trusted = !!info.trusted;
    /**
     * Where the files are: 'opfs' (sync access handles), 'indexeddb' (browsers without them) or
     * 'memory' (nothing is kept after close). What `storage: 'auto'` chose, or what was asked for.
     * @type {'opfs' | 'indexeddb' | 'memory'}
     */
    this.storage = info.storage ?? 'opfs';
    this.durability = durability;
    this._persisted = persisted;
    this._worker = worker;
    this._role = info.role;
    this._onError = onError;
    this._seq = 0;
    /** @type {[number, OpName, ...unknown[]][]} calls of this tick, not sent yet */
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
    /** @type {{worker: Worker, stop: () => void} | null} verify()'s helper thread, started on the worker's first ask */
    this._verifyThread = null;
    /** @type {import('./schema-upgrade.js').SchemaUpgrader | null} open()'s `version`: upgrades and migrations */
    this._upgrader = null;
    /** @type {OpenOptions['syncToken']} open()'s bearer token (or its function), asked for by the worker before each dial */
    this._syncToken = undefined;
    this.invited = /** @type {Promise<'redeemed' | 'kept' | Error> | null} open()'s `invite`: what the link did */ (null);
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

  /** Null, or the SchemaVersionError this application's writes get: the stored schemas are newer than `open()`'s `version`. */
  get readOnly() {
    return this._upgrader?.readOnly() ?? null;
  }

  /** The repository's stored schema version as last read (0: none), or null without `open()`'s `version`. */
  get schemaVersion() {
    return this._upgrader?.info?.version ?? null;
  }

  /** Whether the browser has granted this origin persistent storage, as last known. */
  get persisted() {
    return this._persisted;
  }

  /**
   * Ask the browser for persistent storage; resolves to whether it is granted. Firefox resolves
   * only once the user answers its prompt: nothing in ibexdb waits for this.
   * @returns {Promise<boolean>}
   */
  async persist() {
    const granted = await askPersist();
    if (granted) this._persisted = true;
    else this._persisted = await persistedNow();
    return this._persisted;
  }

  /**
   * Queue one call for this tick's batch.
   * @template {OpName} K
   * @template T
   * @param {K} op
   * @param {OpArgs<K>} args
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
      case 'received':
        this._upgrader?.afterReceive();
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
      case 'verify-thread':
        this._startVerifyThread();
        break;
      case 'token':
        this._answerToken(m.id);
        break;
      default:
    }
  }

  /**
   * The worker is about to dial the sync server: call open()'s `syncToken` and answer with the
   * token, or with the AuthError (`token-unavailable`) when it fails (sync-token.js).
   * @param {number} id
   */
  _answerToken(id) {
    const source = this._syncToken;
    const asked = source == null ? Promise.reject(unavailable('open() was given no syncToken in this tab')) : fetchToken(source);
    asked.then(
      (token) => this._closed || this._worker.postMessage({ type: 'token', id, token }),
      (e) => this._closed || this._worker.postMessage({ type: 'token', id, error: toWire(e) }),
    );
  }

  /**
   * The worker asks for verify()'s helper thread (worker/crypto.js): start it here and hand the
   * worker a MessagePort to it (or null: the worker verifies on its own thread). A helper that
   * fails later (its script does not load) is reported to the worker, which then does the same.
   */
  _startVerifyThread() {
    this._verifyThread?.stop();
    const started = this._closed ? null : startVerifyThread();
    this._verifyThread = started;
    if (!started) {
      this._worker.postMessage({ type: 'verify-port', port: null });
      return;
    }
    const channel = new MessageChannel();
    started.worker.onerror = (ev) => {
      ev.preventDefault?.();
      started.stop();
      if (this._verifyThread === started) this._verifyThread = null;
      if (!this._closed) this._worker.postMessage({ type: 'verify-failed' });
    };
    started.worker.postMessage({ port: channel.port1 }, [channel.port1]);
    this._worker.postMessage({ type: 'verify-port', port: channel.port2 }, [channel.port2]);
  }

  /**
   * Live-query resets (fresh rows, after the engine was reopened or this tab attached) and changes.
   * @param {{epoch: string, changes?: EngineText, resets?: [number, string, number, EngineText | null][]}} m
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
        lq._set(applyChange(lq.results, ch), publicChange(ch));
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
    return this._checked(() => argKey('get', key), () => this._send('get', [key], decode));
  }

  /** Items at `keys` (undefined where missing), in order. @param {string[]} keys @returns {Promise<any[]>} */
  getMany(keys) {
    return this._checked(() => {
      argKeys('getMany', keys);
      return JSON.stringify(keys);
    }, (t) => this._send('getMany', [t], decodeMany));
  }

  /**
   * Rows `{id, value}` matching a query.
   * @template {Item} [T=Item]
   * @param {import('./ibexdb.js').Query} q
   * @returns {Promise<import('./ibexdb.js').Row<T>[]>}
   */
  query(q) {
    return this._checked(() => queryText('query', q), (t) => this._send('query', [t], decodeRows));
  }

  /**
   * A page of a query: its rows and the cursor after the last one (null without a limit or
   * without rows). `query({...q, after: cursor})` continues after it, whatever was inserted or
   * deleted meanwhile.
   * @template {Item} [T=Item]
   * @param {import('./ibexdb.js').Query} q
   * @returns {Promise<import('./ibexdb.js').Page<T>>}
   */
  page(q) {
    return this._checked(() => queryText('page', q), (t) => this._send('page', [t], decodePage));
  }

  /** The plan the engine would use for a query. @param {import('./ibexdb.js').Query} q @returns {Promise<Record<string, unknown>>} */
  explain(q) {
    return this._checked(() => queryText('explain', q), (t) => this._send('explain', [t], parseJson));
  }

  /**
   * Number of items in `collection` (matching `where`, if given).
   * @param {string} collection @param {import('./ibexdb.js').Where} [where] @returns {Promise<number>}
   */
  count(collection, where) {
    return this._checked(
      () => {
        argCollection('count', collection);
        argWhere('count', where);
        return where === undefined ? null : encode(where, 'where');
      },
      (t) => this._send('count', [collection, t], identity),
    );
  }

  /** Ids of the items in `collection`, in order. @param {string} collection @returns {Promise<string[]>} */
  keys(collection) {
    return this._checked(() => argCollection('keys', collection), () => this._send('keys', [collection], parseJson));
  }

  /**
   * A handle on one collection: ids instead of keys, queries without `collection`; typed by the
   * app's item type in TypeScript (`db.collection<Task>('tasks')`). InvalidKeyError for a bad name.
   * @param {string} name
   * @returns {any}
   */
  collection(name) { return new Collection(this, name); }

  /**
   * Aggregates: `{collection, where?, aggregates: {name: {sum|min|max|avg|count: field}}, groupBy?}`.
   * @param {import('./ibexdb.js').AggregateQuery} q @returns {Promise<Record<string, import('./ibexdb.js').Value>>}
   */
  aggregate(q) {
    return this._checked(() => queryText('aggregate', q), (t) => this._send('aggregate', [t], decode));
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
    return this._checked(
      () => {
        argFunction('live', onChange, 'onChange', true);
        return queryText('live', q);
      },
      (t) => {
        const subId = this._nextSub++;
        /** @type {LiveQuery<T>} */
        const lq = new LiveQuery(() => this._closeLive(subId), onChange);
        this._live.set(subId, lq);
        return this._send('live', [subId, t], /** @type {(p: [string, number, EngineText]) => [string, number, EngineText]} */ (identity)).then(
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

  /** A live query was closed: forget it here and in the worker. @param {number} subId */
  _closeLive(subId) {
    this._live.delete(subId);
    if (!this._closed) this._send('unsubscribe', [subId], none).catch(() => {});
  }

  /** The commits that changed `key`, oldest first. @param {string} key @returns {Promise<import('./ibexdb.js').HistoryEntry[]>} */
  history(key) {
    return this._checked(() => argKey('history', key), () => this._send('history', [key], decode));
  }

  // ----- writes ------------------------------------------------------------------------

  /** Replace the item at `key`. @param {string} key @param {import('./ibexdb.js').Item} value @returns {Promise<void>} */
  put(key, value) {
    return this._checked(() => {
      argKey('put', key);
      argObject('put', value, 'value', 'an item (a plain object)');
      return encodeObject(value, key) ?? txnBytes((tx) => tx.put(key, value));
    }, (t) => (typeof t === 'string' ? this._send('put', [key, t], none) : this._sendTxn(t)));
  }

  /**
   * Change some fields of an existing item (NotFoundError if it does not exist).
   * @param {string} key @param {import('./ibexdb.js').Item} fields @returns {Promise<void>}
   */
  update(key, fields) {
    return this._checked(() => {
      argKey('update', key);
      argObject('update', fields, 'fields', 'an item (a plain object)');
      return encodeObject(fields, key) ?? txnBytes((tx) => tx.update(key, fields));
    }, (t) => (typeof t === 'string' ? this._send('update', [key, t], none) : this._sendTxn(t)));
  }

  /** Delete the item at `key`. @param {string} key @returns {Promise<void>} */
  delete(key) {
    return this._checked(() => argKey('delete', key), () => this._send('delete', [key], none));
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
      argFunction('transaction', fn, 'fn');
      ret = fn(tx);
      if (ret && typeof (/** @type {any} */ (ret)).then === 'function') {
        throw new InvalidValueError('transaction(fn): fn must be synchronous (collect writes, then await the transaction)', { path: 'fn', argument: 'fn' });
      }
    } catch (e) {
      return Promise.reject(e);
    }
    if (tx.size === 0) return Promise.resolve(ret);
    return this._sendTxn(tx.bytes()).then(() => ret);
  }

  /**
   * Send a transaction's bytes (a put or an update holding bytes values goes this way too: its
   * bytes travel as bytes, not as JSON text). The buffer is transferred to the worker, not copied.
   * @param {Uint8Array<ArrayBuffer>} bytes
   * @returns {Promise<void>}
   */
  _sendTxn(bytes) {
    this._transfer.push(bytes.buffer);
    return this._send('transaction', [bytes], none);
  }

  /**
   * Declare (or replace) a collection's schema: `{fields: {...}, indexes: [...], allowOtherFields}`.
   * @param {string} collection @param {import('./ibexdb.js').Schema} schema @returns {Promise<void>}
   */
  defineSchema(collection, schema) {
    return this._checked(() => {
      argCollection('defineSchema', collection);
      argObject('defineSchema', schema, 'schema', 'a schema object {fields?, indexes?, allowOtherFields?}');
      return encode(schema, 'schema');
    }, (t) => this._send('defineSchema', [collection, t], none));
  }

  // ----- durability, integrity, identity, storage --------------------------------------

  /** Make every write so far durable in OPFS. @returns {Promise<void>} */
  flush() { return this._send('flush', [], none); }

  /**
   * Do now the background work the worker's timers would do later (policy.js): seal the unsealed
   * local commits, flush, write a snapshot if one is due; resolves when durable, with nothing
   * left pending. For an app (or the benchmark) that wants that work inside its own time, not
   * during whatever runs next. @returns {Promise<void>}
   */
  settle() { return this._send('settle', [], none); }

  /** Re-prove the repository: every hash, signature, snapshot and index. @returns {Promise<import('./ibexdb.js').VerifyReport>} */
  verify() {
    return this._send('verify', [], parseJson);
  }

  /**
   * The identity (secret key) in a form `open(name, {identity})` accepts: with `{passphrase}`,
   * wrapped under it (identity-wrap.js); without, in the clear (advanced: keep it secret).
   * Null in trusted mode. @param {{passphrase: string}} [options] @returns {Promise<string | null>}
   */
  async exportIdentity(options) {
    const passphrase = exportPassphrase(options);
    const plain = /** @type {string | null} */ (await this._send('exportIdentity', [], identity));
    return plain === null || passphrase === undefined ? plain : wrapIdentity(plain, passphrase);
  }

  /** Every commit and seal of this repository as bytes (for another replica's `receive`). @returns {Promise<Uint8Array<ArrayBuffer>>} */
  exportCommits() {
    return this._send('exportCommits', [], identity);
  }

  /**
   * Verify and apply commits exported by another replica (all or nothing).
   * @param {Uint8Array} bundle @returns {Promise<import('./ibexdb.js').ReceiveReport>}
   */
  receive(bundle) {
    // A Proxy's traps may throw in the check too: a rejection, never a synchronous throw.
    return this._checked(() => {
      if (!(bundle instanceof Uint8Array)) throw new InvalidValueError(`receive(bundle): bundle must be a Uint8Array from exportCommits(), got ${describe(bundle)}`, { path: 'bundle', argument: 'bundle' });
    }, () => this._send('receive', [bundle], parseJson));
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
    return this._checked(() => {
      argPublicKey('grant', publicKey);
      argString('grant', role, 'role', "a role: 'owner', 'writer' or 'reader'");
    }, () => this._send('grant', [publicKey, role], none));
  }

  /** Take a key's role away (PermissionError for the last owner). @param {string} publicKey @returns {Promise<void>} */
  revoke(publicKey) {
    return this._checked(() => argPublicKey('revoke', publicKey), () => this._send('revoke', [publicKey], none));
  }

  /**
   * Let anyone (any key, or an anonymous session) read and/or write. Only an owner may.
   * @param {{read: boolean, write: boolean}} flags @returns {Promise<void>}
   */
  setPublic(flags) {
    return this._checked(() => {
      argObject('setPublic', flags, 'flags', '{read: boolean, write: boolean}');
      argBoolean('setPublic', flags.read, 'flags.read');
      argBoolean('setPublic', flags.write, 'flags.write');
    }, () => this._send('setPublic', [flags.read, flags.write], none));
  }
  // Attachments (docs/design.md §6.7; www/lib/attachments-page.js; types in ibexdb.d.ts).
  attach(/** @type {any} */ key, /** @type {any} */ name, /** @type {any} */ data, /** @type {any} */ options) { return sendAttach(this, key, name, data, options); }
  attachment(/** @type {any} */ key, /** @type {any} */ name) { return sendAttachment(this, key, name); }
  detach(/** @type {any} */ key, /** @type {any} */ name) { return sendDetach(this, key, name); }
  attachments(/** @type {any} */ key) { return sendAttachments(this, key); }

  // Invites (docs/design.md §6.4 "Invites"; www/lib/invite.js). Owners only:
  invite(/** @type {any} */ options) {
    return this._checked(() => inviteOptions(options), (o) => sendInvite(this, o));
  }
  redeem(/** @type {string} */ link) {
    return this._checked(() => parseInvite(this.name, link), (i) => this._send('redeem', [i.secret], (t) => t === true));
  }
  invites() {
    return this._send('invites', [], parseJson);
  }
  revokeInvite(/** @type {string} */ id) {
    return this._checked(() => argString('revokeInvite', id, 'id', 'an invite id (32 hex digits)'), () => this._send('revokeInvite', [id], none));
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
    return this._checked(() => {
      if (url !== undefined && !isSyncUrls(url)) throw new InvalidValueError(`sync(url): url must be a ws:// or wss:// URL or a list of 1-${MAX_SYNC_URLS} of them, got ${describe(url)}`, { path: 'url', argument: 'url' });
    }, () => this._send('sync', [url], (t) => reviveStatus(JSON.parse(t)))).then((st) => {
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
    return waitSynced(this._syncListeners, st);
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
    argFunction('onSyncStatus', cb, 'cb');
    const f = (/** @type {SyncStatus} */ s) => void cb(s);
    this._syncListeners.add(f);
    return () => this._syncListeners.delete(f);
  }

  /** Origin usage and quota, whether storage is persistent, and this repository's bytes. @returns {Promise<import('./ibexdb.js').StorageInfo>} */
  async storageInfo() {
    const [est, persisted, stats] = await Promise.all([
      navigator.storage?.estimate ? navigator.storage.estimate() : Promise.resolve(/** @type {StorageEstimate} */ ({})),
      persistedNow(),
      this._send('storageInfo', [], parseJson),
    ]);
    this._persisted = persisted;
    return {
      usage: est.usage ?? 0,
      quota: est.quota ?? 0,
      persisted,
      repository: {
        logBytes: stats.logBytes,
        snapshotBytes: stats.snapshotBytes,
        totalBytes: stats.logBytes + stats.snapshotBytes + (this.publicKey ? 48 + 49 : 0) + stats.attachmentBytes,
        attachmentBytes: stats.attachmentBytes,
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
    this._verifyThread?.stop();
    this._verifyThread = null;
    if (error) throw fromWire(error);
    return undefined;
  }

  /** @internal Test hook: make the engine panic (the call rejects with PanicError). @param {string} [msg] */
  _debugPanic(msg = 'panic requested by a test') {
    return this._send('debugPanic', [msg], none);
  }

  /**
   * Check (and encode) the arguments, then send; a bad argument rejects the call before
   * anything is sent (never throws synchronously).
   * @template T, A
   * @param {() => A} check throws the typed error naming the bad argument; returns the encoded form
   * @param {(encoded: A) => Promise<T>} then
   * @returns {Promise<T>}
   */
  _checked(check, then) {
    let t;
    try {
      t = check();
    } catch (e) {
      return Promise.reject(e);
    }
    return then(t);
  }
}

/**
 * Check a query argument and encode it.
 * @param {string} method
 * @param {unknown} q
 * @returns {string}
 */
function queryText(method, q) {
  argQuery(method, q);
  return encode(q, 'query');
}

/**
 * Open (or create) the repository `name`.
 * @param {string} name 1-128 characters: letters, digits, '_', '-', '.'
 * @param {OpenOptions} [options]
 * @returns {Promise<Database>}
 */
export async function open(name, options = {}) {
  checkName(name);
  checkOptions(options);
  const durability = options.durability ?? 'flush';
  checkEnvironment(options.storage ?? 'auto');
  // A wrapped identity is unwrapped here, before anything starts: a wrong passphrase opens nothing.
  const given = await openIdentity(options);
  // Whether storage is persistent already (answered at once, without a prompt). Asking for it is
  // never awaited here: Firefox answers navigator.storage.persist() only when the user answers
  // its prompt (headless: never). (No navigator.storage at all in some browsers, stock
  // WebKitGTK: storage 'auto' uses IndexedDB there, and persistence is false.)
  const persisted = persistedNow();
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
          identity: given,
          recovery: options.recovery,
          quotaBytes: options.quotaBytes,
          owner: options.owner, encrypted: !!options.encrypted,
          schemas: options.schemas,
          version: options.version,
          storage: options.storage ?? 'auto',
          // The token function stays here: the worker asks this page before every dial.
          syncToken: options.syncToken != null,
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
  const db = new Database(name, worker, info, durability, options.onError, await persisted);
  db._syncToken = options.syncToken;
  if (options.persist !== false && !db.persisted) db.persist().catch(() => {});
  if (options.version !== undefined || options.sync != null) {
    try {
      // Upgrade and migrate before sync starts (schema-upgrade.js); a MigrationError closes.
      if (options.version !== undefined) await startSchemas(db, { ...options, version: options.version });
      if (options.sync == null) return db;
      if (options.invite !== undefined) await db._send('setInvite', [parseInvite(name, options.invite)], none);
      await db._send('sync', [options.sync], none); // started, not waited for: the database works offline
      if (options.invite !== undefined) db.invited = redeemIfMore(db, options.invite);
    } catch (e) {
      await db.close().catch(() => {});
      throw e;
    }
  }
  return db;
}
