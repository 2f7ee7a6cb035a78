// One engine, one section (and size): a fresh worker on clean storage runs the planned rows and
// the page adds its own timings where a row has a page side. One method per family of rows:
// create instance, the rows timed in the worker, the cold start of open-n, and the rows the page
// times op by op.

import { ROWS, expectedChecks, samplesAt } from '../shared/rows.js';
import { itemId, rng } from '../shared/model.js';
import { repoName } from '../shared/ibexdb.js';
import { summarize } from '../shared/stats.js';
import { removeRepository } from '../../lib/storage.js';
import { IbexPageClient, pageOpMakers, workerOp } from './clients.js';
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
      engine: engine.id, family: engine.family, durability: engine.durability, section, size: section === 'dataset' ? n : null,
      startedAt: new Date().toISOString(), info: null, init: null, rows: {}, stats: {}, errors: [],
    };
  }

  async run(rowIds) {
    const { engine, section, n } = this;
    const run = this.result;
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
        try {
          if (!(await this.workerRow(rowId, def, p, entry))) {
            this.record(rowId, entry);
            continue;
          }
          if (rowId === 'bulk-load') await this.stats('afterLoad');

          // Page-side measurements: one awaited call per operation.
          const ps = p.pageSamples ?? 0;
          if (def.page && ps > 0) {
            const { times, warm } = rowId === 'open-n' ? await this.pageColdStart(ps) : await this.pageOps(rowId, def, ps, makers);
            entry.page = summary(times, 1, { warmupSamples: warm });
            if (this.pageApi) entry.pageVia = 'public API (www/ibexdb.js)';
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

  /** create-instance: a fresh worker per sample on empty storage; page side: open() of the public API (ibexdb) or the worker's start (SQLite). */
  async createInstance() {
    const { engine } = this;
    setStatus(`${engine.id} N=${this.n}: create instance`);
    const p = this.planFor('create-instance');
    const page = [];
    const worker = [];
    const parts = [];
    for (let s = 0; s < p.samples; s++) {
      const { w: c, r, pageMs } = await this.spawnInit();
      worker.push(r.ms.total);
      parts.push(r.ms);
      await retire(c, { reset: true });
      if (this.pageApi) {
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
    this.record('create-instance', {
      worker: summary(worker), page: summary(page),
      note: this.pageApi
        ? 'fresh storage per sample; worker: benchmark worker init (import engine.js + wasm compile/instantiate + OPFS + identity + create); page: open() of the public API'
        : 'fresh worker per sample on empty storage; the worker time covers module import + wasm instantiate + storage + create',
      breakdown: parts,
    });
  }

  /**
   * A row timed inside the worker; fills `entry` (worker summary, check, note, or na).
   * @returns {Promise<boolean>} false when the engine says the row does not apply
   */
  async workerRow(rowId, def, p, entry) {
    const { n, plan } = this;
    const params = { n, seed: this.seed + ROWS.indexOf(def), adaptive: !!def.adaptive, ...p, rel: plan.relational, verify: plan.verify };
    const r = await this.w.call({ type: 'row', row: rowId, params });
    if (r.na) {
      entry.na = r.na;
      return false;
    }
    entry.worker = summary(r.samples, r.iterationsPerSample, { warmupSamples: r.warmupSamples });
    entry.check = r.check;
    if (r.note) entry.note = r.note;
    const problems = checkMismatches(rowId, r.check, n);
    if (problems.length) throw new Error(`wrong result: ${problems.join('; ')}`);
    return true;
  }

  /** open-n [page]: cold start as an app sees it: a new worker opens the N-item database and reads one item. */
  async pageColdStart(ps) {
    const { engine, n } = this;
    const times = [];
    const id = itemId(Math.floor(n / 2));
    for (let s = 0; s < ps; s++) {
      if (this.w) await retire(this.w);
      this.w = null;
      const t0 = performance.now();
      let got;
      if (this.pageApi) {
        const client = await IbexPageClient.open(engine);
        got = await client.op({ op: 'get', args: { id } });
        times.push(performance.now() - t0);
        await client.close();
      } else {
        const ew = new EngineWorker(engine);
        await ew.call({ type: 'init', engine: engine.id, config: this.config });
        got = (await ew.call({ type: 'op', op: 'get', args: { id } })).value;
        times.push(performance.now() - t0);
        this.w = ew;
      }
      if (n > 0 && got === undefined) throw new Error('cold open: first read found nothing');
    }
    if (!this.w) this.w = (await this.spawnInit()).w;
    return { times, warm: 0 };
  }

  /** A [page] row timed one awaited call per operation (ibexdb: its public API; SQLite: op messages). */
  async pageOps(rowId, def, ps, makers) {
    const mk = makers[rowId];
    if (!mk) throw new Error(`no page-side operation defined for ${rowId}`);
    const times = [];
    const warm = def.write ? 1 : this.plan.pageWarmup ?? 1;
    const msgs = Array.from({ length: ps + warm }, mk);
    let client = null;
    if (this.pageApi) {
      await this.w.call({ type: 'release' });
      client = await IbexPageClient.open(this.engine);
    }
    try {
      for (let s = 0; s < msgs.length; s++) {
        const t0 = performance.now();
        if (client) await client.op(msgs[s]);
        else await workerOp(this.w, msgs[s]);
        const t1 = performance.now();
        if (s >= warm) times.push((t1 - t0) / (msgs[s].per ?? 1));
      }
    } finally {
      // Seal, flush, snapshot, release the files; the benchmark worker reopens next row.
      if (client) await client.close();
    }
    return { times, warm };
  }
}
