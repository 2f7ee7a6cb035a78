//! Invites (docs/design.md §6.4 "Invites"): an owner's invite gives its role to whoever proves
//! possession of the one-time secret, `uses` times, until it expires or is revoked; every
//! replica decides the same, whatever the order of delivery. The seeded simulation has devices
//! redeem one invite concurrently offline (and rogues forge redemptions that bypass their own
//! replica's checks) and checks that exactly `min(uses, devices)` redemptions count, the least
//! commit ids; a failure prints its seed (rerun one with IBEX_SEED=n).

mod common;
use common::*;
use ibexdb::{
    invite_id, invite_identity, map, prove, redeem_value, Change, Commit, CommitId, Error,
    Identity, MemStorage, Op, PermissionErrorKind, Repo, Role, Seal, Signature, Txn,
    ACL_COLLECTION,
};
use std::collections::BTreeSet;

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

fn everything(r: &mut Repo<MemStorage>) -> Vec<Sent> {
    r.seal().unwrap();
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

/// Deliver one at a time in a random order; returns how many do not count.
fn deliver(rng: &mut Rng, to: &mut Repo<MemStorage>, sent: &[Sent]) -> usize {
    let mut order: Vec<&Sent> = sent.iter().collect();
    rng.shuffle(&mut order);
    let mut refused = 0;
    for s in order {
        let r = to.receive(&[(s.id, s.bytes.clone())], &s.seals);
        refused += r
            .unwrap_or_else(|e| panic!("unexpected refusal: {e:?}"))
            .refused;
    }
    refused
}

fn secret(n: u8) -> [u8; 32] {
    [n; 32]
}

fn kind(e: &Error) -> Option<PermissionErrorKind> {
    match e {
        Error::Permission { kind, .. } => Some(*kind),
        _ => None,
    }
}

fn write(r: &mut Repo<MemStorage>, k: &str) -> Result<Option<CommitId>, Error> {
    let mut t = Txn::new();
    t.put(&format!("t/{k}"), map! { "v" => 1i64 }.as_map())?;
    r.commit(t)
}

/// A redemption made without the author's replica checking it: on `parents`, stamped at `ms`.
fn forge_redeem(
    author: &Identity,
    parents: Vec<CommitId>,
    ms: u64,
    role: Role,
    secret: &[u8; 32],
    proof: Option<Signature>,
) -> Sent {
    let id = invite_id(&invite_identity(secret).public());
    let proof = proof.unwrap_or_else(|| prove(secret, &author.public(), role));
    let c = Commit {
        trusted: false,
        author: author.public(),
        hlc: ms << 16,
        parents,
        changes: vec![Change {
            collection: ACL_COLLECTION.into(),
            id: author.public().to_hex(),
            op: Op::Put(redeem_value(role, &id, &proof)),
        }],
    };
    let bytes = c.encode();
    let id = CommitId::of(&bytes);
    let seals = vec![Seal::create(author, REPO, &[id]).encode()];
    Sent { id, bytes, seals }
}

#[test]
fn an_invite_gives_its_role_once_and_refuses_reuse_expiry_revocation_and_forgery() {
    let mut rng = Rng(7);
    let mut owner = open_replica(1);
    write(&mut owner, "a").unwrap();
    let far = T0 + 3_600_000;
    let (id, _) = owner.invite(&secret(1), Role::Writer, far, 1).unwrap();
    // The access list holds the invite key, never the secret.
    let item = owner
        .get(&format!("_acl/invite-{}", ibexdb::hex(&id)))
        .unwrap();
    let text = format!("{item:?}");
    assert!(!text.contains(&ibexdb::hex(&secret(1))), "{text}");
    assert!(text.contains(&invite_identity(&secret(1)).public().to_hex()));
    // A non-owner cannot invite.
    let mut b = open_replica(2);
    deliver(&mut rng, &mut b, &everything(&mut owner));
    let e = b.invite(&secret(9), Role::Reader, far, 1).unwrap_err();
    assert_eq!(kind(&e), Some(PermissionErrorKind::CannotAdminister));
    // B redeems and writes, without the owner online.
    assert_eq!(
        kind(&write(&mut b, "no").unwrap_err()),
        Some(PermissionErrorKind::CannotWrite)
    );
    b.redeem(&secret(1)).unwrap().unwrap();
    assert_eq!(b.access().role(&b.author()), Some(Role::Writer));
    write(&mut b, "b").unwrap();
    // C, after B's redemption: the invite is used up.
    let mut c = open_replica(3);
    deliver(&mut rng, &mut c, &everything(&mut b));
    let e = c.redeem(&secret(1)).unwrap_err();
    assert_eq!(kind(&e), Some(PermissionErrorKind::InviteUsed), "{e}");
    // A wrong secret names no invite here.
    let e = c.redeem(&secret(2)).unwrap_err();
    assert_eq!(kind(&e), Some(PermissionErrorKind::InviteInvalid), "{e}");
    // Expired: an invite whose last millisecond has passed.
    owner.invite(&secret(3), Role::Reader, T0, 1).unwrap();
    // Revoked before use.
    let (rid, _) = owner.invite(&secret(4), Role::Reader, far, 5).unwrap();
    owner.revoke_invite(&rid).unwrap();
    deliver(&mut rng, &mut c, &everything(&mut owner));
    let e = c.redeem(&secret(3)).unwrap_err();
    assert_eq!(kind(&e), Some(PermissionErrorKind::InviteExpired), "{e}");
    let e = c.redeem(&secret(4)).unwrap_err();
    assert_eq!(kind(&e), Some(PermissionErrorKind::InviteRevoked), "{e}");
    assert_eq!(c.access().role(&c.author()), None);
    // Forged redemptions (bypassing C's own checks) are stored and do not count anywhere:
    // reuse, expired, revoked, a proof by another key, a role the invite does not give.
    let heads = c.heads();
    let wrong = Identity::from_entropy(&[77; 48]).sign(b"not the proof");
    let forged = [
        forge_redeem(
            &ident(3),
            heads.clone(),
            T0 + 100,
            Role::Writer,
            &secret(1),
            None,
        ),
        forge_redeem(
            &ident(3),
            heads.clone(),
            T0 + 100,
            Role::Reader,
            &secret(3),
            None,
        ),
        forge_redeem(
            &ident(3),
            heads.clone(),
            T0 + 100,
            Role::Reader,
            &secret(4),
            None,
        ),
        forge_redeem(
            &ident(3),
            heads.clone(),
            T0 + 100,
            Role::Writer,
            &secret(1),
            Some(wrong),
        ),
        forge_redeem(
            &ident(5),
            heads.clone(),
            T0 + 100,
            Role::Owner,
            &secret(1),
            None,
        ),
    ];
    deliver(&mut rng, &mut owner, &everything(&mut b));
    let before = owner.access().clone();
    for f in &forged {
        let r = owner.receive(&[(f.id, f.bytes.clone())], &f.seals).unwrap();
        assert_eq!((r.applied, r.refused), (0, 1));
        assert_eq!(owner.counts(&f.id), Some(false));
    }
    assert_eq!(*owner.access(), before);
    assert_eq!(owner.access().role(&ident(3).public()), None);
    assert_eq!(owner.access().role(&ident(2).public()), Some(Role::Writer));
    assert!(owner.get("t/b").unwrap().is_some());
    // The owner takes a redeemed role away like any other.
    owner.revoke(&ident(2).public()).unwrap();
    assert_eq!(owner.access().role(&ident(2).public()), None);
    // A replica's snapshot keeps the invites, the revocations and the redemptions.
    let mut o = signed(1);
    o.clock = clock(T0);
    let mut s = Repo::open(MemStorage::new(), Some(MemStorage::new()), o).unwrap();
    deliver(&mut rng, &mut s, &everything(&mut owner));
    let acl = s.access().clone();
    assert!(s.write_snapshot().unwrap());
    let (log, snap) = s.close().unwrap();
    let s = Repo::open(log, snap, signed(1)).unwrap();
    assert!(s.open_report().from_snapshot);
    assert_eq!(*s.access(), acl);
}

/// Devices redeem one invite concurrently offline; returns (uses, devices, counted).
fn race(seed: u64) -> (u32, usize, usize) {
    let mut rng = Rng(seed);
    let mut owner = open_replica(1);
    write(&mut owner, "a").unwrap();
    let uses = 1 + rng.below(3) as u32;
    let expires = T0 + 1_000;
    let (id, _) = owner
        .invite(&secret(1), Role::Writer, expires, uses)
        .unwrap();
    let base = everything(&mut owner);
    let n = 1 + rng.below(5) as usize;
    let mut devices: Vec<Repo<MemStorage>> = (0..n).map(|k| open_replica(10 + k as u8)).collect();
    let mut all = base.clone();
    let mut redemptions = Vec::new();
    for d in devices.iter_mut() {
        deliver(&mut rng, d, &base);
        // Some devices learn of earlier redemptions first (gossip), the others do not.
        if rng.chance(30) {
            deliver(&mut rng, d, &all);
        }
        match d.redeem(&secret(1)) {
            Ok(Some(c)) => {
                redemptions.push(c);
                write(d, "w").unwrap();
            }
            Ok(None) => unreachable!(),
            Err(e) => assert_eq!(kind(&e), Some(PermissionErrorKind::InviteUsed), "{e}"),
        }
        all.extend(everything(d));
    }
    // Rogues forge redemptions past the expiry, or reuse one with their checks bypassed.
    let mut forged = Vec::new();
    for k in 0..rng.below(3) {
        let late = rng.chance(50);
        let ms = if late { expires + 1 + k } else { T0 + 500 };
        let on = if late {
            owner.heads()
        } else {
            devices[0].heads()
        };
        let f = forge_redeem(&ident(40 + k as u8), on, ms, Role::Writer, &secret(1), None);
        forged.push(f.id);
        all.push(f);
    }
    // The owner revokes the invite, concurrently with all of it, in some runs.
    if rng.chance(30) {
        owner.revoke_invite(&id).unwrap();
        all.extend(everything(&mut owner));
    }
    let mut observers: Vec<Repo<MemStorage>> = (0..3).map(|k| open_replica(60 + k)).collect();
    for r in devices
        .iter_mut()
        .chain(observers.iter_mut())
        .chain([&mut owner])
    {
        deliver(&mut rng, r, &all);
    }
    let acl = observers[0].access().clone();
    let hash = observers[0].state_hash().unwrap();
    let mut every: Vec<&mut Repo<MemStorage>> =
        devices.iter_mut().chain(observers.iter_mut()).collect();
    every.push(&mut owner);
    for (k, r) in every.iter_mut().enumerate() {
        assert_eq!(*r.access(), acl, "replica {k}: access list (seed {seed})");
        assert_eq!(
            r.state_hash().unwrap(),
            hash,
            "replica {k}: state (seed {seed})"
        );
    }
    // Every replica counts the same redemptions: among those that were valid in their own
    // causal past, the `uses` least commit ids; nothing forged past the expiry.
    let counted: BTreeSet<CommitId> = acl
        .invite(&id)
        .unwrap()
        .effective()
        .map(|(c, _)| *c)
        .collect();
    let mut valid: Vec<CommitId> = redemptions.clone();
    valid.extend(forged.iter().filter(|f| owner.counts(f) == Some(true)));
    valid.sort();
    let expect: BTreeSet<CommitId> = valid.iter().take(uses as usize).copied().collect();
    assert_eq!(counted, expect, "seed {seed}");
    let members = acl.members().filter(|(_, r)| *r == Role::Writer).count();
    assert_eq!(members, counted.len(), "seed {seed}");
    assert!(counted.len() <= uses as usize, "seed {seed}");
    (uses, n, counted.len())
}

#[test]
fn concurrent_redemptions_count_at_most_uses_times_the_least_commit_ids_first() {
    let raced = std::cell::Cell::new(0);
    for_seeds(
        "concurrent_redemptions_count_at_most_uses_times_the_least_commit_ids_first",
        0..30,
        |seed| {
            let (uses, n, counted) = race(seed);
            eprintln!("seed {seed}: uses {uses}, {n} devices, {counted} counted");
            if n > uses as usize && counted == uses as usize {
                raced.set(raced.get() + 1);
            }
        },
    );
    if std::env::var("IBEX_SEED").is_err() {
        assert!(raced.get() > 0, "no run had more devices than uses");
    }
}

#[test]
fn invites_survive_a_snapshot_and_reopen() {
    let mut rng = Rng(11);
    let mut o = signed(1);
    o.clock = clock(T0 + 7);
    let mut owner = Repo::open(MemStorage::new(), Some(MemStorage::new()), o).unwrap();
    write(&mut owner, "a").unwrap();
    let far = T0 + 3_600_000;
    owner.invite(&secret(1), Role::Writer, far, 2).unwrap();
    let (unused, _) = owner.invite(&secret(2), Role::Reader, far, 1).unwrap();
    let mut b = open_replica(2);
    deliver(&mut rng, &mut b, &everything(&mut owner));
    b.redeem(&secret(1)).unwrap().unwrap();
    write(&mut b, "b").unwrap();
    deliver(&mut rng, &mut owner, &everything(&mut b));
    owner.revoke_invite(&unused).unwrap();
    owner.seal().unwrap();
    assert!(owner.write_snapshot().unwrap());
    let before = owner.access().clone();
    assert_eq!(before.role(&b.author()), Some(Role::Writer));
    let (log, snap) = owner.close().unwrap();
    let mut o = signed(1);
    o.clock = clock(T0 + 100_000);
    let mut again = Repo::open(log, snap, o).unwrap();
    let report = again.open_report();
    assert!(report.from_snapshot && report.replayed_frames == 0);
    assert_eq!(
        again.access(),
        &before,
        "the invites and redemptions come back"
    );
    assert_eq!(again.access().role(&b.author()), Some(Role::Writer));
    again.verify().unwrap();
    // A second use of the first invite still counts after the reopen; the revoked one does not.
    let mut c = open_replica(3);
    deliver(&mut rng, &mut c, &everything(&mut again));
    c.redeem(&secret(1)).unwrap().unwrap();
    let e = c.redeem(&secret(2)).unwrap_err();
    assert_eq!(kind(&e), Some(PermissionErrorKind::InviteRevoked));
    let refused = deliver(&mut rng, &mut again, &everything(&mut c));
    assert_eq!(refused, 0);
    assert_eq!(again.access().role(&c.author()), Some(Role::Writer));
}

/// A device that already reads redeems a link only if it gives more (docs/design.md §6.4
/// "Invites", "A device that already reads"): with the role or a higher one, nothing is written
/// and the invite keeps its use; a reader by link redeems a writer link and becomes a writer; a
/// key whose role an owner's entry sets (granted, or revoked) is refused `invite-invalid` before
/// anything is written, since the owner's entry would rule over the redemption anyway.
#[test]
fn a_redemption_that_would_change_nothing_writes_nothing_and_keeps_the_use() {
    let mut rng = Rng(11);
    let mut owner = open_replica(1);
    write(&mut owner, "a").unwrap();
    let far = T0 + 3_600_000;
    let uses = |r: &Repo<MemStorage>, s: u8| {
        let id = invite_id(&invite_identity(&secret(s)).public());
        r.access().invite(&id).unwrap().effective().count()
    };
    owner.invite(&secret(1), Role::Reader, far, 2).unwrap();
    owner.invite(&secret(2), Role::Reader, far, 1).unwrap();
    owner.invite(&secret(3), Role::Writer, far, 1).unwrap();
    owner.invite(&secret(4), Role::Writer, far, 1).unwrap();
    // The owner itself, and a reader by link, with links that give no more: nothing written.
    let heads = owner.heads().len();
    assert_eq!(owner.redeem(&secret(2)).unwrap(), None);
    assert_eq!(owner.heads().len(), heads);
    let mut b = open_replica(2);
    deliver(&mut rng, &mut b, &everything(&mut owner));
    b.redeem(&secret(1)).unwrap().unwrap();
    assert_eq!(b.access().role(&b.author()), Some(Role::Reader));
    assert_eq!(b.redeem(&secret(2)).unwrap(), None, "reader already");
    assert_eq!(uses(&b, 2), 0, "the reader link keeps its use");
    // More: a writer link makes the reader by link a writer; the same link again changes nothing.
    b.redeem(&secret(3)).unwrap().unwrap();
    assert_eq!(b.access().role(&b.author()), Some(Role::Writer));
    assert_eq!(b.redeem(&secret(3)).unwrap(), None);
    assert_eq!(uses(&b, 3), 1);
    // A key the owner granted reader: a writer link would not change its role; refused, unused.
    let mut c = open_replica(3);
    owner.grant(&c.author(), Role::Reader).unwrap();
    deliver(&mut rng, &mut c, &everything(&mut owner));
    assert_eq!(c.access().role(&c.author()), Some(Role::Reader));
    let heads = c.heads().len();
    let e = c.redeem(&secret(4)).unwrap_err();
    assert_eq!(kind(&e), Some(PermissionErrorKind::InviteInvalid), "{e}");
    assert!(e.to_string().contains("owner's entry"), "{e}");
    assert_eq!((c.heads().len(), uses(&c, 4)), (heads, 0));
    // Revoked by the owner: the same refusal, nothing written.
    owner.revoke(&c.author()).unwrap();
    deliver(&mut rng, &mut c, &everything(&mut owner));
    let e = c.redeem(&secret(1)).unwrap_err();
    assert_eq!(kind(&e), Some(PermissionErrorKind::InviteInvalid), "{e}");
}
