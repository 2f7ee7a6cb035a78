//! Relays against permissions under concurrency (issue 23, "The discipline"): a seeded
//! simulation of grants, revocations and pushes racing with sessions that connect, wait,
//! read and are dropped, against the real server over real sockets. The seed is printed;
//! `IBEXDB_SIM_SEED=N` replays it.
//!
//! The oracle: the owner is the only writer and waits for each push's `Ack`, so the server's
//! sequence numbers are the owner's commit order and its access list after push k is the
//! owner's after push k. A session with key K that was welcomed at head H may receive the
//! commits up to H only if K could read at H, and a commit of a later push k only if K may
//! read under the access list after push k (the list that includes the commits relayed).

mod common;
use common::*;
use ibexdb::{Acl, CommitId, Identity, Message, PublicKey, Role, SessionProof, Txn};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// What one session saw: its key, the head its Welcome announced, the commits it received.
struct Record {
    key: Option<PublicKey>,
    welcome: Option<u64>,
    received: Vec<CommitId>,
}

/// A session of `who` (anonymous: `None`) on `repo`: reads everything until closed or stopped.
async fn session(
    url: String,
    repo: String,
    who: Option<Identity>,
    mut stop: watch::Receiver<bool>,
) -> Record {
    let mut rec = Record {
        key: who.as_ref().map(|i| i.public()),
        welcome: None,
        received: Vec::new(),
    };
    let mut ws = socket(&url).await;
    let nonce = challenge(&mut ws).await;
    let auth = who
        .as_ref()
        .map(|id| SessionProof::sign(id, nonce, &url, &repo));
    let hello = Message::Hello {
        repo,
        cursor: 0,
        auth,
        create: false,
    };
    send(&mut ws, &hello).await;
    loop {
        let next = tokio::select! {
            r = recv_or_closed(&mut ws, Duration::from_secs(30)) => r,
            _ = stop.changed() => {
                // Take what is already on the way, then stop.
                while let Recv::Message(m) = recv_or_closed(&mut ws, Duration::from_millis(200)).await {
                    take(&mut rec, m);
                }
                return rec;
            }
        };
        match next {
            Recv::Message(m) => take(&mut rec, m),
            Recv::Idle | Recv::Closed => return rec,
        }
    }
}

fn take(rec: &mut Record, m: Message) {
    match m {
        Message::Welcome { head, .. } => rec.welcome = Some(head),
        Message::Commits { commits, .. } => rec.received.extend(commits.iter().map(|c| c.0)),
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_session_receives_a_commit_its_rights_deny_at_that_moment() {
    let seed = seed("permission_sim");
    let mut rng = Rng(seed);
    let server = Server::fresh("permsim");
    let url = server.url.clone();
    let repo = "sim";
    let keys: Vec<Identity> = (0..6u8).map(|i| identity(50 + i)).collect();
    let mut owner = Peer::new(1, repo);
    owner.write();
    owner.connect(&url).await;
    owner.settle(1).await;
    // Per sequence (1-based): the access list after the push that stored it.
    let mut acl_at: Vec<Acl> = vec![Acl::default(), owner.repo.access().clone()];
    let mut seq_of: HashMap<CommitId, u64> = HashMap::new();
    let (all, _) = owner.repo.export().unwrap();
    seq_of.insert(all[0].0, 1);
    let (stop_tx, stop) = watch::channel(false);
    let mut tasks = Vec::new();
    let steps = 40;
    let (mut grants, mut revokes, mut writes) = (0, 0, 0);
    for _ in 0..steps {
        // Sessions start at random moments, racing with the pushes below.
        for _ in 0..rng.below(3) {
            let who = match rng.below(keys.len() as u64 + 1) as usize {
                i if i == keys.len() => None,
                i => Some(keys[i].clone()),
            };
            let t = session(url.clone(), repo.into(), who, stop.clone());
            tasks.push(tokio::spawn(t));
        }
        // One push of one to three changes: grants, revocations, data, in any order.
        for _ in 0..1 + rng.below(3) {
            let k = &keys[rng.below(keys.len() as u64) as usize];
            match rng.below(3) {
                0 => {
                    owner.repo.grant(&k.public(), Role::Reader).unwrap();
                    grants += 1;
                }
                1 => {
                    owner.repo.revoke(&k.public()).unwrap();
                    revokes += 1;
                }
                _ => {
                    let mut t = Txn::new();
                    t.put(
                        &format!("items/{}", rng.next()),
                        ibexdb::map! { "x" => 1i64 }.as_map(),
                    )
                    .unwrap();
                    owner.repo.commit(t).unwrap();
                    writes += 1;
                }
            }
        }
        let before = acl_at.len() as u64 - 1;
        owner.push().await;
        let total = owner.repo.commit_count();
        owner.settle(total).await;
        let (all, _) = owner.repo.export().unwrap();
        let acl = owner.repo.access().clone();
        for (i, (id, _)) in all.iter().enumerate().skip(before as usize) {
            seq_of.insert(*id, i as u64 + 1);
            acl_at.push(acl.clone());
        }
        if rng.below(4) == 0 {
            tokio::time::sleep(Duration::from_millis(rng.below(30))).await;
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop_tx.send(true).unwrap();
    let acl_at = Arc::new(acl_at);
    let (mut sessions, mut welcomed, mut delivered) = (0, 0, 0);
    for t in tasks {
        let rec = t.await.unwrap();
        sessions += 1;
        let mut seen = HashSet::new();
        let Some(head) = rec.welcome else {
            assert!(
                rec.received.is_empty(),
                "seed {seed}: commits without a Welcome"
            );
            continue;
        };
        welcomed += 1;
        let may = |seq: u64| acl_at[seq as usize].can_read(rec.key.as_ref());
        assert!(
            may(head),
            "seed {seed}: welcomed at head {head} without read right"
        );
        for id in &rec.received {
            let seq = seq_of[id];
            assert!(seen.insert(seq), "seed {seed}: sequence {seq} twice");
            let at = if seq <= head { head } else { seq };
            assert!(
                may(at),
                "seed {seed}: a session of {:?} received sequence {seq} (welcomed at {head}) that the access list after its push denies",
                rec.key.map(|k| k.to_hex()[..8].to_string())
            );
            delivered += 1;
        }
    }
    println!(
        "seed {seed}: {steps} pushes ({grants} grants, {revokes} revocations, {writes} writes), {sessions} sessions, {welcomed} welcomed, {delivered} commits delivered, none denied"
    );
    assert!(
        delivered > 0,
        "seed {seed}: the simulation delivered nothing"
    );
}
