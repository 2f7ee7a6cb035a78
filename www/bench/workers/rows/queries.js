// The query rows (suite `core`): a 1,000-wide range on `count`, the complex query (tag + digit in
// the title, sorted descending, limit 100), count, keys and the aggregate.

import { rng } from '../../shared/model.js';
import { measure, settle } from '../loops.js';

/** @typedef {import('../harness.js').Session} Session */
/** @typedef {import('../harness.js').RowParams} RowParams */
/** @typedef {import('../harness.js').RowResult} RowResult */

/**
 * @param {Session} s
 * @returns {Record<string, (p: RowParams) => Promise<RowResult>>}
 */
export function queryRows(s) {
  const adapter = s.adapter;
  return {
    async 'simple-query'(p) {
      await s.ensureIndexed();
      const r = rng(p.seed);
      /** @type {number[]} */
      let los = [];
      /** @type {import('../harness.js').Item[][]} */
      let got = [];
      let returned = 0;
      let bad = 0;
      let wrong = 0;
      // Every call's answer is checked outside the timed loop (as bulk-read-100's): as many rows
      // as the last call's, each `count` inside its call's range, ascending.
      const verify = () => {
        for (let i = 0; i < got.length; i++) {
          const x = got[i];
          if (!x) continue;
          if (x.some((it, j) => j > 0 && x[j - 1].count > it.count)) bad++;
          if (x.length !== returned || x.some((it) => it.count < los[i] || it.count >= los[i] + 1000)) wrong++;
        }
      };
      const m = await measure(
        p,
        (total) => {
          verify();
          los = Array.from({ length: total }, () => r.int(Math.max(1, p.n - 1000 + 1)));
          got = [];
        },
        (i) => settle(adapter.queryRange(los[i], los[i] + 1000), (x) => {
          got[i] = x;
          returned = x.length;
        }),
      );
      verify();
      /** @type {Record<string, unknown>} */
      const check = { returned };
      if (bad) check.unsorted = bad;
      if (wrong) check.wrong = `${wrong} calls: rows outside the range, or another number of rows than the last call's`;
      return { ...m, check };
    },
    async 'complex-query'(p) {
      await s.ensureIndexed();
      /** @type {import('../harness.js').Item[]} */
      let last = [];
      const m = await measure(p, () => {}, () => settle(adapter.queryComplex({ tag: 'category 3', limit: 100 }), (x) => { last = x; }));
      /** @type {Record<string, unknown>} */
      const check = { returned: last.length, firstCount: last.length ? last[0].count : -1 };
      const wrong = last.filter((it, j) => !it.tags.includes('category 3') || !/[0-9]/.test(it.title) || (j > 0 && last[j - 1].count < it.count));
      if (wrong.length) check.wrong = wrong.length;
      return { ...m, check };
    },
    async count(p) {
      await s.ensureOpen();
      let value = -1;
      const m = await measure(p, () => {}, () => settle(adapter.count(), (x) => { value = x; }));
      return { ...m, check: { value } };
    },
    async keys(p) {
      await s.ensureOpen();
      /** @type {string[]} */
      let last = [];
      const m = await measure(p, () => {}, () => settle(adapter.keys(), (x) => { last = x; }));
      /** @type {Record<string, unknown>} */
      const check = { returned: last.length };
      if (last.some((k) => typeof k !== 'string')) check.notStrings = true;
      else if (last.some((k, i) => i > 0 && last[i - 1] >= k) || new Set(last).size !== p.n || !last.includes('item-0') || !last.includes(`item-${p.n - 1}`)) check.unsorted = 'not the N ids in key order';
      return { ...m, check };
    },
    async aggregate(p) {
      await s.ensureIndexed();
      /** @type {Record<string, unknown> | null} */
      let value = null;
      const m = await measure(p, () => {}, () => settle(adapter.aggregate(), (x) => { value = x; }));
      return { ...m, check: value ?? undefined };
    },
  };
}
