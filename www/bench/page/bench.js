// Benchmark page: runs the rows of www/bench/shared/rows.js against each engine, every engine in
// its own dedicated module worker, and collects the results object described in PROTOCOL.md.
//
//   window.runBench({ sizes, scalingSizes, suites, engines, plan, seed }) -> Promise<results>
//   index.html?autorun=1&sizes=1000&engines=sqlite-tuned&plan=quick  runs from the URL
//
// The page orchestrates (this module: which runs, availability, the UI; run-engine.js: one engine's
// run); the timing loops run in the worker (workers/harness.js) except for the rows marked [page],
// which the page times around one awaited call per operation: for SQLite one op message to its
// benchmark worker, for ibexdb one call of the public page API (www/ibexdb.js, which talks to its
// own worker www/lib/worker.js) — see clients.js.

import { DEFAULT_SCALING_SIZES, DEFAULT_SIZES, DEFAULT_SUITES, PLANS, ROWS, SUITES, sectionOf } from '../shared/rows.js';
import { fmtMs, summarize, timerResolutionMs } from '../shared/stats.js';
import { ENGINES, STORAGES } from './engines.js';
import { renderReport, tableLines, textTable } from './report.js';
import { EngineRun } from './run-engine.js';
import { verifyHelpers } from './engine-worker.js';
import { isPageOpRow, pageOpRows } from './page-ops.js';
import { log, setStatus } from './status.js';

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

/** Raw OPFS call costs right now (workers/opfs-probe.js), recorded with every run. */
async function probeOpfs() {
  const w = new Worker(new URL('../workers/opfs-probe.js', import.meta.url), { type: 'module', name: 'opfs-probe' });
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

/**
 * One page → worker → page round trip of a small message, timed as the [page] rows time one
 * operation (workers/echo.js): the floor under every [page] row, recorded with every run.
 */
async function probeRoundTrip(samples = 300, warmup = 50) {
  const w = new Worker(new URL('../workers/echo.js', import.meta.url), { type: 'module', name: 'echo-probe' });
  try {
    /** @type {((v: any) => void) | null} */
    let answer = null;
    w.onmessage = (e) => answer?.(e.data);
    const once = (/** @type {number} */ seq) => new Promise((resolve) => {
      answer = resolve;
      w.postMessage({ type: 'batch', durability: 'flush', ops: [[seq, 'get', `items/item-${String(seq).padStart(6, '0')}`]] });
    });
    const times = [];
    for (let s = 0; s < samples + warmup; s++) {
      const t0 = performance.now();
      const back = await once(s);
      const t1 = performance.now();
      if (back?.ops?.[0]?.[0] !== s) throw new Error('echo probe: wrong answer');
      if (s >= warmup) times.push(t1 - t0);
    }
    const st = summarize(times);
    return { 'postMessage round trip (page ↔ worker)': { p50: st.p50, p95: st.p95, n: st.n } };
  } finally {
    w.terminate();
  }
}

/**
 * `ids` cut after every id that `cut` selects: ['a', 'P', 'b'] → [['a', 'P'], ['b']].
 * @param {string[]} ids @param {(id: string) => boolean} cut
 */
function splitAfter(ids, cut) {
  const parts = [[]];
  for (const id of ids) {
    parts[parts.length - 1].push(id);
    if (cut(id)) parts.push([]);
  }
  return parts.filter((p) => p.length);
}

// --- public entry point ------------------------------------------------------------------------------
/**
 * Which runs to make: [{section, n, rows}], in execution order. Dataset runs (one database of N
 * items per engine) for every size of `sizes` (core + writes rows) and `scalingSizes` (bulk load +
 * open), merged when a size is in both; then one relational and one verify run per engine. Sizes
 * that only the scaling suite uses come last (1M is the longest).
 */
export function planRuns(opts, plan) {
  const want = (suite) => opts.suites.includes(suite) || (suite === 'scaling' && opts.suites.includes('load'));
  const keep = (ids) => (opts.rows ? ids.filter((id) => opts.rows.includes(id)) : ids);
  const datasetRows = (n) => {
    let ids = ROWS.filter((r) => sectionOf(r.id) === 'dataset').map((r) => r.id).filter((id) =>
      (opts.sizes.includes(n) && ((want('core') && SUITES.core.includes(id)) || (want('writes') && SUITES.writes.includes(id))))
      || (opts.scalingSizes.includes(n) && want('scaling') && SUITES.scaling.includes(id)));
    ids = keep(ids);
    // Data rows need the bulk load before them.
    const needsData = ids.some((id) => !['create-instance', 'open-empty', 'bulk-load', 'sync-latency', 'sync-initial'].includes(id));
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
  /** @param {string} section */
  const sectionRows = (section) => keep(ROWS.filter((r) => r.section === section && want(r.suite)).map((r) => r.id));
  for (const section of ['relational', 'verify', 'omgdb', 'fts', 'files']) {
    const rows = sectionRows(section);
    if (rows.length) runs.push({ section, n: 0, rows });
  }
  if (sectionRows('dbx').length) runs.push({ section: 'dbx', n: plan.dbx.rows, rows: sectionRows('dbx') });
  for (const n of scalingOnly) {
    const rows = datasetRows(n);
    if (rows.length) runs.push({ section: 'dataset', n, rows });
  }
  // The fat-record suite last: its largest size is the longest run.
  if (sectionRows('fat').length) for (const n of opts.fatSizes ?? plan.fat.sizes) runs.push({ section: 'fat', n, rows: sectionRows('fat') });
  return runs;
}

/**
 * Run the benchmark. Options (all optional):
 *   sizes         [100000]                  N for the core and writes rows
 *   scalingSizes  [10000, 100000, 1000000]  N for the scaling rows (bulk load, open); defaults to
 *                                           `sizes` when `sizes` is given
 *   suites        all: core, writes, scaling, relational, verify (SUITES in shared/rows.js)
 *   engines       all available             engine ids from engines.js; an unavailable engine named here is an error
 *   rows          all in suites             restrict to these row ids
 *   plan          'full'                    'full' or 'quick' (PLANS in shared/rows.js)
 *   seed          42
 *   fatSizes      the fat-record suite's sizes (default: the plan's)
 *   largeRows     rows of the relational "large" workload (default: the plan's, 1,000)
 *   storage       ['opfs']                  the ibexdb backends to time when `engines` is not given:
 *                                           'opfs' (the engines' default) and/or 'indexeddb' (their
 *                                           `-idb` twins, engines.js); the SQLite engines always run
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
      fatSizes: options.fatSizes ?? null,
      storage: options.storage ?? ['opfs'],
    };
    let plan = PLANS[opts.plan];
    if (!plan) throw new Error(`unknown plan "${opts.plan}" (known: ${Object.keys(PLANS).join(', ')})`);
    // go-sqlite-bench's own size for "large" is 10,000 rows (BENCH_LARGE_ROWS).
    if (options.largeRows) plan = { ...plan, relational: { ...plan.relational, largeRows: options.largeRows } };
    for (const s of opts.suites) if (!SUITES[s]) throw new Error(`unknown suite "${s}" (known: ${Object.keys(SUITES).join(', ')})`);
    for (const st of opts.storage) if (!(st in STORAGES)) throw new Error(`unknown storage "${st}" (known: ${Object.keys(STORAGES).join(', ')})`);
    for (const n of [...opts.sizes, ...opts.scalingSizes]) if (!Number.isInteger(n) || n < 1) throw new Error(`bad size ${n}: sizes are positive integers`);
    if (!crossOriginIsolated) throw new Error('page is not cross-origin isolated: serve it with COOP/COEP (node scripts/serve.mjs)');

    const all = await listEngines();
    let engines;
    if (opts.engines) {
      engines = opts.engines.map((id) => {
        const e = all.find((x) => x.id === id);
        if (!e) throw new Error(`unknown engine "${id}" (known: ${all.map((x) => x.id).join(', ')})`);
        if (!e.available) throw new Error(`engine ${id} is not available: ${e.missing.join(', ')} not served (for ibexdb: run make wasm)`);
        return e;
      });
    } else {
      const wanted = all.filter((e) => !e.storage || opts.storage.includes(e.storage));
      engines = wanted.filter((e) => e.available);
      for (const e of wanted.filter((x) => !x.available)) log(`skipping ${e.id}: ${e.missing.join(', ')} not served`);
    }
    if (!engines.length) throw new Error('no engine available');

    const runPlan = planRuns(opts, plan);
    const rowIds = ROWS.map((r) => r.id).filter((id) => runPlan.some((x) => x.rows.includes(id)));

    const results = {
      schema: 'ibexdb-bench/2',
      meta: {
        startedAt: new Date().toISOString(),
        userAgent: navigator.userAgent,
        hardwareConcurrency: navigator.hardwareConcurrency,
        deviceMemoryGiB: navigator.deviceMemory ?? null,
        crossOriginIsolated,
        timerResolutionMs: timerResolutionMs(),
        percentileMethod: 'nearest-rank on sorted samples: value at rank ceil(p/100*n)',
        memoryMeasurement: typeof window.benchWorkerHeap === 'function'
          ? 'wasm memory: the engine\'s WebAssembly.Memory size (linear memory, never shrinks); JS heap: the engine worker\'s V8 heap via CDP Runtime.getHeapUsage (performance.memory and measureUserAgentSpecificMemory are not exposed in workers)'
          : 'wasm memory only: worker JS heap is not measurable without the runner\'s CDP hook',
      },
      options: { ...opts, engines: engines.map((e) => e.id), rows: rowIds, runs: runPlan, planParams: { relational: plan.relational, verify: plan.verify, dbx: plan.dbx, fat: plan.fat, omgdb: plan.omgdb, fts: plan.fts, files: plan.files } },
      rowCatalogue: ROWS,
      engines: all.map(({ id, family, durability, description, config, available, missing, pageApi, storage }) => ({ id, family, durability, description, config, available, missing, pageApi: pageApi ?? 'worker', storage: storage ?? 'opfs (sahpool)' })),
      runs: [],
      errors: [],
    };
    window.benchResults = results;
    setStatus('probing OPFS call costs');
    results.meta.opfsProbe = await probeOpfs();
    const probe = results.meta.opfsProbe;
    log(probe.error ? `OPFS probe: cannot run here (${probe.error})` : `OPFS probe (p50): ${Object.entries(probe).map(([k, v]) => `${k} ${fmtMs(v.p50)}`).join(', ')}`);
    results.meta.roundTripProbe = await probeRoundTrip();
    log(`round-trip probe (p50): ${Object.entries(results.meta.roundTripProbe).map(([k, v]) => `${k} ${fmtMs(v.p50)}`).join(', ')}`);
    log(`engines: ${engines.map((e) => e.id).join(', ')}; runs: ${runPlan.map((x) => (x.section === 'dataset' ? `N=${x.n} (${x.rows.length} rows)` : `${x.section}${x.n ? ` N=${x.n}` : ''} (${x.rows.length} rows)`)).join(', ')}; plan: ${opts.plan}`);

    for (const rp of runPlan) {
      const where = rp.section === 'dataset' ? `N=${rp.n}` : rp.section === 'fat' || rp.section === 'dbx' ? `${rp.section} N=${rp.n}` : rp.section;
      const onRow = (/** @type {any} */ r, /** @type {string} */ rowId) => {
        const e = r.rows[rowId];
        const parts = [];
        if (e.worker) parts.push(`worker p50 ${fmtMs(e.worker.p50)} p95 ${fmtMs(e.worker.p95)} (${e.worker.n}×${e.worker.k})`);
        if (e.page) parts.push(`page p50 ${fmtMs(e.page.p50)} p95 ${fmtMs(e.page.p95)} (${e.page.n})`);
        if (e.na) parts.push(e.na);
        if (e.error) parts.push(`ERROR ${e.error}`);
        log(`${r.engine} ${where} ${rowId}: ${parts.join('; ')}`);
        renderLive(results);
      };
      const engineRuns = engines.map((engine) => new EngineRun(engine, rp.section, rp.n, plan, opts.seed, onRow));
      for (const er of engineRuns) {
        er.result.plannedRows = rp.rows;
        results.runs.push(er.result);
      }
      // Starts (and create-instance) in turns too: the first engine rotates from section to section.
      const sectionIndex = runPlan.indexOf(rp);
      for (const er of engineRuns.map((_, j) => engineRuns[(sectionIndex + j) % engineRuns.length])) {
        log(`--- ${er.engine.id}, ${where}`);
        await er.start(rp.rows);
      }
      // The rows up to each op-by-op [page] row; then that [page] row with every engine in the
      // same minutes (page-ops.js); each engine ends after its last part. Worker rows take turns
      // too: row by row, every engine runs the row before the next row starts, and the engine
      // that goes first rotates from row to row (never SQLite first throughout), so that no
      // engine has minutes of its own: a ratio of two engines compares them on the same minutes.
      const parts = splitAfter(rp.rows, isPageOpRow);
      let turn = 0;
      for (const [i, part] of parts.entries()) {
        for (const rowId of part) {
          const order = engineRuns.map((_, j) => engineRuns[(turn + j) % engineRuns.length]);
          turn++;
          for (const er of order) await er.rows([rowId]);
        }
        if (i === parts.length - 1 && !part.some(isPageOpRow)) for (const er of engineRuns) await er.finish();
        if (part.some(isPageOpRow)) {
          log(`--- [page] ${part.filter(isPageOpRow).join(', ')}, ${where}: engines interleaved`);
          await pageOpRows(engineRuns, part, plan, rp.n, onRow);
        }
      }
      for (const er of engineRuns) await er.finish();
      renderLive(results);
    }
    results.meta.finishedAt = new Date().toISOString();
    // verify()'s helper threads, started by this page for the engine workers that asked (as the
    // product's page API does: never a worker started inside a worker).
    results.meta.verifyHelpersStartedByPage = verifyHelpers.started;
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
  const frame = /** @type {HTMLIFrameElement | null} */ (document.getElementById('report'));
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
  /** The controls of index.html: inputs sizes, suites, select plan, button run. @type {any} */
  const form = document.getElementById('controls');
  if (q.get('sizes')) form.sizes.value = q.get('sizes');
  if (q.get('plan')) form.plan.value = q.get('plan');
  if (q.get('suites')) form.suites.value = q.get('suites');
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const chosen = [.../** @type {NodeListOf<HTMLInputElement>} */ (box.querySelectorAll('input:checked'))].map((x) => x.value);
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
      storage: q.get('storage') ? q.get('storage').split(',') : undefined,
    });
    showReport(r);
  }
}

setupUi().catch((err) => {
  console.error(`[bench] page setup failed: ${err.message}`);
  setStatus(`page setup failed: ${err.message}`);
});
