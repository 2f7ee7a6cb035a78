// The go-persist seed's rows (suite `fat`): fat records (string fields, nested metadata, a 1 KB
// payload) in 5 collections at ~205k, ~410k and ~820k records: the load, random single lookups, a
// batch of 40,000 random reads, and 1,000 open → read one → close cycles. Storage and memory are
// recorded by the page after the load and after the batch reads.

import { FAT_COLLECTIONS, fatRecord, sameFat } from '../../shared/docs.js';
import { rng } from '../../shared/model.js';
import { summarize } from '../../shared/stats.js';
import { measure, now, settle } from '../loops.js';
import { docsCall, loadDocs } from './dbx.js';

/**
 * A trap (Rust aborts with `unreachable` when an allocation fails) with at least this much wasm
 * memory in use (2 GiB) is wasm32's 4 GiB running out: one large allocation (the trailing
 * snapshot is built in memory) can fail well before the memory itself reaches 4 GiB.
 */
const OUT_OF_MEMORY = 2 * 2 ** 30;

/** @typedef {import('../harness.js').Session} Session */
/** @typedef {import('../harness.js').RowParams} RowParams */
/** @typedef {import('../harness.js').RowResult} RowResult */

/**
 * @param {Session} s
 * @returns {Record<string, (p: RowParams) => Promise<RowResult>>}
 */
export function fatRows(s) {
  /** @param {RowParams} p */
  const plan = (p) => /** @type {{batchReads: number, cycles: number, cycleBudgetMs: number}} */ (p.fat);
  /** Record i as its collection and id. @param {number} i @returns {[string, number]} */
  const where = (i) => [FAT_COLLECTIONS[i % FAT_COLLECTIONS.length], i + 1];
  /** Wrong answers among records read for indexes `idx`. @param {number[]} idx @param {any[]} got */
  const wrongOf = (idx, got) => idx.reduce((bad, i, j) => bad + (sameFat(got[j], fatRecord(i)) ? 0 : 1), 0);

  /**
   * `count` random records read as getMany calls of up to 1,000 ids of one collection each.
   * @param {number[]} idx
   */
  async function readBatch(idx) {
    /** @type {Map<string, number[]>} */
    const byColl = new Map();
    for (const i of idx) {
      const [c] = where(i);
      let l = byColl.get(c);
      if (!l) byColl.set(c, (l = []));
      l.push(i + 1);
    }
    /** @type {Map<number, any>} */
    const got = new Map();
    for (const [c, ids] of byColl) {
      for (let k = 0; k < ids.length; k += 1000) {
        for (const r of await docsCall(s, 'getMany', c, ids.slice(k, k + 1000))) got.set(r.id, r);
      }
    }
    return got;
  }

  /** Why this run's data is not there (a row ran out of memory), for the rows after it. @type {string | null} */
  let notLoaded = null;
  /**
   * `row()`, or n/a when the engine traps with its wasm memory near wasm32's 4 GiB: the data does
   * not fit (the report says where it stopped and why); the later rows of the run are not run.
   * @param {() => Promise<RowResult>} row @returns {Promise<RowResult>}
   */
  async function unlessOutOfMemory(row) {
    if (notLoaded) return { samples: [], k: 1, warmupSamples: 0, na: `not run: ${notLoaded}` };
    try {
      return await row();
    } catch (err) {
      const bytes = await s.optional('wasmMemoryBytes');
      const trap = err instanceof Error && err.name === 'PanicError' && /unreachable$/.test(err.message);
      if (!(trap && typeof bytes === 'number' && bytes >= OUT_OF_MEMORY)) throw err;
      notLoaded = `does not fit: the engine trapped (${err.message}) with ${(bytes / 2 ** 30).toFixed(2)} GiB of wasm memory in use: an allocation past wasm32's 4 GiB`;
      return { samples: [], k: 1, warmupSamples: 0, na: notLoaded };
    }
  }

  /** @param {RowParams} p @returns {Promise<RowResult>} */
  async function load(p) {
    const { ms, trailingMs } = await loadDocs(s, 'fat', p.n, 1000, fatRecord);
    const sizes = await Promise.all(FAT_COLLECTIONS.map((c) => docsCall(s, 'size', c)));
    const total = sizes.reduce((a, b) => a + b, 0);
    const r = rng(p.seed);
    const idx = Array.from({ length: Math.min(1000, p.n) }, () => r.int(p.n));
    const got = await readBatch(idx);
    const bad = idx.filter((i) => !sameFat(got.get(i + 1), fatRecord(i))).length;
    const mb = (p.n * 1.3) / 1e3;
    return {
      samples: [ms], k: 1, warmupSamples: 0, trailingMs,
      check: { count: total, ...(total === p.n && !bad ? {} : { wrong: `${total} records (loaded ${p.n}), ${bad} of 1,000 read back differ` }) },
      note: `${p.n.toLocaleString('en-US')} records (~${mb.toFixed(0)} MB of JSON) in 5 collections, transactions of 1,000, durable per config; ${Math.round(p.n / (ms / 1000)).toLocaleString('en-US')} records/s; trailing work ${trailingMs.toFixed(0)} ms included`,
    };
  }

  /** @param {RowParams} p @returns {Promise<RowResult>} */
  async function get(p) {
    await s.ensureOpen();
    const docs = /** @type {Record<string, any>} */ (s.adapter.docs);
    const r = rng(p.seed);
    /** @type {number[]} */
    let idx = [];
    /** @type {any[]} */
    let got = [];
    let wrong = 0;
    const m = await measure(
      p,
      (total) => {
        wrong += wrongOf(idx, got);
        idx = Array.from({ length: total }, () => r.int(p.n));
        got = [];
      },
      (i) => {
        const [c, id] = where(idx[i]);
        return settle(docs.get(c, id), (x) => { got[i] = x; });
      },
    );
    wrong += wrongOf(idx, got);
    return { ...m, check: wrong ? { wrong } : {}, note: 'one record by id, random collection and id' };
  }

  /** @param {RowParams} p @returns {Promise<RowResult>} */
  async function batchRead(p) {
    await s.ensureOpen();
    const r = rng(p.seed);
    const count = plan(p).batchReads;
    /** @type {number[]} */
    let idx = [];
    /** @type {Map<number, any>} */
    let got = new Map();
    const m = await measure(
      { ...p, adaptive: false },
      () => { idx = Array.from({ length: count }, () => r.int(p.n)); },
      async () => { got = await readBatch(idx); },
    );
    const bad = idx.filter((i) => !sameFat(got.get(i + 1), fatRecord(i))).length;
    return { ...m, check: { read: count, ...(bad ? { wrong: bad } : {}) }, note: `${count.toLocaleString('en-US')} random records per sample, as getMany calls of up to 1,000 ids of one collection` };
  }

  /** @param {RowParams} p @returns {Promise<RowResult>} */
  async function openCycles(p) {
    const { cycles, cycleBudgetMs } = plan(p);
    await s.ensureClosed();
    const r = rng(p.seed);
    const out = [];
    /** @type {[number[], number[], number[]]} each cycle's open, read and close */
    const parts = [[], [], []];
    let wrong = 0;
    const start = now();
    while (out.length < cycles && now() - start < cycleBudgetMs) {
      const i = r.int(p.n);
      const [c, id] = where(i);
      const t0 = now();
      await s.call('open');
      const t1 = now();
      const v = await docsCall(s, 'get', c, id);
      const t2 = now();
      await s.call('close');
      const t3 = now();
      out.push(t3 - t0);
      parts[0].push(t1 - t0);
      parts[1].push(t2 - t1);
      parts[2].push(t3 - t2);
      if (!sameFat(v, fatRecord(i))) wrong++;
    }
    const done = out.length;
    const [open, read, close] = parts.map((v) => summarize(v).p50.toFixed(2));
    const split = `medians: open ${open} ms, read ${read} ms, close ${close} ms`;
    return {
      samples: out, k: 1, warmupSamples: 0, check: { cycles: done, ...(wrong ? { wrong } : {}) },
      note: `${done.toLocaleString('en-US')} cycles of open → read one record → close${done < cycles ? ` (of ${cycles.toLocaleString('en-US')}: stopped after the ${(cycleBudgetMs / 1000).toFixed(0)} s budget of the row)` : ''}; time per cycle (${split})`,
    };
  }

  return {
    async 'fat-load'(p) {
      notLoaded = null;
      return unlessOutOfMemory(() => load(p));
    },
    'fat-get': (p) => unlessOutOfMemory(() => get(p)),
    'fat-batch-read': (p) => unlessOutOfMemory(() => batchRead(p)),
    'fat-open-cycles': (p) => unlessOutOfMemory(() => openCycles(p)),
  };
}
