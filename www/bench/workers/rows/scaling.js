// Bulk load and open times (suite `scaling`, and `open-empty` of `core`): how long loading N items
// takes (in transactions of 1,000, and in one transaction), and opening a database of 0 or N items
// until its first read or its first indexed query.

import { itemId, makeItem, rng } from '../../shared/model.js';
import { summarize } from '../../shared/stats.js';
import { byId, readBack } from '../check.js';
import { now } from '../loops.js';

/** @typedef {import('../harness.js').Session} Session */
/** @typedef {import('../harness.js').RowParams} RowParams */
/** @typedef {import('../harness.js').RowResult} RowResult */
/** @typedef {import('../harness.js').Item} Item */

/** The simple query's window: 1,000 items from the middle of the base items. @param {number} n */
export const firstQueryLo = (n) => Math.max(0, Math.min(Math.floor(n / 2), n - 1000));

/**
 * The medians of an engine's open phases (`openPhases()`, ibexdb: engine.js `openMs`), as a row note.
 * @param {Record<string, number>[]} phases
 */
function phasesNote(phases) {
  if (!phases.length) return undefined;
  const med = (/** @type {string} */ k) => summarize(phases.map((x) => x[k])).p50;
  return `the open's phases (medians): acquiring the OPFS files' sync access handles ${med('files').toFixed(2)} ms, waiting for wasm ${med('wasm').toFixed(2)} ms, the engine's open (identity, snapshot meta, log) ${med('engine').toFixed(2)} ms`;
}

/**
 * @param {Session} s
 * @returns {Record<string, (p: RowParams) => Promise<RowResult>>}
 */
export function scalingRows(s) {
  /**
   * close → (timed: open + `first()`) per sample; the open's own checks run after the timer.
   * @param {RowParams} p @param {() => Promise<any>} first
   * @returns {Promise<{samples: number[], k: number, warmupSamples: number, last: any, note?: string}>}
   */
  async function reopen(p, first) {
    const out = [];
    const warmup = p.warmup ?? 1;
    let last = null;
    /** @type {Record<string, number>[]} */
    const phases = [];
    for (let i = 0; i < warmup + p.samples; i++) {
      await s.ensureClosed();
      const t0 = now();
      await s.call('open');
      last = await first();
      const t1 = now();
      s.opened();
      await s.optional('inspect');
      const ph = await s.optional('openPhases');
      if (i >= warmup) out.push(t1 - t0);
      if (i >= warmup && ph) phases.push(ph);
    }
    return { samples: out, k: 1, warmupSamples: warmup, last, note: phasesNote(phases) };
  }

  /**
   * Spot check of the N base items after a load (untimed): the count, the first and last items
   * and 1,000 random ones, field by field.
   * @param {RowParams} p
   */
  async function checkLoaded(p) {
    const r = rng(p.seed);
    const idx = new Set([0, p.n - 1]);
    for (let i = 0; i < Math.min(1000, p.n); i++) idx.add(r.int(p.n));
    const rb = await readBack(s, byId([...idx].map(makeItem)));
    return { count: await s.call('count'), ...(rb.wrong ? { wrong: rb.wrong } : {}) };
  }

  /** The N base items in transactions of `batch`, generated outside the timer. @param {number} n @param {number} batch */
  function* batches(n, batch) {
    for (let start = 0; start < n; start += batch) {
      /** @type {Item[]} */
      const items = [];
      for (let i = start; i < Math.min(n, start + batch); i++) items.push(makeItem(i));
      yield items;
    }
  }

  /** @param {number} n @param {number} ms */
  const rate = (n, ms) => `${Math.round(n / (ms / 1000)).toLocaleString('en-US')} items/s`;

  return {
    async 'open-empty'(p) {
      const m = await reopen(p, () => s.call('get', itemId(0)));
      return { ...m, check: { found: m.last !== undefined, count: await s.call('count') } };
    },
    async 'open-n'(p) {
      const id = itemId(Math.floor(p.n / 2));
      const m = await reopen(p, () => s.call('get', id));
      return { ...m, check: { found: m.last?.id === id && m.last.count === Math.floor(p.n / 2) } };
    },
    async 'open-n-query'(p) {
      const lo = firstQueryLo(p.n);
      const m = await reopen(p, () => s.call('queryRange', lo, lo + 1000));
      /** @type {Item[]} */
      const rows = m.last ?? [];
      /** @type {Record<string, unknown>} */
      const check = { returned: rows.length };
      if (rows.some((it, j) => it.count !== lo + j || it.id !== itemId(lo + j))) check.wrong = 'rows out of order or not the range asked for';
      return { ...m, check, note: [`count in [${lo}, ${lo + 1000}), sorted by count: the first query that needs the count index`, m.note].filter(Boolean).join('; ') };
    },
    async 'bulk-load'(p) {
      // The declared indexes exist before the first write (built on the empty database: nothing
      // to build), so every commit of the load maintains them, as SQLite maintains items_count.
      await s.ensureIndexed();
      const batch = p.batch ?? 1000;
      let ms = 0;
      for (const items of batches(p.n, batch)) {
        const t0 = now();
        await s.call('putMany', items);
        ms += now() - t0;
      }
      const t0 = now();
      await s.optional('settle');
      const trailingMs = now() - t0;
      ms += trailingMs;
      s.nextNew = Math.max(s.nextNew, p.n);
      return {
        samples: [ms], k: 1, warmupSamples: 0, trailingMs, check: await checkLoaded(p),
        note: `${rate(p.n, ms)}; transactions of ${batch}; indexes maintained; trailing work (seal, flush, snapshot / checkpoint) ${trailingMs.toFixed(1)} ms included; item generation not timed`,
      };
    },
    async 'bulk-load-txn'(p) {
      // On a fresh database; the page starts a fresh worker on clean storage after this row.
      await s.ensureClosed();
      await s.call('reset', { final: false });
      await s.ensureIndexed();
      const items = [...batches(p.n, p.n)][0] ?? [];
      const t0 = now();
      const r = await s.call('putMany', items);
      const t1 = now();
      await s.optional('settle');
      const t2 = now();
      const commits = r?.commits ?? 1;
      return {
        samples: [t2 - t0], k: 1, warmupSamples: 0, trailingMs: t2 - t1, check: await checkLoaded(p),
        note: `${rate(p.n, t2 - t0)}; one transaction${commits > 1 ? ` (ibexdb: ${commits} commits of <= 48 MiB, its commits are capped at 64 MiB)` : ''}; indexes maintained; trailing work ${(t2 - t1).toFixed(1)} ms included`,
      };
    },
  };
}
