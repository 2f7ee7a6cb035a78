//! Bytes values (`Value::Bytes`, docs/design.md §2.2, §3.2) through the public API: the log and
//! the snapshot keep them, a schema types them, queries and indexes compare them byte-wise,
//! replicas merge them like any register, and the size limit counts their bytes.

mod common;
use common::*;
use ibexdb::{map, Error, Map, MemStorage, Query, Repo, Schema, Txn, Value, MAX_ITEM_BYTES};

fn open(n: u8) -> Repo<MemStorage> {
    Repo::open(MemStorage::new(), Some(MemStorage::new()), signed(n)).unwrap()
}

fn put(r: &mut Repo<MemStorage>, key: &str, v: Map) -> Result<(), Error> {
    let mut t = Txn::new();
    t.put(key, v)?;
    r.commit(t).map(|_| ())
}

fn bytes(b: &[u8]) -> Value {
    Value::from(b)
}

/// 0 B, 1 B, not UTF-8, and 5 MB.
fn payloads() -> Vec<(&'static str, Vec<u8>)> {
    let big: Vec<u8> = (0..5_000_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    vec![
        ("empty", vec![]),
        ("one", vec![0xff]),
        ("odd", vec![0xc3, 0x28, 0, 0x80]),
        ("big", big),
    ]
}

fn ids(r: &mut Repo<MemStorage>, q: serde_json::Value) -> Vec<String> {
    let q = Query::from_json(&q).unwrap();
    r.query(&q)
        .unwrap()
        .rows
        .into_iter()
        .map(|(id, _)| id)
        .collect()
}

#[test]
fn bytes_survive_the_log_and_the_snapshot() {
    for snapshot in [false, true] {
        let mut r = open(1);
        for (name, data) in payloads() {
            put(
                &mut r,
                &format!("files/{name}"),
                map! {"data" => Value::from(data), "n" => name}.as_map(),
            )
            .unwrap();
        }
        let mut t = Txn::new();
        t.update("files/one", map! {"data" => bytes(&[1, 2])}.as_map())
            .unwrap();
        r.commit(t).unwrap();
        r.seal().unwrap();
        if snapshot {
            assert!(r.write_snapshot().unwrap());
        }
        let hash = r.state_hash().unwrap();
        let (log, snap) = r.close().unwrap();
        let mut r = Repo::open(log, snap, signed(1)).unwrap();
        assert_eq!(r.state_hash().unwrap(), hash, "snapshot: {snapshot}");
        for (name, data) in payloads() {
            let want = if name == "one" { vec![1, 2] } else { data };
            assert_eq!(
                r.get(&format!("files/{name}")).unwrap().unwrap()["data"],
                Value::from(want),
                "{name}, snapshot: {snapshot}"
            );
        }
        let h = r.history("files/one").unwrap();
        assert!(matches!(&h[0].op, ibexdb::Op::Put(m) if m["data"] == bytes(&[0xff])));
        let rep = r.verify().unwrap();
        assert_eq!(rep.commits, 5);
    }
}

#[test]
fn the_item_limit_counts_bytes() {
    let mut r = open(1);
    let over = vec![0u8; MAX_ITEM_BYTES];
    match put(
        &mut r,
        "files/big",
        map! {"d" => Value::from(over)}.as_map(),
    ) {
        Err(Error::TooLarge { size, limit, .. }) => {
            assert_eq!(limit, MAX_ITEM_BYTES as u64);
            assert!(size > limit);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(r.get("files/big").unwrap(), None);
    // Just under: the item's encoding (map header, field name, tag, 4-byte length) fits.
    let fits = vec![7u8; MAX_ITEM_BYTES - 16];
    put(
        &mut r,
        "files/big",
        map! {"d" => Value::from(fits)}.as_map(),
    )
    .unwrap();
    // Set elements are strings: bytes in a set's JSON form are refused, typed.
    let j = serde_json::json!({"s": {"$set": [{"$bytes": "AA=="}]}});
    let err = serde_json::from_str::<Value>(&j.to_string()).unwrap_err();
    assert!(
        err.to_string().contains("set elements must be strings"),
        "{err}"
    );
}

#[test]
fn schemas_type_bytes_fields() {
    let mut r = open(1);
    let s = Schema::from_json(
        "files",
        &serde_json::json!({"fields": {"data": {"type": "bytes", "required": true},
            "thumb": {"type": "bytes", "default": {"$bytes": "AAE="}}}}),
    )
    .unwrap();
    r.define_schema("files", s).unwrap();
    match put(&mut r, "files/a", map! {"data" => "AAE="}.as_map()) {
        Err(Error::Schema { field, .. }) => assert_eq!(field, "data"),
        other => panic!("{other:?}"),
    }
    put(&mut r, "files/a", map! {"data" => bytes(&[])}.as_map()).unwrap();
    assert_eq!(r.get("files/a").unwrap().unwrap()["thumb"], bytes(&[0, 1]));
}

#[test]
fn queries_compare_bytes_bytewise_with_and_without_an_index() {
    for indexed in [false, true] {
        let mut r = open(1);
        if indexed {
            let s = Schema::from_json("f", &serde_json::json!({"indexes": ["d"]})).unwrap();
            r.define_schema("f", s).unwrap();
        }
        let vals: [(&str, Value); 8] = [
            ("e", bytes(&[])),
            ("z", bytes(&[0])),
            ("za", bytes(&[0, 0xff])),
            ("a", bytes(&[1])),
            ("ff", bytes(&[0xff])),
            ("s", Value::from("\u{1}")),
            ("n", Value::from(1i64)),
            ("l", Value::List(vec![])),
        ];
        for (id, v) in &vals {
            put(&mut r, &format!("f/{id}"), map! {"d" => v.clone()}.as_map()).unwrap();
        }
        let b = |x: &[u8]| serde_json::to_value(Value::from(x)).unwrap();
        let q = |w: serde_json::Value| serde_json::json!({"collection": "f", "where": {"d": w}});
        let s = |r: &mut Repo<MemStorage>, w| {
            let mut v = ids(r, q(w));
            v.sort();
            v
        };
        assert_eq!(s(&mut r, b(&[1])), ["a"], "indexed: {indexed}");
        assert_eq!(s(&mut r, serde_json::json!({"eq": b(&[])})), ["e"]);
        assert_eq!(
            s(
                &mut r,
                serde_json::json!({"in": [b(&[0]), b(&[0xff]), "\u{1}"]})
            ),
            ["ff", "s", "z"]
        );
        // Ranges select bytes only: not the string, number or list around them.
        assert_eq!(
            s(&mut r, serde_json::json!({"lt": b(&[1])})),
            ["e", "z", "za"]
        );
        assert_eq!(
            s(
                &mut r,
                serde_json::json!({"gt": b(&[0]), "lte": b(&[0xff])})
            ),
            ["a", "ff", "za"]
        );
        assert_eq!(
            s(&mut r, serde_json::json!({"gte": b(&[])})),
            ["a", "e", "ff", "z", "za"]
        );
        // Sorted: numbers < strings < bytes (byte-wise, a prefix first) < lists.
        let sorted = ids(
            &mut r,
            serde_json::json!({"collection": "f", "sort": ["d"]}),
        );
        assert_eq!(
            sorted,
            ["n", "s", "e", "z", "za", "a", "ff", "l"],
            "indexed: {indexed}"
        );
        // verify() rebuilds the indexes and compares: the bytes entries agree.
        r.verify().unwrap();
    }
}

#[test]
fn replicas_merge_bytes_like_a_register() {
    let mut a = Repo::open(MemStorage::new(), None, trusted(1)).unwrap();
    put(&mut a, "f/x", map! {"d" => bytes(&[1])}.as_map()).unwrap();
    let (c, s) = a.export().unwrap();
    let mut b = Repo::open(MemStorage::new(), None, trusted(2)).unwrap();
    b.receive(&c, &s).unwrap();
    // Concurrent assigns of the same field: one wins, the same on both.
    for (r, v) in [(&mut a, 2u8), (&mut b, 3u8)] {
        let mut t = Txn::new();
        t.update("f/x", map! {"d" => bytes(&[v; 3])}.as_map())
            .unwrap();
        r.commit(t).unwrap();
    }
    let (ca, sa) = a.export().unwrap();
    let (cb, sb) = b.export().unwrap();
    a.receive(&cb, &sb).unwrap();
    b.receive(&ca, &sa).unwrap();
    assert_eq!(a.state_hash().unwrap(), b.state_hash().unwrap());
    let d = a.get("f/x").unwrap().unwrap()["d"].clone();
    assert!(d == bytes(&[2; 3]) || d == bytes(&[3; 3]), "{d:?}");
}
