//! Timing: samples, their median and percentiles.

use std::hint::black_box;
use std::time::{Duration, Instant};

pub fn pct(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

pub struct Stats {
    pub p50: Duration,
    pub p95: Duration,
    pub n: usize,
}

pub fn stats(mut v: Vec<Duration>) -> Stats {
    v.sort();
    Stats {
        p50: pct(&v, 0.5),
        p95: pct(&v, 0.95),
        n: v.len(),
    }
}

/// Run `setup` untimed, then time `f` on its output; `runs` samples.
pub fn sample<T, R>(runs: usize, mut setup: impl FnMut() -> T, mut f: impl FnMut(T) -> R) -> Stats {
    let mut v = Vec::with_capacity(runs);
    for _ in 0..runs {
        let x = setup();
        let t = Instant::now();
        let r = f(x);
        v.push(t.elapsed());
        drop(black_box(r));
    }
    stats(v)
}
