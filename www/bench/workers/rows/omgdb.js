// The OMGDB seed's rows (suite `omgdb`), next to its published figures: batched documents per
// second (batches of 1,000, one durable point each), verify() at 50,000 documents, and durable
// single writes per second. The documents are the benchmark items; the declared index is built
// before the first write (maintained by every write).

import { byId, readBack } from '../check.js';
import { repeat, settle } from '../loops.js';
import { timeSinglePuts } from './crud.js';

/** @typedef {import('../harness.js').Session} Session */
/** @typedef {import('../harness.js').RowParams} RowParams */
/** @typedef {import('../harness.js').RowResult} RowResult */
/** @typedef {import('../harness.js').Item} Item */

/** Operations per second of the median sample. @param {number[]} samples per-operation ms */
const medianRate = (samples) => Math.round(1000 / [...samples].sort((a, b) => a - b)[Math.floor(samples.length / 2)]).toLocaleString('en-US');

/**
 * @param {Session} s
 * @returns {Record<string, (p: RowParams) => Promise<RowResult>>}
 */
export function omgdbRows(s) {
  /** @param {RowParams} p */
  const plan = (p) => /** @type {{documents: number, batch: number}} */ (p.omgdb);
  return {
    async 'omgdb-batched'(p) {
      const { documents, batch } = plan(p);
      await s.ensureClosed();
      await s.call('reset', { final: false });
      await s.ensureIndexed();
      const all = s.newItems(0, documents);
      const batches = Math.ceil(documents / batch);
      let b = 0;
      /** @type {Item[]} */
      let cur = [];
      const m = await repeat({ samples: batches, warmup: 0 }, async () => {
        const r = s.adapter.putMany(cur);
        if (r && typeof (/** @type {any} */ (r)).then === 'function') await r;
        if (b === batches) await s.optional('settle');
      }, { before: () => { cur = all.slice(b * batch, ++b * batch); } });
      m.samples = m.samples.map((ms) => ms / batch);
      return { ...m, k: batch, check: await readBack(s, byId(all)), note: `${medianRate(m.samples)} documents/s (median batch); ${batches} batches of ${batch.toLocaleString('en-US')}, each one transaction/commit, durable per config; trailing work in the last batch` };
    },
    async 'omgdb-verify'(p) {
      // The documents of omgdb-batched, as an app finds them at start-up: closed and reopened.
      await s.ensureClosed();
      await s.ensureOpen();
      /** @type {Record<string, any>} */
      let report = {};
      const m = await repeat(p, () => settle(/** @type {any} */ (s.adapter).verify(), (x) => { report = x; }));
      /** @type {Record<string, unknown>} */
      const check = { ...report };
      const want = plan(p).documents;
      if (report.items !== undefined && report.items !== want) check.wrong = `verified ${report.items} items, wrote ${want}`;
      if (report.ok === false) check.wrong = `integrity check failed: ${report.result}`;
      return { ...m, check, note: `${want.toLocaleString('en-US')} documents written in batches of ${plan(p).batch.toLocaleString('en-US')}` };
    },
    async 'omgdb-single'(p) {
      const m = await timeSinglePuts(s, p);
      return { ...m, note: `${medianRate(m.samples)} durable writes/s (median sample); ${m.k} writes per sample` };
    },
  };
}
