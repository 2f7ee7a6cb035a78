// Multi-tab ownership. OPFS sync access handles are exclusive, so per repository name one worker
// holds the Web Lock `ibexdb:<name>` and owns the files (the "owner"). Workers of other tabs are
// "clients": they join the BroadcastChannel `ibexdb:<name>`, attach (their schemas and live
// queries), forward their page's batches as requests and wait in line for the lock. When the
// owner goes away the lock passes to one of them, which opens the files, takes over its page's
// live queries and unanswered requests, and announces itself; the others re-attach and re-send
// what is unanswered (writes are idempotent: put/update/delete/set edits re-applied give the same
// state). Every worker also holds `ibexdb-client:<id>` for its lifetime, so the owner learns when
// a client's tab is gone and drops its live queries. (docs/design.md §11.4)

import { openAttachments } from '../attachments.js';
import { expectWasmModule, openEngine, preloadWasm, provideWasmModule } from '../engine.js';
import { ClosedError, StorageUnavailableError, toWire } from '../errors.js';
import { ATTACH_TIMEOUT_MS, channelName, checkName, clientLockName, ownerLockName } from '../policy.js';
import { BACKENDS, chooseBackend, closeKeptFiles } from '../storage.js';

/** @typedef {import('../worker.js').Runtime} Runtime */
/** @typedef {import('../worker.js').Op} Op */
/** @typedef {import('../worker.js').OpenMessage} OpenMessage */
/** @typedef {'flush' | 'relaxed'} Durability */
/** @typedef {{publicKey: string | null, trusted: boolean, role: string, sync: import('../ibexdb.js').SyncStatus | null, storage: import('../storage.js').StorageKind}} OpenInfo */

export class Ownership {
  /**
   * @param {Runtime} rt
   * @param {object} parts
   * @param {import('./live.js').LiveQueries} parts.live
   * @param {import('./batch.js').Batches} parts.batches
   * @param {import('./sync.js').SyncManager} parts.sync
   */
  constructor(rt, { live, batches, sync }) {
    this.rt = rt;
    this.live = live;
    this.batches = batches;
    this.sync = sync;
    /** @type {'opening' | 'owner' | 'client' | 'closing' | 'closed'} */
    this.role = 'opening';
    this.closed = false;
    /** @type {BroadcastChannel | null} */
    this.channel = null;
    /** Releases the Web Locks this worker holds. */
    this._releaseLocks = () => {};
    this._lockAbort = new AbortController();
    /** This page's live queries: subId -> query JSON (for attach and takeover). */
    /** @type {Map<number, string>} */
    this.pageSubs = new Map();
    /** This page's schemas: collection -> schema JSON (for attach and takeover). */
    /** @type {Map<string, string>} */
    this.pageSchemas = new Map();
    // Owner side.
    /** Clients whose departure (their lock freed) is being watched. */
    this._watched = new Set();
    // Client side.
    this._nextRid = 1;
    /** @type {Map<number, {ops: Op[], durability: Durability}>} requests sent to the owner, not answered yet */
    this._pending = new Map();
    /** @type {((info: any) => void) | null} */
    this._attachResolve = null;
    /** @type {import('../storage.js').StorageBackend | null} the backend this worker chose (storage.js) */
    this.backend = null;
    /**
     * What the Web Lock and the channel are named after: the repository, shared by the tabs of
     * the origin (OPFS and IndexedDB files are the origin's; the storage a tab asked for must be
     * the owner's); memory files are this worker's only, so a memory open shares with nobody.
     */
    this.scope = '';
  }

  /** Post to the other tabs' workers. @param {object} msg */
  broadcast(msg) {
    this.channel?.postMessage(msg);
  }

  /**
   * Open the repository: own its files if no other tab does, else attach to the owner.
   * @param {OpenMessage} m
   * @returns {Promise<OpenInfo>}
   */
  async open(m) {
    const rt = this.rt;
    rt.name = m.name;
    rt.options = m.options ?? {};
    checkName(rt.name);
    this.backend = await chooseBackend(rt.options.storage);
    this.scope = this.backend.shared ? rt.name : `${rt.name}~${this.backend.kind}~${rt.id}`;
    // The page sends the module it compiled (once per page): with the open (compiled already) or
    // after it ('follows': the page sends `open` at once, so the files are opened and the lock
    // requested while it compiles); instantiated as soon as it is here. A client never uses it
    // (one small instance, no files).
    if (m.wasm === 'follows') expectWasmModule();
    else if (m.wasm) provideWasmModule(m.wasm);
    preloadWasm();
    for (const [c, s] of Object.entries(rt.options.schemas ?? {})) this.pageSchemas.set(c, JSON.stringify(s));
    if (!this.backend.shared) {
      // Memory: files no other tab can reach, so nothing to share and no lock to take (where the
      // browser keeps no site data, Web Locks are refused too).
      await this._becomeOwner();
      return { publicKey: rt.owned().publicKey, trusted: !!rt.options.trusted, role: this.role, sync: this.sync.status(), storage: rt.owned().storage };
    }
    if (!navigator.locks) throw new StorageUnavailableError('Web Locks (navigator.locks) are not available');
    this.channel = new BroadcastChannel(channelName(this.scope));
    this.channel.onmessage = (ev) => this._onChannel(ev.data);
    // Held for this worker's lifetime, so an owner can tell when this tab is gone.
    navigator.locks.request(clientLockName(rt.id), () => this._holdUntilClose()).catch(() => {}); // refused: _requestLock says why
    if (await this._requestLock(true)) {
      await this._becomeOwner();
    } else {
      this.role = 'client';
      // Wait in line for the lock: granted when the owner goes away. If that happens before the
      // owner answered our attach, take over right here (the work chain is busy with this open).
      const granted = this._requestLock(false).then((got) => (got && !this.closed ? true : new Promise(() => {})));
      const first = await Promise.race([this._attach().then((info) => ({ info })), granted.then(() => ({ info: null }))]);
      if (!first.info) {
        this._attachResolve = null;
        await this._becomeOwner();
      } else {
        granted.then(() => rt.run(() => this._becomeOwner())).catch((e) => rt.post({ type: 'background-error', error: toWire(e) }));
        for (const e of first.info.errors ?? []) throw Object.assign(new Error(e.message), e);
        const storage = first.info.storage ?? 'opfs';
        const asked = rt.options.storage ?? 'auto';
        if (asked !== 'auto' && asked !== storage) {
          throw new StorageUnavailableError(`open(${rt.name}, {storage: '${asked}'}): another tab has this repository open with storage '${storage}' (its files are elsewhere); open it with the same storage, or 'auto'`, { kind: 'storage-mismatch' });
        }
        // 'auto' follows the owner: a takeover opens the files where the owner kept them.
        if (storage in BACKENDS) this.backend = BACKENDS[/** @type {import('../storage.js').StorageKind} */ (storage)];
        return { publicKey: first.info.publicKey, trusted: first.info.trusted, role: this.role, sync: first.info.sync ?? null, storage };
      }
    }
    return { publicKey: rt.owned().publicKey, trusted: !!rt.options.trusted, role: this.role, sync: this.sync.status(), storage: rt.owned().storage };
  }

  /**
   * A batch from this worker's page: run it (owner), forward it (client), or fail it (closed).
   * @param {Op[]} ops
   * @param {Durability} durability
   */
  async pageBatch(ops, durability) {
    // Track this page's live queries and schemas (for takeover and attach).
    for (const [, op, a0, a1] of ops) {
      if (op === 'live') this.pageSubs.set(a0, a1);
      else if (op === 'unsubscribe') this.pageSubs.delete(a0);
      else if (op === 'defineSchema') this.pageSchemas.set(a0, a1);
    }
    if (this.role === 'owner') {
      const [results, changes] = await this.batches.run(ops, durability, 'local');
      // Live changes ride in the results message, so a live query is current when the call resolves.
      if (changes) this.live.broadcast(changes);
      const live = changes && this.live.hasLocal() ? { epoch: this.live.epoch, changes } : undefined;
      this.rt.post({ type: 'results', results, live });
    } else if (this.role === 'client') {
      // A BroadcastChannel cannot carry a stream: an attachment's is read into a Blob here.
      for (const o of ops) for (let i = 2; i < o.length; i++) if (o[i] instanceof ReadableStream) o[i] = await new Response(o[i]).blob();
      const rid = this._nextRid++;
      this._pending.set(rid, { ops, durability });
      this.broadcast({ type: 'req', from: this.rt.id, rid, durability, ops });
    } else {
      const error = toWire(new ClosedError('the database is closed'));
      this.rt.post({ type: 'results', results: ops.map(([seq]) => [seq, 0, error]) });
    }
  }

  /**
   * Close the engine (owner) or detach from the owner (client), then release the locks and leave
   * the channel.
   * @returns {Promise<import('../worker.js').WireError | undefined>} a failure of the final seal/flush/snapshot
   */
  async close() {
    this.closed = true;
    const wasOwner = this.role === 'owner';
    this.role = 'closing';
    let error;
    if (wasOwner && this.rt.engine) {
      try {
        // The page terminates this worker once it is told: the engine's memory goes with it.
        await this.rt.engine.close({ free: false });
      } catch (e) {
        error = toWire(e);
      }
      // This worker is ending: the next owner (another tab) opens the files at once, without
      // asking for handles kept for a reopen here (backends/opfs-pool.js).
      closeKeptFiles(this.rt.name);
    } else {
      this.broadcast({ type: 'detach', from: this.rt.id });
    }
    this.role = 'closed';
    this._lockAbort.abort();
    this._releaseLocks();
    this.channel?.close();
    this.channel = null;
    return error;
  }

  // ----- locks -----------------------------------------------------------------------------

  /** A promise that holds a granted Web Lock until this worker closes. @returns {Promise<void>} */
  _holdUntilClose() {
    return new Promise((release) => {
      const prev = this._releaseLocks;
      this._releaseLocks = () => {
        prev();
        release();
      };
    });
  }

  /**
   * Ask for the repository lock; resolves with whether it was granted (then held until close).
   * @param {boolean} ifAvailable
   * @returns {Promise<boolean>}
   */
  _requestLock(ifAvailable) {
    return new Promise((resolve, reject) => {
      const opts = ifAvailable ? { ifAvailable: true } : { signal: this._lockAbort.signal };
      navigator.locks
        .request(ownerLockName(this.scope), opts, (lock) => {
          resolve(!!lock);
          return lock ? this._holdUntilClose() : undefined;
        })
        .catch((e) => {
          if (e?.name === 'AbortError') resolve(false);
          else if (e?.name === 'SecurityError') {
            reject(new StorageUnavailableError(`the browser does not let this site keep data (Web Locks: ${e.message}): site data is blocked here — a private window that keeps no storage, cookies and site data blocked in the browser's settings, or a third-party iframe. Allow site data for this site, or use storage: 'memory'`, { kind: 'storage-denied' }));
          } else reject(e);
        });
    });
  }

  /** Open the files and serve the other tabs; as a former client, take over this page's state. */
  async _becomeOwner() {
    const rt = this.rt;
    rt.engine = await openEngine(rt.name, { ...rt.options, appSchemas: rt.options.schemas, schemas: undefined }, this.backend ?? undefined);
    // Attachment files: leftovers of a killed write and files no item refers to go now (§6.7).
    if (rt.engine.storage === 'opfs') rt.engine.attachmentStore = await openAttachments(rt.name, rt.engine);
    for (const [c, s] of this.pageSchemas) rt.engine.defineSchemaJson(c, s);
    this.live.newEpoch();
    const wasClient = this.role === 'client';
    this.role = 'owner';
    if (wasClient) {
      // Re-create this page's live queries on the new engine, then take over the requests the
      // old owner never answered.
      this.live.adopt('local', this.pageSubs);
      this.live.renew();
      rt.post({ type: 'role', role: 'owner' });
    }
    this.broadcast({ type: 'owner', from: rt.id });
    // The repository was syncing (the old owner said so): carry on from the saved position.
    if (wasClient && rt.syncUrl) this.sync.start(rt.syncUrl);
    if (wasClient) {
      const reqs = [...this._pending.entries()].sort((a, b) => a[0] - b[0]);
      this._pending.clear();
      for (const [, req] of reqs) await this.pageBatch(req.ops, req.durability);
    }
  }

  // ----- client side -----------------------------------------------------------------------

  _attachMessage() {
    return { type: 'attach', from: this.rt.id, schemas: [...this.pageSchemas], subs: [...this.pageSubs] };
  }

  /** Join the owner as a client; resolves with the owner's `attached` answer. @returns {Promise<any>} */
  _attach() {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this._attachResolve = null;
        reject(new StorageUnavailableError(`repository ${this.rt.name} is held by another tab that does not answer`));
      }, ATTACH_TIMEOUT_MS);
      this._attachResolve = (info) => {
        clearTimeout(timer);
        resolve(info);
      };
      this.broadcast(this._attachMessage());
    });
  }

  // ----- the channel -------------------------------------------------------------------------

  /** @param {any} m a message from another tab's worker */
  _onChannel(m) {
    if (!m || this.closed) return;
    const rt = this.rt;
    if (this.role === 'owner') {
      if (m.type === 'attach') rt.run(() => this._ownerAttach(m));
      else if (m.type === 'req') rt.run(() => this._ownerRequest(m));
      else if (m.type === 'detach') rt.run(() => this._dropClient(m.from));
      return;
    }
    if (this.role !== 'client' && this.role !== 'opening') return;
    if (m.to !== undefined && m.to !== rt.id) return;
    switch (m.type) {
      case 'attached':
        if (m.resets?.length) rt.post({ type: 'live', epoch: m.epoch, resets: m.resets });
        if (m.sync) rt.syncUrl = m.sync.urls;
        this._attachResolve?.(m);
        this._attachResolve = null;
        break;
      case 'res':
        if (!this._pending.delete(m.rid)) return; // answered already (a re-sent duplicate)
        rt.post({ type: 'results', results: m.results });
        break;
      case 'live':
        rt.post({ type: 'live', epoch: m.epoch, changes: m.changes, resets: m.resets });
        break;
      case 'sync-status':
        rt.syncUrl = m.status.urls;
        rt.post({ type: 'sync-status', status: m.status });
        break;
      case 'owner':
        if (this.role === 'client') {
          // A new owner: re-attach (schemas, live queries), then re-send what is unanswered.
          this.broadcast(this._attachMessage());
          for (const [rid, req] of [...this._pending.entries()].sort((a, b) => a[0] - b[0])) {
            this.broadcast({ type: 'req', from: rt.id, rid, durability: req.durability, ops: req.ops });
          }
        }
        break;
      default:
    }
  }

  // ----- owner side --------------------------------------------------------------------------

  /** @param {string} id a client worker */
  _watchClient(id) {
    if (this._watched.has(id)) return;
    this._watched.add(id);
    // The client holds this lock for its lifetime: it is granted to us when the client is gone.
    navigator.locks
      .request(clientLockName(id), { signal: this._lockAbort.signal }, () => {
        this._watched.delete(id);
        this.rt.run(() => this._dropClient(id));
      })
      .catch(() => {});
  }

  /** @param {string} id */
  _dropClient(id) {
    if (this.role === 'owner') this.live.dropOrigin(id);
  }

  /** A client attaches: declare its schemas, subscribe its live queries, answer. @param {any} m */
  _ownerAttach(m) {
    if (this.role !== 'owner') return;
    const engine = this.rt.owned();
    this._watchClient(m.from);
    const errors = [];
    for (const [c, s] of m.schemas ?? []) {
      try {
        engine.defineSchemaJson(c, s);
      } catch (e) {
        errors.push(toWire(e));
      }
    }
    const resets = [];
    for (const [subId, q] of m.subs ?? []) {
      try {
        resets.push([subId, ...this.live.subscribe(m.from, subId, q)]);
      } catch (e) {
        resets.push([subId, this.live.epoch, -1, null, toWire(e)]);
      }
    }
    this.broadcast({ type: 'attached', to: m.from, epoch: this.live.epoch, publicKey: engine.publicKey, trusted: engine.trusted, resets, errors, sync: this.sync.status(), storage: engine.storage });
  }

  /** A client's batch: run it like this page's, answer on the channel. @param {any} m */
  async _ownerRequest(m) {
    if (this.role !== 'owner') return;
    const [results, changes] = await this.batches.run(m.ops, m.durability, m.from);
    // Live changes first, so a tab's live results are current when its call resolves.
    this.live.deliver(changes);
    this.broadcast({ type: 'res', to: m.from, rid: m.rid, results });
  }
}
