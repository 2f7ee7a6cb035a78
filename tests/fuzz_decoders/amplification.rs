//! Issue 23 §5: what a stranger's commit costs a sync server, per byte sent. The server decodes
//! commits access-only (`Commit::decode_access_only`, `RepoOptions::access_only`): the shapes
//! that cost the full decoder most per byte (lists of nulls, of empty lists and strings, wide
//! maps, sets, many small changes) stay within `FACTOR` (8) times their size, decoded and received.
//! The full decoder's factor (a client's, which builds every value) is printed for the record.

use super::{alloc, check};
use ibexdb::{
    map, system_clock, Commit, CommitId, Map, MemStorage, Name, Repo, RepoOptions, Txn, Value,
};

/// Commits a trusted repository holds (no seal needed to receive them).
type History = [(CommitId, Vec<u8>)];

/// One trusted commit of `txn` on top of `base` (a root when it is empty), encoded.
fn commit_of(base: &History, fill: impl FnOnce(&mut Txn)) -> Vec<u8> {
    let opts = RepoOptions::new("r", None, system_clock());
    let mut repo = Repo::open(MemStorage::new(), None, opts).unwrap();
    repo.receive(base, &[]).unwrap();
    let mut t = Txn::new();
    fill(&mut t);
    repo.commit(t).unwrap();
    let (commits, _) = repo.export().unwrap();
    commits.last().unwrap().1.clone()
}

fn one_field(base: &History, v: Value) -> Vec<u8> {
    commit_of(base, |t| {
        t.put("items/a", map! { "l" => v }.as_map()).unwrap();
    })
}

/// The shapes, each about 200 KB encoded.
fn shapes() -> Vec<(&'static str, Vec<u8>)> {
    shapes_on(&[])
}

/// The shapes on top of `base`.
fn shapes_on(base: &History) -> Vec<(&'static str, Vec<u8>)> {
    let n = 200_000;
    let wide: Map = (0..n / 8)
        .map(|i| (Name::from(format!("k{i:06}").as_str()), Value::Null))
        .collect();
    vec![
        (
            "a list of nulls",
            one_field(base, Value::List(vec![Value::Null; n])),
        ),
        (
            "a list of empty lists",
            one_field(base, Value::List(vec![Value::List(vec![]); n / 2])),
        ),
        (
            "lists nested to the deepest",
            one_field(
                base,
                Value::List(
                    (0..n / 40)
                        .map(|_| (0..31).fold(Value::Null, |v, _| Value::List(vec![v])))
                        .collect(),
                ),
            ),
        ),
        (
            "a list of one-byte strings",
            one_field(base, Value::List(vec![Value::from("x"); n / 3])),
        ),
        ("a wide map", one_field(base, Value::Map(wide))),
        (
            "a set",
            one_field(base, Value::set((0..n / 8).map(|i| format!("{i:06}")))),
        ),
        (
            "many empty items",
            commit_of(base, |t| {
                for i in 0..n / 12 {
                    t.put(&format!("c/{i:06}"), Map::new()).unwrap();
                }
            }),
        ),
        (
            "many deletes",
            commit_of(base, |t| {
                for i in 0..n / 10 {
                    t.delete(&format!("c/{i:06}")).unwrap();
                }
            }),
        ),
    ]
}

fn access_only_receiver() -> Repo<MemStorage> {
    let mut opts = RepoOptions::new("r", None, system_clock());
    opts.access_only = true;
    Repo::open(MemStorage::new(), None, opts).unwrap()
}

/// Issue 23 §5 (ignored until the server decoded access-only): a list of nulls, decoded and
/// received the way a server does, within the bound.
#[test]
fn a_list_of_nulls_decodes_within_the_bound() {
    let bytes = one_field(&[], Value::List(vec![Value::Null; 200_000]));
    check("nulls", 0, &bytes, &mut |b| {
        Commit::decode_access_only(b).unwrap();
    });
    let (_, id) = Commit::decode_access_only(&bytes).unwrap();
    let mut repo = access_only_receiver();
    let commits = vec![(id, bytes.clone())];
    check("receive nulls", 0, &bytes, &mut |_| {
        repo.receive(&commits, &[]).unwrap();
    });
}

#[test]
fn what_a_server_decodes_and_receives_costs_at_most_the_factor_of_its_bytes() {
    for (what, bytes) in shapes() {
        let base = alloc::reset_peak();
        let (full, id) = Commit::decode(&bytes).unwrap();
        let full_peak = alloc::peak() - base;
        drop(full);
        let base = alloc::reset_peak();
        let (c, access_id) = Commit::decode_access_only(&bytes).unwrap();
        let peak = alloc::peak() - base;
        assert_eq!(id, access_id);
        assert!(c.changes.iter().all(|ch| ch.is_elided()), "{what}");
        drop(c);
        eprintln!(
            "{what}: {} bytes; full decode x{:.1}, access-only decode x{:.2}",
            bytes.len(),
            full_peak as f64 / bytes.len() as f64,
            peak as f64 / bytes.len() as f64
        );
        check(what, 0, &bytes, &mut |b| {
            Commit::decode_access_only(b).unwrap();
        });
        // Received whole (stored in memory: the log's bytes count too).
        let mut repo = access_only_receiver();
        let commits = vec![(id, bytes.clone())];
        check(&format!("receive {what}"), 0, &bytes, &mut |_| {
            repo.receive(&commits, &[]).unwrap();
        });
        assert!(repo.has_commit(&id));
        assert!(repo.get("items/a").unwrap().is_none(), "no item is kept");
    }
}

/// The access-only decode refuses what a received write may not be, before building it (a
/// nested field name with a dot: the local write refuses it, so the bytes are edited), and
/// builds the `_acl` changes.
#[test]
fn the_access_only_decode_keeps_the_rules_of_a_received_write() {
    let mut dotted = one_field(&[], map! { "a~b" => 1 });
    let at = dotted.windows(3).position(|w| w == b"a~b").unwrap();
    dotted[at + 1] = b'.';
    assert!(
        Commit::decode(&dotted).is_ok(),
        "the decoder alone lets it by"
    );
    let e = Commit::decode_access_only(&dotted).unwrap_err();
    assert!(e.to_string().contains("contains '.'"), "{e}");
    // A founder's root: it makes its author owner (`_acl`) and writes an item.
    let id = ibexdb::Identity::from_entropy(&[5; 48]);
    let opts = RepoOptions::new("r", Some(id), system_clock());
    let mut repo = Repo::open(MemStorage::new(), None, opts).unwrap();
    let mut t = Txn::new();
    t.put("items/a", map! { "n" => 1 }.as_map()).unwrap();
    repo.commit(t).unwrap();
    let (commits, _) = repo.export().unwrap();
    let (full, _) = Commit::decode(&commits[0].1).unwrap();
    let (c, _) = Commit::decode_access_only(&commits[0].1).unwrap();
    let acl: Vec<_> = full
        .changes
        .iter()
        .filter(|c| c.collection == "_acl")
        .collect();
    assert!(!acl.is_empty(), "{:?}", full.changes);
    assert_eq!(c.changes.len(), acl.len() + 1);
    assert!(c.changes.iter().zip(&acl).all(|(a, b)| a == *b));
    assert!(c.changes.last().unwrap().is_elided());
}

/// The same shapes received by a server whose repository stores schemas for their collections
/// (docs/design.md §2.4): the stored-schema check reads each change's shape from the bytes
/// (`Commit::visit_shapes`), field by field, so the bound holds; and a shape the schema
/// refuses is stored without effect, as a full replica has it.
#[test]
fn a_server_checks_the_stored_schemas_within_the_factor_of_its_bytes() {
    let schemas = |required: bool| {
        move |t: &mut Txn| {
            let items = serde_json::json!({"fields": {"l": {"type": "any", "required": required}}});
            let c = serde_json::json!({"fields": {}});
            t.put("_schema/items", ibexdb::schema_value(1, &items).unwrap())
                .unwrap();
            t.put("_schema/c", ibexdb::schema_value(1, &c).unwrap())
                .unwrap();
        }
    };
    let root = commit_of(&[], schemas(true));
    let base = vec![(CommitId::of(&root), root)];
    for (what, bytes) in shapes_on(&base) {
        let id = CommitId::of(&bytes);
        let mut repo = access_only_receiver();
        repo.receive(&base, &[]).unwrap();
        let commits = vec![(id, bytes.clone())];
        let mut report = None;
        check(
            &format!("receive {what} under stored schemas"),
            0,
            &bytes,
            &mut |_| {
                report = Some(repo.receive(&commits, &[]).unwrap());
            },
        );
        assert_eq!(report.unwrap().refused, 0, "{what}: valid under its schema");
    }
    // `items` with a required field the deletes and empty items of `c` do not touch; a put of
    // `items` without it does not count, on the server as on a full replica.
    let valid = commit_of(&base, |t| {
        t.put("items/b", map! { "l" => 1, "other" => 1 }.as_map())
            .unwrap();
    });
    let (mut c, _) = Commit::decode(&valid).unwrap();
    let ibexdb::Op::Put(m) = &mut c.changes[0].op else {
        unreachable!()
    };
    m.remove("l");
    let bad = c.encode();
    let commits = vec![(CommitId::of(&bad), bad)];
    let mut server = access_only_receiver();
    server.receive(&base, &[]).unwrap();
    let mut full = Repo::open(
        MemStorage::new(),
        None,
        RepoOptions::new("r", None, system_clock()),
    )
    .unwrap();
    full.receive(&base, &[]).unwrap();
    assert_eq!(server.receive(&commits, &[]).unwrap().refused, 1);
    assert_eq!(full.receive(&commits, &[]).unwrap().refused, 1);
}
