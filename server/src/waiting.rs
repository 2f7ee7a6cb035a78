//! Sessions waiting for a grant (issue 22 §3): a session that may not read an existing
//! repository is told `PermissionError` (`cannot-read`) at once, but its connection is kept,
//! unsubscribed, and re-checked after every stored range; the moment the access list lets its
//! key read, it gets its `Welcome` and catch-up like any new subscriber. Waiting is bounded:
//! such a connection counts against the connection limits, and at most
//! `--max-waiting-per-repo` sessions of one repository and `--max-waiting-per-ip` of one
//! source address wait at once; past them the session is refused and closed as before.

use crate::addr::AddrKey;
use crate::outbox::Outbox;
use crate::session::Session;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

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
    _place: WaitGuard,
}

/// The sessions waiting in one repository.
#[derive(Default)]
pub struct Waiting {
    waiters: HashMap<u64, Waiter>,
}

impl Waiting {
    /// Keep `session` waiting if the repository (`max_per_repo`) and its address have room.
    /// Gives the queue back when they have none.
    pub fn add(
        &mut self,
        limiter: &Arc<WaitLimiter>,
        max_per_repo: usize,
        session: Session,
        cursor: u64,
        out: Arc<Outbox>,
    ) -> Result<(), (Session, Arc<Outbox>)> {
        if self.waiters.len() >= max_per_repo {
            return Err((session, out));
        }
        let Some(place) = limiter.take(session.peer.ip()) else {
            return Err((session, out));
        };
        let conn = session.conn;
        let w = Waiter {
            session,
            cursor,
            out,
            _place: place,
        };
        self.waiters.insert(conn, w);
        Ok(())
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

    pub fn drain(&mut self) -> impl Iterator<Item = Waiter> + '_ {
        self.waiters.drain().map(|(_, w)| w)
    }
}
