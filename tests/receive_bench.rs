//! Where the receive path's time goes (docs/benchmarks.md, "Initial sync and sync latency"):
//! a replica receives 100 commits of 1,000 benchmark items as the server streams them
//! (`Hub::batch` messages of `--batch-bytes`), vouched (the browser verified the seals with
//! WebCrypto), and flushes. Ignored by default (a measurement, not a check); run it with
//! `cargo test -p ibexdb --profile ci --test receive_bench -- --ignored --nocapture`.
//! The non-ignored tests check what the measurement relies on (every item arrives) and what the
//! browser's pipelined catch-up relies on (www/lib/worker/sync.js): a message's seal checks are
//! a function of its bytes, so checking them all before any message is applied, as the worker
//! does when each arrives, vouches for exactly what checking each just before its apply would.

mod common;
use common::*;
use ibexdb::{Error, Hub, MemStorage, Message, Repo, Seal, SealCheck, Txn};
use std::collections::HashSet;
use std::time::Instant;

const COMMITS: u64 = 100;
const PER: u64 = 1000;

fn source(commits: u64) -> Hub<MemStorage> {
    let mut a = Repo::open(MemStorage::new(), Some(MemStorage::new()), signed(1)).unwrap();
    for c in 0..commits {
        let mut t = Txn::new();
        for i in c * PER..(c + 1) * PER {
            t.put(&format!("items/i{i:08}"), item(i)).unwrap();
        }
        a.commit(t).unwrap();
        a.seal().unwrap();
    }
    a.flush().unwrap();
    Hub::new(a).unwrap()
}

/// The server's catch-up messages of about `batch` bytes each, encoded.
fn messages(hub: &Hub<MemStorage>, batch: usize) -> Vec<Vec<u8>> {
    let (head, mut from, mut out) = (hub.head(), 0, Vec::new());
    while from < head {
        let m = hub.batch(from, head, &HashSet::new(), batch).unwrap();
        let Message::Commits { to, .. } = &m else {
            unreachable!()
        };
        from = *to;
        out.push(m.encode());
    }
    out
}

/// Receive `msgs` into a new replica: (decode ms, receive ms, flush ms, the replica).
fn receive_all(msgs: &[Vec<u8>]) -> (f64, f64, f64, Repo<MemStorage>) {
    let mut b = Repo::open(MemStorage::new(), Some(MemStorage::new()), signed(2)).unwrap();
    let (mut dec, mut rec) = (0.0, 0.0);
    for m in msgs {
        let t = Instant::now();
        let Message::Commits { commits, seals, .. } = Message::decode(m).unwrap() else {
            unreachable!()
        };
        dec += t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        b.receive_vouched(&commits, &seals).unwrap();
        rec += t.elapsed().as_secs_f64() * 1e3;
    }
    let t = Instant::now();
    b.flush().unwrap();
    (dec, rec, t.elapsed().as_secs_f64() * 1e3, b)
}

#[test]
fn every_item_arrives() {
    let hub = source(3);
    let msgs = messages(&hub, 64 << 10);
    let (_, _, _, mut b) = receive_all(&msgs);
    assert_eq!(b.count("items", None).unwrap(), (3 * PER) as usize);
}

#[test]
#[ignore]
fn receive_100_commits_of_1000_items() {
    let hub = source(COMMITS);
    for batch in [64 << 10, 256 << 10, 1 << 20] {
        let t = Instant::now();
        let msgs = messages(&hub, batch);
        let built = t.elapsed().as_secs_f64() * 1e3;
        let bytes: usize = msgs.iter().map(Vec::len).sum();
        println!(
            "batch {batch:>7} B: the server's side (Hub::batch + encode, in memory) {built:.1} ms"
        );
        for _ in 0..3 {
            let (dec, rec, flush, mut b) = receive_all(&msgs);
            assert_eq!(b.count("items", None).unwrap(), (COMMITS * PER) as usize);
            println!(
                "batch {:>7} B: {} messages, {bytes} B; decode {dec:.1} ms, receive {rec:.1} ms, flush {flush:.1} ms",
                batch,
                msgs.len()
            );
        }
    }
}

/// Whether every seal signature of an encoded server message verifies, from its bytes alone
/// (what the worker computes at arrival: `syncSealChecks` + WebCrypto).
fn seals_verify(m: &[u8]) -> bool {
    let Message::Commits { seals, .. } = Message::decode(m).unwrap() else {
        unreachable!()
    };
    seals
        .iter()
        .all(|b| Seal::decode(b).is_ok_and(|s| SealCheck::of(&s).verify().is_ok()))
}

#[test]
fn seal_checks_made_before_any_apply_vouch_for_the_same_outcome() {
    let hub = source(4);
    // One commit per message, so later messages are checked before earlier ones are applied.
    let msgs = messages(&hub, 1024);
    assert!(msgs.len() >= 4);
    let early: Vec<bool> = msgs.iter().map(|m| seals_verify(m)).collect();
    assert!(early.iter().all(|ok| *ok));
    let open = || Repo::open(MemStorage::new(), Some(MemStorage::new()), signed(2)).unwrap();
    let (mut vouched, mut checked) = (open(), open());
    for (m, ok) in msgs.iter().zip(&early) {
        let Message::Commits { commits, seals, .. } = Message::decode(m).unwrap() else {
            unreachable!()
        };
        assert!(*ok);
        vouched.receive_vouched(&commits, &seals).unwrap();
        checked.receive(&commits, &seals).unwrap();
    }
    assert_eq!(vouched.heads(), checked.heads());
    assert_eq!(vouched.count("items", None).unwrap(), (4 * PER) as usize);
    assert_eq!(checked.count("items", None).unwrap(), (4 * PER) as usize);

    // A forged signature fails the early check; the worker then hands the message over
    // unvouched and the engine refuses it with the SignatureError.
    let Message::Commits {
        commits, mut seals, ..
    } = Message::decode(&msgs[0]).unwrap()
    else {
        unreachable!()
    };
    let last = seals[0].len() - 1;
    seals[0][last] ^= 1;
    let forged = Message::Commits {
        from: 0,
        to: 1,
        commits: commits.clone(),
        seals: seals.clone(),
    }
    .encode();
    assert!(!seals_verify(&forged));
    let mut fresh = open();
    assert!(matches!(
        fresh.receive(&commits, &seals),
        Err(Error::Signature { .. })
    ));
    assert_eq!(fresh.count("items", None).unwrap(), 0);
}

/// A sync server's side (an access-only replica, docs/design.md §12.4) receiving the same 100
/// commits of 1,000 items, without a stored schema and with one for `items` (every field
/// declared: each item's fields are then checked from the commit's bytes, §2.4). A measurement:
/// `cargo test -p ibexdb --profile ci --test receive_bench -- --ignored --nocapture server`.
#[test]
#[ignore]
fn a_server_receives_100_commits_of_1000_items_with_and_without_a_stored_schema() {
    for schema in [false, true] {
        let mut a = Repo::open(MemStorage::new(), None, signed(1)).unwrap();
        if schema {
            let s = serde_json::json!({"fields": {"title": {"type": "string", "required": true},
                "count": {"type": "integer"}, "tags": {"type": "set"}}, "allowOtherFields": false});
            a.store_schemas(1, &[("items".into(), s)]).unwrap();
        } else {
            a.commit({
                let mut t = Txn::new();
                t.put("other/x", item(0)).unwrap();
                t
            })
            .unwrap();
        }
        for c in 0..COMMITS {
            let mut t = Txn::new();
            for i in c * PER..(c + 1) * PER {
                t.put(&format!("items/i{i:08}"), item(i)).unwrap();
            }
            a.commit(t).unwrap();
        }
        a.seal().unwrap();
        let (commits, seals) = a.export().unwrap();
        let bytes: usize = commits.iter().map(|c| c.1.len()).sum();
        for _ in 0..3 {
            let mut o = signed(2);
            o.access_only = true;
            let mut server = Repo::open(MemStorage::new(), None, o).unwrap();
            let t = Instant::now();
            let report = server.receive(&commits, &seals).unwrap();
            let ms = t.elapsed().as_secs_f64() * 1e3;
            assert_eq!(report.refused, 0);
            println!(
                "server receive, stored schema {schema}: {} commits, {bytes} B in {ms:.1} ms",
                commits.len()
            );
        }
    }
}
