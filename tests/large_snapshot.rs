//! A snapshot keeps large values where they are in the log (docs/design.md §6.6, §8; snapshot
//! format 10): its blocks hold references, so the values are on disk once and an open from the
//! snapshot holds none of them in memory. Every way a collection is read after such an open —
//! a get, a filter, a sort, a count, an aggregate, keys, an index declared later, a live query,
//! a write, another snapshot appended, `verify()` — gives the answers of a repository that never
//! closed, and damage under a reference is a `CorruptError`, never a wrong value.

mod common;
use common::*;
use ibexdb::{
    map, AggregateQuery, Error, Filter, Map, MemStorage, Query, Repo, Schema, Storage, Txn, Value,
};

const N: u64 = 40;

fn bio_len(i: u64) -> usize {
    20_000 + (i as usize * 37) % 5_000
}

fn user(i: u64) -> Map {
    map! {"name" => format!("user {i}"), "n" => i as i64, "bio" => text(i, bio_len(i))}.as_map()
}

fn q(j: serde_json::Value) -> Query {
    Query::from_json(&j).unwrap()
}

/// Large values held as references in the loaded items.
fn far_in_memory<S: Storage>(r: &Repo<S>) -> usize {
    let items = r.state().collections.values().flat_map(|c| c.items.iter());
    items
        .map(|(_, it)| {
            it.value
                .values()
                .filter(|v| matches!(v, Value::Far(_)))
                .count()
        })
        .sum()
}

/// `N` users written in commits of 8 (values released into the log), a snapshot written, the
/// repository closed: its log and snapshot.
fn closed() -> (MemStorage, MemStorage) {
    let mut r = Repo::open(MemStorage::new(), Some(MemStorage::new()), signed(1)).unwrap();
    for batch in 0..N / 8 {
        let mut t = Txn::new();
        for i in batch * 8..(batch + 1) * 8 {
            t.put(&format!("users/{i:03}"), user(i)).unwrap();
        }
        r.commit(t).unwrap();
    }
    r.seal().unwrap();
    r.flush().unwrap();
    assert!(far_in_memory(&r) as u64 >= N);
    assert!(r.write_snapshot().unwrap());
    let (log, snap) = r.close().unwrap();
    (log, snap.unwrap())
}

fn reopen((log, snap): &(MemStorage, MemStorage)) -> Repo<MemStorage> {
    let r = Repo::open(log.clone(), Some(snap.clone()), signed(1)).unwrap();
    assert!(r.open_report().from_snapshot);
    r
}

#[test]
fn the_snapshot_holds_references_not_the_values() {
    let files = closed();
    let values: usize = (0..N).map(bio_len).sum();
    let snap = files.1.len().unwrap() as usize;
    eprintln!(
        "{N} values, {values} B of them: log {} B, snapshot {snap} B",
        files.0.len().unwrap()
    );
    assert!(
        snap < values / 20,
        "the snapshot holds the values: {snap} B"
    );
    // Opened from it, nothing is loaded; a get loads the item's block, its value stays far.
    let mut r = reopen(&files);
    assert_eq!(r.get("users/007").unwrap(), Some(&user(7)));
    assert!(
        far_in_memory(&r) > 0,
        "the block's large values stay in the log"
    );
    for i in 0..N {
        assert_eq!(r.get(&format!("users/{i:03}")).unwrap(), Some(&user(i)));
    }
    assert_eq!(r.keys("users").unwrap().len(), N as usize);
    r.verify().unwrap();
}

#[test]
fn comparisons_after_an_open_from_the_snapshot_load_the_cold_values() {
    let files = closed();
    // A filter on the large field: every block is loaded and the field's values with it.
    let mut r = reopen(&files);
    let res = r
        .query(&q(
            serde_json::json!({"collection": "users", "where": {"bio": text(9, bio_len(9))}}),
        ))
        .unwrap();
    assert_eq!(res.rows.len(), 1);
    assert_eq!(res.rows[0], ("009".to_string(), user(9)));
    assert_eq!(far_in_memory(&r), 0);
    // A sort on it.
    let mut r = reopen(&files);
    let res = r
        .query(&q(serde_json::json!({"collection": "users", "sort": [{"field": "bio", "desc": true}], "limit": 5})))
        .unwrap();
    let mut want: Vec<(String, String)> = (0..N)
        .map(|i| (text(i, bio_len(i)), format!("{i:03}")))
        .collect();
    want.sort();
    want.reverse();
    let got: Vec<&str> = res.rows.iter().map(|(id, _)| id.as_str()).collect();
    let want: Vec<&str> = want.iter().take(5).map(|(_, id)| id.as_str()).collect();
    assert_eq!(got, want);
    // A count with a filter on it.
    let mut r = reopen(&files);
    let f = Filter::from_json(&serde_json::json!({"bio": {"gte": text(30, bio_len(30))}})).unwrap();
    let want = (0..N)
        .filter(|&i| text(i, bio_len(i)) >= text(30, bio_len(30)))
        .count();
    assert_eq!(r.count("users", Some(&f)).unwrap(), want);
    // An aggregate over it (an unfiltered aggregate would otherwise scan the blocks in place).
    let mut r = reopen(&files);
    let agg = AggregateQuery::from_json(
        &serde_json::json!({"collection": "users", "aggregates": {"top": {"max": "bio"}, "n": {"sum": "n"}}}),
    )
    .unwrap();
    let top = r.aggregate(&agg).unwrap();
    let max = (0..N).map(|i| text(i, bio_len(i))).max().unwrap();
    assert_eq!(top["top"], serde_json::json!(max));
    assert_eq!(top["n"], serde_json::json!((0..N).sum::<u64>()));
    // An aggregate over another field scans the blocks and steps over the references.
    let mut r = reopen(&files);
    let agg = AggregateQuery::from_json(
        &serde_json::json!({"collection": "users", "aggregates": {"n": {"sum": "n"}}}),
    )
    .unwrap();
    assert_eq!(
        r.aggregate(&agg).unwrap()["n"],
        serde_json::json!((0..N).sum::<u64>())
    );
    // A query on another field leaves the large ones far and hands them out whole.
    let mut r = reopen(&files);
    let res = r
        .query(&q(
            serde_json::json!({"collection": "users", "where": {"n": {"gte": 35}}, "sort": ["n"]}),
        ))
        .unwrap();
    assert_eq!(res.rows.len(), 5);
    assert_eq!(res.rows[0].1, user(35));
    assert!(far_in_memory(&r) > 0);
    // An index declared after the open, and a live query.
    let mut r = reopen(&files);
    r.define_schema(
        "users",
        Schema::from_json("users", &serde_json::json!({"indexes": ["bio"]})).unwrap(),
    )
    .unwrap();
    let f = Filter::from_json(&serde_json::json!({"bio": text(3, bio_len(3))})).unwrap();
    assert_eq!(r.count("users", Some(&f)).unwrap(), 1);
    assert_eq!(far_in_memory(&r), 0);
    let mut r = reopen(&files);
    let (_, rows) = r
        .subscribe(q(
            serde_json::json!({"collection": "users", "where": {"n": {"lt": 2}}}),
        ))
        .unwrap();
    assert_eq!(
        rows,
        vec![("000".to_string(), user(0)), ("001".to_string(), user(1))]
    );
    assert_eq!(far_in_memory(&r), 0);
    r.verify().unwrap();
}

#[test]
fn writes_and_appended_snapshots_keep_the_references_valid() {
    let files = closed();
    let mut r = reopen(&files);
    // A patch beside a far value, a put over one, a delete of one, a new large value.
    let mut t = Txn::new();
    t.update("users/004", map! {"name" => "renamed"}.as_map())
        .unwrap();
    t.put("users/005", user(105)).unwrap();
    t.delete("users/006").unwrap();
    t.put("users/900", user(900)).unwrap();
    r.commit(t).unwrap();
    r.seal().unwrap();
    let hash = r.state_hash().unwrap();
    assert!(r.write_snapshot().unwrap());
    let (log, snap) = r.close().unwrap();
    let files = (log, snap.unwrap());
    for round in 0..2 {
        let mut r = reopen(&files);
        let mut renamed = user(4);
        renamed.insert("name".into(), Value::from("renamed"));
        assert_eq!(r.get("users/004").unwrap(), Some(&renamed), "round {round}");
        assert_eq!(r.get("users/005").unwrap(), Some(&user(105)));
        assert_eq!(r.get("users/006").unwrap(), None);
        assert_eq!(r.get("users/900").unwrap(), Some(&user(900)));
        assert_eq!(r.get("users/039").unwrap(), Some(&user(39)));
        r.verify().unwrap();
        assert_eq!(r.state_hash().unwrap(), hash);
    }
}

#[test]
fn damage_under_a_reference_is_a_corrupt_error() {
    let (log, snap) = closed();
    let shared = |m: &MemStorage| {
        let mut bytes = vec![0u8; m.len().unwrap() as usize];
        m.read_at(0, &mut bytes).unwrap();
        Shared {
            bytes: std::sync::Arc::new(std::sync::Mutex::new(bytes)),
            ..Shared::default()
        }
    };
    let (log, snap) = (shared(&log), shared(&snap));
    let mut r = Repo::open(log.clone(), Some(snap), signed(1)).unwrap();
    assert!(r.open_report().from_snapshot);
    assert_eq!(r.get("users/011").unwrap(), Some(&user(11)));
    let at = r
        .state()
        .collections
        .values()
        .flat_map(|c| c.items.iter())
        .find_map(|(id, it)| match it.value.get("bio") {
            Some(Value::Far(f)) if id.as_str() == "011" => Some(f.at),
            _ => None,
        })
        .expect("users/011's bio is far");
    log.flip(at as usize + 500);
    match r.get("users/011") {
        Err(Error::Corrupt { .. }) => {}
        other => panic!("expected CorruptError, got {other:?}"),
    }
}
