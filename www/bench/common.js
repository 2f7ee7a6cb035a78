// Shared by the benchmark page, every engine worker and the Node runner (scripts/bench.mjs):
// the item shape, the deterministic random generator, the statistics, and the row catalogue.
// Keep this file dependency-free and valid in window, worker and Node contexts.

/** Logical id of base item i (0 <= i < N). Adapters map it onto their own key scheme. */
export const itemId = (i) => `item-${i}`;

/**
 * The benchmark item (DESIGN.md section 8): {title: "Item i", count: i, tags: {"tag i", "category i%5"}}.
 * `tags` is a set of strings; it crosses the protocol as an array (order not significant).
 */
export function makeItem(i) {
  return { id: itemId(i), title: `Item ${i}`, count: i, tags: [`tag ${i}`, `category ${i % 5}`] };
}

/** The three fields written by the "update item" row, derived from the item index. */
export function updatedFields(i, version = 1) {
  return { title: `Item ${i} v${version}`, count: i + 1, tags: [`tag ${i}`, `category ${(i + version) % 5}`] };
}

/** Small deterministic PRNG (mulberry32) so every engine reads/updates the same ids in the same order. */
export function rng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (n) => Math.floor(next() * n) };
}

/**
 * Percentile by the nearest-rank method: sort ascending, take the value at rank ceil(p/100 * n)
 * (1-based). Always an observed sample, never interpolated. p50 of 20 samples = 10th smallest,
 * p95 of 20 samples = 19th smallest.
 */
export function percentile(sortedAsc, p) {
  if (sortedAsc.length === 0) return NaN;
  const rank = Math.max(1, Math.ceil((p / 100) * sortedAsc.length));
  return sortedAsc[rank - 1];
}

/** Summary statistics of a list of per-operation times (ms). */
export function summarize(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  const n = sorted.length;
  const mean = n ? sorted.reduce((s, x) => s + x, 0) / n : NaN;
  return {
    n,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    min: n ? sorted[0] : NaN,
    max: n ? sorted[n - 1] : NaN,
    mean,
  };
}

/** Human-readable duration from milliseconds: "4.2 µs", "3.91 ms", "1.36 s". */
export function fmtMs(ms) {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—';
  if (ms < 1) {
    const us = ms * 1000;
    return `${us < 10 ? us.toFixed(2) : us < 100 ? us.toFixed(1) : us.toFixed(0)} µs`;
  }
  if (ms < 1000) return `${ms < 10 ? ms.toFixed(2) : ms < 100 ? ms.toFixed(1) : ms.toFixed(0)} ms`;
  return `${(ms / 1000).toFixed(2)} s`;
}

export function fmtBytes(b) {
  if (b === null || b === undefined || !Number.isFinite(b)) return '—';
  if (b < 1024) return `${b} B`;
  if (b < 1024 * 1024) return `${(b / 1024).toFixed(1)} KiB`;
  if (b < 1024 ** 3) return `${(b / 1024 / 1024).toFixed(1)} MiB`;
  return `${(b / 1024 ** 3).toFixed(1)} GiB`;
}

/**
 * The row catalogue: what each row times. `worker` = timed inside the engine's worker (engine cost);
 * `page` = timed on the page around postMessage round trips (what an app sees).
 * Sample plans: `samples` timed samples after `warmup` discarded ones; rows marked `adaptive` repeat
 * the operation K times per sample, K chosen per engine so one sample lasts about `targetMs`
 * (performance.now() is 5 µs coarse even when cross-origin isolated).
 * `scale`: how the row's cost is expected to grow with N ('n' linear, '1' constant) — used by the
 * runner's BENCH_ASSERT ceilings.
 * Params are documented precisely in www/bench/PROTOCOL.md.
 */
export const ROWS = [
  {
    id: 'create-instance', label: 'create instance', scale: '1',
    worker: 'init on empty storage: load the engine module (dynamic import + wasm instantiate), set up OPFS storage, create the empty database and schema',
    page: 'new Worker() + init message until its reply (worker start-up included)',
  },
  {
    id: 'open-empty', label: 'open empty', scale: '1',
    worker: 'close, then open the existing empty database (schema present) + read one id (absent)',
  },
  {
    id: 'bulk-load', label: 'bulk load N (batches of 1,000)', scale: 'n',
    worker: 'insert N items in transactions/commits of 1,000 items, each durable per the engine config',
  },
  {
    id: 'read-by-id', label: 'read item by id', scale: '1', adaptive: true,
    worker: 'get one item by id (random ids over N), returned as a JS object',
    page: 'one op message per read; the item comes back to the page by structured clone',
  },
  {
    id: 'bulk-read-100', label: 'bulk read 100', scale: '1', adaptive: true,
    worker: 'get 100 items by id (random ids) in one call, as JS objects',
  },
  {
    id: 'read-all', label: 'read all N', scale: 'n', adaptive: true,
    worker: 'read all N items as JS objects (array)',
  },
  {
    id: 'simple-query', label: 'simple query (count range 1,000)', scale: '1', adaptive: true,
    worker: 'items with lo <= count < lo+1000 (random lo), sorted by count, as JS objects',
    page: 'one op message per query; 1,000 items cloned back to the page',
  },
  {
    id: 'complex-query', label: 'complex query (tag + substring, sort desc, limit 100)', scale: '1', adaptive: true,
    worker: 'tags contains "category 3" and title contains a digit, sorted by count desc, limit 100, as JS objects',
  },
  {
    id: 'count', label: 'count', scale: '1', adaptive: true,
    worker: 'number of items in the collection',
  },
  {
    id: 'keys', label: 'keys', scale: 'n', adaptive: true,
    worker: 'all N item ids as an array of strings, in key order',
  },
  {
    id: 'aggregate', label: 'aggregate (sum/min/max/avg)', scale: 'n', adaptive: true,
    worker: 'sum, min, max and avg of count over all items',
  },
  {
    id: 'open-n', label: 'open N items + first read', scale: 'n',
    worker: 'close, then reopen the database holding N items + read one item by id',
    page: 'cold start: new Worker() + init (opens the N-item database) + one read by id, page-timed',
  },
  {
    id: 'read-by-id-after-open', label: 'read item by id, just after open', scale: '1', adaptive: true,
    worker: 'close + reopen (not timed), then as "read item by id": the state of an app right after start-up, before its first write',
  },
  {
    id: 'create-item', label: 'create item (durable)', scale: '1', adaptive: true, write: true,
    worker: 'insert one new item as its own transaction/commit; returns once durable per the engine config',
    page: 'one op message per insert, resolved once durable',
  },
  {
    id: 'update-item', label: 'update item (3 fields)', scale: '1', adaptive: true, write: true,
    worker: 'set title, count and tags of one existing item (random id), own transaction/commit, durable per config',
    page: 'one op message per update, resolved once durable',
  },
  {
    id: 'bulk-create-100', label: 'bulk create 100 (one transaction)', scale: '1', adaptive: true, write: true,
    worker: 'insert 100 new items in one transaction/commit, durable per config',
  },
];

/** Which suites run which rows. `core` = DESIGN.md section 8 rows; `load` = bulk load + open + sizes. */
export const SUITES = {
  core: ROWS.map((r) => r.id),
  load: ['create-instance', 'bulk-load', 'open-n'],
};

/**
 * Sample plans. `full` is the real benchmark; `quick` is for the smoke test (tiny N, few samples).
 * targetMs: adaptive rows pick K so that one sample takes about this long (K clamped to [1, maxK]).
 * warmupMs: minimum time spent in discarded warm-up batches before timing (JIT tier-up, caches).
 * pageWarmup: discarded page-side operations before the timed ones.
 */
export const PLANS = {
  full: {
    targetMs: 20, warmupMs: 100, maxK: 10000, pageWarmup: 5,
    rows: {
      'create-instance': { samples: 5, pageOnly: true },
      'open-empty': { samples: 20, warmup: 1 },
      'bulk-load': { samples: 1, batch: 1000 },
      'read-by-id': { samples: 20, warmup: 1, pageSamples: 300 },
      'bulk-read-100': { samples: 20, warmup: 1 },
      'read-all': { samples: 5, warmup: 1 },
      'simple-query': { samples: 20, warmup: 1, pageSamples: 30 },
      'complex-query': { samples: 20, warmup: 1 },
      'count': { samples: 20, warmup: 1 },
      'keys': { samples: 10, warmup: 1 },
      'aggregate': { samples: 10, warmup: 1 },
      'open-n': { samples: 10, warmup: 1, pageSamples: 3 },
      'read-by-id-after-open': { samples: 10, warmup: 1 },
      // Write rows cap K so a very fast (relaxed) engine does not grow the data set by 100k+ items.
      'create-item': { samples: 30, warmup: 1, pageSamples: 50, maxK: 500 },
      'update-item': { samples: 30, warmup: 1, pageSamples: 50, maxK: 500 },
      'bulk-create-100': { samples: 20, warmup: 1, maxK: 50 },
    },
  },
  quick: {
    targetMs: 2, warmupMs: 10, maxK: 200, pageWarmup: 2,
    rows: {
      'create-instance': { samples: 2, pageOnly: true },
      'open-empty': { samples: 3, warmup: 1 },
      'bulk-load': { samples: 1, batch: 1000 },
      'read-by-id': { samples: 5, warmup: 1, pageSamples: 20 },
      'bulk-read-100': { samples: 3, warmup: 1 },
      'read-all': { samples: 3, warmup: 1 },
      'simple-query': { samples: 3, warmup: 1, pageSamples: 5 },
      'complex-query': { samples: 3, warmup: 1 },
      'count': { samples: 3, warmup: 1 },
      'keys': { samples: 3, warmup: 1 },
      'aggregate': { samples: 3, warmup: 1 },
      'open-n': { samples: 3, warmup: 1, pageSamples: 2 },
      'read-by-id-after-open': { samples: 3, warmup: 1 },
      'create-item': { samples: 5, warmup: 1, pageSamples: 5 },
      'update-item': { samples: 5, warmup: 1, pageSamples: 5 },
      'bulk-create-100': { samples: 3, warmup: 1 },
    },
  },
};

/**
 * Expected results for the given N, used to check every engine did the same logical work
 * (a wrong answer is reported as an error for that row, not silently timed).
 */
export function expectedChecks(n) {
  let cat3 = 0;
  let topCat3 = -1;
  for (let i = 0; i < n; i++) if (i % 5 === 3) { cat3++; topCat3 = i; }
  return {
    'open-empty': { count: 0, found: false },
    'bulk-load': { count: n },
    'open-n': { found: true },
    'read-by-id': { missing: 0 },
    'read-by-id-after-open': { missing: 0 },
    'bulk-read-100': { returned: Math.min(100, n) },
    'read-all': { returned: n },
    'simple-query': { returned: Math.min(1000, n) },
    'complex-query': { returned: Math.min(100, cat3), firstCount: topCat3 },
    'count': { value: n },
    'keys': { returned: n },
    'aggregate': { sum: (n * (n - 1)) / 2, min: n ? 0 : null, max: n ? n - 1 : null, avg: n ? (n - 1) / 2 : null },
  };
}
