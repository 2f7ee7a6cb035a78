// The ibexdb engine inside a dedicated worker, without the page API: its files (storage.js: OPFS,
// IndexedDB or memory), the identity,
// the wasm instance and panic recovery. `EngineHandle` is the one interface to the wasm engine:
// the runtime worker (`worker.js`, `worker/`), sync (`worker/sync.js`) and the benchmark adapter all call
// its methods; nothing else touches the wasm object. It can be used directly in a worker:
//
//   import { openEngine } from '/www/lib/engine.js';
//   const eng = await openEngine('bench', { trusted: false });
//   eng.put('items/1', { title: 'Item 1', count: 1, tags: new Set(['tag 1']) });
//   eng.flush();                       // durable point (one OPFS write + flush; IndexedDB: await eng.durable())
//   eng.get('items/1');                // -> { title, count, tags: Set }
//   await eng.close();                 // seal, flush, snapshot, release the files
//
// Every method except open/close/recover is synchronous. Nothing is flushed, sealed or
// snapshotted behind the caller's back: call `flush()` for durability, `seal()` (+ `flush()`)
// to sign, `maybeSnapshot()` when idle. With OPFS it must run in a dedicated worker (sync access
// handles); the IndexedDB and memory backends run anywhere (Node: www/lib/node/).

import { argCollection, argKey } from './args.js';
import { encode, encodeObject, revive } from './codec.js';
import { TxnBuilder } from './txn.js';
export { TxnBuilder };
import { ClosedError, InvalidValueError, PanicError, QuotaExceededError } from './errors.js';
import { formatIdentity, identityFile } from './identity-file.js';
import { checkName, snapshotDue } from './policy.js';
import { chooseBackend, closeAll, releaseFiles } from './storage.js';
import { engineError, isTrap, loadWasm, panicError } from './wasm-instance.js';
export { expectWasmModule, preloadWasm, provideWasmModule } from './wasm-instance.js';

/** The wasm engine of the bindings (pkg/ibexdb.d.ts); only EngineHandle calls it. @typedef {import('../../pkg/ibexdb.js').Engine} WasmEngine */
/** @typedef {import('./wasm-instance.js').Glue} Glue */

const utf8 = new TextDecoder();

/** @typedef {import('./codec.js').EngineText} EngineText */
/**
 * What the worker's attachment stores have in common (attachments.js for OPFS,
 * backends/indexeddb-attachments.js, backends/memory-attachments.js).
 * @typedef {import('./attachments.js').AttachmentStore | import('./backends/indexeddb-attachments.js').IdbAttachmentStore | import('./backends/memory-attachments.js').MemoryAttachmentStore} AttachmentStoreLike
 */

/**
 * `text` with the bytes the engine left for it (`takeBytes`), if any.
 * @param {string} text @param {WasmEngine} r @returns {EngineText}
 */
function withBytes(text, r) {
  const bytes = r.takeBytes();
  return bytes === undefined ? text : { json: text, bytes };
}

/**
 * Bytes the glue returned: wasm-bindgen copies them out of wasm memory into a new ArrayBuffer
 * (never a SharedArrayBuffer), so they can be sent or transferred as they are.
 * @param {Uint8Array} bytes
 * @returns {Uint8Array<ArrayBuffer>}
 */
const wasmBytes = (bytes) => /** @type {Uint8Array<ArrayBuffer>} */ (bytes);

/**
 * @typedef {object} EngineOptions
 * @property {boolean} [trusted] unsigned commits (no identity)
 * @property {string} [identity] an exported identity to use (and store) for this repository
 * @property {'strict'|'repair'} [recovery] what to do with damage in the middle of the log
 * @property {number} [quotaBytes] byte limit for this repository's files (QuotaExceededError)
 * @property {string} [owner] the founder's public key (hex): a root by another key is refused (PermissionError 'wrong-founder')
 * @property {boolean} [acceptTrusted] accept unsigned commits from peers
 * @property {boolean} [encrypted] found the repository end-to-end encrypted (docs/design.md §6.8)
 * @property {Record<string, object>} [schemas] collection -> schema
 * @property {number} [version] the schema version the application understands (docs/design.md §2.4)
 * @property {Record<string, object>} [appSchemas] the application's schemas at `version`, when `schemas` is not given (a takeover)
 * @property {import('./storage.js').StorageOption} [storage] where the files live (storage.js; default 'auto')
 */

/**
 * What the engine's sync client made of one server message (`EngineHandle.syncHandle`).
 * @typedef {object} SyncEvent
 * @property {'challenge' | 'welcome' | 'received' | 'acked' | 'error'} event
 * @property {number} cursor the last server sequence received
 * @property {number} pushFrom local commit-table entries before it are known to the server
 * @property {number} pending local commits the server does not know yet
 * @property {boolean} refused the server refused a push for lack of permission (pushing pauses until a grant arrives)
 * @property {number} [head] welcome: the server's last sequence
 * @property {{read: boolean, write: boolean, administer: boolean}} [rights] welcome: what this session may do
 * @property {number} [applied] received: commits applied
 * @property {number} [duplicates] received: commits already held
 * @property {number} [count] acked: commits the server stored
 * @property {number} [code] error: the server's error code (docs/design.md §12.2)
 * @property {string} [name] error: its stable name (`Error::name`, a class of errors.js)
 * @property {string | null} [kind] error: its kind (a PermissionError's, AuthError's, SignatureError's kind; a LimitError's limit)
 * @property {string} [message] error: its text
 */

/**
 * Sizes and counters of an open repository (`Engine.stats` of the bindings).
 * @typedef {object} EngineStats
 * @property {number} logBytes
 * @property {number} snapshotBytes
 * @property {number} tailBytes log bytes not covered by the snapshot
 * @property {number} unsealed
 * @property {boolean} unflushed
 * @property {number} commits
 * @property {number} items
 * @property {number} pending commits waiting for missing parents
 * @property {{fromSnapshot: boolean, replayedFrames: number, truncatedTail: number[] | null, repaired: number[][], snapshotMs: number, replayMs: number}} open what open found, and where its time went (ms, by the engine clock: coarse): reading the snapshot's meta section (items load on first use), replaying the log's tail
 */

/**
 * One open repository: the wasm `Engine` plus its OPFS handles, and the only code that touches
 * the wasm object. Everything the runtime worker (`worker.js`, `worker/`), sync (`worker/sync.js`) and the
 * benchmark adapter need is a method here, and every call goes through the same error mapping
 * (core errors become `IbexError` subclasses, traps become `PanicError` and mark the handle dead).
 *
 * Values and queries cross as JSON text (`…Json`: the worker passes on what the page encoded,
 * and the page decodes the answer); `get`, `put`, `count`, `keys`, `defineSchema` and
 * `transaction` also take JS values, for code that uses the engine directly (the benchmark).
 * Keys and collections are checked to be strings before they reach the wasm engine (args.js).
 *
 * Reads, writes and maintenance are synchronous; only `close()` and `recover()` are async.
 * Nothing is flushed, sealed or snapshotted behind the caller's back: the worker decides when
 * (policy.js).
 */
export class EngineHandle {
  /** @param {string} name @param {EngineOptions} opts */
  constructor(name, opts) {
    /** Repository name (also the OPFS directory). */
    this.name = name;
    /** @type {EngineOptions} */
    this.options = opts;
    /** @type {WasmEngine | null} the wasm Engine; touched only through `_call` */
    this._raw = null;
    /** @type {any[]} open sync access handles */
    this._handles = [];
    /** @type {Map<string, string>} collection -> schema JSON, re-declared after recovery */
    this._schemas = new Map();
    /** @type {{version: number, schemasJson: string} | null} the application's declared version, re-declared after recovery */
    this._app = null;
    /** @type {TxnBuilder | null} the builder `transaction(fn)` reuses */
    this._builder = null;
    this._dead = false;
    this._generation = 0;
    /** @type {string|null} this repository's public key, hex (null in trusted mode) */
    this.publicKey = null;
    /**
     * Where the last open's time went (ms): acquiring the OPFS files' sync access handles, then
     * waiting for the wasm instance, then the engine's own open (identity, snapshot meta, log).
     * @type {{files: number, wasm: number, engine: number} | null}
     */
    this.openMs = null;
    /** @type {WebAssembly.Memory | null} the instance's memory (getInto results are read from it) */
    this._memory = null;
    /** Views of `_memory` (re-made when a memory.grow detaches them). */
    this._u8 = new Uint8Array(0);
    this._u32 = new Uint32Array(0);
    /** u32 index in memory of the engine's getInto `[ptr, len]` slot */
    this._slot = 0;
    /** @type {Glue | null} the glue module of the instance (its static functions) */
    this._glue = null;
    /** @type {Map<string, any>} files opened after the open (`file()`), also in `_handles` */
    this._extraFiles = new Map();
    /** @type {(() => void) | null} called after every successful flush (sync captures its durable position) */
    this.afterFlush = null;
    /** @type {AttachmentStoreLike | null} the attachment files (the worker's: OPFS, IndexedDB or memory) */
    this.attachmentStore = null;
    /** @type {import('./storage.js').StorageBackend} where the files live (set by openEngine) */
    this.backend = /** @type {any} */ (null);
  }

  /** Which backend holds the files: 'opfs', 'indexeddb' or 'memory'. */
  get storage() {
    return this.backend.kind;
  }

  /**
   * Resolves when every flush so far is durable. A sync access handle's flush is durable when it
   * returns; the IndexedDB backend's completes later (its transaction's `complete` event), and
   * a failure is thrown here (QuotaExceededError, StorageUnavailableError): then the files must
   * be reopened (`recover()`), which goes back to what is durable.
   */
  async durable() {
    await this.backend.durable(this.name);
  }

  /** Whether the backend failed under the open files (a flush that did not land): `recover()` before going on. */
  get broken() {
    return this._raw !== null && this.backend.failure(this.name) !== null;
  }

  /** @param {string[]} files */
  async _openFiles(files) {
    try {
      return await this.backend.openFiles(this.name, files);
    } catch (e) {
      // 'auto' took OPFS, whose sync access handles turn out not to work (WebKit's non-Cocoa
      // ports have the method, not the backend): IndexedDB instead, for this handle's lifetime.
      if (this.options.storage !== 'auto' && this.options.storage !== undefined) throw e;
      if (this.backend.kind !== 'opfs' || /** @type {any} */ (e)?.kind !== 'no-sync-handles') throw e;
      this.backend = await chooseBackend('indexeddb');
      return this.backend.openFiles(this.name, files);
    }
  }

  /** @param {boolean} fresh a new wasm instance (after a panic) */
  async _open(fresh) {
    // The wasm instance and the OPFS files are independent: get them at the same time.
    const wasm = loadWasm(fresh);
    wasm.catch(() => {}); // awaited below, after the files (then closed on failure)
    const opts = this.options;
    const trusted = !!opts.trusted;
    const t0 = performance.now();
    const handles = await this._openFiles(trusted ? ['log', 'snapshot'] : ['identity', 'log', 'snapshot']);
    const t1 = performance.now();
    try {
      const { glue, memory } = await wasm;
      const t2 = performance.now();
      /** @type {Uint8Array | undefined} */
      let secret;
      /** @type {Uint8Array | undefined} */
      let publicKey;
      if (!trusted) {
        const idh = /** @type {any} */ (handles.shift());
        try {
          ({ secret, publicKey } = await identityFile(idh, opts.identity, glue));
        } finally {
          releaseFiles(this.backend, this.name, [idh]);
        }
      }
      const [log, snap] = handles;
      const engineOpts = JSON.stringify({
        name: this.name,
        trusted,
        acceptTrusted: opts.acceptTrusted ?? trusted,
        recovery: opts.recovery ?? 'strict',
        quotaBytes: opts.quotaBytes ?? null,
        expectedFounder: opts.owner ?? null,
        encrypted: !!opts.encrypted,
      });
      try {
        this._raw = glue.Engine.open(log, snap, engineOpts, secret, publicKey);
      } catch (e) {
        throw isTrap(e) ? panicError(e) : engineError(e);
      }
      this._handles = handles;
      this._glue = glue;
      this._dead = false;
      this._generation++;
      this._memory = memory;
      this._u8 = new Uint8Array(0);
      this._slot = this._raw.outSlot() >>> 2;
      this.publicKey = this._raw.publicKey() ?? null;
      try {
        for (const [c, s] of this._schemas) this._raw.defineSchema(c, s);
        if (this._app) this._raw.declareApp(this._app.version, this._app.schemasJson);
      } catch (e) {
        // A schema given at open that the engine refuses: its typed error, as from `_call`.
        throw isTrap(e) ? panicError(e) : engineError(e);
      }
      this.openMs = { files: t1 - t0, wasm: t2 - t1, engine: performance.now() - t2 };
    } catch (e) {
      closeAll(handles);
      throw e;
    }
  }

  /**
   * Run a synchronous call on the wasm object, mapping errors (and traps) to ibexdb errors.
   * @template T
   * @param {(raw: WasmEngine) => T} f
   * @returns {T}
   */
  _call(f) {
    if (this._dead) throw new PanicError('the engine panicked earlier and has not been recovered (await recover())');
    if (this._raw === null) throw new ClosedError(`repository ${this.name} is closed`);
    try {
      return f(this._raw);
    } catch (e) {
      if (isTrap(e)) {
        this._dead = true;
        throw panicError(e);
      }
      throw engineError(e);
    }
  }

  /**
   * `_call` for a call that returns JSON text: with the bytes its `{"$bytes": i}` stand for,
   * taken out of wasm memory right after it (codec.js `EngineText`).
   * @param {(r: WasmEngine) => string} f
   * @returns {EngineText}
   */
  _callText(f) {
    return this._call((r) => withBytes(f(r), r));
  }

  /** Whether a panic left the engine unusable (call `recover()`). */
  get dead() {
    return this._dead;
  }

  /**
   * Counts the wasm Engines this handle has opened: 1 after `openEngine`, one more after every
   * `recover()`. State that lives inside the engine (live queries, the sync client) must be
   * re-created when it changes.
   */
  get generation() {
    return this._generation;
  }

  /** Whether the repository was opened in trusted mode (unsigned commits). */
  get trusted() {
    return !!this.options.trusted;
  }

  /** Bytes of the wasm instance's linear memory (a high-water mark: it never shrinks). */
  get memoryBytes() {
    return this._memory ? this._memory.buffer.byteLength : 0;
  }

  /**
   * After a PanicError: drop the trapped instance, release the files and reopen the
   * repository from OPFS in a fresh wasm instance (what was not flushed is gone). Schemas
   * declared before are declared again.
   */
  async recover() {
    this._release();
    this._raw = null;
    await this._open(true);
  }

  _release() {
    releaseFiles(this.backend, this.name, this._handles);
    this._handles = [];
    this._extraFiles.clear();
  }

  // ----- reads -------------------------------------------------------------------------

  /**
   * The text `getInto` left in wasm memory (valid until the next engine call): decoded from
   * the engine's reused buffer, which saves the glue's per-call string allocation and free.
   */
  _outText() {
    let u8 = this._u8;
    if (u8.byteLength === 0) {
      // First use, or memory.grow detached the old views.
      const buf = /** @type {WebAssembly.Memory} */ (this._memory).buffer;
      u8 = this._u8 = new Uint8Array(buf);
      this._u32 = new Uint32Array(buf);
    }
    const ptr = this._u32[this._slot];
    return utf8.decode(u8.subarray(ptr, ptr + this._u32[this._slot + 1]));
  }
  /** @param {string} key @returns {any} the item, or undefined */
  get(key) {
    argKey('get', key);
    const st = this._call((r) => r.getInto(key));
    if (st === 0) return undefined;
    const v = JSON.parse(this._outText());
    // 2: the item holds a set, 4: bytes (the engine says so; no need to scan the text).
    if (st & 4) return revive(v, this._call((r) => r.takeBytes()));
    return st & 2 ? revive(v) : v;
  }
  /** @param {string} key @returns {EngineText | undefined} the item's JSON text (and its bytes) */
  getJson(key) {
    argKey('get', key);
    const st = this._call((r) => r.getInto(key));
    if (st === 0) return undefined;
    const text = this._outText();
    return st & 4 ? this._call((r) => withBytes(text, r)) : text;
  }
  /** @param {string} keysJson a JSON array of keys @returns {EngineText} a JSON array, null where missing */
  getManyJson(keysJson) {
    return this._callText((r) => r.getMany(keysJson));
  }
  /** @param {string} qJson @returns {EngineText} `[[id, value], ...]` */
  queryJson(qJson) {
    return this._callText((r) => r.query(qJson));
  }
  /** @param {string} qJson @returns {string} `{"rows": [[id, value], ...], "cursor": string | null}` */
  queryPageJson(qJson) {
    return this._call((r) => r.queryPage(qJson));
  }
  /** @param {string} qJson @returns {string} */
  explainJson(qJson) {
    return this._call((r) => r.explain(qJson));
  }
  /** @param {string} collection @param {object} [where] @returns {number} */
  count(collection, where) {
    return this.countJson(collection, where === undefined ? undefined : encode(where, 'where'));
  }
  /** @param {string} collection @param {string | null} [whereJson] @returns {number} */
  countJson(collection, whereJson) {
    argCollection('count', collection);
    return this._call((r) => r.count(collection, whereJson ?? undefined));
  }
  /** @param {string} collection @returns {string[]} */
  keys(collection) {
    return JSON.parse(this.keysJson(collection));
  }
  /** @param {string} collection @returns {string} a JSON array of ids */
  keysJson(collection) {
    argCollection('keys', collection);
    return this._call((r) => r.keys(collection));
  }
  /** @param {string} qJson @returns {EngineText} */
  aggregateJson(qJson) {
    return this._callText((r) => r.aggregate(qJson));
  }
  /** @param {string} key @returns {EngineText} */
  historyJson(key) {
    argKey('history', key);
    return this._callText((r) => r.history(key));
  }

  // ----- writes (buffered until flush) -------------------------------------------------

  /** @param {string} key @param {object} value */
  put(key, value) {
    const text = encodeObject(value, key);
    // Bytes travel as bytes: a transaction's (txn.js), not JSON text.
    if (text === undefined) this.transaction((tx) => tx.put(key, value));
    else this.putJson(key, text);
  }
  /** @param {string} key @param {string} valueJson */
  putJson(key, valueJson) {
    argKey('put', key);
    this._call((r) => r.put(key, valueJson));
  }
  /** @param {string} key @param {string} fieldsJson */
  updateJson(key, fieldsJson) {
    argKey('update', key);
    this._call((r) => r.update(key, fieldsJson));
  }
  /** @param {string} key */
  delete(key) {
    argKey('delete', key);
    this._call((r) => r.delete(key));
  }
  // ----- attachments (the files: attachments.js; docs/design.md §6.7)

  /** Record an attachment whose bytes are stored. @param {string} key @param {string} name @param {string} hash @param {number} size @param {string} type */
  attach(key, name, hash, size, type) {
    argKey('attach', key);
    typed('attach', { name, hash, type }, 'string');
    typed('attach', { size }, 'number');
    this._call((r) => r.attach(key, name, hash, size, type));
  }
  /** Remove an attachment; false when the item had none of that name. @param {string} key @param {string} name @returns {boolean} */
  detach(key, name) {
    argKey('detach', key);
    typed('detach', { name }, 'string');
    return this._call((r) => r.detach(key, name));
  }
  /** The item's attachments, JSON `[{name, hash, size, type}]`. @param {string} key @returns {string} */
  attachmentsJson(key) {
    return this._call((r) => r.attachments(key));
  }
  /** Every hash a visible item refers to. @returns {string[]} */
  attachmentHashes() {
    return JSON.parse(this._call((r) => r.attachmentHashes()));
  }
  /** Whether the repository is end-to-end encrypted (docs/design.md §6.8). @returns {boolean} */
  isEncrypted = () => this._call((r) => r.isEncrypted());
  /** Count attachment bytes against `quotaBytes` (QuotaExceededError). @param {number} bytes */
  quotaCharge(bytes) {
    this._call((r) => r.quotaCharge(bytes));
  }
  /** @param {number} bytes */
  quotaRelease(bytes) {
    this._call((r) => r.quotaRelease(bytes));
  }
  /** An incremental SHA-256 (the core's). */
  newHasher() {
    if (!this._glue) throw new ClosedError(`repository ${this.name} is closed`);
    return new this._glue.Sha256Stream();
  }

  /**
   * One atomic commit. `ops` is a function receiving a `TxnBuilder` (put / update / delete /
   * unset / setAdd / setRemove), a builder, or the bytes a builder made (`tx.bytes()`: how the
   * page hands a transaction to the worker; docs/design.md §3.3).
   * @param {((tx: TxnBuilder) => void) | TxnBuilder | Uint8Array} ops
   */
  transaction(ops) {
    if (typeof ops === 'function') {
      // One builder per handle, its buffer reused (a transaction started inside `ops` gets its own).
      const tx = this._builder?.clear() ?? new TxnBuilder();
      this._builder = null;
      try {
        ops(tx);
        this.transaction(tx);
      } finally {
        this._builder = tx;
      }
      return;
    }
    if (ops instanceof TxnBuilder) ops = ops.view();
    if (ops instanceof Uint8Array) {
      const bytes = ops;
      this._call((r) => r.transactBytes(bytes));
    } else {
      throw new InvalidValueError(`transaction(ops): ops must be a function, a TxnBuilder or its bytes, got ${ops === null ? 'null' : typeof ops}`, { path: 'ops', argument: 'ops' });
    }
  }
  /** @param {string} collection @param {object} schema */
  defineSchema(collection, schema) {
    this.defineSchemaJson(collection, JSON.stringify(schema));
  }
  /**
   * Declare (or replace) a collection's schema. The handle keeps it and declares it again on
   * every engine it opens (`recover()`).
   * @param {string} collection @param {string} schemaJson
   */
  defineSchemaJson(collection, schemaJson) {
    argCollection('defineSchema', collection);
    this._call((r) => r.defineSchema(collection, schemaJson));
    this._schemas.set(collection, schemaJson);
  }

  // ----- stored schemas and migrations (docs/design.md §2.4) ---------------------------

  /**
   * `{version, app, commits, mayUpgrade, mayWrite, schemas: {collection: version}, readOnly}` as JSON text.
   * @returns {string}
   */
  schemaInfo() {
    return this._call((r) => r.schemaInfo());
  }
  /**
   * Store the schemas (JSON `{collection: schema}`) at `version`, one commit; whether anything was written.
   * @param {number} version @param {string} schemasJson @returns {boolean}
   */
  storeSchemas(version, schemasJson) {
    return this._call((r) => r.storeSchemas(version, schemasJson));
  }
  /**
   * Check migrated items (`[[id, item], ...]` as JSON) against the declared schemas: SchemaError for the first bad one.
   * @param {string} collection @param {string} rowsJson
   */
  checkMigrated(collection, rowsJson) {
    argCollection('checkMigrated', collection);
    this._call((r) => r.checkMigrated(collection, rowsJson));
  }
  /**
   * Whether a commit at commit-table index `since` or later was written under a version below `target`.
   * @param {number} since @param {number} target @returns {boolean}
   */
  olderCommitsSince(since, target) {
    return this._call((r) => r.olderCommitsSince(since, target));
  }
  /**
   * What a migration to `target` has left in `collection`: JSON `[[id, fromVersion, item], ...]`.
   * @param {string} collection @param {string} stepsJson @param {number} target @returns {EngineText} (with the bytes its items hold)
   */
  migrationPending(collection, stepsJson, target) {
    argCollection('migrationPending', collection);
    return this._callText((r) => r.migrationPending(collection, stepsJson, target));
  }

  // ----- live queries ------------------------------------------------------------------

  /**
   * Start a live query. `rowsJson` is its first result, `[[id, value], ...]` (decode with
   * codec.decodeRows); its changes come from `takeLiveChanges()` under `id`.
   * @param {string} qJson @returns {{id: number, rowsJson: EngineText}}
   */
  subscribeJson(qJson) {
    const live = this._call((r) => r.subscribe(qJson));
    try {
      return { id: live.id, rowsJson: this._call((r) => withBytes(live.takeRows(), r)) };
    } finally {
      live.free();
    }
  }
  /** @param {number} id @returns {boolean} whether it existed */
  unsubscribe(id) {
    return this._call((r) => r.unsubscribe(id));
  }
  /** @returns {EngineText | undefined} JSON text of the live changes since the last call (and their bytes) */
  takeLiveChanges() {
    return this._call((r) => {
      const text = r.takeLiveChanges();
      return text === undefined ? undefined : withBytes(text, r);
    });
  }

  // ----- durability --------------------------------------------------------------------

  /** Write buffered frames with one write and flush (durable on return with OPFS; IndexedDB: `await durable()`). */
  flush() {
    this._call((r) => r.flush());
    this.afterFlush?.();
  }
  /** @returns {boolean} whether anything waits to be written or flushed */
  hasUnflushed() {
    return this._call((r) => r.hasUnflushed());
  }
  /** Sign unsealed local commits (one signature); returns the number of seals (buffered). */
  seal() {
    return /** @type {number} */ (this._call((r) => r.seal()));
  }
  /**
   * What to sign to seal the unsealed local commits outside the engine (WebCrypto): the number
   * of commits the seal covers and the message; undefined when nothing waits for a seal.
   * @returns {{count: number, message: Uint8Array} | undefined}
   */
  sealRequest() {
    const r = this._call((raw) => raw.sealRequest());
    return r ? { count: r[0], message: r[1] } : undefined;
  }
  /**
   * Seal the first `count` unsealed commits with a signature made over `sealRequest()`'s
   * message with this repository's key (ECDSA P-384 / SHA-384, 96 bytes r ‖ s). Not re-checked
   * here; receivers and `verify()` check it. Buffered: flush afterwards.
   * @param {number} count @param {Uint8Array} signature
   */
  sealWith(count, signature) {
    this._call((r) => r.sealWith(count, signature));
  }
  /** The 48-byte identity secret (null in trusted mode). Keep it in the worker. @returns {Uint8Array | null} */
  identitySecret() {
    return this._call((r) => r.identitySecret()) ?? null;
  }
  /**
   * The uncompressed form (97 bytes, `04 ‖ x ‖ y`) of a compressed public key (49 bytes).
   * @param {Uint8Array} compressed
   * @returns {Uint8Array}
   */
  uncompressedKey(compressed) {
    return this._call(() => /** @type {Glue} */ (this._glue).Engine.uncompressedKey(compressed));
  }
  /** @returns {number} local commits waiting for a seal */
  unsealed() {
    return this._call((r) => r.unsealed());
  }
  /** Write a snapshot if one is due (policy.js snapshotDue; `force`: the tail is non-empty). */
  maybeSnapshot(force = false) {
    if (snapshotDue(this.stats(), force)) {
      this._call((r) => r.writeSnapshot());
      return true;
    }
    return false;
  }
  /** @returns {string} */
  verifyJson() {
    return this._call((r) => r.verify());
  }
  /**
   * Every seal of the log as a signature check, to verify with WebCrypto before
   * `verifyVouchedJson` (worker/verify.js): the log length the list covers, and
   * `[authorKey (49 bytes), message, signature (96 bytes)]` per seal. Damage in the log is
   * thrown, as `verify()` would report it.
   * @returns {{logLength: number, checks: [Uint8Array, Uint8Array, Uint8Array][]}}
   */
  sealChecksAll() {
    const [logLength, checks] = this._call((r) => r.sealChecksAll());
    return { logLength, checks };
  }
  /**
   * `verify()` for a caller that verified every signature `sealChecksAll()` listed, with
   * nothing written in between: those signatures are not verified again (the report counts
   * them in `signaturesVouched`); every other check runs.
   * @param {number} logLength from `sealChecksAll()`
   * @returns {string} the report (JSON)
   */
  verifyVouchedJson(logLength) {
    return this._call((r) => r.verifyVouched(logLength));
  }
  /** @returns {EngineStats} */
  stats() {
    return JSON.parse(this.statsJson());
  }
  /** @returns {string} */
  statsJson() {
    return this._call((r) => r.stats());
  }

  // ----- exchange and identity ---------------------------------------------------------

  /** @returns {Uint8Array} every commit and seal (for another peer's `receive`) */
  exportCommits() {
    // Nothing leaves the device unsigned: seal (and flush the seal) first.
    if (this.seal() > 0) this.flush();
    return this._call((r) => r.exportCommits());
  }
  /** Verify and apply another replica's `exportCommits()` (all or nothing). @param {Uint8Array} bundle @returns {string} the report (JSON) */
  receiveJson(bundle) {
    return this._call((r) => r.receive(bundle));
  }
  /** The identity secret in exportable form (null in trusted mode). */
  exportIdentity() {
    const s = this._call((r) => r.identitySecret());
    return s ? formatIdentity(s) : null;
  }

  // ----- access list (docs/design.md §6.4; each change is one ordinary commit) -----------

  /** Give a key (98 hex digits) a role (`owner`, `writer`, `reader`; the engine checks both). @param {string} publicKey @param {string} role */
  grant(publicKey, role) {
    typed('grant', { publicKey, role }, 'string');
    this._call((r) => r.grant(publicKey, role));
  }
  /** Take a key's role away. @param {string} publicKey */
  revoke(publicKey) {
    typed('revoke', { publicKey }, 'string');
    this._call((r) => r.revoke(publicKey));
  }
  /** Set the public switches. @param {boolean} read @param {boolean} write */
  setPublic(read, write) {
    typed('setPublic', { read, write }, 'boolean');
    this._call((r) => r.setPublic(read, write));
  }
  /** Write an invite (owners only; docs/design.md §6.4 "Invites"). @param {Uint8Array} secret @param {string} role @param {number} expires @param {number} uses @returns {string} `{id, commit}` as JSON */
  invite(secret, role, expires, uses) {
    return this._call((r) => r.invite(secret, role, expires, uses));
  }
  /** Redeem an invite this replica's history holds: false when nothing was written (the key already has the role). @param {Uint8Array} secret @returns {boolean} */
  redeem(secret) {
    return this._call((r) => r.redeem(secret));
  }
  /** Revoke an invite. @param {string} id */
  revokeInvite(id) {
    typed('revokeInvite', { id }, 'string');
    this._call((r) => r.revokeInvite(id));
  }
  /** @returns {string} `[{id, role, expires, uses, used, revoked}]` as JSON */
  invitesJson() {
    return this._call((r) => r.invites());
  }
  /** The encoded Push redeeming an invite from its link alone. @param {Uint8Array} secret @param {string} role @param {string} commit */
  redemptionPush(secret, role, commit) {
    return wasmBytes(this._call((r) => r.redemptionPush(secret, role, commit)));
  }
  /** @returns {string} `{owned, public: {read, write}, members: [{publicKey, role}]}` as JSON */
  membersJson() {
    return this._call((r) => r.members());
  }

  // ----- sync (the core's sync client inside the engine; docs/design.md §12.2) ----------

  /**
   * Create the engine's sync client for repository `name` on the server at `url` (as dialed:
   * it is bound into the session proof), resuming at `cursor` (last server sequence received)
   * and `pushFrom` (local commits before it are known there).
   * @param {string} name @param {string} url @param {number} cursor @param {number} pushFrom
   */
  syncStart(name, url, cursor, pushFrom) {
    this._call((r) => r.syncStart(name, url, cursor, pushFrom));
  }
  /** A new connection: resets the client's connection state (nothing is sent until the server's challenge). */
  syncConnect() {
    this._call((r) => r.syncConnect());
  }
  /**
   * Dial `url` from the next connection on (another node of the same deployment), keeping the
   * cursor and push position. @param {string} url
   */
  syncSetUrl(url) {
    this._call((r) => r.syncSetUrl(url));
  }
  /**
   * Handle one message from the server (received commits are verified and applied).
   * `vouched`: the caller verified every seal signature in it (`syncSealChecks`); the core
   * then skips only those checks.
   * @param {Uint8Array} bytes
   * @param {boolean} [vouched]
   * @returns {SyncEvent}
   */
  syncHandle(bytes, vouched = false) {
    return JSON.parse(this._call((r) => r.syncHandle(bytes, vouched)));
  }
  /**
   * The seals of a server message, to verify with WebCrypto before `syncHandle(bytes, true)`:
   * `[authorKey (49 bytes), message, signature (96 bytes)]` each; undefined when a seal does not
   * decode (let `syncHandle(bytes)` report it).
   * @param {Uint8Array} bytes
   * @returns {[Uint8Array, Uint8Array, Uint8Array][] | undefined}
   */
  syncSealChecks(bytes) {
    return this._call(() => /** @type {Glue} */ (this._glue).Engine.syncSealChecks(bytes));
  }
  /**
   * The next message to send, if any: after a challenge the signed Hello; after the Welcome,
   * pushes of what the server lacks (unsealed commits are sealed first).
   * @returns {Uint8Array<ArrayBuffer> | undefined}
   */
  syncOutgoing() {
    const m = this._call((r) => r.syncOutgoing());
    return m ? wasmBytes(m) : undefined;
  }
  /** @returns {number} local commits the server does not know yet */
  syncPending() {
    return this._call((r) => r.syncPending());
  }

  /**
   * A file of the repository beside its log (e.g. `sync`, worker/sync-position.js), opened
   * with a sync access handle on first use and released with the others.
   * @param {string} name
   * @returns {Promise<any>} the file's sync access handle
   */
  async file(name) {
    if (this._raw === null) throw new ClosedError(`repository ${this.name} is closed`);
    let h = this._extraFiles.get(name);
    if (!h) {
      [h] = await this.backend.openFiles(this.name, [name]);
      if (this._raw === null) {
        closeAll([h]);
        throw new ClosedError(`repository ${this.name} is closed`);
      }
      this._extraFiles.set(name, h);
      this._handles.push(h);
    }
    return h;
  }

  /**
   * Leave nothing pending: seal unsealed commits, flush what is buffered, and write a snapshot
   * when the log tail is non-empty. What `close()` does before it releases the files (the
   * benchmark times it as the trailing work of a row's writes).
   * @returns {{sealed: number, snapshot: boolean}}
   */
  settle() {
    const sealed = this.seal();
    if (sealed > 0 || this.hasUnflushed()) this.flush();
    return { sealed, snapshot: this.maybeSnapshot(true) };
  }

  /**
   * Seal, flush, snapshot (if the tail is non-empty), release the files. Out of room, the seal
   * and the snapshot wait for a later session (the commits are durable; the engine's close
   * drops only seals it cannot write): close fails only for commits it could not write.
   * `free: false` leaves the repository's memory to the end of the worker, for a worker that
   * is terminated right after (the page API's): freeing every loaded item would cost
   * milliseconds of the close for memory the worker's end frees anyway.
   * @param {{free?: boolean}} [opts]
   */
  async close({ free = true } = {}) {
    if (this._raw && !this._dead) {
      try {
        try {
          this.settle();
        } catch (e) {
          if (!(e instanceof QuotaExceededError)) throw e;
        }
        this._call((r) => (free ? r.close() : r.closeWithoutFree()));
        await this.durable();
      } finally {
        this._release();
        try {
          this._raw.free();
        } catch {
          // freed already
        }
        this._raw = null;
      }
    } else {
      // A dead engine's flushes already queued (IndexedDB) land before the files (and the lock)
      // go to the next owner; a failed one was reported when it failed.
      await this.durable().catch(() => {});
      this._release();
      this._raw = null;
    }
  }

  /** Test hook: make the engine panic. @param {string} msg */
  panicForTest(msg) {
    this._call((r) => r.panicForTest(msg));
  }
}

/**
 * Refuse arguments of another JavaScript type than `type` before the engine sees them (a number
 * where wasm-bindgen expects a string traps inside the engine: a PanicError, not a refusal).
 * @param {string} method @param {Record<string, unknown>} args @param {'string' | 'number' | 'boolean'} type
 */
function typed(method, args, type) {
  for (const [k, v] of Object.entries(args)) {
    if (typeof v !== type) throw new InvalidValueError(`${method}(${k}): ${k} must be a ${type}, got ${typeof v}`, { path: k, argument: k });
  }
}

/**
 * Open (or create) repository `name` in this worker's storage (`opts.storage`). Only one context may hold a
 * repository's files at a time (the page API elects an owner with Web Locks; a direct user of
 * this function must ensure it).
 * @param {string} name
 * @param {EngineOptions} [opts]
 * @param {import('./storage.js').StorageBackend} [backend] the backend `opts.storage` chose (chosen here when absent)
 * @returns {Promise<EngineHandle>}
 */
export async function openEngine(name, opts = {}, backend) {
  checkName(name);
  const eng = new EngineHandle(name, opts);
  eng.backend = backend ?? (await chooseBackend(opts.storage));
  for (const [c, s] of Object.entries(opts.schemas ?? {})) eng._schemas.set(c, JSON.stringify(s));
  if (opts.version !== undefined) eng._app = { version: opts.version, schemasJson: JSON.stringify(opts.schemas ?? opts.appSchemas ?? {}) };
  await eng._open(false);
  return eng;
}
