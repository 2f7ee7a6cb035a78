// One engine, one section (and size): a fresh worker on clean storage runs the planned rows and
// the page adds its own timings where a row has a page side. One method per family of rows:
// create instance, the rows timed in the worker, the cold start of open-n, and the rows the page
// times op by op.

import { ROWS, expectedChecks, samplesAt } from '../shared/rows.js';
import { itemId, makeItem, rng, updatedFields } from '../shared/model.js';
import { summarize } from '../shared/stats.js';
import { pageClientClass } from './clients.js';
import { EngineWorker, retire } from './engine-worker.js';
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

/**
 * Page-side operation generators per row: each returns an op descriptor {op, args, per?}.
 * @param {number} n @param {{int(n: number): number}} pageRng @param {() => number} nextNew @param {any} plan
 */
function pageOpMakers(n, pageRng, nextNew, plan) {
  const batch = plan.rows['writes-batched']?.pageBatch ?? 100;
  const newItem = () => { const i = nextNew(); return { ...makeItem(i), id: `page-item-${i}` }; };
  return {
    'read-by-id': () => ({ op: 'get', args: { id: itemId(pageRng.int(n)) } }),
    'simple-query': () => { const lo = pageRng.int(Math.max(1, n - 1000 + 1)); return { op: 'queryRange', args: { lo, hi: lo + 1000 } }; },
    'create-item': () => ({ op: 'put', args: { item: newItem() } }),
    'update-item': () => { const i = pageRng.int(n); return { op: 'update', args: { id: itemId(i), fields: updatedFields(i, 1_000_000 + nextNew()) } }; },
    'bulk-create-100': () => ({ op: 'putMany', args: { items: Array.from({ length: 100 }, newItem) } }),
    'writes-batched': () => ({ op: 'putConcurrent', per: batch, args: { items: Array.from({ length: batch }, newItem) } }),
  };
}

/**
 * What the page's reads must return: `get` the base item, `queryRange` the 1,000 items of the
 * range in order. Returns the number of wrong answers.
 * @param {{op: string, args: any}} m @param {any[]} got the answer as protocol items @param {number} n
 */
function wrongRead(m, got, n) {
  /** @param {any} it @param {number} i */
  const same = (it, i) => { const w = makeItem(i); return it && it.id === w.id && it.title === w.title && it.count === i && it.tags.length === 2 && w.tags.every((t) => it.tags.includes(t)); };
  if (m.op === 'get') return got.length === 1 && same(got[0], Number(m.args.id.slice(5))) ? 0 : 1;
  if (m.op === 'queryRange') return got.length === Math.min(m.args.hi, n) - m.args.lo && got.every((it, j) => same(it, m.args.lo + j)) ? 0 : 1;
  return 0;
}

/** What the page's writes wrote, id → fields (the last write of an id wins). @param {{op: string, args: any}[]} msgs */
function writtenBy(msgs) {
  const out = new Map();
  for (const m of msgs) {
    if (m.op === 'put') out.set(m.args.item.id, m.args.item);
    else if (m.op === 'update') out.set(m.args.id, m.args.fields);
    else if (m.op === 'putMany' || m.op === 'putConcurrent') for (const it of m.args.items) out.set(it.id, it);
  }
  return out;
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

function summary(samples, k = 1, extra = {}) {
  return { ...summarize(samples), k, samples, ...extra };
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
 * Run `rowIds` for one engine in one fresh worker. `section` 'dataset': the rows share one database
 * of N base items; 'relational' / 'verify': the rows build their own databases (n is unused).
 */
export async function runEngine(engine, section, n, rowIds, plan, seed, onRow) {
  return new EngineRun(engine, section, n, plan, seed, onRow).run(rowIds);
}

class EngineRun {
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
    this.result = {
      engine: engine.id, family: engine.family, durability: engine.durability, section, size: ['dataset', 'dbx', 'fat'].includes(section) ? n : null,
      startedAt: new Date().toISOString(), info: null, init: null, rows: {}, stats: {}, errors: [],
    };
  }

  async run(rowIds) {
    const { engine, section, n } = this;
    const run = this.result;
    // A section none of whose rows runs on this engine: record why, start nothing.
    const excluded = rowIds.map((id) => rowDef[id]).filter((d) => d.engines && !d.engines.includes(engine.id));
    if (excluded.length === rowIds.length) {
      for (const d of excluded) this.record(d.id, { na: `not run: ${d.enginesWhy ?? 'this suite runs on fewer engines'}` });
      run.finishedAt = new Date().toISOString();
      return run;
    }
    try {
      // Clean slate: whatever an earlier (possibly crashed) run left in this engine's OPFS files.
      setStatus(`${engine.id} ${section} N=${n}: cleaning storage`);
      {
        const { w: c, r } = await this.spawnInit();
        run.info = r.info;
        await retire(c, { reset: true });
      }

      if (rowIds.includes('create-instance')) await this.createInstance();

      // The worker that runs every remaining row.
      {
        const { w: ew, r, pageMs } = await this.spawnInit();
        this.w = ew;
        run.info = r.info;
        run.init = { pageMs, ...r.ms, timerResolutionMs: r.timerResolutionMs, crossOriginIsolated: r.crossOriginIsolated };
      }

      const pageRng = rng(this.seed ^ 0x5eed);
      let pageNew = 0;
      const makers = pageOpMakers(n, pageRng, () => n + pageNew++, this.plan);

      for (const rowId of rowIds) {
        if (rowId === 'create-instance') continue;
        const def = rowDef[rowId];
        const p = this.planFor(rowId);
        setStatus(`${engine.id} ${section === 'dataset' ? `N=${n}` : section}: ${def.label}`);
        const entry = {};
        if (def.na) {
          entry.na = def.na;
          this.record(rowId, entry);
          continue;
        }
        if (def.engines && !def.engines.includes(engine.id)) {
          entry.na = `not run: ${def.enginesWhy ?? 'this suite runs on fewer engines'}`;
          this.record(rowId, entry);
          continue;
        }
        try {
          if (!(await this.workerRow(rowId, def, p, entry))) {
            this.record(rowId, entry);
            continue;
          }
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

          // Page-side measurements: one awaited call per operation.
          const ps = p.pageSamples ?? 0;
          if (def.page && ps > 0) {
            const cold = { 'open-n': 'open', 'open-n-query': 'query' }[rowId];
            const { times, warm, via, trailingMs } = cold ? await this.pageColdStart(ps, cold) : await this.pageOps(rowId, def, ps, makers);
            entry.page = summary(times, 1, { warmupSamples: warm, ...(trailingMs !== undefined ? { trailingMs } : {}) });
            entry.pageVia = via;
          }
          // Footprint of a freshly started engine holding N items: after the cold starts, `w` is a
          // new worker that opened the database and read one item (or, without page samples, the
          // worker that just reopened it).
          if (rowId === 'open-n') await this.stats('afterOpen');
        } catch (err) {
          entry.error = err.message;
          run.errors.push(`${rowId}: ${err.message}`);
          console.error(`[bench] ${engine.id} ${section} N=${n} ${rowId}: ${err.message}${err.workerStack ? `\n${err.workerStack}` : ''}`);
          if (!this.w || this.w.dead) {
            this.record(rowId, entry);
            throw new Error(`${engine.id} worker died during ${rowId}; remaining rows skipped`);
          }
        }
        this.record(rowId, entry);
      }

      await this.stats('end');
      await retire(this.w, { reset: true, final: true });
      this.w = null;
    } catch (err) {
      run.errors.push(err.message);
      console.error(`[bench] ${engine.id} ${section} N=${n}: ${err.message}${err.workerStack ? `\n${err.workerStack}` : ''}`);
      if (this.w) {
        try { await retire(this.w, { reset: true, final: true }); } catch { /* already reported */ }
      }
    }
    run.finishedAt = new Date().toISOString();
    return run;
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

  async stats(label) {
    const run = this.result;
    const st = (await this.w.call({ type: 'stats' })).stats;
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
    const params = { n, seed: this.seed + ROWS.indexOf(def), adaptive: !!def.adaptive, ...p, rel: plan.relational, verify: plan.verify, dbx: plan.dbx, fat: plan.fat, omgdb: plan.omgdb };
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

  /**
   * A [page] row timed one awaited call per operation, through the engine's page client (ibexdb:
   * its public API; SQLite: the lean page worker). Indexes are built first (untimed) so writes
   * maintain them; a write row's trailing work (the client's close: seal/flush/snapshot or WAL
   * checkpoint) is timed into its last operation; reads are checked, writes read back.
   */
  async pageOps(rowId, def, ps, makers) {
    const mk = makers[rowId];
    if (!mk) throw new Error(`no page-side operation defined for ${rowId}`);
    const times = [];
    const warm = def.write ? 1 : this.plan.pageWarmup ?? 1;
    const msgs = Array.from({ length: ps + warm }, mk);
    const answers = [];
    await this.w.call({ type: 'release' });
    const Client = pageClientClass(this.engine);
    const client = await Client.open(this.engine);
    let trailingMs;
    try {
      await client.buildIndexes();
      for (let s = 0; s < msgs.length; s++) {
        const t0 = performance.now();
        const v = await client.op(msgs[s]);
        const t1 = performance.now();
        answers.push(v);
        if (s >= warm) times.push((t1 - t0) / (msgs[s].per ?? 1));
      }
    } finally {
      const t0 = performance.now();
      await client.close();
      if (def.write) trailingMs = performance.now() - t0;
    }
    if (def.write && times.length) times[times.length - 1] += trailingMs / (msgs[0].per ?? 1);
    // Checks (untimed): every read answer; every write read back through the benchmark worker.
    const wrongReads = msgs.reduce((bad, m, i) => bad + wrongRead(m, client.items(m.op, answers[i], m.args), this.n), 0);
    if (wrongReads) throw new Error(`wrong result on the page: ${wrongReads} of ${msgs.length} answers`);
    if (def.write) {
      const rb = (await this.w.call({ type: 'check', items: [...writtenBy(msgs)] })).check;
      if (rb.wrong || rb.readBack !== rb.written) throw new Error(`wrong result on the page: read back ${rb.readBack} of ${rb.written} items written, ${rb.wrong ?? 0} different`);
    }
    return { times, warm, trailingMs, via: this.pageApi ? 'public API (www/ibexdb.js)' : 'lean page worker (workers/sqlite-page.js)' };
  }
}
