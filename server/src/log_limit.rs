//! Log lines a client can cause are bounded: each value is cut to `MAX_VALUE` characters, and
//! lines about one source address (an IPv4 address, an IPv6 /64) pass a token bucket of
//! `BURST` lines refilled at `PER_SEC` a second. Suppressed lines are counted
//! (`ibexdb_log_suppressed_total`). The table of addresses is bounded (`MAX_ADDRESSES`): when
//! full, addresses whose bucket is full again are forgotten, and if none is, lines from new
//! addresses share one bucket.

use crate::addr::AddrKey;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Instant;

/// Longest logged value, in characters (a refusal's text is cut to it).
pub const MAX_VALUE: usize = 300;
/// Lines about one address at once.
const BURST: f64 = 20.0;
/// Lines about one address per second, in the long run.
const PER_SEC: f64 = 2.0;
const MAX_ADDRESSES: usize = 4096;

/// Lines suppressed since start.
pub static SUPPRESSED: AtomicU64 = AtomicU64::new(0);

struct Buckets {
    by_addr: HashMap<AddrKey, (f64, Instant)>,
    shared: (f64, Instant),
}

static BUCKETS: Mutex<Option<Buckets>> = Mutex::new(None);

fn take(tokens: &mut (f64, Instant), now: Instant) -> bool {
    let secs = now.duration_since(tokens.1).as_secs_f64();
    tokens.0 = (tokens.0 + secs * PER_SEC).min(BURST);
    tokens.1 = now;
    if tokens.0 >= 1.0 {
        tokens.0 -= 1.0;
        true
    } else {
        false
    }
}

/// Whether a line about `ip` may be written now; counts it as suppressed when not.
pub fn allow(ip: IpAddr) -> bool {
    let now = Instant::now();
    let key = AddrKey::of(ip);
    let mut guard = BUCKETS.lock().unwrap_or_else(|e| e.into_inner());
    let b = guard.get_or_insert_with(|| Buckets {
        by_addr: HashMap::new(),
        shared: (BURST, now),
    });
    if !b.by_addr.contains_key(&key) && b.by_addr.len() >= MAX_ADDRESSES {
        b.by_addr.retain(|_, t| {
            let secs = now.duration_since(t.1).as_secs_f64();
            t.0 + secs * PER_SEC < BURST
        });
    }
    let ok = if b.by_addr.len() < MAX_ADDRESSES || b.by_addr.contains_key(&key) {
        take(b.by_addr.entry(key).or_insert((BURST, now)), now)
    } else {
        take(&mut b.shared, now)
    };
    if !ok {
        SUPPRESSED.fetch_add(1, Relaxed);
    }
    ok
}

/// `v` cut to `MAX_VALUE` characters (marked with `…` when cut).
pub fn cut(v: &str) -> std::borrow::Cow<'_, str> {
    match v.char_indices().nth(MAX_VALUE) {
        None => v.into(),
        Some((i, _)) => format!("{}…", &v[..i]).into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_about_one_address_are_rate_limited_and_values_cut() {
        let ip: IpAddr = "10.9.8.7".parse().unwrap();
        let passed = (0..1000).filter(|_| allow(ip)).count();
        assert!((20..=22).contains(&passed), "{passed}");
        assert!(SUPPRESSED.load(Relaxed) >= 978);
        // Another address of the same IPv6 /64 is the same client.
        let (a, b): (IpAddr, IpAddr) = (
            "2001:db8::1".parse().unwrap(),
            "2001:db8::2".parse().unwrap(),
        );
        let n = (0..50).filter(|_| allow(a)).count() + (0..50).filter(|_| allow(b)).count();
        assert!(n <= 22, "{n}");
        assert!(
            allow("10.9.8.6".parse().unwrap()),
            "other addresses still log"
        );
        let long = "x".repeat(5000);
        assert_eq!(cut(&long).chars().count(), MAX_VALUE + 1);
        assert_eq!(cut("short"), "short");
    }
}
