// One engine, one section (and size): a fresh worker on clean storage runs the planned rows and
// the page adds its own timings where a row has a page side. One method per family of rows:
// create instance, the rows timed in the worker, the cold start of open-n, and the rows the page
// times op by op.

import { ROWS, expectedChecks, samplesAt } from '../shared/rows.js';
import { sampleSummary as summary } from '../shared/stats.js';
import { EngineWorker, retire } from './engine-worker.js';
import { isPageOpRow, pageOpMakers } from './page-ops.js';
import { setStatus } from './status.js';

const rowDef = Object.fromEntries(ROWS.map((r) => [r.id, r]));

/** Compare a row's check object with the expected values; returns a list of mismatch strings. */
function checkMismatches(rowId, check, n) {
  const exp = expectedChecks(n)[rowId];
  const problems = [];
  if (check && typeof check === 'object') {
    for (const bad of ['unsorted', 'wrong', 'notStrings']) {
      if (check[bad]) problems.push(`${bad}=${check[bad]}`);
    }
  }
  if (!exp) return problems;
  for (const [k, v] of Object.entries(exp)) {
    const got = check?.[k];
    const same = typeof v === 'number' && typeof got === 'number' ? Math.abs(v - got) <= 1e-9 * Math.max(1, Math.abs(v)) : got === v;
    if (!same) problems.push(`${k}: got ${JSON.stringify(got)}, expected ${JSON.stringify(v)}`);
  }
  return problems;
}

/** Open `path` (relative to this module) as a fresh page: the runner's hook, or an iframe without it. @param {string} path */
async function coldPage(path) {
  const url = new URL(path, import.meta.url).href;
  if (typeof window.benchColdPage === 'function') return { via: 'a fresh page per sample (same browser context)', r: await window.benchColdPage(url) };
  const frame = document.createElement('iframe');
  frame.style.display = 'none';
  try {
    const r = await new Promise((resolve) => {
      const onMsg = (/** @type {MessageEvent} */ e) => {
        if (e.source === frame.contentWindow && e.data?.coldResult) {
          removeEventListener('message', onMsg);
          resolve(e.data.coldResult);
        }
      };
      addEventListener('message', onMsg);
      frame.src = url;
      document.body.append(frame);
    });
    return { via: 'an iframe per sample (no runner hook: the same renderer process, which may keep compiled wasm)', r };
  } finally {
    frame.remove();
  }
}

/** JS heap of a worker by name, via the runner's CDP hook (scripts/bench.mjs); null when absent. */
async function workerHeap(name) {
  if (typeof window.benchWorkerHeap !== 'function') return { jsHeapUsedBytes: null, jsHeapNote: 'not measurable here: worker JS heap needs the runner (CDP Runtime.getHeapUsage); performance.memory and measureUserAgentSpecificMemory are not exposed in workers' };
  try {
    const h = await window.benchWorkerHeap(name);
    return h ? { jsHeapUsedBytes: h.usedSize, jsHeapTotalBytes: h.totalSize } : { jsHeapUsedBytes: null, jsHeapNote: 'worker not found by CDP' };
  } catch (err) {
    return { jsHeapUsedBytes: null, jsHeapNote: `CDP failed: ${err.message}` };
  }
}

/**
 * One engine's rows of one section, in one fresh worker. `section` 'dataset': the rows share one
 * database of N base items; 'relational' / 'verify': the rows build their own databases (n is
 * unused). `start()` and `rows()` time the worker rows and the cold starts; the op-by-op [page]
 * rows are left pending for page-ops.js, which times them with the section's other engines interleaved while
 * the worker keeps the database; `finish()` then takes the last stats and wipes the storage.
 */
export class EngineRun {
  constructor(engine, section, n, plan, seed, onRow) {
    this.engine = engine;
    this.section = section;
    this.n = n;
    this.plan = plan;
    this.seed = seed;
    this.onRow = onRow;
    this.config = { ...engine.config };
    this.pageApi = engine.pageApi === 'ibexdb';
    /** @type {EngineWorker | null} the worker that runs the rows */
    this.w = null;
    /** @type {Set<string>} the op-by-op [page] rows left for page-ops.js */
    this.pendingPage = new Set();
    /** The operations of its op-by-op [page] rows: the same sequence for every engine of a section. */
    this.pageMakers = pageOpMakers(n, seed, plan);
    /** The warm-up's operations (page-ops.js Side): another seed, new items of their own. */
    this.warmMakers = pageOpMakers(n, seed ^ 0x77a4, plan, 'page-warm-');
    /** whether this engine's run ended (finished, or stopped by a failure) */
    this.stopped = false;
    this.result = {
      engine: engine.id, family: engine.family, durability: engine.durability, section, size: ['dataset', 'dbx', 'fat'].includes(section) ? n : null,
      startedAt: new Date().toISOString(), info: null, init: null, rows: {}, stats: {}, errors: [],
    };
  }

  /**
   * Clean storage, time `create-instance` if planned, start the worker that runs the other rows.
   * @param {string[]} rowIds the section's rows
   */
  async start(rowIds) {
    const { engine, section, n } = this;
    const run = this.result;
    // A section none of whose rows runs on this engine: record why, start nothing.
    const excluded = rowIds.map((id) => rowDef[id]).filter((d) => d.engines && !d.engines.includes(engine.id));
    if (excluded.length === rowIds.length) {
      for (const d of excluded) this.record(d.id, { na: `not run: ${d.enginesWhy ?? 'this suite runs on fewer engines'}` });
      this.stopped = true;
      run.finishedAt = new Date().toISOString();
      return;
    }
    await this.guarded(async () => {
      // Clean slate: whatever an earlier (possibly crashed) run left in this engine's OPFS files.
      setStatus(`${engine.id} ${section} N=${n}: cleaning storage`);
      {
        const { w: c, r } = await this.spawnInit();
        run.info = r.info;
        await retire(c, { reset: true });
      }
      if (rowIds.includes('create-instance')) await this.createInstance();
      // The worker that runs every remaining row.
      const { w: ew, r, pageMs } = await this.spawnInit();
      this.w = ew;
      run.info = r.info;
      run.init = { pageMs, ...r.ms, timerResolutionMs: r.timerResolutionMs, crossOriginIsolated: r.crossOriginIsolated };
    });
  }

  /**
   * Run some of the section's rows in order (a section may come in several parts: page-ops.js
   * times an op-by-op [page] row with every engine after each engine ran the rows up to it).
   * @param {string[]} rowIds
   */
  async rows(rowIds) {
    if (this.stopped) return;
    await this.guarded(async () => {
      for (const rowId of rowIds) if (rowId !== 'create-instance') await this.row(rowId);
      // The database stays for the [page] rows: closed, so that nothing runs in this worker meanwhile.
      if (this.pendingPage.size && this.w) await this.w.call({ type: 'release' });
    });
  }

  /** Run `f`; a failure that stops the engine is recorded and ends its run (storage wiped). @param {() => Promise<void>} f */
  async guarded(f) {
    try {
      await f();
    } catch (err) {
      const { engine, section, n } = this;
      this.stopped = true;
      this.pendingPage.clear();
      this.result.errors.push(err.message);
      console.error(`[bench] ${engine.id} ${section} N=${n}: ${err.message}${err.workerStack ? `\n${err.workerStack}` : ''}`);
      if (this.w) {
        try { await retire(this.w, { reset: true, final: true }); } catch { /* already reported */ }
        this.w = null;
      }
      this.result.finishedAt = new Date().toISOString();
    }
  }

  /** One row timed in the worker (and its cold starts from the page); a row's failure is recorded in it. @param {string} rowId */
  async row(rowId) {
    const { engine, section, n } = this;
    const def = rowDef[rowId];
    const p = this.planFor(rowId);
    setStatus(`${engine.id} ${section === 'dataset' ? `N=${n}` : section}: ${def.label}`);
    const entry = {};
    if (def.na || (def.engines && !def.engines.includes(engine.id))) {
      entry.na = def.na ?? `not run: ${def.enginesWhy ?? 'this suite runs on fewer engines'}`;
      this.record(rowId, entry);
      return;
    }
    try {
      if (await this.workerRow(rowId, def, p, entry)) await this.afterRow(rowId, def, p, entry);
    } catch (err) {
      entry.error = err.message;
      this.result.errors.push(`${rowId}: ${err.message}`);
      console.error(`[bench] ${engine.id} ${section} N=${n} ${rowId}: ${err.message}${err.workerStack ? `\n${err.workerStack}` : ''}`);
      if (!this.w || this.w.dead) {
        this.record(rowId, entry);
        throw new Error(`${engine.id} worker died during ${rowId}; remaining rows skipped`);
      }
    }
    this.record(rowId, entry);
  }

  /** What follows a row timed in the worker: stats, the full scan, a fresh worker, the [page] side. */
  async afterRow(rowId, def, p, entry) {
    if (rowId === 'bulk-load' || rowId === 'fat-load') await this.stats('afterLoad');
    if (rowId === 'fat-batch-read') await this.stats('afterBatch');
    // After reopening N and running the first indexed query (ibexdb: the index restored
    // from the snapshot, and the blocks of the query's rows), then after a full scan that
    // reads every item (ibexdb: loads them all), untimed and checked. Its 'afterOpen'
    // footprint below is a fresh engine that read one item.
    if (rowId === 'open-n-query') {
      await this.stats('afterOpenQuery');
      const { matched } = await this.w.call({ type: 'scan' });
      if (matched !== this.n) throw new Error(`full scan matched ${matched} of ${this.n} items`);
      await this.stats('afterScan');
    }
    if (rowId === 'bulk-load-txn') {
      // The rows after it start from a fresh worker (wasm memory is a high-water mark) on clean storage.
      await retire(this.w, { reset: true });
      this.w = (await this.spawnInit()).w;
    }
    // Page-side measurements: cold starts here, op-by-op rows with every engine (page-ops.js).
    const ps = p.pageSamples ?? 0;
    if (def.page && ps > 0 && isPageOpRow(rowId)) this.pendingPage.add(rowId);
    else if (def.page && ps > 0) {
      const cold = { 'open-n': 'open', 'open-n-query': 'query' }[rowId];
      const { times, via } = await this.pageColdStart(ps, cold);
      entry.page = summary(times, 1, { warmupSamples: 0 });
      entry.pageVia = via;
    }
    // Footprint of a freshly started engine holding N items: after the cold starts, `w` is a
    // new worker that opened the database and read one item (or, without page samples, the
    // worker that just reopened it).
    if (rowId === 'open-n') await this.stats('afterOpen');
  }

  /** Whether page-ops.js should time `rowId`'s [page] side on this engine (its worker holds the database). @param {string} rowId */
  pageRowPending(rowId) {
    return this.pendingPage.has(rowId) && !this.stopped && !!this.w && !this.w.dead;
  }

  /** The [page] row was timed (or failed) on the page: it is no longer pending. @param {string} rowId */
  pageRowDone(rowId) {
    this.pendingPage.delete(rowId);
  }

  /** @param {string} rowId */
  rowDef(rowId) {
    return rowDef[rowId];
  }

  /** After the rows (and the [page] rows): the last stats, then the storage wiped and the worker stopped. */
  async finish() {
    this.pendingPage.clear();
    if (this.stopped || !this.w) return;
    this.stopped = true;
    const w = this.w;
    this.w = null;
    try {
      await this.stats('end', w);
    } catch (err) {
      this.result.errors.push(`stats at the end: ${err.message}`);
    }
    try {
      await retire(w, { reset: true, final: true });
    } catch (err) {
      this.result.errors.push(`wiping the storage: ${err.message}`);
    }
    this.result.finishedAt = new Date().toISOString();
  }

  planFor(id) {
    const plan = this.plan;
    const p = { targetMs: plan.targetMs, warmupMs: plan.warmupMs, maxK: plan.maxK, ...plan.rows[id] };
    p.samples = samplesAt(rowDef[id], p.samples, this.n);
    if (p.pageSamples) p.pageSamples = samplesAt(rowDef[id], p.pageSamples, this.n);
    return p;
  }

  /** A new engine worker, initialized (its database opened); `pageMs`: as the page timed it. */
  async spawnInit() {
    const t0 = performance.now();
    const ew = new EngineWorker(this.engine);
    const r = await ew.call({ type: 'init', engine: this.engine.id, config: this.config });
    return { w: ew, r, pageMs: performance.now() - t0 };
  }

  record(rowId, entry) {
    this.result.rows[rowId] = entry;
    this.onRow?.(this.result, rowId);
  }

  /** @param {string} label @param {EngineWorker} [w] */
  async stats(label, w = this.w) {
    const run = this.result;
    const st = (await w.call({ type: 'stats' })).stats;
    Object.assign(st, await workerHeap(this.engine.id));
    run.stats[label] = st;
    // Plans of cost-based planners depend on the data: keep the ones taken after the load.
    if (label === 'afterLoad' && st.queryPlans && run.info) run.info.queryPlans = { ...run.info.queryPlans, ...st.queryPlans, measuredAt: `after bulk load of ${this.n} items` };
  }

  /** create-instance: a fresh worker per sample on empty storage; page side: a cold start in a fresh page per sample. */
  async createInstance() {
    const { engine } = this;
    setStatus(`${engine.id} N=${this.n}: create instance`);
    const p = this.planFor('create-instance');
    const worker = [];
    const parts = [];
    for (let s = 0; s < p.samples; s++) {
      const { w: c, r } = await this.spawnInit();
      worker.push(r.ms.total);
      parts.push(r.ms);
      await retire(c, { reset: true });
    }
    const { times, via } = await this.coldSamples(p.samples, 'create');
    this.record('create-instance', {
      worker: summary(worker), page: summary(times), pageVia: via,
      note: 'worker: a fresh benchmark worker per sample on empty storage (module import + wasm compile/instantiate + storage + create); page: a cold start in a fresh page per sample (page client + open + first read), storage removed after each',
      breakdown: parts,
    });
  }

  /**
   * `count` cold starts, each in a fresh page (cold.html): `mode` create (empty storage), open
   * (first read) or query (first indexed query). The benchmark worker must not hold the files.
   * @param {number} count @param {string} mode
   */
  async coldSamples(count, mode) {
    const { engine, n } = this;
    const times = [];
    let via = '';
    const e = JSON.stringify({ id: engine.id, family: engine.family, config: engine.config });
    for (let s = 0; s < count; s++) {
      const { via: v, r } = await coldPage(`cold.html?engine=${encodeURIComponent(e)}&mode=${mode}&n=${n}`);
      via = v;
      if (!r || r.error) throw new Error(`cold start (${mode}) failed: ${r?.error ?? 'no result'}`);
      if (r.errors?.length) throw new Error(`cold start (${mode}): the page logged errors: ${r.errors.join('; ')}`);
      if (!r.ok) throw new Error(`cold start (${mode}): wrong first answer`);
      times.push(r.ms);
    }
    return { times, via };
  }

  /**
   * A row timed inside the worker; fills `entry` (worker summary, check, note, or na).
   * @returns {Promise<boolean>} false when the engine says the row does not apply
   */
  async workerRow(rowId, def, p, entry) {
    const { n, plan } = this;
    const params = { n, seed: this.seed + ROWS.indexOf(def), adaptive: !!def.adaptive, ...p, rel: plan.relational, verify: plan.verify, dbx: plan.dbx, fat: plan.fat, omgdb: plan.omgdb, fts: plan.fts, files: plan.files };
    const r = await this.w.call({ type: 'row', row: rowId, params });
    if (r.na) {
      entry.na = r.na;
      return false;
    }
    entry.worker = summary(r.samples, r.iterationsPerSample, { warmupSamples: r.warmupSamples, ...(r.ops ? { ops: r.ops } : {}), ...(r.trailingMs !== undefined ? { trailingMs: r.trailingMs } : {}) });
    entry.check = r.check;
    if (r.note) entry.note = r.note;
    const problems = checkMismatches(rowId, r.check, n);
    if (problems.length) throw new Error(`wrong result: ${problems.join('; ')}`);
    return true;
  }

  /** open-n / open-n-query [page]: cold starts as an app sees them, each in a fresh page. @param {number} ps @param {string} mode */
  async pageColdStart(ps, mode) {
    if (this.w) await retire(this.w);
    this.w = null;
    const { times, via } = await this.coldSamples(ps, mode);
    // A freshly started engine holding N items (its footprint is recorded after open-n).
    this.w = (await this.spawnInit()).w;
    return { times, warm: 0, via };
  }
}
