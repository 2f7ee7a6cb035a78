// The timing loops every engine's rows run in (PROTOCOL.md "Timing"): adaptive K-iteration
// samples after a warm-up, or one timed run per sample. Adapter calls may be synchronous or return
// promises; the loops await only real promises, so a synchronous engine pays no microtask per
// operation.

export const now = () => performance.now();

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
export async function measure(plan, prepare, run) {
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

/**
 * Time `f` once per sample (K = 1), after `p.warmup` discarded runs.
 * @param {{samples: number, warmup?: number}} p
 * @param {() => unknown} f
 */
export async function repeat(p, f) {
  const out = [];
  const warmup = p.warmup ?? 0;
  for (let s = 0; s < warmup + p.samples; s++) {
    const t0 = now();
    const r = f();
    if (isThenable(r)) await r;
    const t = now() - t0;
    if (s >= warmup) out.push(t);
  }
  return { samples: out, k: 1, warmupSamples: warmup };
}
