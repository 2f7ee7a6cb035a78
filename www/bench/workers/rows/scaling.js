// Bulk load and open times (suite `scaling`, and `open-empty` of `core`): how long loading N items
// takes, and opening a database of 0 or N items until its first read.

import { itemId, makeItem } from '../../shared/model.js';
import { now } from '../loops.js';

/** @typedef {import('../harness.js').Session} Session */
/** @typedef {import('../harness.js').RowParams} RowParams */
/** @typedef {import('../harness.js').RowResult} RowResult */

/**
 * @param {Session} s
 * @returns {Record<string, (p: RowParams) => Promise<RowResult>>}
 */
export function scalingRows(s) {
  /**
   * close → (timed: open + one read by id) per sample.
   * @param {RowParams} p @param {string} id
   * @returns {Promise<RowResult>}
   */
  async function reopen(p, id) {
    const out = [];
    const warmup = p.warmup ?? 1;
    let found = null;
    for (let i = 0; i < warmup + p.samples; i++) {
      await s.ensureClosed();
      const t0 = now();
      await s.call('open');
      s.open = true;
      const v = await s.call('get', id);
      const t1 = now();
      found = v !== undefined;
      if (i >= warmup) out.push(t1 - t0);
    }
    /** @type {Record<string, unknown>} */
    const check = { found };
    if (p.row === 'open-empty') check.count = await s.call('count');
    return { samples: out, k: 1, warmupSamples: warmup, check };
  }

  return {
    'open-empty': (p) => reopen(p, itemId(0)),
    'open-n': (p) => reopen(p, itemId(Math.floor(p.n / 2))),
    async 'bulk-load'(p) {
      await s.ensureOpen();
      const batch = p.batch ?? 1000;
      let ms = 0;
      for (let start = 0; start < p.n; start += batch) {
        const items = [];
        for (let i = start; i < Math.min(p.n, start + batch); i++) items.push(makeItem(i));
        const t0 = now();
        await s.call('putMany', items);
        ms += now() - t0;
      }
      s.nextNew = Math.max(s.nextNew, p.n);
      const count = await s.call('count');
      return {
        samples: [ms], k: 1, warmupSamples: 0, check: { count },
        note: `${Math.round(p.n / (ms / 1000)).toLocaleString('en-US')} items/s; batches of ${batch}; item generation not timed`,
      };
    },
  };
}
