//! Timing, not a check (ignored by default): open a repository of `OPEN_QUERY_N` items (default
//! 1,000,000) from its snapshot and run the first indexed query of 1,000 rows (the benchmark's
//! "open N items + first indexed query", issue 24 §2), on files in the page cache. Run:
//! `cargo test --release --test open_query_timing -- --ignored --nocapture`.

mod common;
use common::*;
use ibexdb::{FileStorage, Query, Repo, Schema, Txn};
use std::time::Instant;

const C: &str = "items";

fn open(dir: &std::path::Path) -> Repo<FileStorage> {
    let log = FileStorage::open(dir.join("log")).unwrap();
    let snap = FileStorage::open(dir.join("snap")).unwrap();
    let mut r = Repo::open(log, Some(snap), signed(1)).unwrap();
    let schema = Schema::from_json(C, &serde_json::json!({"indexes": ["count"]})).unwrap();
    r.define_schema(C, schema).unwrap();
    r
}

fn range(lo: u64) -> Query {
    Query::from_json(&serde_json::json!({
        "collection": C, "where": {"count": {"gte": lo, "lt": lo + 1000}}, "sort": ["count"]}))
    .unwrap()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[test]
#[ignore]
fn open_and_first_indexed_query() {
    let n: u64 = std::env::var("OPEN_QUERY_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let dir = std::env::temp_dir().join(format!("ibex-open-query-{n}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    {
        let mut r = open(&dir);
        let t = Instant::now();
        // The index exists before the load (as in the benchmark): every commit maintains it.
        let agg = serde_json::json!({"collection": C, "aggregates": {"m": {"min": "count"}}});
        r.aggregate(&ibexdb::AggregateQuery::from_json(&agg).unwrap())
            .unwrap();
        for chunk in 0..n.div_ceil(1000) {
            let mut t = Txn::new();
            for i in chunk * 1000..((chunk + 1) * 1000).min(n) {
                t.put(&format!("{C}/item{i:08}"), item(i)).unwrap();
            }
            r.commit(t).unwrap();
        }
        r.seal().unwrap();
        r.write_snapshot().unwrap();
        r.close().unwrap();
        eprintln!("loaded {n} items in {:.1} s", t.elapsed().as_secs_f64());
    }
    let (mut opens, mut firsts, mut seconds, mut writes) = (vec![], vec![], vec![], vec![]);
    for run in 0..7u64 {
        let lo = (n / 2 + run * 7919) % n.saturating_sub(1000).max(1);
        let t = Instant::now();
        let mut r = open(&dir);
        let opened = t.elapsed().as_secs_f64() * 1e3;
        assert!(r.open_report().from_snapshot && r.open_report().replayed_frames == 0);
        let t = Instant::now();
        let rows = r.query(&range(lo)).unwrap().rows;
        let first = t.elapsed().as_secs_f64() * 1e3;
        assert_eq!(rows.len(), 1000.min(n as usize));
        if run == 0 {
            let c = r.state().collection(C).unwrap();
            eprintln!(
                "after the first query: {} item blocks still cold",
                c.cold().len()
            );
        }
        let t = Instant::now();
        r.query(&range(lo / 3)).unwrap();
        let second = t.elapsed().as_secs_f64() * 1e3;
        // A write after the open: it reads the index whole first (the cost moved there).
        let t = Instant::now();
        let mut tx = Txn::new();
        tx.put(&format!("{C}/item{:08}", lo), item(lo)).unwrap();
        r.commit(tx).unwrap();
        let write = t.elapsed().as_secs_f64() * 1e3;
        drop(r);
        eprintln!(
            "run {run}: open {opened:.2} ms, first query {first:.2} ms, another range {second:.2} ms, first write {write:.2} ms"
        );
        opens.push(opened);
        firsts.push(first);
        seconds.push(second);
        writes.push(write);
    }
    let (o, f) = (median(opens), median(firsts));
    eprintln!(
        "median at {n}: open {o:.2} ms + first indexed query of 1,000 rows {f:.2} ms = {:.2} ms; another range {:.2} ms; first write after {:.2} ms",
        o + f,
        median(seconds),
        median(writes)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
