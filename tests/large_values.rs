//! Large values off the heap (docs/design.md §6.6, issue 26 §4): a top-level string or bytes
//! field of 16 KiB or more stays in the log once its commit is applied, and is loaded on read.
//! Round trips, reopen from the log and from a snapshot, queries that compare such values,
//! merges, a crash at every flush, damage, and the heap a repository holding far more large
//! bytes than memory costs (a counting allocator: every test of this file runs alone).

mod common;
use common::*;
use ibexdb::testing::FaultStorage;
use ibexdb::{
    map, AggregateQuery, Error, FileStorage, Map, MemStorage, Query, Repo, Schema, Storage, Txn,
    Value,
};
use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            let now = LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            LIVE.fetch_sub(l.size(), Ordering::Relaxed);
            let now = LIVE.fetch_add(new, Ordering::Relaxed) + new;
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// The allocator counts the whole process: the tests of this file run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());
fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

const FAR_MIN: usize = 16 * 1024;

fn user(i: u64, len: usize) -> Map {
    map! {"name" => format!("user {i}"), "n" => i as i64, "bio" => text(i, len)}.as_map()
}

/// Values the state holds as references into the log (loaded items only).
fn far_count<S: Storage>(r: &Repo<S>) -> usize {
    r.state()
        .collections
        .values()
        .flat_map(|c| c.items.iter())
        .map(|(_, it)| {
            it.value
                .values()
                .filter(|v| matches!(v, Value::Far(_)))
                .count()
        })
        .sum()
}

fn put(r: &mut Repo<impl Storage>, key: &str, m: Map) {
    let mut t = Txn::new();
    t.put(key, m).unwrap();
    r.commit(t).unwrap();
}

fn q(j: serde_json::Value) -> Query {
    Query::from_json(&j).unwrap()
}

#[test]
fn large_values_round_trip_from_the_log() {
    let _s = serial();
    let mut r = Repo::open(MemStorage::new(), None, trusted(1)).unwrap();
    let photo: Vec<u8> = (0..17_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let mut a = user(1, 20_000);
    a.insert("photo".into(), Value::from(photo.clone()));
    // Only top-level fields go far: a large string inside a map stays in memory.
    a.insert(
        "nested".into(),
        map! {"text" => text(9, 20_000)}.as_map().into(),
    );
    let b = user(2, FAR_MIN - 1);
    let c = user(3, FAR_MIN);
    let mut t = Txn::new();
    t.put("users/a", a.clone()).unwrap();
    t.put("users/b", b.clone()).unwrap();
    t.put("users/c", c.clone()).unwrap();
    r.commit(t).unwrap();
    // Released before the flush: read back from the log's write buffer.
    assert_eq!(far_count(&r), 3, "a.bio, a.photo, c.bio");
    assert_eq!(r.get("users/a").unwrap(), Some(&a));
    assert_eq!(r.get("users/b").unwrap(), Some(&b));
    r.flush().unwrap();
    assert_eq!(r.get("users/a").unwrap(), Some(&a));
    assert_eq!(r.get("users/c").unwrap(), Some(&c));
    // A query that only hands rows out reads them from the log and keeps them there.
    let rows = r
        .query(&q(serde_json::json!({"collection": "users"})))
        .unwrap();
    assert_eq!(rows.rows.len(), 3);
    assert_eq!(rows.rows[0].1, a);
    assert_eq!(rows.rows[2].1, c);
    assert_eq!(far_count(&r), 3);
    // Bytes leave as bytes.
    let got = r.get("users/a").unwrap().unwrap();
    assert_eq!(got.get("photo"), Some(&Value::from(photo)));
    r.verify().unwrap();
}

/// A model of what each key should hold, updated with every write.
struct Model(BTreeMap<String, Map>);

fn mixed_writes(r: &mut Repo<impl Storage>, m: &mut Model, rng: &mut Rng, n: usize) {
    for step in 0..n {
        let i = rng.below(12);
        let key = format!("users/{i}");
        let mut t = Txn::new();
        match rng.below(5) {
            0 if m.0.contains_key(&key) => {
                t.delete(&key).unwrap();
                m.0.remove(&key);
            }
            1 if m.0.contains_key(&key) => {
                // A patch of a small field keeps the large one where it is.
                let f = map! {"n" => step as i64}.as_map();
                t.update(&key, f.clone()).unwrap();
                m.0.get_mut(&key)
                    .unwrap()
                    .insert("n".into(), Value::from(step as i64));
            }
            2 if m.0.contains_key(&key) => {
                // A patch of the large field: larger, or small again.
                let len = [100, 30_000][rng.below(2) as usize];
                let v = text(step as u64 + 1000, len);
                t.update(&key, map! {"bio" => v.clone()}.as_map()).unwrap();
                m.0.get_mut(&key)
                    .unwrap()
                    .insert("bio".into(), Value::from(v));
            }
            _ => {
                let len = [10, FAR_MIN, 25_000, 70_000][rng.below(4) as usize];
                let v = user(step as u64, len);
                t.put(&key, v.clone()).unwrap();
                m.0.insert(key, v);
            }
        }
        r.commit(t).unwrap();
    }
}

fn check_model(r: &mut Repo<impl Storage>, m: &Model, what: &str) {
    for i in 0..12 {
        let key = format!("users/{i}");
        assert_eq!(r.get(&key).unwrap(), m.0.get(&key), "{what}: {key}");
    }
}

#[test]
fn large_values_survive_reopen_snapshot_and_verify() {
    let _s = serial();
    let mut m = Model(BTreeMap::new());
    let mut rng = Rng(7);
    let mut r = Repo::open(MemStorage::new(), Some(MemStorage::new()), signed(1)).unwrap();
    mixed_writes(&mut r, &mut m, &mut rng, 60);
    r.seal().unwrap();
    r.flush().unwrap();
    assert!(far_count(&r) > 0);
    check_model(&mut r, &m, "written");
    let hash = r.state_hash().unwrap();
    r.verify().unwrap();
    let (log, _) = r.close().unwrap();
    // From the log alone: the replay releases the large values again.
    let mut r = Repo::open(log, Some(MemStorage::new()), signed(1)).unwrap();
    assert!(far_count(&r) > 0);
    check_model(&mut r, &m, "replayed");
    assert_eq!(r.state_hash().unwrap(), hash);
    r.verify().unwrap();
    // A snapshot keeps the references; the tail written after it is released.
    assert!(r.write_snapshot().unwrap());
    mixed_writes(&mut r, &mut m, &mut rng, 30);
    r.seal().unwrap();
    let hash = r.state_hash().unwrap();
    let (log, snap) = r.close().unwrap();
    let mut r = Repo::open(log, snap, signed(1)).unwrap();
    assert!(r.open_report().from_snapshot);
    check_model(&mut r, &m, "from the snapshot");
    assert_eq!(r.state_hash().unwrap(), hash);
    r.verify().unwrap();
    // A snapshot appended over one whose items are partly far, then reopened again.
    mixed_writes(&mut r, &mut m, &mut rng, 30);
    r.seal().unwrap();
    r.write_snapshot().unwrap();
    let (log, snap) = r.close().unwrap();
    let mut r = Repo::open(log, snap, signed(1)).unwrap();
    check_model(&mut r, &m, "second snapshot");
    r.verify().unwrap();
}

#[test]
fn queries_indexes_and_live_queries_compare_large_values_loaded() {
    let _s = serial();
    let mut r = Repo::open(MemStorage::new(), None, trusted(1)).unwrap();
    for i in 0..20 {
        put(
            &mut r,
            &format!("users/{i:02}"),
            user(i, 20_000 + i as usize),
        );
    }
    assert_eq!(far_count(&r), 20);
    // A filter on a large field: loaded back into memory, compared exactly.
    let wanted = text(7, 20_007);
    let res = r
        .query(&q(
            serde_json::json!({"collection": "users", "where": {"bio": wanted}}),
        ))
        .unwrap();
    assert_eq!(res.rows.len(), 1);
    assert_eq!(res.rows[0].0, "07");
    assert_eq!(
        far_count(&r),
        0,
        "the filter loaded the collection's large values"
    );
    // New writes are released again; a sort on the field loads them back.
    put(&mut r, "users/20", user(20, 30_000));
    assert_eq!(far_count(&r), 1);
    let res = r
        .query(&q(serde_json::json!({"collection": "users", "sort": [{"field": "bio", "desc": true}], "limit": 21})))
        .unwrap();
    let mut ids: Vec<(String, String)> = (0..21)
        .map(|i| {
            let len = if i == 20 { 30_000 } else { 20_000 + i };
            (text(i as u64, len), format!("{i:02}"))
        })
        .collect();
    ids.sort();
    ids.reverse();
    let got: Vec<&str> = res.rows.iter().map(|(id, _)| id.as_str()).collect();
    let want: Vec<&str> = ids.iter().map(|(_, id)| id.as_str()).collect();
    assert_eq!(got, want);
    // An aggregate and a count read them loaded too.
    put(&mut r, "users/21", user(21, 30_000));
    let agg = AggregateQuery::from_json(
        &serde_json::json!({"collection": "users", "aggregates": {"top": {"max": "bio"}}}),
    )
    .unwrap();
    let top = r.aggregate(&agg).unwrap();
    let max = ids
        .iter()
        .map(|(t, _)| t.clone())
        .chain([text(21, 30_000)])
        .max();
    assert_eq!(top["top"], serde_json::json!(max.unwrap()));
    // A collection with an index keeps its large values in memory from then on.
    r.define_schema(
        "docs",
        Schema::from_json("docs", &serde_json::json!({"indexes": ["bio"]})).unwrap(),
    )
    .unwrap();
    put(&mut r, "docs/x", user(1, 40_000));
    let n = r
        .count(
            "docs",
            Some(&ibexdb::Filter::from_json(&serde_json::json!({"bio": text(1, 40_000)})).unwrap()),
        )
        .unwrap();
    assert_eq!(n, 1);
    // An index on another field keeps only that field in memory: a query sorted on it hands
    // the large values out and leaves them in the log.
    r.define_schema(
        "posts",
        Schema::from_json("posts", &serde_json::json!({"indexes": ["n"]})).unwrap(),
    )
    .unwrap();
    for i in 0..5 {
        put(&mut r, &format!("posts/{i}"), user(10 - i, 30_000));
    }
    let before = far_count(&r);
    let res = r
        .query(&q(
            serde_json::json!({"collection": "posts", "where": {"n": {"gte": 7}}, "sort": ["n"]}),
        ))
        .unwrap();
    let ids: Vec<&str> = res.rows.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["3", "2", "1", "0"]);
    assert_eq!(res.rows[0].1, user(7, 30_000));
    assert_eq!(far_count(&r), before, "the large field stays far");
    assert!(before >= 5);
    // A live query over a collection with far values: loaded first, kept loaded, and its
    // changes carry whole values.
    put(&mut r, "notes/a", user(5, 50_000));
    let before = far_count(&r);
    let (_, rows) = r
        .subscribe(q(
            serde_json::json!({"collection": "notes", "where": {"n": {"gte": 0}}}),
        ))
        .unwrap();
    assert_eq!(rows[0].1, user(5, 50_000));
    put(&mut r, "notes/b", user(6, 50_000));
    assert_eq!(far_count(&r), before - 1, "notes' values are all in memory");
    let changes = r.take_live_changes();
    assert_eq!(changes.len(), 1);
    r.verify().unwrap();
}

#[test]
fn concurrent_large_writes_merge_and_converge() {
    let _s = serial();
    let mut a = Repo::open(MemStorage::new(), None, trusted(1)).unwrap();
    let mut b = Repo::open(MemStorage::new(), None, trusted(2)).unwrap();
    put(&mut a, "users/x", user(1, 20_000));
    let (c, s) = a.export().unwrap();
    b.receive(&c, &s).unwrap();
    // Concurrent: both replace the large field; a also patches a small one.
    let mut t = Txn::new();
    t.update("users/x", map! {"bio" => text(100, 40_000)}.as_map())
        .unwrap();
    a.commit(t).unwrap();
    let mut t = Txn::new();
    t.update(
        "users/x",
        map! {"bio" => text(200, 45_000), "n" => 9}.as_map(),
    )
    .unwrap();
    b.commit(t).unwrap();
    put(&mut b, "users/y", user(3, 33_000));
    let (ca, sa) = a.export().unwrap();
    let (cb, sb) = b.export().unwrap();
    a.receive(&cb, &sb).unwrap();
    b.receive(&ca, &sa).unwrap();
    assert_eq!(a.state_hash().unwrap(), b.state_hash().unwrap());
    assert_eq!(
        a.get("users/x").unwrap(),
        b.get("users/x").unwrap().cloned().as_ref()
    );
    assert_eq!(a.get("users/y").unwrap(), Some(&user(3, 33_000)));
    // Received values are released as well as written ones.
    assert!(far_count(&a) >= 2 && far_count(&b) >= 2);
    let bio = a
        .get("users/x")
        .unwrap()
        .unwrap()
        .get("bio")
        .cloned()
        .unwrap();
    assert!(bio == Value::from(text(100, 40_000)) || bio == Value::from(text(200, 45_000)));
    a.verify().unwrap();
    b.verify().unwrap();
    // Commits still carry the values: a third replica syncs from a's log.
    let mut c3 = Repo::open(MemStorage::new(), None, trusted(3)).unwrap();
    let (cc, sc) = a.export().unwrap();
    c3.receive(&cc, &sc).unwrap();
    assert_eq!(c3.state_hash().unwrap(), a.state_hash().unwrap());
}

#[test]
fn a_damaged_large_value_is_a_corrupt_error() {
    let _s = serial();
    let log = Shared::default();
    let mut r = Repo::open(log.clone(), None, trusted(1)).unwrap();
    put(&mut r, "users/a", user(1, 30_000));
    r.flush().unwrap();
    let at = r
        .state()
        .collections
        .values()
        .flat_map(|c| c.items.iter())
        .find_map(|(_, it)| match it.value.get("bio") {
            Some(Value::Far(f)) => Some(f.at),
            _ => None,
        })
        .unwrap();
    log.flip(at as usize + 100);
    match r.get("users/a") {
        Err(Error::Corrupt { .. }) => {}
        other => panic!("expected CorruptError, got {other:?}"),
    }
}

// ----- crash at any write or flush ------------------------------------------------------------

struct Run {
    log: FaultStorage,
    snap: FaultStorage,
    hashes: Vec<[u8; 32]>,
    durable: usize,
}

fn workload(seed: u64, cut: Option<usize>) -> Run {
    let mut rng = Rng(seed);
    let log = FaultStorage::new();
    let snap = FaultStorage::new();
    let mut r = Repo::open(log.clone(), Some(snap.clone()), trusted(1)).unwrap();
    let mut hashes = vec![r.state_hash().unwrap()];
    let mut durable = 0;
    if let Some(n) = cut {
        log.fail_flush_after(n);
    }
    let mut m = Model(BTreeMap::new());
    for _ in 0..16 {
        mixed_writes(&mut r, &mut m, &mut rng, 1);
        hashes.push(r.state_hash().unwrap());
        let res = match rng.below(6) {
            0..=2 => r.flush(),
            3 => r.write_snapshot().map(|_| ()),
            _ => Ok(()),
        };
        match res {
            Ok(()) => {
                if !r.has_unflushed() {
                    durable = r.commit_count();
                }
            }
            Err(Error::Storage(_)) => break,
            Err(e) => panic!("unexpected error {e:?}"),
        }
    }
    Run {
        log,
        snap,
        hashes,
        durable,
    }
}

#[test]
fn every_crash_point_keeps_large_values_whole() {
    let _s = serial();
    for_seeds("large crash", 0..6, |seed| {
        let flushes = workload(seed, None).log.flush_count();
        for cut in 0..=flushes {
            let run = workload(seed, Some(cut));
            for keep in 0..=run.log.unflushed_writes() {
                let torn = match run.log.unflushed_write_len(keep) {
                    Some(len) if len > 1 => vec![None, Some(len / 2), Some(len - 1)],
                    _ => vec![None],
                };
                for t in torn {
                    let what = format!("seed {seed} cut {cut} keep {keep} torn {t:?}");
                    let img = run.log.crash_image(keep, t);
                    let snaps = [run.snap.durable_bytes(), run.snap.live_bytes()];
                    for s in snaps {
                        let mut r = Repo::open(
                            MemStorage::from_bytes(img.clone()),
                            Some(MemStorage::from_bytes(s)),
                            trusted(1),
                        )
                        .unwrap_or_else(|e| panic!("{what}: reopen failed: {e}"));
                        let n = r.commit_count();
                        assert!(n >= run.durable, "{what}: {n} < {}", run.durable);
                        assert_eq!(r.state_hash().unwrap(), run.hashes[n], "{what}");
                        r.verify().unwrap_or_else(|e| panic!("{what}: {e}"));
                    }
                }
            }
        }
    });
}

// ----- memory ---------------------------------------------------------------------------------

/// A repository holding `IBEX_LARGE_MB` (default 256; 64 in an unoptimized build) of 200 KB
/// values is written, reopened from its log and from its snapshot, and one value read: the
/// engine's live heap stays under 8 MiB + 512 bytes per item, whatever the values' bytes.
#[test]
fn the_heap_stays_small_with_far_more_large_bytes_than_the_bound() {
    let _s = serial();
    let mb: usize = std::env::var("IBEX_LARGE_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if cfg!(debug_assertions) { 64 } else { 256 });
    let size = 200_000;
    let n = (mb << 20) / size;
    let dir = std::env::temp_dir().join(format!("ibex-large-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let open = |snapshot: bool| {
        if !snapshot {
            let _ = std::fs::remove_file(dir.join("snap"));
        }
        let log = FileStorage::open(dir.join("log")).unwrap();
        let snap = FileStorage::open(dir.join("snap")).unwrap();
        Repo::open(log, Some(snap), trusted(1)).unwrap()
    };
    let bound = (8 << 20) + 512 * n;
    let base = LIVE.load(Ordering::Relaxed);
    let mut r = open(false);
    for batch in 0..n.div_ceil(20) {
        let mut t = Txn::new();
        for i in batch * 20..((batch + 1) * 20).min(n) {
            t.put(&format!("users/{i:06}"), user(i as u64, size))
                .unwrap();
        }
        r.commit(t).unwrap();
        r.flush().unwrap();
    }
    let written = LIVE.load(Ordering::Relaxed).saturating_sub(base);
    eprintln!("{n} values of {size} B ({mb} MiB): heap after writing {written} B");
    assert!(written < bound, "after writing: {written} B > {bound} B");
    drop(r.close().unwrap());

    // From the log alone (no snapshot file).
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let mut r = open(false);
    let key = format!("users/{:06}", n / 2);
    assert_eq!(r.get(&key).unwrap(), Some(&user((n / 2) as u64, size)));
    let live = LIVE.load(Ordering::Relaxed).saturating_sub(base);
    let peak = PEAK.load(Ordering::Relaxed).saturating_sub(base);
    eprintln!("reopened from the log, one read: heap {live} B (peak during open {peak} B)");
    assert!(live < bound, "from the log: {live} B > {bound} B");
    // The scan holds one 16 MiB window of the log, not the log.
    assert!(peak < 24 << 20, "open from the log: peak {peak} B");
    // The snapshot streams the values out of the log.
    PEAK.store(LIVE.load(Ordering::Relaxed), Ordering::Relaxed);
    let before = LIVE.load(Ordering::Relaxed);
    r.write_snapshot().unwrap();
    let peak = PEAK.load(Ordering::Relaxed).saturating_sub(before);
    eprintln!("snapshot written: peak {peak} B above the open repository");
    assert!(peak < bound, "snapshot: peak {peak} B > {bound} B");
    assert!(!r.open_report().from_snapshot);
    drop(r.close().unwrap());

    // The snapshot holds where the values are, not the values (§6.6): ~40 B per item.
    let snap_bytes = std::fs::metadata(dir.join("snap")).unwrap().len() as usize;
    eprintln!("snapshot file: {snap_bytes} B for {n} items");
    assert!(snap_bytes < 64 * 1024 + 200 * n, "snapshot {snap_bytes} B");

    // From the snapshot: one block is read.
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let mut r = open(true);
    assert!(r.open_report().from_snapshot);
    assert_eq!(r.get(&key).unwrap(), Some(&user((n / 2) as u64, size)));
    let live = LIVE.load(Ordering::Relaxed).saturating_sub(base);
    let peak = PEAK.load(Ordering::Relaxed).saturating_sub(base);
    eprintln!("reopened from the snapshot, one read: heap {live} B, peak {peak} B");
    assert!(peak < bound, "from the snapshot: peak {peak} B > {bound} B");
    // Every item read: the blocks are loaded, their values stay in the log.
    for i in 0..n {
        let k = format!("users/{i:06}");
        assert_eq!(r.get(&k).unwrap(), Some(&user(i as u64, size)), "{k}");
    }
    let live = LIVE.load(Ordering::Relaxed).saturating_sub(base);
    eprintln!("every item read after the snapshot's open: heap {live} B");
    assert!(live < bound, "after reading all: {live} B > {bound} B");
    drop(r);
    std::fs::remove_dir_all(&dir).unwrap();
}

// ----- an open from a log longer than a scan window -------------------------------------------

fn long_log() -> (Vec<u8>, [u8; 32], usize) {
    let mut r = Repo::open(MemStorage::new(), None, trusted(1)).unwrap();
    // 56 commits of 1 MB: more than three scan windows.
    for c in 0..56u64 {
        let mut t = Txn::new();
        for i in 0..5 {
            let k = c * 5 + i;
            t.put(&format!("users/{k:04}"), user(k, 200_000)).unwrap();
        }
        r.commit(t).unwrap();
        r.flush().unwrap();
    }
    let hash = r.state_hash().unwrap();
    let n = r.commit_count();
    let (log, _) = r.close().unwrap();
    (log.bytes().to_vec(), hash, n)
}

#[test]
fn a_log_longer_than_a_scan_window_opens_a_window_at_a_time() {
    let _s = serial();
    let (bytes, hash, n) = long_log();
    assert!(bytes.len() > 3 * (16 << 20));
    let storage = MemStorage::from_bytes(bytes.clone());
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let mut r = Repo::open(storage, None, trusted(1)).unwrap();
    let peak = PEAK.load(Ordering::Relaxed).saturating_sub(base);
    eprintln!("open of a {} B log: peak {peak} B", bytes.len());
    assert!(
        peak < (16 << 20) + (4 << 20),
        "peak {peak} B: one scan window and a commit"
    );
    assert_eq!(r.commit_count(), n);
    assert_eq!(r.get("users/0123").unwrap(), Some(&user(123, 200_000)));
    assert_eq!(r.state_hash().unwrap(), hash);
    r.verify().unwrap();

    // A torn tail past the first windows is cut off.
    let mut torn = bytes.clone();
    torn.truncate(bytes.len() - 1000);
    let mut r = Repo::open(MemStorage::from_bytes(torn), None, trusted(1)).unwrap();
    assert_eq!(r.commit_count(), n - 1);
    assert!(r.open_report().truncated_tail.is_some());
    assert_eq!(r.get("users/0001").unwrap(), Some(&user(1, 200_000)));
    r.verify().unwrap();

    // Damage in the middle, in the second window: strict refuses, repair pads it over.
    let mut bad = bytes.clone();
    let mid = 20 << 20;
    bad[mid] ^= 0x55;
    match Repo::open(MemStorage::from_bytes(bad.clone()), None, trusted(1)) {
        Err(Error::Corrupt { offset, .. }) => assert!(offset < mid as u64 && offset > 16 << 20),
        Err(e) => panic!("expected CorruptError, got {e}"),
        Ok(_) => panic!("damage in the middle was not noticed"),
    }
    let mut o = trusted(1);
    o.recovery = ibexdb::Recovery::Repair;
    let r = Repo::open(MemStorage::from_bytes(bad), None, o).unwrap();
    assert_eq!(r.open_report().repaired.len(), 1);
    // The lost commit's descendants wait for it: only the commits before it are applied.
    assert!(r.commit_count() < n && r.commit_count() > 10);
}

#[test]
fn many_commits_before_one_flush_do_not_pile_up_in_the_write_buffer() {
    let _s = serial();
    let path = std::env::temp_dir().join(format!("ibex-buffered-{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let mut r = Repo::open(FileStorage::open(&path).unwrap(), None, trusted(1)).unwrap();
    // 100 commits of 1 MB, no flush asked: the commits flush the log past 32 MiB buffered.
    let base = LIVE.load(Ordering::Relaxed);
    let mut peak_engine = 0usize;
    for c in 0..100u64 {
        let mut t = Txn::new();
        for i in 0..5 {
            let k = c * 5 + i;
            t.put(&format!("users/{k:04}"), user(k, 200_000)).unwrap();
        }
        r.commit(t).unwrap();
        peak_engine = peak_engine.max(LIVE.load(Ordering::Relaxed).saturating_sub(base));
    }
    eprintln!("100 MB committed without a flush: engine heap peak {peak_engine} B");
    assert!(peak_engine < (64 << 20) + (16 << 20), "{peak_engine} B");
    r.flush().unwrap();
    assert_eq!(r.get("users/0007").unwrap(), Some(&user(7, 200_000)));
    drop(r);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn a_commit_with_an_attachment_releases_the_large_values_after_it() {
    let _s = serial();
    let mut r = Repo::open(MemStorage::new(), None, trusted(1)).unwrap();
    put(&mut r, "users/a", user(1, 100));
    let mut h = ibexdb::Sha256Stream::new();
    h.update(b"photo");
    let a = ibexdb::Attachment {
        size: h.len(),
        hash: h.finish(),
        media_type: "image/png".into(),
    };
    // One commit: an attach on users/a (a field op the walk steps over), then a large put on
    // users/b after it in key order.
    let mut t = Txn::new();
    t.attach("users/a", "photo", &a).unwrap();
    t.put("users/b", user(2, 30_000)).unwrap();
    r.commit(t).unwrap();
    assert_eq!(far_count(&r), 1);
    assert_eq!(r.get("users/b").unwrap(), Some(&user(2, 30_000)));
    r.verify().unwrap();
}
