//! A fault-injecting in-memory [`Storage`] for crash tests, modelled on redb's
//! crash-consistency test.
//!
//! [`FaultStorage`] keeps two images: `live` (what reads see, every write applied) and
//! `durable` (as of the last successful flush), plus the writes and truncates issued since that
//! flush, in order. [`FaultStorage::crash_image`] replays a prefix of them, optionally with a
//! torn next write, onto the durable image: the bytes a power cut could leave behind.
//!
//! Clones share state, so a test keeps a handle after moving one into a [`crate::store::log::Log`].
//! Countdowns: `n` means "the next `n` calls succeed, the one after is hit".

use std::cell::{Cell, RefCell};
use std::fmt;
use std::rc::Rc;

use crate::error::{StorageError, StorageErrorKind};
use crate::store::Storage;

/// An unflushed write or truncate.
#[derive(Clone)]
enum Op {
    Write(u64, Vec<u8>),
    Truncate(u64),
}

fn apply(img: &mut Vec<u8>, op: &Op) {
    match op {
        Op::Write(offset, data) => {
            let start = *offset as usize;
            let end = start + data.len();
            if img.len() < end {
                img.resize(end, 0);
            }
            img[start..end].copy_from_slice(data);
        }
        Op::Truncate(len) => img.resize(*len as usize, 0),
    }
}

/// Tick a countdown; true (and disarmed) when it reaches the call it was set for.
fn fires(countdown: &mut Option<usize>) -> bool {
    let hit = *countdown == Some(0);
    *countdown = countdown.and_then(|n| n.checked_sub(1));
    hit
}

#[derive(Default)]
struct Inner {
    live: Vec<u8>,
    durable: Vec<u8>,
    unflushed: Vec<Op>,
    fail_write_in: Option<usize>,
    fail_flush_in: Option<usize>,
    power_cut_in: Option<usize>,
    dead: bool,
    quota: Option<u64>,
    pool: Option<Rc<QuotaPool>>,
    writes: usize,
    flushes: usize,
}

impl Inner {
    fn check_quota(&self, new_len: u64) -> Result<(), StorageError> {
        let old = self.live.len() as u64;
        match self.quota {
            Some(q) if new_len > q && new_len > old => Err(StorageError::new(
                StorageErrorKind::QuotaExceeded,
                format!("quota of {q} bytes exceeded"),
            )),
            _ => match &self.pool {
                Some(p) if new_len > old && p.used.get() + (new_len - old) > p.limit => {
                    Err(StorageError::new(
                        StorageErrorKind::QuotaExceeded,
                        format!("shared quota of {} bytes exceeded", p.limit),
                    ))
                }
                _ => Ok(()),
            },
        }
    }

    fn record(&mut self, op: Op) {
        let old = self.live.len() as u64;
        apply(&mut self.live, &op);
        if let Some(p) = &self.pool {
            p.used.set(p.used.get() - old + self.live.len() as u64);
        }
        self.unflushed.push(op);
    }
}

/// A byte limit shared by several storages, as a browser's quota covers a repository's log
/// and snapshot together ([`FaultStorage::share_quota`]).
#[derive(Debug)]
pub struct QuotaPool {
    limit: u64,
    used: Cell<u64>,
}

impl QuotaPool {
    pub fn new(limit: u64) -> Rc<QuotaPool> {
        Rc::new(QuotaPool {
            limit,
            used: Cell::new(0),
        })
    }

    /// Bytes held by the storages of the pool.
    pub fn used(&self) -> u64 {
        self.used.get()
    }
}

/// An in-memory storage that can fail on command and show what a crash would leave.
#[derive(Clone, Default)]
pub struct FaultStorage {
    inner: Rc<RefCell<Inner>>,
}

impl FaultStorage {
    pub fn new() -> Self {
        Self::default()
    }

    /// A storage whose live and durable images are both `bytes`.
    pub fn from_bytes(bytes: Vec<u8>) -> Self {
        let inner = Inner {
            live: bytes.clone(),
            durable: bytes,
            ..Inner::default()
        };
        FaultStorage {
            inner: Rc::new(RefCell::new(inner)),
        }
    }

    /// The durable image plus the first `keep_writes` unflushed writes/truncates, and with
    /// `torn_bytes = Some(n)` the first `n` bytes of the next unflushed write (a torn write;
    /// ignored if the next one is a truncate).
    pub fn crash_image(&self, keep_writes: usize, torn_bytes: Option<usize>) -> Vec<u8> {
        let inner = self.inner.borrow();
        let mut img = inner.durable.clone();
        for op in inner.unflushed.iter().take(keep_writes) {
            apply(&mut img, op);
        }
        if let (Some(n), Some(Op::Write(offset, data))) =
            (torn_bytes, inner.unflushed.get(keep_writes))
        {
            apply(
                &mut img,
                &Op::Write(*offset, data[..n.min(data.len())].to_vec()),
            );
        }
        img
    }

    /// Number of writes and truncates issued since the last successful flush.
    pub fn unflushed_writes(&self) -> usize {
        self.inner.borrow().unflushed.len()
    }

    /// Length of the `i`-th unflushed write (`None` if out of range or a truncate).
    pub fn unflushed_write_len(&self, i: usize) -> Option<usize> {
        match self.inner.borrow().unflushed.get(i) {
            Some(Op::Write(_, data)) => Some(data.len()),
            _ => None,
        }
    }

    /// The `(n+1)`-th `write_at` from now fails with `Io`, after applying a prefix of its data
    /// (length chosen deterministically) as a real device might.
    pub fn fail_write_after(&self, n: usize) {
        self.inner.borrow_mut().fail_write_in = Some(n);
    }

    /// The `(n+1)`-th `flush` from now fails with `Io` and makes nothing durable.
    pub fn fail_flush_after(&self, n: usize) {
        self.inner.borrow_mut().fail_flush_in = Some(n);
    }

    /// Writes (and truncates) that would grow the storage beyond `bytes` fail with
    /// `QuotaExceeded` and change nothing. `None` lifts the quota.
    pub fn set_quota(&self, bytes: Option<u64>) {
        self.inner.borrow_mut().quota = bytes;
    }

    /// After `n` more successful writes the device is gone: every further write, truncate and
    /// flush fails with `Io`. Build crash images afterwards.
    pub fn power_cut_at_write(&self, n: usize) {
        self.inner.borrow_mut().power_cut_in = Some(n);
    }

    /// Count this storage's bytes against `pool`: a write or truncate that would grow the
    /// pool's total beyond its limit fails with `QuotaExceeded` and changes nothing.
    pub fn share_quota(&self, pool: &Rc<QuotaPool>) {
        let mut i = self.inner.borrow_mut();
        pool.used.set(pool.used.get() + i.live.len() as u64);
        i.pool = Some(pool.clone());
    }

    /// Disarm every pending fault, lift the quota and bring the device back.
    pub fn clear_faults(&self) {
        let mut i = self.inner.borrow_mut();
        (i.fail_write_in, i.fail_flush_in, i.power_cut_in) = (None, None, None);
        (i.quota, i.dead) = (None, false);
    }

    /// Number of `write_at` calls so far, failed ones included.
    pub fn write_count(&self) -> usize {
        self.inner.borrow().writes
    }

    /// Number of `flush` calls so far, failed ones included.
    pub fn flush_count(&self) -> usize {
        self.inner.borrow().flushes
    }

    pub fn live_bytes(&self) -> Vec<u8> {
        self.inner.borrow().live.clone()
    }

    pub fn durable_bytes(&self) -> Vec<u8> {
        self.inner.borrow().durable.clone()
    }

    /// Flip bit `bit` (0..8) of the byte at `offset` in both the live and durable images.
    pub fn flip_bit(&self, offset: u64, bit: u8) {
        let mut i = self.inner.borrow_mut();
        let Inner { live, durable, .. } = &mut *i;
        for img in [live, durable] {
            if let Some(b) = img.get_mut(offset as usize) {
                *b ^= 1 << (bit & 7);
            }
        }
    }
}

impl fmt::Debug for FaultStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let i = self.inner.borrow();
        f.debug_struct("FaultStorage")
            .field("live_len", &i.live.len())
            .field("durable_len", &i.durable.len())
            .field("unflushed", &i.unflushed.len())
            .field("dead", &i.dead)
            .finish()
    }
}

fn gone() -> StorageError {
    StorageError::io("power cut: device gone")
}

impl Storage for FaultStorage {
    fn len(&self) -> Result<u64, StorageError> {
        Ok(self.inner.borrow().live.len() as u64)
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), StorageError> {
        let i = self.inner.borrow();
        let start = offset as usize;
        let src = start
            .checked_add(buf.len())
            .and_then(|end| i.live.get(start..end))
            .ok_or_else(|| StorageError::new(StorageErrorKind::OutOfBounds, "read past end"))?;
        buf.copy_from_slice(src);
        Ok(())
    }

    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), StorageError> {
        let mut i = self.inner.borrow_mut();
        i.writes += 1;
        if fires(&mut i.power_cut_in) {
            i.dead = true;
        }
        let fail = fires(&mut i.fail_write_in);
        if i.dead {
            return Err(gone());
        }
        i.check_quota(offset + data.len() as u64)?;
        if fail {
            let torn = (i.writes * 7919) % (data.len() + 1);
            i.record(Op::Write(offset, data[..torn].to_vec()));
            return Err(StorageError::io(format!(
                "injected write failure ({torn} bytes written)"
            )));
        }
        i.record(Op::Write(offset, data.to_vec()));
        Ok(())
    }

    fn truncate(&mut self, len: u64) -> Result<(), StorageError> {
        let mut i = self.inner.borrow_mut();
        if i.dead {
            return Err(gone());
        }
        i.check_quota(len)?;
        i.record(Op::Truncate(len));
        Ok(())
    }

    fn flush(&mut self) -> Result<(), StorageError> {
        let mut i = self.inner.borrow_mut();
        i.flushes += 1;
        if i.dead {
            return Err(gone());
        }
        if fires(&mut i.fail_flush_in) {
            return Err(StorageError::io("injected flush failure"));
        }
        let Inner {
            durable, unflushed, ..
        } = &mut *i;
        for op in unflushed.drain(..) {
            apply(durable, &op);
        }
        Ok(())
    }
}
