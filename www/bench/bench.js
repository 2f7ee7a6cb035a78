// Benchmark page: runs the rows of www/bench/common.js against each engine, every engine in its own
// dedicated module worker, and collects the results object described in PROTOCOL.md.
//
//   window.runBench({ sizes, suites, engines, plan, seed }) -> Promise<results>
//   index.html?autorun=1&sizes=1000&engines=sqlite-tuned&plan=quick  runs from the URL
//
// The page orchestrates; the timing loops run in the worker (harness.js) except for the rows marked
// [page], which the page times around one postMessage round trip per operation.

import { ROWS, SUITES, PLANS, expectedChecks, summarize, itemId, makeItem, updatedFields, rng, fmtMs } from './common.js';
import { ENGINES } from './engines.js';
import { renderReport, tableLines, textTable } from './report.js';

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

// --- one engine at one size -----------------------------------------------------------------------
async function runEngine(engine, n, rowIds, plan, seed, onRow) {
  const run = {
    engine: engine.id, family: engine.family, durability: engine.durability, size: n,
    startedAt: new Date().toISOString(), info: null, init: null, rows: {}, stats: {}, errors: [],
  };
  const planFor = (id) => ({ targetMs: plan.targetMs, warmupMs: plan.warmupMs, maxK: plan.maxK, ...plan.rows[id] });
  const rowDef = Object.fromEntries(ROWS.map((r) => [r.id, r]));
  let w = null;

  const spawnInit = async () => {
    const t0 = performance.now();
    const ew = new EngineWorker(engine);
    const r = await ew.call({ type: 'init', engine: engine.id, config: engine.config });
    return { w: ew, r, pageMs: performance.now() - t0 };
  };

  const record = (rowId, entry) => {
    run.rows[rowId] = entry;
    onRow?.(run, rowId);
  };

  try {
    // Clean slate: whatever an earlier (possibly crashed) run left in this engine's OPFS files.
    setStatus(`${engine.id} N=${n}: cleaning storage`);
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
        page.push(pageMs);
        worker.push(r.ms.total);
        parts.push(r.ms);
        await retire(c, { reset: true });
      }
      record('create-instance', {
        worker: summary(worker), page: summary(page),
        note: 'fresh worker per sample on empty storage; the worker time covers module import + wasm instantiate + storage + create',
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

    for (const rowId of rowIds) {
      if (rowId === 'create-instance') continue;
      const def = rowDef[rowId];
      const p = planFor(rowId);
      setStatus(`${engine.id} N=${n}: ${def.label}`);
      const entry = {};
      try {
        const params = { n, seed: seed + ROWS.indexOf(def), adaptive: !!def.adaptive, ...p };
        const r = await w.call({ type: 'row', row: rowId, params });
        entry.worker = summary(r.samples, r.iterationsPerSample, { warmupSamples: r.warmupSamples });
        entry.check = r.check;
        if (r.note) entry.note = r.note;
        const problems = checkMismatches(rowId, r.check, n);
        if (problems.length) throw new Error(`wrong result: ${problems.join('; ')}`);

        if (rowId === 'bulk-load') {
          run.stats.afterLoad = (await w.call({ type: 'stats' })).stats;
        }

        // Page-side measurements: one message per operation.
        const ps = p.pageSamples ?? 0;
        if (def.page && ps > 0) {
          const times = [];
          let pageWarm = 0;
          if (rowId === 'open-n') {
            // Cold start as an app sees it: a new worker opens the N-item database and reads one item.
            for (let s = 0; s < ps; s++) {
              await retire(w);
              w = null;
              const t0 = performance.now();
              const ew = new EngineWorker(engine);
              await ew.call({ type: 'init', engine: engine.id, config: engine.config });
              const got = await ew.call({ type: 'op', op: 'get', args: { id: itemId(Math.floor(n / 2)) } });
              times.push(performance.now() - t0);
              w = ew;
              if (n > 0 && got.value === undefined) throw new Error('cold open: first read found nothing');
            }
          } else {
            const mk = {
              'read-by-id': () => ({ op: 'get', args: { id: itemId(pageRng.int(n)) } }),
              'simple-query': () => { const lo = pageRng.int(Math.max(1, n - 1000 + 1)); return { op: 'queryRange', args: { lo, hi: lo + 1000 } }; },
              'create-item': () => { const i = n + pageNew++; return { op: 'put', args: { item: { ...makeItem(i), id: `page-item-${i}` } } }; },
              'update-item': () => { const i = pageRng.int(n); return { op: 'update', args: { id: itemId(i), fields: updatedFields(i, 1_000_000 + pageNew++) } }; },
            }[rowId];
            if (!mk) throw new Error(`no page-side operation defined for ${rowId}`);
            const warm = def.write ? 1 : plan.pageWarmup ?? 1;
            const msgs = Array.from({ length: ps + warm }, mk);
            for (let s = 0; s < msgs.length; s++) {
              const t0 = performance.now();
              await w.call({ type: 'op', ...msgs[s] });
              const t1 = performance.now();
              if (s >= warm) times.push(t1 - t0);
            }
            pageWarm = warm;
          }
          entry.page = summary(times, 1, { warmupSamples: pageWarm });
        }
      } catch (err) {
        entry.error = err.message;
        run.errors.push(`${rowId}: ${err.message}`);
        console.error(`[bench] ${engine.id} N=${n} ${rowId}: ${err.message}${err.workerStack ? `\n${err.workerStack}` : ''}`);
        if (!w || w.dead) {
          record(rowId, entry);
          throw new Error(`${engine.id} worker died during ${rowId}; remaining rows skipped`);
        }
      }
      record(rowId, entry);
    }

    run.stats.end = (await w.call({ type: 'stats' })).stats;
    await retire(w, { reset: true, final: true });
    w = null;
  } catch (err) {
    run.errors.push(err.message);
    console.error(`[bench] ${engine.id} N=${n}: ${err.message}${err.workerStack ? `\n${err.workerStack}` : ''}`);
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
async function runBench(options = {}) {
  if (window.benchRunning) throw new Error('a benchmark run is already in progress');
  window.benchRunning = true;
  try {
    const opts = {
      sizes: options.sizes ?? [100000],
      suites: options.suites ?? ['core'],
      plan: options.plan ?? 'full',
      seed: options.seed ?? 42,
      engines: options.engines ?? null,
      rows: options.rows ?? null,
    };
    const plan = PLANS[opts.plan];
    if (!plan) throw new Error(`unknown plan "${opts.plan}" (known: ${Object.keys(PLANS).join(', ')})`);
    for (const s of opts.suites) if (!SUITES[s]) throw new Error(`unknown suite "${s}" (known: ${Object.keys(SUITES).join(', ')})`);
    for (const n of opts.sizes) if (!Number.isInteger(n) || n < 1) throw new Error(`bad size ${n}: sizes are positive integers`);
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

    // Rows: union of the suites, in catalogue order; data rows need the bulk load before them.
    let rowIds = ROWS.map((r) => r.id).filter((id) => opts.suites.some((s) => SUITES[s].includes(id)));
    if (opts.rows) rowIds = rowIds.filter((id) => opts.rows.includes(id));
    const needsData = rowIds.some((id) => !['create-instance', 'open-empty', 'bulk-load'].includes(id));
    if (needsData && !rowIds.includes('bulk-load')) rowIds.splice(rowIds.findIndex((id) => !['create-instance', 'open-empty'].includes(id)), 0, 'bulk-load');

    const results = {
      schema: 'ibexdb-bench/1',
      meta: {
        startedAt: new Date().toISOString(),
        userAgent: navigator.userAgent,
        hardwareConcurrency: navigator.hardwareConcurrency,
        deviceMemoryGiB: navigator.deviceMemory ?? null,
        crossOriginIsolated,
        timerResolutionMs: pageTimerResolutionMs(),
        percentileMethod: 'nearest-rank on sorted samples: value at rank ceil(p/100*n)',
      },
      options: { ...opts, engines: engines.map((e) => e.id), rows: rowIds },
      rowCatalogue: ROWS,
      engines: all.map(({ id, family, durability, description, config, available, missing }) => ({ id, family, durability, description, config, available, missing })),
      runs: [],
      errors: [],
    };
    window.benchResults = results;
    setStatus('probing OPFS call costs');
    results.meta.opfsProbe = await probeOpfs();
    log(`OPFS probe (p50): ${Object.entries(results.meta.opfsProbe).map(([k, v]) => `${k} ${fmtMs(v.p50)}`).join(', ')}`);
    log(`engines: ${engines.map((e) => e.id).join(', ')}; sizes: ${opts.sizes.join(', ')}; plan: ${opts.plan}; rows: ${rowIds.length}`);

    for (const n of opts.sizes) {
      for (const engine of engines) {
        log(`--- ${engine.id}, N=${n}`);
        const run = await runEngine(engine, n, rowIds, plan, opts.seed, (r, rowId) => {
          const e = r.rows[rowId];
          const parts = [];
          if (e.worker) parts.push(`worker p50 ${fmtMs(e.worker.p50)} p95 ${fmtMs(e.worker.p95)} (${e.worker.n}×${e.worker.k})`);
          if (e.page) parts.push(`page p50 ${fmtMs(e.page.p50)} p95 ${fmtMs(e.page.p95)} (${e.page.n})`);
          if (e.error) parts.push(`ERROR ${e.error}`);
          log(`${r.engine} N=${n} ${rowId}: ${parts.join('; ')}`);
          renderLive(results);
        });
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
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const chosen = [...box.querySelectorAll('input:checked')].map((x) => x.value);
    const sizes = form.sizes.value.split(',').map((s) => Number(s.trim())).filter(Boolean);
    form.run.disabled = true;
    try {
      const r = await runBench({ sizes, engines: chosen, plan: form.plan.value });
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
