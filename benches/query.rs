//! Query benchmark: `cargo bench --bench query` (sizes 100k and 1M; `QUERY_BENCH_SIZES=10000`
//! for a quick run). Prints a table and writes target/bench-query.json.
//!
//! Items have the DESIGN.md shape `{title: "Item i", count: i, tags: {"tag i", "category i%5"}}`
//! and are loaded with `State::apply` in commits of 1,000. Each operation is timed as a loop
//! (total / iterations) and the median of several runs is reported.

use ibexdb::testing::QueryEngine;
use ibexdb::testing::{ChangeSink, NoSink, State};
use ibexdb::Identity;
use ibexdb::{AggregateQuery, Filter, Query};
use ibexdb::{Change, Commit, CommitId, FieldOp, Op};
use ibexdb::{Map, Value};
use serde_json::{json, Value as J};
use std::hint::black_box;
use std::time::{Duration, Instant};

const COLL: &str = "items";
const RUNS: usize = 5;

fn id(i: usize) -> String {
    format!("item{i:08}")
}

fn item(i: usize) -> Map {
    let mut m = Map::new();
    m.insert("title".into(), Value::from(format!("Item {i}")));
    m.insert("count".into(), Value::from(i as i64));
    m.insert(
        "tags".into(),
        Value::set([format!("tag {i}"), format!("category {}", i % 5)]),
    );
    m
}

struct Loader {
    author: ibexdb::PublicKey,
    hlc: u64,
    index: u32,
}

impl Loader {
    fn commit(&mut self, changes: Vec<(String, Op)>) -> (Commit, CommitId) {
        self.hlc += 1;
        let c = Commit {
            trusted: true,
            author: self.author,
            hlc: self.hlc,
            parents: vec![],
            changes: changes
                .into_iter()
                .map(|(id, op)| Change {
                    collection: COLL.into(),
                    id,
                    op,
                })
                .collect(),
        };
        let cid = CommitId::of(&c.encode());
        (c, cid)
    }

    fn apply(&mut self, state: &mut State, c: &(Commit, CommitId), sink: &mut dyn ChangeSink) {
        self.index += 1;
        state.apply(&c.0, &c.1, self.index, sink);
    }
}

fn build(n: usize, loader: &mut Loader) -> State {
    let mut state = State::new();
    for start in (0..n).step_by(1000) {
        let changes = (start..(start + 1000).min(n))
            .map(|i| (id(i), Op::Put(item(i))))
            .collect();
        let c = loader.commit(changes);
        loader.apply(&mut state, &c, &mut NoSink);
    }
    state
}

/// Median seconds per call of `f` over RUNS runs, each looping at least `min_iters` times and
/// about 100 ms.
fn time<R>(min_iters: usize, mut f: impl FnMut() -> R) -> f64 {
    let t = Instant::now();
    black_box(f());
    let one = t.elapsed().max(Duration::from_nanos(20));
    let iters = ((0.1 / one.as_secs_f64()) as usize).clamp(min_iters, 1_000_000);
    let mut runs: Vec<f64> = (0..RUNS)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..iters {
                black_box(f());
            }
            t.elapsed().as_secs_f64() / iters as f64
        })
        .collect();
    runs.sort_by(f64::total_cmp);
    runs[RUNS / 2]
}

fn fmt(s: f64) -> String {
    if s < 1e-6 {
        format!("{:.0} ns", s * 1e9)
    } else if s < 1e-3 {
        format!("{:.2} µs", s * 1e6)
    } else {
        format!("{:.2} ms", s * 1e3)
    }
}

struct Row {
    name: String,
    secs: f64,
    rows: usize,
    plan: String,
    target: Option<f64>,
}

fn q(j: J) -> Query {
    Query::from_json(&j).unwrap()
}

/// Times the engine's share of a commit.
struct Timed<'a> {
    engine: &'a mut QueryEngine,
    spent: Duration,
}

impl ChangeSink for Timed<'_> {
    fn watches(&self, c: &str) -> bool {
        self.engine.watches(c)
    }
    fn changed(&mut self, c: &str, id: &str, old: Option<&Map>, new: Option<&Map>) {
        let t = Instant::now();
        self.engine.changed(c, id, old, new);
        self.spent += t.elapsed();
    }
}

/// Per-commit cost of a live query at collection size `n`, median over runs: (whole commit
/// including the engine and take_live_changes, the engine's share: index upkeep + live query
/// + take_live_changes, subscribe time).
fn live_cost(n: usize, window_hits: bool) -> (f64, f64, f64) {
    let mut loader = Loader {
        author: Identity::from_entropy(&[1; 48]).public(),
        hlc: 0,
        index: 0,
    };
    let mut state = build(n, &mut loader);
    let mut engine = QueryEngine::new();
    engine.set_indexes(COLL, &["count".into(), "tags".into()], &state);
    let lq = q(json!({"collection": COLL,
        "where": {"tags": {"contains": "category 3"}, "title": {"includes": "7"}},
        "sort": [{"field": "count", "desc": true}], "limit": 100}));
    let t = Instant::now();
    let (live_id, mut rows) = engine.subscribe(&state, lq.clone()).unwrap();
    let subscribe = t.elapsed().as_secs_f64();
    assert_eq!(rows.len(), 100);
    let per = 1000;
    let mut rng = 0x1234_5678_9abc_def0u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    // Random items, or (window_hits) items of the query near the top of the window, whose
    // new count moves them within, into or out of the window.
    let commits: Vec<_> = (0..per * RUNS)
        .map(|_| {
            let (i, new_count) = if window_hits {
                let r = (next() % 5_000) as usize;
                (
                    n - 1 - (r / 5 * 5 + 1).min(n - 2),
                    n as i64 - (next() % 10_000) as i64,
                )
            } else {
                ((next() % n as u64) as usize, (next() % n as u64) as i64)
            };
            let p = [("count".to_string(), FieldOp::Assign(Value::from(new_count)))]
                .into_iter()
                .collect();
            loader.commit(vec![(id(i), Op::Patch(p))])
        })
        .collect();
    let mut totals = Vec::new();
    let mut engines = Vec::new();
    for r in 0..RUNS {
        let mut spent = Duration::ZERO;
        let t = Instant::now();
        for c in &commits[r * per..(r + 1) * per] {
            let mut timed = Timed {
                engine: &mut engine,
                spent: Duration::ZERO,
            };
            loader.apply(&mut state, c, &mut timed);
            spent += timed.spent;
            let t2 = Instant::now();
            for (_, ch) in engine.take_live_changes() {
                ch.apply(&mut rows);
            }
            spent += t2.elapsed();
        }
        totals.push(t.elapsed().as_secs_f64() / per as f64);
        engines.push(spent.as_secs_f64() / per as f64);
    }
    // The client's rows (initial + every change) still equal a fresh run.
    assert_eq!(rows, engine.run(&state, &lq).unwrap().rows);
    assert_eq!(engine.live_rows(live_id).unwrap(), rows);
    totals.sort_by(f64::total_cmp);
    engines.sort_by(f64::total_cmp);
    (totals[RUNS / 2], engines[RUNS / 2], subscribe)
}

fn main() {
    let sizes: Vec<usize> = std::env::var("QUERY_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![100_000, 1_000_000]);
    let parts = std::env::var("QUERY_BENCH_PARTS").unwrap_or_else(|_| "queries,live".into());
    let mut out = serde_json::Map::new();
    let mut live_rows = Vec::new();
    for &n in sizes.iter().filter(|_| parts.contains("queries")) {
        let mut loader = Loader {
            author: Identity::from_entropy(&[1; 48]).public(),
            hlc: 0,
            index: 0,
        };
        let t = Instant::now();
        let state = build(n, &mut loader);
        let load = t.elapsed().as_secs_f64();
        let plain = QueryEngine::new();
        let mut indexed = QueryEngine::new();
        let t = Instant::now();
        indexed.set_indexes(COLL, &["count".into()], &state);
        indexed.build_indexes(&state); // otherwise built on first use
        let count_build = t.elapsed().as_secs_f64();
        // Keeps the built `count` index; builds `tags` (the collection's indexes are built).
        indexed.set_indexes(COLL, &["count".into(), "tags".into()], &state);
        let index_build = t.elapsed().as_secs_f64();
        let mut rows: Vec<Row> = Vec::new();
        let only = std::env::var("QUERY_BENCH_FILTER").unwrap_or_default();
        let mut bench = |name: &str, e: &QueryEngine, query: &Query, target: Option<f64>| {
            if !name.contains(only.as_str()) {
                return;
            }
            let r = e.run(&state, query).unwrap();
            let plan = r.plan.to_json();
            let secs = time(3, || e.run(&state, query).unwrap());
            rows.push(Row {
                name: name.into(),
                secs,
                rows: r.rows.len(),
                plan: format!(
                    "{}{}",
                    plan["access"].as_str().unwrap(),
                    plan.get("op")
                        .map_or(String::new(), |o| format!(" {}", o.as_str().unwrap()))
                ),
                target,
            });
        };
        let lo = (n / 2) as i64;
        let range =
            q(json!({"collection": COLL, "where": {"count": {"gte": lo, "lt": lo + 1000}}}));
        bench("range query, 1,000 rows (scan)", &plain, &range, None);
        bench(
            "range query, 1,000 rows (index)",
            &indexed,
            &range,
            Some(0.5e-3),
        );
        let complex = q(json!({"collection": COLL,
            "where": {"tags": {"contains": "category 3"}, "title": {"includes": "7"}},
            "sort": [{"field": "count", "desc": true}], "limit": 100}));
        bench("complex query, top 100 (scan)", &plain, &complex, None);
        bench("complex query, top 100 (index)", &indexed, &complex, None);
        let eq = q(json!({"collection": COLL, "where": {"count": lo + 7}}));
        bench("equality lookup (index)", &indexed, &eq, Some(5e-6));
        bench("equality lookup (scan)", &plain, &eq, None);
        let contains = q(json!({"collection": COLL, "where": {"tags": {"contains": "tag 12345"}}}));
        bench(
            "set contains lookup (index)",
            &indexed,
            &contains,
            Some(5e-6),
        );

        let mut extra = |name: &str,
                         secs: &mut dyn FnMut() -> f64,
                         n_rows: usize,
                         plan: &str,
                         target: Option<f64>| {
            if !name.contains(only.as_str()) {
                return;
            }
            rows.push(Row {
                name: name.into(),
                secs: secs(),
                rows: n_rows,
                plan: plan.into(),
                target,
            })
        };
        let c = indexed.count(&state, COLL, None).unwrap();
        extra(
            "count (all)",
            &mut || time(1000, || indexed.count(&state, COLL, None).unwrap()),
            c,
            "O(1)",
            Some(1e-6),
        );
        let f = Filter::from_json(&json!({"count": {"gte": lo, "lt": lo + 1000}})).unwrap();
        let c = indexed.count(&state, COLL, Some(&f)).unwrap();
        extra(
            "count (indexed range)",
            &mut || time(10, || indexed.count(&state, COLL, Some(&f)).unwrap()),
            c,
            "index entries",
            None,
        );
        let k = plain.keys(&state, COLL).len();
        extra(
            "keys",
            &mut || time(1, || plain.keys(&state, COLL)),
            k,
            "scan",
            None,
        );
        let agg = AggregateQuery::from_json(&json!({"collection": COLL, "aggregates": {
            "total": {"sum": "count"}, "lo": {"min": "count"}, "hi": {"max": "count"},
            "mean": {"avg": "count"}, "n": {"count": true}}}))
        .unwrap();
        let num = |x: f64| json!(Value::from(x));
        let expect = json!({"total": num((n as f64) * (n as f64 - 1.0) / 2.0), "lo": 0,
            "hi": n - 1, "mean": num((n as f64 - 1.0) / 2.0), "n": n});
        let a1 = plain.aggregate(&state, &agg).unwrap();
        assert_eq!(a1, expect);
        assert_eq!(a1, indexed.aggregate(&state, &agg).unwrap());
        // A fresh engine has no running aggregates yet: its first aggregate on an unindexed
        // path is one scan (which also builds them).
        extra(
            "aggregate sum/min/max/avg (scan: first use)",
            &mut || time(1, || QueryEngine::new().aggregate(&state, &agg).unwrap()),
            1,
            "scan",
            None,
        );
        extra(
            "aggregate sum/min/max/avg (running aggregates, no index)",
            &mut || time(1, || plain.aggregate(&state, &agg).unwrap()),
            1,
            "maintained values",
            if n >= 1_000_000 { Some(10e-3) } else { None },
        );
        extra(
            "aggregate sum/min/max/avg (index)",
            &mut || time(1, || indexed.aggregate(&state, &agg).unwrap()),
            1,
            "index entries",
            if n >= 1_000_000 { Some(10e-3) } else { None },
        );
        let grouped = AggregateQuery::from_json(&json!({"collection": COLL, "aggregates": {
            "total": {"sum": "count"}, "n": {"count": true}}, "groupBy": "title"}))
        .unwrap();
        if n <= 100_000 {
            extra(
                "aggregate grouped by title (scan)",
                &mut || time(1, || plain.aggregate(&state, &grouped).unwrap()),
                n,
                "scan",
                None,
            );
        }

        println!(
            "\nN = {n}: load {:.2} s, index build (count, tags) {:.2} s, of which count {:.1} ms",
            load,
            index_build,
            count_build * 1e3
        );
        println!(
            "{:<38} {:>12} {:>9}  {:<18} target",
            "operation", "time", "rows", "plan"
        );
        let mut j = serde_json::Map::new();
        for r in &rows {
            let verdict = r.target.map_or(String::new(), |t| {
                format!("< {} {}", fmt(t), if r.secs < t { "ok" } else { "MISSED" })
            });
            println!(
                "{:<38} {:>12} {:>9}  {:<18} {}",
                r.name,
                fmt(r.secs),
                r.rows,
                r.plan,
                verdict
            );
            j.insert(
                r.name.clone(),
                json!({"seconds": r.secs, "rows": r.rows, "plan": r.plan, "target_seconds": r.target,
                       "met": r.target.map(|t| r.secs < t)}),
            );
        }
        j.insert("load_seconds".into(), json!(load));
        j.insert("index_build_seconds".into(), json!(index_build));
        j.insert("count_index_build_seconds".into(), json!(count_build));
        out.insert(n.to_string(), J::Object(j));
        drop(state);
    }

    // Live-query update cost per commit: 10k vs the largest size.
    let mut live_sizes = vec![10_000];
    if let Some(&max) = sizes.iter().max() {
        if max > 10_000 {
            live_sizes.push(max);
        }
    }
    if !parts.contains("live") {
        live_sizes.clear();
    }
    if !live_sizes.is_empty() {
        println!(
            "\nlive query (contains + includes, sort count desc, limit 100), one-item commit:"
        );
        println!(
            "{:>9} {:<14} {:>14} {:>14} {:>12} {:>12}",
            "N", "updates", "whole commit", "engine part", "target", "subscribe"
        );
    }
    let mut lj = serde_json::Map::new();
    for &n in &live_sizes {
        for window in [false, true] {
            let (whole, engine, sub) = live_cost(n, window);
            let kind = if window {
                "window items"
            } else {
                "random items"
            };
            println!(
                "{:>9} {:<14} {:>14} {:>14} {:>14} {:>12}",
                n,
                kind,
                fmt(whole),
                fmt(engine),
                if engine < 20e-6 {
                    "< 20 µs ok"
                } else {
                    "MISSED"
                },
                fmt(sub)
            );
            lj.insert(
                format!("{n} {kind}"),
                json!({"whole_commit_seconds": whole, "engine_seconds": engine,
                       "subscribe_seconds": sub, "target_seconds": 20e-6, "met": engine < 20e-6}),
            );
            live_rows.push((n, kind, engine));
        }
    }
    out.insert("live_update_per_commit".into(), J::Object(lj));
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/target/bench-query.json");
    std::fs::write(path, serde_json::to_string_pretty(&J::Object(out)).unwrap()).unwrap();
    println!("\nwrote {path}");
}
