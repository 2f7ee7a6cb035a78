// How the page reaches an engine for the rows it times itself ([page] rows), the way an app does:
// ibexdb through its public API (www/ibexdb.js), SQLite through a lean page client and worker
// (workers/sqlite-page.js: message → prepared statement → reply), as a competent app would write
// it. Both send the calls made in one tick as one message and make their writes durable once.
// Also loaded alone by the cold-start page (cold.js): it imports nothing of either engine.

import { ITEMS_SCHEMA, ibexValue, repoName } from '../shared/ibexdb.js';

/**
 * The public module: the npm package as `make pkg` builds it (one-file worker, wasm/ next to it)
 * when the runner says where it built one (scripts/bench.mjs sets `benchPublicModule` in every
 * page of the context, BENCH_API), else the repository's source (www/ibexdb.js).
 */
const PUBLIC_MODULE = (typeof window !== 'undefined' && window.benchPublicModule) || new URL('../../ibexdb.js', import.meta.url).href;

/**
 * An operation a page row times: `{op, args}`; `per` = operations it counts for.
 * @typedef {{op: string, args: any, per?: number}} PageOp
 */

/**
 * ibexdb as an app uses it: the public page API (www/ibexdb.js). open() starts its own worker
 * (www/lib/worker.js) that owns the OPFS files; calls made in one tick travel as one message. The
 * benchmark worker must have released the files first ('release' message).
 */
export class IbexPageClient {
  /** @param {{id: string, config: Record<string, any>}} engine */
  static async open(engine) {
    const { open } = await import(PUBLIC_MODULE);
    const db = await open(repoName(engine.id), {
      durability: engine.config.durability,
      trusted: !!engine.config.trusted,
      // The backend the engine is timed on (engines.js `-idb` twins: 'indexeddb'); default 'auto'.
      ...(engine.config.storage ? { storage: engine.config.storage } : {}),
      schemas: { items: ITEMS_SCHEMA },
      onError: (/** @type {any} */ e) => console.error(`[bench] ${engine.id} page API background error: ${e.name}: ${e.message}`),
    });
    return new IbexPageClient(db);
  }

  /** @param {any} db */
  constructor(db) {
    this.db = db;
  }

  /** The first query that uses the declared index (builds it: the writes that follow maintain it). */
  buildIndexes() {
    return this.db.query({ collection: 'items', where: { count: { lt: -1 } } });
  }

  /** @param {PageOp} o @returns {Promise<any>} */
  op({ op, args }) {
    const db = this.db;
    switch (op) {
      // Results come back as the API gives them (Set tags, {id, value} rows); checks convert them
      // with items() after the timer.
      case 'get': return db.get(`items/${args.id}`);
      case 'queryRange': return db.query({ collection: 'items', where: { count: { gte: args.lo, lt: args.hi } }, sort: ['count'] });
      case 'put': return db.put(`items/${args.item.id}`, ibexValue(args.item));
      case 'update': return db.update(`items/${args.id}`, ibexValue(args.fields));
      case 'putMany': return db.transaction((/** @type {any} */ tx) => { for (const it of args.items) tx.put(`items/${it.id}`, ibexValue(it)); });
      // Issued in one tick: the page API sends them as one batch, the worker group-commits them.
      case 'putConcurrent': return Promise.all(args.items.map((/** @type {any} */ it) => db.put(`items/${it.id}`, ibexValue(it))));
      default: throw new Error(`IbexPageClient: unknown op ${op}`);
    }
  }

  /**
   * A result as protocol items (untimed, for the checks): `get` gives the value or undefined,
   * `queryRange` rows `{id: 'items/…', value}`.
   * @param {string} op @param {any} v @param {any} args
   */
  items(op, v, args) {
    /** @param {string} id @param {any} x */
    const item = (id, x) => x && { id, title: x.title, count: x.count, tags: [...x.tags] };
    if (op === 'get') return v === undefined ? [] : [item(args.id, v)];
    if (op === 'queryRange') return v.map((/** @type {any} */ r) => item(r.id, r.value));
    return [];
  }

  /** The worker's deferred work now (seal, relaxed flush, due snapshot: db.settle()), so none of it runs later, in another engine's turn. */
  settle() {
    return this.db.settle();
  }

  /** Seal, flush, snapshot, release the files, stop the worker. */
  close() {
    return this.db.close();
  }

  /** After close: delete the repository (the cold-start page's create-instance samples). @param {{id: string, config?: Record<string, any>}} engine */
  static async remove(engine) {
    if (engine.config?.storage === 'indexeddb') {
      const { indexedDbBackend } = await import(new URL('../../lib/backends/indexeddb.js', import.meta.url).href);
      await indexedDbBackend.removeRepository(repoName(engine.id));
      return;
    }
    const { removeRepository } = await import(new URL('../../lib/storage.js', import.meta.url).href);
    await removeRepository(repoName(engine.id));
  }
}

/**
 * SQLite as a competent app reaches it from the page: its own worker (workers/sqlite-page.js)
 * holding the database and its prepared statements; the calls made in one tick travel as one
 * message, and the worker runs a message's writes in one transaction (a savepoint each).
 */
export class SqlitePageClient {
  /** @param {{id: string, config: Record<string, any>}} engine */
  static async open(engine) {
    const worker = new Worker(new URL('../workers/sqlite-page.js', import.meta.url), { type: 'module', name: `${engine.id}:page` });
    const c = new SqlitePageClient(worker, engine.id);
    await c._control({ type: 'open', engine: engine.id, config: engine.config });
    return c;
  }

  /** @param {Worker} worker @param {string} id */
  constructor(worker, id) {
    this.worker = worker;
    this.id = id;
    this.seq = 0;
    /** @type {Map<number, {resolve: (v: any) => void, reject: (e: Error) => void}>} */
    this.pending = new Map();
    /** @type {[number, string, any][]} the calls of this tick */
    this.queue = [];
    worker.onmessage = (e) => {
      const m = e.data;
      if (m.type === 'batch') {
        for (const [seq, ok, v] of m.results) {
          const p = this.pending.get(seq);
          this.pending.delete(seq);
          if (ok) p?.resolve(v);
          else p?.reject(new Error(`${id} page worker: ${v.name}: ${v.message}`));
        }
      } else {
        const p = this.pending.get(m.seq);
        this.pending.delete(m.seq);
        if (m.error) p?.reject(new Error(`${id} page worker: ${m.error.name}: ${m.error.message}`));
        else p?.resolve(m);
      }
    };
    worker.onerror = (e) => {
      e.preventDefault?.();
      const err = new Error(`${id} page worker failed: ${e.message || 'script error'}`);
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
    };
  }

  /** @param {Record<string, any>} msg @returns {Promise<any>} */
  _control(msg) {
    const seq = ++this.seq;
    return new Promise((resolve, reject) => {
      this.pending.set(seq, { resolve, reject });
      this.worker.postMessage({ ...msg, seq });
    });
  }

  /** @param {string} op @param {any} args @returns {Promise<any>} */
  _call(op, args) {
    const seq = ++this.seq;
    if (this.queue.length === 0) queueMicrotask(() => this._send());
    this.queue.push([seq, op, args]);
    return new Promise((resolve, reject) => this.pending.set(seq, { resolve, reject }));
  }

  _send() {
    const ops = this.queue;
    this.queue = [];
    this.worker.postMessage({ type: 'batch', ops });
  }

  /** SQLite's index exists from CREATE INDEX on: nothing to build. */
  buildIndexes() {
    return Promise.resolve();
  }

  /** @param {PageOp} o @returns {Promise<any>} */
  op({ op, args }) {
    if (op === 'putConcurrent') return Promise.all(args.items.map((/** @type {any} */ item) => this._call('put', { item })));
    return this._call(op, args);
  }

  /** A result as protocol items (untimed, for the checks). @param {string} op @param {any} v */
  items(op, v) {
    if (op === 'get') return v === undefined || v === null ? [] : [v];
    if (op === 'queryRange') return v;
    return [];
  }

  /** No deferred work: SQLite runs its WAL checkpoints inside COMMIT (wal_autocheckpoint), nothing on timers. */
  settle() {
    return Promise.resolve();
  }

  /** Close the database (a WAL checkpoint in WAL mode), give the files back, stop the worker. */
  async close() {
    await this._control({ type: 'close' });
    this.worker.terminate();
  }

  /** After close: delete the database files (the cold-start page's create-instance samples). @param {{id: string, config: Record<string, any>}} engine */
  static async remove(engine) {
    const c = await SqlitePageClient.open(engine);
    await c._control({ type: 'wipe' });
    await c.close();
  }
}

/**
 * The page client of an engine: its public API (ibexdb) or the lean page worker (SQLite).
 * @param {{id: string, family: string, config: Record<string, any>}} engine
 */
export const pageClientClass = (engine) => (engine.family === 'ibexdb' ? IbexPageClient : SqlitePageClient);
