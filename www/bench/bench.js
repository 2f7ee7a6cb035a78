// Benchmark page: runs the rows of www/bench/common.js against each engine, every engine in its own
// dedicated module worker, and collects the results object described in PROTOCOL.md.
//
//   window.runBench({ sizes, scalingSizes, suites, engines, plan, seed }) -> Promise<results>
//   index.html?autorun=1&sizes=1000&engines=sqlite-tuned&plan=quick  runs from the URL
//
// The page orchestrates; the timing loops run in the worker (harness.js) except for the rows marked
// [page], which the page times around one awaited call per operation: for SQLite one op message to
// its benchmark worker, for ibexdb one call of the public page API (www/ibexdb.js, which talks to
// its own worker www/lib/worker.js) — see IbexPageClient.

import {
  ROWS, SUITES, PLANS, DEFAULT_SUITES, DEFAULT_SIZES, DEFAULT_SCALING_SIZES, expectedChecks, summarize,
  itemId, makeItem, updatedFields, rng, fmtMs, sectionOf, samplesAt,
} from './common.js';
import { ENGINES } from './engines.js';
import { ITEMS_SCHEMA, ibexValue, repoName } from './ibexdb-common.js';
import { renderReport, tableLines, textTable } from './report.js';
import { removeRepository } from '../lib/storage.js';

const CALL_TIMEOUT_MS = 15 * 60 * 1000;

// --- logging / progress ----------------------------------------------------------------------------
const logEl = () => document.getElementById('log');
const statusEl = () => document.getElementById('status');
function log(msg) {
  console.log(`[bench] ${msg}`);
  const el = logEl();
  if (el) {
    el.textContent += `${msg}\n`;
    el.scrollTop = el.scrollHeight;
  }
}
function setStatus(msg) {
  const el = statusEl();
  if (el) el.textContent = msg;
  window.benchProgress = msg;
}

// --- engine worker wrapper -------------------------------------------------------------------------
/** A dedicated module worker for one engine, with request/reply matching and clear failures. */
class EngineWorker {
  constructor(engine) {
    this.engine = engine;
    this.seq = 0;
    this.pending = new Map();
    this.dead = null;
    this.worker = new Worker(new URL(engine.worker, import.meta.url), { type: 'module', name: engine.id });
    this.worker.onmessage = (e) => this.#onMessage(e.data);
    this.worker.onerror = (e) => {
      // Module workers report load failures (404, syntax error, failed import) without much detail;
      // the browser console has the specifics.
      e.preventDefault?.();
      const where = e.filename ? ` at ${e.filename}:${e.lineno}` : '';
      this.#fail(new Error(`${engine.id} worker error${where}: ${e.message || 'script failed to load or threw at top level (see the browser console)'}`));
    };
    this.worker.onmessageerror = () => this.#fail(new Error(`${engine.id} worker sent a message that could not be deserialized`));
  }

  #onMessage(msg) {
    if (msg?.type === 'fatal') {
      console.error(`[bench] ${this.engine.id} worker fatal: ${msg.error?.name}: ${msg.error?.message}`);
      this.#fail(Object.assign(new Error(`${this.engine.id} worker: unhandled ${msg.error?.name}: ${msg.error?.message}`), { workerStack: msg.error?.stack }));
      return;
    }
    const p = this.pending.get(msg?.id);
    if (!p) return;
    this.pending.delete(msg.id);
    clearTimeout(p.timer);
    if (msg.ok) p.resolve(msg);
    else {
      const err = new Error(`${this.engine.id}: ${msg.error?.name ?? 'Error'}: ${msg.error?.message ?? 'unknown error'}`);
      err.workerStack = msg.error?.stack;
      p.reject(err);
    }
  }

  #fail(err) {
    if (!this.dead) this.dead = err;
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(err);
    }
    this.pending.clear();
  }

  /** Send one message and wait for its reply. */
  call(msg, timeoutMs = CALL_TIMEOUT_MS) {
    if (this.dead) return Promise.reject(this.dead);
    const id = ++this.seq;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${this.engine.id}: no reply to ${msg.type}${msg.row ? ` ${msg.row}` : ''} within ${timeoutMs / 1000} s`));
      }, timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      this.worker.postMessage({ ...msg, id });
    });
  }

  terminate() {
    this.worker.terminate();
    this.#fail(new Error(`${this.engine.id} worker terminated`));
  }
}

/** Ask the worker to release its storage, then terminate it. Errors here are secondary. */
async function retire(w, { reset = false, final = false } = {}) {
  try {
    if (reset) await w.call({ type: 'reset', final }, 60_000);
    await w.call({ type: 'close' }, 60_000);
  } finally {
    w.terminate();
  }
}

// --- page-side clients -----------------------------------------------------------------------------
/**
 * ibexdb as an app uses it: the public page API (www/ibexdb.js). open() starts its own worker
 * (www/lib/worker.js) that owns the OPFS files; calls made in one tick travel as one message. The
 * benchmark worker must have released the files first ('release' message).
 */
class IbexPageClient {
  static async open(engine) {
    const { open } = await import('/www/ibexdb.js');
    const db = await open(repoName(engine.id), {
      durability: engine.config.durability,
      trusted: !!engine.config.trusted,
      schemas: { items: ITEMS_SCHEMA },
      onError: (e) => console.error(`[bench] ${engine.id} page API background error: ${e.name}: ${e.message}`),
    });
    return new IbexPageClient(db);
  }

  constructor(db) {
    this.db = db;
  }

  op({ op, args }) {
    const db = this.db;
    switch (op) {
      case 'get': return db.get(`items/${args.id}`);
      case 'queryRange': return db.query({ collection: 'items', where: { count: { gte: args.lo, lt: args.hi } }, sort: ['count'] });
      case 'put': return db.put(`items/${args.item.id}`, ibexValue(args.item));
      case 'update': return db.update(`items/${args.id}`, ibexValue(args.fields));
      case 'putMany': return db.transaction((tx) => { for (const it of args.items) tx.put(`items/${it.id}`, ibexValue(it)); });
      // Issued in one tick: the page API sends them as one batch, the worker group-commits them.
      case 'putConcurrent': return Promise.all(args.items.map((it) => db.put(`items/${it.id}`, ibexValue(it))));
      default: throw new Error(`IbexPageClient: unknown op ${op}`);
    }
  }

  close() {
    return this.db.close();
  }
}

/** SQLite (and any worker-protocol engine): one op message per awaited call. */
function workerOp(w, { op, args }) {
  if (op === 'putConcurrent') {
    // 100 messages posted at once; the worker handles them one at a time, each its own transaction.
    return Promise.all(args.items.map((item) => w.call({ type: 'op', op: 'put', args: { item } })));
  }
  return w.call({ type: 'op', op, args });
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

// --- availability ----------------------------------------------------------------------------------
async function isServed(path) {
  try {
    const r = await fetch(new URL(path, import.meta.url), { method: 'HEAD', cache: 'no-store' });
    return r.ok;
  } catch {
    return false;
  }
}

/**
 * Engines with their availability: { ...engine, available, missing: [paths] }.
 * The HEAD probes of files that are absent make the browser log "Failed to load resource: 404";
 * their absolute URLs are listed in window.benchExpected404 so tests can tell them from real errors.
 */
export async function listEngines() {
  window.benchExpected404 ??= [];
  return Promise.all(ENGINES.map(async (e) => {
    const missing = [];
    for (const p of e.requires ?? [e.worker]) {
      if (!(await isServed(p))) {
        missing.push(p);
        const abs = new URL(p, import.meta.url).href;
        if (!window.benchExpected404.includes(abs)) window.benchExpected404.push(abs);
      }
    }
    return { ...e, available: missing.length === 0, missing };
  }));
}

// --- checks -------------------------------------------------------------------------------------------
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

function summary(samples, k = 1, extra = {}) {
  return { ...summarize(samples), k, samples, ...extra };
}

// --- one engine, one section (and size) --------------------------------------------------------------
/** Page-side operation generators per row: each returns an op descriptor {op, args, per?}. */
function pageOpMakers(n, pageRng, nextNew, plan) {
  const batch = plan.rows['writes-batched']?.pageBatch ?? 100;
  return {
    'read-by-id': () => ({ op: 'get', args: { id: itemId(pageRng.int(n)) } }),
    'simple-query': () => { const lo = pageRng.int(Math.max(1, n - 1000 + 1)); return { op: 'queryRange', args: { lo, hi: lo + 1000 } }; },
    'create-item': () => { const i = nextNew(); return { op: 'put', args: { item: { ...makeItem(i), id: `page-item-${i}` } } }; },
    'update-item': () => { const i = pageRng.int(n); return { op: 'update', args: { id: itemId(i), fields: updatedFields(i, 1_000_000 + nextNew()) } }; },
    'bulk-create-100': () => ({ op: 'putMany', args: { items: Array.from({ length: 100 }, () => { const i = nextNew(); return { ...makeItem(i), id: `page-item-${i}` }; }) } }),
    'writes-batched': () => ({ op: 'putConcurrent', per: batch, args: { items: Array.from({ length: batch }, () => { const i = nextNew(); return { ...makeItem(i), id: `page-item-${i}` }; }) } }),
  };
}

/**
 * Run `rowIds` for one engine in one fresh worker. `section` 'dataset': the rows share one database
 * of N base items; 'relational' / 'verify': the rows build their own databases (n is unused).
 */
async function runEngine(engine, section, n, rowIds, plan, seed, onRow) {
  const run = {
    engine: engine.id, family: engine.family, durability: engine.durability, section, size: section === 'dataset' ? n : null,
    startedAt: new Date().toISOString(), info: null, init: null, rows: {}, stats: {}, errors: [],
  };
  const rowDef = Object.fromEntries(ROWS.map((r) => [r.id, r]));
  const planFor = (id) => {
    const p = { targetMs: plan.targetMs, warmupMs: plan.warmupMs, maxK: plan.maxK, ...plan.rows[id] };
    p.samples = samplesAt(rowDef[id], p.samples, n);
    if (p.pageSamples) p.pageSamples = samplesAt(rowDef[id], p.pageSamples, n);
    return p;
  };
  const config = { ...engine.config };
  const pageApi = engine.pageApi === 'ibexdb';
  let w = null;

  const spawnInit = async () => {
    const t0 = performance.now();
    const ew = new EngineWorker(engine);
    const r = await ew.call({ type: 'init', engine: engine.id, config });
    return { w: ew, r, pageMs: performance.now() - t0 };
  };
  const record = (rowId, entry) => {
    run.rows[rowId] = entry;
    onRow?.(run, rowId);
  };
  const stats = async (label) => {
    const st = (await w.call({ type: 'stats' })).stats;
    Object.assign(st, await workerHeap(engine.id));
    run.stats[label] = st;
    // Plans of cost-based planners depend on the data: keep the ones taken after the load.
    if (label === 'afterLoad' && st.queryPlans && run.info) run.info.queryPlans = { ...run.info.queryPlans, ...st.queryPlans, measuredAt: `after bulk load of ${n} items` };
  };

  try {
    // Clean slate: whatever an earlier (possibly crashed) run left in this engine's OPFS files.
    setStatus(`${engine.id} ${section} N=${n}: cleaning storage`);
    {
      const { w: c, r } = await spawnInit();
      run.info = r.info;
      await retire(c, { reset: true });
    }

    if (rowIds.includes('create-instance')) {
      setStatus(`${engine.id} N=${n}: create instance`);
      const p = planFor('create-instance');
      const page = [];
      const worker = [];
      const parts = [];
      for (let s = 0; s < p.samples; s++) {
        const { w: c, r, pageMs } = await spawnInit();
        worker.push(r.ms.total);
        parts.push(r.ms);
        await retire(c, { reset: true });
        if (pageApi) {
          // What an app sees: open() of the public API on empty storage (its worker, wasm, OPFS,
          // identity), then close and delete (not timed).
          const t0 = performance.now();
          const client = await IbexPageClient.open(engine);
          page.push(performance.now() - t0);
          await client.close();
          await removeRepository(repoName(engine.id));
        } else {
          page.push(pageMs);
        }
      }
      record('create-instance', {
        worker: summary(worker), page: summary(page),
        note: pageApi
          ? 'fresh storage per sample; worker: benchmark worker init (import engine.js + wasm compile/instantiate + OPFS + identity + create); page: open() of the public API'
          : 'fresh worker per sample on empty storage; the worker time covers module import + wasm instantiate + storage + create',
        breakdown: parts,
      });
    }

    // The worker that runs every remaining row.
    {
      const { w: ew, r, pageMs } = await spawnInit();
      w = ew;
      run.info = r.info;
      run.init = { pageMs, ...r.ms, timerResolutionMs: r.timerResolutionMs, crossOriginIsolated: r.crossOriginIsolated };
    }

    const pageRng = rng(seed ^ 0x5eed);
    let pageNew = 0;
    const makers = pageOpMakers(n, pageRng, () => n + pageNew++, plan);

    for (const rowId of rowIds) {
      if (rowId === 'create-instance') continue;
      const def = rowDef[rowId];
      const p = planFor(rowId);
      setStatus(`${engine.id} ${section === 'dataset' ? `N=${n}` : section}: ${def.label}`);
      const entry = {};
      if (def.na) {
        entry.na = def.na;
        record(rowId, entry);
        continue;
      }
      try {
        const params = { n, seed: seed + ROWS.indexOf(def), adaptive: !!def.adaptive, ...p, rel: plan.relational, verify: plan.verify };
        const r = await w.call({ type: 'row', row: rowId, params });
        if (r.na) {
          entry.na = r.na;
          record(rowId, entry);
          continue;
        }
        entry.worker = summary(r.samples, r.iterationsPerSample, { warmupSamples: r.warmupSamples });
        entry.check = r.check;
        if (r.note) entry.note = r.note;
        const problems = checkMismatches(rowId, r.check, n);
        if (problems.length) throw new Error(`wrong result: ${problems.join('; ')}`);

        if (rowId === 'bulk-load') await stats('afterLoad');

        // Page-side measurements: one awaited call per operation.
        const ps = p.pageSamples ?? 0;
        if (def.page && ps > 0) {
          const times = [];
          let pageWarm = 0;
          if (rowId === 'open-n') {
            // Cold start as an app sees it: a new worker opens the N-item database and reads one item.
            const id = itemId(Math.floor(n / 2));
            for (let s = 0; s < ps; s++) {
              if (w) await retire(w);
              w = null;
              const t0 = performance.now();
              let got;
              if (pageApi) {
                const client = await IbexPageClient.open(engine);
                got = await client.op({ op: 'get', args: { id } });
                times.push(performance.now() - t0);
                await client.close();
              } else {
                const ew = new EngineWorker(engine);
                await ew.call({ type: 'init', engine: engine.id, config });
                got = (await ew.call({ type: 'op', op: 'get', args: { id } })).value;
                times.push(performance.now() - t0);
                w = ew;
              }
              if (n > 0 && got === undefined) throw new Error('cold open: first read found nothing');
            }
            if (!w) w = (await spawnInit()).w;
          } else {
            const mk = makers[rowId];
            if (!mk) throw new Error(`no page-side operation defined for ${rowId}`);
            const warm = def.write ? 1 : plan.pageWarmup ?? 1;
            const msgs = Array.from({ length: ps + warm }, mk);
            let client = null;
            if (pageApi) {
              await w.call({ type: 'release' });
              client = await IbexPageClient.open(engine);
            }
            try {
              for (let s = 0; s < msgs.length; s++) {
                const t0 = performance.now();
                if (client) await client.op(msgs[s]);
                else await workerOp(w, msgs[s]);
                const t1 = performance.now();
                if (s >= warm) times.push((t1 - t0) / (msgs[s].per ?? 1));
              }
            } finally {
              // Seal, flush, snapshot, release the files; the benchmark worker reopens next row.
              if (client) await client.close();
            }
            pageWarm = warm;
          }
          entry.page = summary(times, 1, { warmupSamples: pageWarm });
          if (pageApi) entry.pageVia = 'public API (www/ibexdb.js)';
        }
        // Footprint of a freshly started engine holding N items: after the cold starts, `w` is a
        // new worker that opened the database and read one item (or, without page samples, the
        // worker that just reopened it).
        if (rowId === 'open-n') await stats('afterOpen');
      } catch (err) {
        entry.error = err.message;
        run.errors.push(`${rowId}: ${err.message}`);
        console.error(`[bench] ${engine.id} ${section} N=${n} ${rowId}: ${err.message}${err.workerStack ? `\n${err.workerStack}` : ''}`);
        if (!w || w.dead) {
          record(rowId, entry);
          throw new Error(`${engine.id} worker died during ${rowId}; remaining rows skipped`);
        }
      }
      record(rowId, entry);
    }

    await stats('end');
    await retire(w, { reset: true, final: true });
    w = null;
  } catch (err) {
    run.errors.push(err.message);
    console.error(`[bench] ${engine.id} ${section} N=${n}: ${err.message}${err.workerStack ? `\n${err.workerStack}` : ''}`);
    if (w) {
      try { await retire(w, { reset: true, final: true }); } catch { /* already reported */ }
    }
  }
  run.finishedAt = new Date().toISOString();
  return run;
}

/** Raw OPFS call costs right now (opfs-probe-worker.js), recorded with every run. */
async function probeOpfs() {
  const w = new Worker(new URL('./opfs-probe-worker.js', import.meta.url), { type: 'module', name: 'opfs-probe' });
  try {
    return await new Promise((resolve, reject) => {
      w.onmessage = (e) => resolve(e.data);
      w.onerror = (e) => reject(new Error(`opfs probe failed: ${e.message || 'worker error'}`));
      w.postMessage('probe');
    });
  } finally {
    w.terminate();
  }
}

// --- public entry point ------------------------------------------------------------------------------
function pageTimerResolutionMs() {
  let best = Infinity;
  for (let i = 0; i < 50; i++) {
    const a = performance.now();
    let b = performance.now();
    while (b === a) b = performance.now();
    best = Math.min(best, b - a);
  }
  return best;
}

/**
 * Run the benchmark. Options (all optional):
 *   sizes   [100000]        item counts N
 *   suites  ['core']        keys of SUITES in common.js
 *   engines all available   engine ids from engines.js; an unavailable engine named here is an error
 *   rows    all in suites   restrict to these row ids
 *   plan    'full'          'full' or 'quick' (PLANS in common.js)
 *   seed    42
 */
/**
 * Which runs to make: [{section, n, rows}], in execution order. Dataset runs (one database of N
 * items per engine) for every size of `sizes` (core + writes rows) and `scalingSizes` (bulk load +
 * open), merged when a size is in both; then one relational and one verify run per engine. Sizes
 * that only the scaling suite uses come last (1M is the longest).
 */
export function planRuns(opts) {
  const want = (suite) => opts.suites.includes(suite) || (suite === 'scaling' && opts.suites.includes('load'));
  const keep = (ids) => (opts.rows ? ids.filter((id) => opts.rows.includes(id)) : ids);
  const datasetRows = (n) => {
    let ids = ROWS.filter((r) => sectionOf(r.id) === 'dataset').map((r) => r.id).filter((id) =>
      (opts.sizes.includes(n) && ((want('core') && SUITES.core.includes(id)) || (want('writes') && SUITES.writes.includes(id))))
      || (opts.scalingSizes.includes(n) && want('scaling') && SUITES.scaling.includes(id)));
    ids = keep(ids);
    // Data rows need the bulk load before them.
    const needsData = ids.some((id) => !['create-instance', 'open-empty', 'bulk-load', 'sync-latency'].includes(id));
    if (needsData && !ids.includes('bulk-load')) ids.splice(ids.findIndex((id) => !['create-instance', 'open-empty'].includes(id)), 0, 'bulk-load');
    return ids;
  };
  const runs = [];
  const sizes = [...new Set([...opts.sizes, ...opts.scalingSizes])].sort((x, y) => x - y);
  const withCore = sizes.filter((n) => opts.sizes.includes(n));
  const scalingOnly = sizes.filter((n) => !opts.sizes.includes(n));
  for (const n of withCore) {
    const rows = datasetRows(n);
    if (rows.length) runs.push({ section: 'dataset', n, rows });
  }
  for (const section of ['relational', 'verify']) {
    const rows = keep(ROWS.filter((r) => r.section === section && want(r.suite)).map((r) => r.id));
    if (rows.length) runs.push({ section, n: 0, rows });
  }
  for (const n of scalingOnly) {
    const rows = datasetRows(n);
    if (rows.length) runs.push({ section: 'dataset', n, rows });
  }
  return runs;
}

/**
 * Run the benchmark. Options (all optional):
 *   sizes         [100000]                  N for the core and writes rows
 *   scalingSizes  [10000, 100000, 1000000]  N for the scaling rows (bulk load, open); defaults to
 *                                           `sizes` when `sizes` is given
 *   suites        all: core, writes, scaling, relational, verify (SUITES in common.js)
 *   engines       all available             engine ids from engines.js; an unavailable engine named here is an error
 *   rows          all in suites             restrict to these row ids
 *   plan          'full'                    'full' or 'quick' (PLANS in common.js)
 *   seed          42
 */
async function runBench(options = {}) {
  if (window.benchRunning) throw new Error('a benchmark run is already in progress');
  window.benchRunning = true;
  try {
    const opts = {
      sizes: options.sizes ?? DEFAULT_SIZES,
      scalingSizes: options.scalingSizes ?? options.sizes ?? DEFAULT_SCALING_SIZES,
      suites: options.suites ?? DEFAULT_SUITES,
      plan: options.plan ?? 'full',
      seed: options.seed ?? 42,
      engines: options.engines ?? null,
      rows: options.rows ?? null,
    };
    const plan = PLANS[opts.plan];
    if (!plan) throw new Error(`unknown plan "${opts.plan}" (known: ${Object.keys(PLANS).join(', ')})`);
    for (const s of opts.suites) if (!SUITES[s]) throw new Error(`unknown suite "${s}" (known: ${Object.keys(SUITES).join(', ')})`);
    for (const n of [...opts.sizes, ...opts.scalingSizes]) if (!Number.isInteger(n) || n < 1) throw new Error(`bad size ${n}: sizes are positive integers`);
    if (!crossOriginIsolated) throw new Error('page is not cross-origin isolated: serve it with COOP/COEP (node scripts/serve.mjs)');

    const all = await listEngines();
    let engines;
    if (opts.engines) {
      engines = opts.engines.map((id) => {
        const e = all.find((x) => x.id === id);
        if (!e) throw new Error(`unknown engine "${id}" (known: ${all.map((x) => x.id).join(', ')})`);
        if (!e.available) throw new Error(`engine ${id} is not available: ${e.missing.join(', ')} not served (for ibexdb: add www/bench/ibexdb-worker.js and run make wasm)`);
        return e;
      });
    } else {
      engines = all.filter((e) => e.available);
      for (const e of all.filter((x) => !x.available)) log(`skipping ${e.id}: ${e.missing.join(', ')} not served`);
    }
    if (!engines.length) throw new Error('no engine available');

    const runPlan = planRuns(opts);
    const rowIds = ROWS.map((r) => r.id).filter((id) => runPlan.some((x) => x.rows.includes(id)));

    const results = {
      schema: 'ibexdb-bench/2',
      meta: {
        startedAt: new Date().toISOString(),
        userAgent: navigator.userAgent,
        hardwareConcurrency: navigator.hardwareConcurrency,
        deviceMemoryGiB: navigator.deviceMemory ?? null,
        crossOriginIsolated,
        timerResolutionMs: pageTimerResolutionMs(),
        percentileMethod: 'nearest-rank on sorted samples: value at rank ceil(p/100*n)',
        memoryMeasurement: typeof window.benchWorkerHeap === 'function'
          ? 'wasm memory: the engine\'s WebAssembly.Memory size (linear memory, never shrinks); JS heap: the engine worker\'s V8 heap via CDP Runtime.getHeapUsage (performance.memory and measureUserAgentSpecificMemory are not exposed in workers)'
          : 'wasm memory only: worker JS heap is not measurable without the runner\'s CDP hook',
      },
      options: { ...opts, engines: engines.map((e) => e.id), rows: rowIds, runs: runPlan, planParams: { relational: plan.relational, verify: plan.verify } },
      rowCatalogue: ROWS,
      engines: all.map(({ id, family, durability, description, config, available, missing, pageApi }) => ({ id, family, durability, description, config, available, missing, pageApi: pageApi ?? 'worker' })),
      runs: [],
      errors: [],
    };
    window.benchResults = results;
    setStatus('probing OPFS call costs');
    results.meta.opfsProbe = await probeOpfs();
    log(`OPFS probe (p50): ${Object.entries(results.meta.opfsProbe).map(([k, v]) => `${k} ${fmtMs(v.p50)}`).join(', ')}`);
    log(`engines: ${engines.map((e) => e.id).join(', ')}; runs: ${runPlan.map((x) => (x.section === 'dataset' ? `N=${x.n} (${x.rows.length} rows)` : `${x.section} (${x.rows.length} rows)`)).join(', ')}; plan: ${opts.plan}`);

    for (const rp of runPlan) {
      const where = rp.section === 'dataset' ? `N=${rp.n}` : rp.section;
      for (const engine of engines) {
        log(`--- ${engine.id}, ${where}`);
        const run = await runEngine(engine, rp.section, rp.n, rp.rows, plan, opts.seed, (r, rowId) => {
          const e = r.rows[rowId];
          const parts = [];
          if (e.worker) parts.push(`worker p50 ${fmtMs(e.worker.p50)} p95 ${fmtMs(e.worker.p95)} (${e.worker.n}×${e.worker.k})`);
          if (e.page) parts.push(`page p50 ${fmtMs(e.page.p50)} p95 ${fmtMs(e.page.p95)} (${e.page.n})`);
          if (e.na) parts.push(e.na);
          if (e.error) parts.push(`ERROR ${e.error}`);
          log(`${r.engine} ${where} ${rowId}: ${parts.join('; ')}`);
          renderLive(results);
        });
        run.plannedRows = rp.rows;
        results.runs.push(run);
        renderLive(results);
      }
    }
    results.meta.finishedAt = new Date().toISOString();
    const bad = results.runs.filter((r) => r.errors.length);
    setStatus(bad.length ? `done with errors (${bad.map((r) => r.engine).join(', ')})` : 'done');
    log(`done in ${((Date.parse(results.meta.finishedAt) - Date.parse(results.meta.startedAt)) / 1000).toFixed(1)} s`);
    renderLive(results);
    return results;
  } finally {
    window.benchRunning = false;
  }
}

// --- page UI ---------------------------------------------------------------------------------------
function renderLive(results) {
  const out = document.getElementById('live');
  if (!out) return;
  const partial = { ...results, runs: [...results.runs] };
  out.textContent = textTable(partial) || '(no results yet)';
}

function showReport(results) {
  const frame = document.getElementById('report');
  if (frame) frame.srcdoc = renderReport(results);
}

window.runBench = runBench;
window.benchTableLines = tableLines;
window.listBenchEngines = listEngines;

async function setupUi() {
  const engines = await listEngines();
  const box = document.getElementById('engines');
  if (box) {
    box.innerHTML = '';
    for (const e of engines) {
      const label = document.createElement('label');
      label.title = e.available ? e.description : `not available: ${e.missing.join(', ')} not served`;
      const cb = document.createElement('input');
      cb.type = 'checkbox';
      cb.value = e.id;
      cb.checked = e.available;
      cb.disabled = !e.available;
      label.append(cb, ` ${e.id}${e.available ? '' : ' (unavailable)'}`);
      box.append(label);
    }
  }
  const q = new URLSearchParams(location.search);
  const form = document.getElementById('controls');
  if (q.get('sizes')) form.sizes.value = q.get('sizes');
  if (q.get('plan')) form.plan.value = q.get('plan');
  if (q.get('suites')) form.suites.value = q.get('suites');
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const chosen = [...box.querySelectorAll('input:checked')].map((x) => x.value);
    const sizes = form.sizes.value.split(',').map((s) => Number(s.trim())).filter(Boolean);
    const suites = form.suites.value.split(',').map((s) => s.trim()).filter(Boolean);
    form.run.disabled = true;
    try {
      const r = await runBench({ sizes, suites, engines: chosen, plan: form.plan.value });
      showReport(r);
    } catch (err) {
      console.error(`[bench] ${err.message}`);
      setStatus(`failed: ${err.message}`);
    } finally {
      form.run.disabled = false;
    }
  });
  document.getElementById('ready').textContent = 'ready';
  window.benchReady = true;
  if (q.get('autorun')) {
    const r = await runBench({
      sizes: q.get('sizes') ? q.get('sizes').split(',').map(Number) : undefined,
      scalingSizes: q.get('scalingSizes') ? q.get('scalingSizes').split(',').map(Number) : undefined,
      engines: q.get('engines') ? q.get('engines').split(',') : undefined,
      suites: q.get('suites') ? q.get('suites').split(',') : undefined,
      plan: q.get('plan') ?? undefined,
    });
    showReport(r);
  }
}

setupUi().catch((err) => {
  console.error(`[bench] page setup failed: ${err.message}`);
  setStatus(`page setup failed: ${err.message}`);
});
