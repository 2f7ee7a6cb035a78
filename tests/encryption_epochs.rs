//! Concurrent revocations in an end-to-end encrypted repository (docs/design.md §6.8,
//! "Epochs and keys"): two owners revoke concurrently, then both start a merge epoch
//! concurrently, with writes in every epoch by both owners and a writer. The commits are then
//! applied, one receive each, in seeded random orders on replicas of every member (and on an
//! access-only replica, as a sync server keeps): every order converges to the same heads and
//! state, the remaining members read every value, and the revoked members read none written
//! after the merge. A failure prints its seed (`IBEX_SEED=<seed>` reruns it alone).

mod common;
use common::*;
use ibexdb::{map, CommitId, MemStorage, Repo, Role, Txn, Value};

fn enc(n: u8) -> ibexdb::RepoOptions {
    let mut o = signed(n);
    o.clock = clock(T0 + u64::from(n) * 7);
    o.encrypted = true;
    o
}

fn open(n: u8) -> Repo<MemStorage> {
    Repo::open(MemStorage::new(), None, enc(n)).unwrap()
}

type Export = (Vec<(CommitId, Vec<u8>)>, Vec<Vec<u8>>);

fn export(r: &mut Repo<MemStorage>) -> Export {
    r.seal().unwrap();
    r.export().unwrap()
}

fn receive(to: &mut Repo<MemStorage>, (c, s): &Export) {
    to.receive(c, s)
        .unwrap_or_else(|e| panic!("refused: {e:?}"));
}

fn put(r: &mut Repo<MemStorage>, key: &str) {
    let mut t = Txn::new();
    t.put(key, map! {"title" => format!("secret {key}")}.as_map())
        .unwrap();
    r.commit(t).unwrap().unwrap();
}

/// Written before the revocations met: read by the remaining members (and, by whom the
/// concurrent epoch was wrapped to, by a revoked one: writes concurrent with a revocation).
const BEFORE: [&str; 3] = ["tasks/a1", "tasks/b1", "tasks/w0"];
/// Written after both owners started their merge epoch: no revoked member reads them.
const AFTER: [&str; 3] = ["tasks/a2", "tasks/b2", "tasks/w2"];

/// The history: owners 1 and 2, readers 3, 4, 5, writer 6. Owner 1 revokes 4 while owner 2
/// revokes 5; each then receives the other's revocation at the same time and starts a merge
/// epoch (two keys of one epoch number, neither given to a revoked member).
fn scenario() -> (Export, [u8; 32]) {
    let (mut a, mut b, mut w) = (open(1), open(2), open(6));
    a.grant(&ident(2).public(), Role::Owner).unwrap();
    for n in [3, 4, 5] {
        a.grant(&ident(n).public(), Role::Reader).unwrap();
    }
    a.grant(&ident(6).public(), Role::Writer).unwrap();
    let all = export(&mut a);
    receive(&mut b, &all);
    receive(&mut w, &all);
    a.revoke(&ident(4).public()).unwrap();
    b.revoke(&ident(5).public()).unwrap();
    put(&mut a, "tasks/a1");
    put(&mut b, "tasks/b1");
    put(&mut w, "tasks/w0");
    let (from_a, from_b) = (export(&mut a), export(&mut b));
    receive(&mut a, &from_b);
    receive(&mut b, &from_a);
    let (ea, eb) = (a.epoch().unwrap(), b.epoch().unwrap());
    assert_eq!((ea, eb), (2, 2), "each owner starts the merge epoch");
    let (from_a, from_b, from_w) = (export(&mut a), export(&mut b), export(&mut w));
    receive(&mut a, &from_b);
    receive(&mut a, &from_w);
    receive(&mut b, &from_a);
    receive(&mut w, &from_a);
    receive(&mut w, &from_b);
    // Two keys of epoch 2 are free of revoked members: nobody starts another.
    assert_eq!(
        (a.epoch(), b.epoch(), w.epoch()),
        (Some(2), Some(2), Some(2))
    );
    put(&mut a, "tasks/a2");
    put(&mut b, "tasks/b2");
    put(&mut w, "tasks/w2");
    let (from_b, from_w) = (export(&mut b), export(&mut w));
    receive(&mut a, &from_b);
    receive(&mut a, &from_w);
    assert!(
        a.decrypt_failures().is_empty(),
        "{:?}",
        a.decrypt_failures()
    );
    for k in BEFORE.iter().chain(&AFTER) {
        assert!(a.get(k).unwrap().is_some(), "the owner cannot read {k}");
    }
    let hash = a.state_hash().unwrap();
    (export(&mut a), hash)
}

fn title(r: &mut Repo<MemStorage>, key: &str) -> Option<String> {
    match r.get(key).unwrap()?.get("title")? {
        Value::String(s) => Some(s.as_str().to_string()),
        _ => None,
    }
}

#[test]
fn concurrent_revocations_converge_in_every_order() {
    let ((commits, seals), owner_hash) = scenario();
    let heads = {
        let mut r = open(3);
        receive(&mut r, &(commits.clone(), seals.clone()));
        r.heads()
    };
    let seeds = 0..12u64;
    println!("seeds {seeds:?} over {} commits", commits.len());
    for_seeds(
        "concurrent_revocations_converge_in_every_order",
        seeds,
        |seed| {
            let mut rng = Rng(seed);
            let mut order = commits.clone();
            rng.shuffle(&mut order);
            // Member 3 (reader) and 6 (writer) read everything; 4 and 5 were revoked.
            for n in [3u8, 6, 4, 5] {
                let mut r = open(n);
                for (i, c) in order.iter().enumerate() {
                    let s = if i == 0 { seals.clone() } else { Vec::new() };
                    receive(&mut r, &(vec![c.clone()], s));
                }
                assert_eq!(r.heads(), heads, "seed {seed}, member {n}: heads differ");
                let remaining = n == 3 || n == 6;
                for k in BEFORE.iter().chain(&AFTER) {
                    let read = title(&mut r, k);
                    if remaining {
                        assert_eq!(read, Some(format!("secret {k}")), "seed {seed}, member {n}");
                    } else if AFTER.contains(k) {
                        assert_eq!(read, None, "seed {seed}: revoked member {n} reads {k}");
                    }
                }
                if remaining {
                    assert!(
                        r.decrypt_failures().is_empty(),
                        "seed {seed}, member {n}: {:?}",
                        r.decrypt_failures()
                    );
                    assert_eq!(
                        r.state_hash().unwrap(),
                        owner_hash,
                        "seed {seed}, member {n}"
                    );
                    assert_eq!(r.epoch(), Some(2), "seed {seed}, member {n}");
                } else {
                    assert_eq!(
                        r.epoch(),
                        None,
                        "seed {seed}: revoked member {n} has a write key"
                    );
                }
            }
            // A sync server's replica (access list only) stores and judges the same commits.
            let mut o = signed(60);
            o.access_only = true;
            let mut server = Repo::open(MemStorage::new(), None, o).unwrap();
            for (i, c) in order.iter().enumerate() {
                let s = if i == 0 { seals.clone() } else { Vec::new() };
                receive(&mut server, &(vec![c.clone()], s));
            }
            assert_eq!(
                server.heads(),
                heads,
                "seed {seed}: the server's heads differ"
            );
        },
    );
}
