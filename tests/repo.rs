//! Repository behaviour through the public API: CRUD, transactions, schemas, limits, errors,
//! persistence, history, signatures and their rejection cases.

mod common;
use common::*;
use ibexdb::Durability;
use ibexdb::SignatureErrorKind;
use ibexdb::{map, Error, Identity, MemStorage, Repo, RepoOptions, Schema, Txn, Value};
use ibexdb::{Commit, Seal};

fn open(n: u8) -> Repo<MemStorage> {
    Repo::open(MemStorage::new(), Some(MemStorage::new()), signed(n)).unwrap()
}

fn put(r: &mut Repo<MemStorage>, key: &str, v: ibexdb::Map) {
    let mut t = Txn::new();
    t.put(key, v).unwrap();
    r.commit(t).unwrap();
}

#[test]
fn crud_and_atomic_transactions() {
    let mut r = open(1);
    put(&mut r, "items/1", item(1));
    assert_eq!(r.get("items/1").unwrap(), Some(&item(1)));
    let mut t = Txn::new();
    t.update("items/1", map! {"count" => 5i64}.as_map())
        .unwrap();
    t.set_add("items/1", "tags", ["new"]).unwrap();
    t.set_remove("items/1", "tags", ["tag 1"]).unwrap();
    r.commit(t).unwrap();
    let v = r.get("items/1").unwrap().unwrap();
    assert_eq!(v["count"], Value::from(5i64));
    assert_eq!(v["tags"], Value::set(["category 1", "new"]));

    // One transaction, many items, one commit.
    let before = r.commit_count();
    let mut t = Txn::new();
    for i in 2..50 {
        t.put(&format!("items/{i}"), item(i)).unwrap();
    }
    r.commit(t).unwrap();
    assert_eq!(r.commit_count(), before + 1);
    assert_eq!(r.state().collection("items").unwrap().count(), 49);

    // A transaction with one bad write commits nothing.
    let hash = r.state_hash().unwrap();
    let mut t = Txn::new();
    t.put("items/100", item(100)).unwrap();
    t.update("items/missing", map! {"x" => 1i64}.as_map())
        .unwrap();
    assert!(matches!(r.commit(t), Err(Error::NotFound { key }) if key == "items/missing"));
    assert_eq!(r.state_hash().unwrap(), hash);
    assert_eq!(r.get("items/100").unwrap(), None);

    let mut t = Txn::new();
    t.delete("items/2").unwrap();
    r.commit(t).unwrap();
    assert_eq!(r.get("items/2").unwrap(), None);
    assert_eq!(r.state().collection("items").unwrap().count(), 48);
    // Writes to one key coalesce: put then update then set_add is one put.
    let mut t = Txn::new();
    t.put("items/2", item(2)).unwrap();
    t.update("items/2", map! {"count" => 7i64}.as_map())
        .unwrap();
    t.set_add("items/2", "tags", ["z"]).unwrap();
    r.commit(t).unwrap();
    let v = r.get("items/2").unwrap().unwrap();
    assert_eq!(v["count"], Value::from(7i64));
    assert!(matches!(&v["tags"], Value::Set(s) if s.contains("z") && s.len() == 3));
    // Nothing to do: no commit.
    assert_eq!(r.commit(Txn::new()).unwrap(), None);
}

#[test]
fn bad_input_gets_typed_errors() {
    let mut r = open(1);
    let mut t = Txn::new();
    for bad in ["nokey", "/x", "a b/1", "items/"] {
        assert!(
            matches!(t.put(bad, item(1)), Err(Error::InvalidKey { .. })),
            "{bad}"
        );
    }
    let bad_value = map! {"x" => Value::Number(f64::NAN)}.as_map();
    assert!(matches!(
        t.put("items/1", bad_value),
        Err(Error::InvalidValue { .. })
    ));
    // A bad field name's error names the field, at the top and nested.
    let bad_name = map! {"a.b" => 1i64}.as_map();
    assert!(matches!(
        t.put("items/1", bad_name),
        Err(Error::InvalidValue { path, .. }) if path == "a.b"
    ));
    let nested = map! {"outer" => map! {"x.y" => 1i64}}.as_map();
    assert!(matches!(
        t.put("items/1", nested),
        Err(Error::InvalidValue { path, .. }) if path == "outer.x.y"
    ));
    assert!(matches!(
        t.unset("items/1", "p.q"),
        Err(Error::InvalidValue { path, .. }) if path == "p.q"
    ));
    // A collection name no key can hold is an error, not an empty answer.
    for bad in ["../x", "", "a b", "x/y"] {
        assert!(
            matches!(r.count(bad, None), Err(Error::InvalidKey { .. })),
            "count {bad:?}"
        );
        assert!(
            matches!(r.keys(bad), Err(Error::InvalidKey { .. })),
            "keys {bad:?}"
        );
    }
    let q = serde_json::json!({"collection": "../x"});
    assert!(matches!(
        ibexdb::Query::from_json(&q),
        Err(Error::InvalidKey { .. })
    ));
    let mut deep = Value::Null;
    for _ in 0..40 {
        deep = Value::List(vec![deep]);
    }
    assert!(matches!(
        t.put("items/1", map! {"d" => deep}.as_map()),
        Err(Error::InvalidValue { .. })
    ));
    let mut t = Txn::new();
    t.put("items/big", map! {"x" => "x".repeat(17 << 20)}.as_map())
        .unwrap();
    assert!(matches!(r.commit(t), Err(Error::TooLarge { .. })));
    // Set edits on a non-set field.
    put(&mut r, "items/1", item(1));
    let mut t = Txn::new();
    t.set_add("items/1", "title", ["x"]).unwrap();
    assert!(matches!(r.commit(t), Err(Error::InvalidValue { .. })));
    assert_eq!(Error::Closed.name(), "ClosedError");
}

#[test]
fn schemas_reject_with_the_field_name() {
    let mut r = open(1);
    let s = Schema::from_json(
        "items",
        &serde_json::json!({"fields": {"title": {"type": "string", "required": true},
            "count": {"type": "integer", "default": 0}, "tags": {"type": "set"}}}),
    )
    .unwrap();
    r.define_schema("items", s).unwrap();
    let mut t = Txn::new();
    t.put("items/1", map! {"title" => 3i64}.as_map()).unwrap();
    match r.commit(t) {
        Err(Error::Schema { field, .. }) => assert_eq!(field, "title"),
        other => panic!("{other:?}"),
    }
    let mut t = Txn::new();
    t.put("items/1", map! {"title" => "x"}.as_map()).unwrap();
    r.commit(t).unwrap();
    assert_eq!(
        r.get("items/1").unwrap().unwrap()["count"],
        Value::from(0i64)
    );
    let mut t = Txn::new();
    t.update("items/1", map! {"count" => "many"}.as_map())
        .unwrap();
    assert!(matches!(r.commit(t), Err(Error::Schema { field, .. }) if field == "count"));
    let mut t = Txn::new();
    t.unset("items/1", "title").unwrap();
    assert!(matches!(r.commit(t), Err(Error::Schema { field, .. }) if field == "title"));
    // A set edit that would create an item without its required title.
    let mut t = Txn::new();
    t.set_add("items/new", "tags", ["x"]).unwrap();
    assert!(matches!(r.commit(t), Err(Error::Schema { field, .. }) if field == "title"));
    assert_eq!(r.get("items/new").unwrap(), None);
}

#[test]
fn persists_and_reopens_with_history() {
    let mut r = open(1);
    put(&mut r, "items/1", item(1));
    let mut t = Txn::new();
    t.update("items/1", map! {"count" => 2i64}.as_map())
        .unwrap();
    r.commit_with(t, Durability::Flush).unwrap();
    r.seal().unwrap();
    let hash = r.state_hash().unwrap();
    let (log, snap) = r.close().unwrap();
    let mut r = Repo::open(log, snap, signed(1)).unwrap();
    assert_eq!(r.state_hash().unwrap(), hash);
    let h = r.history("items/1").unwrap();
    assert_eq!(h.len(), 2);
    assert!(matches!(h[0].op, ibexdb::Op::Put(_)));
    assert!(matches!(h[1].op, ibexdb::Op::Patch(_)));
    assert_eq!(h[0].author, ident(1).public());
    assert!(h[0].time_ms > T0 && h[0].hlc < h[1].hlc);
    let rep = r.verify().unwrap();
    assert_eq!((rep.commits, rep.seals, rep.unsealed), (2, 1, 0));
    assert_eq!(r.history("items/none").unwrap(), vec![]);
}

#[test]
fn unsealed_commits_after_a_crash_are_sealed_on_reopen() {
    let mut r = open(1);
    put(&mut r, "items/1", item(1));
    r.flush().unwrap(); // durable, but the crash comes before the seal
    let (log, _) = r.close().unwrap();
    let mut r = Repo::open(log, None, signed(1)).unwrap();
    assert_eq!(r.unsealed(), 1);
    assert_eq!(r.verify().unwrap().unsealed, 1);
    assert_eq!(r.seal().unwrap().len(), 1);
    assert_eq!(r.unsealed(), 0);
}

/// Build a writer with two signed commits and return what it exports.
fn exported() -> (Repo<MemStorage>, ibexdb::Export) {
    let mut a = open(1);
    put(&mut a, "items/1", item(1));
    put(&mut a, "items/2", item(2));
    a.seal().unwrap();
    let e = a.export().unwrap();
    (a, e)
}

fn sig_kind(e: Error) -> SignatureErrorKind {
    match e {
        Error::Signature { kind, .. } => kind,
        other => panic!("expected a signature error, got {other:?}"),
    }
}

#[test]
fn signed_commits_sync_and_every_rejection_has_its_own_error() {
    let (mut a, (commits, seals)) = exported();
    // B is a new replica of A's repository (a replica with a history of its own would hold
    // another root: a different repository, see tests/access.rs).
    let mut b = open(2);
    let before = b.state_hash().unwrap();

    // Missing seal.
    assert_eq!(
        sig_kind(b.receive(&commits, &[]).unwrap_err()),
        SignatureErrorKind::Missing
    );
    // Tampered bytes: same claimed id, one byte of a title changed.
    let mut t = commits.clone();
    let pos = t[0].1.windows(4).position(|w| w == b"Item").unwrap();
    t[0].1[pos] = b'J';
    assert_eq!(
        sig_kind(b.receive(&t, &seals).unwrap_err()),
        SignatureErrorKind::Tampered
    );
    // Wrong key: sealed by someone other than the author.
    let ids: Vec<_> = commits.iter().map(|c| c.0).collect();
    let other = Seal::create(&ident(3), REPO, &ids).encode();
    assert_eq!(
        sig_kind(b.receive(&commits, &[other]).unwrap_err()),
        SignatureErrorKind::WrongKey
    );
    // Bad signature: a flipped bit in the signature.
    let mut bad = seals.clone();
    let n = bad[0].len();
    bad[0][n - 10] ^= 1;
    assert_eq!(
        sig_kind(b.receive(&commits, &bad).unwrap_err()),
        SignatureErrorKind::BadSignature
    );
    // Malformed signature: scalars out of range.
    let mut bad = seals.clone();
    let n = bad[0].len();
    bad[0][n - 96..].fill(0xff);
    assert_eq!(
        sig_kind(b.receive(&commits, &bad).unwrap_err()),
        SignatureErrorKind::Malformed
    );
    // Malformed seal bytes.
    assert!(matches!(
        b.receive(&commits, &[vec![1, 2, 3]]),
        Err(Error::Decode { .. })
    ));
    // Nothing was lost or applied by any rejected batch.
    assert_eq!(b.state_hash().unwrap(), before);
    assert_eq!(b.get("items/1").unwrap(), None);

    // The genuine batch is accepted; duplicates are harmless.
    let rep = b.receive(&commits, &seals).unwrap();
    assert_eq!(rep.applied, 2);
    let rep = b.receive(&commits, &seals).unwrap();
    assert_eq!(rep.duplicates, 2);
    assert_eq!(b.get("items/2").unwrap(), a.get("items/2").unwrap());
    b.seal().unwrap();
    let v = b.verify().unwrap();
    assert_eq!(v.commits, 2);
}

#[test]
fn unsigned_commits_are_refused_unless_configured() {
    let mut t = Repo::open(MemStorage::new(), None, trusted(5)).unwrap();
    put(&mut t, "items/1", item(1));
    let (commits, seals) = t.export().unwrap();
    assert!(seals.is_empty());
    let (c, _) = Commit::decode(&commits[0].1).unwrap();
    assert!(c.trusted);
    let mut b = open(2);
    assert_eq!(
        sig_kind(b.receive(&commits, &seals).unwrap_err()),
        SignatureErrorKind::Unsigned
    );
    let mut o = signed(2);
    o.accept_trusted = true;
    let mut b = Repo::open(MemStorage::new(), None, o).unwrap();
    assert_eq!(b.receive(&commits, &seals).unwrap().applied, 1);
    assert_eq!(b.verify().unwrap().trusted_commits, 1);
}

#[test]
fn commits_from_the_future_are_refused() {
    let mut o = signed(1);
    o.clock = clock(T0 + 10 * 3_600_000);
    let mut a = Repo::open(MemStorage::new(), None, o).unwrap();
    put(&mut a, "items/1", item(1));
    a.seal().unwrap();
    let (c, s) = a.export().unwrap();
    let mut b = open(2);
    assert!(matches!(b.receive(&c, &s), Err(Error::ClockSkew { .. })));
}

#[test]
fn out_of_order_delivery_waits_for_parents() {
    let mut a = open(1);
    for i in 0..5 {
        put(&mut a, &format!("items/{i}"), item(i));
    }
    a.seal().unwrap();
    let (mut c, s) = a.export().unwrap();
    c.reverse();
    let mut b = open(2);
    let rep = b.receive(&c[..2], &s).unwrap();
    assert_eq!((rep.applied, rep.pending), (0, 2));
    let rep = b.receive(&c[2..], &[]).unwrap();
    assert_eq!((rep.applied, rep.pending), (5, 0));
    assert_eq!(b.state_hash().unwrap(), a.state_hash().unwrap());
    b.flush().unwrap();
    let (log, _) = b.close().unwrap();
    let mut b = Repo::open(log, None, signed(2)).unwrap();
    assert_eq!(b.state_hash().unwrap(), a.state_hash().unwrap());
    b.verify().unwrap();
}

#[test]
fn keys_round_trip_through_export() {
    let id = ident(9);
    let back = ibexdb::Identity::from_secret_bytes(&id.secret_bytes()).unwrap();
    assert_eq!(back.public(), id.public());
    let pk = ibexdb::PublicKey::from_bytes(&id.public().0).unwrap();
    assert_eq!(pk, id.public());
    let sig = back.sign(b"m");
    id.public().verify(b"m", &sig).unwrap();
    assert!(ibexdb::PublicKey::from_bytes(&[2u8; 10]).is_err());
}

/// A signed commit and its seal from peer `n`, built directly (a peer's local API would refuse
/// these values), with the given changes.
fn crafted(n: u8, changes: Vec<ibexdb::Change>) -> ibexdb::Export {
    let c = Commit {
        trusted: false,
        author: ident(n).public(),
        hlc: T0 << 16,
        parents: vec![],
        changes,
    };
    let bytes = c.encode();
    let id = ibexdb::CommitId::of(&bytes);
    let seal = Seal::create(&ident(n), REPO, &[id]).encode();
    (vec![(id, bytes)], vec![seal])
}

#[test]
fn received_commits_obey_the_rules_of_local_writes() {
    use ibexdb::{Change, FieldOp, Op};
    let change = |op| Change {
        collection: "items".into(),
        id: "1".into(),
        op,
    };
    let mut b = open(2);
    let before = b.state_hash().unwrap();
    let log_before = b.log_len();

    // A nested field name the local API refuses (empty), inside a put.
    let mut inner = ibexdb::Map::new();
    inner.insert("".into(), Value::Null);
    let mut m = ibexdb::Map::new();
    m.insert("meta".into(), Value::Map(inner.clone()));
    let (c, s) = crafted(1, vec![change(Op::Put(m))]);
    match b.receive(&c, &s).unwrap_err() {
        Error::InvalidValue { path, .. } => assert!(path.starts_with("items/1.meta"), "{path}"),
        other => panic!("expected InvalidValue, got {other:?}"),
    }
    // The same inside a patch.
    let mut ops = std::collections::BTreeMap::new();
    ops.insert("meta".to_string(), FieldOp::Assign(Value::Map(inner)));
    let (c, s) = crafted(1, vec![change(Op::Patch(ops))]);
    assert!(matches!(b.receive(&c, &s), Err(Error::InvalidValue { .. })));

    // An item over MAX_ITEM_BYTES, though the commit is within the frame limit.
    let big = "x".repeat(ibexdb::MAX_ITEM_BYTES + 1);
    let mut m = ibexdb::Map::new();
    m.insert("body".into(), Value::from(big));
    let (c, s) = crafted(1, vec![change(Op::Put(m))]);
    assert!(matches!(b.receive(&c, &s), Err(Error::TooLarge { .. })));

    // Nothing was stored or applied.
    assert_eq!(b.state_hash().unwrap(), before);
    assert_eq!(b.log_len(), log_before);
    assert_eq!(b.get("items/1").unwrap(), None);

    // A well-formed crafted commit is accepted: the checks are not over-broad.
    let (c, s) = crafted(1, vec![change(Op::Put(item(1)))]);
    assert_eq!(b.receive(&c, &s).unwrap().applied, 1);
}

#[test]
fn pending_commits_and_unknown_sealed_ids_are_bounded() {
    let mut a = open(1);
    for i in 0..5 {
        put(&mut a, &format!("items/{i}"), item(i));
    }
    a.seal().unwrap();
    let (c, s) = a.export().unwrap();
    let limited = |pending, sealed| {
        let mut o = signed(2);
        o.max_pending = pending;
        o.max_unknown_sealed = sealed;
        Repo::open(MemStorage::new(), None, o).unwrap()
    };
    let what = |e: Error| match e {
        Error::Limit { what, .. } => what,
        other => panic!("expected a limit error, got {other:?}"),
    };
    // Children without their first parent: 4 would wait, 3 may.
    let mut b = limited(3, 100);
    assert_eq!(what(b.receive(&c[1..], &s).unwrap_err()), "pending commits");
    assert_eq!(
        (b.commit_count(), b.pending(), b.log_len()),
        (0, 0, b.log_len())
    );
    assert_eq!(b.receive(&c[2..], &s).unwrap().pending, 3);
    assert_eq!(b.receive(&c[..2], &[]).unwrap().applied, 5);
    // A seal over 5 ids none of which arrives: refused over a cap of 4, nothing stored.
    let mut b = limited(100, 4);
    let before = b.log_len();
    assert_eq!(
        what(b.receive(&[], &s).unwrap_err()),
        "sealed unknown commits"
    );
    assert_eq!(b.log_len(), before);
    // With the commits in the same batch the seal covers nothing unknown.
    assert_eq!(b.receive(&c, &s).unwrap().applied, 5);
    assert_eq!(b.state_hash().unwrap(), a.state_hash().unwrap());
}

#[test]
fn a_seal_signed_outside_the_core_is_an_ordinary_seal() {
    let mut a = open(1);
    put(&mut a, "items/1", item(1));
    put(&mut a, "items/2", item(2));
    let req = a.seal_request().unwrap();
    assert_eq!(req.count, 2);
    // A commit made while the host signs stays unsealed.
    put(&mut a, "items/3", item(3));
    // The host signs the message with the same key (any valid signature will do).
    let sig = ident(1).sign(&req.message);
    let seal = a.seal_with(req.count, sig).unwrap();
    assert_eq!(seal.ids.len(), 2);
    assert_eq!(seal.encode(), {
        let mut same = Seal::create(&ident(1), REPO, &seal.ids);
        same.signature = sig;
        same.encode()
    });
    seal.verify().unwrap();
    assert_eq!(a.unsealed(), 1);
    a.seal().unwrap();
    assert!(a.seal_request().is_none());
    a.flush().unwrap();
    assert_eq!(a.verify().unwrap().commits, 3);
    // Another replica receives it like any seal.
    let (commits, seals) = a.export().unwrap();
    let mut b = open(2);
    assert_eq!(b.receive(&commits, &seals).unwrap().applied, 3);
    // Counts outside 1..=unsealed are refused; nothing to seal without an identity.
    put(&mut a, "items/4", item(4));
    assert!(a.seal_with(0, sig).is_err());
    assert!(a.seal_with(2, sig).is_err());
    let mut t = Repo::open(MemStorage::new(), None, trusted(1)).unwrap();
    put(&mut t, "items/1", item(1));
    assert!(t.seal_request().is_none());
}

#[test]
fn a_bad_signature_vouched_for_by_the_host_is_caught_by_verify_and_receivers() {
    let mut a = open(1);
    put(&mut a, "items/1", item(1));
    let req = a.seal_request().unwrap();
    let wrong = ident(1).sign(b"not the seal message");
    a.seal_with(req.count, wrong).unwrap();
    a.flush().unwrap();
    assert!(a.verify().is_err());
    let (commits, seals) = a.export().unwrap();
    let mut b = open(2);
    assert_eq!(
        sig_kind(b.receive(&commits, &seals).unwrap_err()),
        SignatureErrorKind::BadSignature
    );
}

#[test]
fn receive_vouched_skips_only_the_seal_signatures() {
    let (mut a, (commits, seals)) = exported();
    let mut b = open(2);
    // Every other check still runs: a missing seal, tampered bytes, a seal by another key.
    assert_eq!(
        sig_kind(b.receive_vouched(&commits, &[]).unwrap_err()),
        SignatureErrorKind::Missing
    );
    let mut t = commits.clone();
    let pos = t[0].1.windows(4).position(|w| w == b"Item").unwrap();
    t[0].1[pos] = b'J';
    assert_eq!(
        sig_kind(b.receive_vouched(&t, &seals).unwrap_err()),
        SignatureErrorKind::Tampered
    );
    let ids: Vec<_> = commits.iter().map(|c| c.0).collect();
    let other = Seal::create(&ident(3), REPO, &ids).encode();
    assert_eq!(
        sig_kind(b.receive_vouched(&commits, &[other]).unwrap_err()),
        SignatureErrorKind::WrongKey
    );
    // The genuine batch: as receive() does.
    assert_eq!(b.receive_vouched(&commits, &seals).unwrap().applied, 2);
    assert_eq!(b.state_hash().unwrap(), a.state_hash().unwrap());
    assert_eq!(b.verify().unwrap().commits, 2);
    // A host that vouched for a bad signature: verify() re-proves it and fails.
    let mut bad = seals.clone();
    let n = bad[0].len();
    bad[0][n - 10] ^= 1;
    let mut c = open(3);
    c.receive_vouched(&commits, &bad).unwrap();
    assert!(c.verify().is_err());
}

#[test]
fn a_stored_identity_whose_public_key_is_not_its_secrets_refuses_to_write() {
    let (a, b) = (ident(1), ident(2));
    let wrong = Identity::from_parts(&a.secret_bytes(), &b.public().0).unwrap();
    let opts = RepoOptions::new(REPO, Some(wrong), clock(T0));
    let mut r = Repo::open(MemStorage::new(), None, opts).unwrap();
    let mut t = Txn::new();
    t.put("notes/1", item(1)).unwrap();
    assert!(matches!(r.commit(t), Err(Error::Signature { .. })));
    assert_eq!(r.commit_count(), 0);
    // The right one, from its parts, writes.
    let right = Identity::from_parts(&a.secret_bytes(), &a.public().0).unwrap();
    let opts = RepoOptions::new(REPO, Some(right), clock(T0));
    let mut r = Repo::open(MemStorage::new(), None, opts).unwrap();
    let mut t = Txn::new();
    t.put("notes/1", item(1)).unwrap();
    assert!(r.commit(t).unwrap().is_some());
}
