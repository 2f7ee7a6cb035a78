//! Stored, versioned schemas and migrations (docs/design.md §2.4), from the outside: the rule
//! on received commits, read-only replicas of older applications, bad input, and migrations
//! (chains, two devices upgrading concurrently offline, an older device writing meanwhile, a
//! crash midway, a migration that fails). The seeded agreement simulation is in
//! `tests/access.rs` (`replicas_agree_on_which_commits_count`).

mod common;
use common::*;
use ibexdb::testing::FaultStorage;
use ibexdb::{map, Commit, CommitId, Error, Map, MemStorage, Op, Repo, Role, Seal, Storage, Txn};
use ibexdb::{Change, Value, SCHEMA_COLLECTION};
use serde_json::json;

fn open(n: u8, start: u64) -> Repo<MemStorage> {
    let mut o = signed(n);
    o.clock = clock(start);
    Repo::open(MemStorage::new(), None, o).unwrap()
}

/// Send everything `from` holds to `to` (sealing first); panics on a refusal.
fn send<A: Storage, B: Storage>(from: &mut Repo<A>, to: &mut Repo<B>) -> usize {
    from.seal().unwrap();
    let (commits, seals) = from.export().unwrap();
    to.receive(&commits, &seals).unwrap().refused
}

fn put(r: &mut Repo<impl Storage>, key: &str, m: Map) -> Result<Option<CommitId>, Error> {
    let mut t = Txn::new();
    t.put(key, m).unwrap();
    r.commit(t)
}

fn v1() -> serde_json::Value {
    json!({"fields": {"title": {"type": "string", "required": true}}})
}

fn v2() -> serde_json::Value {
    json!({"fields": {"name": {"type": "string", "required": true},
                      "done": {"type": "boolean", "required": true}},
           "allowOtherFields": false})
}

fn v3() -> serde_json::Value {
    json!({"fields": {"name": {"type": "string", "required": true},
                      "done": {"type": "boolean", "required": true},
                      "priority": {"type": "integer", "required": true}},
           "allowOtherFields": false})
}

/// v1 → v2: `title` becomes `name`, `done` is added. v2 → v3: `priority` is added.
fn migrations(step: u32, _id: &str, mut m: Map) -> Result<Map, Error> {
    match step {
        2 => {
            if let Some(t) = m.remove("title") {
                m.insert("name".into(), t);
            }
            if !m.contains_key("done") {
                m.insert("done".into(), Value::Bool(false));
            }
        }
        3 if !m.contains_key("priority") => {
            m.insert("priority".into(), Value::from(0i64));
        }
        _ => {}
    }
    Ok(m)
}

fn no_progress(_: usize, _: usize) {}

/// The application moves to `version` and stores its schema (an upgrade).
fn upgrade(r: &mut Repo<impl Storage>, version: u32, schema: serde_json::Value) {
    r.declare_app(version, &[("tasks".into(), schema.clone())])
        .unwrap();
    r.store_schemas(version, &[("tasks".into(), schema)])
        .unwrap();
}

/// An owner's repository at v1 with `n` tasks.
fn founded(n: u64) -> Repo<MemStorage> {
    let mut a = open(1, T0);
    a.declare_app(1, &[("tasks".into(), v1())]).unwrap();
    for i in 0..n {
        put(
            &mut a,
            &format!("tasks/{i}"),
            map! {"title" => format!("task {i}")}.as_map(),
        )
        .unwrap();
    }
    a
}

#[test]
fn the_first_commit_stores_the_declared_schemas_and_history_shows_them() {
    let mut a = founded(2);
    assert_eq!(a.schema_version(), 1);
    let (v, s) = a.stored_schema("tasks").unwrap();
    assert_eq!(v, 1);
    assert!(s.fields["title"].required);
    assert_eq!(a.item_count(), 2, "_schema items are not application items");
    let h = a.history(&format!("{SCHEMA_COLLECTION}/tasks")).unwrap();
    assert_eq!(h.len(), 1);
    assert!(matches!(&h[0].op, Op::Put(m) if m.get("version") == Some(&Value::from(1i64))));
    // The stored schema is enforced on local writes too (no local defineSchema here).
    let e = put(&mut a, "tasks/x", map! {"title" => 3i64}.as_map()).unwrap_err();
    assert!(
        matches!(&e, Error::Schema { field, .. } if field == "title"),
        "{e:?}"
    );
}

#[test]
fn bad_schemas_and_versions_are_typed_errors_and_store_nothing() {
    let mut a = founded(1);
    let before = a.commit_count();
    let e = a.store_schemas(0, &[("tasks".into(), v2())]).unwrap_err();
    assert!(
        matches!(e, Error::SchemaVersion { version: 0, .. }),
        "{e:?}"
    );
    let e = a
        .store_schemas(
            2,
            &[("tasks".into(), json!({"fields": {"a": {"type": "nope"}}}))],
        )
        .unwrap_err();
    assert!(
        matches!(&e, Error::InvalidSchema { collection, reason } if collection == "tasks" && reason.contains("nope")),
        "{e:?}"
    );
    let e = a.store_schemas(2, &[("_acl".into(), v2())]).unwrap_err();
    assert!(matches!(e, Error::InvalidSchema { .. }), "{e:?}");
    let e = a
        .store_schemas(2, &[("tasks".into(), json!({"version": 2}))])
        .unwrap_err();
    assert!(
        matches!(&e, Error::InvalidSchema { reason, .. } if reason.contains("version")),
        "{e:?}"
    );
    // A malformed `_schema` item written directly is refused like a malformed `_acl` one.
    let e = put(&mut a, "_schema/tasks", map! {"fields" => 1i64}.as_map()).unwrap_err();
    assert!(matches!(e, Error::InvalidSchema { .. }), "{e:?}");
    let e = put(&mut a, "_schema/tasks", map! {"version" => 1.5}.as_map()).unwrap_err();
    assert!(
        matches!(&e, Error::InvalidSchema { reason, .. } if reason.contains("version")),
        "{e:?}"
    );
    assert_eq!(a.commit_count(), before, "nothing stored");
    // Versions never go down.
    upgrade(&mut a, 3, v1());
    let e = a.store_schemas(2, &[("tasks".into(), v1())]).unwrap_err();
    assert!(
        matches!(
            e,
            Error::SchemaVersion {
                stored: 3,
                version: 2,
                ..
            }
        ),
        "{e:?}"
    );
    // The same schemas again write nothing.
    assert_eq!(a.store_schemas(3, &[("tasks".into(), v1())]).unwrap(), None);
}

/// A commit forged on top of `on` by identity `n` (its replica's checks bypassed).
fn forge(
    on: &Repo<MemStorage>,
    n: u8,
    hlc_ms: u64,
    changes: Vec<Change>,
) -> (CommitId, Vec<u8>, Vec<u8>) {
    let c = Commit {
        trusted: false,
        author: ident(n).public(),
        hlc: hlc_ms << 16,
        parents: on.heads(),
        changes,
    };
    let bytes = c.encode();
    let id = CommitId::of(&bytes);
    let seal = Seal::create(&ident(n), REPO, &[id]).encode();
    (id, bytes, seal)
}

#[test]
fn a_received_commit_is_checked_against_the_schemas_of_its_causal_past() {
    let mut a = founded(1);
    a.grant(&ident(2).public(), Role::Writer).unwrap();
    let mut b = open(2, T0 + 10);
    send(&mut a, &mut b);
    // A forged write that breaks the stored schema: stored everywhere, counts nowhere.
    let bad = Change {
        collection: "tasks".into(),
        id: "bad".into(),
        op: Op::Put(map! {"title" => 5i64}.as_map()),
    };
    let (id, bytes, seal) = forge(&b, 2, T0 + 100, vec![bad]);
    for r in [&mut a, &mut b] {
        let rep = r
            .receive(&[(id, bytes.clone())], std::slice::from_ref(&seal))
            .unwrap();
        assert_eq!(rep.refused, 1);
        assert_eq!(r.counts(&id), Some(false));
        assert!(r.get("tasks/bad").unwrap().is_none());
    }
    // A writer may not change the schemas: its `_schema` write does not count.
    let m = ibexdb::schema_value(2, &v2()).unwrap();
    let sch = Change {
        collection: SCHEMA_COLLECTION.into(),
        id: "tasks".into(),
        op: Op::Put(m),
    };
    let (id, bytes, seal) = forge(&b, 2, T0 + 101, vec![sch]);
    let rep = a.receive(&[(id, bytes)], &[seal]).unwrap();
    assert_eq!(rep.refused, 1);
    assert_eq!(a.schema_version(), 1);
    // A write concurrent with an upgrade counts: its past has the older schema.
    let mut c = open(2, T0 + 20);
    send(&mut a, &mut c);
    put(
        &mut c,
        "tasks/old",
        map! {"title" => "written under v1"}.as_map(),
    )
    .unwrap();
    upgrade(&mut a, 2, v2());
    assert!(
        send(&mut c, &mut a) == 0,
        "the v1 write counts on the upgraded replica"
    );
    assert!(a.get("tasks/old").unwrap().is_some());
    a.verify().unwrap();
}

#[test]
fn an_older_application_is_read_only_and_keeps_what_it_wrote_offline() {
    let mut a = founded(2);
    a.grant(&ident(2).public(), Role::Writer).unwrap();
    let mut b = open(2, T0 + 50);
    b.declare_app(1, &[("tasks".into(), v1())]).unwrap();
    send(&mut a, &mut b);
    assert!(b.read_only().is_none());
    // b writes offline (v1) while a upgrades to v2.
    put(
        &mut b,
        "tasks/offline",
        map! {"title" => "offline edit"}.as_map(),
    )
    .unwrap();
    upgrade(&mut a, 2, v2());
    assert_eq!(
        a.migrate("tasks", &[2], &mut migrations, 10, &mut no_progress)
            .unwrap(),
        2
    );
    send(&mut a, &mut b);
    // b now holds v2 data: its writes are refused, typed, before anything is written.
    let before = b.commit_count();
    let e = put(&mut b, "tasks/late", map! {"title" => "too late"}.as_map()).unwrap_err();
    assert!(
        matches!(
            e,
            Error::SchemaVersion {
                stored: 2,
                version: 1,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(matches!(b.read_only(), Some(Error::SchemaVersion { .. })));
    assert_eq!(b.commit_count(), before);
    // Reads still work, and the offline edit reaches a, which migrates it.
    assert_eq!(
        b.get("tasks/0").unwrap().unwrap().get("name"),
        Some(&Value::from("task 0"))
    );
    let passed = a.commit_count();
    assert!(!a.older_commits_since(passed, 2));
    assert_eq!(send(&mut b, &mut a), 0);
    assert!(
        a.older_commits_since(passed, 2),
        "b's offline commit is older"
    );
    assert_eq!(
        a.migrate("tasks", &[2], &mut migrations, 10, &mut no_progress)
            .unwrap(),
        1
    );
    assert!(!a.older_commits_since(a.commit_count(), 2));
    let got = a.get("tasks/offline").unwrap().unwrap().clone();
    assert_eq!(got.get("name"), Some(&Value::from("offline edit")));
    assert_eq!(got.get("done"), Some(&Value::Bool(false)));
    assert!(got.get("title").is_none());
}

#[test]
fn migrations_chain_v1_v2_v3_and_report_progress() {
    let mut a = founded(25);
    upgrade(&mut a, 2, v2());
    let mut seen = Vec::new();
    let n = a
        .migrate("tasks", &[2, 3], &mut migrations, 10, &mut |d, t| {
            seen.push((d, t))
        })
        .unwrap();
    assert_eq!(n, 25);
    assert_eq!(seen, vec![(10, 25), (20, 25), (25, 25)]);
    upgrade(&mut a, 3, v3());
    assert_eq!(
        a.migrate("tasks", &[2, 3], &mut migrations, 10, &mut no_progress)
            .unwrap(),
        25
    );
    // Nothing left: running it again writes nothing.
    assert_eq!(
        a.migrate("tasks", &[2, 3], &mut migrations, 10, &mut no_progress)
            .unwrap(),
        0
    );
    let t = a.get("tasks/7").unwrap().unwrap();
    assert_eq!(t.get("name"), Some(&Value::from("task 7")));
    assert_eq!(t.get("priority"), Some(&Value::from(0i64)));
    // A v1 repository opened by a v3 application migrates through both steps at once.
    let mut b = founded(5);
    upgrade(&mut b, 3, v3());
    assert_eq!(
        b.migrate("tasks", &[2, 3], &mut migrations, 10, &mut no_progress)
            .unwrap(),
        5
    );
    let want = map! {"name" => "task 1", "done" => false, "priority" => 0i64}.as_map();
    assert_eq!(b.get("tasks/1").unwrap().unwrap(), &want);
    b.verify().unwrap();
}

#[test]
fn a_failing_migration_writes_nothing() {
    let mut a = founded(30);
    upgrade(&mut a, 2, v2());
    let before = (a.commit_count(), a.state_hash().unwrap());
    let mut failing = |step: u32, id: &str, m: Map| {
        if id == "17" {
            return Err(Error::InvalidValue {
                path: "tasks/17".into(),
                reason: "the migration failed".into(),
            });
        }
        migrations(step, id, m)
    };
    let e = a
        .migrate("tasks", &[2], &mut failing, 5, &mut no_progress)
        .unwrap_err();
    assert!(matches!(e, Error::InvalidValue { .. }), "{e:?}");
    assert_eq!((a.commit_count(), a.state_hash().unwrap()), before);
    // A migration that returns a non-item is refused by the schema, per commit, before writing.
    let mut bad = |_: u32, _: &str, _: Map| Ok(map! {"name" => 1i64}.as_map());
    let e = a
        .migrate("tasks", &[2], &mut bad, 1000, &mut no_progress)
        .unwrap_err();
    assert!(matches!(e, Error::Schema { .. }), "{e:?}");
    assert_eq!((a.commit_count(), a.state_hash().unwrap()), before);
}

#[test]
fn two_devices_upgrading_concurrently_converge_without_duplicates() {
    for_seeds("two_devices_upgrading_concurrently", 0..6, |seed| {
        let mut rng = Rng(seed);
        let mut a = founded(40);
        a.grant(&ident(2).public(), Role::Owner).unwrap();
        a.grant(&ident(3).public(), Role::Writer).unwrap();
        let mut b = open(2, T0 + rng.below(5000));
        let mut old = open(3, T0 + rng.below(5000));
        old.declare_app(1, &[("tasks".into(), v1())]).unwrap();
        send(&mut a, &mut b);
        send(&mut a, &mut old);
        // Offline: a and b both upgrade to v2 (their clocks apart by the seed), and the old
        // device edits some items meanwhile, before or after them by its clock.
        for r in [&mut a, &mut b] {
            upgrade(r, 2, v2());
            r.migrate("tasks", &[2], &mut migrations, 7, &mut no_progress)
                .unwrap();
        }
        let edited: Vec<u64> = (0..5).map(|_| rng.below(40)).collect();
        for &i in &edited {
            let m = map! {"title" => format!("edited {i}")}.as_map();
            put(&mut old, &format!("tasks/{i}"), m).unwrap();
        }
        put(
            &mut old,
            "tasks/new",
            map! {"title" => "new on v1"}.as_map(),
        )
        .unwrap();
        // ... and deletes one it did not edit (a delete is an edit too).
        let gone = (0..40u64).find(|i| !edited.contains(i)).unwrap();
        let mut t = Txn::new();
        t.delete(&format!("tasks/{gone}")).unwrap();
        old.commit(t).unwrap();
        // Everyone meets, in a seeded order; each upgraded device migrates what arrived.
        let mut rs = [a, b, old];
        for _ in 0..3 {
            let (i, j) = (rng.below(3) as usize, rng.below(3) as usize);
            if i != j {
                let (x, y) = if i < j {
                    let (l, r) = rs.split_at_mut(j);
                    (&mut l[i], &mut r[0])
                } else {
                    let (l, r) = rs.split_at_mut(i);
                    (&mut r[0], &mut l[j])
                };
                send(x, y);
            }
        }
        for _ in 0..2 {
            for i in 0..3 {
                for j in 0..3 {
                    if i != j {
                        let (x, y) = if i < j {
                            let (l, r) = rs.split_at_mut(j);
                            (&mut l[i], &mut r[0])
                        } else {
                            let (l, r) = rs.split_at_mut(i);
                            (&mut r[0], &mut l[j])
                        };
                        send(x, y);
                    }
                }
            }
            for r in rs.iter_mut().take(2) {
                r.migrate("tasks", &[2], &mut migrations, 7, &mut no_progress)
                    .unwrap();
            }
        }
        let hash = rs[0].state_hash().unwrap();
        for (k, r) in rs.iter_mut().enumerate() {
            assert_eq!(r.state_hash().unwrap(), hash, "replica {k} (seed {seed})");
            assert_eq!(
                r.item_count(),
                40,
                "replica {k}: no duplicates, the deleted item stays deleted (seed {seed})"
            );
            assert!(
                r.get(&format!("tasks/{gone}")).unwrap().is_none(),
                "seed {seed}"
            );
            assert_eq!(r.schema_version(), 2);
        }
        // Every old edit survived, migrated; nothing is left at v1.
        for &i in &edited {
            let t = rs[0].get(&format!("tasks/{i}")).unwrap().unwrap().clone();
            assert_eq!(
                t.get("name"),
                Some(&Value::from(format!("edited {i}"))),
                "seed {seed}"
            );
            assert!(t.get("title").is_none(), "seed {seed}");
        }
        assert_eq!(
            rs[0].get("tasks/new").unwrap().unwrap().get("done"),
            Some(&Value::Bool(false))
        );
        assert!(rs[0]
            .migration_pending("tasks", &[2], 2, usize::MAX)
            .unwrap()
            .is_empty());
        rs[0].verify().unwrap();
    });
}

#[test]
fn a_migration_interrupted_by_a_crash_resumes() {
    let log = FaultStorage::new();
    let mut o = signed(1);
    o.clock = clock(T0);
    let mut a = Repo::open(log.clone(), None, o).unwrap();
    a.declare_app(1, &[("tasks".into(), v1())]).unwrap();
    for i in 0..100u64 {
        put(
            &mut a,
            &format!("tasks/{i}"),
            map! {"title" => format!("task {i}")}.as_map(),
        )
        .unwrap();
    }
    upgrade(&mut a, 2, v2());
    a.flush().unwrap();
    // The device dies during the fourth batch's flush.
    log.power_cut_at_write(3);
    let e = a
        .migrate("tasks", &[2], &mut migrations, 10, &mut no_progress)
        .unwrap_err();
    assert!(matches!(e, Error::Storage(_)), "{e:?}");
    drop(a);
    let mut o = signed(1);
    o.clock = clock(T0 + 10_000);
    let mut b = Repo::open(MemStorage::from_bytes(log.durable_bytes()), None, o).unwrap();
    let left = b
        .migration_pending("tasks", &[2], 2, usize::MAX)
        .unwrap()
        .len();
    eprintln!("after the crash: {left} of 100 items left to migrate");
    assert!(
        left % 10 == 0 && (60..=80).contains(&left),
        "whole batches survived: {left} left"
    );
    assert_eq!(
        b.migrate("tasks", &[2], &mut migrations, 10, &mut no_progress)
            .unwrap(),
        left
    );
    assert_eq!(b.item_count(), 100);
    for i in 0..100u64 {
        let t = b.get(&format!("tasks/{i}")).unwrap().unwrap();
        assert_eq!(t.get("name"), Some(&Value::from(format!("task {i}"))));
    }
    b.verify().unwrap();
}

#[test]
fn stored_schemas_survive_snapshots_and_verify() {
    let snap = MemStorage::new();
    let mut o = signed(1);
    o.clock = clock(T0);
    let mut a = Repo::open(MemStorage::new(), Some(snap), o).unwrap();
    a.declare_app(1, &[("tasks".into(), v1())]).unwrap();
    put(&mut a, "tasks/1", map! {"title" => "x"}.as_map()).unwrap();
    upgrade(&mut a, 2, v2());
    a.migrate("tasks", &[2], &mut migrations, 10, &mut no_progress)
        .unwrap();
    a.seal().unwrap();
    assert!(a.write_snapshot().unwrap());
    let schemas = a.stored_schemas();
    let (log, snap) = a.close().unwrap();
    let mut b = Repo::open(log, snap, signed(1)).unwrap();
    assert!(b.open_report().from_snapshot);
    assert_eq!(b.stored_schemas(), schemas);
    assert_eq!(b.schema_version(), 2);
    assert!(b.verify().unwrap().snapshot_checked);
    let e = put(&mut b, "tasks/2", map! {"title" => "v1 shape"}.as_map()).unwrap_err();
    assert!(matches!(e, Error::Schema { .. }), "{e:?}");
}

#[test]
fn only_owners_store_schemas_and_anyone_may_in_an_unowned_repository() {
    let mut a = founded(1);
    a.grant(&ident(2).public(), Role::Writer).unwrap();
    let mut w = open(2, T0 + 30);
    send(&mut a, &mut w);
    assert!(!w.may_store_schemas());
    let before = w.commit_count();
    let e = w.store_schemas(2, &[("tasks".into(), v2())]).unwrap_err();
    assert!(matches!(e, Error::Permission { .. }), "{e:?}");
    let e = put(
        &mut w,
        "_schema/tasks",
        ibexdb::schema_value(2, &v2()).unwrap(),
    )
    .unwrap_err();
    assert!(matches!(e, Error::Permission { .. }), "{e:?}");
    assert_eq!(w.commit_count(), before);
    // Trusted mode: an unowned repository, whose schemas anyone may store.
    let mut o = trusted(3);
    o.clock = clock(T0);
    let mut t = Repo::open(MemStorage::new(), None, o).unwrap();
    t.declare_app(1, &[("tasks".into(), v1())]).unwrap();
    put(&mut t, "tasks/1", map! {"title" => "x"}.as_map()).unwrap();
    assert!(t.may_store_schemas());
    upgrade(&mut t, 2, v2());
    assert_eq!(t.schema_version(), 2);
    assert_eq!(
        t.migrate("tasks", &[2], &mut migrations, 10, &mut no_progress)
            .unwrap(),
        1
    );
    t.verify().unwrap();
}
