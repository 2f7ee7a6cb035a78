//! How access changes are ordered, and what replicas do with commits that do not count
//! (docs/design.md §6.4): no author wins by its clock (causal order first; among concurrent
//! writes the least privilege), only the founder changes its own role, and a commit whose
//! author lacked the right is stored without effect so that its honest descendants count.
//! Seeded simulations print their seed on failure (rerun one with IBEX_SEED=n).

mod common;
use common::*;
use ibexdb::{map, member_value, Change, Commit, CommitId, Identity, MemStorage, Op};
use ibexdb::{PublicKey, Repo, Role, Seal, Txn, ACL_COLLECTION};
use std::collections::BTreeSet;

const MINUTE: u64 = 60_000;

/// A commit with its seal, as a peer would send it.
#[derive(Clone)]
struct Sent {
    id: CommitId,
    bytes: Vec<u8>,
    seals: Vec<Vec<u8>>,
}

/// Replica `n` whose clock is `ahead` ms in front of everyone's.
fn replica(n: u8, ahead: u64) -> Repo<MemStorage> {
    let mut o = signed(n);
    o.clock = clock(T0 + ahead);
    Repo::open(MemStorage::new(), None, o).unwrap()
}

fn acl_change(target: &PublicKey, role: Option<Role>) -> Change {
    Change {
        collection: ACL_COLLECTION.into(),
        id: target.to_hex(),
        op: role.map_or(Op::Delete, |r| Op::Put(member_value(r))),
    }
}

fn data_change(key: &str, v: i64) -> Change {
    Change {
        collection: "t".into(),
        id: key.into(),
        op: Op::Put(map! { "v" => v }.as_map()),
    }
}

/// A commit by `author` on `parents`, stamped `hlc_ms`, made without any replica's checks.
fn forge(author: &Identity, parents: Vec<CommitId>, hlc_ms: u64, changes: Vec<Change>) -> Sent {
    let c = Commit {
        trusted: false,
        author: author.public(),
        hlc: hlc_ms << 16,
        parents,
        changes,
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

/// Deliver `sent` one commit at a time in a random order: nothing is refused.
fn deliver(rng: &mut Rng, to: &mut Repo<MemStorage>, sent: &[Sent]) {
    let mut order: Vec<&Sent> = sent.iter().collect();
    rng.shuffle(&mut order);
    for s in order {
        to.receive(&[(s.id, s.bytes.clone())], &s.seals)
            .unwrap_or_else(|e| panic!("refused {}: {e:?}", s.id.to_hex()));
    }
}

fn sync(rng: &mut Rng, from: &mut Repo<MemStorage>, to: &mut Repo<MemStorage>) {
    from.seal().unwrap();
    deliver(rng, to, &everything(from));
}

/// Every commit held, and those that count.
fn commits(r: &Repo<MemStorage>) -> (BTreeSet<CommitId>, BTreeSet<CommitId>) {
    let all: BTreeSet<CommitId> = r
        .export()
        .unwrap()
        .0
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    let counted = all
        .iter()
        .filter(|id| r.counts(id) == Some(true))
        .copied()
        .collect();
    (all, counted)
}

/// Every replica holds the same commits, counts the same ones, and has the same items and
/// access list; a fresh observer re-proves everything with `verify()`.
fn assert_agree(rs: &mut [Repo<MemStorage>], what: &str) {
    let first = commits(&rs[0]);
    let hash = rs[0].state_hash().unwrap();
    let acl = rs[0].access().clone();
    for (k, r) in rs.iter_mut().enumerate() {
        assert_eq!(r.pending(), 0, "replica {k} still waits ({what})");
        assert_eq!(
            commits(r),
            first,
            "replica {k} counts other commits ({what})"
        );
        assert_eq!(
            r.state_hash().unwrap(),
            hash,
            "replica {k} diverged ({what})"
        );
        assert_eq!(*r.access(), acl, "replica {k} access list ({what})");
        r.verify().unwrap();
    }
}

fn put(r: &mut Repo<MemStorage>, key: &str, v: i64) -> CommitId {
    let mut t = Txn::new();
    t.put(key, map! { "v" => v }.as_map()).unwrap();
    r.commit(t).unwrap().unwrap()
}

#[test]
fn a_co_owner_fifty_minutes_ahead_does_not_keep_what_the_owner_revoked() {
    // A founds the repository and makes B co-owner; B's clock runs 50 minutes ahead.
    let (mut a, mut b) = (replica(1, 0), replica(2, 50 * MINUTE));
    put(&mut a, "t/x", 1);
    a.grant(&b.author(), Role::Owner).unwrap();
    let mut rng = Rng(23);
    sync(&mut rng, &mut a, &mut b);
    // B re-grants itself owner, stamped 50 minutes ahead, and (pre-emptively) revokes A and
    // grants an accomplice; A, offline, revokes B. Neither has seen the other's.
    b.grant(&b.author(), Role::Owner).unwrap();
    let pre_emptive = forge(
        &ident(2),
        b.heads(),
        T0 + 50 * MINUTE + 10,
        vec![acl_change(&a.author(), None)],
    );
    deliver(&mut rng, &mut b, std::slice::from_ref(&pre_emptive));
    a.revoke(&b.author()).unwrap();
    // Everything, to both and to an observer, in random orders.
    let mut all = {
        a.seal().unwrap();
        b.seal().unwrap();
        let mut v = everything(&a);
        v.extend(everything(&b));
        v
    };
    let mut c = replica(3, 0);
    for r in [&mut a, &mut b, &mut c] {
        deliver(&mut rng, r, &all);
    }
    for r in [&a, &b, &c] {
        let acl = r.access();
        assert_eq!(
            acl.role(&ident(1).public()),
            Some(Role::Owner),
            "A keeps control"
        );
        assert_eq!(
            acl.role(&ident(2).public()),
            None,
            "B's future stamp does not win"
        );
        assert!(acl.contested(&ident(2).public()));
        assert_eq!(acl.founder(), Some(ident(1).public()));
        assert_eq!(
            r.counts(&pre_emptive.id),
            Some(false),
            "only A changes A's role"
        );
    }
    // B, revoked, cannot act on the merged history: its own replica refuses, and a forged
    // commit (bypassing that check) does not count anywhere.
    assert!(b.revoke(&a.author()).is_err());
    let after = forge(
        &ident(2),
        c.heads(),
        T0 + 59 * MINUTE,
        vec![acl_change(&ident(2).public(), Some(Role::Owner))],
    );
    all.push(after.clone());
    let mut rs = vec![a, b, c, replica(4, 0)];
    for r in &mut rs {
        deliver(&mut rng, r, &all);
        assert_eq!(r.counts(&after.id), Some(false));
        assert_eq!(r.access().role(&ident(2).public()), None);
    }
    // A still administers: a grant it makes now counts everywhere.
    rs[0].grant(&ident(5).public(), Role::Writer).unwrap();
    let from_a = {
        rs[0].seal().unwrap();
        everything(&rs[0])
    };
    for r in &mut rs[1..] {
        deliver(&mut rng, r, &from_a);
    }
    assert_eq!(rs[3].access().role(&ident(5).public()), Some(Role::Writer));
    assert_agree(&mut rs, "the 50-minute attack");
}

#[test]
fn causal_order_beats_stamps() {
    // B, owner, grants C writer stamped 50 minutes ahead. A sees it, then revokes C with a
    // commit stamped an hour in the past: the revocation has the grant in its past and wins.
    let (mut a, mut b) = (replica(1, 0), replica(2, 50 * MINUTE));
    put(&mut a, "t/x", 1);
    a.grant(&b.author(), Role::Owner).unwrap();
    let mut rng = Rng(7);
    sync(&mut rng, &mut a, &mut b);
    b.grant(&ident(3).public(), Role::Writer).unwrap();
    sync(&mut rng, &mut b, &mut a);
    let revoke = forge(
        &ident(1),
        a.heads(),
        T0 - 60 * MINUTE,
        vec![acl_change(&ident(3).public(), None)],
    );
    let mut all = everything(&a);
    all.push(revoke.clone());
    let mut rs = vec![a, b, replica(4, 0)];
    for r in &mut rs {
        deliver(&mut rng, r, &all);
        assert_eq!(r.counts(&revoke.id), Some(true));
        assert_eq!(r.access().role(&ident(3).public()), None);
        assert!(!r.access().contested(&ident(3).public()));
    }
    assert_agree(&mut rs, "causal order");
}

#[test]
fn the_honest_descendant_of_a_poisoned_commit_is_stored_and_counts_everywhere() {
    for_seeds("honest_descendant_of_a_poisoned_commit", 0..10, |seed| {
        let mut rng = Rng(seed);
        let (mut owner, mut w, mut h) = (replica(1, 0), replica(2, 0), replica(3, 0));
        put(&mut owner, "t/x", 1);
        owner.grant(&w.author(), Role::Writer).unwrap();
        owner.grant(&h.author(), Role::Writer).unwrap();
        owner.revoke(&w.author()).unwrap();
        sync(&mut rng, &mut owner, &mut w);
        sync(&mut rng, &mut owner, &mut h);
        // W has seen its revocation and writes anyway, backdated: it does not count.
        let poisoned = forge(
            &ident(2),
            w.heads(),
            T0 - 30 * MINUTE,
            vec![data_change("p", 666)],
        );
        // It reaches H, which stores it without effect and writes on top of it.
        let r = h
            .receive(&[(poisoned.id, poisoned.bytes.clone())], &poisoned.seals)
            .unwrap();
        assert_eq!((r.applied, r.refused), (0, 1), "seed {seed}");
        assert!(h.get("t/p").unwrap().is_none());
        let honest = put(&mut h, "t/h", 2);
        assert_eq!(h.counts(&honest), Some(true));
        // Everything, to everyone, in random orders (the descendant may arrive first).
        h.seal().unwrap();
        let mut all = everything(&owner);
        all.extend(everything(&h));
        all.push(poisoned.clone());
        let mut rs = vec![owner, w, h, replica(4, 0), replica(5, 0)];
        for r in &mut rs {
            deliver(&mut rng, r, &all);
            assert_eq!(r.counts(&poisoned.id), Some(false), "seed {seed}");
            assert_eq!(r.counts(&honest), Some(true), "seed {seed}");
            assert!(r.get("t/h").unwrap().is_some(), "seed {seed}");
            assert!(r.get("t/p").unwrap().is_none(), "seed {seed}");
        }
        assert_agree(&mut rs, &format!("seed {seed}"));
        // A snapshot keeps which commits count.
        let mut o = signed(6);
        o.clock = clock(T0);
        let mut s = Repo::open(MemStorage::new(), Some(MemStorage::new()), o).unwrap();
        deliver(&mut rng, &mut s, &all);
        assert!(s.write_snapshot().unwrap());
        let hash = s.state_hash().unwrap();
        let (log, snap) = s.close().unwrap();
        let mut s = Repo::open(log, snap, signed(6)).unwrap();
        assert!(s.open_report().from_snapshot);
        assert_eq!(s.counts(&poisoned.id), Some(false));
        assert_eq!(s.state_hash().unwrap(), hash);
    });
}

/// One step of the simulation: a replica writes, changes the access list through the API, forges
/// an access change or a write (stamped anywhere within the hour of skew a peer accepts), or
/// gossips.
fn step(rng: &mut Rng, rs: &mut [Repo<MemStorage>], forged: &mut Vec<Sent>, n: u64) {
    let i = rng.below(rs.len() as u64) as usize;
    // The founder (replica 1) is never the target: it must keep control.
    let target = ident(2 + rng.below(rs.len() as u64 - 1) as u8).public();
    let role = [
        None,
        Some(Role::Reader),
        Some(Role::Writer),
        Some(Role::Owner),
    ][rng.below(4) as usize];
    match rng.below(10) {
        0..=2 => {
            let mut t = Txn::new();
            t.put(
                &format!("t/k{}", rng.below(4)),
                map! { "v" => n as i64 }.as_map(),
            )
            .unwrap();
            let _ = rs[i].commit(t);
        }
        3..=5 => {
            let _ = match role {
                Some(r) => rs[i].grant(&target, r),
                None => rs[i].revoke(&target),
            };
        }
        6 | 7 => {
            let author = ident(i as u8 + 1);
            let hlc = T0 + rng.below(110) * MINUTE / 2;
            let change = if rng.chance(30) {
                data_change("f", n as i64)
            } else if i != 0 && rng.chance(10) {
                acl_change(&ident(1).public(), None)
            } else {
                acl_change(&target, role)
            };
            let f = forge(&author, rs[i].heads(), hlc, vec![change]);
            deliver(rng, &mut rs[i], std::slice::from_ref(&f));
            forged.push(f);
        }
        _ => {
            let j = rng.below(rs.len() as u64) as usize;
            if i != j {
                let (a, b) = if i < j {
                    let (l, r) = rs.split_at_mut(j);
                    (&mut r[0], &mut l[i])
                } else {
                    let (l, r) = rs.split_at_mut(i);
                    (&mut l[j], &mut r[0])
                };
                sync(rng, a, b);
            }
        }
    }
}

#[test]
fn replicas_converge_whatever_the_clocks_and_the_delivery_order() {
    let totals = std::cell::Cell::new((0usize, 0usize));
    for_seeds("replicas_converge_whatever_the_clocks", 0..12, |seed| {
        let mut rng = Rng(seed);
        // Four replicas, their clocks up to 55 minutes apart.
        let mut rs: Vec<Repo<MemStorage>> = (1..=4)
            .map(|n| replica(n, rng.below(56) * MINUTE))
            .collect();
        put(&mut rs[0], "t/k0", 0);
        for n in 2..=4 {
            let role = if rng.chance(60) {
                Role::Owner
            } else {
                Role::Writer
            };
            rs[0].grant(&ident(n).public(), role).unwrap();
        }
        rs[0].seal().unwrap();
        let root = everything(&rs[0]);
        for r in &mut rs[1..] {
            deliver(&mut rng, r, &root);
        }
        let mut forged = Vec::new();
        for n in 0..60 {
            step(&mut rng, &mut rs, &mut forged, n);
        }
        let mut all = forged.clone();
        for r in &mut rs {
            r.seal().unwrap();
            all.extend(everything(r));
        }
        for r in &mut rs {
            deliver(&mut rng, r, &all);
        }
        rs.extend((0..2).map(|k| replica(50 + k, 0)));
        for r in &mut rs[4..] {
            deliver(&mut rng, r, &all);
        }
        assert_agree(&mut rs, &format!("seed {seed}"));
        let acl = rs[0].access();
        assert_eq!(
            acl.role(&ident(1).public()),
            Some(Role::Owner),
            "seed {seed}"
        );
        let (held, counted) = commits(&rs[0]);
        let contested = (2..=4)
            .filter(|n| acl.contested(&ident(*n).public()))
            .count();
        let (v, c) = totals.get();
        totals.set((v + held.len() - counted.len(), c + contested));
    });
    let (void, contested) = totals.get();
    eprintln!("clock simulation: {void} commits that do not count, {contested} contested entries");
    if std::env::var("IBEX_SEED").is_err() {
        assert!(void > 0, "no commit was ever void");
        assert!(contested > 0, "no entry was ever contested");
    }
}
