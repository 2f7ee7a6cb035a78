// The core create/read/update rows (suite `core`): reads by id (also right after open), bulk
// reads, reading everything, and single and 100-item writes, each its own transaction/commit.

import { itemId, rng, updatedFields } from '../../shared/model.js';
import { isThenable, measure, settle } from '../loops.js';

/** @typedef {import('../harness.js').Session} Session */
/** @typedef {import('../harness.js').RowParams} RowParams */
/** @typedef {import('../harness.js').RowResult} RowResult */

/**
 * `count` distinct random base-item ids (all of them when n <= count).
 * @param {{int(n: number): number}} r @param {number} n @param {number} count
 */
function distinctIds(r, n, count) {
  if (n <= count) return Array.from({ length: n }, (_, i) => itemId(i));
  const picked = new Set();
  while (picked.size < count) picked.add(r.int(n));
  return [...picked].map(itemId);
}

/**
 * Time `put` of one new item per iteration (each its own transaction/commit).
 * @param {Session} s @param {RowParams} p
 */
export async function timeSinglePuts(s, p) {
  await s.ensureOpen();
  const adapter = s.adapter;
  /** @type {import('../harness.js').Item[]} */
  let items = [];
  return measure(
    p,
    (total) => { items = s.newItems(p.n, total); },
    (i) => adapter.put(items[i]),
  );
}

/**
 * Time `putMany` of 100 new items per iteration (one transaction/commit each).
 * @param {Session} s @param {RowParams} p
 */
export async function timeBatchPuts(s, p) {
  await s.ensureOpen();
  const adapter = s.adapter;
  /** @type {import('../harness.js').Item[][]} */
  let batches = [];
  return measure(
    p,
    (total) => { batches = Array.from({ length: total }, () => s.newItems(p.n, 100)); },
    (i) => adapter.putMany(batches[i]),
  );
}

/**
 * @param {Session} s
 * @returns {Record<string, (p: RowParams) => Promise<RowResult>>}
 */
export function crudRows(s) {
  const adapter = s.adapter;

  /** @param {RowParams} p @returns {Promise<RowResult>} */
  async function readById(p) {
    await s.ensureOpen();
    const r = rng(p.seed);
    /** @type {string[]} */
    let ids = [];
    let missing = 0;
    const m = await measure(
      p,
      (total) => { ids = Array.from({ length: total }, () => itemId(r.int(p.n))); missing = 0; },
      (i) => {
        const v = adapter.get(ids[i]);
        if (isThenable(v)) return v.then((x) => { if (x === undefined) missing++; });
        if (v === undefined) missing++;
        return undefined;
      },
    );
    return { ...m, check: { missing } };
  }

  return {
    'read-by-id': readById,
    async 'read-by-id-after-open'(p) {
      await s.ensureClosed();
      await s.ensureOpen();
      return readById(p);
    },
    async 'bulk-read-100'(p) {
      await s.ensureOpen();
      const r = rng(p.seed);
      /** @type {string[][]} */
      let sets = [];
      let returned = 0;
      const m = await measure(
        p,
        (total) => {
          sets = Array.from({ length: total }, () => distinctIds(r, p.n, 100));
        },
        (i) => settle(adapter.getMany(sets[i]), (x) => { returned = x.length; }),
      );
      return { ...m, check: { returned }, note: '100 distinct random ids per call' };
    },
    async 'read-all'(p) {
      await s.ensureOpen();
      let returned = 0;
      const m = await measure(p, () => {}, () => settle(adapter.all(), (x) => { returned = x.length; }));
      return { ...m, check: { returned } };
    },
    async 'create-item'(p) {
      const m = await timeSinglePuts(s, p);
      return { ...m, check: {}, note: 'each insert is its own transaction/commit' };
    },
    async 'update-item'(p) {
      await s.ensureOpen();
      const r = rng(p.seed);
      /** @type {[string, {title: string, count: number, tags: string[]}][]} */
      let args = [];
      const m = await measure(
        p,
        (total) => {
          args = Array.from({ length: total }, () => {
            const i = r.int(p.n);
            return [itemId(i), updatedFields(i, ++s.updateVersion)];
          });
        },
        (i) => adapter.update(args[i][0], args[i][1]),
      );
      return { ...m, check: {}, note: 'title, count and tags of a random existing item; own transaction/commit' };
    },
    async 'bulk-create-100'(p) {
      const m = await timeBatchPuts(s, p);
      return { ...m, check: {} };
    },
  };
}
