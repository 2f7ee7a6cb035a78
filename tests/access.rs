//! Permissions (docs/design.md §6.4) and stored schemas (§2.4): every replica agrees on which
//! commits count, whatever the order in which they arrive. Seeded multi-peer simulations with
//! grants, revocations, role changes, schema upgrades (and downgrades, and schema writes by
//! non-owners), writes concurrent with them (some breaking a schema), and commits forged by
//! keys that bypass their own replica's checks; a failure prints its seed (rerun one with
//! IBEX_SEED=n).

mod common;
use common::*;
use ibexdb::{map, member_value, Change, Commit, CommitId, Error, Identity, MemStorage, Op};
use ibexdb::{PermissionErrorKind, PublicKey, Repo, Role, Seal, Txn, ACL_COLLECTION};
use ibexdb::{Value, SCHEMA_COLLECTION};
use std::collections::BTreeSet;

const REPLICAS: u8 = 4;
const ROGUE: u8 = 9;

/// A commit with its seal, as a peer would send it.
#[derive(Clone)]
struct Sent {
    id: CommitId,
    bytes: Vec<u8>,
    seals: Vec<Vec<u8>>,
}

fn open_replica(n: u8) -> Repo<MemStorage> {
    let mut o = signed(n);
    o.clock = clock(T0 + u64::from(n) * 7);
    Repo::open(MemStorage::new(), None, o).unwrap()
}

fn acl_change(target: &PublicKey, role: Option<Role>) -> Change {
    Change {
        collection: ACL_COLLECTION.into(),
        id: target.to_hex(),
        op: role.map_or(Op::Delete, |r| Op::Put(member_value(r))),
    }
}

/// A put of `t/k<n>`; one in five holds a string where the strict schema wants an integer.
fn data_change(rng: &mut Rng) -> Change {
    let v = if rng.chance(20) {
        Value::from(format!("s{}", rng.below(100)))
    } else {
        Value::from(rng.below(100) as i64)
    };
    Change {
        collection: "t".into(),
        id: format!("k{}", rng.below(5)),
        op: Op::Put(map! { "v" => v }.as_map()),
    }
}

/// One of two schemas of `t`: `v` an integer (strict), or anything.
fn schema_json(rng: &mut Rng) -> serde_json::Value {
    let ty = if rng.chance(50) { "integer" } else { "any" };
    serde_json::json!({"fields": {"v": {"type": ty}}})
}

/// A `_schema/t` put at `version`.
fn schema_change(rng: &mut Rng, version: u32) -> Change {
    let mut m = ibexdb::Map::new();
    let strict = rng.chance(50);
    let mut v = ibexdb::Map::new();
    v.insert(
        "type".into(),
        Value::from(if strict { "integer" } else { "any" }),
    );
    let mut fields = ibexdb::Map::new();
    fields.insert("v".into(), Value::Map(v));
    m.insert("fields".into(), Value::Map(fields));
    m.insert("version".into(), Value::from(i64::from(version)));
    Change {
        collection: SCHEMA_COLLECTION.into(),
        id: "t".into(),
        op: Op::Put(m),
    }
}

fn random_role(rng: &mut Rng) -> Option<Role> {
    [
        None,
        Some(Role::Reader),
        Some(Role::Writer),
        Some(Role::Owner),
    ][rng.below(4) as usize]
}

/// A commit made without the author's replica checking it: on top of `on`'s heads, by
/// `author`, sealed by it.
fn forge(rng: &mut Rng, on: &Repo<MemStorage>, author: &Identity, step: u64) -> Sent {
    let change = if rng.chance(25) {
        let version = 1 + rng.below(3) as u32;
        schema_change(rng, version)
    } else if rng.chance(50) {
        data_change(rng)
    } else {
        let target = ident(1 + rng.below(u64::from(REPLICAS)) as u8).public();
        acl_change(&target, random_role(rng))
    };
    let c = Commit {
        trusted: false,
        author: author.public(),
        hlc: (T0 + 500 + step) << 16,
        parents: on.heads(),
        changes: vec![change],
    };
    let bytes = c.encode();
    let id = CommitId::of(&bytes);
    let seals = vec![Seal::create(author, REPO, &[id]).encode()];
    Sent { id, bytes, seals }
}

fn everything(r: &Repo<MemStorage>) -> Vec<Sent> {
    let (commits, seals) = r.export().unwrap();
    commits
        .into_iter()
        .map(|(id, bytes)| Sent {
            id,
            bytes,
            seals: seals.clone(),
        })
        .collect()
}

/// Deliver `sent` one commit at a time in a random order; returns how many do not count
/// (forged commits, and writes the access list of their past does not allow: stored without
/// effect). A refusal is a bug.
fn deliver(rng: &mut Rng, to: &mut Repo<MemStorage>, sent: &[Sent]) -> usize {
    let mut order: Vec<&Sent> = sent.iter().collect();
    rng.shuffle(&mut order);
    let mut refused = 0;
    for s in order {
        match to.receive(&[(s.id, s.bytes.clone())], &s.seals) {
            Ok(r) => refused += r.refused,
            Err(e) => panic!("unexpected refusal: {e:?}"),
        }
    }
    refused
}

fn ids(r: &Repo<MemStorage>) -> BTreeSet<CommitId> {
    r.export()
        .unwrap()
        .0
        .into_iter()
        .map(|(id, _)| id)
        .collect()
}

/// One step of a replica: a write or an access-list change through the API (which refuses
/// what the replica's access list does not allow), a forged commit, or gossip.
fn step(rng: &mut Rng, rs: &mut [Repo<MemStorage>], forged: &mut Vec<Sent>, n: u64) {
    let i = rng.below(rs.len() as u64) as usize;
    match rng.below(10) {
        0..=3 => {
            let mut t = Txn::new();
            let ch = data_change(rng);
            let Op::Put(m) = ch.op else { unreachable!() };
            t.put(&format!("t/{}", ch.id), m).unwrap();
            if let Err(e) = rs[i].commit(t) {
                let ok = matches!(e, Error::Permission { .. } | Error::Schema { .. });
                assert!(ok, "{e:?}");
            }
        }
        4 if rng.chance(70) => {
            // A schema upgrade (or a rewrite at the same version, or a downgrade).
            let v = (rs[i].schema_version() + rng.below(3) as u32).saturating_sub(1);
            let r = rs[i].store_schemas(v.max(1), &[("t".into(), schema_json(rng))]);
            if let Err(e) = r {
                let ok = matches!(e, Error::Permission { .. } | Error::SchemaVersion { .. });
                assert!(ok, "{e:?}");
            }
        }
        4 | 5 => {
            let target = ident(1 + rng.below(u64::from(REPLICAS)) as u8).public();
            let r = match random_role(rng) {
                Some(role) => rs[i].grant(&target, role),
                None => rs[i].revoke(&target),
            };
            if let Err(e) = r {
                assert!(matches!(e, Error::Permission { .. }), "{e:?}");
            }
        }
        6 => {
            let author = if rng.chance(50) {
                ident(ROGUE)
            } else {
                ident(i as u8 + 1)
            };
            forged.push(forge(rng, &rs[i], &author, n));
        }
        _ => {
            let j = rng.below(rs.len() as u64) as usize;
            rs[j].seal().unwrap();
            let mut sent = everything(&rs[j]);
            sent.extend(forged.iter().filter(|_| rng.chance(30)).cloned());
            deliver(rng, &mut rs[i], &sent);
        }
    }
}

fn scenario(seed: u64) -> (usize, usize, u32) {
    let mut rng = Rng(seed);
    let mut rs: Vec<Repo<MemStorage>> = (1..=REPLICAS).map(open_replica).collect();
    // Replica 1 founds the repository; everyone starts from its root.
    let mut t = Txn::new();
    t.put("t/k0", map! { "v" => 0i64 }.as_map()).unwrap();
    rs[0].commit(t).unwrap();
    if rng.chance(70) {
        let k = rs[1].author();
        rs[0].grant(&k, Role::Writer).unwrap();
    }
    rs[0].seal().unwrap();
    let root = everything(&rs[0]);
    for r in &mut rs[1..] {
        deliver(&mut rng, r, &root);
    }
    let mut forged = Vec::new();
    for n in 0..80 {
        step(&mut rng, &mut rs, &mut forged, n);
    }
    // Everything ever made, to every replica and to fresh observers, in random orders.
    let mut all: Vec<Sent> = forged.clone();
    for r in &mut rs {
        r.seal().unwrap();
        all.extend(everything(r));
    }
    let mut refused = 0;
    for r in &mut rs {
        refused += deliver(&mut rng, r, &all);
    }
    let mut observers: Vec<Repo<MemStorage>> = (0..3).map(|k| open_replica(50 + k)).collect();
    for o in &mut observers {
        deliver(&mut rng, o, &all);
    }
    let first = ids(&observers[0]);
    let hash = observers[0].state_hash().unwrap();
    let acl = observers[0].access().clone();
    let observers_schemas = observers[0].stored_schemas();
    for (k, r) in rs.iter_mut().chain(observers.iter_mut()).enumerate() {
        assert_eq!(r.pending(), 0, "replica {k} still waits (seed {seed})");
        assert_eq!(
            ids(r),
            first,
            "replica {k} counts other commits (seed {seed})"
        );
        assert_eq!(
            r.state_hash().unwrap(),
            hash,
            "replica {k} diverged (seed {seed})"
        );
        assert_eq!(*r.access(), acl, "replica {k} access list (seed {seed})");
        assert_eq!(
            r.stored_schemas(),
            observers_schemas,
            "replica {k} stored schemas (seed {seed})"
        );
    }
    for o in &mut observers {
        o.verify().unwrap();
    }
    // Every replica counts the same commits (the others are stored without effect).
    let counted = |r: &Repo<MemStorage>| -> BTreeSet<CommitId> {
        first
            .iter()
            .filter(|id| r.counts(id) == Some(true))
            .copied()
            .collect()
    };
    let counts = counted(&observers[0]);
    for (k, r) in rs.iter().chain(observers.iter()).enumerate() {
        assert_eq!(
            counted(r),
            counts,
            "replica {k} counts others (seed {seed})"
        );
    }
    // A sync server's replica (access-only: the access list and the stored schemas, not the
    // items; docs/design.md §12.4) counts the same commits, and so it does once reopened: from
    // its log replayed, and from a snapshot of it.
    let opts = || {
        let mut o = signed(60);
        o.access_only = true;
        o
    };
    let mut server = Repo::open(MemStorage::new(), None, opts()).unwrap();
    deliver(&mut rng, &mut server, &all);
    let agrees = |r: &mut Repo<MemStorage>, how: &str| {
        assert_eq!(
            counted(r),
            counts,
            "the server {how} counts others (seed {seed})"
        );
        assert_eq!(
            *r.access(),
            acl,
            "the server {how}: access list (seed {seed})"
        );
        assert_eq!(
            r.stored_schemas(),
            observers_schemas,
            "the server {how} (seed {seed})"
        );
        assert!(r.get("t/k0").unwrap().is_none(), "the server keeps no item");
    };
    agrees(&mut server, "receiving");
    let (log, _) = server.close().unwrap();
    let mut replayed = Repo::open(log, Some(MemStorage::new()), opts()).unwrap();
    agrees(&mut replayed, "replaying its log");
    assert!(replayed.write_snapshot().unwrap());
    let (log, snap) = replayed.close().unwrap();
    agrees(
        &mut Repo::open(log, snap, opts()).unwrap(),
        "from its snapshot",
    );
    let accepted_forged = forged.iter().filter(|f| counts.contains(&f.id)).count();
    (refused, accepted_forged, observers[0].schema_version())
}

#[test]
fn replicas_agree_on_which_commits_count() {
    let totals = std::cell::Cell::new((0, 0, 0));
    for_seeds("replicas_agree_on_which_commits_count", 0..30, |seed| {
        let (r, a, v) = scenario(seed);
        let (tr, ta, tv) = totals.get();
        totals.set((tr + r, ta + a, tv + usize::from(v >= 2)));
        eprintln!("seed {seed}: {r} refusals, {a} forged allowed, schema version {v}");
    });
    // The simulation exercises both sides of the rule, and schema upgrades.
    let (refused, allowed, upgraded) = totals.get();
    eprintln!("permission simulation: {refused} refusals, {allowed} forged commits allowed, {upgraded} runs upgraded their schema");
    if std::env::var("IBEX_SEED").is_err() {
        assert!(refused > 0, "no commit was ever refused");
        assert!(allowed > 0, "no forged commit was ever allowed");
        assert!(upgraded > 0, "no run upgraded its schema");
    }
}

#[test]
fn a_revocation_concurrent_with_a_write_does_not_undo_it() {
    let (mut owner, mut w, mut late) = (open_replica(1), open_replica(2), open_replica(3));
    let mut t = Txn::new();
    t.put("t/a", map! { "v" => 1i64 }.as_map()).unwrap();
    owner.commit(t).unwrap();
    owner.grant(&w.author(), Role::Writer).unwrap();
    owner.seal().unwrap();
    let base = everything(&owner);
    let mut rng = Rng(1);
    deliver(&mut rng, &mut w, &base);
    // Concurrently: W writes; the owner revokes W.
    let mut t = Txn::new();
    t.put("t/w", map! { "v" => 2i64 }.as_map()).unwrap();
    w.commit(t).unwrap();
    owner.revoke(&w.author()).unwrap();
    w.seal().unwrap();
    owner.seal().unwrap();
    // Both orders, on a third replica: the concurrent write counts.
    let mut all = everything(&w);
    all.extend(everything(&owner));
    deliver(&mut rng, &mut late, &all);
    assert!(late.get("t/w").unwrap().is_some());
    deliver(&mut rng, &mut owner, &everything(&w));
    assert_eq!(owner.state_hash().unwrap(), late.state_hash().unwrap());
    // A write W makes after it has seen the revocation is refused by its own replica, and a
    // forged one (bypassing that check) does not count on any other: stored, without effect.
    deliver(&mut rng, &mut w, &everything(&owner));
    let mut t = Txn::new();
    t.put("t/w2", map! { "v" => 3i64 }.as_map()).unwrap();
    let e = w.commit(t).unwrap_err();
    assert!(matches!(
        e,
        Error::Permission {
            kind: PermissionErrorKind::CannotWrite,
            ..
        }
    ));
    let f = forge(&mut Rng(5), &w, &ident(2), 0);
    let hash = late.state_hash().unwrap();
    let r = late.receive(&[(f.id, f.bytes)], &f.seals).unwrap();
    assert_eq!((r.applied, r.refused), (0, 1));
    assert!(ids(&late).contains(&f.id));
    assert_eq!(late.state_hash().unwrap(), hash);
}

#[test]
fn access_lists_survive_snapshots_and_verify_reproves_them() {
    let mut o = signed(1);
    o.clock = clock(T0);
    let snap = MemStorage::new();
    let mut a = Repo::open(MemStorage::new(), Some(snap), o).unwrap();
    let mut t = Txn::new();
    t.put("t/a", map! { "v" => 1i64 }.as_map()).unwrap();
    a.commit(t).unwrap();
    a.grant(&ident(2).public(), Role::Writer).unwrap();
    a.grant(&ident(3).public(), Role::Reader).unwrap();
    a.set_public(true, false).unwrap();
    a.revoke(&ident(3).public()).unwrap();
    a.seal().unwrap();
    assert!(a.write_snapshot().unwrap());
    let acl = a.access().clone();
    assert_eq!(acl.role(&ident(1).public()), Some(Role::Owner));
    assert_eq!(acl.role(&ident(2).public()), Some(Role::Writer));
    assert_eq!(acl.role(&ident(3).public()), None);
    assert_eq!(acl.public(), (true, false));
    let hash = a.state_hash().unwrap();
    let (log, snap) = a.close().unwrap();
    let mut b = Repo::open(log, snap, signed(1)).unwrap();
    assert!(b.open_report().from_snapshot);
    assert_eq!(*b.access(), acl);
    assert_eq!(b.state_hash().unwrap(), hash);
    assert!(b.verify().unwrap().snapshot_checked);
    // The last owner cannot be revoked.
    let e = b.revoke(&ident(1).public()).unwrap_err();
    assert!(matches!(e, Error::Permission { .. }));
    // Malformed access-list items are refused like any malformed value.
    let mut t = Txn::new();
    t.put("_acl/public", map! { "read" => 1i64 }.as_map())
        .unwrap();
    assert!(matches!(b.commit(t), Err(Error::InvalidValue { .. })));
    let mut t = Txn::new();
    t.put("_acl/nobody", map! { "role" => "owner" }.as_map())
        .unwrap();
    assert!(matches!(b.commit(t), Err(Error::InvalidValue { .. })));
    assert_eq!(b.item_count(), 1);
}
