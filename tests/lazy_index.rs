//! Persisted indexes restored lazily (docs/design.md §8, "Indexes"; `query/lazy.rs`): after an
//! open, a query reads, checks and decodes only the index blocks its ranges need. These tests
//! hold such a repository against one that replayed the whole log — every query type, counts,
//! plans and aggregates, with writes and snapshots after the open — and measure the bytes the
//! first query reads; damage a block that only a later query touches; and open a file of the
//! previous format version.

mod common;
use common::*;
use ibexdb::{AggregateQuery, Filter, Map, Name, Query, Repo, Schema, Txn, Value};

const C: &str = "things";
/// Enough items for tens of blocks per index.
const N: u64 = 12_000;

fn schema() -> Schema {
    Schema::from_json(C, &serde_json::json!({"indexes": ["v", "n", "tags"]})).unwrap()
}

fn open(log: &Shared, snap: Option<&Shared>) -> Repo<Shared> {
    let mut r = Repo::open(log.clone(), snap.cloned(), signed(1)).unwrap();
    r.define_schema(C, schema()).unwrap();
    r
}

/// An item whose `v` is of any kind (integers, fractions, strings, booleans, null, missing),
/// `n` = i, and a set of tags.
fn thing(i: u64, r: u64) -> Map {
    let mut m = Map::new();
    let v = match r % 7 {
        0 | 1 => Some(Value::from((r / 7 % 1000) as i64)),
        2 => Some(Value::from((r / 7 % 1000) as f64 + 0.5)),
        3 => Some(Value::from(format!("s{:03}", r / 7 % 600))),
        4 => Some(Value::Bool(r % 2 == 0)),
        5 => Some(Value::Null),
        _ => None,
    };
    if let Some(v) = v {
        m.insert(Name::from("v"), v);
    }
    m.insert(Name::from("n"), Value::from(i as i64));
    let tags = [format!("t{:02}", r % 50), format!("u{}", r % 2)];
    let tags = if r % 11 == 0 {
        // A list may name an element twice: its entry is there once.
        let [a, b] = tags;
        Value::List(vec![a.clone().into(), b.into(), a.into()])
    } else {
        Value::set(tags)
    };
    m.insert(Name::from("tags"), tags);
    m
}

fn key(i: u64) -> String {
    format!("{C}/{i:06}")
}

/// `N` random things, the indexes built and maintained, snapshotted.
fn build(seed: u64) -> (Shared, Shared) {
    let (log, snap) = (Shared::default(), Shared::default());
    let mut r = open(&log, Some(&snap));
    let first = serde_json::json!({"collection": C, "aggregates": {"m": {"min": "n"}}});
    r.aggregate(&AggregateQuery::from_json(&first).unwrap())
        .unwrap();
    let mut rng = Rng(seed);
    for chunk in 0..N / 1000 {
        let mut t = Txn::new();
        for i in chunk * 1000..(chunk + 1) * 1000 {
            t.put(&key(i), thing(i, rng.next())).unwrap();
        }
        r.commit(t).unwrap();
    }
    r.seal().unwrap();
    assert!(r.write_snapshot().unwrap());
    r.close().unwrap();
    (log, snap)
}

fn full_replay(log: &Shared) -> Repo<Shared> {
    let copy = Shared::default();
    copy.bytes
        .lock()
        .unwrap()
        .clone_from(&log.bytes.lock().unwrap());
    open(&copy, None)
}

/// A random bound on `v`: a number, a string or a boolean.
fn operand(rng: &mut Rng) -> serde_json::Value {
    match rng.below(4) {
        0 | 1 => serde_json::json!(rng.below(1100) as i64 - 50),
        2 => serde_json::json!(format!("s{:03}", rng.below(650))),
        _ => serde_json::json!(rng.chance(50)),
    }
}

/// A random filter that some index serves.
fn filter(rng: &mut Rng) -> serde_json::Value {
    let (a, b) = (operand(rng), operand(rng));
    match rng.below(10) {
        0 => serde_json::json!({"v": a}),
        1 => serde_json::json!({"v": {"gte": a, "lt": b}}),
        2 => serde_json::json!({"v": {"gt": a}}),
        3 => serde_json::json!({"v": {"lte": a}}),
        4 => serde_json::json!({"v": {"in": [a, b, null]}}),
        5 => serde_json::json!({"v": {"prefix": format!("s{}", rng.below(7))}}),
        6 => serde_json::json!({"tags": {"contains": format!("t{:02}", rng.below(55))}}),
        7 => {
            let lo = rng.below(N);
            serde_json::json!({"n": {"gte": lo, "lt": lo + rng.below(3000)}})
        }
        8 => {
            serde_json::json!({"tags": {"contains": format!("u{}", rng.below(3))}, "n": {"lt": rng.below(N)}})
        }
        _ => {
            serde_json::json!({"v": {"gte": a}, "tags": {"contains": format!("t{:02}", rng.below(50))}})
        }
    }
}

/// A random query: a filter, maybe a sort on an indexed path, maybe a window.
fn query(rng: &mut Rng) -> Query {
    let mut j = serde_json::json!({"collection": C});
    if rng.chance(80) {
        j["where"] = filter(rng);
    }
    if rng.chance(50) {
        let field = if rng.chance(50) { "n" } else { "v" };
        j["sort"] = serde_json::json!([{"field": field, "desc": rng.chance(50)}]);
    }
    if rng.chance(60) {
        j["limit"] = serde_json::json!(1 + rng.below(300));
        if rng.chance(30) {
            j["offset"] = serde_json::json!(rng.below(50));
        }
    }
    Query::from_json(&j).unwrap()
}

/// A random aggregate that an index may answer alone.
fn aggregate(rng: &mut Rng) -> AggregateQuery {
    let path = if rng.chance(50) { "n" } else { "v" };
    let mut j = serde_json::json!({"collection": C, "aggregates": {
        "k": {"count": true}, "c": {"count": path}, "lo": {"min": path}, "hi": {"max": path},
        "s": {"sum": path}}});
    if rng.chance(70) {
        let lo = rng.below(1000) as i64;
        j["where"] = serde_json::json!({path: {"gte": lo, "lt": lo + rng.below(4000) as i64}});
    }
    AggregateQuery::from_json(&j).unwrap()
}

fn write(rng: &mut Rng, a: &mut Repo<Shared>, b: &mut Repo<Shared>) {
    let mut t = Txn::new();
    for _ in 0..1 + rng.below(4) {
        let i = rng.below(N + 200);
        if rng.chance(30) {
            t.delete(&key(i)).unwrap();
        } else {
            t.put(&key(i), thing(i, rng.next())).unwrap();
        }
    }
    a.commit(t.clone()).unwrap();
    b.commit(t).unwrap();
}

/// A result in a form to compare: the answer, or the error's message.
fn same<T: std::fmt::Debug>(r: ibexdb::Result<T>) -> String {
    match r {
        Ok(v) => format!("{v:?}"),
        Err(e) => format!("error: {e}"),
    }
}

#[test]
fn a_lazily_restored_index_answers_every_query_like_a_built_one() {
    for_seeds("lazy_index", 0..4, |seed| {
        let (log, snap) = build(seed);
        let mut full = full_replay(&log);
        let mut rng = Rng(seed ^ 0x5eed);
        let mut lazy = open(&log, Some(&snap));
        for step in 0..300 {
            let what = rng.below(40);
            match what {
                // Writes read no index block: kept with the blocks' ranges until read.
                0..=5 => write(&mut rng, &mut lazy, &mut full),
                6 => {
                    lazy.seal().unwrap();
                    lazy.write_snapshot().unwrap();
                    lazy.close().unwrap();
                    lazy = open(&log, Some(&snap));
                }
                7..=10 => {
                    let f = Filter::from_json(&filter(&mut rng)).unwrap();
                    let (a, b) = (lazy.count(C, Some(&f)), full.count(C, Some(&f)));
                    assert_eq!(same(a), same(b), "seed {seed} step {step}: {f:?}");
                }
                11..=13 => {
                    let qq = query(&mut rng);
                    let (a, b) = (lazy.explain(&qq), full.explain(&qq));
                    assert_eq!(same(a), same(b), "seed {seed} step {step}: {qq:?}");
                }
                14..=17 => {
                    let aq = aggregate(&mut rng);
                    let (a, b) = (lazy.aggregate(&aq), full.aggregate(&aq));
                    assert_eq!(same(a), same(b), "seed {seed} step {step}: {aq:?}");
                }
                _ => {
                    let qq = query(&mut rng);
                    let (a, b) = (lazy.query(&qq), full.query(&qq));
                    assert_eq!(same(a), same(b), "seed {seed} step {step}: {qq:?}");
                }
            }
        }
        assert_eq!(lazy.state_hash().unwrap(), full.state_hash().unwrap());
        lazy.verify().unwrap();
    });
}

/// Bytes of the snapshot's index blocks, and the largest one.
fn index_bytes(snap: &Shared) -> (u64, u64) {
    let blocks = ibexdb::testing::snapshot_index_blocks(snap).unwrap();
    let lens = blocks
        .iter()
        .flat_map(|(_, _, v, e)| v.iter().chain(e))
        .map(|&(_, len)| u64::from(len));
    lens.fold((0, 0), |(s, m), l| (s + l, m.max(l)))
}

fn meta_offset(snap: &Shared) -> usize {
    let b = snap.bytes.lock().unwrap();
    let f = &b[b.len() - 12..];
    u64::from_le_bytes(f[..8].try_into().unwrap()) as usize
}

#[test]
fn the_first_indexed_query_reads_only_the_index_blocks_of_its_range() {
    let (log, snap) = build(7);
    let size = snap.len_now() as u64;
    let meta = size - meta_offset(&snap) as u64;
    let (all_index, largest) = index_bytes(&snap);
    let mut full = full_replay(&log);
    let mut lazy = open(&log, Some(&snap));
    let before = snap.read_bytes();
    let qq = Query::from_json(
        &serde_json::json!({"collection": C, "where": {"n": {"gte": 5000, "lt": 5100}}}),
    )
    .unwrap();
    assert_eq!(lazy.query(&qq).unwrap(), full.query(&qq).unwrap());
    let read = snap.read_bytes() - before;
    // At most two blocks of the `n` index and the item blocks of 100 rows.
    let items = 4 * (32 << 10);
    assert!(
        read <= meta + 2 * largest + items && read < all_index / 4,
        "the query read {read} bytes; the indexes hold {all_index}, the largest block {largest}"
    );
    // A count of a range wide enough to hold whole blocks reads only the blocks at its ends.
    let before = snap.read_bytes();
    let f = Filter::from_json(&serde_json::json!({"n": {"gte": 1234, "lt": 9876}})).unwrap();
    assert_eq!(lazy.count(C, Some(&f)).unwrap(), 9876 - 1234);
    let read = snap.read_bytes() - before;
    assert!(read <= 2 * largest, "the count read {read} bytes");
    // A walk in index order with a small window reads the blocks at its end.
    let before = snap.read_bytes();
    let top = Query::from_json(
        &serde_json::json!({"collection": C, "sort": [{"field": "n", "desc": true}], "limit": 5}),
    )
    .unwrap();
    assert_eq!(lazy.query(&top).unwrap(), full.query(&top).unwrap());
    let read = snap.read_bytes() - before;
    assert!(read <= largest + items, "the walk read {read} bytes");
    lazy.verify().unwrap();
}

#[test]
fn writes_after_the_open_read_no_index_block() {
    let (log, snap) = build(2);
    let mut full = full_replay(&log);
    let mut lazy = open(&log, Some(&snap));
    let range = |lo: u64| {
        Query::from_json(
            &serde_json::json!({"collection": C, "where": {"n": {"gte": lo, "lt": lo + 200}}}),
        )
        .unwrap()
    };
    assert_eq!(
        lazy.query(&range(4000)).unwrap(),
        full.query(&range(4000)).unwrap()
    );
    // Writes to items the query loaded: new values anywhere in every index's order.
    let before = snap.read_bytes();
    let mut rng = Rng(99);
    for _ in 0..40 {
        let mut t = Txn::new();
        for _ in 0..5 {
            let i = 4000 + rng.below(200);
            if rng.chance(20) {
                t.delete(&key(i)).unwrap();
            } else {
                let mut m = thing(i, rng.next());
                m.insert(Name::from("n"), Value::from(rng.below(N) as i64));
                t.put(&key(i), m).unwrap();
            }
        }
        lazy.commit(t.clone()).unwrap();
        full.commit(t).unwrap();
    }
    assert_eq!(snap.read_bytes(), before, "the writes read the snapshot");
    // A list that names an element twice has one entry for it; rewritten, still one (items
    // all over the collection: their entries inside blocks that a count reads or not).
    for (k, list) in [
        ["u0", "u0"],
        ["u0", "u1"],
        ["u1", "u0"],
        ["u1", "u1"],
        ["u0", "u0"],
    ]
    .iter()
    .enumerate()
    {
        let mut t = Txn::new();
        for i in (k as u64..N).step_by(97) {
            let mut m = thing(i, 1);
            let list = list.iter().map(|&e| Value::from(e)).collect();
            m.insert(Name::from("tags"), Value::List(list));
            t.put(&key(i), m).unwrap();
        }
        lazy.commit(t.clone()).unwrap();
        full.commit(t).unwrap();
    }
    for e in ["u0", "u1"] {
        let f = Filter::from_json(&serde_json::json!({"tags": {"contains": e}})).unwrap();
        assert_eq!(
            lazy.count(C, Some(&f)).unwrap(),
            full.count(C, Some(&f)).unwrap()
        );
    }
    for lo in [0, 1000, 3900, 4000, 7000, N - 100] {
        assert_eq!(
            lazy.query(&range(lo)).unwrap(),
            full.query(&range(lo)).unwrap()
        );
        let f = Filter::from_json(&serde_json::json!({"n": {"gte": lo, "lt": lo + 2500}})).unwrap();
        assert_eq!(
            lazy.count(C, Some(&f)).unwrap(),
            full.count(C, Some(&f)).unwrap()
        );
    }
    let aq = AggregateQuery::from_json(&serde_json::json!({"collection": C, "aggregates": {
        "k": {"count": true}, "lo": {"min": "n"}, "hi": {"max": "n"}, "s": {"sum": "n"}}}))
    .unwrap();
    assert_eq!(lazy.aggregate(&aq).unwrap(), full.aggregate(&aq).unwrap());
    // An appended snapshot holds the written indexes built; the reopened ones answer alike.
    lazy.seal().unwrap();
    lazy.write_snapshot().unwrap();
    lazy.close().unwrap();
    let mut again = open(&log, Some(&snap));
    for lo in [0, 4000, 9000] {
        assert_eq!(
            again.query(&range(lo)).unwrap(),
            full.query(&range(lo)).unwrap()
        );
    }
    again.verify().unwrap();
}

#[test]
fn an_appended_snapshot_keeps_a_partly_read_index_where_it_is() {
    let (log, snap) = build(4);
    let mut full = full_replay(&log);
    let mut lazy = open(&log, Some(&snap));
    let qq = Query::from_json(
        &serde_json::json!({"collection": C, "where": {"n": {"gte": 300, "lt": 400}}, "sort": [{"field": "v", "desc": true}], "limit": 20}),
    )
    .unwrap();
    assert_eq!(lazy.query(&qq).unwrap(), full.query(&qq).unwrap());
    let blocks = ibexdb::testing::snapshot_index_blocks(&snap).unwrap();
    let size = snap.len_now();
    // Another collection written: the snapshot is appended; this one's indexes are unchanged.
    let mut t = Txn::new();
    t.put("other/x", thing(0, 0)).unwrap();
    lazy.commit(t.clone()).unwrap();
    full.commit(t).unwrap();
    lazy.seal().unwrap();
    lazy.write_snapshot().unwrap();
    assert!(snap.len_now() > size, "appended");
    let after = ibexdb::testing::snapshot_index_blocks(&snap).unwrap();
    assert_eq!(after, blocks, "the indexes' blocks stay where they were");
    // The open repository and a reopened one answer from them.
    let other = Query::from_json(
        &serde_json::json!({"collection": C, "where": {"v": {"gte": 10, "lt": 20}}, "sort": ["n"]}),
    )
    .unwrap();
    assert_eq!(lazy.query(&other).unwrap(), full.query(&other).unwrap());
    lazy.close().unwrap();
    let mut again = open(&log, Some(&snap));
    for q in [&qq, &other] {
        assert_eq!(again.query(q).unwrap(), full.query(q).unwrap());
    }
    again.verify().unwrap();
}

#[test]
fn a_live_query_after_a_lazy_query_starts_and_follows_writes_like_a_built_index() {
    let (log, snap) = build(6);
    let mut full = full_replay(&log);
    let mut lazy = open(&log, Some(&snap));
    let first = Query::from_json(
        &serde_json::json!({"collection": C, "where": {"n": {"gte": 100, "lt": 200}}}),
    )
    .unwrap();
    assert_eq!(lazy.query(&first).unwrap(), full.query(&first).unwrap());
    let live = Query::from_json(&serde_json::json!({"collection": C,
        "where": {"v": {"gte": 100, "lt": 300}, "tags": {"contains": "u1"}},
        "sort": [{"field": "n", "desc": true}], "limit": 25}))
    .unwrap();
    let (a, rows) = lazy.subscribe(live.clone()).unwrap();
    let (b, want) = full.subscribe(live.clone()).unwrap();
    assert_eq!(rows, want);
    let mut rng = Rng(5);
    for _ in 0..30 {
        write(&mut rng, &mut lazy, &mut full);
        let (x, y) = (lazy.take_live_changes(), full.take_live_changes());
        let pick = |v: Vec<(ibexdb::LiveId, ibexdb::LiveChange)>, id| {
            v.into_iter()
                .find(|(l, _)| *l == id)
                .map(|(_, c)| format!("{c:?}"))
        };
        assert_eq!(pick(x, a), pick(y, b));
    }
    assert_eq!(lazy.query(&live).unwrap(), full.query(&live).unwrap());
    lazy.verify().unwrap();
}

#[test]
fn a_damaged_block_is_found_when_a_query_first_touches_it() {
    let (log, snap) = build(3);
    // Damage the last block of the `n` index (ids ascending: the highest `n`).
    let blocks = ibexdb::testing::snapshot_index_blocks(&snap).unwrap();
    let (_, _, list, _) = blocks.iter().find(|(_, p, _, _)| p == "n").unwrap();
    let &(off, len) = list.last().unwrap();
    let mut full = full_replay(&log);
    let mut lazy = open(&log, Some(&snap));
    // A query that never touches it answers from the snapshot's other blocks.
    let low = Query::from_json(
        &serde_json::json!({"collection": C, "where": {"n": {"gte": 10, "lt": 20}}}),
    )
    .unwrap();
    assert_eq!(lazy.query(&low).unwrap(), full.query(&low).unwrap());
    assert!(
        lazy.state().collection(C).unwrap().cold().len() > 10,
        "the items stayed cold"
    );
    snap.flip(off as usize + len as usize / 2);
    // The one that touches it finds the damage and answers from an index built from the items.
    let high = Query::from_json(
        &serde_json::json!({"collection": C, "where": {"n": {"gte": N - 30}}, "sort": ["n"]}),
    )
    .unwrap();
    let (a, b) = (lazy.query(&high).unwrap(), full.query(&high).unwrap());
    assert_eq!(a.rows, b.rows);
    assert_eq!(a.rows.len(), 30);
    for qq in [&low, &high] {
        assert_eq!(lazy.query(qq).unwrap().rows, full.query(qq).unwrap().rows);
    }
    // Writes after the fallback maintain the built index.
    let mut rng = Rng(11);
    for _ in 0..20 {
        write(&mut rng, &mut lazy, &mut full);
    }
    assert_eq!(
        lazy.query(&high).unwrap().rows,
        full.query(&high).unwrap().rows
    );
    // verify() reports the damaged file.
    assert!(lazy.verify().is_err());
}

#[test]
fn a_block_whose_entries_differ_from_its_directory_keys_is_refused() {
    let (log, snap) = build(5);
    let meta = meta_offset(&snap);
    // Swap the first entry of the `n` index's second block for another valid one (recomputing
    // the block's CRC and the meta section's): CRC and count check, the keys do not.
    let blocks = ibexdb::testing::snapshot_index_blocks(&snap).unwrap();
    let (_, _, list, _) = blocks.iter().find(|(_, p, _, _)| p == "n").unwrap();
    let (off, len) = (list[1].0 as usize, list[1].1 as usize);
    {
        let mut b = snap.bytes.lock().unwrap();
        let old_crc = ibexdb::testing::snapshot_checksum(&b[off..off + len]).to_le_bytes();
        // A value entry: tag 1, the number (tag and 8 bytes), lp(id): raise the number.
        assert_eq!(b[off], 1);
        let num_at = off + 2;
        let x = f64::from_le_bytes(b[num_at..num_at + 8].try_into().unwrap());
        b[num_at..num_at + 8].copy_from_slice(&(x + 0.25).to_le_bytes());
        let new_crc = ibexdb::testing::snapshot_checksum(&b[off..off + len]).to_le_bytes();
        let pos = (meta..b.len()).find(|&i| b[i..i + 4] == old_crc).unwrap();
        b[pos..pos + 4].copy_from_slice(&new_crc);
        let end = b.len();
        let meta_crc = ibexdb::testing::snapshot_checksum(&b[meta..end - 12]).to_le_bytes();
        b[end - 4..].copy_from_slice(&meta_crc);
    }
    let k = {
        let b = snap.bytes.lock().unwrap();
        f64::from_le_bytes(b[off + 2..off + 10].try_into().unwrap()) - 0.25
    };
    let mut lazy = open(&log, Some(&snap));
    assert!(lazy.open_report().from_snapshot);
    let mut full = full_replay(&log);
    // Read from the forged block, the count would be 0.
    let f = Filter::from_json(&serde_json::json!({"n": k})).unwrap();
    assert_eq!(lazy.count(C, Some(&f)).unwrap(), 1);
    let all = Query::from_json(
        &serde_json::json!({"collection": C, "where": {"n": {"lt": N}}, "sort": ["n"]}),
    )
    .unwrap();
    assert_eq!(
        lazy.query(&all).unwrap().rows,
        full.query(&all).unwrap().rows
    );
}

#[test]
fn a_snapshot_of_the_previous_version_is_replayed_and_rewritten() {
    let (log, snap) = build(9);
    // The version before the current one: the header says so.
    let current: [u8; 4] = snap.bytes.lock().unwrap()[8..12].try_into().unwrap();
    let older = u32::from_le_bytes(current) - 1;
    snap.bytes.lock().unwrap()[8..12].copy_from_slice(&older.to_le_bytes());
    let mut full = full_replay(&log);
    let mut r = open(&log, Some(&snap));
    assert!(!r.open_report().from_snapshot, "an older file is not read");
    let qq = Query::from_json(
        &serde_json::json!({"collection": C, "where": {"v": {"prefix": "s1"}}, "sort": ["n"]}),
    )
    .unwrap();
    assert_eq!(r.query(&qq).unwrap(), full.query(&qq).unwrap());
    r.write_snapshot().unwrap();
    r.close().unwrap();
    assert_eq!(&snap.bytes.lock().unwrap()[8..12], &current);
    let mut again = open(&log, Some(&snap));
    assert!(again.open_report().from_snapshot);
    assert_eq!(again.query(&qq).unwrap(), full.query(&qq).unwrap());
    again.verify().unwrap();
}
