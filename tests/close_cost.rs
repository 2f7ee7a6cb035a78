//! Timing, not a check (ignored by default): what a snapshot at close costs after a session of
//! single-item writes on a repository of `CLOSE_N` items (default 100,000) with an index on
//! `count` — the benchmark's [page] write rows, whose last sample carries the close (issue 24).
//! Run: `cargo test --release --test close_cost -- --ignored --nocapture`.

mod common;
use common::*;
use ibexdb::{FileStorage, Repo, Schema, Txn};
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

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One session: open, `writes` single-item commits of kind `kind`, then the timed snapshot.
fn session(dir: &std::path::Path, n: u64, kind: &str, round: u64, writes: u64) -> (f64, u64) {
    let mut r = open(dir);
    let before = r.snapshot_bytes().unwrap();
    let mut rng = Rng(round * 7919 + 1);
    for k in 0..writes {
        let mut t = Txn::new();
        let fresh = n + round * writes + k;
        match kind {
            "create" => {
                t.put(&format!("{C}/page-item-{fresh}"), item(fresh))
                    .unwrap();
            }
            _ => {
                let i = rng.below(n);
                t.put(&format!("{C}/item{i:08}"), item(1_000_000 + fresh))
                    .unwrap();
            }
        }
        r.commit(t).unwrap();
    }
    r.flush().unwrap();
    let t = Instant::now();
    r.write_snapshot().unwrap();
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let grew = r.snapshot_bytes().unwrap().saturating_sub(before);
    drop(r);
    (ms, grew)
}

#[test]
#[ignore]
fn snapshot_after_single_writes() {
    let n: u64 = std::env::var("CLOSE_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    for kind in ["create", "update"] {
        let dir =
            std::env::temp_dir().join(format!("ibex-close-{kind}-{n}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        {
            let mut r = open(&dir);
            // Build the index on the empty collection, as the benchmark does: the snapshot
            // then holds it, and each session's snapshot keeps it with that session's writes.
            let first = serde_json::json!({"collection": C, "aggregates": {"m": {"min": "count"}}});
            r.aggregate(&ibexdb::AggregateQuery::from_json(&first).unwrap())
                .unwrap();
            for chunk in 0..n.div_ceil(1000) {
                let mut t = Txn::new();
                for i in chunk * 1000..((chunk + 1) * 1000).min(n) {
                    t.put(&format!("{C}/item{i:08}"), item(i)).unwrap();
                }
                r.commit(t).unwrap();
            }
            // Single-item commits before the timed sessions (the benchmark's worker rows).
            let prior: u64 = std::env::var("CLOSE_PRIOR")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            for k in 0..prior {
                let mut t = Txn::new();
                t.put(&format!("{C}/w-{k}"), item(k)).unwrap();
                r.commit(t).unwrap();
            }
            r.seal().unwrap();
            r.write_snapshot().unwrap();
        }
        let mut times = vec![];
        for round in 0..7 {
            let (ms, grew) = session(&dir, n, kind, round, 300);
            eprintln!("{kind} round {round}: snapshot {ms:.2} ms, file +{grew} B");
            times.push(ms);
        }
        eprintln!(
            "{kind}: median snapshot after 300 single writes at {n}: {:.2} ms",
            median(times)
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
