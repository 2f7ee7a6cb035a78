//! Hostile members of an end-to-end encrypted repository (docs/design.md §6.8): what a writer
//! can do to the `_keys` items and the sealed chunks of its own commits. Each test writes the
//! hostile commit by hand (signed by a member, so it counts) and checks what the honest devices
//! do with it, from memory and after a reopen from their snapshot.

mod common;
use common::*;
use ibexdb::{
    map, Change, Commit, CommitId, Identity, MemStorage, Op, Repo, Role, Seal, Txn,
    KEYS_COLLECTION, SEALED_COLLECTION,
};
use ibexdb::{DecryptErrorKind, Error};

const REPO: &str = "test";

fn enc(n: u8) -> ibexdb::RepoOptions {
    let mut o = signed(n);
    o.clock = clock(T0 + u64::from(n) * 7);
    o.encrypted = true;
    o
}

fn open(n: u8) -> Repo<MemStorage> {
    Repo::open(MemStorage::new(), Some(MemStorage::new()), enc(n)).unwrap()
}

fn sync(from: &mut Repo<MemStorage>, to: &mut Repo<MemStorage>) {
    from.seal().unwrap();
    let (commits, seals) = from.export().unwrap();
    to.receive(&commits, &seals)
        .unwrap_or_else(|e| panic!("refused: {e:?}"));
}

/// A commit by `who` (a member) with these changes, as its device could send it bypassing the
/// library: encoded and sealed by hand.
fn hostile(
    who: &Identity,
    parents: Vec<CommitId>,
    hlc_ms: u64,
    changes: Vec<Change>,
) -> ibexdb::Export {
    let commit = Commit {
        trusted: false,
        author: who.public(),
        hlc: hlc_ms << 16,
        parents,
        changes,
    };
    let bytes = commit.encode();
    let id = CommitId::of(&bytes);
    let seal = Seal::create(who, REPO, &[id]).encode();
    (vec![(id, bytes)], vec![seal])
}

fn put(r: &mut Repo<MemStorage>, key: &str, title: &str) -> CommitId {
    let mut t = Txn::new();
    t.put(key, map! {"title" => title}.as_map()).unwrap();
    r.commit(t).unwrap().unwrap()
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// Reopen `r` from its snapshot (the path a browser tab takes at every load).
fn reopen_from_snapshot(r: Repo<MemStorage>, n: u8) -> Repo<MemStorage> {
    let mut r = r;
    r.seal().unwrap();
    assert!(r.write_snapshot().unwrap());
    let (log, snap) = r.close().unwrap();
    let mut o = enc(n);
    o.clock = clock(T0 + 100_000);
    let again = Repo::open(log, snap, o).unwrap();
    assert!(again.open_report().from_snapshot);
    again
}

/// A writer deletes `_keys/config` (a later `_keys/config` put is ignored by the keyring, but
/// the item still changes in the state). The owner's device, reopened from its snapshot, must
/// still seal its writes: the flag is fixed at creation.
#[test]
fn a_writer_deleting_the_encrypted_flag_does_not_make_devices_write_plaintext() {
    let mut owner = open(1);
    let w = ident(2);
    owner.grant(&w.public(), Role::Writer).unwrap();
    put(&mut owner, "tasks/a", "secret-alpha-plaintext");
    owner.seal().unwrap();
    for op in [Op::Delete, Op::Put(map! {"encrypted" => false}.as_map())] {
        let (c, s) = hostile(
            &w,
            owner.heads(),
            T0 + 50,
            vec![Change {
                collection: KEYS_COLLECTION.into(),
                id: "config".into(),
                op,
            }],
        );
        owner.receive(&c, &s).unwrap();
    }
    assert!(owner.is_encrypted());
    let mut owner = reopen_from_snapshot(owner, 1);
    assert!(
        owner.is_encrypted(),
        "after a reopen from its snapshot the owner's device no longer seals"
    );
    put(&mut owner, "tasks/b", "secret-bravo-plaintext");
    owner.seal().unwrap();
    let (commits, _) = owner.export().unwrap();
    for (_, bytes) in &commits {
        assert!(
            !contains(bytes, "secret-bravo"),
            "a write after the reopen travels in plaintext"
        );
    }
}

/// A writer overwrites (or deletes) the `_keys` item that wraps epoch 0 to the owner. The
/// owner's device, reopened from its snapshot, must still hold its key (it learned it from
/// the root) and so read and write.
#[test]
fn a_writer_overwriting_a_members_wrapped_key_does_not_lock_it_out_after_a_reopen() {
    let mut owner = open(1);
    let w = ident(2);
    owner.grant(&w.public(), Role::Writer).unwrap();
    put(&mut owner, "tasks/a", "secret-alpha-plaintext");
    owner.seal().unwrap();
    let victim = format!("00000000-{}", ident(1).public().to_hex());
    let (c, s) = hostile(
        &w,
        owner.heads(),
        T0 + 50,
        vec![Change {
            collection: KEYS_COLLECTION.into(),
            id: victim,
            op: Op::Delete,
        }],
    );
    owner.receive(&c, &s).unwrap();
    assert_eq!(owner.epoch(), Some(0));
    let mut owner = reopen_from_snapshot(owner, 1);
    assert_eq!(
        owner.epoch(),
        Some(0),
        "the owner lost its epoch key after a reopen from its snapshot"
    );
    assert!(owner.get("tasks/a").unwrap().is_some());
    let mut t = Txn::new();
    t.put("tasks/b", map! {"title" => "x"}.as_map()).unwrap();
    owner.commit(t).expect("the owner can no longer write");
}

/// A writer of a plaintext repository puts `_keys/config = {encrypted: true}`: the flag is
/// fixed at creation, so the owner's device, reopened from its snapshot, neither believes the
/// repository encrypted nor refuses its writes for want of a key.
#[test]
fn a_writer_cannot_turn_a_plaintext_repository_encrypted() {
    let mut o = signed(1);
    o.clock = clock(T0 + 7);
    let mut owner = Repo::open(MemStorage::new(), Some(MemStorage::new()), o).unwrap();
    let w = ident(2);
    owner.grant(&w.public(), Role::Writer).unwrap();
    put(&mut owner, "tasks/a", "alpha");
    owner.seal().unwrap();
    let (c, s) = hostile(
        &w,
        owner.heads(),
        T0 + 50,
        vec![Change {
            collection: KEYS_COLLECTION.into(),
            id: "config".into(),
            op: Op::Put(map! {"encrypted" => true}.as_map()),
        }],
    );
    owner.receive(&c, &s).unwrap();
    assert!(!owner.is_encrypted());
    owner.seal().unwrap();
    assert!(owner.write_snapshot().unwrap());
    let (log, snap) = owner.close().unwrap();
    let mut o = signed(1);
    o.clock = clock(T0 + 100_000);
    let mut owner = Repo::open(log, snap, o).unwrap();
    assert!(owner.open_report().from_snapshot);
    assert!(
        !owner.is_encrypted(),
        "a writer turned the repository encrypted"
    );
    put(&mut owner, "tasks/b", "bravo");
}

/// A member sends a commit whose sealed chunk is truncated, oversized with garbage, of an
/// unknown version, or not bytes: each is stored (it is validly signed) and reported as a
/// `DecryptError`, its data unapplied, never a panic; the owner's state is unchanged by it.
#[test]
fn malformed_sealed_chunks_are_decrypt_errors() {
    let mut owner = open(1);
    let w = ident(2);
    owner.grant(&w.public(), Role::Writer).unwrap();
    put(&mut owner, "tasks/a", "secret-alpha-plaintext");
    owner.seal().unwrap();
    let before = owner.state_hash().unwrap();
    let bodies: Vec<ibexdb::Value> = vec![
        ibexdb::Value::Bytes(vec![].into()),
        ibexdb::Value::Bytes(vec![1].into()),
        ibexdb::Value::Bytes(vec![1, 0, 0, 0, 0].into()),
        ibexdb::Value::Bytes(vec![9; 200].into()),
        ibexdb::Value::Bytes([&[1u8, 0, 0, 0, 0][..], &[7u8; 40_000][..]].concat().into()),
        ibexdb::Value::Bytes([&[1u8, 0, 0, 0, 5][..], &[7u8; 100][..]].concat().into()),
        ibexdb::Value::from("not bytes"),
    ];
    for (n, body) in bodies.into_iter().enumerate() {
        let mut m = ibexdb::Map::new();
        m.insert("c".into(), body);
        let (c, s) = hostile(
            &w,
            owner.heads(),
            T0 + 50 + n as u64,
            vec![Change {
                collection: SEALED_COLLECTION.into(),
                id: "0000".into(),
                op: Op::Put(m),
            }],
        );
        owner.receive(&c, &s).unwrap();
    }
    let kinds: Vec<_> = owner
        .decrypt_failures()
        .iter()
        .map(|(_, e)| match e {
            Error::Decrypt { kind, .. } => *kind,
            other => panic!("not a DecryptError: {other:?}"),
        })
        .collect();
    assert_eq!(kinds.len(), 7, "{kinds:?}");
    assert!(kinds.contains(&DecryptErrorKind::Malformed));
    assert!(kinds.contains(&DecryptErrorKind::MissingKey));
    assert!(kinds.contains(&DecryptErrorKind::Aead));
    assert!(owner.keys(SEALED_COLLECTION).unwrap().is_empty());
    // Only the hostile commits' (empty) effect: no item changed.
    assert_eq!(owner.keys("tasks").unwrap().len(), 1);
    let _ = before;
    owner.verify().unwrap();
    let mut owner = reopen_from_snapshot(owner, 1);
    assert_eq!(owner.keys("tasks").unwrap().len(), 1);
    put(&mut owner, "tasks/b", "secret-bravo-plaintext");
}

/// A member's commit carries both a sealed chunk and a plaintext change of an application
/// collection with the same key: refused at receive (`DecryptError` `plaintext`, nothing
/// stored), so neither the sealed nor the plaintext data is applied.
#[test]
fn a_commit_mixing_sealed_and_plaintext_data_of_one_key_is_refused() {
    let mut owner = open(1);
    let mut wr = open(2);
    owner.grant(&ident(2).public(), Role::Writer).unwrap();
    sync(&mut owner, &mut wr);
    assert_eq!(wr.epoch(), Some(0));
    // The writer's device seals a put of tasks/x; we add a plaintext put of the same key.
    put(&mut wr, "tasks/x", "secret-sealed");
    wr.seal().unwrap();
    let (commits, _) = wr.export().unwrap();
    let (_, bytes) = commits.last().unwrap().clone();
    let (mut commit, _) = Commit::decode(&bytes).unwrap();
    assert!(commit
        .changes
        .iter()
        .any(|c| c.collection == SEALED_COLLECTION));
    commit.changes.push(Change {
        collection: "tasks".into(),
        id: "x".into(),
        op: Op::Put(map! {"title" => "plain"}.as_map()),
    });
    commit
        .changes
        .sort_by(|a, b| (&a.collection, &a.id).cmp(&(&b.collection, &b.id)));
    let w = ident(2);
    let bytes = commit.encode();
    let id = CommitId::of(&bytes);
    let seal = Seal::create(&w, REPO, &[id]).encode();
    // Everything before it, then it.
    owner.seal().unwrap();
    let (before, seals) = wr.export().unwrap();
    let before: Vec<_> = before[..before.len() - 1].to_vec();
    owner.receive(&before, &seals).unwrap();
    let err = owner.receive(&[(id, bytes)], &[seal]).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Decrypt {
                kind: DecryptErrorKind::Plaintext,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        owner.get("tasks/x").unwrap().is_none(),
        "mixed data applied"
    );
    assert!(!owner.heads().contains(&id), "the mixed commit was stored");
    owner.verify().unwrap();
}

/// A writer names epoch 2^32 - 1 (and epoch 1) in `_keys` ids wrapped to itself: the owner's
/// next revocation still starts the epoch after the newest one it holds (no overflow, no
/// panic), and the revoked member cannot read what follows.
#[test]
fn a_writer_naming_huge_epochs_does_not_break_the_next_revocation() {
    let mut owner = open(1);
    let w = ident(2);
    let mut rc = open(3);
    owner.grant(&w.public(), Role::Writer).unwrap();
    owner.grant(&ident(3).public(), Role::Reader).unwrap();
    owner.seal().unwrap();
    let junk = |e: u32| Change {
        collection: KEYS_COLLECTION.into(),
        id: format!("{e:08x}-{}", w.public().to_hex()),
        op: Op::Put(map! {"from" => w.public().to_hex(), "c" => vec![0u8; 60]}.as_map()),
    };
    let (c, s) = hostile(&w, owner.heads(), T0 + 50, vec![junk(1), junk(u32::MAX)]);
    owner.receive(&c, &s).unwrap();
    sync(&mut owner, &mut rc);
    assert_eq!(rc.epoch(), Some(0));
    owner
        .revoke(&ident(3).public())
        .expect("the revocation failed");
    assert_eq!(owner.epoch(), Some(1));
    put(&mut owner, "tasks/after", "secret-after");
    sync(&mut owner, &mut rc);
    // Its only key was given to a member since revoked (itself): no key to write with.
    assert_eq!(rc.epoch(), None);
    assert!(rc.get("tasks/after").unwrap().is_none());
    let mut owner = reopen_from_snapshot(owner, 1);
    assert_eq!(owner.epoch(), Some(1));
    put(&mut owner, "tasks/later", "secret-later");
}

/// An attachment in an encrypted repository: its descriptor (name, SHA-256, size, type) is a
/// data change and travels sealed, as §6.8 says; a member lists it; an attach on a deleted item
/// is `NotFound` and stores nothing; a name with path characters is only a name.
#[test]
fn attachment_descriptors_travel_sealed() {
    let mut owner = open(1);
    let mut rb = open(2);
    owner.grant(&ident(2).public(), Role::Reader).unwrap();
    put(&mut owner, "tasks/a", "secret-alpha");
    let mut h = ibexdb::Sha256Stream::new();
    h.update(b"the attached bytes");
    let a = ibexdb::Attachment {
        size: h.len(),
        hash: h.finish(),
        media_type: "application/x-secret-type".into(),
    };
    for name in ["../x", "/", "secret-name.txt"] {
        let mut t = Txn::new();
        t.attach("tasks/a", name, &a).unwrap();
        owner.commit(t).unwrap();
    }
    let mut t = Txn::new();
    assert!(matches!(
        t.attach("tasks/a", "a\0b", &a),
        Err(Error::InvalidValue { .. })
    ));
    // On a deleted item: NotFound, nothing stored.
    put(&mut owner, "tasks/gone", "x");
    let mut t = Txn::new();
    t.delete("tasks/gone").unwrap();
    owner.commit(t).unwrap();
    let n = owner.commit_count();
    let mut t = Txn::new();
    t.attach("tasks/gone", "f", &a).unwrap();
    assert!(matches!(owner.commit(t), Err(Error::NotFound { .. })));
    assert_eq!(owner.commit_count(), n);
    owner.seal().unwrap();
    let (commits, seals) = owner.export().unwrap();
    for (_, bytes) in &commits {
        assert!(
            !contains(bytes, "secret-name"),
            "the name travels in plaintext"
        );
        assert!(
            !contains(bytes, "x-secret-type"),
            "the type travels in plaintext"
        );
        assert!(
            !bytes.windows(32).any(|w| w == a.hash),
            "the hash travels in plaintext"
        );
    }
    rb.receive(&commits, &seals).unwrap();
    let listed: Vec<String> = rb
        .attachments("tasks/a")
        .unwrap()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(listed, ["../x", "/", "secret-name.txt"]);
    assert_eq!(rb.attachments("tasks/a").unwrap()[0].1, a);
}

/// A revoked writer takes a commit its device sealed before the revocation and re-parents it
/// onto the revocation (the sealed data's additional data binds author, hlc and epoch, not
/// the parents, so the ciphertext still opens): it is stored, does not count (its causal
/// past revokes its author), and its data is not applied.
#[test]
fn a_revoked_writer_reparenting_an_old_sealed_commit_does_not_count() {
    let mut owner = open(1);
    let mut wr = open(2);
    let w = ident(2);
    owner.grant(&w.public(), Role::Writer).unwrap();
    sync(&mut owner, &mut wr);
    put(&mut wr, "tasks/w", "secret-by-w");
    wr.seal().unwrap();
    let (wc, _) = wr.export().unwrap();
    let (_, bytes) = wc.last().unwrap().clone();
    let (mut commit, _) = Commit::decode(&bytes).unwrap();
    owner.revoke(&w.public()).unwrap();
    owner.seal().unwrap();
    commit.parents = owner.heads();
    let bytes = commit.encode();
    let id = CommitId::of(&bytes);
    let seal = Seal::create(&w, REPO, &[id]).encode();
    let report = owner.receive(&[(id, bytes)], &[seal]).unwrap();
    assert_eq!(report.refused, 1, "{report:?}");
    assert!(owner.get("tasks/w").unwrap().is_none());
    owner.verify().unwrap();
    let mut owner = reopen_from_snapshot(owner, 1);
    assert!(owner.get("tasks/w").unwrap().is_none());
}

/// A member's commit in an encrypted repository that carries data changes in plaintext (no
/// `_e` chunk, or beside one): put, patch, delete alike. Every replica refuses it at receive
/// (`DecryptError` `plaintext`, nothing stored), as the sync server does (its own test in
/// `server/tests/encrypted.rs`), so no device shows data that reached the server readable.
/// Reserved collections (`_acl`, `_keys`) stay plaintext, as the rule of §6.4 needs.
#[test]
fn plaintext_data_in_an_encrypted_repository_is_refused() {
    let mut owner = open(1);
    let w = ident(2);
    owner.grant(&w.public(), Role::Writer).unwrap();
    put(&mut owner, "tasks/a", "secret-a");
    owner.seal().unwrap();
    let (sealed_chunk, _) = {
        let (c, _) = owner.export().unwrap();
        let (_, bytes) = c.last().unwrap().clone();
        let (commit, _) = Commit::decode(&bytes).unwrap();
        (
            commit
                .changes
                .into_iter()
                .find(|c| c.collection == SEALED_COLLECTION)
                .unwrap(),
            (),
        )
    };
    let ops = [
        Op::Put(map! {"title" => "plaintext"}.as_map()),
        Op::Delete,
        Op::Patch(
            [(
                "title".into(),
                ibexdb::FieldOp::Assign(ibexdb::Value::from("plaintext")),
            )]
            .into_iter()
            .collect(),
        ),
    ];
    let before = owner.heads();
    for (i, op) in ops.into_iter().enumerate() {
        for beside in [false, true] {
            let mut changes = vec![Change {
                collection: "tasks".into(),
                id: "a".into(),
                op: op.clone(),
            }];
            if beside {
                changes.push(sealed_chunk.clone());
            }
            let (c, s) = hostile(&w, before.clone(), T0 + 50 + i as u64, changes);
            let err = owner.receive(&c, &s).unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::Decrypt {
                        kind: DecryptErrorKind::Plaintext,
                        ..
                    }
                ),
                "{err:?}"
            );
            assert_eq!(owner.heads(), before, "the refused commit was stored");
        }
    }
    assert_eq!(
        owner.get("tasks/a").unwrap().unwrap().get("title"),
        Some(&ibexdb::Value::from("secret-a"))
    );
    // A commit that waited for its parents is judged once they arrive: a newcomer receives the
    // plaintext commit before the history it builds on, then the history.
    let (c, s) = hostile(
        &w,
        before.clone(),
        T0 + 60,
        vec![Change {
            collection: "tasks".into(),
            id: "leak".into(),
            op: Op::Put(map! {"title" => "plaintext"}.as_map()),
        }],
    );
    let mut fresh = open(3);
    let report = fresh.receive(&c, &s).unwrap();
    assert_eq!(report.pending, 1);
    let (hc, hs) = owner.export().unwrap();
    let report = fresh.receive(&hc, &hs).unwrap();
    assert_eq!((report.refused, report.pending), (1, 0), "{report:?}");
    assert!(fresh.get("tasks/leak").unwrap().is_none());
    // And a device that is not given keys cannot write plaintext either: a local write of an
    // encrypted repository is sealed or refused.
    let mut o = enc(4);
    o.encrypted = false;
    let mut other = Repo::open(MemStorage::new(), None, o).unwrap();
    other.receive(&hc, &hs).unwrap();
    let mut t = Txn::new();
    t.put("tasks/z", map! {"title" => "x"}.as_map()).unwrap();
    assert!(matches!(other.commit(t), Err(Error::Decrypt { .. })));
}

/// Two owners revoke concurrently (each before receiving the other's revocation): both start
/// "epoch latest + 1" with a key of their own, each wrapped to the member the other revoked.
/// Keys are looked up by (epoch, key id), so neither is lost; and an owner's device that
/// learns the other revocation holds no key free of a revoked member, so it starts a new
/// epoch wrapped to the remaining members: after the merge both owners write in it, every
/// member reads both, and neither revoked member reads what follows.
#[test]
fn concurrent_revocations_by_two_owners_keep_every_member_reading() {
    let mut a = open(1);
    let mut b = open(2);
    a.grant(&ident(2).public(), Role::Owner).unwrap();
    a.grant(&ident(3).public(), Role::Reader).unwrap();
    a.grant(&ident(4).public(), Role::Reader).unwrap();
    a.grant(&ident(5).public(), Role::Reader).unwrap();
    sync(&mut a, &mut b);
    assert_eq!(b.epoch(), Some(0));
    a.revoke(&ident(4).public()).unwrap();
    b.revoke(&ident(5).public()).unwrap();
    assert_eq!((a.epoch(), b.epoch()), (Some(1), Some(1)));
    put(&mut a, "tasks/a1", "secret-a1");
    put(&mut b, "tasks/b1", "secret-b1");
    sync(&mut a, &mut b);
    sync(&mut b, &mut a);
    let e = a.epoch().expect("a has a key to write with");
    assert_eq!(b.epoch(), Some(e));
    assert!(e >= 2, "the merged revocations start a new epoch: {e}");
    put(&mut a, "tasks/by-a", "secret-a");
    put(&mut b, "tasks/by-b", "secret-b");
    sync(&mut a, &mut b);
    sync(&mut b, &mut a);
    assert!(
        a.decrypt_failures().is_empty(),
        "{:?}",
        a.decrypt_failures()
    );
    assert!(
        b.decrypt_failures().is_empty(),
        "{:?}",
        b.decrypt_failures()
    );
    for k in ["tasks/a1", "tasks/b1", "tasks/by-a", "tasks/by-b"] {
        assert!(a.get(k).unwrap().is_some(), "a cannot read {k}");
        assert!(b.get(k).unwrap().is_some(), "b cannot read {k}");
    }
    assert_eq!(a.state_hash().unwrap(), b.state_hash().unwrap());
    // The remaining member reads everything; the revoked ones nothing written after the merge.
    for (n, reads) in [(3u8, true), (4, false), (5, false)] {
        let mut r = open(n);
        sync(&mut a, &mut r);
        sync(&mut b, &mut r);
        for k in ["tasks/by-a", "tasks/by-b"] {
            assert_eq!(r.get(k).unwrap().is_some(), reads, "member {n} and {k}");
        }
        if reads {
            assert!(
                r.decrypt_failures().is_empty(),
                "{:?}",
                r.decrypt_failures()
            );
            assert_eq!(r.state_hash().unwrap(), a.state_hash().unwrap());
        }
    }
    // After a reopen from the snapshot, each owner chooses the same key again.
    let a = reopen_from_snapshot(a, 1);
    let b = reopen_from_snapshot(b, 2);
    assert_eq!((a.epoch(), b.epoch()), (Some(e), Some(e)));
}

/// A writer floods `_keys` with 2,000 wraps "to" the owner claiming the owner as their sender
/// (garbage ciphertext). A wrap counts only in its sender's own commit, so the owner's device
/// refuses each before any key agreement (an `unwrap` failure), when it receives them and when
/// it reopens from its snapshot: cheap, where a P-384 key agreement each took seconds.
#[test]
fn a_flood_of_forged_wraps_costs_no_key_agreement() {
    let mut owner = open(1);
    let w = ident(2);
    owner.grant(&w.public(), Role::Writer).unwrap();
    owner.seal().unwrap();
    let me = ident(1).public().to_hex();
    let changes: Vec<Change> = (1..=2000u32)
        .map(|e| Change {
            collection: KEYS_COLLECTION.into(),
            id: format!("{e:08x}-{me}"),
            op: Op::Put(map! {"from" => me.clone(), "c" => vec![0u8; 76]}.as_map()),
        })
        .collect();
    let (c, s) = hostile(&w, owner.heads(), T0 + 50, changes);
    // Counted, not timed: each key agreement is a P-384 scalar multiplication (the receive and
    // the reopen run on this thread).
    let before = ibexdb::testing::key_agreements();
    owner.receive(&c, &s).unwrap();
    let mut owner = reopen_from_snapshot(owner, 1);
    let agreements = ibexdb::testing::key_agreements() - before;
    assert_eq!(owner.epoch(), Some(0));
    put(&mut owner, "tasks/a", "secret-alpha");
    assert!(
        agreements <= 4,
        "2,000 forged wraps cost {agreements} key agreements"
    );
}

/// An epoch key wrapped by an owner who is later demoted: a member learned it when the wrap
/// arrived (the sender was an owner then) and must keep it after a reopen from its snapshot,
/// where the keyring is rebuilt against the access list as it is now.
#[test]
fn a_key_wrapped_by_an_owner_later_demoted_survives_a_reopen() {
    let mut a = open(1);
    let mut b = open(2);
    let mut c = open(3);
    a.grant(&ident(2).public(), Role::Owner).unwrap();
    a.grant(&ident(3).public(), Role::Reader).unwrap();
    a.grant(&ident(4).public(), Role::Reader).unwrap();
    sync(&mut a, &mut b);
    b.revoke(&ident(4).public()).unwrap();
    sync(&mut b, &mut a);
    sync(&mut b, &mut c);
    assert_eq!((a.epoch(), c.epoch()), (Some(1), Some(1)));
    a.grant(&ident(2).public(), Role::Writer).unwrap();
    put(&mut a, "tasks/x", "secret-x");
    sync(&mut a, &mut c);
    assert!(c.get("tasks/x").unwrap().is_some());
    let mut c = reopen_from_snapshot(c, 3);
    assert_eq!(
        c.epoch(),
        Some(1),
        "the key of epoch 1 was lost at the reopen"
    );
    sync(&mut a, &mut c);
    put(&mut a, "tasks/y", "secret-y");
    sync(&mut a, &mut c);
    assert!(c.get("tasks/y").unwrap().is_some());
}
