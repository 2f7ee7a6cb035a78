//! Unit tests of full-text search: the text index against a scan, ranking, live queries.

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
use serde_json::json;
use std::collections::BTreeSet;

const WORDS: [&str; 16] = [
    "buy",
    "milk",
    "Milan",
    "mild",
    "bread",
    "Crème",
    "creme",
    "brûlée",
    "eggs",
    "EGG",
    "call",
    "mom",
    "Ångström",
    "angle",
    "ﬁle",
    "file",
];

struct Gen(u64);
impl Gen {
    fn below(&mut self, m: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % m
    }
    fn title(&mut self) -> String {
        let n = 1 + self.below(5);
        let seps = [" ", ", ", "-", "  "];
        let mut s = String::new();
        for i in 0..n {
            if i > 0 {
                s.push_str(seps[self.below(4) as usize]);
            }
            s.push_str(WORDS[self.below(WORDS.len() as u64) as usize]);
        }
        s
    }
}

fn commit(s: &mut State, sink: &mut dyn ChangeSink, hlc: u64, changes: Vec<(String, Option<Map>)>) {
    let c = Commit {
        trusted: true,
        author: Identity::from_entropy(&[1; 48]).public(),
        hlc,
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
    s.apply(&c, &id, hlc as u32, sink);
}

fn q(j: serde_json::Value) -> Query {
    Query::from_json(&j).unwrap()
}

fn id_set(rows: &[(String, Map)]) -> BTreeSet<String> {
    rows.iter().map(|r| r.0.clone()).collect()
}

/// The text index finds exactly what a scan (the same predicate, no index) finds, through
/// inserts, updates and deletes; verify() agrees with a rebuild.
#[test]
fn text_index_agrees_with_a_scan() {
    let mut g = Gen(99);
    let mut s = State::new();
    let items = (0..300)
        .map(|i| {
            let m = if i % 17 == 0 {
                mm! {"title" => i as i64}
            } else {
                mm! {"title" => g.title(), "n" => (i % 5) as i64}
            };
            (format!("i{i:03}"), Some(m))
        })
        .collect();
    commit(&mut s, &mut NoSink, 1, items);
    let plain = QueryEngine::new();
    let mut ix = QueryEngine::new();
    ix.set_text_indexes("items", &["title".into()]);
    let searches = [
        "buy",
        "buy mil",
        "MILK",
        "creme",
        "crème brulee",
        "egg",
        "eggs",
        "file",
        "fi",
        "angstrom",
        "ang",
        "m",
        "call mom",
        "zzz",
        "",
        "  ,, ",
        "buy milk bread eggs",
    ];
    for round in 0..6 {
        for text in searches {
            for extra in [json!(null), json!({"gte": 2})] {
                let mut w = json!({"title": {"match": text}});
                if !extra.is_null() {
                    w["n"] = extra.clone();
                }
                let query = q(json!({"collection":"items","where": w}));
                let a = plain.run(&s, &query).unwrap();
                let b = ix.run(&s, &query).unwrap();
                assert_eq!(
                    id_set(&a.rows),
                    id_set(&b.rows),
                    "round {round}: {text:?} {extra}"
                );
                assert_eq!(
                    b.plan.access,
                    Access::Text {
                        path: "title".into()
                    }
                );
                assert_eq!(b.plan.sort, SortMethod::Rank);
                assert_eq!(a.plan.access, Access::Scan);
                // count agrees too (it scans).
                let f = query.filter.as_ref().unwrap();
                assert_eq!(ix.count(&s, "items", Some(f)).unwrap(), a.rows.len());
            }
        }
        // Writes: new titles, retitles, deletions, a title becoming a number.
        let mut ch = Vec::new();
        for _ in 0..40 {
            let id = format!("i{:03}", g.below(330));
            let m = match g.below(5) {
                0 => None,
                1 => Some(mm! {"title" => 5i64}),
                _ => Some(mm! {"title" => g.title(), "n" => g.below(5) as i64}),
            };
            ch.retain(|c: &(String, Option<Map>)| c.0 != id);
            ch.push((id, m));
        }
        commit(&mut s, &mut ix, 2 + round, ch);
        ix.verify_indexes(&s).unwrap();
    }
}

#[test]
fn matches_rank_by_bm25_and_sort_overrides() {
    let mut s = State::new();
    let titles = [
        ("a", "milk"),
        ("b", "milk milk milk"),
        ("c", "buy milk and bread and eggs and more"),
        ("d", "bread"),
        ("e", "Milky way"),
    ];
    commit(
        &mut s,
        &mut NoSink,
        1,
        titles
            .iter()
            .map(|(id, t)| (id.to_string(), Some(mm! {"title" => *t})))
            .collect(),
    );
    let mut e = QueryEngine::new();
    e.set_text_indexes("items", &["title".into()]);
    let ids = |j| -> Vec<String> {
        e.run(&s, &q(j))
            .unwrap()
            .rows
            .into_iter()
            .map(|r| r.0)
            .collect()
    };
    // More occurrences in a shorter text rank higher; a prefix expands (milk, milky), and the
    // rarer term weighs more (idf). The last word of a search is also a prefix: "milk" matches
    // "Milky" too.
    assert_eq!(
        ids(json!({"collection":"items","where":{"title":{"match":"milk"}}})),
        ["e", "b", "a", "c"]
    );
    // Not the last word: exact. "milk way" needs milk exactly, and a word starting with "way".
    assert!(ids(json!({"collection":"items","where":{"title":{"match":"milk way"}}})).is_empty());
    assert_eq!(
        ids(json!({"collection":"items","where":{"title":{"match":"MILKY wa"}}})),
        ["e"]
    );
    assert_eq!(
        ids(json!({"collection":"items","where":{"title":{"match":"bread mil"}}})),
        ["c"]
    );
    assert_eq!(
        ids(json!({"collection":"items","where":{"title":{"match":"mil"}}})),
        ["e", "b", "a", "c"]
    );
    assert_eq!(
        ids(json!({"collection":"items","where":{"title":{"match":"mil"}},"limit":2})),
        ["e", "b"]
    );
    assert_eq!(
        ids(json!({"collection":"items","where":{"title":{"match":"mil"}},"sort":["title"]})),
        ["e", "c", "a", "b"]
    );
    // A rank-ordered page has no cursor; after needs a sort.
    let r = e
        .run(
            &s,
            &q(json!({"collection":"items","where":{"title":{"match":"mil"}},"limit":1})),
        )
        .unwrap();
    assert!(r.cursor.is_none());
    let sorted =
        json!({"collection":"items","where":{"title":{"match":"mil"}},"sort":["title"],"limit":2});
    let c = e.run(&s, &q(sorted.clone())).unwrap().cursor.unwrap();
    let mut next = sorted.clone();
    next["after"] = json!(c);
    assert_eq!(ids(next), ["a", "b"]);
    let mut bad = json!({"collection":"items","where":{"title":{"match":"mil"}}});
    bad["after"] = json!(e
        .run(&s, &q(json!({"collection":"items","limit":1})))
        .unwrap()
        .cursor
        .unwrap());
    let err = e.run(&s, &q(bad)).unwrap_err();
    assert!(err.to_string().contains("after needs a sort"), "{err}");
    let plan = e
        .explain(
            &s,
            &q(json!({"collection":"items","where":{"title":{"match":"bread"}}})),
        )
        .unwrap()
        .to_json();
    assert_eq!(plan["op"], "match");
    assert_eq!(plan["sort"], "rank");
    assert_eq!(plan["estimatedRows"], 2);
}

#[test]
fn a_search_too_long_is_refused() {
    let big = "milk ".repeat(220_000);
    let err = Query::from_json(&json!({"collection":"items","where":{"title":{"match": big}}}))
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("\"match\" on field \"title\"") && msg.contains("1100000 bytes"),
        "{msg}"
    );
    let err = Query::from_json(&json!({"collection":"items","where":{"title":{"match": 3}}}))
        .unwrap_err();
    assert!(err.to_string().contains("needs a string operand"), "{err}");
}

/// A live query over `match` follows fresh runs through writes (incrementally: each change is
/// tested against the search on its own), with and without a text index.
#[test]
fn live_matches_stay_current() {
    for indexed in [false, true] {
        let mut g = Gen(5);
        let mut s = State::new();
        let items = (0..120)
            .map(|i| (format!("i{i:03}"), Some(mm! {"title" => g.title()})))
            .collect();
        commit(&mut s, &mut NoSink, 1, items);
        let mut e = QueryEngine::new();
        if indexed {
            e.set_text_indexes("items", &["title".into()]);
        }
        let query = q(
            json!({"collection":"items","where":{"title":{"match":"buy mil"}},
            "sort":["title"],"limit":7}),
        );
        let (_, mut rows) = e.subscribe(&s, query.clone()).unwrap();
        assert_eq!(rows, e.run(&s, &query).unwrap().rows);
        for step in 0..200u64 {
            let id = format!("i{:03}", g.below(130));
            let m = (g.below(5) != 0).then(|| mm! {"title" => g.title()});
            commit(&mut s, &mut e, 2 + step, vec![(id, m)]);
            for (_, ch) in e.take_live_changes() {
                ch.apply(&mut rows);
            }
            assert_eq!(
                rows,
                e.run(&s, &query).unwrap().rows,
                "indexed {indexed} step {step}"
            );
        }
        e.verify_indexes(&s).unwrap();
    }
}
