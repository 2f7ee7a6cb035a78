//! Property tests for queries, indexes and live queries: the engine against a brute-force
//! reference (`reference.rs`) on random data and queries (`gen.rs`).
//!
//! Seeded loops: every case prints its seed when it fails; rerun one case with
//! `QUERY_PROPS_SEED=<seed> QUERY_PROPS_CASES=1 cargo test --release --test query_props`.

use ibexdb::testing::QueryEngine;
use ibexdb::testing::{ChangeSink, NoSink, State};
use ibexdb::Error;
use ibexdb::Op;
use ibexdb::{AggregateQuery, Filter, LiveChange, Query};
use ibexdb::{Map, Value};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value as J};
use std::collections::{BTreeMap, BTreeSet};
use std::panic::{catch_unwind, AssertUnwindSafe};

const COLL: &str = "items";
const PATHS: [&str; 7] = ["a", "b", "s", "n.x", "n.y", "m", "n"];
const INDEXED: [&str; 6] = ["a", "b", "s", "n.x", "m", "n"];

fn seeds(default_base: u64, default_cases: u64) -> Vec<u64> {
    let base = std::env::var("QUERY_PROPS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default_base);
    let cases = std::env::var("QUERY_PROPS_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default_cases);
    (0..cases).map(|i| base + i).collect()
}

fn run_cases(name: &str, seeds: Vec<u64>, case: impl Fn(u64)) {
    for seed in seeds {
        if let Err(e) = catch_unwind(AssertUnwindSafe(|| case(seed))) {
            eprintln!(
                "{name}: case failed with seed {seed} \
                 (rerun: QUERY_PROPS_SEED={seed} QUERY_PROPS_CASES=1)"
            );
            std::panic::resume_unwind(e);
        }
    }
}

mod gen;
mod reference;

use gen::*;
use reference::*;

/// Indexed results == full-scan results == the reference, for random data and queries; plus
/// counts and aggregates.
#[test]
fn queries_agree_with_reference_and_across_plans() {
    let plans = std::sync::Mutex::new(BTreeMap::<String, usize>::new());
    run_cases("queries", seeds(1000, 250), |seed| {
        let mut r = StdRng::seed_from_u64(seed);
        let mut state = State::new();
        // `maintained` has its indexes from the start and sees every change; `rebuilt` builds
        // them at the end; `plain` has none.
        let mut maintained = QueryEngine::new();
        maintained.set_indexes(COLL, &indexed_paths(), &state);
        maintained.build_indexes(&state);
        assert!(maintained.indexes_built(COLL));
        let pool = r.random_range(5..60);
        for hlc in 1..r.random_range(2..40) {
            let ch = rnd_commit(&mut r, &state, pool);
            commit(&mut state, &mut maintained, hlc, ch);
        }
        maintained.verify_indexes(&state).unwrap();
        let mut rebuilt = QueryEngine::new();
        rebuilt.set_indexes(COLL, &indexed_paths(), &state);
        let plain = QueryEngine::new();
        for _ in 0..60 {
            let qj = rnd_query(&mut r, true);
            let q = Query::from_json(&qj).unwrap_or_else(|e| panic!("{qj}: {e}"));
            assert_eq!(
                Query::from_json(&q.to_json()).unwrap(),
                q,
                "round trip of {qj}"
            );
            let want = reference(&state, &qj);
            for (name, e) in [
                ("plain", &plain),
                ("maintained", &maintained),
                ("rebuilt", &rebuilt),
            ] {
                let got = outcome(e.run(&state, &q));
                assert_eq!(
                    got,
                    want,
                    "{name} engine, query {qj}\nplan {:?}",
                    e.explain(&state, &q)
                );
            }
            let pj = maintained.explain(&state, &q).unwrap().to_json();
            let kind = format!("{} {}", pj["access"], pj["op"]);
            *plans.lock().unwrap().entry(kind).or_default() += 1;
            // count
            let n = ref_count(&state, qj.get("where"));
            for e in [&plain, &maintained] {
                assert_eq!(
                    e.count(&state, COLL, q.filter.as_ref()).unwrap(),
                    n,
                    "count {qj}"
                );
            }
            // aggregates over a random path, sometimes grouped
            let path = PATHS[r.random_range(0..PATHS.len())];
            let mut aj = json!({"collection": COLL, "aggregates": {
                "n": {"count": true}, "c": {"count": path}, "s": {"sum": path},
                "lo": {"min": path}, "hi": {"max": path}, "m": {"avg": path}}});
            if let Some(w) = qj.get("where") {
                aj["where"] = w.clone();
            }
            if r.random_bool(0.3) {
                aj["groupBy"] = json!(PATHS[r.random_range(0..PATHS.len())]);
            }
            let aq = AggregateQuery::from_json(&aj).unwrap();
            let a1 = plain.aggregate(&state, &aq).unwrap();
            let a2 = maintained.aggregate(&state, &aq).unwrap();
            assert_eq!(a1, a2, "aggregate {aj}");
            if aj.get("groupBy").is_none() {
                assert_eq!(
                    a1,
                    ref_aggregate(&state, qj.get("where"), path),
                    "aggregate {aj}"
                );
            }
        }
        // Single-field conditions on indexed paths are served by their index unless it would
        // visit a quarter of the collection or more (then a scan is cheaper).
        let n = state.collection(COLL).map_or(0, |c| c.count());
        for (j, path) in [
            (json!({"a": 1}), "a"),
            (json!({"b": {"prefix": "a"}}), "b"),
            (json!({"s": {"contains": "a"}}), "s"),
            (json!({"n.x": {"gte": 1, "lt": 3}}), "n.x"),
        ] {
            let f = Filter::from_json(&j).unwrap();
            let q = Query {
                filter: Some(f.clone()),
                ..Query::all(COLL)
            };
            let plan = maintained.explain(&state, &q).unwrap();
            let hits = maintained.count(&state, COLL, Some(&f)).unwrap();
            if plan.index().is_none() {
                assert!(n == 0 || hits * 4 >= n, "{j}: {hits} of {n} rows, {plan:?}");
            } else {
                assert_eq!(plan.index(), Some(path), "{j}: {plan:?}");
                assert!(!plan.residual_filter, "{j}: {plan:?}");
                assert_eq!(plan.estimated_rows, hits, "{j}: {plan:?}");
            }
        }
    });
    // The random queries must have exercised every access path.
    let plans = plans.into_inner().unwrap();
    eprintln!("plans used: {plans:?}");
    if std::env::var("QUERY_PROPS_CASES").is_err() {
        for op in ["range", "in", "prefix", "contains", "order", "order desc"] {
            let k = format!("\"index\" \"{op}\"");
            assert!(
                plans.get(&k).is_some_and(|n| *n > 0),
                "no {k} plan in {plans:?}"
            );
        }
        assert!(plans.get("\"scan\" null").is_some_and(|n| *n > 0));
    }
}

/// After every commit, each live query's rows (initial rows + every change set applied in
/// order) equal a fresh run of the same query, including sort + limit + offset windows.
#[test]
fn live_queries_track_fresh_runs() {
    let kinds = std::sync::Mutex::new([0usize; 4]);
    run_cases("live", seeds(5000, 200), |seed| {
        let mut r = StdRng::seed_from_u64(seed);
        let mut state = State::new();
        let mut engine = QueryEngine::new();
        if r.random_bool(0.7) {
            engine.set_indexes(COLL, &indexed_paths(), &state);
            // Built now (then maintained by every commit below) or on first use.
            if r.random_bool(0.5) {
                engine.build_indexes(&state);
            }
        }
        let pool = r.random_range(4..40);
        let mut hlc = 1;
        for _ in 0..r.random_range(0..15) {
            let ch = rnd_commit(&mut r, &state, pool);
            commit(&mut state, &mut engine, hlc, ch);
            hlc += 1;
        }
        // Live queries: random ones plus a sort + limit window that must refill.
        let mut lives = Vec::new();
        let mut specs: Vec<J> = (0..4).map(|_| rnd_query(&mut r, false)).collect();
        specs.push(json!({"collection": COLL, "sort": [{"field": "a", "desc": true}], "limit": 3, "offset": 1}));
        specs.push(json!({"collection": COLL, "where": {"a": {"gte": 0}}, "sort": ["a", {"field": "b", "desc": true}], "limit": 4}));
        for qj in specs {
            let q = Query::from_json(&qj).unwrap();
            let Ok((id, rows)) = engine.subscribe(&state, q.clone()) else {
                continue; // a set at a sort path: rejected like run() would
            };
            assert_eq!(
                Ok(rows.clone()),
                outcome(engine.run(&state, &q)),
                "initial rows of {qj}"
            );
            lives.push((id, q, qj, rows));
        }
        for step in 0..60 {
            let ch = rnd_commit(&mut r, &state, pool);
            commit(&mut state, &mut engine, hlc, ch);
            hlc += 1;
            if r.random_bool(0.3) {
                continue; // let changes from several commits merge
            }
            let changes: BTreeMap<_, LiveChange> = engine.take_live_changes().into_iter().collect();
            for (id, q, qj, rows) in lives.iter_mut() {
                if let Some(c) = changes.get(id) {
                    let mut k = kinds.lock().unwrap();
                    k[0] += c.added.len();
                    k[1] += c.removed.len();
                    k[2] += c.changed.len();
                    k[3] += c.moved.len();
                    drop(k);
                    c.apply(rows);
                    let back = serde_json::to_string(&c.to_json()).unwrap();
                    assert!(!back.is_empty());
                }
                assert_eq!(
                    Some(rows.clone()),
                    engine.live_rows(*id),
                    "step {step}: {qj}"
                );
                // (An error means a set reached a sort path of a matching item: nothing to
                // compare until it leaves.)
                if let Ok(fresh) = outcome(engine.run(&state, q)) {
                    assert_eq!(
                        *rows,
                        fresh,
                        "step {step}: {qj}\nchange {:?}",
                        changes.get(id)
                    );
                }
            }
            if step % 10 == 0 {
                engine.verify_indexes(&state).unwrap();
            }
        }
        assert!(engine.watches(COLL));
        for (id, ..) in &lives {
            assert!(engine.unsubscribe(*id));
        }
    });
    let k = kinds.into_inner().unwrap();
    eprintln!(
        "live changes: added {} removed {} changed {} moved {}",
        k[0], k[1], k[2], k[3]
    );
    assert!(k.iter().all(|n| *n > 0), "{k:?}");
}

/// Bulk commits: many items enter and leave a small window in one commit.
#[test]
fn live_window_survives_bulk_commits() {
    let mut state = State::new();
    let mut engine = QueryEngine::new();
    engine.set_indexes(COLL, &["a".to_string()], &state);
    engine.build_indexes(&state);
    let put = |i: usize, a: i64| {
        (
            format!("k{i:04}"),
            Op::Put([("a".to_string(), Value::from(a))].into_iter().collect()),
        )
    };
    commit(
        &mut state,
        &mut engine,
        1,
        (0..500).map(|i| put(i, i as i64)).collect(),
    );
    let q = Query::from_json(&json!({"collection": COLL, "sort": [{"field": "a", "desc": true}], "limit": 10, "offset": 5})).unwrap();
    let (_, mut rows) = engine.subscribe(&state, q.clone()).unwrap();
    let mut r = StdRng::seed_from_u64(7);
    for hlc in 2..40 {
        let ids: BTreeSet<usize> = (0..r.random_range(1..200))
            .map(|_| r.random_range(0..600))
            .collect();
        let ch = ids
            .into_iter()
            .map(|i| {
                if r.random_bool(0.3) {
                    (format!("k{i:04}"), Op::Delete)
                } else {
                    put(i, r.random_range(0..700))
                }
            })
            .collect();
        commit(&mut state, &mut engine, hlc, ch);
        for (_, c) in engine.take_live_changes() {
            c.apply(&mut rows);
        }
        assert_eq!(rows, engine.run(&state, &q).unwrap().rows, "commit {hlc}");
    }
    engine.verify_indexes(&state).unwrap();
}

#[test]
fn bad_queries_fail_with_a_reason() {
    let cases = [
        (
            json!({"collection": COLL, "where": {"a": {"like": "x"}}}),
            vec!["unknown operator", "like", "\"a\""],
        ),
        (
            json!({"collection": COLL, "where": {"a": {"lt": {"x": 1}}}}),
            vec!["lt", "\"a\"", "object"],
        ),
        (
            json!({"collection": COLL, "where": {"a": {"gte": null}}}),
            vec!["gte", "null"],
        ),
        (
            json!({"collection": COLL, "where": {"a": {"in": "x"}}}),
            vec!["in", "array"],
        ),
        (
            json!({"collection": COLL, "where": {"s": {"contains": 1}}}),
            vec!["contains", "string"],
        ),
        (
            json!({"collection": COLL, "where": {"b": {"prefix": ["a"]}}}),
            vec!["prefix", "string"],
        ),
        (
            json!({"collection": COLL, "where": {"b": {"includes": null}}}),
            vec!["includes", "string"],
        ),
        (
            json!({"collection": COLL, "where": {"or": {"a": 1}}}),
            vec!["or", "array"],
        ),
        (
            json!({"collection": COLL, "where": [1]}),
            vec!["where", "object"],
        ),
        (
            json!({"collection": COLL, "where": {"a": {"eq": {"$set": [1]}}}}),
            vec!["eq", "\"a\""],
        ),
        (
            json!({"collection": COLL, "sort": "a"}),
            vec!["sort", "array"],
        ),
        (
            json!({"collection": COLL, "sort": [{"field": ""}]}),
            vec!["sort"],
        ),
        (
            json!({"collection": COLL, "select": ["a."]}),
            vec!["select"],
        ),
        (json!({"collection": COLL, "offset": 1.5}), vec!["offset"]),
        (json!({"collection": 3}), vec!["collection"]),
        (
            json!({"collection": COLL, "filter": {}}),
            vec!["unknown", "filter"],
        ),
    ];
    for (j, words) in cases {
        match Query::from_json(&j) {
            Err(Error::InvalidQuery { reason }) => {
                for w in words {
                    assert!(reason.contains(w), "{j}: reason {reason:?} lacks {w:?}");
                }
            }
            other => panic!("{j}: expected InvalidQuery, got {other:?}"),
        }
    }
    for (j, w) in [
        (
            json!({"collection": COLL, "aggregates": {"x": {"median": "a"}}}),
            "median",
        ),
        (
            json!({"collection": COLL, "aggregates": {"x": {"sum": 1}}}),
            "sum",
        ),
        (
            json!({"collection": COLL, "aggregates": {"key": {"count": true}}, "groupBy": "a"}),
            "key",
        ),
    ] {
        match AggregateQuery::from_json(&j) {
            Err(Error::InvalidQuery { reason }) => assert!(reason.contains(w), "{reason}"),
            other => panic!("{j}: {other:?}"),
        }
    }

    // Sort on a set: with and without an index on the set field, in run and subscribe.
    let mut state = State::new();
    let item = |s: &[&str]| {
        let mut m = Map::new();
        m.insert("s".into(), Value::set(s.iter().copied()));
        m.insert("a".into(), Value::from(1i64));
        Op::Put(m)
    };
    commit(
        &mut state,
        &mut NoSink,
        1,
        vec![("x".into(), item(&["p"])), ("y".into(), item(&[]))],
    );
    let q = Query::from_json(&json!({"collection": COLL, "sort": [{"field": "s"}], "limit": 1}))
        .unwrap();
    let mut plain = QueryEngine::new();
    let mut indexed = QueryEngine::new();
    indexed.set_indexes(COLL, &["s".to_string()], &state);
    for e in [&mut plain, &mut indexed] {
        for r in [
            e.run(&state, &q).map(|_| ()),
            e.subscribe(&state, q.clone()).map(|_| ()),
        ] {
            match r {
                Err(Error::InvalidQuery { reason }) => {
                    assert!(
                        reason.contains("set") && reason.contains("\"s\""),
                        "{reason}"
                    )
                }
                other => panic!("expected a sort-on-set error, got {other:?}"),
            }
        }
    }
    // ... but not when no matching item holds a set there.
    let q2 = Query::from_json(
        &json!({"collection": COLL, "where": {"a": 2}, "sort": ["s"], "limit": 1}),
    )
    .unwrap();
    assert!(indexed.run(&state, &q2).unwrap().rows.is_empty());

    // An unknown collection is empty, not an error.
    let e = QueryEngine::new();
    let unknown =
        Query::from_json(&json!({"collection": "nope", "where": {"a": 1}, "sort": ["a"]})).unwrap();
    assert!(e.run(&state, &unknown).unwrap().rows.is_empty());
    assert_eq!(e.count(&state, "nope", unknown.filter.as_ref()).unwrap(), 0);
    assert!(e.keys(&state, "nope").is_empty());
    assert_eq!(
        e.explain(&state, &unknown).unwrap().to_json()["access"],
        "empty"
    );
    let agg = AggregateQuery::from_json(
        &json!({"collection": "nope", "aggregates": {"n": {"count": true}, "s": {"sum": "a"}}}),
    )
    .unwrap();
    assert_eq!(e.aggregate(&state, &agg).unwrap(), json!({"n": 0, "s": 0}));
}

#[test]
fn verify_detects_a_stale_index_and_live_query() {
    let mut state = State::new();
    let mut engine = QueryEngine::new();
    engine.set_indexes(COLL, &["a".to_string()], &state);
    let put = |a: i64| Op::Put([("a".to_string(), Value::from(a))].into_iter().collect());
    commit(
        &mut state,
        &mut engine,
        1,
        vec![("x".into(), put(1)), ("y".into(), put(2))],
    );
    // Declared indexes are built on first use, from the state as it is then.
    assert!(!engine.indexes_built(COLL));
    let by_a = Query::from_json(&json!({"collection": COLL, "where": {"a": {"gte": 2}}})).unwrap();
    assert_eq!(engine.run(&state, &by_a).unwrap().rows.len(), 1);
    assert!(engine.indexes_built(COLL));
    assert!(engine.watches(COLL));
    engine.verify_indexes(&state).unwrap();
    // A change the engine never saw: the index is now stale.
    commit(&mut state, &mut NoSink, 2, vec![("x".into(), put(5))]);
    match engine.verify_indexes(&state) {
        Err(Error::VerifyFailed { reason }) => assert!(reason.contains("items.a"), "{reason}"),
        other => panic!("expected VerifyFailed, got {other:?}"),
    }
    // Rebuilt: fine again. Then a stale live query.
    let mut engine = QueryEngine::new();
    engine.set_indexes(COLL, &["a".to_string()], &state);
    engine.run(&state, &by_a).unwrap();
    engine.verify_indexes(&state).unwrap();
    let q = Query::from_json(&json!({"collection": COLL, "sort": ["a"]})).unwrap();
    engine.subscribe(&state, q).unwrap();
    engine.verify_indexes(&state).unwrap();
    commit(&mut state, &mut engine, 3, vec![("z".into(), put(0))]);
    engine.verify_indexes(&state).unwrap();
    engine.set_indexes(COLL, &[], &state); // drop indexes; the live query remains
    commit(&mut state, &mut NoSink, 4, vec![("w".into(), put(9))]);
    match engine.verify_indexes(&state) {
        Err(Error::VerifyFailed { reason }) => assert!(reason.contains("live query"), "{reason}"),
        other => panic!("expected VerifyFailed, got {other:?}"),
    }
    // Watches only what it must.
    let e = QueryEngine::new();
    assert!(!e.watches(COLL));
}
