// The DBX seed's rows (suite `dbx`): COUNT, SUM, MIN/MAX and two filters (age > N/2, age > N/4)
// over N = 1,000,000 `people` records, with no index on `age` in either engine: every row is a
// scan of the collection. Adapters implement `docs` (PROTOCOL.md "Seed suites").

import { dbxThresholds, person } from '../../shared/docs.js';
import { isThenable, measure, now, settle } from '../loops.js';

/** @typedef {import('../harness.js').Session} Session */
/** @typedef {import('../harness.js').RowParams} RowParams */
/** @typedef {import('../harness.js').RowResult} RowResult */

/**
 * Call the adapter's `docs[name]`, awaiting only a real promise.
 * @param {Session} s @param {string} name @param {...any} args @returns {Promise<any>}
 */
export async function docsCall(s, name, ...args) {
  const docs = /** @type {Record<string, any> | undefined} */ (s.adapter.docs);
  if (!docs || typeof docs[name] !== 'function') throw new Error(`engine adapter has no docs.${name}()`);
  const r = docs[name](...args);
  return isThenable(r) ? await r : r;
}

/**
 * Load `total` records made by `make(i)` into a fresh database of `kind`, in transactions of
 * `batch`, durable per config; the trailing work (seal, flush, snapshot / checkpoint) is timed.
 * @param {Session} s @param {string} kind @param {number} total @param {number} batch @param {(i: number) => any} make
 */
export async function loadDocs(s, kind, total, batch, make) {
  await s.ensureClosed();
  await s.call('reset', { final: false });
  await s.ensureOpen();
  await docsCall(s, 'setup', kind);
  let ms = 0;
  for (let start = 0; start < total; start += batch) {
    const recs = [];
    for (let i = start; i < Math.min(total, start + batch); i++) recs.push(make(i));
    const t0 = now();
    await docsCall(s, 'insert', recs);
    ms += now() - t0;
  }
  const t0 = now();
  await s.optional('settle');
  const trailingMs = now() - t0;
  return { ms: ms + trailingMs, trailingMs };
}

/**
 * @param {Session} s
 * @returns {Record<string, (p: RowParams) => Promise<RowResult>>}
 */
export function dbxRows(s) {
  /** @param {RowParams} p */
  const size = (p) => /** @type {{rows: number}} */ (p.dbx).rows;
  /**
   * A scan row: `f()` timed per sample, its answer checked against `want`.
   * @param {RowParams} p @param {string} name @param {any[]} args @param {(x: any) => Record<string, unknown>} check
   */
  async function scan(p, name, args, check) {
    await s.ensureOpen();
    let last = null;
    const m = await measure({ ...p, adaptive: false }, () => {}, () => settle(docsCall(s, name, ...args), (x) => { last = x; }));
    return { ...m, check: check(last) };
  }
  /**
   * The first aggregate after an open, per sample: close → open + setup (untimed) → (timed: the
   * aggregate). A scan in both engines: ibexdb keeps running aggregates of a path after its first
   * aggregate (query-language.md §5), so only the first after an open scans; `dbx-sum-again`
   * shows the repeated call.
   * @param {RowParams} p @param {string} name @param {any[]} args @param {(x: any) => Record<string, unknown>} check
   */
  async function firstAfterOpen(p, name, args, check) {
    const warmup = p.warmup ?? 1;
    const out = [];
    let last = null;
    for (let i = 0; i < warmup + p.samples; i++) {
      await s.ensureClosed();
      await s.ensureOpen();
      await docsCall(s, 'setup', 'dbx');
      const t0 = now();
      last = await docsCall(s, name, ...args);
      if (i >= warmup) out.push(now() - t0);
    }
    return { samples: out, k: 1, warmupSamples: warmup, check: check(last) };
  }
  /** @param {RowParams} p @param {any} x */
  const sumCheck = (p, x) => {
    const n = size(p);
    return { value: x, ...(x === (n * (n - 1)) / 2 ? {} : { wrong: `sum ${x}` }) };
  };
  return {
    async 'dbx-load'(p) {
      const n = size(p);
      const { ms, trailingMs } = await loadDocs(s, 'dbx', n, 1000, (i) => person(i, n));
      const count = await docsCall(s, 'size', 'people');
      return {
        samples: [ms], k: 1, warmupSamples: 0, trailingMs, check: { count, ...(count === n ? {} : { wrong: `${count} records, loaded ${n}` }) },
        note: `${n.toLocaleString('en-US')} records {name, age, city} in transactions of 1,000, durable per config; no index on age; trailing work ${trailingMs.toFixed(1)} ms included`,
      };
    },
    'dbx-count': (p) => firstAfterOpen(p, 'count', ['people', 'age'], (x) => ({ value: x, ...(x === size(p) ? {} : { wrong: `count ${x}` }) })),
    'dbx-sum': (p) => firstAfterOpen(p, 'sum', ['people', 'age'], (x) => sumCheck(p, x)),
    'dbx-minmax': (p) => firstAfterOpen(p, 'minMax', ['people', 'age'], (x) => ({ ...x, ...(x?.min === 0 && x?.max === size(p) - 1 ? {} : { wrong: `min ${x?.min}, max ${x?.max}` }) })),
    'dbx-sum-again': (p) => scan(p, 'sum', ['people', 'age'], (x) => sumCheck(p, x)),
    ...Object.fromEntries(/** @type {const} */ (['half', 'quarter']).map((which) => [`dbx-filter-${which}`, (/** @type {RowParams} */ p) => {
      const n = size(p);
      const x = dbxThresholds(n)[which];
      return scan(p, 'filterGt', ['people', 'age', x], (rows) => {
        const bad = rows.filter((r) => !(r.age > x) || r.name !== `person ${r.id - 1}`).length;
        return { returned: rows.length, ...(rows.length === n - 1 - x && !bad ? {} : { wrong: `${rows.length} rows (expected ${n - 1 - x}), ${bad} not matching` }) };
      });
    }])),
  };
}
