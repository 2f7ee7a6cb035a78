// Worker-side benchmark harness: implements the message protocol of www/bench/PROTOCOL.md on top of
// a small engine adapter, so that every engine runs exactly the same timing loops and the same inputs.
// An engine worker is just:
//
//   import { serve } from './harness.js';
//   serve({ init, open, close, reset, stats, get, getMany, put, update, putMany, all,
//           queryRange, queryComplex, count, keys, aggregate, info });
//
// Adapter methods may be synchronous or return promises; the loops only await real promises, so a
// synchronous engine is not charged for a microtask per operation.

import { itemId, makeItem, updatedFields, rng } from './common.js';

const now = () => performance.now();
const isThenable = (x) => x !== null && typeof x === 'object' && typeof x.then === 'function';

/** Serialize an Error for postMessage, keeping name and stack (engine errors have stable names). */
export function serializeError(err) {
  if (err instanceof Error) return { name: err.name, message: err.message, stack: err.stack };
  return { name: 'Error', message: String(err) };
}

/** Smallest observable step of performance.now() in this context, in ms (5 µs when isolated). */
export function timerResolutionMs() {
  let best = Infinity;
  for (let i = 0; i < 50; i++) {
    const a = now();
    let b = now();
    while (b === a) b = now();
    best = Math.min(best, b - a);
  }
  return best;
}

/**
 * Time `run(i)` for `samples` samples of K iterations each and return per-iteration times (ms).
 *
 * Warm-up first, so that JS and wasm code is optimized and caches are warm (a cold first call of a
 * wasm engine can be 50x slower than the steady state): batches of K = 1, 2, 4, ... iterations run
 * until one batch lasts >= targetMs and all warm-up batches together >= warmupMs. Adaptive rows then
 * take K = clamp(round(K_last * targetMs / elapsed_last), 1, maxK), so one sample lasts ~targetMs
 * (performance.now() moves in 5 us steps); other rows use K = 1. Warm-up batches are discarded.
 * `prepare(total)` builds the inputs for the next `total` iterations outside any timed region;
 * `run(i)` consumes input i. Returns { samples, k, warmupSamples }.
 */
async function measure(plan, prepare, run) {
  const { samples, adaptive = false, targetMs = 20, warmupMs = 100, maxK = 10000 } = plan;
  const warmupBatches = Math.max(0, plan.warmup ?? 1);

  const batch = async (k) => {
    prepare(k);
    const t0 = now();
    for (let i = 0; i < k; i++) {
      const r = run(i);
      if (isThenable(r)) await r;
    }
    return now() - t0;
  };

  let k = 1;
  let warmups = 0;
  if (warmupBatches > 0) {
    let spent = 0;
    for (;;) {
      const elapsed = await batch(k);
      spent += elapsed;
      warmups++;
      const longEnough = elapsed >= targetMs || k >= maxK;
      if (longEnough && spent >= warmupMs && warmups >= warmupBatches) {
        if (adaptive) k = Math.max(1, Math.min(maxK, Math.round((k * targetMs) / Math.max(elapsed, 0.005))));
        else k = 1;
        break;
      }
      if (!adaptive && warmups >= warmupBatches && spent >= warmupMs) { k = 1; break; }
      if (!longEnough && adaptive) k = Math.min(maxK, k * 2);
    }
  }

  const out = [];
  for (let s = 0; s < samples; s++) out.push((await batch(k)) / k);
  return { samples: out, k, warmupSamples: warmups };
}

/** `count` distinct random base-item ids (all of them when n <= count). */
function distinctIds(r, n, count) {
  if (n <= count) return Array.from({ length: n }, (_, i) => itemId(i));
  const picked = new Set();
  while (picked.size < count) picked.add(r.int(n));
  return [...picked].map(itemId);
}

/** Start serving the protocol in this worker with the given engine adapter. */
export function serve(adapter) {
  const state = {
    engine: null,
    config: null,
    open: false,
    // Next index for items created by write rows/ops; starts above the base N so ids never collide.
    nextNew: 0,
    updateVersion: 0,
  };

  async function call(name, ...args) {
    if (typeof adapter[name] !== 'function') throw new Error(`engine adapter has no ${name}()`);
    const r = adapter[name](...args);
    return isThenable(r) ? await r : r;
  }
  async function ensureOpen() {
    if (!state.open) {
      await call('open');
      state.open = true;
    }
  }
  async function ensureClosed() {
    if (state.open) {
      await call('close');
      state.open = false;
    }
  }

  // --- rows ------------------------------------------------------------------------------------
  // Each returns { samples, k, warmupSamples, check, note? }.
  const rows = {
    async 'open-empty'(p) {
      return reopenRow(p, itemId(0));
    },
    async 'open-n'(p) {
      return reopenRow(p, itemId(Math.floor(p.n / 2)));
    },
    async 'bulk-load'(p) {
      await ensureOpen();
      const batch = p.batch ?? 1000;
      let ms = 0;
      for (let start = 0; start < p.n; start += batch) {
        const items = [];
        for (let i = start; i < Math.min(p.n, start + batch); i++) items.push(makeItem(i));
        const t0 = now();
        await call('putMany', items);
        ms += now() - t0;
      }
      state.nextNew = Math.max(state.nextNew, p.n);
      const count = await call('count');
      return {
        samples: [ms], k: 1, warmupSamples: 0, check: { count },
        note: `${Math.round(p.n / (ms / 1000)).toLocaleString('en-US')} items/s; batches of ${batch}; item generation not timed`,
      };
    },
    async 'read-by-id-after-open'(p) {
      await ensureClosed();
      await ensureOpen();
      return rows['read-by-id'](p);
    },
    async 'read-by-id'(p) {
      await ensureOpen();
      const r = rng(p.seed);
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
    },
    async 'bulk-read-100'(p) {
      await ensureOpen();
      const r = rng(p.seed);
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
      await ensureOpen();
      let returned = 0;
      const m = await measure(p, () => {}, () => settle(adapter.all(), (x) => { returned = x.length; }));
      return { ...m, check: { returned } };
    },
    async 'simple-query'(p) {
      await ensureOpen();
      const r = rng(p.seed);
      let los = [];
      let returned = 0;
      let bad = 0;
      const m = await measure(
        p,
        (total) => { los = Array.from({ length: total }, () => r.int(Math.max(1, p.n - 1000 + 1))); },
        (i) => settle(adapter.queryRange(los[i], los[i] + 1000), (x) => {
          returned = x.length;
          if (x.length && (x[0].count !== los[i] || x[x.length - 1].count < x[0].count)) bad++;
        }),
      );
      const check = { returned };
      if (bad) check.unsorted = bad;
      return { ...m, check };
    },
    async 'complex-query'(p) {
      await ensureOpen();
      let last = [];
      const m = await measure(p, () => {}, () => settle(adapter.queryComplex({ tag: 'category 3', limit: 100 }), (x) => { last = x; }));
      const check = { returned: last.length, firstCount: last.length ? last[0].count : -1 };
      const wrong = last.filter((it, j) => !it.tags.includes('category 3') || !/[0-9]/.test(it.title) || (j > 0 && last[j - 1].count < it.count));
      if (wrong.length) check.wrong = wrong.length;
      return { ...m, check };
    },
    async count(p) {
      await ensureOpen();
      let value = -1;
      const m = await measure(p, () => {}, () => settle(adapter.count(), (x) => { value = x; }));
      return { ...m, check: { value } };
    },
    async keys(p) {
      await ensureOpen();
      let returned = 0;
      let typeOk = true;
      const m = await measure(p, () => {}, () => settle(adapter.keys(), (x) => { returned = x.length; typeOk = typeof x[0] === 'string' || x.length === 0; }));
      const check = { returned };
      if (!typeOk) check.notStrings = true;
      return { ...m, check };
    },
    async aggregate(p) {
      await ensureOpen();
      let value = null;
      const m = await measure(p, () => {}, () => settle(adapter.aggregate(), (x) => { value = x; }));
      return { ...m, check: value };
    },
    async 'create-item'(p) {
      await ensureOpen();
      state.nextNew = Math.max(state.nextNew, p.n);
      let items = [];
      const m = await measure(
        p,
        (total) => { items = Array.from({ length: total }, () => makeItem(state.nextNew++)); },
        (i) => adapter.put(items[i]),
      );
      return { ...m, check: {}, note: 'each insert is its own transaction/commit' };
    },
    async 'update-item'(p) {
      await ensureOpen();
      const r = rng(p.seed);
      let args = [];
      const m = await measure(
        p,
        (total) => {
          args = Array.from({ length: total }, () => {
            const i = r.int(p.n);
            return [itemId(i), updatedFields(i, ++state.updateVersion)];
          });
        },
        (i) => adapter.update(args[i][0], args[i][1]),
      );
      return { ...m, check: {}, note: 'title, count and tags of a random existing item; own transaction/commit' };
    },
    async 'bulk-create-100'(p) {
      await ensureOpen();
      state.nextNew = Math.max(state.nextNew, p.n);
      let batches = [];
      const m = await measure(
        p,
        (total) => {
          batches = Array.from({ length: total }, () => Array.from({ length: 100 }, () => makeItem(state.nextNew++)));
        },
        (i) => adapter.putMany(batches[i]),
      );
      return { ...m, check: {} };
    },
  };

  /** Apply `f` to a value or to a promise's result (keeps synchronous adapters synchronous). */
  function settle(v, f) {
    if (isThenable(v)) return v.then(f);
    f(v);
    return undefined;
  }

  /** close → (timed: open + one read by id) per sample. */
  async function reopenRow(p, id) {
    const out = [];
    const warmup = p.warmup ?? 1;
    let found = null;
    for (let s = 0; s < warmup + p.samples; s++) {
      await ensureClosed();
      const t0 = now();
      await call('open');
      state.open = true;
      const v = await call('get', id);
      const t1 = now();
      found = v !== undefined;
      if (s >= warmup) out.push(t1 - t0);
    }
    const check = { found };
    if (p.row === 'open-empty') check.count = await call('count');
    return { samples: out, k: 1, warmupSamples: warmup, check };
  }

  // --- single operations for page-side rows ----------------------------------------------------
  const ops = {
    get: ({ id }) => call('get', id),
    put: ({ item }) => call('put', item),
    update: ({ id, fields }) => call('update', id, fields),
    queryRange: ({ lo, hi }) => call('queryRange', lo, hi),
    count: () => call('count'),
  };

  async function handle(msg) {
    switch (msg.type) {
      case 'init': {
        if (state.engine) throw new Error(`worker already initialized for ${state.engine}`);
        state.engine = msg.engine;
        state.config = msg.config ?? {};
        const t0 = now();
        const initTimes = (await call('init', { engine: msg.engine, ...state.config })) ?? {};
        const t1 = now();
        await ensureOpen();
        const t2 = now();
        return {
          ms: { total: t2 - t0, init: t1 - t0, open: t2 - t1, ...initTimes },
          info: (await call('info')) ?? {},
          timerResolutionMs: timerResolutionMs(),
          crossOriginIsolated: self.crossOriginIsolated === true,
        };
      }
      case 'row': {
        const fn = rows[msg.row];
        if (!fn) throw new Error(`unknown row "${msg.row}"`);
        const p = { ...msg.params, row: msg.row };
        if (!Number.isInteger(p.n) || p.n < 0) throw new Error(`row ${msg.row}: params.n must be a non-negative integer`);
        const r = await fn(p);
        return { samples: r.samples, iterationsPerSample: r.k, warmupSamples: r.warmupSamples, check: r.check, note: r.note ?? '' };
      }
      case 'op': {
        const fn = ops[msg.op];
        if (!fn) throw new Error(`unknown op "${msg.op}"`);
        await ensureOpen();
        return { value: await fn(msg.args ?? {}) };
      }
      case 'stats': {
        const s = (await call('stats')) ?? {};
        // Non-standard Chromium API; absent in some contexts. Reported when available.
        const mem = performance.memory;
        if (mem && s.jsHeapUsedBytes === undefined) s.jsHeapUsedBytes = mem.usedJSHeapSize;
        return { stats: s };
      }
      case 'reset': {
        await ensureClosed();
        await call('reset', { final: !!msg.final });
        state.nextNew = 0;
        return {};
      }
      case 'close': {
        await ensureClosed();
        if (typeof adapter.shutdown === 'function') await call('shutdown');
        return {};
      }
      default:
        throw new Error(`unknown message type "${msg.type}"`);
    }
  }

  // Messages are handled strictly one at a time, in arrival order.
  let queue = Promise.resolve();
  self.onmessage = (e) => {
    const msg = e.data ?? {};
    queue = queue.then(async () => {
      try {
        const reply = await handle(msg);
        self.postMessage({ id: msg.id, ok: true, ...reply });
      } catch (err) {
        self.postMessage({ id: msg.id, ok: false, error: serializeError(err) });
      }
    });
  };
  self.addEventListener('unhandledrejection', (e) => {
    self.postMessage({ type: 'fatal', error: serializeError(e.reason) });
  });
}
