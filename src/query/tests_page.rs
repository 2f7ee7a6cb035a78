//! Unit tests of `$id` (keys.rs) and keyset paging (page.rs).

use super::*;
use crate::commit::Identity;
use crate::commit::{Change, Commit, CommitId, Op};
/// A map literal (`map!` makes a `Value::Map`).
macro_rules! mm {
    ($($t:tt)*) => {
        crate::map! {$($t)*}.as_map()
    };
}

use crate::state::NoSink;
use crate::value::Value;
use serde_json::json;
use std::collections::BTreeSet;

/// Applies commits of changes to one collection, each a new commit.
struct Writer {
    hlc: u64,
}

impl Writer {
    fn commit(
        &mut self,
        s: &mut State,
        sink: &mut dyn ChangeSink,
        changes: Vec<(String, Option<Map>)>,
    ) {
        self.hlc += 1;
        let c = Commit {
            trusted: true,
            author: Identity::from_entropy(&[1; 48]).public(),
            hlc: self.hlc,
            parents: vec![],
            changes: changes
                .into_iter()
                .map(|(id, m)| Change {
                    collection: "items".into(),
                    id,
                    op: m.map_or(Op::Delete, Op::Put),
                })
                .collect(),
        };
        let id = CommitId::of(&c.encode());
        s.apply(&c, &id, self.hlc as u32, sink);
    }
}

fn q(j: serde_json::Value) -> Query {
    Query::from_json(&j).unwrap()
}

fn reason(j: serde_json::Value) -> String {
    match Query::from_json(&j) {
        Err(Error::InvalidQuery { reason }) => reason,
        other => panic!("expected InvalidQuery for {j}, got {other:?}"),
    }
}

fn ids(rows: &[(String, Map)]) -> Vec<&str> {
    rows.iter().map(|r| r.0.as_str()).collect()
}

fn sample(n: usize) -> (State, Writer) {
    let mut s = State::new();
    let mut w = Writer { hlc: 0 };
    let items = (0..n)
        .map(|i| {
            let m = mm! {"n" => (i % 7) as i64, "title" => format!("t{}", i % 3)};
            (format!("k{i:03}"), Some(m))
        })
        .collect();
    w.commit(&mut s, &mut NoSink, items);
    (s, w)
}

#[test]
fn id_condition_parses_prints_and_refuses() {
    for j in [
        json!({"collection":"items","where":{"$id":"a"}}),
        json!({"collection":"items","where":{"$id":{"in":["b","a"]},"n":{"gt":1}}}),
        json!({"collection":"items","where":{"$id":{"prefix":"k0"}}}),
    ] {
        let query = q(j.clone());
        assert!(query.key.is_some(), "{j}");
        assert_eq!(Query::from_json(&query.to_json()).unwrap(), query, "{j}");
    }
    // `{"$id": {"eq": ..}}` is `{"$id": ..}`.
    assert_eq!(
        q(json!({"collection":"items","where":{"$id":{"eq":"a"}}})).key,
        Some(KeySel::Eq("a".into()))
    );
    for (j, want) in [
        (json!({"$id": 3}), "$id needs an id string"),
        (json!({"$id": {"in": "a"}}), "needs an array of ids"),
        (json!({"$id": {"in": [1]}}), "needs a string operand"),
        (
            json!({"$id": {"gt": "a"}}),
            "unknown operator \"gt\" on $id",
        ),
        (
            json!({"$id": {"eq": "a", "prefix": "b"}}),
            "exactly one operator",
        ),
        (json!({"or": [{"$id": "a"}]}), "only at the top level"),
        (json!({"not": {"$id": "a"}}), "only at the top level"),
    ] {
        let r = reason(json!({"collection":"items","where": j}));
        assert!(r.contains(want), "{j}: {r}");
    }
}

#[test]
fn id_condition_looks_ids_up() {
    let (s, _) = sample(50);
    let e = QueryEngine::new();
    let run = |j: serde_json::Value| e.run(&s, &q(j)).unwrap();
    let r = run(json!({"collection":"items","where":{"$id":"k007"}}));
    assert_eq!(ids(&r.rows), ["k007"]);
    assert_eq!(r.plan.access, Access::Key { op: "eq" });
    assert_eq!(r.plan.estimated_rows, 1);
    assert_eq!(r.plan.to_json()["access"], "key");
    assert!(run(json!({"collection":"items","where":{"$id":"nope"}}))
        .rows
        .is_empty());
    let r = run(json!({"collection":"items","where":{"$id":{"in":["k040","k003","x","k003"]}}}));
    assert_eq!(ids(&r.rows), ["k003", "k040"]);
    // The other entries still apply; sort, limit and select too.
    let r = run(
        json!({"collection":"items","where":{"$id":{"prefix":"k01"},"n":{"gte":3}},
        "sort":[{"field":"n","desc":true}],"limit":3,"select":["n"]}),
    );
    assert_eq!(ids(&r.rows), ["k013", "k012", "k019"]);
    assert_eq!(r.rows[0].1, mm! {"n" => 6i64});
    assert_eq!(r.plan.access, Access::Key { op: "prefix" });
    let scanned = run(
        json!({"collection":"items","where":{"title":{"prefix":"t"}},
        "sort":[{"field":"n","desc":true}]}),
    );
    let want: Vec<&str> = ids(&scanned.rows)
        .into_iter()
        .filter(|id| id.starts_with("k01"))
        .filter(|id| id[1..].parse::<usize>().unwrap() % 7 >= 3)
        .take(3)
        .collect();
    assert_eq!(want, ["k013", "k012", "k019"]);
}

#[test]
fn a_live_query_of_one_id_hears_nothing_of_other_items() {
    let (mut s, mut w) = sample(20);
    let mut e = QueryEngine::new();
    let (lid, rows) = e
        .subscribe(&s, q(json!({"collection":"items","where":{"$id":"k005"}})))
        .unwrap();
    assert_eq!(ids(&rows), ["k005"]);
    // Writes to other items, a new item, a deletion: no change set.
    w.commit(
        &mut s,
        &mut e,
        vec![
            ("k004".into(), Some(mm! {"n" => 99i64})),
            ("k0050".into(), Some(mm! {"n" => 1i64})),
            ("k006".into(), None),
        ],
    );
    assert!(e.take_live_changes().is_empty());
    // A write to the item: one change; its deletion: removed; its return: added.
    w.commit(
        &mut s,
        &mut e,
        vec![("k005".into(), Some(mm! {"n" => 5i64}))],
    );
    let ch = e.take_live_changes();
    assert_eq!(ch.len(), 1);
    assert_eq!(ch[0].0, lid);
    assert_eq!(ch[0].1.changed[0].1, mm! {"n" => 5i64});
    w.commit(&mut s, &mut e, vec![("k005".into(), None)]);
    assert_eq!(e.take_live_changes()[0].1.removed, vec!["k005".to_string()]);
    w.commit(
        &mut s,
        &mut e,
        vec![("k005".into(), Some(mm! {"n" => 1i64}))],
    );
    assert_eq!(e.take_live_changes()[0].1.added[0].0, "k005");
    e.verify_indexes(&s).unwrap();
}

#[test]
fn cursors_refuse_what_is_not_theirs() {
    let (s, _) = sample(30);
    let e = QueryEngine::new();
    let base = json!({"collection":"items","sort":["n"],"limit":5});
    let page = e.run(&s, &q(base.clone())).unwrap();
    let cursor = page
        .cursor
        .clone()
        .expect("a page with a limit has a cursor");
    let with = |mut j: serde_json::Value, c: serde_json::Value| {
        j["after"] = c;
        j
    };
    // Same collection and sort, another filter or select: fine.
    let mut other = with(base.clone(), json!(cursor));
    other["where"] = json!({"title": "t1"});
    q(other);
    for (j, want) in [
        (
            with(base.clone(), json!(5)),
            "after must be a cursor string",
        ),
        (
            with(base.clone(), json!("!!!")),
            "malformed cursor (not base64url)",
        ),
        (
            with(base.clone(), json!("aGVsbG8")),
            "malformed cursor (not a cursor)",
        ),
        (
            with(
                json!({"collection":"items","sort":[{"field":"n","desc":true}]}),
                json!(cursor),
            ),
            "belongs to another query",
        ),
        (
            with(json!({"collection":"other","sort":["n"]}), json!(cursor)),
            "belongs to another query",
        ),
        (
            with(
                json!({"collection":"items","sort":["n"],"offset":2}),
                json!(cursor),
            ),
            "after and offset cannot be combined",
        ),
        (
            with(base.clone(), json!("A".repeat(1 << 20))),
            "longer than the 65536 bytes",
        ),
    ] {
        let r = reason(j.clone());
        assert!(r.contains(want), "{want}: {r}");
    }
    // No limit, or no rows: no cursor.
    let all = e.run(&s, &q(json!({"collection":"items"}))).unwrap();
    assert!(all.cursor.is_none());
    let none = e
        .run(
            &s,
            &q(json!({"collection":"items","where":{"n":99},"limit":3})),
        )
        .unwrap();
    assert!(none.cursor.is_none());
}

/// A tiny deterministic generator.
struct Rng(u64);
impl Rng {
    fn below(&mut self, m: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % m
    }
}

/// The oracle: every visible item matching `where n != 3`, sorted like the query, by a scan.
fn oracle(s: &State, sort: &[(String, bool)]) -> Vec<String> {
    let mut v: Vec<(&str, &Map)> = s
        .collection("items")
        .map(|c| {
            c.iter()
                .filter(|(_, m)| m.get("n") != Some(&Value::from(3i64)))
                .collect()
        })
        .unwrap_or_default();
    v.sort_by(|a, b| {
        for (f, desc) in sort {
            let o = eval::cmp_opt(a.1.get(f.as_str()), b.1.get(f.as_str()));
            if o.is_ne() {
                return if *desc { o.reverse() } else { o };
            }
        }
        a.0.cmp(b.0)
    });
    v.into_iter().map(|(id, _)| id.to_string()).collect()
}

/// Paging through a query while items are inserted, deleted and updated between pages: pages
/// come in the query's order, no row repeats, and every item present and unchanged throughout
/// appears exactly once — with or without an index, ascending or descending, with ties.
#[test]
fn keyset_pages_survive_concurrent_writes() {
    for seed in 1..=60u64 {
        let mut rng = Rng(seed * 0x9E37_79B9 + 1);
        let (mut s, mut w) = sample(40 + rng.below(80) as usize);
        let mut e = QueryEngine::new();
        if seed % 2 == 0 {
            e.set_indexes("items", &["n".into(), "title".into()], &s);
        }
        let sort: Vec<(String, bool)> = match seed % 4 {
            0 => vec![],
            1 => vec![("n".into(), false)],
            2 => vec![("n".into(), true), ("title".into(), false)],
            _ => vec![("title".into(), true)],
        };
        let limit = 3 + rng.below(9) as usize;
        let sort_json: Vec<_> = sort
            .iter()
            .map(|(f, d)| json!({"field": f, "desc": d}))
            .collect();
        let base =
            json!({"collection":"items","where":{"n":{"ne":3}},"sort":sort_json,"limit":limit});
        // Items never touched during the walk: they must each appear exactly once.
        let mut stable: BTreeSet<String> = oracle(&s, &sort).into_iter().collect();
        let mut seen: Vec<String> = Vec::new();
        let mut cursor: Option<String> = None;
        let mut next_id = 1000;
        let mut finished = false;
        for round in 0..2000 {
            let mut j = base.clone();
            if let Some(c) = &cursor {
                j["after"] = json!(c);
            }
            let page = e.run(&s, &q(j)).unwrap();
            // The page is the oracle's rows after the last one seen, in order.
            let all = oracle(&s, &sort);
            // The oracle's rows strictly after the cursor (a suffix of the sorted rows).
            let start = match &cursor {
                None => 0,
                Some(c) => {
                    let sq = q(base.clone()).sort;
                    let fp =
                        cursor::fingerprint("items", sq.iter().map(|k| (k.field.as_str(), k.desc)));
                    let c = Cursor::parse(&json!(c), "items", &fp, sq.len()).unwrap();
                    let cs = eval::compile_sort(&sq);
                    let coll = s.collection("items").unwrap();
                    all.iter()
                        .position(|id| eval::after_cursor(&c, &cs, id, coll.get(id).unwrap()))
                        .unwrap_or(all.len())
                }
            };
            let want: Vec<&str> = all[start..]
                .iter()
                .take(limit)
                .map(String::as_str)
                .collect();
            assert_eq!(ids(&page.rows), want, "seed {seed}");
            // (An item updated between pages may move past the cursor and show up again: only
            // the items never written during the walk must appear exactly once, checked below.)
            for (id, _) in &page.rows {
                seen.push(id.clone());
            }
            if page.rows.len() < limit {
                assert!(page.rows.is_empty() || page.cursor.is_some());
                finished = true;
                break;
            }
            cursor = page.cursor;
            // Concurrent writes: inserts anywhere in the order, deletes and updates of random
            // items (those leave the stable set).
            let mut changes = Vec::new();
            for _ in 0..rng.below(if round % 2 == 0 { 4 } else { 1 }) {
                next_id += 1;
                let id = format!("k{:03}", rng.below(200));
                let id = if s.collection("items").unwrap().get(&id).is_some() {
                    format!("n{next_id}")
                } else {
                    id
                };
                let m = mm! {"n" => rng.below(7) as i64, "title" => format!("t{}", rng.below(3))};
                changes.push((id, Some(m)));
            }
            let live: Vec<String> = s
                .collection("items")
                .unwrap()
                .iter()
                .map(|(id, _)| id.to_string())
                .collect();
            for _ in 0..rng.below(3) {
                let id = live[rng.below(live.len() as u64) as usize].clone();
                stable.remove(&id);
                let m =
                    (rng.below(2) == 0).then(|| mm! {"n" => rng.below(7) as i64, "title" => "t9"});
                changes.retain(|c| c.0 != id);
                changes.push((id, m));
            }
            w.commit(&mut s, &mut e, changes);
        }
        assert!(finished, "seed {seed}: the walk did not reach the end");
        for id in &stable {
            assert_eq!(
                seen.iter().filter(|x| *x == id).count(),
                1,
                "seed {seed}: stable item {id} seen {:?}",
                seen.iter().filter(|x| *x == id).count()
            );
        }
    }
}

/// A live window after a cursor follows the fresh run of the same query through writes.
#[test]
fn a_live_window_after_a_cursor_stays_current() {
    let (mut s, mut w) = sample(60);
    let mut e = QueryEngine::new();
    let base = json!({"collection":"items","sort":[{"field":"n","desc":true}],"limit":6});
    let first = e.run(&s, &q(base.clone())).unwrap();
    let mut j = base.clone();
    j["after"] = json!(first.cursor.unwrap());
    let query = q(j);
    let (lid, mut rows) = e.subscribe(&s, query.clone()).unwrap();
    assert_eq!(rows, e.run(&s, &query).unwrap().rows);
    let mut rng = Rng(7);
    for step in 0..300 {
        let id = format!("k{:03}", rng.below(90));
        let m = (rng.below(4) != 0).then(|| mm! {"n" => rng.below(7) as i64, "title" => "x"});
        w.commit(&mut s, &mut e, vec![(id, m)]);
        for (l, ch) in e.take_live_changes() {
            assert_eq!(l, lid);
            ch.apply(&mut rows);
        }
        assert_eq!(rows, e.run(&s, &query).unwrap().rows, "step {step}");
    }
    e.verify_indexes(&s).unwrap();
}

/// Pages of an ordered index walk (descending, with ties) continue exactly where the previous
/// page ended, and equal the rows of one longer query.
#[test]
fn pages_of_an_ordered_walk_join_up() {
    let mut s = State::new();
    let mut w = Writer { hlc: 0 };
    let mut items: Vec<(String, Option<Map>)> = (0..200)
        .map(|i| (format!("i{i:03}"), Some(mm! {"n" => (i % 10) as i64})))
        .collect();
    items.extend((1..15).map(|i| (format!("a{i}"), Some(mm! {"n" => 9i64}))));
    w.commit(&mut s, &mut NoSink, items);
    for indexed in [false, true] {
        let mut e = QueryEngine::new();
        if indexed {
            e.set_indexes("items", &["n".into()], &s);
        }
        let base = json!({"collection":"items","sort":[{"field":"n","desc":true}],"limit":15});
        let whole = e
            .run(
                &s,
                &q(json!({"collection":"items","sort":[{"field":"n","desc":true}],"limit":60})),
            )
            .unwrap();
        let mut got: Vec<String> = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..4 {
            let mut j = base.clone();
            if let Some(c) = &cursor {
                j["after"] = json!(c);
            }
            let page = e.run(&s, &q(j)).unwrap();
            got.extend(page.rows.iter().map(|r| r.0.clone()));
            cursor = page.cursor;
        }
        assert_eq!(got, ids(&whole.rows), "indexed {indexed}");
    }
}
