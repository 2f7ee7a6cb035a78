// The core create/read/update rows (suite `core`): reads by id (also right after open), bulk
// reads, reading everything, and single and 100-item writes, each its own transaction/commit.
// Write rows run with the declared indexes built (every write maintains them), time the trailing
// work of their writes inside the last sample, and read back what they wrote.

import { itemId, makeItem, rng, updatedFields } from '../../shared/model.js';
import { byId, readBack, sameItem } from '../check.js';
import { isThenable, measure, settle } from '../loops.js';

/** @typedef {import('../harness.js').Session} Session */
/** @typedef {import('../harness.js').RowParams} RowParams */
/** @typedef {import('../harness.js').RowResult} RowResult */
/** @typedef {import('../harness.js').Item} Item */

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

/** Index of a base item from its id. @param {string} id */
const indexOf = (id) => Number(id.slice(id.indexOf('-') + 1));

/**
 * Time `put` of one new item per iteration (each its own transaction/commit), indexes maintained,
 * trailing work in the last sample; then read everything back.
 * @param {Session} s @param {RowParams} p
 */
export async function timeSinglePuts(s, p) {
  await s.ensureIndexed();
  const adapter = s.adapter;
  /** @type {Item[]} */
  let items = [];
  /** @type {Item[]} */
  const all = [];
  const m = await measure(
    p,
    (total) => { items = s.newItems(p.n, total); all.push(...items); },
    (i) => adapter.put(items[i]),
    { finish: s.finish },
  );
  return { ...m, check: await readBack(s, byId(all)) };
}

/**
 * Time `putMany` of 100 new items per iteration (one transaction/commit each), as above.
 * @param {Session} s @param {RowParams} p
 */
export async function timeBatchPuts(s, p) {
  await s.ensureIndexed();
  const adapter = s.adapter;
  /** @type {Item[][]} */
  let batches = [];
  /** @type {Item[]} */
  const all = [];
  const m = await measure(
    p,
    (total) => {
      batches = Array.from({ length: total }, () => s.newItems(p.n, 100));
      for (const b of batches) all.push(...b);
    },
    (i) => adapter.putMany(batches[i]),
    { finish: s.finish },
  );
  return { ...m, check: await readBack(s, byId(all)) };
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
    /** @type {string[]} */
    let titles = [];
    let missing = 0;
    let wrong = 0;
    /** @param {any} v @param {number} i */
    const check = (v, i) => {
      if (v === undefined) missing++;
      else if (v.title !== titles[i]) wrong++;
    };
    const m = await measure(
      p,
      (total) => {
        const idx = Array.from({ length: total }, () => r.int(p.n));
        ids = idx.map(itemId);
        titles = idx.map((i) => `Item ${i}`);
        missing = 0;
      },
      (i) => {
        const v = adapter.get(ids[i]);
        if (isThenable(v)) return v.then((x) => check(x, i));
        check(v, i);
        return undefined;
      },
    );
    return { ...m, check: wrong ? { missing, wrong } : { missing } };
  }

  return {
    'read-by-id': readById,
    // The first reads after the open, as the name says: no warm-up (a warm-up of >= 100 ms would
    // load most blocks first), K = 1: every sample is one read, timed on its own.
    async 'read-by-id-after-open'(p) {
      await s.ensureClosed();
      await s.ensureOpen();
      return readById({ ...p, warmup: 0, warmupMs: 0, adaptive: false });
    },
    async 'bulk-read-100'(p) {
      await s.ensureOpen();
      const r = rng(p.seed);
      /** @type {string[][]} */
      let sets = [];
      /** @type {Item[][]} */
      let got = [];
      let returned = 0;
      let wrong = 0;
      // Every call's answer is checked outside the timed loop: the ids asked for, each item's fields.
      const verify = () => {
        for (let i = 0; i < got.length; i++) {
          const want = new Set(sets[i]);
          if (got[i].length !== want.size || got[i].some((it) => !want.has(it.id) || !sameItem(it, makeItem(indexOf(it.id))))) wrong++;
        }
      };
      const m = await measure(
        p,
        (total) => {
          verify();
          sets = Array.from({ length: total }, () => distinctIds(r, p.n, 100));
          got = [];
        },
        (i) => settle(adapter.getMany(sets[i]), (x) => { got[i] = x; returned = x.length; }),
      );
      verify();
      return { ...m, check: wrong ? { returned, wrong } : { returned }, note: '100 distinct random ids per call' };
    },
    async 'read-all'(p) {
      await s.ensureOpen();
      /** @type {Item[]} */
      let last = [];
      const m = await measure(p, () => {}, () => settle(adapter.all(), (x) => { last = x; }));
      let sum = 0;
      let bad = 0;
      for (const it of last) {
        sum += it.count;
        if (it.title !== `Item ${it.count}` || it.id !== itemId(it.count)) bad++;
      }
      /** @type {Record<string, unknown>} */
      const check = { returned: last.length };
      if (bad || sum !== (p.n * (p.n - 1)) / 2) check.wrong = bad || `sum of count ${sum}`;
      return { ...m, check };
    },
    async 'create-item'(p) {
      const m = await timeSinglePuts(s, p);
      return { ...m, note: 'each insert is its own transaction/commit' };
    },
    async 'update-item'(p) {
      await s.ensureIndexed();
      const r = rng(p.seed);
      /** @type {[string, {title: string, count: number, tags: string[]}][]} */
      let args = [];
      /** @type {Map<string, {title: string, count: number, tags: string[]}>} */
      const last = new Map();
      const m = await measure(
        p,
        (total) => {
          args = Array.from({ length: total }, () => {
            const i = r.int(p.n);
            return [itemId(i), updatedFields(i, ++s.updateVersion)];
          });
          for (const [id, f] of args) last.set(id, f);
        },
        (i) => adapter.update(args[i][0], args[i][1]),
        { finish: s.finish },
      );
      return { ...m, check: await readBack(s, last), note: 'title, count and tags of a random existing item; own transaction/commit' };
    },
    async 'bulk-create-100'(p) {
      return timeBatchPuts(s, p);
    },
  };
}
