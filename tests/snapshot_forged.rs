//! A snapshot of format 9 whose index directory lists kept writes (writes made after a lazy
//! open to index blocks never read, docs/design.md §8), then damaged in its meta section with
//! its checksum made right again — what a buggy writer or a hostile process with access to the
//! device's files could leave. Opening it and querying must refuse (a typed error, or a
//! fallback to the log) or answer, never panic.

mod common;
use common::*;
use ibexdb::{Filter, Map, Name, Query, Repo, Schema, Txn, Value};
use std::panic::{catch_unwind, AssertUnwindSafe};

const C: &str = "things";
const N: u64 = 3_000;

fn open(log: &Shared, snap: Option<&Shared>) -> ibexdb::Result<Repo<Shared>> {
    let mut r = Repo::open(log.clone(), snap.cloned(), signed(1))?;
    let s = Schema::from_json(C, &serde_json::json!({"indexes": ["n", "tags"]})).unwrap();
    r.define_schema(C, s)?;
    Ok(r)
}

fn thing(i: u64) -> Map {
    let mut m = Map::new();
    m.insert(Name::from("n"), Value::from(i as i64));
    m.insert(
        Name::from("tags"),
        Value::set([format!("t{:02}", i % 40), format!("u{}", i % 2)]),
    );
    m
}

fn key(i: u64) -> String {
    format!("{C}/{i:06}")
}

/// A snapshot whose indexes are listed with kept writes: built, reopened lazily, written to
/// without any query, snapshotted again.
fn build() -> (Shared, Shared) {
    let (log, snap) = (Shared::default(), Shared::default());
    let mut r = open(&log, Some(&snap)).unwrap();
    let q = Query::from_json(&serde_json::json!({"collection": C, "where": {"n": 1}})).unwrap();
    r.query(&q).unwrap();
    let mut t = Txn::new();
    for i in 0..N {
        t.put(&key(i), thing(i)).unwrap();
    }
    r.commit(t).unwrap();
    r.seal().unwrap();
    assert!(r.write_snapshot().unwrap());
    r.close().unwrap();
    let mut r = open(&log, Some(&snap)).unwrap();
    assert!(r.open_report().from_snapshot);
    let mut t = Txn::new();
    for i in (0..N).step_by(37) {
        let mut m = thing(i);
        m.insert(Name::from("n"), Value::from((N + i) as i64));
        t.put(&key(i), m).unwrap();
    }
    t.delete(&key(5)).unwrap();
    r.commit(t).unwrap();
    r.seal().unwrap();
    r.write_snapshot().unwrap();
    r.close().unwrap();
    (log, snap)
}

fn meta_offset(b: &[u8]) -> usize {
    let f = &b[b.len() - 12..];
    u64::from_le_bytes(f[..8].try_into().unwrap()) as usize
}

fn queries(r: &mut Repo<Shared>) {
    for lo in [0, 500, 1500, N - 100, N + 100] {
        let q = Query::from_json(
            &serde_json::json!({"collection": C, "where": {"n": {"gte": lo, "lt": lo + 300}}, "sort": ["n"]}),
        )
        .unwrap();
        let _ = r.query(&q);
        let f = Filter::from_json(&serde_json::json!({"n": {"gte": lo}})).unwrap();
        let _ = r.count(C, Some(&f));
    }
    for e in ["u0", "u1", "t07"] {
        let f = Filter::from_json(&serde_json::json!({"tags": {"contains": e}})).unwrap();
        let _ = r.count(C, Some(&f));
    }
    let mut t = Txn::new();
    t.put(&key(7), thing(99_999)).unwrap();
    let _ = r.commit(t);
    let _ = r.verify();
}

#[test]
fn a_damaged_index_directory_with_a_right_checksum_never_panics() {
    let (log, snap) = build();
    let clean = snap.bytes.lock().unwrap().clone();
    let meta = meta_offset(&clean);
    let end = clean.len() - 12;
    // The intact snapshot answers like a replay.
    open(&log, Some(&snap)).unwrap();
    let cases = std::env::var("FORGED_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300u64);
    let mut rng = Rng(17);
    let mut panics = Vec::new();
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    for case in 0..cases {
        let mut b = clean.clone();
        for _ in 0..1 + rng.below(3) {
            let at = meta + rng.below((end - meta) as u64) as usize;
            match rng.below(3) {
                0 => b[at] ^= 1 << rng.below(8),
                1 => b[at] = rng.next() as u8,
                _ => b[at] = b[at].wrapping_add(1),
            }
        }
        let crc = ibexdb::testing::snapshot_checksum(&b[meta..end]).to_le_bytes();
        b[end + 8..].copy_from_slice(&crc);
        let s = Shared::default();
        *s.bytes.lock().unwrap() = b;
        let l = Shared::default();
        *l.bytes.lock().unwrap() = log.bytes.lock().unwrap().clone();
        let r = catch_unwind(AssertUnwindSafe(|| {
            if let Ok(mut r) = open(&l, Some(&s)) {
                queries(&mut r);
            }
        }));
        if let Err(p) = r {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panics.push(format!("case {case}: {msg}"));
        }
    }
    std::panic::set_hook(hook);
    assert!(panics.is_empty(), "{} panics: {panics:#?}", panics.len());
}
