// Worker-side benchmark harness: implements the message protocol of www/bench/PROTOCOL.md on top of
// a small engine adapter, so that every engine runs exactly the same timing loops and the same inputs.
// An engine worker is just:
//
//   import { serve } from './harness.js';
//   serve({ init, open, close, reset, stats, get, getMany, put, update, putMany, all,
//           queryRange, queryComplex, count, keys, aggregate, info,
//           supports, sealPrepare, sealRun, verifySetup, verify, rel: {...} });
//
// `supports(rowId)` (optional) returns true, or a string saying why the row does not apply to this
// engine ("not applicable: …"); the row is then recorded with that reason instead of a time.
// Adapter methods may be synchronous or return promises; the loops only await real promises, so a
// synchronous engine is not charged for a microtask per operation.
//
// The rows live in rows/, one module per family: scaling (bulk load, open), crud (reads and
// single/100-item writes), queries, writes (sustained durable and batched writes, seal), relational
// (go-sqlite-bench) and verify. Timing loops: loops.js.

import { makeItem } from '../shared/model.js';
import { readBack } from './check.js';
import { timerResolutionMs } from '../shared/stats.js';
import { isThenable, now } from './loops.js';
import { crudRows } from './rows/crud.js';
import { dbxRows } from './rows/dbx.js';
import { fatRows } from './rows/fat.js';
import { filesRows } from './rows/files.js';
import { omgdbRows } from './rows/omgdb.js';
import { ftsRows } from './rows/fts.js';
import { queryRows } from './rows/queries.js';
import { relationalRows } from './rows/relational.js';
import { scalingRows } from './rows/scaling.js';
import { verifyRows } from './rows/verify.js';
import { writeRows } from './rows/writes.js';

/**
 * A benchmark item as the protocol carries it (`tags`: a set, as an array).
 * @typedef {{id: string, title: string, count: number, tags: string[]}} Item
 */

/** @typedef {{simpleUsers: number, real: {users: number, articles: number, comments: number}, complex: {users: number, articles: number, comments: number}, manyQueries: number, largeRows: number}} RelationalSizes */

/**
 * A `row` message's params (PROTOCOL.md §2), plus the row id.
 * @typedef {object} RowParams
 * @property {string} row
 * @property {number} n the base item count N
 * @property {number} seed
 * @property {number} samples
 * @property {number} [warmup]
 * @property {boolean} [adaptive]
 * @property {number} [targetMs]
 * @property {number} [warmupMs]
 * @property {number} [maxK]
 * @property {number} [batch] bulk-load: items per transaction
 * @property {RelationalSizes} [rel]
 * @property {{commits: number, sealEvery: number}} [verify]
 * @property {{rows: number}} [dbx] DBX seed: records
 * @property {{sizes: number[], batchReads: number, cycles: number, cycleBudgetMs: number}} [fat] go-persist seed
 * @property {{documents: number, batch: number}} [omgdb] OMGDB seed
 * @property {{docs: number, searches: number}} [fts] full-text search: documents, searches
 * @property {{few: number, many: number, minBytes: number, maxBytes: number}} [files] file storage: file counts and sizes
 */

/**
 * What a row function returns.
 * @typedef {object} RowResult
 * @property {number[]} samples per-operation ms
 * @property {number} k iterations per sample
 * @property {number} warmupSamples
 * @property {Record<string, unknown>} [check]
 * @property {string} [note]
 * @property {ReturnType<typeof import('./loops.js').opStats>} [ops] per-operation statistics (operations timed one by one)
 * @property {number} [trailingMs] the trailing work of the row's writes, timed inside its last sample
 * @property {string} [na] the row could not be measured on this engine, and why (then nothing else is read)
 */

/**
 * The engine adapter a worker serves (PROTOCOL.md §3). Methods may return promises.
 * @typedef {object} Adapter
 * @property {(config: Record<string, unknown>) => unknown} init
 * @property {() => unknown} open
 * @property {() => unknown} close
 * @property {(o: {final: boolean}) => unknown} reset
 * @property {() => unknown} [shutdown]
 * @property {() => any} stats
 * @property {() => number | null} [wasmMemoryBytes] the engine's wasm memory now (cheap)
 * @property {() => any} info
 * @property {(id: string) => any} get
 * @property {(ids: string[]) => any} getMany
 * @property {(item: Item) => unknown} put
 * @property {(id: string, fields: {title: string, count: number, tags: string[]}) => unknown} update
 * @property {(items: Item[]) => unknown} putMany
 * @property {() => any} all
 * @property {(lo: number, hi: number) => any} queryRange
 * @property {(q: {tag: string, limit: number}) => any} queryComplex
 * @property {() => any} count
 * @property {() => any} scanAll read every item once (a filter on an unindexed field); how many matched
 * @property {() => any} keys
 * @property {() => any} aggregate
 * @property {(row: string) => true | string} [supports]
 * @property {() => unknown} [buildIndexes] build the declared indexes now (ibexdb builds them on first use)
 * @property {() => unknown} [settle] the trailing work of writes: what close would do (timed inside write rows)
 * @property {() => unknown} [inspect] after an open, untimed: read settings back, record query plans
 * @property {() => Record<string, number> | null} [openPhases] after an open, untimed: where its time went (ms)
 * @property {() => unknown} [release] after close: give the files to another worker (SQLite: pause the VFS)
 * @property {Record<string, string>} [rowNotes]
 * @property {(items: Item[]) => unknown} [sealPrepare]
 * @property {() => unknown} [sealRun]
 * @property {(o: {items: Item[], sealEvery: number}) => unknown} [verifySetup]
 * @property {() => unknown} [verify]
 * @property {Record<string, any> & {note?: string, tunedNote?: string}} [rel]
 * @property {(msg: {type: string, port?: MessagePort | null}) => void} [pageNotice] a notice from the page, handled at once (not queued): 'verify-port' (the helper thread the adapter asked for with a {type: 'verify-thread'} message), 'verify-failed'
 * @property {Record<string, any>} [docs] seed suites (dbx, fat): setup, insert, get, getMany, size, count, sum, minMax, filterGt
 * @property {Record<string, any>} [fts] full-text search (suite fts): setup, insert, build, search, update, title
 * @property {Record<string, any>} [files] file storage (suite files): setup, put, read
 */

/** Serialize an Error for postMessage, keeping name and stack (engine errors have stable names). @param {unknown} err */
export function serializeError(err) {
  if (err instanceof Error) return { name: err.name, message: err.message, stack: err.stack };
  return { name: 'Error', message: String(err) };
}

/** What the rows run against: the adapter, and whether it is open, and what it holds. */
export class Session {
  /** @param {Adapter} adapter */
  constructor(adapter) {
    this.adapter = adapter;
    this.open = false;
    /** Whether the declared indexes are built (and so maintained by every write) since the last open. */
    this.indexed = false;
    /** Next index for items created by write rows/ops; above the base N so ids never collide. */
    this.nextNew = 0;
    this.updateVersion = 0;
    /** @type {string | null} which relational data set the database holds */
    this.relLoaded = null;
  }

  /**
   * Call an adapter method, awaiting only a real promise.
   * @param {string} name @param {...any} args @returns {Promise<any>}
   */
  async call(name, ...args) {
    const f = /** @type {Record<string, any>} */ (this.adapter)[name];
    if (typeof f !== 'function') throw new Error(`engine adapter has no ${name}()`);
    const r = f.apply(this.adapter, args);
    return isThenable(r) ? await r : r;
  }

  /** Call an optional adapter method (nothing when the adapter has none). @param {string} name */
  async optional(name) {
    if (typeof (/** @type {Record<string, any>} */ (this.adapter))[name] === 'function') return this.call(name);
    return undefined;
  }

  /** Open, then check what was opened (untimed: SQLite's pragma read-backs and query plans). */
  async ensureOpen() {
    if (!this.open) {
      await this.call('open');
      this.opened();
      await this.optional('inspect');
    }
  }

  /** Record an open that a row timed itself (call `optional('inspect')` after its timer). */
  opened() {
    this.open = true;
    this.indexed = false;
  }

  async ensureClosed() {
    if (this.open) {
      await this.call('close');
      this.open = false;
      this.indexed = false;
    }
  }

  /**
   * Build the declared indexes (untimed) so that the writes that follow maintain them, as an
   * app's writes do once it has queried its indexes. SQLite's indexes always exist.
   */
  async ensureIndexed() {
    await this.ensureOpen();
    if (!this.indexed) {
      await this.optional('buildIndexes');
      this.indexed = true;
    }
  }

  /**
   * The trailing work of a row's writes, timed inside the row (loops.js `finish`): ibexdb seals,
   * flushes and snapshots as its close would; SQLite checkpoints its WAL as its close would.
   * @returns {(() => unknown) | undefined}
   */
  get finish() {
    const a = this.adapter;
    return typeof a.settle === 'function' ? () => /** @type {() => unknown} */ (a.settle).call(a) : undefined;
  }

  /**
   * `count` new items, numbered above the N base items and every item made before.
   * @param {number} n @param {number} count @returns {Item[]}
   */
  newItems(n, count) {
    this.nextNew = Math.max(this.nextNew, n);
    return Array.from({ length: count }, () => makeItem(this.nextNew++));
  }
}

/**
 * Start serving the protocol in this worker with the given engine adapter.
 * @param {Adapter} adapter
 */
export function serve(adapter) {
  const s = new Session(adapter);
  /** @type {{engine: string | null, config: Record<string, unknown> | null}} */
  const worker = { engine: null, config: null };
  /** @type {Record<string, (p: RowParams) => Promise<RowResult>>} */
  const rows = { ...scalingRows(s), ...crudRows(s), ...queryRows(s), ...writeRows(s), ...relationalRows(s), ...verifyRows(s), ...dbxRows(s), ...fatRows(s), ...omgdbRows(s), ...ftsRows(s), ...filesRows(s) };

  /** @param {any} msg @returns {Promise<object>} the reply's fields */
  async function handle(msg) {
    switch (msg.type) {
      case 'init': {
        if (worker.engine) throw new Error(`worker already initialized for ${worker.engine}`);
        worker.engine = msg.engine;
        worker.config = msg.config ?? {};
        const t0 = now();
        const initTimes = (await s.call('init', { engine: msg.engine, ...worker.config })) ?? {};
        const t1 = now();
        await s.call('open');
        s.opened();
        const t2 = now();
        await s.optional('inspect');
        return {
          ms: { total: t2 - t0, init: t1 - t0, open: t2 - t1, ...initTimes },
          info: (await s.call('info')) ?? {},
          timerResolutionMs: timerResolutionMs(),
          crossOriginIsolated: self.crossOriginIsolated === true,
        };
      }
      case 'row': {
        const fn = rows[msg.row];
        if (!fn) throw new Error(`unknown row "${msg.row}"`);
        const p = { ...msg.params, row: msg.row };
        if (!Number.isInteger(p.n) || p.n < 0) throw new Error(`row ${msg.row}: params.n must be a non-negative integer`);
        const supported = typeof adapter.supports === 'function' ? adapter.supports(msg.row) : true;
        if (supported !== true) return { na: String(supported || 'not applicable to this engine') };
        const r = await fn(p);
        // A row that finds it cannot be measured here (e.g. the data does not fit) says why.
        if (r.na) return { na: r.na };
        // What this engine does on the row (plans, shortcuts), from the adapter.
        const note = [r.note, adapter.rowNotes?.[msg.row]].filter(Boolean).join('; ');
        return { samples: r.samples, iterationsPerSample: r.k, warmupSamples: r.warmupSamples, ops: r.ops, trailingMs: r.trailingMs, check: r.check, note };
      }
      case 'check': {
        // Read back what the page wrote through its own client: [[id, fields], ...].
        await s.ensureOpen();
        return { check: await readBack(s, new Map(msg.items)) };
      }
      case 'scan': {
        // Untimed: read every item once (a full scan), so that the next stats show an engine
        // holding them all. Checked: every item matched.
        await s.ensureOpen();
        return { matched: await s.call('scanAll') };
      }
      case 'stats': {
        const st = (await s.call('stats')) ?? {};
        // Non-standard Chromium API; absent in some contexts. Reported when available.
        const mem = /** @type {any} */ (performance).memory;
        if (mem && st.jsHeapUsedBytes === undefined) st.jsHeapUsedBytes = mem.usedJSHeapSize;
        return { stats: st };
      }
      case 'reset': {
        await s.ensureClosed();
        await s.call('reset', { final: !!msg.final });
        s.nextNew = 0;
        return {};
      }
      case 'close': {
        await s.ensureClosed();
        if (typeof adapter.shutdown === 'function') await s.call('shutdown');
        return {};
      }
      case 'release': {
        // Close the database (releasing its OPFS handles) but keep the worker: another context
        // (the ibexdb page API) is about to open the same files. The next row/op reopens.
        await s.ensureClosed();
        await s.optional('release');
        return {};
      }
      default:
        throw new Error(`unknown message type "${msg.type}"`);
    }
  }

  // Messages are handled strictly one at a time, in arrival order. Notices from the page (no `id`:
  // the port to verify()'s helper thread the adapter asked for) are handled at once: the row that
  // asked is still running and waits for them.
  let queue = Promise.resolve();
  self.onmessage = (e) => {
    const msg = e.data ?? {};
    if (msg.id === undefined && (msg.type === 'verify-port' || msg.type === 'verify-failed')) {
      adapter.pageNotice?.(msg);
      return;
    }
    queue = queue.then(async () => {
      try {
        const reply = await handle(msg);
        self.postMessage({ id: msg.id, ok: true, ...reply });
      } catch (err) {
        self.postMessage({ id: msg.id, ok: false, error: serializeError(err) });
      }
    });
  };
  self.addEventListener('unhandledrejection', (e) => {
    self.postMessage({ type: 'fatal', error: serializeError(e.reason) });
  });
}
