//! Sessions waiting for a grant (issue 22 §3): a session that may not read an existing
//! repository is told `PermissionError` (`cannot-read`) at once, but its connection is kept,
//! unsubscribed, and re-checked after every stored range; the moment the access list lets its
//! key read, it gets its `Welcome` and catch-up like any new subscriber. Waiting is bounded:
//! such a connection counts against the connection limits, at most `--max-waiting-per-ip`
//! sessions of one source address wait at once (across repositories; past it the session is
//! refused and closed as before), at most `--max-waiting-per-repo` in one repository, and each
//! for at most `--max-waiting-ms`.
//!
//! A full repository is shared fairly between addresses (issue 23, squatting): a newcomer from
//! an address holding `a` of its places takes the place of the longest-waiting session of the
//! address holding the most, `b`, when `b ≥ a + 2` (the places of the two addresses come
//! closer; at `b = a + 1` they would only swap). So strangers from a few addresses cannot keep
//! an invitee from waiting: whatever they hold, a session from an address with no place gets
//! one while any address holds two. The session that gives up its place is told `LimitError`
//! (`waiting places`) and closed.

use crate::addr::AddrKey;
use crate::outbox::Outbox;
use crate::session::Session;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Counts waiting sessions per source address, across repositories.
pub struct WaitLimiter {
    max_per_ip: usize,
    held: Mutex<HashMap<AddrKey, usize>>,
}

/// One waiting session's place in the per-address count; dropping it frees the place.
pub struct WaitGuard {
    limiter: Arc<WaitLimiter>,
    ip: AddrKey,
}

impl WaitLimiter {
    pub fn new(max_per_ip: usize) -> Arc<WaitLimiter> {
        Arc::new(WaitLimiter {
            max_per_ip,
            held: Mutex::new(HashMap::new()),
        })
    }

    /// A place for a waiting session from `ip`, if it has one left.
    pub fn take(self: &Arc<Self>, ip: IpAddr) -> Option<WaitGuard> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let ip = AddrKey::of(ip);
        let n = held.entry(ip).or_default();
        if *n >= self.max_per_ip {
            return None;
        }
        *n += 1;
        Some(WaitGuard {
            limiter: self.clone(),
            ip,
        })
    }
}

impl Drop for WaitGuard {
    fn drop(&mut self) {
        let mut held = self.limiter.held.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = held.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                held.remove(&self.ip);
            }
        }
    }
}

/// A session waiting in one repository: what it asked for and its queue.
pub struct Waiter {
    pub session: Session,
    pub cursor: u64,
    pub out: Arc<Outbox>,
    since: Instant,
    _place: WaitGuard,
}

/// The sessions waiting in one repository.
#[derive(Default)]
pub struct Waiting {
    waiters: HashMap<u64, Waiter>,
}

/// What `Waiting::add` did with a newcomer.
pub enum Added {
    /// It waits; `Some` is the session whose place it took (to be told and closed).
    Waits(Option<Waiter>),
    /// No place.
    Refused,
}

impl Waiting {
    /// Keep `session` waiting if its address has a place left (`limiter`) and the repository
    /// has room (`max_per_repo`) or a place the fair share rule (above) lets it take.
    pub fn add(
        &mut self,
        limiter: &Arc<WaitLimiter>,
        max_per_repo: usize,
        session: Session,
        cursor: u64,
        out: Arc<Outbox>,
    ) -> Added {
        self.waiters.retain(|_, w| !w.out.is_closed());
        let Some(place) = limiter.take(session.peer.ip()) else {
            return Added::Refused;
        };
        let mut taken = None;
        if self.waiters.len() >= max_per_repo {
            match self.place_to_take(AddrKey::of(session.peer.ip())) {
                Some(conn) if max_per_repo > 0 => taken = self.waiters.remove(&conn),
                _ => return Added::Refused,
            }
        }
        let conn = session.conn;
        let w = Waiter {
            session,
            cursor,
            out,
            since: Instant::now(),
            _place: place,
        };
        self.waiters.insert(conn, w);
        Added::Waits(taken)
    }

    /// The session whose place a newcomer from `from` takes in a full repository: the
    /// longest-waiting of the address holding the most places, if it holds at least two more
    /// than `from` (ties: the address whose session waited longest).
    fn place_to_take(&self, from: AddrKey) -> Option<u64> {
        let mut by_addr: HashMap<AddrKey, (usize, Instant, u64)> = HashMap::new();
        for (&conn, w) in &self.waiters {
            let e = by_addr
                .entry(AddrKey::of(w.session.peer.ip()))
                .or_insert((0, w.since, conn));
            e.0 += 1;
            if (w.since, conn) < (e.1, e.2) {
                (e.1, e.2) = (w.since, conn);
            }
        }
        let mine = by_addr.get(&from).map_or(0, |e| e.0);
        let (most, _, conn) = by_addr
            .into_values()
            .max_by(|a, b| a.0.cmp(&b.0).then((b.1, b.2).cmp(&(a.1, a.2))))?;
        (most >= mine + 2).then_some(conn)
    }

    /// Whether `conn` waits here.
    pub fn has(&self, conn: u64) -> bool {
        self.waiters.contains_key(&conn)
    }

    /// The outbox of the waiting session `conn`.
    pub fn out(&self, conn: u64) -> Option<Arc<Outbox>> {
        self.waiters.get(&conn).map(|w| w.out.clone())
    }

    pub fn remove(&mut self, conn: u64) -> Option<Waiter> {
        self.waiters.remove(&conn)
    }

    /// Take out the waiters `may_read` now lets read (closed ones are forgotten).
    pub fn granted(&mut self, may_read: impl Fn(&Session) -> bool) -> Vec<Waiter> {
        self.waiters.retain(|_, w| !w.out.is_closed());
        let ready: Vec<u64> = self
            .waiters
            .iter()
            .filter(|(_, w)| may_read(&w.session))
            .map(|(&c, _)| c)
            .collect();
        ready
            .into_iter()
            .filter_map(|c| self.waiters.remove(&c))
            .collect()
    }

    /// When the longest-waiting session has waited `max`.
    pub fn next_deadline(&self, max: Duration) -> Option<Instant> {
        self.waiters.values().map(|w| w.since + max).min()
    }

    /// Take out the sessions that have waited `max` by `now`.
    pub fn expired(&mut self, now: Instant, max: Duration) -> Vec<Waiter> {
        let late: Vec<u64> = self
            .waiters
            .iter()
            .filter(|(_, w)| w.since + max <= now)
            .map(|(&c, _)| c)
            .collect();
        late.into_iter()
            .filter_map(|c| self.waiters.remove(&c))
            .collect()
    }

    pub fn drain(&mut self) -> impl Iterator<Item = Waiter> + '_ {
        self.waiters.drain().map(|(_, w)| w)
    }
}
