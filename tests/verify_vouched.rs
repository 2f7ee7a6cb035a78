//! `verify()` with the seals' signatures verified by the caller (docs/design.md §9):
//! `Repo::seal_checks_all` lists every seal of the log, and `Repo::verify_vouched` runs every
//! other check of `verify()` (tampered commits, wrong snapshots, the permission rule) with the
//! same error, skipping only the listed signatures.

mod common;
use common::*;
use ibexdb::{map, SignatureErrorKind, Txn, Value, VerifyReport};
use ibexdb::{Change, Commit, CommitId, Error, MemStorage, Op, Repo, Role, Seal, SealCheck};

fn open(n: u8) -> Repo<MemStorage> {
    Repo::open(MemStorage::new(), Some(MemStorage::new()), signed(n)).unwrap()
}

fn put(r: &mut Repo<MemStorage>, key: &str, v: ibexdb::Map) {
    let mut t = Txn::new();
    t.put(key, v).unwrap();
    r.commit(t).unwrap();
}

/// Commits of identity 1 under three seals, then one commit of identity 2 (a writer) received
/// with its seal (not flushed: the list includes buffered frames).
fn sealed_history() -> Repo<MemStorage> {
    let mut a = open(1);
    a.grant(&ident(2).public(), Role::Writer).unwrap();
    for i in 0..6 {
        put(&mut a, &format!("items/{i}"), item(i));
        if i % 2 == 1 {
            a.seal().unwrap();
        }
    }
    a.flush().unwrap();
    let mut b = open(2);
    let (commits, seals) = a.export().unwrap();
    b.receive(&commits, &seals).unwrap();
    put(&mut b, "items/100", item(100));
    b.seal().unwrap();
    let (commits, seals) = b.export().unwrap();
    a.receive(&commits, &seals).unwrap();
    a
}

fn sig_kind(e: Error) -> SignatureErrorKind {
    match e {
        Error::Signature { kind, .. } => kind,
        other => panic!("expected a SignatureError, got {other:?}"),
    }
}

/// Both verifications fail, with the same error; returns it.
fn same_failure(r: &mut Repo<MemStorage>) -> Error {
    let listed = r.seal_checks_all().unwrap();
    let full = r.verify().unwrap_err();
    let vouched = r.verify_vouched(listed.log_len).unwrap_err();
    assert_eq!(format!("{full:?}"), format!("{vouched:?}"));
    full
}

/// Recompute the CRC of the log frame at `off` after its payload was changed.
fn fix_frame_crc(log: &mut [u8], off: usize) {
    let len = u32::from_le_bytes(log[off..off + 4].try_into().unwrap()) as usize;
    let mut crc = crc32fast::Hasher::new();
    crc.update(&log[off..off + 4]);
    crc.update(&log[off + 8..off + 9 + len]);
    log[off + 4..off + 8].copy_from_slice(&crc.finalize().to_le_bytes());
}

/// Append one frame (length, CRC, kind, payload) to a log's bytes.
fn append_frame(log: &mut Vec<u8>, kind: u8, payload: &[u8]) {
    let start = log.len();
    log.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    log.extend_from_slice(&[0; 4]);
    log.push(kind);
    log.extend_from_slice(payload);
    fix_frame_crc(log, start);
}

/// Replace the first `from` in `bytes[range]` by `to` (same length).
fn replace_in(bytes: &mut [u8], range: std::ops::Range<usize>, from: &[u8], to: &[u8]) {
    let at = bytes[range.clone()]
        .windows(from.len())
        .position(|w| w == from)
        .expect("text to tamper with");
    bytes[range.start + at..range.start + at + to.len()].copy_from_slice(to);
}

#[test]
fn the_seal_checks_cover_every_seal_of_the_log() {
    let mut a = sealed_history();
    let listed = a.seal_checks_all().unwrap();
    assert_eq!(listed.log_len, a.log_len());
    let report = a.verify().unwrap();
    assert_eq!(report.seals, 4);
    assert_eq!(listed.checks.len(), report.seals);
    let (_, seals) = a.export().unwrap();
    assert_eq!(seals.len(), 4);
    for bytes in &seals {
        let check = SealCheck::of(&Seal::decode(bytes).unwrap());
        assert!(listed.checks.contains(&check), "seal missing from the list");
    }
    for c in &listed.checks {
        c.verify().unwrap();
    }
    let authors: Vec<_> = listed.checks.iter().map(|c| c.author).collect();
    assert!(authors.contains(&ident(1).public()) && authors.contains(&ident(2).public()));
    // Trusted mode: no seals, nothing to list.
    let mut t = Repo::open(MemStorage::new(), None, trusted(1)).unwrap();
    put(&mut t, "items/1", item(1));
    assert!(t.seal_checks_all().unwrap().checks.is_empty());
}

#[test]
fn verify_vouched_proves_what_verify_proves_but_the_signatures() {
    let mut a = sealed_history();
    let listed = a.seal_checks_all().unwrap();
    let vouched = a.verify_vouched(listed.log_len).unwrap();
    let full = a.verify().unwrap();
    assert_eq!((full.signatures_verified, full.signatures_vouched), (4, 0));
    assert_eq!(
        (vouched.signatures_verified, vouched.signatures_vouched),
        (0, 4)
    );
    let same = VerifyReport {
        signatures_verified: 4,
        signatures_vouched: 0,
        ..vouched
    };
    assert_eq!(same, full);
}

#[test]
fn verify_vouched_skips_only_the_listed_signatures() {
    let bad_seal = |r: &mut Repo<MemStorage>| {
        let req = r.seal_request().unwrap();
        let wrong = ident(1).sign(b"not the seal message");
        r.seal_with(req.count, wrong).unwrap();
        r.flush().unwrap();
    };
    // A listed seal whose signature does not verify: the caller's check fails, so it calls
    // verify(), which reports it; verify_vouched() does not look at that signature.
    let mut a = open(1);
    put(&mut a, "items/1", item(1));
    bad_seal(&mut a);
    let listed = a.seal_checks_all().unwrap();
    assert!(listed.checks[0].verify().is_err());
    assert_eq!(
        sig_kind(a.verify().unwrap_err()),
        SignatureErrorKind::BadSignature
    );
    assert_eq!(a.verify_vouched(listed.log_len).unwrap().seals, 1);
    // A seal stored after the listing was vouched for by nobody: the core verifies it.
    let mut b = open(1);
    put(&mut b, "items/1", item(1));
    b.seal().unwrap();
    let listed = b.seal_checks_all().unwrap();
    put(&mut b, "items/2", item(2));
    bad_seal(&mut b);
    assert_eq!(
        sig_kind(b.verify_vouched(listed.log_len).unwrap_err()),
        SignatureErrorKind::BadSignature
    );
}

#[test]
fn verify_vouched_catches_a_tampered_commit() {
    let a = sealed_history();
    let theirs = a
        .core()
        .commits
        .iter()
        .find(|c| a.core().authors[c.author as usize] == ident(2).public())
        .unwrap();
    let off = theirs.offset as usize;
    let (mut log, _) = a.close().unwrap();
    let bytes = log.bytes_mut();
    let end = off + 9 + u32::from_le_bytes(bytes[off..off + 4].try_into().unwrap()) as usize;
    replace_in(bytes, off..end, b"Item 100", b"Jtem 100");
    fix_frame_crc(bytes, off);
    // The log is trusted on open: the changed bytes are a commit no seal covers.
    let mut r = Repo::open(log, None, signed(1)).unwrap();
    assert_eq!(
        r.get("items/100").unwrap().unwrap()["title"],
        Value::from("Jtem 100")
    );
    assert_eq!(sig_kind(same_failure(&mut r)), SignatureErrorKind::Missing);
}

#[test]
fn verify_vouched_catches_a_wrong_snapshot() {
    let mut a = sealed_history();
    // The log ends with a seal frame: the forged history's last frame (its commits after item
    // 2's wait for a parent that no longer exists).
    put(&mut a, "items/7", item(7));
    a.seal().unwrap();
    a.flush().unwrap();
    let first = a.state().item("items", "2").unwrap().history[0];
    let off = a.core().commits[first as usize].offset as usize;
    let (log, _) = a.close().unwrap();
    // A well-formed snapshot of another history: the same log with item 2's title changed in
    // its commit (same length, so every frame stays where it was and the anchor matches).
    let mut forged = log.clone();
    let bytes = forged.bytes_mut();
    let end = off + 9 + u32::from_le_bytes(bytes[off..off + 4].try_into().unwrap()) as usize;
    replace_in(bytes, off..end, b"Item 2", b"Jtem 2");
    fix_frame_crc(bytes, off);
    let mut f = Repo::open(forged, Some(MemStorage::new()), signed(1)).unwrap();
    assert!(f.write_snapshot().unwrap());
    let (_, snap) = f.close().unwrap();
    let mut r = Repo::open(log, snap, signed(1)).unwrap();
    assert!(r.open_report().from_snapshot);
    assert_eq!(
        r.get("items/2").unwrap().unwrap()["title"],
        Value::from("Jtem 2")
    );
    match same_failure(&mut r) {
        Error::VerifyFailed { reason } => assert!(reason.contains("snapshot"), "{reason}"),
        other => panic!("expected VerifyFailed, got {other:?}"),
    }
}

/// `a`'s log with one more commit on its heads, by `author`, sealed by it, written straight
/// into the log (bypassing every check).
fn with_logged_commit(a: Repo<MemStorage>, author: u8, change: Change) -> (MemStorage, CommitId) {
    let c = Commit {
        trusted: false,
        author: ident(author).public(),
        hlc: (T0 + 1_000) << 16,
        parents: a.heads(),
        changes: vec![change],
    };
    let bytes = c.encode();
    let id = CommitId::of(&bytes);
    let seal = Seal::create(&ident(author), REPO, &[id]);
    let (mut log, _) = a.close().unwrap();
    append_frame(log.bytes_mut(), ibexdb::testing::FRAME_SEAL, &seal.encode());
    append_frame(log.bytes_mut(), ibexdb::testing::FRAME_COMMIT, &bytes);
    (log, id)
}

#[test]
fn verify_vouched_applies_the_permission_rule() {
    let founded = || {
        let mut a = open(1);
        put(&mut a, "items/1", item(1));
        a.grant(&ident(2).public(), Role::Reader).unwrap();
        a.seal().unwrap();
        a.flush().unwrap();
        a
    };
    // A commit by a key that is not a member does not count (docs/design.md §6.4): open keeps
    // it without effect, and both verifications agree it is in its place.
    let write = Change {
        collection: "items".into(),
        id: "9".into(),
        op: Op::Put(item(9)),
    };
    let (log, id) = with_logged_commit(founded(), 3, write);
    let mut r = Repo::open(log, None, signed(1)).unwrap();
    assert!(r.get("items/9").unwrap().is_none());
    assert_eq!(r.counts(&id), Some(false));
    let listed = r.seal_checks_all().unwrap();
    r.verify().unwrap();
    r.verify_vouched(listed.log_len).unwrap();
    // A malformed access-list change is refused on receive whatever its author's rights; in
    // the log, both verifications report it.
    let malformed = Change {
        collection: "_acl".into(),
        id: "public".into(),
        op: Op::Put(map! { "read" => 1i64 }.as_map()),
    };
    let (log, _) = with_logged_commit(founded(), 1, malformed);
    let mut r = Repo::open(log, None, signed(1)).unwrap();
    match same_failure(&mut r) {
        Error::VerifyFailed { reason } => assert!(reason.contains("permission"), "{reason}"),
        other => panic!("expected VerifyFailed, got {other:?}"),
    }
}
