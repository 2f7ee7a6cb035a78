//! Helpers shared by the integration tests.
#![allow(dead_code)]

use ibexdb::Clock;
use ibexdb::{map, Identity, Map, RepoOptions, Storage, StorageError, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A deterministic clock that ticks one millisecond per call.
pub fn clock(start: u64) -> Clock {
    let mut t = start;
    Box::new(move || {
        t += 1;
        t
    })
}

pub const T0: u64 = 1_700_000_000_000;

/// The repository name the tests use (bound into seals).
pub const REPO: &str = "test";

pub fn ident(n: u8) -> Identity {
    Identity::from_entropy(&[n; 48])
}

/// Signed mode with identity `n`.
pub fn signed(n: u8) -> RepoOptions {
    RepoOptions::new(REPO, Some(ident(n)), clock(T0))
}

/// Trusted (unsigned) mode that accepts unsigned commits.
pub fn trusted(n: u8) -> RepoOptions {
    let mut o = RepoOptions::new(REPO, Some(ident(n)), clock(T0));
    o.trusted = true;
    o.accept_trusted = true;
    o
}

/// The benchmark's item shape.
pub fn item(i: u64) -> Map {
    map! {
        "title" => format!("Item {i}"),
        "count" => i as i64,
        "tags" => Value::set([format!("tag {i}"), format!("category {}", i % 5)]),
    }
    .as_map()
}

/// splitmix64: a tiny deterministic RNG so seeds reproduce across crate versions.
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            v.swap(i, j);
        }
    }
}

/// Run `f(seed)` for each seed, printing the seed of a failure before re-raising it.
pub fn for_seeds(name: &str, seeds: std::ops::Range<u64>, f: impl Fn(u64)) {
    let only = std::env::var("IBEX_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok());
    for seed in seeds {
        if only.is_some_and(|o| o != seed) {
            continue;
        }
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(seed)));
        if let Err(e) = r {
            eprintln!("{name}: failed with seed {seed} (rerun with IBEX_SEED={seed})");
            std::panic::resume_unwind(e);
        }
    }
}

/// In-memory storage the test keeps a handle on (to damage it under an open repository), and
/// that counts the bytes read from it.
#[derive(Clone, Default)]
pub struct Shared {
    pub bytes: Arc<Mutex<Vec<u8>>>,
    pub read: Arc<AtomicU64>,
}

impl Shared {
    pub fn read_bytes(&self) -> u64 {
        self.read.load(Ordering::Relaxed)
    }
    pub fn len_now(&self) -> usize {
        self.bytes.lock().unwrap().len()
    }
    pub fn flip(&self, at: usize) {
        self.bytes.lock().unwrap()[at] ^= 0x55;
    }
}

impl Storage for Shared {
    fn len(&self) -> Result<u64, StorageError> {
        Ok(self.bytes.lock().unwrap().len() as u64)
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), StorageError> {
        let b = self.bytes.lock().unwrap();
        let start = offset as usize;
        let src = b.get(start..start + buf.len()).ok_or_else(|| {
            StorageError::new(ibexdb::StorageErrorKind::OutOfBounds, "read past the end")
        })?;
        buf.copy_from_slice(src);
        self.read.fetch_add(buf.len() as u64, Ordering::Relaxed);
        Ok(())
    }
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), StorageError> {
        let mut b = self.bytes.lock().unwrap();
        let end = offset as usize + data.len();
        if b.len() < end {
            b.resize(end, 0);
        }
        b[offset as usize..end].copy_from_slice(data);
        Ok(())
    }
    fn truncate(&mut self, len: u64) -> Result<(), StorageError> {
        self.bytes.lock().unwrap().resize(len as usize, 0);
        Ok(())
    }
    fn flush(&mut self) -> Result<(), StorageError> {
        Ok(())
    }
}

/// `len` bytes of text, different for every `i` (large values: tests/large_*.rs).
pub fn text(i: u64, len: usize) -> String {
    let mut s = format!("{i:08}|");
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    while s.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.push((b'a' + (x % 26) as u8) as char);
    }
    s.truncate(len);
    s
}
