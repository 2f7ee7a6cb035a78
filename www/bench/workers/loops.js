// The timing loops every engine's rows run in (PROTOCOL.md "Timing"): adaptive K-iteration
// samples after a warm-up, or one timed run per sample. Adapter calls may be synchronous or return
// promises; the loops await only real promises, so a synchronous engine pays no microtask per
// operation.

import { summarize } from '../shared/stats.js';

export const now = () => performance.now();

/**
 * Operations this long or longer (after the warm-up) are also timed one by one, so that the row
 * reports a per-operation p95 and not only the spread of K-operation means: 50 µs is ten steps of
 * the 5 µs timer. Shorter operations cannot be timed individually.
 */
export const PER_OP_MIN_MS = 0.05;

/** @param {unknown} x @returns {x is PromiseLike<unknown>} */
export const isThenable = (x) => x !== null && typeof x === 'object' && typeof (/** @type {any} */ (x)).then === 'function';

/**
 * Apply `f` to a value or to a promise's result (keeps synchronous adapters synchronous).
 * @template T
 * @param {T | PromiseLike<T>} v
 * @param {(x: T) => void} f
 * @returns {PromiseLike<void> | undefined}
 */
export function settle(v, f) {
  if (isThenable(v)) return v.then(f);
  f(/** @type {T} */ (v));
  return undefined;
}

/**
 * Per-operation statistics (p50, p95, p99, max, mean) of individually timed operations.
 * @param {number[]} ops ms
 */
export function opStats(ops) {
  const s = summarize(ops);
  const sorted = [...ops].sort((a, b) => a - b);
  return { n: s.n, p50: s.p50, p95: s.p95, p99: sorted[Math.max(0, Math.ceil(0.99 * sorted.length) - 1)], max: s.max, mean: s.mean };
}

/**
 * What a timing loop returns.
 * @typedef {object} Measured
 * @property {number[]} samples per-operation ms (each: batch time / K)
 * @property {number} k
 * @property {number} warmupSamples
 * @property {ReturnType<typeof opStats>} [ops] operations timed one by one (when long enough)
 * @property {number} [trailingMs] the trailing work, timed inside the last sample
 */

/**
 * Time `run(i)` for `samples` samples of K iterations each and return per-iteration times (ms).
 *
 * Warm-up first, so that JS and wasm code is optimized and caches are warm (a cold first call of a
 * wasm engine can be 50x slower than the steady state): batches of K = 1, 2, 4, ... iterations run
 * until one batch lasts >= targetMs and all warm-up batches together >= warmupMs. Adaptive rows then
 * take K = clamp(round(K_last * targetMs / elapsed_last), 1, maxK), so one sample lasts ~targetMs
 * (performance.now() moves in 5 us steps); other rows use K = 1. Warm-up batches are discarded.
 * `prepare(total)` builds the inputs for the next `total` iterations outside any timed region;
 * `run(i)` consumes input i.
 *
 * When one operation takes >= PER_OP_MIN_MS, every operation of the timed samples is also timed on
 * its own (`ops`: per-operation p50/p95/p99/max), so that a slow operation is not hidden in a
 * K-operation mean. `finish()` is the trailing work the row's operations leave behind (a write
 * row's seal, flush, snapshot or checkpoint: what a close would otherwise do untimed); it runs
 * inside the timed region of the last sample (and of the warm-up's last batch, so that the samples
 * start from a settled engine).
 * @param {{samples: number, warmup?: number, adaptive?: boolean, targetMs?: number, warmupMs?: number, maxK?: number}} plan
 * @param {(total: number) => void} prepare
 * @param {(i: number) => unknown} run
 * @param {{finish?: () => unknown}} [opts]
 * @returns {Promise<Measured>}
 */
export async function measure(plan, prepare, run, { finish } = {}) {
  const { samples, adaptive = false, targetMs = 20, warmupMs = 100, maxK = 10000 } = plan;
  const warmupBatches = Math.max(0, plan.warmup ?? 1);
  /** @type {number[] | null} per-operation times of the timed samples */
  let ops = null;
  let trailingMs = 0;

  /** @param {number} k @param {boolean} withFinish */
  const batch = async (k, withFinish) => {
    prepare(k);
    const t0 = now();
    if (ops) {
      let prev = t0;
      for (let i = 0; i < k; i++) {
        const r = run(i);
        if (isThenable(r)) await r;
        const t = now();
        ops.push(t - prev);
        prev = t;
      }
    } else {
      for (let i = 0; i < k; i++) {
        const r = run(i);
        if (isThenable(r)) await r;
      }
    }
    if (withFinish && finish) {
      const tf = now();
      const r = finish();
      if (isThenable(r)) await r;
      trailingMs = now() - tf;
    }
    return now() - t0;
  };

  let k = 1;
  let warmups = 0;
  let perOpMs = 0;
  if (warmupBatches > 0) {
    let spent = 0;
    for (;;) {
      const elapsed = await batch(k, false);
      spent += elapsed;
      warmups++;
      perOpMs = elapsed / k;
      const longEnough = elapsed >= targetMs || k >= maxK;
      if (longEnough && spent >= warmupMs && warmups >= warmupBatches) {
        if (adaptive) k = Math.max(1, Math.min(maxK, Math.round((k * targetMs) / Math.max(elapsed, 0.005))));
        else k = 1;
        break;
      }
      if (!adaptive && warmups >= warmupBatches && spent >= warmupMs) { k = 1; break; }
      if (!longEnough && adaptive) k = Math.min(maxK, k * 2);
    }
    if (finish) {
      const r = finish();
      if (isThenable(r)) await r;
    }
  }
  if (perOpMs >= PER_OP_MIN_MS || warmupBatches === 0) ops = [];

  const out = [];
  for (let s = 0; s < samples; s++) out.push((await batch(k, s === samples - 1)) / k);
  /** @type {Measured} */
  const m = { samples: out, k, warmupSamples: warmups };
  if (ops && ops.length && k > 1) {
    // (With K = 1 every sample is one operation: the samples are the per-operation times.)
    // Without a warm-up nothing says the operations are long enough: keep them only if they are.
    const st = opStats(ops);
    if (st.mean >= PER_OP_MIN_MS) m.ops = st;
  }
  if (finish) m.trailingMs = trailingMs;
  return m;
}

/**
 * Time `f` once per sample (K = 1), after `p.warmup` discarded runs. `before()` runs untimed before
 * each run (e.g. a fresh database).
 * @param {{samples: number, warmup?: number}} p
 * @param {() => unknown} f
 * @param {{before?: () => unknown}} [opts]
 * @returns {Promise<Measured>}
 */
export async function repeat(p, f, { before } = {}) {
  const out = [];
  const warmup = p.warmup ?? 0;
  for (let s = 0; s < warmup + p.samples; s++) {
    if (before) {
      const b = before();
      if (isThenable(b)) await b;
    }
    const t0 = now();
    const r = f();
    if (isThenable(r)) await r;
    const t = now() - t0;
    if (s >= warmup) out.push(t);
  }
  return { samples: out, k: 1, warmupSamples: warmup };
}
