//! Attachments in commits (docs/design.md §6.7, the attach field op of §4.1): encoding and its
//! refusals, the merge per `(key, name)`, the seal covering the descriptor, and the hashes a
//! host keeps (a file referenced by any visible item is never reclaimed).

mod common;
use common::*;
use ibexdb::{
    attachment_field, map, Attachment, Commit, Error, FieldOp, MemStorage, Op, Repo, Sha256Stream,
    SignatureErrorKind, Txn,
};

fn open(n: u8) -> Repo<MemStorage> {
    Repo::open(MemStorage::new(), Some(MemStorage::new()), signed(n)).unwrap()
}

fn att(bytes: &[u8], t: &str) -> Attachment {
    let mut h = Sha256Stream::new();
    h.update(bytes);
    Attachment {
        size: h.len(),
        hash: h.finish(),
        media_type: t.into(),
    }
}

fn put(r: &mut Repo<MemStorage>, key: &str) {
    let mut t = Txn::new();
    t.put(key, map! {"title" => "x"}.as_map()).unwrap();
    r.commit(t).unwrap();
}

fn attach(r: &mut Repo<MemStorage>, key: &str, name: &str, a: &Attachment) {
    let mut t = Txn::new();
    t.attach(key, name, a).unwrap();
    r.commit(t).unwrap();
}

fn detach(r: &mut Repo<MemStorage>, key: &str, name: &str) {
    let mut t = Txn::new();
    t.detach(key, name).unwrap();
    r.commit(t).unwrap();
}

/// Everything `from` holds that `to` lacks (whole exports; duplicates are skipped).
fn sync(from: &mut Repo<MemStorage>, to: &mut Repo<MemStorage>) {
    from.seal().unwrap();
    let (c, s) = from.export().unwrap();
    to.receive(&c, &s).unwrap();
}

fn names(r: &mut Repo<MemStorage>, key: &str) -> Vec<(String, Attachment)> {
    r.attachments(key).unwrap()
}

#[test]
fn an_attachment_is_listed_hidden_from_fields_and_survives_reopen() {
    let mut r = open(1);
    put(&mut r, "tasks/1");
    let a = att(b"hello", "text/plain");
    attach(&mut r, "tasks/1", "note.txt", &a);
    assert_eq!(
        names(&mut r, "tasks/1"),
        vec![("note.txt".into(), a.clone())]
    );
    // Not a field: the JSON of the item does not show it.
    let json = serde_json::to_value(r.get("tasks/1").unwrap().unwrap()).unwrap();
    assert_eq!(json, serde_json::json!({"title": "x"}));
    // Log and snapshot keep it.
    r.write_snapshot().unwrap();
    r.flush().unwrap();
    let (log, snap) = r.close().unwrap();
    let mut r = Repo::open(log, snap, signed(1)).unwrap();
    assert_eq!(names(&mut r, "tasks/1"), vec![("note.txt".into(), a)]);
    r.verify().unwrap();
}

#[test]
fn the_attach_op_round_trips_and_the_decoder_refuses_other_forms() {
    let mut r = open(1);
    put(&mut r, "tasks/1");
    let a = att(&[7; 1000], "image/png");
    attach(&mut r, "tasks/1", "a.png", &a);
    r.seal().unwrap();
    let (commits, _) = r.export().unwrap();
    let (id, bytes) = commits.last().unwrap();
    let (c, cid) = Commit::decode(bytes).unwrap();
    assert_eq!(cid, *id);
    assert_eq!(c.encode(), *bytes, "canonical");
    let Op::Patch(p) = &c.changes[0].op else {
        panic!("a patch")
    };
    assert!(matches!(p[&attachment_field("a.png")], FieldOp::Assign(_)));
    // The op code 4 sits after the field index; an assign (1) there is refused, and so is
    // an attach (4) on a user field.
    let pos = bytes
        .windows(33)
        .position(|w| w[1..] == a.hash)
        .expect("the hash is in the commit");
    assert_eq!(bytes[pos], 4);
    let mut b = bytes.clone();
    b[pos] = 1;
    assert!(matches!(Commit::decode(&b), Err(Error::Decode { .. })));
    // A put may not carry an attachment field.
    let mut c2 = c.clone();
    c2.changes[0].op = Op::Put(map! {attachment_field("a.png").as_str() => 1i64}.as_map());
    assert!(matches!(
        Commit::decode(&c2.encode()),
        Err(Error::Decode { .. })
    ));
}

#[test]
fn a_tampered_hash_is_a_signature_error_on_receive() {
    let mut a = open(1);
    put(&mut a, "tasks/1");
    let d = att(b"the real bytes", "");
    attach(&mut a, "tasks/1", "f", &d);
    a.seal().unwrap();
    let (mut commits, seals) = a.export().unwrap();
    let last = commits.len() - 1;
    let pos = commits[last]
        .1
        .windows(32)
        .position(|w| w == d.hash)
        .unwrap();
    commits[last].1[pos] ^= 1;
    let mut b = open(2);
    match b.receive(&commits, &seals).unwrap_err() {
        Error::Signature { kind, .. } => assert_eq!(kind, SignatureErrorKind::Tampered),
        e => panic!("{e:?}"),
    }
    // Untampered, it is accepted and B lists the same attachment.
    let (commits, seals) = a.export().unwrap();
    b.receive(&commits, &seals).unwrap();
    assert_eq!(names(&mut b, "tasks/1"), vec![("f".into(), d)]);
}

#[test]
fn attachments_merge_per_key_and_name_like_fields() {
    let mut a = open(1);
    put(&mut a, "tasks/1");
    // Two devices of one owner (a second author would need a grant first).
    let mut b = open(1);
    sync(&mut a, &mut b);
    let (x, y, z) = (att(b"x", "a/x"), att(b"y", "a/y"), att(b"z", "a/z"));
    // Concurrent attaches of one name: the later stamp wins on both; other names keep theirs.
    attach(&mut a, "tasks/1", "photo", &x);
    attach(&mut a, "tasks/1", "only-a", &z);
    attach(&mut b, "tasks/1", "photo", &y);
    sync(&mut a, &mut b);
    sync(&mut b, &mut a);
    assert_eq!(a.state_hash().unwrap(), b.state_hash().unwrap());
    let got = names(&mut a, "tasks/1");
    assert_eq!(got, names(&mut b, "tasks/1"));
    assert_eq!(got.len(), 2);
    assert_eq!(
        got[1].1, y,
        "b's attach is later (its clock passed a's on receive)"
    );
    // A detach concurrent with a re-attach: last writer wins.
    detach(&mut a, "tasks/1", "photo");
    attach(&mut b, "tasks/1", "photo", &x);
    sync(&mut a, &mut b);
    sync(&mut b, &mut a);
    assert_eq!(names(&mut a, "tasks/1"), names(&mut b, "tasks/1"));
    // A put resets the item, attachments included; a delete drops them.
    put(&mut a, "tasks/1");
    assert!(names(&mut a, "tasks/1").is_empty());
    attach(&mut a, "tasks/1", "photo", &x);
    let mut t = Txn::new();
    t.delete("tasks/1").unwrap();
    a.commit(t).unwrap();
    assert!(names(&mut a, "tasks/1").is_empty());
    assert!(a.attachment_hashes().unwrap().is_empty());
}

#[test]
fn attach_needs_the_item_and_a_valid_name() {
    let mut r = open(1);
    let a = att(b"", "");
    let mut t = Txn::new();
    t.attach("tasks/none", "f", &a).unwrap();
    assert!(matches!(r.commit(t), Err(Error::NotFound { .. })));
    let mut t = Txn::new();
    assert!(matches!(
        t.attach("tasks/1", "", &a),
        Err(Error::InvalidValue { .. })
    ));
    assert!(matches!(
        t.attach("tasks/1", "a\nb", &a),
        Err(Error::InvalidValue { .. })
    ));
    let mut t = Txn::new();
    t.put("tasks/1", map! {"t" => 1i64}.as_map()).unwrap();
    assert!(matches!(
        t.attach("tasks/1", "f", &a),
        Err(Error::InvalidValue { .. })
    ));
    // A user field cannot reach the attachment namespace.
    let mut t = Txn::new();
    assert!(t
        .update(
            "tasks/1",
            map! {attachment_field("f").as_str() => 1i64}.as_map()
        )
        .is_err());
}

#[test]
fn a_file_any_visible_item_refers_to_is_kept() {
    let mut r = open(1);
    put(&mut r, "tasks/1");
    put(&mut r, "tasks/2");
    let shared = att(b"same bytes", "image/jpeg");
    let own = att(b"other bytes", "image/jpeg");
    attach(&mut r, "tasks/1", "p", &shared);
    attach(&mut r, "tasks/2", "p", &shared);
    attach(&mut r, "tasks/2", "q", &own);
    let all = r.attachment_hashes().unwrap();
    assert_eq!(all.len(), 2);
    // One of two items referring to the same bytes detaches: the bytes stay.
    detach(&mut r, "tasks/1", "p");
    let kept = r.attachment_hashes().unwrap();
    assert!(kept.contains(&shared.hash) && kept.contains(&own.hash));
    // Replaced under its name: the old bytes go, history does not keep them.
    attach(&mut r, "tasks/2", "q", &shared);
    let kept = r.attachment_hashes().unwrap();
    assert_eq!(kept.into_iter().collect::<Vec<_>>(), vec![shared.hash]);
    detach(&mut r, "tasks/2", "p");
    detach(&mut r, "tasks/2", "q");
    assert!(r.attachment_hashes().unwrap().is_empty());
    r.verify().unwrap();
}

#[test]
fn a_sync_servers_access_only_replica_accepts_attachments_under_a_stored_schema() {
    let mut a = open(1);
    a.store_schemas(
        1,
        &[(
            "tasks".into(),
            serde_json::json!({"fields": {"title": {"type": "string", "required": true}}}),
        )],
    )
    .unwrap();
    put(&mut a, "tasks/1");
    let d = att(b"scan", "application/pdf");
    attach(&mut a, "tasks/1", "scan.pdf", &d);
    detach(&mut a, "tasks/1", "scan.pdf");
    attach(&mut a, "tasks/1", "scan.pdf", &d);
    a.seal().unwrap();
    let (commits, seals) = a.export().unwrap();
    let mut opts = signed(2);
    opts.access_only = true;
    let mut server = Repo::open(MemStorage::new(), Some(MemStorage::new()), opts).unwrap();
    let rep = server.receive(&commits, &seals).unwrap();
    assert_eq!(rep.applied, commits.len());
    assert_eq!(rep.refused, 0);
    // And a full replica from the server's log agrees with the writer.
    let (c2, s2) = server.export().unwrap();
    let mut b = open(1);
    b.receive(&c2, &s2).unwrap();
    assert_eq!(b.state_hash().unwrap(), a.state_hash().unwrap());
    assert_eq!(names(&mut b, "tasks/1"), vec![("scan.pdf".into(), d)]);
}
