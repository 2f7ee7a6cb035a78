// Statistics of the benchmark's samples (nearest-rank percentiles) and how times and sizes are
// printed. Shared by the page, the workers and the Node runner: dependency-free, valid in window,
// worker and Node.

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

/** A row cell's summary: the statistics, K operations per sample, the samples and `extra`. */
export function sampleSummary(samples, k = 1, extra = {}) {
  return { ...summarize(samples), k, samples, ...extra };
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

/** Smallest observable step of performance.now() in this context, in ms (5 µs when isolated). */
export function timerResolutionMs() {
  let best = Infinity;
  for (let i = 0; i < 50; i++) {
    const a = performance.now();
    let b = performance.now();
    while (b === a) b = performance.now();
    best = Math.min(best, b - a);
  }
  return best;
}
