// Durable and batched writes (suite `writes`, and `seal-batch`): single-item and 100-item
// transactions back to back for a sustained rate, and the cost of one seal (signature) over 100
// commits.

import { measure, settle } from '../loops.js';
import { timeBatchPuts, timeSinglePuts } from './crud.js';

/** @typedef {import('../harness.js').Session} Session */
/** @typedef {import('../harness.js').RowParams} RowParams */
/** @typedef {import('../harness.js').RowResult} RowResult */

/** Operations per second of the median sample. @param {number[]} samples per-operation ms */
function medianRate(samples) {
  const perSec = samples.map((ms) => 1000 / ms).sort((a, b) => a - b);
  return Math.round(perSec[Math.floor(perSec.length / 2)]).toLocaleString('en-US');
}

/** Per-item statistics of 100-item transactions timed one by one. @param {NonNullable<RowResult['ops']>} o */
function perItem(o) {
  return { n: o.n, p50: o.p50 / 100, p95: o.p95 / 100, p99: o.p99 / 100, max: o.max / 100, mean: o.mean / 100 };
}

/**
 * @param {Session} s
 * @returns {Record<string, (p: RowParams) => Promise<RowResult>>}
 */
export function writeRows(s) {
  const adapter = s.adapter;
  return {
    async 'writes-single'(p) {
      const m = await timeSinglePuts(s, p);
      return { ...m, note: `${medianRate(m.samples)} writes/s (median sample); ${m.k} writes per sample` };
    },
    async 'writes-batched'(p) {
      const m = await timeBatchPuts(s, p);
      // Per item: a sample is K transactions of 100 items.
      m.samples = m.samples.map((ms) => ms / 100);
      return { ...m, k: m.k * 100, ops: m.ops && perItem(m.ops), note: `${medianRate(m.samples)} items/s (median sample); ${m.k} transactions of 100 per sample` };
    },
    async 'seal-batch'(p) {
      if (!adapter.sealPrepare || !adapter.sealRun) throw new Error('engine adapter has no sealPrepare()/sealRun()');
      const prepare = adapter.sealPrepare.bind(adapter);
      const run = adapter.sealRun.bind(adapter);
      await s.ensureIndexed();
      let sealed = -1;
      let prepared = -1;
      const m = await measure(
        { ...p, adaptive: false },
        () => {
          prepared = /** @type {number} */ (prepare(s.newItems(p.n, 100)));
        },
        () => settle(run(), (x) => { sealed = /** @type {number} */ (x); }),
      );
      /** @type {Record<string, unknown>} */
      const check = { sealed };
      if (prepared !== 100 || sealed !== 100) check.wrong = `prepared ${prepared}, sealed ${sealed} commits (expected 100)`;
      return { ...m, check, note: '100 single-item commits (made and flushed untimed), then timed: seal() + flush()' };
    },
  };
}
