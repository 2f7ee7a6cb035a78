use super::live::{OrderTree, SEntry};
use super::*;
use crate::commit::Identity;
use crate::commit::{Change, Commit, CommitId, Op};
use crate::map;
use crate::state::NoSink;
use crate::value::Value;
use serde_json::json;

fn put_all(state: &mut State, sink: &mut dyn ChangeSink, items: Vec<(String, Value)>, hlc: u64) {
    let c = Commit {
        trusted: true,
        author: Identity::from_entropy(&[1; 48]).public(),
        hlc,
        parents: vec![],
        changes: items
            .into_iter()
            .map(|(id, v)| Change {
                collection: "items".into(),
                id,
                op: Op::Put(v.as_map()),
            })
            .collect(),
    };
    let id = CommitId::of(&c.encode());
    state.apply(&c, &id, hlc as u32, sink);
}

fn sample(n: i64) -> State {
    let mut s = State::new();
    let items = (0..n)
        .map(|i| {
            (
                format!("i{i:04}"),
                map! {"title" => format!("Item {i}"), "count" => i,
                "tags" => Value::set([format!("tag {i}"), format!("category {}", i % 5)])},
            )
        })
        .collect();
    put_all(&mut s, &mut NoSink, items, 1);
    s
}

fn q(j: serde_json::Value) -> Query {
    Query::from_json(&j).unwrap()
}

fn reason(e: Error) -> String {
    match e {
        Error::InvalidQuery { reason } => reason,
        other => panic!("expected InvalidQuery, got {other:?}"),
    }
}

#[test]
fn json_round_trip() {
    let j = json!({"collection":"items","where":{"count":{"gte":10,"lt":20},
        "tags":{"contains":"category 3"},"title":{"includes":"7"},
        "or":[{"a.b":1},{"not":{"c":{"in":[1,"x",null]}}}], "s": {"$set": ["x"]}},
        "sort":[{"field":"count","desc":true}, "title"],"limit":100,"offset":3,"select":["title","count"]});
    let q1 = q(j);
    let q2 = Query::from_json(&q1.to_json()).unwrap();
    assert_eq!(q1, q2);
    assert_eq!(q1.sort[1], SortKey::asc("title"));
    let a = AggregateQuery::from_json(&json!({"collection":"items","where":{"n":{"gt":1}},
        "aggregates":{"t":{"sum":"count"},"n":{"count":true},"c":{"count":"x"}},"groupBy":"g"}))
    .unwrap();
    assert_eq!(AggregateQuery::from_json(&a.to_json()).unwrap(), a);
}

#[test]
fn errors_name_the_problem() {
    let cases = [
        (
            json!({"collection":"items","where":{"count":{"between":1}}}),
            "between",
        ),
        (
            json!({"collection":"items","where":{"count":{"lt":[1]}}}),
            "lt",
        ),
        (
            json!({"collection":"items","where":{"count":{"in":3}}}),
            "in",
        ),
        (
            json!({"collection":"items","where":{"t":{"prefix":3}}}),
            "prefix",
        ),
        (
            json!({"collection":"items","where":{"t":{"contains":3}}}),
            "contains",
        ),
        (
            json!({"collection":"items","where":{"t":{}}}),
            "empty operator",
        ),
        (json!({"collection":"items","where":{"a..b":1}}), "a..b"),
        (json!({"collection":"items","frobnicate":1}), "frobnicate"),
        (json!({"collection":"items","limit":-1}), "limit"),
        (
            json!({"collection":"items","sort":[{"field":"x","desc":"yes"}]}),
            "desc",
        ),
        (json!({"where":{}}), "collection"),
    ];
    for (j, word) in cases {
        let r = reason(Query::from_json(&j).unwrap_err());
        assert!(r.contains(word), "{j}: {r}");
    }
    let s = sample(10);
    let e = QueryEngine::new();
    let r = reason(
        e.run(
            &s,
            &q(json!({"collection":"items","sort":[{"field":"tags"}]})),
        )
        .unwrap_err(),
    );
    assert!(r.contains("tags") && r.contains("set"), "{r}");
    assert!(e
        .run(&s, &q(json!({"collection":"nope","sort":["tags"]})))
        .unwrap()
        .rows
        .is_empty());
}

#[test]
fn indexed_and_scanned_agree() {
    let s = sample(200);
    let plain = QueryEngine::new();
    let mut ix = QueryEngine::new();
    ix.set_indexes(
        "items",
        &["count".into(), "tags".into(), "title".into()],
        &s,
    );
    let queries = [
        json!({"collection":"items","where":{"count":{"gte":10,"lt":20}}}),
        json!({"collection":"items","where":{"count":42}}),
        json!({"collection":"items","where":{"tags":{"contains":"category 3"},"title":{"includes":"7"}},
               "sort":[{"field":"count","desc":true}],"limit":5}),
        json!({"collection":"items","where":{"title":{"prefix":"Item 1"}},"sort":["title"],"limit":7,"offset":2}),
        json!({"collection":"items","where":{"count":{"in":[3,5,500]}},"select":["title"]}),
    ];
    for j in queries {
        let query = q(j.clone());
        let a = plain.run(&s, &query).unwrap();
        let b = ix.run(&s, &query).unwrap();
        assert_eq!(a.rows, b.rows, "{j}");
        assert!(b.plan.index().is_some(), "{j}: {:?}", b.plan);
        assert_eq!(a.plan.access, Access::Scan);
    }
    let r = ix
        .run(
            &s,
            &q(json!({"collection":"items","where":{"count":{"gte":10,"lt":20}}})),
        )
        .unwrap();
    assert_eq!(r.rows.len(), 10);
    assert!(!r.plan.residual_filter);
    let f = Filter::from_json(&json!({"count":{"gte":10,"lt":20}})).unwrap();
    assert_eq!(ix.count(&s, "items", Some(&f)).unwrap(), 10);
    assert_eq!(plain.count(&s, "items", Some(&f)).unwrap(), 10);
    assert_eq!(ix.count(&s, "items", None).unwrap(), 200);
    let agg = AggregateQuery::from_json(&json!({"collection":"items",
        "aggregates":{"s":{"sum":"count"},"lo":{"min":"count"},"hi":{"max":"count"},"m":{"avg":"count"},"n":{"count":true}}}))
    .unwrap();
    let expect = json!({"s": 19900, "lo": 0, "hi": 199, "m": 99.5, "n": 200});
    assert_eq!(ix.aggregate(&s, &agg).unwrap(), expect);
    assert_eq!(plain.aggregate(&s, &agg).unwrap(), expect);
    let g = AggregateQuery::from_json(&json!({"collection":"items","where":{"count":{"lt":10}},
        "aggregates":{"n":{"count":true}},"groupBy":"count"}))
    .unwrap();
    let out = plain.aggregate(&s, &g).unwrap();
    assert_eq!(out["groups"].as_array().unwrap().len(), 10);
    assert_eq!(out["groups"][3], json!({"key": 3, "n": 1}));
}

#[test]
fn order_tree_matches_a_sorted_vec() {
    let mut t = OrderTree::new(Box::new([true]));
    let mut reference: Vec<SEntry> = Vec::new();
    let mut x = 12345u64;
    let mut rnd = |m: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m
    };
    let mk = |k: u64, id: u64| SEntry::new(vec![Some(Value::from(k as i64))], format!("{id}"));
    for step in 0..4000 {
        let id = rnd(300);
        let e = mk(rnd(50), id);
        if let Some(pos) = reference.iter().position(|r| r.id == e.id) {
            let old = reference.remove(pos);
            assert!(t.remove(&old).is_some());
        } else {
            t.insert(e.clone(), Map::new());
            reference.push(e);
        }
        reference.sort_by(|a, b| t.cmp(a, b));
        assert_eq!(t.len(), reference.len());
        if step % 97 == 0 {
            for (i, r) in reference.iter().enumerate() {
                assert_eq!(t.rank(r), i);
            }
            let mut seen = Vec::new();
            t.visit(5, 40, &mut |i, e, _| seen.push((i, e.id.clone())));
            let want: Vec<_> = reference
                .iter()
                .enumerate()
                .skip(5)
                .take(35)
                .map(|(i, e)| (i, e.id.clone()))
                .collect();
            assert_eq!(seen, want);
        }
    }
    let sorted: Vec<(SEntry, Map)> = reference.iter().map(|e| (e.clone(), Map::new())).collect();
    let b = OrderTree::from_sorted(Box::new([true]), sorted);
    for (i, r) in reference.iter().enumerate() {
        assert_eq!(b.rank(r), i);
    }
}

#[test]
fn live_window_refills() {
    let mut s = sample(50);
    let mut e = QueryEngine::new();
    e.set_indexes("items", &["count".into()], &s);
    let query = q(
        json!({"collection":"items","sort":[{"field":"count","desc":true}],"limit":3,"offset":1}),
    );
    let (id, mut rows) = e.subscribe(&s, query.clone()).unwrap();
    assert_eq!(
        rows.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
        ["i0048", "i0047", "i0046"]
    );
    // Delete the top item: the window shifts up by one.
    let c = Commit {
        trusted: true,
        author: Identity::from_entropy(&[1; 48]).public(),
        hlc: 5,
        parents: vec![],
        changes: vec![Change {
            collection: "items".into(),
            id: "i0049".into(),
            op: Op::Delete,
        }],
    };
    let cid = CommitId::of(&c.encode());
    s.apply(&c, &cid, 2, &mut e);
    let changes = e.take_live_changes();
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0].0, id);
    changes[0].1.apply(&mut rows);
    assert_eq!(rows, e.run(&s, &query).unwrap().rows);
    assert_eq!(changes[0].1.removed, vec!["i0048".to_string()]);
    assert_eq!(changes[0].1.added[0].0, "i0045");
    e.verify_indexes(&s).unwrap();
    assert!(e.take_live_changes().is_empty());
    assert!(e.unsubscribe(id));
    assert!(!e.unsubscribe(id));
}

#[test]
fn field_aggregates_follow_changes() {
    let mut s = sample(100);
    let mut e = QueryEngine::new();
    let aggs = |f: &str| json!({"n":{"count":f},"s":{"sum":f},"a":{"avg":f},"lo":{"min":f},"hi":{"max":f}});
    let cached = |f: &str| {
        AggregateQuery::from_json(&json!({"collection":"items","aggregates":aggs(f)})).unwrap()
    };
    // A filter every item passes: the same aggregate, computed by a scan.
    let scanned = |f: &str| {
        AggregateQuery::from_json(
            &json!({"collection":"items","where":{"not":{"nothere":"x"}},"aggregates":aggs(f)}),
        )
        .unwrap()
    };
    let check = |e: &QueryEngine, s: &State| {
        for f in ["count", "title", "w"] {
            let a = e.aggregate(s, &cached(f)).unwrap();
            assert_eq!(a, e.aggregate(s, &scanned(f)).unwrap(), "{f}");
        }
        e.verify_indexes(s).unwrap();
    };
    check(&e, &s);
    assert!(
        e.watches("items"),
        "the first aggregate keeps running aggregates"
    );
    // The minimum and the maximum change hands; nulls, strings and a non-integer appear.
    let edits = vec![
        (
            "i0000".to_string(),
            map! {"count" => 1000i64, "w" => Value::Null},
        ),
        ("i0099".to_string(), map! {"title" => "zz", "w" => 2.5}),
        ("i0050".to_string(), map! {"count" => -3i64, "w" => 7i64}),
        ("new".to_string(), map! {"count" => "text", "w" => 1i64}),
    ];
    put_all(&mut s, &mut e, edits, 2);
    check(&e, &s);
    // Deletes, the current extremes included.
    let del = Commit {
        trusted: true,
        author: Identity::from_entropy(&[1; 48]).public(),
        hlc: 3,
        parents: vec![],
        changes: ["i0050", "i0000", "new", "i0099"]
            .into_iter()
            .map(|id| Change {
                collection: "items".into(),
                id: id.into(),
                op: Op::Delete,
            })
            .collect(),
    };
    let id = CommitId::of(&del.encode());
    s.apply(&del, &id, 3, &mut e);
    check(&e, &s);
    let r = e.aggregate(&s, &cached("count")).unwrap();
    assert_eq!(r["lo"], json!(1));
    assert_eq!(r["hi"], json!(98));
    assert_eq!(r["n"], json!(97));
}

#[test]
fn numeric_index_build_equals_the_general_one() {
    use super::eval::CPath;
    use super::index_build;
    // Numbers of every sign and size, duplicates, missing values and deleted items.
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for round in 0..6 {
        let mut s = State::new();
        let n = [0, 1, 40, 700, 3_000, 9_000][round];
        let items = (0..n)
            .map(|i| {
                let r = next();
                let v = match r % 6 {
                    0 => map! {"other" => 1},
                    1 => map! {"count" => -((r >> 8) as f64) / 7.0},
                    2 => map! {"count" => (r >> 60) as i64},
                    3 => map! {"count" => 1e300 / ((r >> 40) as f64 + 1.0)},
                    _ => map! {"count" => ((r >> 20) % 1000) as i64 - 500},
                };
                (format!("k{:05}", next() % 20_000 + i % 3), v)
            })
            .collect();
        put_all(&mut s, &mut NoSink, items, 1);
        let deletes: Vec<Change> = (0..n / 10)
            .map(|_| Change {
                collection: "items".into(),
                id: format!("k{:05}", next() % 20_000),
                op: Op::Delete,
            })
            .collect();
        let c = Commit {
            trusted: true,
            author: Identity::from_entropy(&[1; 48]).public(),
            hlc: 2,
            parents: vec![],
            changes: deletes,
        };
        let id = CommitId::of(&c.encode());
        s.apply(&c, &id, 2, &mut NoSink);
        let Some(coll) = s.collection("items") else {
            continue;
        };
        let cpath = CPath::new("count");
        let fast = index_build::numeric(&cpath, coll).expect("numbers only");
        let general = index_build::general(&cpath, coll);
        assert!(fast == general, "round {round}: {n} items");
        assert_eq!(fast.0.len(), coll.count());
        // A path no item holds is numeric (every value missing).
        assert!(index_build::numeric(&CPath::new("title"), coll).is_some());
    }
    // A path holding strings is not.
    let s = sample(50);
    let coll = s.collection("items").unwrap();
    assert!(index_build::numeric(&CPath::new("title"), coll).is_none());
}
