//! Eager (as commits) against lazy (on every read) migration, measured on `IBEX_MIGRATION_N`
//! items (default 1,000,000; docs/design.md §2.4 records the numbers and the decision). Run:
//! `cargo test --release --test migration_cost -- --ignored --nocapture`.

mod common;
use common::*;
use ibexdb::{map, Map, MemStorage, Query, Repo, Storage, Txn, Value};
use serde_json::json;
use std::time::Instant;

/// v1 → v2: `title` becomes `name`, `rank` is added (from the item's number).
fn migrate(mut m: Map) -> Map {
    if let Some(t) = m.remove("title") {
        m.insert("name".into(), t);
    }
    let n = match m.get("n") {
        Some(Value::Number(n)) => *n,
        _ => 0.0,
    };
    m.insert("rank".into(), Value::from((n as i64) % 1000));
    m
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

fn log_len(r: &Repo<impl Storage>) -> u64 {
    r.log_len()
}

#[test]
#[ignore = "a measurement: run in release with --ignored --nocapture"]
fn eager_against_lazy_migration() {
    let n: u64 = std::env::var("IBEX_MIGRATION_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let mut o = signed(1);
    o.clock = clock(T0);
    let mut r = Repo::open(MemStorage::new(), None, o).unwrap();
    let v1 = json!({"fields": {"title": {"type": "string"}, "n": {"type": "integer"}}});
    let v2 = json!({"fields": {"name": {"type": "string"}, "n": {"type": "integer"},
                               "rank": {"type": "integer", "required": true}},
                    "indexes": ["rank"]});
    r.declare_app(1, &[("tasks".into(), v1)]).unwrap();
    let t = Instant::now();
    for chunk in 0..n.div_ceil(1000) {
        let mut txn = Txn::new();
        for i in chunk * 1000..((chunk + 1) * 1000).min(n) {
            let m = map! {"title" => format!("task {i}"), "n" => i as i64}.as_map();
            txn.put(&format!("tasks/{i:08}"), m).unwrap();
        }
        r.commit(txn).unwrap();
    }
    r.flush().unwrap();
    eprintln!("{n} items written at v1 in {:.0} ms", ms(t));
    let before = log_len(&r);

    // Lazy: nothing at upgrade; every read maps the item; a query on a migrated field scans.
    let t = Instant::now();
    let keys = r.keys("tasks").unwrap();
    let mut sum = 0usize;
    for k in &keys {
        let m = r.get(&format!("tasks/{k}")).unwrap().unwrap().clone();
        sum += migrate(m).len();
    }
    let lazy_read = ms(t);
    let t = Instant::now();
    let mut hits = 0;
    for k in &keys {
        let m = migrate(r.get(&format!("tasks/{k}")).unwrap().unwrap().clone());
        if m.get("rank") == Some(&Value::from(7i64)) {
            hits += 1;
        }
    }
    let lazy_query = ms(t);

    // Eager: the upgrade writes every item once; reads and indexed queries are plain.
    r.define_schema(
        "tasks",
        ibexdb::Schema::from_json("tasks", &json!({"indexes": ["rank"]})).unwrap(),
    )
    .unwrap();
    r.declare_app(2, &[("tasks".into(), v2.clone())]).unwrap();
    r.store_schemas(2, &[("tasks".into(), v2)]).unwrap();
    let t = Instant::now();
    let mut f = |_: u32, _: &str, m: Map| Ok(migrate(m));
    let done = r
        .migrate("tasks", &[2], &mut f, 1000, &mut |_, _| {})
        .unwrap();
    let eager_upgrade = ms(t);
    assert_eq!(done as u64, n);
    let grew = log_len(&r) - before;
    let t = Instant::now();
    let mut sum2 = 0usize;
    for k in &keys {
        sum2 += r.get(&format!("tasks/{k}")).unwrap().unwrap().len();
    }
    let eager_read = ms(t);
    assert_eq!(sum, sum2);
    let q = Query::from_json(&json!({"collection": "tasks", "where": {"rank": 7}})).unwrap();
    r.query(&q).unwrap(); // builds the index
    let t = Instant::now();
    let rows = r.query(&q).unwrap().rows.len();
    let eager_query = ms(t);
    assert_eq!(rows, hits);
    let t = Instant::now();
    let again = r
        .migration_pending("tasks", &[2], 2, usize::MAX)
        .unwrap()
        .len();
    let scan = ms(t);
    assert_eq!(again, 0);
    eprintln!("migration of {n} items (v1 -> v2, rename + new indexed field):");
    eprintln!(
        "  eager: upgrade {eager_upgrade:.0} ms (log +{:.1} MB, {:.0} B/item), read all {eager_read:.0} ms, query on the new field {eager_query:.2} ms, scan for leftovers {scan:.0} ms",
        grew as f64 / 1e6,
        grew as f64 / n as f64
    );
    eprintln!(
        "  lazy:  upgrade 0 ms, read all {lazy_read:.0} ms, query on the new field {lazy_query:.0} ms (a scan that maps every item)"
    );
}
