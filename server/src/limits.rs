//! Per-server and per-address limits: connections in total and per source address (an IPv4
//! address, an IPv6 /64: one client), with a reserve of places for addresses that hold almost
//! none, and the token buckets that bound an address's pushes (count and bytes per second),
//! kept beyond its connections so that reconnecting does not refill them.

use crate::addr::AddrKey;
use crate::refusal::Refusal;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Addresses holding fewer connections than this may take the reserved places.
const RESERVE_BELOW: usize = 2;

/// Counts connections in total and per source address.
pub struct ConnLimiter {
    max_total: usize,
    max_per_ip: usize,
    reserved: usize,
    held: Mutex<(usize, HashMap<AddrKey, usize>)>,
}

/// One admitted connection; dropping it frees its place.
pub struct ConnGuard {
    limiter: Arc<ConnLimiter>,
    ip: AddrKey,
}

impl ConnLimiter {
    /// `reserved` of the `max_total` places (at most a tenth of them) go only to addresses
    /// holding fewer than `RESERVE_BELOW` connections: a few addresses that fill the server do
    /// not lock out everyone else.
    pub fn new(max_total: usize, max_per_ip: usize, reserved: usize) -> Arc<ConnLimiter> {
        Arc::new(ConnLimiter {
            max_total,
            max_per_ip,
            reserved: reserved.min(max_total / 10),
            held: Mutex::new((0, HashMap::new())),
        })
    }

    /// A place for a new connection from `ip`, or the limit it would break.
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<ConnGuard, Refusal> {
        let ip = AddrKey::of(ip);
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let from_ip = held.1.get(&ip).copied().unwrap_or(0);
        if from_ip >= self.max_per_ip {
            let detail = format!(
                "{ip} holds its maximum of {} connections (--max-connections-per-ip)",
                self.max_per_ip
            );
            return Err(Refusal::limit("connections per ip", detail));
        }
        let open = self.max_total - self.reserved;
        if held.0 >= self.max_total || (held.0 >= open && from_ip >= RESERVE_BELOW) {
            let detail = format!(
                "the server holds its maximum of {} connections (--max-connections; the last {} are kept for addresses holding fewer than {RESERVE_BELOW}, --reserved-connections)",
                self.max_total, self.reserved
            );
            return Err(Refusal::limit("connections", detail));
        }
        held.0 += 1;
        *held.1.entry(ip).or_default() += 1;
        Ok(ConnGuard {
            limiter: self.clone(),
            ip,
        })
    }
}

impl Drop for ConnGuard {
    fn drop(&mut self) {
        let mut held = self.limiter.held.lock().unwrap_or_else(|e| e.into_inner());
        held.0 -= 1;
        if let Some(n) = held.1.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                held.1.remove(&self.ip);
            }
        }
    }
}

/// Repositories created per source address: a token bucket per address (`--creates-per-ip`
/// per minute, the same as burst), so one client cannot fill the disk with founded names.
pub struct CreateLimiter {
    per_minute: f64,
    buckets: Mutex<HashMap<AddrKey, (Bucket, Instant)>>,
}

impl CreateLimiter {
    pub fn new(per_minute: usize) -> Arc<CreateLimiter> {
        Arc::new(CreateLimiter {
            per_minute: per_minute as f64,
            buckets: Mutex::new(HashMap::new()),
        })
    }

    /// Take one creation for `ip`, or the refusal naming the limit.
    pub fn take(&self, ip: IpAddr) -> Result<(), Refusal> {
        let mut buckets = self.buckets.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if buckets.len() > 10_000 {
            // Forget the addresses whose bucket has refilled (they are as if new).
            let full = 60.0;
            buckets.retain(|_, (_, at)| now.duration_since(*at).as_secs_f64() < full);
        }
        let (rate, burst) = (self.per_minute / 60.0, self.per_minute);
        let (bucket, at) = buckets
            .entry(AddrKey::of(ip))
            .or_insert_with(|| (Bucket::new(rate, burst), now));
        bucket.refill(now.duration_since(*at).as_secs_f64());
        *at = now;
        if bucket.tokens < 1.0 {
            let detail = format!(
                "{ip} created {} repositories within the last minute (--creates-per-ip); nothing was created; retry in {} ms",
                self.per_minute,
                bucket.wait_for(1.0).as_millis()
            );
            return Err(Refusal::limit("creates per ip", detail));
        }
        bucket.tokens -= 1.0;
        Ok(())
    }
}

/// A token bucket: `rate` tokens per second up to `burst`.
struct Bucket {
    rate: f64,
    burst: f64,
    tokens: f64,
}

impl Bucket {
    fn new(rate: f64, burst: f64) -> Bucket {
        Bucket {
            rate,
            burst,
            tokens: burst,
        }
    }

    fn refill(&mut self, secs: f64) {
        self.tokens = (self.tokens + secs * self.rate).min(self.burst);
    }

    /// Time until `n` tokens are there (zero if they are).
    fn wait_for(&self, n: f64) -> Duration {
        let short = n.min(self.burst) - self.tokens;
        Duration::from_secs_f64((short / self.rate).max(0.0))
    }
}

/// Most addresses whose push budgets are remembered; past it, the budgets that have refilled
/// (they hold nothing an address could gain by reconnecting) are forgotten, and if none has,
/// the least recently used.
const MAX_BUDGETS: usize = 16384;

/// Every address's push budget, shared by its connections and kept after they close.
pub struct PushBudgets {
    rates: (f64, f64, f64, f64),
    table: Mutex<HashMap<AddrKey, PushBudget>>,
}

impl PushBudgets {
    pub fn new(rate: f64, burst: f64, bytes_rate: f64, bytes_burst: f64) -> PushBudgets {
        PushBudgets {
            rates: (rate, burst, bytes_rate, bytes_burst),
            table: Mutex::new(HashMap::new()),
        }
    }

    /// Take one push of `size` bytes from `ip`'s budget, or say how long until it allows it.
    pub fn take(&self, ip: IpAddr, size: usize) -> Result<(), Duration> {
        let key = AddrKey::of(ip);
        let mut t = self.table.lock().unwrap_or_else(|e| e.into_inner());
        if !t.contains_key(&key) && t.len() >= MAX_BUDGETS {
            let now = Instant::now();
            t.retain(|_, b| !b.is_full(now));
            if t.len() >= MAX_BUDGETS {
                if let Some(oldest) = t.iter().min_by_key(|(_, b)| b.at).map(|(k, _)| *k) {
                    t.remove(&oldest);
                }
            }
        }
        let (r, b, br, bb) = self.rates;
        t.entry(key)
            .or_insert_with(|| PushBudget::new(r, b, br, bb))
            .take(size)
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.table.lock().unwrap().len()
    }
}

/// A connection's push budget: pushes per second and bytes per second.
pub struct PushBudget {
    pushes: Bucket,
    bytes: Bucket,
    at: Instant,
}

impl PushBudget {
    pub fn new(rate: f64, burst: f64, bytes_rate: f64, bytes_burst: f64) -> PushBudget {
        PushBudget {
            pushes: Bucket::new(rate, burst),
            bytes: Bucket::new(bytes_rate, bytes_burst),
            at: Instant::now(),
        }
    }

    /// Both buckets would be full by `now`: forgetting it loses nothing.
    fn is_full(&self, now: Instant) -> bool {
        let secs = now.duration_since(self.at).as_secs_f64();
        self.pushes.tokens + secs * self.pushes.rate >= self.pushes.burst
            && self.bytes.tokens + secs * self.bytes.rate >= self.bytes.burst
    }

    /// Take one push of `size` bytes, or say how long until the budget allows it.
    pub fn take(&mut self, size: usize) -> Result<(), Duration> {
        let now = Instant::now();
        let secs = now.duration_since(self.at).as_secs_f64();
        self.at = now;
        self.pushes.refill(secs);
        self.bytes.refill(secs);
        let size = size as f64;
        let wait = self.pushes.wait_for(1.0).max(self.bytes.wait_for(size));
        if !wait.is_zero() {
            return Err(wait);
        }
        self.pushes.tokens -= 1.0;
        self.bytes.tokens -= size.min(self.bytes.burst);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_are_counted_in_total_and_per_address() {
        let l = ConnLimiter::new(3, 2, 0);
        let (a, b) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let g1 = l.admit(a).unwrap();
        let _g2 = l.admit(a).unwrap();
        assert_eq!(l.admit(a).err().unwrap().what, "connections per ip");
        let _g3 = l.admit(b).unwrap();
        assert_eq!(l.admit(b).err().unwrap().what, "connections");
        drop(g1);
        assert!(l.admit(a).is_ok());
    }

    #[test]
    fn an_ipv6_64_is_one_address_and_the_reserve_keeps_places_for_others() {
        // 20 places, 8 per address, the last 2 kept for addresses holding fewer than 2.
        let l = ConnLimiter::new(20, 8, 2);
        let a: Vec<IpAddr> = (1..=9)
            .map(|i| format!("2001:db8:1:2::{i}").parse().unwrap())
            .collect();
        let mut held: Vec<_> = a[..8].iter().map(|ip| l.admit(*ip).unwrap()).collect();
        assert_eq!(l.admit(a[8]).err().unwrap().what, "connections per ip");
        let b: IpAddr = "10.0.0.9".parse().unwrap();
        held.extend((0..8).map(|_| l.admit(b).unwrap()));
        let c: IpAddr = "10.0.0.10".parse().unwrap();
        held.extend((0..2).map(|_| l.admit(c).unwrap()));
        // 18 held: the last two places are not for an address holding two already.
        assert_eq!(l.admit(c).err().unwrap().what, "connections");
        held.push(l.admit("10.0.0.20".parse().unwrap()).unwrap());
        held.push(l.admit("2001:db8:9::1".parse().unwrap()).unwrap());
        assert_eq!(held.len(), 20);
        assert_eq!(
            l.admit("10.0.0.30".parse().unwrap()).err().unwrap().what,
            "connections"
        );
    }

    #[test]
    fn the_push_budget_is_the_address_s_and_outlives_its_connections() {
        let budgets = PushBudgets::new(1.0, 2.0, 1e9, 1e9);
        let ip: IpAddr = "10.0.0.1".parse().unwrap();
        assert!(budgets.take(ip, 1).is_ok() && budgets.take(ip, 1).is_ok());
        // A "new connection" from the same address finds the same, spent budget.
        assert!(budgets.take(ip, 1).is_err());
        assert!(budgets.take("10.0.0.2".parse().unwrap(), 1).is_ok());
        for i in 0..(MAX_BUDGETS + 10) as u32 {
            let ip = IpAddr::V4(std::net::Ipv4Addr::from(0x0b00_0000 + i));
            let _ = budgets.take(ip, 1);
        }
        assert!(budgets.len() <= MAX_BUDGETS, "the table is bounded");
    }

    #[test]
    fn the_push_budget_refuses_past_its_burst() {
        let mut b = PushBudget::new(10.0, 2.0, 1e9, 1e9);
        assert!(b.take(1).is_ok() && b.take(1).is_ok());
        let wait = b.take(1).unwrap_err();
        assert!(wait > Duration::from_millis(50) && wait <= Duration::from_millis(100));
        let mut b = PushBudget::new(1e9, 1e9, 100.0, 100.0);
        assert!(b.take(100).is_ok());
        assert!(b.take(50).unwrap_err() > Duration::from_millis(400));
    }
}
