//! Per-server and per-connection limits: connections in total and per source address, and the
//! token buckets that bound a connection's pushes (count and bytes per second).

use crate::refusal::Refusal;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Counts connections in total and per source address.
pub struct ConnLimiter {
    max_total: usize,
    max_per_ip: usize,
    held: Mutex<(usize, HashMap<IpAddr, usize>)>,
}

/// One admitted connection; dropping it frees its place.
pub struct ConnGuard {
    limiter: Arc<ConnLimiter>,
    ip: IpAddr,
}

impl ConnLimiter {
    pub fn new(max_total: usize, max_per_ip: usize) -> Arc<ConnLimiter> {
        Arc::new(ConnLimiter {
            max_total,
            max_per_ip,
            held: Mutex::new((0, HashMap::new())),
        })
    }

    /// A place for a new connection from `ip`, or the limit it would break.
    pub fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<ConnGuard, Refusal> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if held.0 >= self.max_total {
            let detail = format!(
                "the server holds its maximum of {} connections (--max-connections)",
                self.max_total
            );
            return Err(Refusal::limit("connections", detail));
        }
        let from_ip = held.1.get(&ip).copied().unwrap_or(0);
        if from_ip >= self.max_per_ip {
            let detail = format!(
                "{ip} holds its maximum of {} connections (--max-connections-per-ip)",
                self.max_per_ip
            );
            return Err(Refusal::limit("connections per ip", detail));
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
    buckets: Mutex<HashMap<IpAddr, (Bucket, Instant)>>,
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
            .entry(ip)
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
        let l = ConnLimiter::new(3, 2);
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
