//! Secondary indexes persisted with the snapshot (docs/design.md §8, "Indexes"): after an
//! open, a query restores its collection's indexes from the snapshot and loads only the blocks
//! of its rows. These tests hold such a repository against one that replayed the whole log,
//! through random queries, writes, snapshots (appended and rewritten) and reopens, and damage
//! or forge the persisted index.

mod common;
use common::*;
use ibexdb::testing::FaultStorage;
use ibexdb::{AggregateQuery, Error, MemStorage, Query, Repo, Schema, Txn};

const C: &str = "items";
/// Enough items for many item blocks and several index blocks.
const N: u64 = 6000;

fn schema() -> Schema {
    Schema::from_json(C, &serde_json::json!({"indexes": ["count", "tags"]})).unwrap()
}

fn open(log: &Shared, snap: Option<&Shared>) -> Repo<Shared> {
    let mut r = Repo::open(log.clone(), snap.cloned(), signed(1)).unwrap();
    r.define_schema(C, schema()).unwrap();
    r
}

fn q(j: serde_json::Value) -> Query {
    Query::from_json(&j).unwrap()
}

/// A repository of `N` items (ids `items/00000`, `items/00002`, …, count = i) whose indexes
/// were built and maintained, snapshotted.
fn build() -> (Shared, Shared) {
    let (log, snap) = (Shared::default(), Shared::default());
    let mut r = open(&log, Some(&snap));
    // Build the declared indexes on the empty collection (as the benchmark does): from then
    // on every write maintains them, and the snapshot holds them.
    let first = serde_json::json!({"collection": C, "aggregates": {"m": {"min": "count"}}});
    r.aggregate(&AggregateQuery::from_json(&first).unwrap())
        .unwrap();
    for chunk in 0..N / 500 {
        let mut t = Txn::new();
        for i in chunk * 500..(chunk + 1) * 500 {
            t.put(&format!("{C}/{:05}", i * 2), item(i)).unwrap();
        }
        r.commit(t).unwrap();
    }
    r.seal().unwrap();
    assert!(r.write_snapshot().unwrap());
    r.close().unwrap();
    (log, snap)
}

/// A copy of `log` replayed whole (no snapshot): the reference.
fn full_replay(log: &Shared) -> Repo<Shared> {
    let copy = Shared::default();
    copy.bytes
        .lock()
        .unwrap()
        .clone_from(&log.bytes.lock().unwrap());
    open(&copy, None)
}

#[test]
fn an_indexed_query_after_open_reads_the_index_and_the_blocks_of_its_rows() {
    let (log, snap) = build();
    let size = snap.len_now() as u64;
    let mut full = full_replay(&log);
    let before = snap.read_bytes();
    let mut lazy = open(&log, Some(&snap));
    let blocks = lazy.state().collection(C).unwrap().cold().len();
    let range = q(
        serde_json::json!({"collection": C, "where": {"count": {"gte": 3000, "lt": 3100}}, "sort": ["count"]}),
    );
    let rows = lazy.query(&range).unwrap().rows;
    assert_eq!(rows, full.query(&range).unwrap().rows);
    assert_eq!(rows.len(), 100);
    // It read the meta section, the indexes, and the few item blocks of its rows.
    let read = snap.read_bytes() - before;
    let index_bytes: u64 = ibexdb::testing::snapshot_index_blocks(&snap)
        .unwrap()
        .iter()
        .flat_map(|(_, _, v, e)| v.iter().chain(e))
        .map(|&(_, len)| u64::from(len))
        .sum();
    let meta = size - meta_offset(&snap) as u64;
    assert!(
        read <= index_bytes + meta + (3 << 15),
        "the query read {read} of the snapshot's {size} bytes (indexes {index_bytes}, meta {meta})"
    );
    let cold = lazy.state().collection(C).unwrap().cold().len();
    assert!(
        blocks > 8 && cold + 2 >= blocks,
        "the items stayed in their blocks ({cold} of {blocks} cold)"
    );
    // Element entries (a set's elements) come back too, and an ordered walk with a limit.
    for j in [
        serde_json::json!({"collection": C, "where": {"tags": {"contains": "tag 4321"}}}),
        serde_json::json!({"collection": C, "sort": [{"field": "count", "desc": true}], "limit": 7}),
        serde_json::json!({"collection": C, "where": {"tags": {"contains": "category 3"}, "count": {"lt": 40}}, "sort": ["count"]}),
    ] {
        let qq = q(j);
        assert_eq!(
            lazy.query(&qq).unwrap().rows,
            full.query(&qq).unwrap().rows,
            "{qq:?}"
        );
    }
    assert!(lazy.verify().is_ok());
}

#[test]
fn a_count_of_one_index_range_or_a_plan_after_open_reads_no_item() {
    let (log, snap) = build();
    let mut full = full_replay(&log);
    let mut lazy = open(&log, Some(&snap));
    let cold = |r: &Repo<Shared>| r.state().collection(C).unwrap().cold().len();
    let blocks = cold(&lazy);
    let filter = |j| ibexdb::Filter::from_json(&j).unwrap();
    for j in [
        serde_json::json!({"count": {"gte": 1000, "lt": 2500}}),
        serde_json::json!({"count": {"gt": 5990}}),
        serde_json::json!({"tags": {"contains": "category 2"}}),
    ] {
        let f = filter(j);
        let n = lazy.count(C, Some(&f)).unwrap();
        assert_eq!(n, full.count(C, Some(&f)).unwrap(), "{f:?}");
        assert!(n > 0);
        assert_eq!(cold(&lazy), blocks, "{f:?} loaded items");
    }
    // Plans come from the count and the restored indexes.
    for j in [
        serde_json::json!({"collection": C, "where": {"count": {"gte": 3000}}, "limit": 5}),
        serde_json::json!({"collection": C, "where": {"tags": {"contains": "tag 4"}}}),
        serde_json::json!({"collection": C, "where": {"title": {"prefix": "Item 4"}}}),
    ] {
        let qq = q(j);
        assert_eq!(
            lazy.explain(&qq).unwrap(),
            full.explain(&qq).unwrap(),
            "{qq:?}"
        );
    }
    assert_eq!(cold(&lazy), blocks, "explain loaded items");
    // A filter an index narrows reads its candidates' items only; one no index serves, all.
    let f = filter(serde_json::json!({"count": {"lt": 300}, "title": {"prefix": "Item 1"}}));
    let n = lazy.count(C, Some(&f)).unwrap();
    assert_eq!(n, full.count(C, Some(&f)).unwrap());
    assert!(n > 0);
    let left = cold(&lazy);
    assert!(
        left < blocks && left + 12 > blocks,
        "{left} of {blocks} blocks cold"
    );
    let f = filter(serde_json::json!({"title": {"prefix": "Item 1"}}));
    assert_eq!(
        lazy.count(C, Some(&f)).unwrap(),
        full.count(C, Some(&f)).unwrap()
    );
    assert_eq!(cold(&lazy), 0);
}

#[test]
fn random_queries_writes_and_snapshots_answer_like_a_full_replay() {
    for_seeds("persisted_index", 0..6, |seed| {
        let (log, snap) = build();
        let mut rng = Rng(seed);
        let mut lazy = open(&log, Some(&snap));
        let mut full = full_replay(&log);
        for step in 0..150 {
            match rng.below(8) {
                0 | 1 => {
                    let mut t = Txn::new();
                    for _ in 0..1 + rng.below(3) {
                        let k = format!("{C}/{:05}", rng.below(N * 2 + 500));
                        match rng.below(3) {
                            0 => t.delete(&k).unwrap(),
                            _ => t.put(&k, item(rng.below(2 * N))).unwrap(),
                        };
                    }
                    full.commit(t.clone()).unwrap();
                    lazy.commit(t).unwrap();
                }
                2 => {
                    // A snapshot (appended or rewritten, as the file decides), and a reopen
                    // from it: the next query restores the indexes again when unchanged.
                    lazy.seal().unwrap();
                    lazy.write_snapshot().unwrap();
                    lazy.close().unwrap();
                    lazy = open(&log, Some(&snap));
                }
                _ => {
                    let lo = rng.below(2 * N);
                    let qq = match rng.below(4) {
                        0 => {
                            serde_json::json!({"collection": C, "where": {"count": {"gte": lo, "lt": lo + rng.below(300)}}})
                        }
                        1 => {
                            serde_json::json!({"collection": C, "sort": [{"field": "count", "desc": rng.chance(50)}], "limit": 1 + rng.below(40)})
                        }
                        2 => {
                            serde_json::json!({"collection": C, "where": {"tags": {"contains": format!("category {}", rng.below(5))}, "count": {"gte": lo}}, "sort": ["count"], "limit": 10})
                        }
                        _ => serde_json::json!({"collection": C, "where": {"count": lo}}),
                    };
                    let qq = q(qq);
                    let (a, b) = (lazy.query(&qq).unwrap(), full.query(&qq).unwrap());
                    assert_eq!(a.rows, b.rows, "seed {seed} step {step}: {qq:?}");
                }
            }
        }
        let (a, b) = (lazy.state_hash().unwrap(), full.state_hash().unwrap());
        assert_eq!(a, b, "seed {seed}");
        lazy.verify().unwrap();
    });
}

#[test]
fn a_change_before_the_first_query_goes_into_the_restored_index() {
    let (log, snap) = build();
    let mut lazy = open(&log, Some(&snap));
    let blocks = lazy.state().collection(C).unwrap().cold().len();
    let mut t = Txn::new();
    t.put(&format!("{C}/00001"), item(3050)).unwrap();
    t.delete(&format!("{C}/06090")).unwrap();
    lazy.commit(t).unwrap();
    lazy.flush().unwrap();
    let mut full = full_replay(&log);
    let range =
        q(serde_json::json!({"collection": C, "where": {"count": {"gte": 3040, "lt": 3060}}}));
    let rows = lazy.query(&range).unwrap().rows;
    assert_eq!(rows, full.query(&range).unwrap().rows);
    assert!(rows.iter().any(|(id, _)| id == "00001"));
    assert!(!rows.iter().any(|(id, _)| id == "06090"));
    let cold = lazy.state().collection(C).unwrap().cold().len();
    assert!(
        cold + 4 >= blocks,
        "the index was not built from every item ({cold} of {blocks} blocks still cold)"
    );
    assert!(lazy.verify().is_ok());
}

/// A session that writes a collection and runs no query of it: its snapshot keeps the
/// collection's indexes, so the next session's first query reads them instead of loading
/// and indexing every item.
#[test]
fn a_session_that_only_writes_keeps_the_persisted_indexes() {
    let (log, snap) = build();
    let offsets = |snap: &Shared| -> Vec<u64> {
        let all = ibexdb::testing::snapshot_index_blocks(snap).unwrap();
        let count = all.iter().find(|(c, p, _, _)| c == C && p == "count");
        count.map_or(vec![], |(_, _, v, _)| v.iter().map(|&(o, _)| o).collect())
    };
    let first = offsets(&snap);
    for round in 0..3u64 {
        let mut r = open(&log, Some(&snap));
        let mut t = Txn::new();
        for i in 0..20 {
            t.put(&format!("{C}/w{round}-{i:02}"), item(3000 + i))
                .unwrap();
        }
        t.delete(&format!("{C}/{:05}", 2 * (3010 + round))).unwrap();
        r.commit(t).unwrap();
        r.seal().unwrap();
        assert!(r.write_snapshot().unwrap());
        r.close().unwrap();
    }
    // The blocks no write touched stay where they were: the index was not rewritten.
    let last = offsets(&snap);
    let kept = last.iter().filter(|o| first.contains(o)).count();
    assert!(
        first.len() >= 3 && 2 * kept >= first.len(),
        "{kept} of the {} index blocks kept where they were ({} now)",
        first.len(),
        last.len()
    );
    let indexed = ibexdb::testing::snapshot_index_blocks(&snap).unwrap();
    assert!(
        indexed.iter().any(|(c, p, _, _)| c == C && p == "count"),
        "the snapshot holds the index on count: {:?}",
        indexed
            .iter()
            .map(|(c, p, _, _)| (c, p))
            .collect::<Vec<_>>()
    );
    let mut lazy = open(&log, Some(&snap));
    let blocks = lazy.state().collection(C).unwrap().cold().len();
    let mut full = full_replay(&log);
    let range = q(
        serde_json::json!({"collection": C, "where": {"count": {"gte": 3005, "lt": 3012}}, "sort": ["count"]}),
    );
    let rows = lazy.query(&range).unwrap().rows;
    assert_eq!(rows, full.query(&range).unwrap().rows);
    assert_eq!(
        rows.len(),
        7 + 3 * 7 - 2,
        "7 first items, 3 rounds of 7 writes, 2 deletes in range"
    );
    let cold = lazy.state().collection(C).unwrap().cold().len();
    assert!(
        blocks > 8 && cold + 4 >= blocks,
        "the query read the index, not every item ({cold} of {blocks} blocks still cold)"
    );
    assert!(lazy.verify().is_ok());
}

#[test]
fn commits_replayed_from_the_log_tail_leave_the_index_to_be_built_from_the_items() {
    let (log, snap) = build();
    // Written and flushed after the snapshot: the next open replays them from the log.
    let mut r = open(&log, Some(&snap));
    let mut t = Txn::new();
    t.put(&format!("{C}/00003"), item(3045)).unwrap();
    t.delete(&format!("{C}/06090")).unwrap();
    r.commit(t).unwrap();
    r.close().unwrap();
    let mut lazy = open(&log, Some(&snap));
    let mut full = full_replay(&log);
    let range =
        q(serde_json::json!({"collection": C, "where": {"count": {"gte": 3040, "lt": 3050}}}));
    let rows = lazy.query(&range).unwrap().rows;
    assert_eq!(rows, full.query(&range).unwrap().rows);
    assert!(rows.iter().any(|(id, _)| id == "00003"));
    assert!(!rows.iter().any(|(id, _)| id == "06090"));
}

/// The offset of the snapshot file's meta section (the footer points at it).
fn meta_offset(snap: &Shared) -> usize {
    let b = snap.bytes.lock().unwrap();
    let f = &b[b.len() - 12..];
    u64::from_le_bytes(f[..8].try_into().unwrap()) as usize
}

#[test]
fn a_damaged_index_block_leaves_the_index_to_be_built_from_the_items() {
    let (log, snap) = build();
    // The last bytes before the meta section belong to the last index block.
    snap.flip(meta_offset(&snap) - 3);
    let mut lazy = open(&log, Some(&snap));
    let mut full = full_replay(&log);
    let range = q(serde_json::json!({"collection": C, "where": {"count": {"gte": 10, "lt": 20}}}));
    assert_eq!(
        lazy.query(&range).unwrap().rows,
        full.query(&range).unwrap().rows
    );
    // verify() reports the damaged file.
    assert!(matches!(lazy.verify(), Err(Error::VerifyFailed { .. })));
}

#[test]
fn verify_finds_an_index_that_differs_from_its_items() {
    let (log, snap) = build();
    // Forge the persisted `count` index: the entry of count 17 says 18 (still in order), with
    // its block's CRC and the meta section's CRC recomputed, so the file reads back cleanly.
    let meta = meta_offset(&snap);
    let blocks = ibexdb::testing::snapshot_index_blocks(&snap).unwrap();
    {
        let mut b = snap.bytes.lock().unwrap();
        let find =
            |b: &[u8], pat: &[u8]| (0..=b.len() - pat.len()).find(|&i| &b[i..i + pat.len()] == pat);
        // A value entry: tag 1, the value's encoding, lp(id).
        let entry = |n: f64| [&[1u8][..], &ibexdb::Value::Number(n).to_bytes()].concat();
        let at = find(&b[..meta], &entry(17.0)).expect("the entry of count 17");
        let (off, len) = blocks
            .iter()
            .find(|(c, p, _, _)| c == C && p == "count")
            .into_iter()
            .flat_map(|(_, _, list, _)| list.iter().copied())
            .find(|&(o, l)| (o as usize..o as usize + l as usize).contains(&at))
            .expect("the block of the entry");
        let span = off as usize..off as usize + len as usize;
        let old_crc = ibexdb::testing::snapshot_checksum(&b[span.clone()]).to_le_bytes();
        b[at..at + entry(18.0).len()].copy_from_slice(&entry(18.0));
        let new_crc = ibexdb::testing::snapshot_checksum(&b[span]).to_le_bytes();
        let pos = meta + find(&b[meta..], &old_crc).expect("the block's CRC in the meta section");
        b[pos..pos + 4].copy_from_slice(&new_crc);
        let end = b.len();
        let meta_crc = ibexdb::testing::snapshot_checksum(&b[meta..end - 12]).to_le_bytes();
        b[end - 4..].copy_from_slice(&meta_crc);
    }
    let mut lazy = open(&log, Some(&snap));
    assert!(
        lazy.open_report().from_snapshot,
        "the forged file reads back"
    );
    match lazy.verify() {
        Err(Error::VerifyFailed { reason }) => assert!(reason.contains("index"), "{reason}"),
        other => panic!("verify passed a forged index: {other:?}"),
    }
}

#[test]
fn a_snapshot_with_indexes_cut_anywhere_leaves_a_usable_or_ignored_file() {
    let (log, snap) = build();
    let log = FaultStorage::from_bytes(log.bytes.lock().unwrap().clone());
    let snap = FaultStorage::from_bytes(snap.bytes.lock().unwrap().clone());
    let mut r = Repo::open(log.clone(), Some(snap.clone()), signed(1)).unwrap();
    r.define_schema(C, schema()).unwrap();
    // The index restored from the file, a few blocks loaded, a write it maintains.
    let range =
        q(serde_json::json!({"collection": C, "where": {"count": {"gte": 100, "lt": 130}}}));
    r.query(&range).unwrap();
    let mut t = Txn::new();
    t.put(&format!("{C}/00101"), item(115)).unwrap();
    r.commit(t).unwrap();
    r.seal().unwrap();
    r.flush().unwrap();
    let want = r.query(&range).unwrap().rows;
    // The snapshot's flush fails: every prefix of its writes, and torn writes, are images.
    snap.fail_flush_after(0);
    assert!(matches!(r.write_snapshot(), Err(Error::Storage(_))));
    let writes = snap.unflushed_writes();
    for keep in 0..=writes {
        let torn = match snap.unflushed_write_len(keep) {
            Some(len) if len > 0 => vec![None, Some(1), Some(len / 2)],
            _ => vec![None],
        };
        for cut in torn {
            let img = MemStorage::from_bytes(snap.crash_image(keep, cut));
            let mut again = Repo::open(
                MemStorage::from_bytes(log.durable_bytes()),
                Some(img),
                signed(1),
            )
            .unwrap();
            again.define_schema(C, schema()).unwrap();
            let what = format!("keep {keep} of {writes}, torn {cut:?}");
            assert_eq!(again.query(&range).unwrap().rows, want, "{what}");
            again.verify().unwrap_or_else(|e| panic!("{what}: {e}"));
        }
    }
}
