//! Opening from a snapshot reads only its meta section; items load from the snapshot's blocks
//! when first needed (docs/design.md §8). These tests hold a repository opened that way
//! against one that replayed the whole log, through random reads, writes, queries and
//! reopens, and damage the snapshot's blocks after open.

mod common;
use common::*;
use ibexdb::testing::FaultStorage;
use ibexdb::{AggregateQuery, Error, Filter, MemStorage, Query, Repo, Txn};

const COLLECTIONS: [&str; 3] = ["items", "notes", "zeta"];
/// Enough items that every collection spans many blocks.
const N: u64 = 3000;

fn key(rng: &mut Rng) -> String {
    let c = COLLECTIONS[rng.below(3) as usize];
    // Keys beyond N fall in the gaps between and after the stored ids.
    format!("{c}/{:05}", rng.below(N + N / 4) * 2 + rng.below(2))
}

/// A repository of `N` items per collection, snapshotted, with a few writes after the
/// snapshot (a log tail of `tail` transactions). Returns its log and snapshot storages.
fn build(seed: u64, tail: usize) -> (Shared, Shared) {
    let (log, snap) = (Shared::default(), Shared::default());
    let mut r = Repo::open(log.clone(), Some(snap.clone()), signed(1)).unwrap();
    for c in COLLECTIONS {
        for chunk in 0..N / 500 {
            let mut t = Txn::new();
            for i in chunk * 500..(chunk + 1) * 500 {
                t.put(&format!("{c}/{:05}", i * 2), item(i)).unwrap();
            }
            r.commit(t).unwrap();
        }
    }
    r.seal().unwrap();
    assert!(r.write_snapshot().unwrap());
    let mut rng = Rng(seed);
    for _ in 0..tail {
        let t = random_txn(&mut rng, &mut r);
        r.commit(t).unwrap();
    }
    r.seal().unwrap();
    r.close().unwrap();
    (log, snap)
}

fn random_txn(rng: &mut Rng, r: &mut Repo<Shared>) -> Txn {
    let mut t = Txn::new();
    for _ in 0..1 + rng.below(3) {
        let k = key(rng);
        let exists = r.get(&k).unwrap().is_some();
        let _ = match rng.below(4) {
            0 => t.delete(&k),
            1 if exists => t.update(&k, ibexdb::map! {"count" => 7i64}.as_map()),
            2 if exists => t.set_add(&k, "tags", ["added"]),
            _ => t.put(&k, item(rng.below(1000))),
        }
        .unwrap();
    }
    t
}

/// Open the same log twice: `lazy` from the snapshot, `full` by replaying the whole log.
fn open_both(log: &Shared, snap: &Shared) -> (Repo<Shared>, Repo<Shared>) {
    let lazy = Repo::open(log.clone(), Some(snap.clone()), signed(1)).unwrap();
    let full_log = Shared::default();
    full_log
        .bytes
        .lock()
        .unwrap()
        .clone_from(&log.bytes.lock().unwrap());
    let full = Repo::open(full_log, None, signed(1)).unwrap();
    (lazy, full)
}

fn query(c: &str, rng: &mut Rng) -> Query {
    let j = match rng.below(3) {
        0 => {
            serde_json::json!({"collection": c, "where": {"count": {"gte": rng.below(1000)}}, "limit": 20})
        }
        1 => {
            serde_json::json!({"collection": c, "sort": [{"field": "count", "desc": true}], "limit": 5})
        }
        _ => serde_json::json!({"collection": c}),
    };
    Query::from_json(&j).unwrap()
}

/// Apply the same random operation to both and compare what they answer.
fn same_step(rng: &mut Rng, lazy: &mut Repo<Shared>, full: &mut Repo<Shared>, seed: u64) {
    let c = COLLECTIONS[rng.below(3) as usize];
    match rng.below(6) {
        0 | 1 => {
            let k = key(rng);
            let a = lazy.get(&k).unwrap().cloned();
            assert_eq!(a, full.get(&k).unwrap().cloned(), "seed {seed}: get {k}");
        }
        2 => {
            let t = random_txn(rng, full);
            let t2 = t.clone();
            full.commit(t).unwrap();
            lazy.commit(t2).unwrap();
        }
        3 => {
            let q = query(c, rng);
            let (a, b) = (lazy.query(&q).unwrap(), full.query(&q).unwrap());
            assert_eq!(a.rows, b.rows, "seed {seed}: query {q:?}");
        }
        4 => {
            assert_eq!(lazy.count(c, None).unwrap(), full.count(c, None).unwrap());
            assert_eq!(
                lazy.keys(c).unwrap(),
                full.keys(c).unwrap(),
                "seed {seed}: keys"
            );
            let f = Filter::from_json(&serde_json::json!({"count": {"lt": 500}})).unwrap();
            assert_eq!(
                lazy.count(c, Some(&f)).unwrap(),
                full.count(c, Some(&f)).unwrap()
            );
        }
        _ => {
            let k = key(rng);
            let (a, b) = (lazy.history(&k).unwrap(), full.history(&k).unwrap());
            assert_eq!(a.len(), b.len(), "seed {seed}: history {k}");
            let q = serde_json::json!({"collection": c, "aggregates": {"n": {"count": "count"}, "s": {"sum": "count"}}});
            let q = AggregateQuery::from_json(&q).unwrap();
            assert_eq!(lazy.aggregate(&q).unwrap(), full.aggregate(&q).unwrap());
        }
    }
}

#[test]
fn open_reads_only_the_meta_section_and_a_read_one_block() {
    let (log, snap) = build(1, 0);
    let before = snap.read_bytes();
    let (mut lazy, mut full) = open_both(&log, &snap);
    assert!(lazy.open_report().from_snapshot);
    let at_open = snap.read_bytes() - before;
    let size = snap.len_now() as u64;
    assert!(
        at_open * 10 < size,
        "open read {at_open} of the snapshot's {size} bytes"
    );
    assert_eq!(lazy.item_count(), full.item_count());
    assert!(lazy.state().has_cold());
    let k = "notes/01000";
    assert_eq!(lazy.get(k).unwrap().cloned(), full.get(k).unwrap().cloned());
    let one = snap.read_bytes() - before - at_open;
    assert!(
        one <= 8 << 10,
        "a read loaded {one} bytes (one ~4 KiB block)"
    );
    // A scan loads its collection, not the others.
    let q = Query::from_json(&serde_json::json!({"collection": "items"})).unwrap();
    assert_eq!(lazy.query(&q).unwrap().rows, full.query(&q).unwrap().rows);
    assert!(lazy.state().collection("items").unwrap().cold().is_empty());
    assert!(!lazy.state().collection("zeta").unwrap().cold().is_empty());
    assert_eq!(lazy.state_hash().unwrap(), full.state_hash().unwrap());
    assert!(!lazy.state().has_cold());
    lazy.verify().unwrap();
}

#[test]
fn a_lazily_opened_repository_answers_like_a_full_replay() {
    for_seeds("lazy_open", 0..6, |seed| {
        let (log, snap) = build(seed, 20);
        let (mut lazy, mut full) = open_both(&log, &snap);
        assert!(lazy.open_report().from_snapshot);
        let mut rng = Rng(seed ^ 0xA5A5);
        for step in 0..200 {
            same_step(&mut rng, &mut lazy, &mut full, seed);
            if step % 67 == 66 {
                // A snapshot in the middle (appended while the blocks it keeps, cold or loaded
                // and unchanged, are half of the file), then a lazy reopen.
                lazy.seal().unwrap();
                lazy.write_snapshot().unwrap();
                let (l, s) = lazy.close().unwrap();
                lazy = Repo::open(l, s, signed(1)).unwrap();
                assert!(lazy.open_report().from_snapshot);
                if seed % 2 == 0 {
                    lazy.load_all().unwrap();
                    assert!(lazy.open_report().from_snapshot, "seed {seed}: blocks load");
                }
            }
        }
        assert_eq!(
            lazy.state_hash().unwrap(),
            full.state_hash().unwrap(),
            "seed {seed}"
        );
        lazy.verify().unwrap();
        // Reopen lazily once more, over the tail written since the last snapshot.
        lazy.seal().unwrap();
        let hash = full.state_hash().unwrap();
        let (log2, snap2) = lazy.close().unwrap();
        let mut again = Repo::open(log2, snap2, signed(1)).unwrap();
        assert!(again.open_report().from_snapshot);
        assert_eq!(again.state_hash().unwrap(), hash, "seed {seed}: reopen");
        assert!(
            again.open_report().from_snapshot,
            "seed {seed}: loaded from the file"
        );
    });
}

#[test]
fn keys_after_open_read_the_ids_in_the_blocks_without_loading_them() {
    let (log, snap) = build(11, 20);
    let (mut lazy, mut full) = open_both(&log, &snap);
    let cold = |r: &Repo<Shared>| r.state().collection("notes").unwrap().cold().len();
    let blocks = cold(&lazy);
    assert_eq!(lazy.keys("notes").unwrap(), full.keys("notes").unwrap());
    // The log's tail loaded a few blocks; keys loaded none.
    assert_eq!(cold(&lazy), blocks);
    assert!(blocks > 10);
    // Loaded items (written or read) and cold ones together, deletions included.
    let mut t = Txn::new();
    t.delete("notes/00100").unwrap();
    t.put("notes/00101", item(7)).unwrap();
    t.put("notes/99999", item(8)).unwrap();
    lazy.commit(t.clone()).unwrap();
    full.commit(t).unwrap();
    lazy.get("notes/04000").unwrap();
    let keys = lazy.keys("notes").unwrap();
    assert_eq!(keys, full.keys("notes").unwrap());
    let has = |id: &str| keys.iter().any(|k| k == id);
    assert!(
        has("00101") && !has("00100") && has("99999"),
        "{:?}",
        &keys[..5]
    );
    assert!(cold(&lazy) > 0);
    // A block damaged after open: keys falls back to the log and still answers.
    let zeta = lazy.state().collection("zeta").unwrap().cold();
    let at = zeta.iter().nth(2).unwrap().offset as usize + 10;
    snap.flip(at);
    assert_eq!(lazy.keys("zeta").unwrap(), full.keys("zeta").unwrap());
    assert!(!lazy.state().has_cold(), "rebuilt from the log");
}

#[test]
fn reads_of_every_key_in_random_order_load_block_by_block() {
    for_seeds("lazy_every_key", 0..3, |seed| {
        let (log, snap) = build(seed, 0);
        let (mut lazy, mut full) = open_both(&log, &snap);
        let mut keys: Vec<String> = COLLECTIONS
            .iter()
            .flat_map(|c| (0..N).map(move |i| format!("{c}/{:05}", i * 2)))
            .collect();
        let mut rng = Rng(seed);
        for i in (1..keys.len()).rev() {
            keys.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let before = snap.read_bytes();
        let cold = |r: &Repo<Shared>, c: &str| r.state().collection(c).unwrap().cold().len();
        let blocks: usize = COLLECTIONS.iter().map(|c| cold(&lazy, c)).sum();
        assert!(blocks > 3 * 20, "seed {seed}: {blocks} blocks");
        for k in &keys {
            let a = lazy.get(k).unwrap().cloned();
            assert!(a.is_some(), "seed {seed}: {k}");
            assert_eq!(a, full.get(k).unwrap().cloned(), "seed {seed}: {k}");
        }
        // Every block was read once (together no more than the file).
        assert!(COLLECTIONS.iter().all(|c| cold(&lazy, c) == 0));
        let read = snap.read_bytes() - before;
        assert!(
            read <= snap.len_now() as u64,
            "seed {seed}: read {read} bytes"
        );
        assert_eq!(lazy.state_hash().unwrap(), full.state_hash().unwrap());
        let again = snap.read_bytes();
        for k in keys.iter().take(100) {
            lazy.get(k).unwrap().unwrap();
        }
        assert_eq!(snap.read_bytes(), again, "seed {seed}: blocks stay loaded");
    });
}

#[test]
fn a_block_damaged_after_open_falls_back_to_the_log() {
    let (log, snap) = build(7, 20);
    let (mut lazy, mut full) = open_both(&log, &snap);
    // Damage the middle of the item blocks: the reads that need them rebuild from the log.
    let len = snap.len_now();
    for at in [len / 3, len / 2] {
        snap.flip(at);
    }
    let mut rng = Rng(7);
    for _ in 0..60 {
        same_step(&mut rng, &mut lazy, &mut full, 7);
    }
    assert_eq!(lazy.state_hash().unwrap(), full.state_hash().unwrap());
    assert!(!lazy.state().has_cold());
    assert!(
        !lazy.open_report().from_snapshot,
        "the state was rebuilt from the log"
    );
    // The damaged file is what verify() reports; a fresh snapshot replaces it.
    assert!(lazy.verify().is_err());
    lazy.write_snapshot().unwrap();
    lazy.verify().unwrap();
}

#[test]
fn a_block_damaged_before_open_is_found_by_the_tail_replay_or_a_read() {
    let (log, snap) = build(8, 20);
    let len = snap.len_now();
    snap.flip(len / 2);
    let (mut lazy, mut full) = open_both(&log, &snap);
    let mut rng = Rng(8);
    for _ in 0..60 {
        same_step(&mut rng, &mut lazy, &mut full, 8);
    }
    assert_eq!(lazy.state_hash().unwrap(), full.state_hash().unwrap());
}

#[test]
fn a_snapshot_of_a_few_loaded_blocks_is_appended_and_reopens() {
    let (log, snap) = build(9, 0);
    let size = snap.len_now();
    let (mut lazy, mut full) = open_both(&log, &snap);
    for i in 0..5u64 {
        let mut t = Txn::new();
        t.put(&format!("notes/{:05}", i * 997), item(i)).unwrap();
        lazy.commit(t.clone()).unwrap();
        full.commit(t).unwrap();
    }
    lazy.seal().unwrap();
    lazy.write_snapshot().unwrap();
    // Appended: the loaded blocks (~4 KiB each here; a key between two blocks loads none) and a
    // meta section (~8 KiB here). A rewrite would have grown the file by the five items' few
    // hundred bytes.
    let grown = snap.len_now() - size;
    assert!(
        grown > 16 << 10 && grown < 64 << 10,
        "appending 5 blocks grew the file by {grown} of {size} bytes"
    );
    lazy.verify().unwrap();
    let hash = full.state_hash().unwrap();
    let (log2, snap2) = lazy.close().unwrap();
    let mut again = Repo::open(log2, snap2, signed(1)).unwrap();
    assert!(again.open_report().from_snapshot);
    assert_eq!(again.state_hash().unwrap(), hash);
    again.verify().unwrap();
    // Everything loaded and unchanged: every block is clean, the next snapshot appends only a
    // meta section that lists them where they are.
    let before = snap.len_now();
    again.write_snapshot().unwrap();
    let meta = snap.len_now() - before;
    assert!(meta < 16 << 10, "an unchanged state appended {meta} bytes");
    again.verify().unwrap();
    // Once what no directory lists is more than half of the file, it is rewritten.
    let mut n = 0;
    while snap.len_now() >= before {
        let mut t = Txn::new();
        t.put(&format!("zeta/{:05}", (n * 7919) % 6000), item(n))
            .unwrap();
        again.commit(t).unwrap();
        again.write_snapshot().unwrap();
        n += 1;
        assert!(n < 400, "never rewritten: {} bytes", snap.len_now());
    }
    assert!(
        snap.len_now() < size + grown,
        "{} vs {size} + {grown}",
        snap.len_now()
    );
    let hash = again.state_hash().unwrap();
    let (log3, snap3) = again.close().unwrap();
    let mut third = Repo::open(log3, snap3, signed(1)).unwrap();
    assert_eq!(third.state_hash().unwrap(), hash);
    assert!(
        third.open_report().from_snapshot,
        "the blocks loaded from the rewritten file"
    );
    third.verify().unwrap();
}

#[test]
fn a_snapshot_after_reads_writes_only_the_changed_blocks() {
    let (log, snap) = build(12, 0);
    let size = snap.len_now();
    let (mut lazy, mut full) = open_both(&log, &snap);
    // Read every item: every block loads, and stays clean.
    lazy.load_all().unwrap();
    assert!(!lazy.state().has_cold());
    for c in COLLECTIONS {
        let q = Query::from_json(&serde_json::json!({"collection": c})).unwrap();
        assert_eq!(lazy.query(&q).unwrap().rows, full.query(&q).unwrap().rows);
    }
    // One update and one new key inside a block's range: two blocks change.
    let mut t = Txn::new();
    t.update("items/01000", ibexdb::map! {"count" => 7i64}.as_map())
        .unwrap();
    t.put("notes/02001", item(5)).unwrap();
    lazy.commit(t.clone()).unwrap();
    full.commit(t).unwrap();
    lazy.seal().unwrap();
    lazy.write_snapshot().unwrap();
    // Appended: two blocks (~4 KiB each) and a meta section (~8 KiB here), not the ~9,000
    // items a rewrite would write.
    let grown = snap.len_now() - size;
    assert!(
        grown < 32 << 10,
        "two changed blocks grew the file by {grown} of {size} bytes"
    );
    let hash = full.state_hash().unwrap();
    assert_eq!(lazy.state_hash().unwrap(), hash);
    lazy.verify().unwrap();
    let (log2, snap2) = lazy.close().unwrap();
    let mut again = Repo::open(log2, snap2, signed(1)).unwrap();
    assert!(again.open_report().from_snapshot);
    assert_eq!(
        again.get("items/01000").unwrap().unwrap().get("count"),
        Some(&ibexdb::Value::from(7i64))
    );
    assert!(again.get("notes/02001").unwrap().is_some());
    assert_eq!(again.state_hash().unwrap(), hash);
    assert!(
        again.open_report().from_snapshot,
        "every block loaded from the file"
    );
    again.verify().unwrap();
}

/// `build`'s files copied into fault-injecting storages, opened lazily.
fn faulty_open(seed: u64) -> (Repo<FaultStorage>, FaultStorage, FaultStorage) {
    let (log, snap) = build(seed, 0);
    let log = FaultStorage::from_bytes(log.bytes.lock().unwrap().clone());
    let snap = FaultStorage::from_bytes(snap.bytes.lock().unwrap().clone());
    let r = Repo::open(log.clone(), Some(snap.clone()), signed(1)).unwrap();
    (r, log, snap)
}

/// Seal and flush `r`; returns it, its storages and the hash a full replay of its log gives.
fn sealed_with_hash(
    mut r: Repo<FaultStorage>,
    log: FaultStorage,
    snap: FaultStorage,
) -> (Repo<FaultStorage>, FaultStorage, FaultStorage, [u8; 32]) {
    r.seal().unwrap();
    r.flush().unwrap();
    let mut copy = Repo::open(MemStorage::from_bytes(log.live_bytes()), None, signed(1)).unwrap();
    let hash = copy.state_hash().unwrap();
    (r, log, snap, hash)
}

/// A lazily opened repository over fault-injecting copies of `build`'s files, with five
/// writes (flushed, sealed) that load a few blocks; returns it, its storages and its hash.
fn faulty_with_writes(seed: u64) -> (Repo<FaultStorage>, FaultStorage, FaultStorage, [u8; 32]) {
    let (mut r, log, snap) = faulty_open(seed);
    assert!(r.open_report().from_snapshot);
    for i in 0..5u64 {
        let mut t = Txn::new();
        t.put(&format!("items/{:05}", i * 1202), item(i)).unwrap();
        r.commit(t).unwrap();
    }
    sealed_with_hash(r, log, snap)
}

/// Every prefix of the snapshot's unflushed writes (and torn ones) over the durable log reopens
/// to `hash` and verifies.
fn every_crash_image_reopens(
    log: &FaultStorage,
    snap: &FaultStorage,
    writes: usize,
    hash: [u8; 32],
) {
    for keep in 0..=writes {
        let torn = match snap.unflushed_write_len(keep) {
            Some(len) if len > 0 => vec![None, Some(1), Some(len / 2), Some(len - 1)],
            _ => vec![None],
        };
        for t in torn {
            let img = snap.crash_image(keep, t);
            let mut again = Repo::open(
                MemStorage::from_bytes(log.durable_bytes()),
                Some(MemStorage::from_bytes(img)),
                signed(1),
            )
            .unwrap();
            let what = format!("keep {keep} of {writes}, torn {t:?}");
            assert_eq!(again.state_hash().unwrap(), hash, "{what}");
            again.verify().unwrap_or_else(|e| panic!("{what}: {e}"));
        }
    }
}

#[test]
fn an_appended_snapshot_cut_anywhere_leaves_a_usable_or_ignored_file() {
    let (mut r, log, snap, hash) = faulty_with_writes(10);
    // The snapshot's flush fails: every prefix of its writes, and torn writes, are images.
    snap.fail_flush_after(0);
    assert!(matches!(r.write_snapshot(), Err(Error::Storage(_))));
    let writes = snap.unflushed_writes();
    assert!(writes >= 1);
    every_crash_image_reopens(&log, &snap, writes, hash);
}

#[test]
fn a_full_disk_during_an_append_loses_nothing() {
    let (mut r, _log, snap, hash) = faulty_with_writes(11);
    snap.set_quota(Some(snap.live_bytes().len() as u64 + 100));
    let e = r.write_snapshot().unwrap_err();
    assert!(matches!(e, Error::Storage(_)), "{e:?}");
    // The cold blocks are where they were: reads and writes go on.
    let k = "zeta/00500";
    assert!(r.get(k).unwrap().is_some());
    snap.set_quota(None);
    r.write_snapshot().unwrap();
    assert_eq!(r.state_hash().unwrap(), hash);
    r.verify().unwrap();
}

#[test]
fn an_unfiltered_aggregate_after_open_reads_its_field_in_the_blocks_without_loading_them() {
    let (log, snap) = build(3, 0);
    let (mut lazy, mut full) = open_both(&log, &snap);
    let q = serde_json::json!({"collection": "notes", "aggregates": {
        "n": {"count": "count"}, "s": {"sum": "count"}, "lo": {"min": "count"},
        "hi": {"max": "title"}, "a": {"avg": "count"}, "all": {"count": true}}});
    let q = AggregateQuery::from_json(&q).unwrap();
    let blocks = lazy.state().collection("notes").unwrap().cold().len();
    assert_eq!(lazy.aggregate(&q).unwrap(), full.aggregate(&q).unwrap());
    let cold = lazy.state().collection("notes").unwrap().cold().len();
    assert_eq!(cold, blocks, "no block was loaded");
    // Writes (the smallest value deleted, a new largest) keep the aggregates right.
    let mut t = Txn::new();
    t.delete("notes/00000").unwrap();
    t.put("notes/99999", item(5000)).unwrap();
    t.put("notes/00001", ibexdb::map! {"title" => "zzz"}.as_map())
        .unwrap();
    let t2 = t.clone();
    lazy.commit(t).unwrap();
    full.commit(t2).unwrap();
    assert_eq!(lazy.aggregate(&q).unwrap(), full.aggregate(&q).unwrap());
    lazy.verify().unwrap();
}

/// A lazily opened repository over fault-injecting copies of `build`'s files in which most
/// blocks changed: updates of the first 70% of every collection's items (the other 30% stay
/// cold). Its next snapshot compacts the file. Returns it, its storages and its hash.
fn mostly_changed(seed: u64) -> (Repo<FaultStorage>, FaultStorage, FaultStorage, [u8; 32]) {
    let (mut r, log, snap) = faulty_open(seed);
    for c in COLLECTIONS {
        let mut t = Txn::new();
        for i in 0..N * 7 / 10 {
            let patch = ibexdb::map! {"count" => (i + seed) as i64};
            t.update(&format!("{c}/{:05}", i * 2), patch.as_map())
                .unwrap();
        }
        r.commit(t).unwrap();
    }
    sealed_with_hash(r, log, snap)
}

#[test]
fn a_snapshot_with_most_blocks_changed_compacts_the_file_and_moves_the_cold_blocks() {
    let (mut r, log, snap, hash) = mostly_changed(13);
    let before = snap.live_bytes().len();
    let cold = r.state().collection("notes").unwrap().cold().len();
    assert!(cold > 0);
    r.write_snapshot().unwrap();
    // Compacted, not rewritten: the cold blocks are still cold, and moved.
    assert_eq!(r.state().collection("notes").unwrap().cold().len(), cold);
    assert!(
        snap.live_bytes().len() < before + before / 2,
        "{} vs {before}",
        snap.live_bytes().len()
    );
    // The moved cold blocks load from their new places (a failed load would rebuild from the log).
    r.load_all().unwrap();
    assert!(r.open_report().from_snapshot, "the moved blocks load");
    assert_eq!(r.state_hash().unwrap(), hash);
    r.verify().unwrap();
    // And a reopen reads the compacted file.
    let mut again = Repo::open(
        MemStorage::from_bytes(log.live_bytes()),
        Some(MemStorage::from_bytes(snap.live_bytes())),
        signed(1),
    )
    .unwrap();
    assert!(again.open_report().from_snapshot);
    assert_eq!(again.state_hash().unwrap(), hash);
    assert!(
        again.open_report().from_snapshot,
        "every block loads from the compacted file"
    );
    again.verify().unwrap();
}

#[test]
fn a_compaction_cut_anywhere_leaves_a_usable_or_ignored_file() {
    let (mut r, log, snap, hash) = mostly_changed(14);
    snap.fail_flush_after(0);
    assert!(matches!(r.write_snapshot(), Err(Error::Storage(_))));
    let writes = snap.unflushed_writes();
    assert!(writes >= 3, "footer, moves, meta: {writes} writes");
    every_crash_image_reopens(&log, &snap, writes, hash);
    // The repository that saw the failure goes on.
    snap.clear_faults();
    assert_eq!(r.state_hash().unwrap(), hash);
    r.write_snapshot().unwrap();
    r.verify().unwrap();
}

#[test]
fn a_compaction_whose_moves_fail_rebuilds_from_the_log_and_loses_nothing() {
    let (mut r, _log, snap, hash) = mostly_changed(15);
    // The footer is cleared, then the first move fails.
    snap.fail_write_after(1);
    assert!(matches!(r.write_snapshot(), Err(Error::Storage(_))));
    snap.clear_faults();
    assert_eq!(r.state_hash().unwrap(), hash);
    r.write_snapshot().unwrap();
    r.verify().unwrap();
}
