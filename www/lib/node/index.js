// ibexdb in Node >= 20 (`import { open } from 'ibexdb/node'`): the same wasm engine as in the
// browser, in the calling thread, for unit tests of an app's data code (Vitest, node:test),
// server-side rendering, scripts and backends that sync with an ibexdb-server.
//
//   const db = await open('notes', { storage: 'memory' });            // gone at close()
//   const db = await open('notes', { directory: './data' });          // ./data/notes/{log,snapshot,...}
//   await db.put('notes/1', { title: 'Buy milk' });
//   await db.query({ collection: 'notes' });
//   await db.sync('ws://127.0.0.1:8787');                             // resolves when synced
//   await db.close();
//
// The methods are the browser Database's (ibexdb.d.ts) with the same arguments, results and
// typed errors (live queries included: their changes are delivered when a write or a received
// commit is applied, before the write resolves). Files on disk are the OPFS files byte for
// byte (./disk.js); one process may open a repository at a time (a lock file: another process
// is refused with StorageUnavailableError kind 'locked' and the holder's `pid`, at once or after
// waiting `lockTimeout` ms for the holder to close). Durability as in
// the browser: 'flush' (default) resolves a write after fsync (the writes of one tick share it),
// 'relaxed' within ~50 ms. Sync uses the `ws` package as its WebSocket where Node has none (Node
// 20, 21). WebCrypto is Node's own (signatures on sync's critical path).

import { readFileSync } from 'node:fs';
import { argBoolean, argCollection, argFunction, argKey, argKeys, argObject, argPublicKey, argString, describe, isPlainObject } from '../args.js';
import { inviteLink, inviteOptions, inviteSecret, parseInvite, redeemIfMore } from '../invite.js';
import { decode, decodeMany, decodePage, decodeRows, encode, encodeObject } from '../codec.js';
import { openEngine, provideWasmModule } from '../engine.js';
import { AttachmentNotFoundError, AttachmentUnavailableError, ClosedError, IbexError, InvalidValueError, NotFoundError, PanicError, fromWire } from '../errors.js';
import { WASM_URL, isSyncUrls } from '../policy.js';
import { createMemoryBackend } from '../backends/memory.js';
import { LiveQuery, applyChange, publicChange } from '../live-query.js';
import { TxnBuilder } from '../txn.js';
import { Collection } from '../collection.js';
import { Maintenance } from '../worker/maintenance.js';
import { SyncManager } from '../worker/sync.js';
import { verifyRepository } from '../worker/verify.js';
import { waitSynced } from '../sync-wait.js';
import { fetchToken, isSyncTokenOption } from '../sync-token.js';
import { diskBackend } from './disk.js';
import { NodeAttachments } from './attachments.js';
import { attachArgs } from '../attachments-page.js';
import path from 'node:path';
import { checkVersionOptions, startSchemas } from '../schema-upgrade.js';
import { exportPassphrase, openIdentity, wrapIdentity } from '../identity-wrap.js';

export * from '../errors.js';

const OPTIONS = ['storage', 'directory', 'lockTimeout', 'durability', 'trusted', 'identity', 'passphrase', 'schemas', 'version', 'migrations', 'onMigrationProgress', 'recovery', 'quotaBytes', 'acceptTrusted', 'encrypted', 'sync', 'invite', 'syncToken', 'onError'];

let wasmReady = false;
/** @type {any} the `ws` package's WebSocket: it can send headers (Authorization), Node's own cannot */
let WsSocket = null;
async function prepare() {
  if (!wasmReady) {
    provideWasmModule(new WebAssembly.Module(readFileSync(WASM_URL)));
    wasmReady = true;
  }
  WsSocket ??= (await import('ws')).WebSocket;
  if (typeof globalThis.WebSocket !== 'function') {
    /** @type {any} */ (globalThis).WebSocket = WsSocket;
  }
}

/**
 * Sync's WebSocket to `url`: with a bearer token the `ws` package's, the token in an
 * `Authorization: Bearer` header (never in the URL); without one the global WebSocket.
 * @param {string} url @param {string | null} token
 * @returns {WebSocket}
 */
const dialNode = (url, token) => (token === null ? new WebSocket(url) : new WsSocket(url, { headers: { Authorization: `Bearer ${token}` } }));

/** @param {string} k @param {string} what @param {unknown} v */
const bad = (k, what, v) => new InvalidValueError(`open(options): options.${k} must be ${what}, got ${describe(v)}`, { path: `options.${k}`, argument: `options.${k}` });

/**
 * The options whose type open() checks here (the page's open-options.js checks the same; the
 * others are checked below where they are used): InvalidValueError naming the option.
 * @param {Record<string, any>} options
 */
function checkTypes(options) {
  for (const [k, v] of Object.entries(options)) {
    if (v === undefined) continue;
    switch (k) {
      case 'recovery':
        if (v !== 'strict' && v !== 'repair') throw bad(k, "'strict' or 'repair'", v);
        break;
      case 'trusted':
      case 'acceptTrusted':
        if (typeof v !== 'boolean') throw bad(k, 'a boolean', v);
        break;
      case 'passphrase':
        if (typeof v !== 'string' || v === '') throw bad(k, 'a non-empty string (the one given to exportIdentity({passphrase}))', v);
        break;
      case 'quotaBytes':
        if (typeof v !== 'number' || !Number.isSafeInteger(v) || v <= 0) throw bad(k, 'a positive whole number of bytes', v);
        break;
      case 'schemas':
        if (!isPlainObject(v)) throw bad(k, 'an object {collection: schema}', v);
        for (const [c, schema] of Object.entries(v)) {
          if (!isPlainObject(schema)) throw bad(`schemas.${c}`, 'a schema object', schema);
          encode(schema, 'schema'); // a cycle or a BigInt: its typed error
        }
        break;
      case 'onError':
        if (typeof v !== 'function') throw bad(k, 'a function', v);
        break;
      default:
    }
  }
}

/**
 * Open (or create) repository `name`: in memory (`storage: 'memory'`, the default without a
 * directory) or on disk under `directory` (`storage: 'disk'`).
 * @param {string} name
 * @param {import('./index.js').NodeOpenOptions} [options]
 * @returns {Promise<NodeDatabase>}
 */
export async function open(name, options = {}) {
  if (!isPlainObject(options)) throw new InvalidValueError(`open(options): options must be an object (or absent), got ${describe(options)}`, { path: 'options', argument: 'options' });
  for (const k of Object.keys(options)) if (!OPTIONS.includes(k)) throw bad(k, `one of ${OPTIONS.join(', ')}; it is unknown and`, /** @type {any} */ (options)[k]);
  checkTypes(options);
  const storage = options.storage ?? (options.directory !== undefined ? 'disk' : 'memory');
  if (storage !== 'memory' && storage !== 'disk') throw bad('storage', "'memory' or 'disk'", storage);
  if (storage === 'disk' && (typeof options.directory !== 'string' || options.directory === '')) throw bad('directory', "a directory path (storage 'disk')", options.directory);
  const durability = options.durability ?? 'flush';
  if (durability !== 'flush' && durability !== 'relaxed') throw bad('durability', "'flush' or 'relaxed'", durability);
  if (options.sync != null && !isSyncUrls(options.sync)) throw bad('sync', 'a ws:// or wss:// URL or a list of them', options.sync);
  if (options.syncToken !== undefined && !isSyncTokenOption(options.syncToken)) throw bad('syncToken', 'a non-empty string (a bearer token) or a function returning one', options.syncToken);
  if (options.encrypted !== undefined && typeof options.encrypted !== 'boolean') throw bad('encrypted', 'a boolean', options.encrypted);
  const lockTimeout = options.lockTimeout ?? 0;
  if (typeof lockTimeout !== 'number' || !Number.isFinite(lockTimeout) || lockTimeout < 0) throw bad('lockTimeout', 'a number of milliseconds >= 0', lockTimeout);
  checkVersionOptions(/** @type {any} */ (options), bad);
  if (options.invite !== undefined && options.sync == null) throw bad('invite', 'given with sync (an invite is redeemed at the server)', options.invite);
  const invite = options.invite === undefined ? null : parseInvite(name, options.invite);
  if (options.identity !== undefined && typeof options.identity !== 'string') throw bad('identity', 'a string from exportIdentity()', options.identity);
  // A wrapped identity is unwrapped before anything is opened: a wrong passphrase opens nothing.
  const given = await openIdentity(options);
  await prepare();
  const backend = storage === 'disk' ? diskBackend(/** @type {string} */ (options.directory)) : createMemoryBackend();
  await backend.checkAccess();
  const release = 'lock' in backend ? await /** @type {any} */ (backend).lock(name, lockTimeout) : () => {};
  try {
    const engine = await openEngine(name, {
      trusted: !!options.trusted,
      identity: given,
      recovery: options.recovery,
      quotaBytes: options.quotaBytes,
      acceptTrusted: options.acceptTrusted,
      encrypted: !!options.encrypted,
      schemas: options.schemas,
      version: options.version,
    }, backend);
    const db = new NodeDatabase(name, engine, durability, storage, release, options.onError);
    // Attachment files: leftovers and files no item refers to go now (docs/design.md §6.7).
    db._attachments = new NodeAttachments(storage === 'disk' ? path.join(path.resolve(/** @type {string} */ (options.directory)), name, 'attachments') : null, engine);
    db._syncToken = options.syncToken;
    if (options.version !== undefined) {
      // Upgrade and migrate before sync starts (../schema-upgrade.js); a MigrationError closes.
      await startSchemas(db, /** @type {any} */ ({ ...options, version: options.version })).catch(async (e) => {
        await db.close().catch(() => {});
        throw e;
      });
    }
    if (invite) db._sync.invite = invite;
    if (options.sync != null) db.sync(options.sync).catch(() => {});
    if (invite) db.invited = redeemIfMore(db, /** @type {string} */ (options.invite));
    return db;
  } catch (e) {
    release();
    throw e;
  }
}

export class NodeDatabase {
  /**
   * @param {string} name
   * @param {import('../engine.js').EngineHandle} engine
   * @param {'flush' | 'relaxed'} durability
   * @param {'memory' | 'disk'} storage
   * @param {() => void} release
   * @param {((e: IbexError) => void) | undefined} onError
   */
  constructor(name, engine, durability, storage, release, onError) {
    this.name = name;
    this.publicKey = engine.publicKey;
    this.trusted = engine.trusted;
    this.durability = durability;
    this.storage = storage;
    this.role = 'owner';
    /** @type {Promise<'redeemed' | 'kept' | Error> | null} open()'s `invite`: what the link did */
    this.invited = null;
    this._engine = engine;
    this._release = release;
    this._closed = false;
    /** @type {Promise<unknown>} the work chain: every engine call, in order */
    this._chain = Promise.resolve();
    /** @type {Promise<void> | null} the flush the writes of this tick share */
    this._flushing = null;
    const onErr = onError ?? ((/** @type {IbexError} */ e) => console.warn('ibexdb:', e));
    const rt = {
      name,
      get engine() {
        return engine;
      },
      isOwner: () => !this._closed,
      run: (/** @type {() => any} */ f) => this._run(f),
      post: (/** @type {any} */ m) => {
        if (m.type === 'background-error') onErr(/** @type {IbexError} */ (fromWire(m.error)));
      },
    };
    this._maintenance = new Maintenance(/** @type {any} */ (rt), { recover: () => this._recover() });
    /** @type {Set<LiveQuery<any>>} */
    this._lives = new Set();
    /** @type {Set<(s: any) => void>} */
    this._syncListeners = new Set();
    this._syncState = null;
    /** @type {import('../schema-upgrade.js').SchemaUpgrader | null} open()'s `version`: upgrades and migrations */
    this._upgrader = null;
    /** @type {NodeAttachments | null} the attachment files (set by open()) */
    this._attachments = null;
    /** @type {import('./index.js').NodeOpenOptions['syncToken']} */
    this._syncToken = undefined;
    this._sync = new SyncManager({
      name,
      engine: () => (this._closed ? null : engine),
      run: (f) => this._run(f),
      afterReceive: () => {
        this._maintenance.schedule();
        this._deliverLive();
        this._upgrader?.afterReceive();
      },
      afterPush: () => this._maintenance.schedule(),
      // An encrypted repository's bytes do not travel (docs/design.md §6.8).
      localAttachments: async () => (this._attachments && !this._closed && !engine.isEncrypted() ? this._attachments.local(engine) : []),
      // open()'s syncToken, asked for before every dial (../sync-token.js).
      token: () => (this._syncToken == null ? Promise.resolve(null) : fetchToken(this._syncToken)),
      dial: dialNode,
      onStatus: (s) => {
        const st = revive(s);
        for (const f of [...this._syncListeners]) f(st);
      },
    });
  }

  /**
   * @template T
   * @param {() => T | Promise<T>} f
   * @returns {Promise<T>}
   */
  _run(f) {
    const p = this._chain.then(() => {
      if (this._closed) throw new ClosedError(`repository ${this.name} is closed`);
      return f();
    });
    this._chain = p.catch(() => {});
    return p;
  }

  async _recover() {
    this._maintenance.cancel();
    await this._engine.recover();
    // A new engine: every live query again, with fresh rows.
    for (const lq of this._lives) {
      const { id, rowsJson } = this._engine.subscribeJson(lq._query);
      lq._liveId = id;
      lq._set(decodeRows(rowsJson), null);
    }
  }

  /** Hand the engine's live-query changes to their live queries. */
  _deliverLive() {
    if (this._lives.size === 0) return;
    const text = this._engine.takeLiveChanges();
    if (!text) return;
    /** @type {Map<number, any>} */
    const byId = new Map(decode(text));
    for (const lq of this._lives) {
      const ch = byId.get(lq._liveId);
      if (ch) lq._set(applyChange(lq.results, ch), publicChange(ch));
    }
  }

  /**
   * A live query: `results` kept current, `onChange(rows, change)` called on every change.
   * @param {any} q
   * @param {(rows: any[], change: any) => void} [onChange]
   */
  async live(q, onChange) {
    argFunction('live', onChange, 'onChange', true);
    const text = encode(q, 'query');
    /** @type {LiveQuery<any>} */
    const lq = new LiveQuery(() => {
      this._lives.delete(lq);
      this._run(() => this._engine.unsubscribe(lq._liveId)).catch(() => {});
    }, onChange);
    await this._run(() => {
      const { id, rowsJson } = this._engine.subscribeJson(text);
      /** @type {any} */ (lq)._query = text;
      lq._liveId = id;
      lq._set(decodeRows(rowsJson), null);
      this._lives.add(lq);
    });
    return lq;
  }

  /**
   * A write, applied now and acknowledged per `durability` (the writes of one tick share a flush).
   * @template T
   * @param {() => T} f
   * @returns {Promise<T>}
   */
  async _write(f) {
    const out = await this._run(async () => {
      try {
        return f();
      } catch (e) {
        if (e instanceof PanicError) await this._recover();
        throw e;
      } finally {
        try {
          this._deliverLive();
        } catch {
          // the engine is being recovered: its live queries get fresh rows
        }
      }
    });
    this._maintenance.schedule();
    this._sync.nudge();
    if (this.durability === 'flush') {
      this._flushing ??= this._run(async () => {
        this._flushing = null;
        try {
          if (this._engine.hasUnflushed()) this._engine.flush();
          await this._engine.durable();
        } catch (e) {
          // Not durable: back to what is on disk.
          await this._recover().catch(() => {});
          throw e;
        }
      });
      await this._flushing;
    }
    return out;
  }

  /** Null, or the SchemaVersionError this application's writes get (docs/design.md §2.4). */
  get readOnly() {
    return this._upgrader?.readOnly() ?? null;
  }

  /** The repository's stored schema version as last read, or null without `version`. */
  get schemaVersion() {
    return this._upgrader?.info?.version ?? null;
  }

  /**
   * The schema upgrader's engine calls (../schema-upgrade.js), as the browser's worker ops.
   * @param {string} op @param {any[]} args @param {(payload: any) => any} dec
   */
  _send(op, args, dec) {
    const e = this._engine;
    switch (op) {
      case 'schemaInfo':
        return this._run(() => dec(e.schemaInfo()));
      case 'checkMigrated':
        return this._run(() => dec(e.checkMigrated(args[0], args[1])));
      case 'olderCommitsSince':
        return this._run(() => dec(e.olderCommitsSince(args[0], args[1])));
      case 'migrationPending':
        return this._run(() => dec(e.migrationPending(args[0], args[1], args[2])));
      case 'storeSchemas':
        return this._write(() => dec(e.storeSchemas(args[0], args[1])));
      default:
        return Promise.reject(new Error(`unknown op ${op}`));
    }
  }

  // ----- reads
  /** @param {string} key */
  get(key) {
    return this._run(() => this._engine.get(key));
  }
  /** @param {string[]} keys */
  getMany(keys) {
    return checked(() => {
      argKeys('getMany', keys);
      return JSON.stringify(keys);
    }, (t) => this._run(() => decodeMany(this._engine.getManyJson(t))));
  }
  /** @param {any} q */
  query(q) {
    return this._run(() => decodeRows(this._engine.queryJson(encode(q, 'query'))));
  }
  /** A page and the cursor after it (keyset paging, `after`). @param {any} q */
  page(q) {
    return this._run(() => decodePage(this._engine.queryPageJson(encode(q, 'query'))));
  }
  /** @param {any} q */
  explain(q) {
    return this._run(() => JSON.parse(this._engine.explainJson(encode(q, 'query'))));
  }
  /** @param {string} collection @param {any} [where] */
  count(collection, where) {
    return this._run(() => this._engine.count(collection, where));
  }
  /** @param {string} collection */
  keys(collection) {
    return this._run(() => this._engine.keys(collection));
  }
  /** A handle on one collection (InvalidKeyError for a bad name). @param {string} name @returns {any} */
  collection(name) {
    return new Collection(this, name);
  }
  /** @param {any} q */
  aggregate(q) {
    return this._run(() => decode(this._engine.aggregateJson(encode(q, 'query'))));
  }
  /** @param {string} key */
  history(key) {
    return this._run(() => decode(this._engine.historyJson(key)));
  }
  members() {
    return this._run(() => JSON.parse(this._engine.membersJson()));
  }

  // ----- writes
  /** @param {string} key @param {any} value */
  async put(key, value) {
    argKey('put', key);
    argObject('put', value, 'value', 'an item (a plain object)');
    const text = encodeObject(value, key);
    // Bytes travel as bytes: a transaction's (txn.js), not JSON text.
    if (text === undefined) return this._write(() => this._engine.transaction((tx) => tx.put(key, value)));
    return this._write(() => this._engine.putJson(key, text));
  }
  /** @param {string} key @param {any} fields */
  async update(key, fields) {
    argKey('update', key);
    argObject('update', fields, 'fields', 'an item (a plain object)');
    const text = encodeObject(fields, key);
    if (text === undefined) return this._write(() => this._engine.transaction((tx) => tx.update(key, fields)));
    return this._write(() => this._engine.updateJson(key, text));
  }
  /** @param {string} key */
  delete(key) {
    return this._write(() => this._engine.delete(key));
  }
  /**
   * @template R
   * @param {(tx: TxnBuilder) => R} fn
   * @returns {Promise<R>}
   */
  async transaction(fn) {
    const tx = new TxnBuilder();
    argFunction('transaction', fn, 'fn');
    const ret = fn(tx);
    if (ret && typeof (/** @type {any} */ (ret)).then === 'function') {
      throw new InvalidValueError('transaction(fn): fn must be synchronous (collect writes, then await the transaction)', { path: 'fn', argument: 'fn' });
    }
    if (tx.size > 0) await this._write(() => this._engine.transaction(tx));
    return ret;
  }
  /** @param {string} collection @param {any} schema */
  async defineSchema(collection, schema) {
    argCollection('defineSchema', collection);
    argObject('defineSchema', schema, 'schema', 'a schema object {fields?, indexes?, allowOtherFields?}');
    const text = encode(schema, 'schema');
    return this._run(() => this._engine.defineSchemaJson(collection, text));
  }
  /** @param {Uint8Array} bundle */
  receive(bundle) {
    return this._write(() => JSON.parse(this._engine.receiveJson(bundle)));
  }
  /** @param {string} publicKey @param {string} role */
  grant(publicKey, role) {
    return checked(() => {
      argPublicKey('grant', publicKey);
      argString('grant', role, 'role', "a role: 'owner', 'writer' or 'reader'");
    }, () => this._write(() => this._engine.grant(publicKey, role)));
  }
  /** @param {string} publicKey */
  revoke(publicKey) {
    return checked(() => argPublicKey('revoke', publicKey), () => this._write(() => this._engine.revoke(publicKey)));
  }
  /** A one-time invite link (docs/design.md §6.4 "Invites"); `base` is required in Node. @param {any} options */
  async invite(options) {
    const o = inviteOptions(options);
    const secret = inviteSecret();
    const r = JSON.parse(await this._write(() => this._engine.invite(secret, o.role, o.expires, o.uses)));
    return { link: inviteLink(o.base ?? 'ibexdb:', this.name, r.commit, o.role, secret), id: r.id };
  }
  /** @param {string} link */
  redeem(link) {
    return checked(() => parseInvite(this.name, link), (i) => this._write(() => this._engine.redeem(i.secret)));
  }
  invites() {
    return this._run(() => JSON.parse(this._engine.invitesJson()));
  }
  /** @param {string} id */
  revokeInvite(id) {
    return checked(() => argString('revokeInvite', id, 'id', 'an invite id (32 hex digits)'), () => this._write(() => this._engine.revokeInvite(id)));
  }
  /** @param {{read: boolean, write: boolean}} flags */
  setPublic(flags) {
    return checked(() => {
      argObject('setPublic', flags, 'flags', '{read: boolean, write: boolean}');
      argBoolean('setPublic', flags.read, 'flags.read');
      argBoolean('setPublic', flags.write, 'flags.write');
      return [flags.read, flags.write];
    }, ([read, write]) => this._write(() => this._engine.setPublic(read, write)));
  }

  // ----- upkeep
  flush() {
    return this._run(async () => {
      this._engine.flush();
      await this._engine.durable();
    });
  }
  /** The timers' work now (seal, flush, snapshot if due), as the page's `settle()`: nothing left pending. */
  settle() {
    return this._run(async () => {
      this._maintenance.cancel();
      if (this._engine.seal() > 0 || this._engine.hasUnflushed()) this._engine.flush();
      this._engine.maybeSnapshot();
      await this._engine.durable();
    });
  }
  verify() {
    return this._run(() => verifyRepository(this._engine, null));
  }
  /** @param {{passphrase: string}} [options] @returns {Promise<string | null>} */
  async exportIdentity(options) {
    const passphrase = exportPassphrase(options);
    const plain = await this._run(() => this._engine.exportIdentity());
    return plain === null || passphrase === undefined ? plain : wrapIdentity(plain, passphrase);
  }
  exportCommits() {
    return this._run(() => this._engine.exportCommits());
  }
  async storageInfo() {
    const s = await this._run(() => this._engine.stats());
    const att = this._attachments?.bytes ?? 0;
    return { repository: { logBytes: s.logBytes, snapshotBytes: s.snapshotBytes, totalBytes: s.logBytes + s.snapshotBytes + (this.publicKey ? 48 + 49 : 0) + att, attachmentBytes: att, items: s.items, commits: s.commits } };
  }

  // ----- attachments (./attachments.js; docs/design.md §6.7)
  /** @param {any} key @param {any} name @param {any} data @param {any} [options] */
  attach(key, name, data, options) {
    let a;
    try {
      a = attachArgs(key, name, data, options);
    } catch (e) {
      return Promise.reject(e);
    }
    const { source, type } = a;
    return this._write(async () => {
      const e = this._engine;
      const store = /** @type {NodeAttachments} */ (this._attachments);
      if (e.getJson(key) === undefined) throw new NotFoundError(`no item at ${key}`, { key });
      const w = await store.write(source, e);
      try {
        e.attach(key, name, w.hash, w.size, type);
      } catch (err) {
        if (w.created) store.drop(w.hash, w.size, e);
        throw err;
      }
      this._sync.attachments.changed();
      return { name, hash: w.hash, size: w.size, type };
    });
  }
  /** @param {any} key @param {any} name @returns {Promise<Blob>} */
  attachment(key, name) {
    return this._run(async () => {
      argKey('attachment', key);
      argString('attachment', name, 'name', 'an attachment name (a string)');
      const d = JSON.parse(this._engine.attachmentsJson(key)).find((/** @type {any} */ x) => x.name === name);
      if (!d) throw new AttachmentNotFoundError(`${key} has no attachment ${JSON.stringify(name)}`, { key, attachment: name });
      const store = /** @type {NodeAttachments} */ (this._attachments);
      let b = await store.file(d.hash, d.type, d.size);
      // Not here: fetched from the sync server while connected (docs/design.md §12.2), stored
      // only if its SHA-256 is the recorded one.
      const stream = b || this._engine.isEncrypted() ? null : this._sync.fetchAttachment(d.hash, d.size);
      if (stream) {
        try {
          await store.write(stream, this._engine, d.hash);
        } catch (e) {
          if (/** @type {any} */ (e)?.name !== 'UnavailableError') throw e;
        }
        b = await store.file(d.hash, d.type, d.size);
      }
      if (!b) throw new AttachmentUnavailableError(`the bytes of attachment ${JSON.stringify(name)} of ${key} are not here`, { key, attachment: name, hash: d.hash });
      return b;
    });
  }
  /** @param {any} key @param {any} name @returns {Promise<boolean>} */
  detach(key, name) {
    try {
      argKey('detach', key);
      argString('detach', name, 'name', 'an attachment name (a string)');
    } catch (e) {
      return Promise.reject(e);
    }
    return this._write(() => this._engine.detach(key, name));
  }
  /** @param {any} key */
  attachments(key) {
    return this._run(() => {
      argKey('attachments', key);
      return JSON.parse(this._engine.attachmentsJson(key));
    });
  }

  // ----- sync
  /**
   * Start sync with a server (or the nodes of one deployment); resolves when synced, rejects
   * with the server's typed error. `null` stops it.
   * @param {string | string[] | null} [url]
   * @returns {Promise<void>}
   */
  async sync(url) {
    if (url === null) return this._run(() => this._sync.stop());
    if (url !== undefined && !isSyncUrls(url)) throw new InvalidValueError(`sync(url): url must be a ws:// or wss:// URL or a list of them, got ${describe(url)}`, { path: 'url', argument: 'url' });
    const st = await this._run(() => {
      if (url !== undefined) this._sync.start(url);
      else this._sync.retryRefused();
      return revive(this._sync.status());
    });
    if (st.state === 'off') throw new InvalidValueError('sync is off: pass the server URL', { path: 'url' });
    return waitSynced(this._syncListeners, st);
  }
  async syncStatus() {
    return revive(this._sync.status());
  }
  /** @param {(s: any) => void} cb @returns {() => void} */
  onSyncStatus(cb) {
    argFunction('onSyncStatus', cb, 'cb');
    // A listener that throws stops neither the others nor sync: its error is thrown again
    // on its own (as in the page, ../ibexdb.js).
    const f = (/** @type {any} */ s) => {
      try {
        cb(s);
      } catch (e) {
        queueMicrotask(() => {
          throw e;
        });
      }
    };
    this._syncListeners.add(f);
    return () => this._syncListeners.delete(f);
  }

  /** Seal, flush, snapshot, stop sync (saving its position), release the files. */
  async close() {
    if (this._closed) return;
    await this._run(async () => {
      this._maintenance.cancel();
      await this._sync.stop({ quiet: true }).catch(() => {});
    });
    await this._run(() => this._engine.close()).finally(() => {
      this._closed = true;
      this._maintenance.cancel();
      this._release();
    });
  }
}

/**
 * Run `check` (argument checks) and hand its result to `then`; a check that throws is a rejected
 * promise, never a synchronous throw (as the page's `_checked`, ../ibexdb.js).
 * @template C, R
 * @param {() => C} check @param {(c: C) => Promise<R>} then
 * @returns {Promise<R>}
 */
function checked(check, then) {
  let c;
  try {
    c = check();
  } catch (e) {
    return Promise.reject(e);
  }
  return then(c);
}

/** @param {any} w */
const revive = (w) => ({ ...w, lastError: w.lastError ? fromWire(w.lastError) : null });
