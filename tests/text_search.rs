//! Full-text search, `$id` and keyset paging through a repository (`Repo`), after an open from
//! a snapshot: the text index is not stored in the snapshot, so the first search loads the
//! collection and builds it; `$id` reads only the blocks of its ids; cursors page the same.

mod common;
use common::*;
use ibexdb::{Map, Name, Query, Repo, Schema, Txn, Value};

const C: &str = "notes";
const N: u64 = 5_000;
const WORDS: [&str; 12] = [
    "buy", "milk", "Milan", "mild", "bread", "Crème", "brûlée", "eggs", "call", "mom", "ﬁle",
    "angle",
];

fn open(log: &Shared, snap: Option<&Shared>) -> Repo<Shared> {
    let mut r = Repo::open(log.clone(), snap.cloned(), signed(1)).unwrap();
    let schema = serde_json::json!({"indexes": ["n", {"field": "title", "kind": "text"}]});
    r.define_schema(C, Schema::from_json(C, &schema).unwrap())
        .unwrap();
    r
}

fn note(i: u64, rng: &mut Rng) -> Map {
    let words: Vec<&str> = (0..1 + rng.next() % 6)
        .map(|_| WORDS[(rng.next() % WORDS.len() as u64) as usize])
        .collect();
    let mut m = Map::new();
    m.insert(Name::from("title"), Value::from(words.join(" ")));
    m.insert(Name::from("n"), Value::from((i % 97) as i64));
    m
}

fn q(j: serde_json::Value) -> Query {
    Query::from_json(&j).unwrap()
}

fn ids(r: &mut Repo<Shared>, j: serde_json::Value) -> Vec<String> {
    r.query(&q(j))
        .unwrap()
        .rows
        .into_iter()
        .map(|x| x.0)
        .collect()
}

#[test]
fn search_id_and_pages_after_an_open_from_a_snapshot() {
    let (log, snap) = (Shared::default(), Shared::default());
    let mut w = open(&log, Some(&snap));
    let mut rng = Rng(7);
    for chunk in 0..N / 1000 {
        let mut t = Txn::new();
        for i in chunk * 1000..(chunk + 1) * 1000 {
            t.put(&format!("{C}/{i:05}"), note(i, &mut rng)).unwrap();
        }
        w.commit(t).unwrap();
    }
    let searches = [
        "buy mil",
        "creme BRULEE",
        "file",
        "mom ca",
        "angle eggs bread",
        "zzz",
    ];
    let before: Vec<Vec<String>> = searches
        .iter()
        .map(|s| {
            ids(
                &mut w,
                serde_json::json!({"collection": C, "where": {"title": {"match": s}}}),
            )
        })
        .collect();
    assert!(
        before.iter().filter(|v| !v.is_empty()).count() >= 4,
        "{before:?}"
    );
    // The sorted index is built, so the snapshot holds it and an open restores it (the
    // collection stays cold until something needs its items).
    assert!(!ids(
        &mut w,
        serde_json::json!({"collection": C, "where": {"n": 3}})
    )
    .is_empty());
    w.seal().unwrap();
    assert!(w.write_snapshot().unwrap());
    w.close().unwrap();

    // explain of a search first thing after an open: the text index is built over the whole
    // collection (loaded for it), so the search that follows finds everything.
    let mut r = open(&log, Some(&snap));
    let plan = r
        .explain(&q(
            serde_json::json!({"collection": C, "where": {"title": {"match": "buy mil"}}}),
        ))
        .unwrap();
    assert_eq!(plan.estimated_rows, before[0].len());
    let got = ids(
        &mut r,
        serde_json::json!({"collection": C, "where": {"title": {"match": "buy mil"}}}),
    );
    assert_eq!(got, before[0]);

    // `$id` after the open: the item, without the rest of the collection.
    let mut r = open(&log, Some(&snap));
    let one = ids(
        &mut r,
        serde_json::json!({"collection": C, "where": {"$id": "00042"}}),
    );
    assert_eq!(one, ["00042"]);
    let (_, rows) = r
        .subscribe(q(
            serde_json::json!({"collection": C, "where": {"$id": {"in": ["00007", "nope"]}}}),
        ))
        .unwrap();
    assert_eq!(rows.len(), 1);

    // The text index is rebuilt on first use, with the same answers (rank order included).
    for (s, want) in searches.iter().zip(&before) {
        let got = ids(
            &mut r,
            serde_json::json!({"collection": C, "where": {"title": {"match": s}}}),
        );
        assert_eq!(&got, want, "{s}");
    }
    let plan = r
        .explain(&q(
            serde_json::json!({"collection": C, "where": {"title": {"match": "buy"}}}),
        ))
        .unwrap()
        .to_json();
    assert_eq!(plan["op"], "match");

    // Writes after the open keep the index current; verify() compares it with a rebuild.
    let mut t = Txn::new();
    let mut m = Map::new();
    m.insert(Name::from("title"), Value::from("Zebra crossing"));
    t.put(&format!("{C}/00001"), m).unwrap();
    r.commit(t).unwrap();
    let z = ids(
        &mut r,
        serde_json::json!({"collection": C, "where": {"title": {"match": "zeb"}}}),
    );
    assert_eq!(z, ["00001"]);
    r.verify().unwrap();

    // Pages of a sorted query walk it once.
    let base =
        serde_json::json!({"collection": C, "sort": [{"field": "n", "desc": true}], "limit": 700});
    let whole = ids(
        &mut r,
        serde_json::json!({"collection": C, "sort": [{"field": "n", "desc": true}]}),
    );
    let mut walked = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut j = base.clone();
        if let Some(c) = &cursor {
            j["after"] = serde_json::json!(c);
        }
        let page = r.query(&q(j)).unwrap();
        walked.extend(page.rows.iter().map(|x| x.0.clone()));
        if page.rows.len() < 700 {
            break;
        }
        cursor = page.cursor;
    }
    assert_eq!(walked, whole);
}
