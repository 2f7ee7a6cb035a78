//! The PostgreSQL store: several real `ibexdb-server` nodes on one real PostgreSQL of the
//! test's own (server/tests/common/pg.rs), clients spread over them.

mod common;
use common::pg::Postgres;
use common::*;
use futures_util::SinkExt;
use ibexdb::{ClientEvent, CommitId, ErrorCode, Message};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message as Ws;

/// Push limits out of the way: these tests push as fast as they can.
const FAST: [&str; 4] = ["--push-rate", "100000", "--push-burst", "100000"];

/// Every commit stored in PostgreSQL for `repo`: (sequence, id), in sequence order.
async fn stored(pg: &Postgres, repo: &str) -> Vec<(i64, Vec<u8>)> {
    let c = pg.client().await;
    let rows = c
        .query(
            "SELECT c.seq, c.id FROM ibexdb_commits c JOIN ibexdb_repos r ON r.id = c.repo
             WHERE r.name = $1 ORDER BY c.seq",
            &[&repo],
        )
        .await
        .unwrap();
    rows.iter().map(|r| (r.get(0), r.get(1))).collect()
}

/// Sequences are 1..=n without a gap, each id once, and the head says n.
async fn assert_gapless(pg: &Postgres, repo: &str) -> usize {
    let rows = stored(pg, repo).await;
    for (i, (seq, _)) in rows.iter().enumerate() {
        assert_eq!(*seq, i as i64 + 1, "sequence gap in {repo}");
    }
    let ids: std::collections::HashSet<_> = rows.iter().map(|r| r.1.clone()).collect();
    assert_eq!(ids.len(), rows.len(), "a commit stored twice in {repo}");
    let c = pg.client().await;
    let head: i64 = c
        .query_one("SELECT head FROM ibexdb_repos WHERE name = $1", &[&repo])
        .await
        .unwrap()
        .get(0);
    assert_eq!(head as usize, rows.len(), "head of {repo}");
    rows.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_through_one_node_reaches_a_client_of_another() {
    let pg = Postgres::start("relay");
    let n1 = Server::node("relay-1", &pg.url, &[]);
    let n2 = Server::node("relay-2", &pg.url, &[]);
    let mut team = Peer::team("r", &[1, 2]).into_iter();
    let (mut a, mut b) = (team.next().unwrap(), team.next().unwrap());
    a.connect(&n1.url).await;
    a.settle(1).await;
    b.connect(&n2.url).await;
    b.settle(1).await;
    let mut ms = Vec::new();
    for i in 0..20 {
        a.write();
        a.repo.seal().unwrap();
        let t = Instant::now();
        a.push().await;
        b.settle(2 + i).await;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
        a.settle(2 + i).await;
    }
    ms.sort_by(|x, y| x.total_cmp(y));
    println!(
        "node 1 → node 2, push to live on the other node: p50 {:.1} ms",
        ms[10]
    );
    assert_eq!(a.repo.state_hash().unwrap(), b.repo.state_hash().unwrap());
    assert_eq!(assert_gapless(&pg, "r").await, 21);
    // The schema is at its version, applied once although two nodes started.
    let c = pg.client().await;
    let v: i64 = c
        .query_one("SELECT count(*) FROM ibexdb_migrations", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(v, 2);
    drop((n1, n2));
}

/// Every commit a peer saw acknowledged is stored (exactly once: `assert_gapless`).
async fn assert_acked_stored(pg: &Postgres, repo: &str, peers: &[Peer]) {
    let ids: HashSet<Vec<u8>> = stored(pg, repo).await.into_iter().map(|r| r.1).collect();
    for p in peers {
        for id in &p.acked {
            assert!(
                ids.contains(&id.0[..]),
                "acknowledged commit {} lost",
                id.to_hex()
            );
        }
    }
}

/// Connect every peer that is not (peer `i` to `urls[i % len]`), let each push everything it
/// has, then let each receive everything: `total` commits.
async fn converge(peers: &mut [Peer], urls: &[String], total: usize, seed: u64) {
    for (i, p) in peers.iter_mut().enumerate() {
        if p.ws.is_none() {
            p.connect(&urls[i % urls.len()]).await;
        }
    }
    for p in peers.iter_mut() {
        let deadline = Instant::now() + Duration::from_secs(60);
        while p.client.push_from() < p.repo.commit_count() || !p.client.welcomed() {
            assert!(Instant::now() < deadline, "seed {seed}: peer {} stuck", p.n);
            p.step(Duration::from_millis(100)).await;
        }
    }
    for p in peers.iter_mut() {
        p.settle(total).await;
    }
    assert_converged(peers, seed);
}

/// Three nodes on one PostgreSQL; six peers write, disconnect and reconnect to random nodes in
/// an order drawn from a seed; one node is killed with SIGKILL in the middle and restarted.
/// Every peer and every node's replica ends in one state; every acknowledged commit is stored
/// exactly once, at gapless sequences.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_converge_through_disconnects_and_a_kill_9() {
    let seed = seed("three_nodes_converge");
    let mut rng = Rng(seed);
    let pg = Postgres::start("sim");
    let mut nodes: Vec<Server> = (0..3)
        .map(|i| Server::node(&format!("sim-{i}"), &pg.url, &FAST))
        .collect();
    let mut peers = Peer::team("sim", &[1, 2, 3, 4, 5, 6]);
    let mut on: Vec<Option<usize>> = vec![None; peers.len()];
    let kill_at = 60 + rng.below(60);
    let restart_at = kill_at + 20 + rng.below(40);
    let victim = rng.below(3) as usize;
    for step in 0..240 {
        if step == kill_at {
            nodes[victim].kill(); // SIGKILL, pushes in flight or not
            for (i, p) in peers.iter_mut().enumerate() {
                if on[i] == Some(victim) {
                    p.disconnect();
                    on[i] = None;
                }
            }
        }
        if step == restart_at {
            nodes[victim] = nodes[victim].restart();
        }
        let down = (kill_at..restart_at).contains(&step);
        let i = rng.below(peers.len() as u64) as usize;
        let p = &mut peers[i];
        match rng.below(10) {
            0..=4 => {
                p.write();
                if p.ws.is_some() && p.client.welcomed() {
                    p.push().await;
                }
            }
            5 => {
                p.disconnect();
                on[i] = None;
            }
            6 if p.ws.is_none() => {
                let mut k = rng.below(3) as usize;
                if down && k == victim {
                    k = (k + 1) % 3;
                }
                p.connect(&nodes[k].url).await;
                on[i] = Some(k);
            }
            _ => {
                while let Polled::Event(_) = p.poll(Duration::from_millis(2)).await {}
                if p.ws.is_none() {
                    on[i] = None;
                }
            }
        }
    }
    let total = peers.iter().map(|p| p.writes as usize).sum::<usize>() + 1;
    let urls: Vec<String> = nodes.iter().map(|n| n.url.clone()).collect();
    converge(&mut peers, &urls, total, seed).await;
    assert_eq!(assert_gapless(&pg, "sim").await, total, "seed {seed}");
    assert_acked_stored(&pg, "sim", &peers).await;
    // Each node's replica serves the same state to a newcomer.
    let h = peers[0].repo.state_hash().unwrap();
    for (k, node) in nodes.iter().enumerate() {
        let mut fresh = Peer::new(20 + k as u8, "sim");
        fresh.catch_up(&node.url).await;
        assert_eq!(
            fresh.repo.state_hash().unwrap(),
            h,
            "seed {seed}: node {k} differs"
        );
    }
}

/// Send a push and read until its `Ack` (skipping relays): the acknowledged ids.
async fn push_acked(ws: &mut Socket, m: &Message) -> Vec<CommitId> {
    send(ws, m).await;
    loop {
        match recv(ws, Duration::from_secs(20)).await {
            Some(Message::Ack { ids }) => return ids,
            Some(Message::Error { name, message, .. }) => {
                panic!("push refused: {name}: {message}")
            }
            Some(_) => continue,
            None => panic!("no Ack"),
        }
    }
}

/// A reader from cursor 0 anonymously (the repository is publicly readable): every sequence's
/// commit id, in order.
async fn sequence_of(url: &str, repo: &str) -> Vec<CommitId> {
    let mut ws = socket(url).await;
    let head = hello(&mut ws, repo).await;
    let mut ids = Vec::new();
    while (ids.len() as u64) < head {
        match recv(&mut ws, Duration::from_secs(20)).await {
            Some(Message::Commits {
                from, to, commits, ..
            }) => {
                assert_eq!(from, ids.len() as u64, "Commits in order");
                assert_eq!(
                    commits.len() as u64,
                    to - from,
                    "nothing left out for a reader"
                );
                ids.extend(commits.into_iter().map(|c| c.0));
            }
            Some(_) => continue,
            None => panic!("catch-up stopped at {} of {head}", ids.len()),
        }
    }
    ids
}

/// The same pushes reach two nodes at the same time, batch after batch: each commit is
/// stored once, both pushers are acknowledged, and the sequence numbers are gapless and the
/// same for readers of either node and in PostgreSQL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_receiving_the_same_commits_store_them_once() {
    let pg = Postgres::start("dup");
    let n1 = Server::node("dup-1", &pg.url, &FAST);
    let n2 = Server::node("dup-2", &pg.url, &FAST);
    let mut team = Peer::team("dup", &[1, 2]).into_iter();
    let (mut owner, mut w) = (team.next().unwrap(), team.next().unwrap());
    owner.connect(&n1.url).await;
    owner.settle(1).await;
    let mut s1 = socket(&n1.url).await;
    let mut s2 = socket(&n2.url).await;
    hello_as(&mut s1, &n1.url, "dup", Some(&identity(2))).await;
    hello_as(&mut s2, &n2.url, "dup", Some(&identity(2))).await;
    const BATCHES: usize = 30;
    for _ in 0..BATCHES {
        let start = w.repo.commit_count();
        for _ in 0..4 {
            w.write();
        }
        w.repo.seal().unwrap();
        let (commits, _) = w.repo.export().unwrap();
        let seal = w.repo.seal_bytes(w.repo.seal_count() - 1).unwrap();
        let m = Message::Push {
            commits: commits[start..].to_vec(),
            seals: vec![seal],
        };
        let (a1, a2) = tokio::join!(push_acked(&mut s1, &m), push_acked(&mut s2, &m));
        assert_eq!(a1.len(), 4, "node 1 acknowledges the whole push");
        assert_eq!(a2.len(), 4, "node 2 acknowledges the whole push");
    }
    let total = 1 + 4 * BATCHES;
    assert_eq!(assert_gapless(&pg, "dup").await, total);
    let in_pg: Vec<Vec<u8>> = stored(&pg, "dup").await.into_iter().map(|r| r.1).collect();
    let r1 = sequence_of(&n1.url, "dup").await;
    let r2 = sequence_of(&n2.url, "dup").await;
    assert_eq!(r1, r2, "readers of both nodes see the same sequence");
    let r1: Vec<Vec<u8>> = r1.iter().map(|id| id.0.to_vec()).collect();
    assert_eq!(r1, in_pg, "and it is PostgreSQL's");
}

/// A revocation stored through one node is enforced by another at once: the push is checked
/// against the replica after it took in what other nodes stored, under the row lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revocation_through_one_node_binds_another() {
    let pg = Postgres::start("acl");
    let n1 = Server::node("acl-1", &pg.url, &FAST);
    let n2 = Server::node("acl-2", &pg.url, &FAST);
    let mut team = Peer::team("acl", &[1, 2]).into_iter();
    let (mut a, mut b) = (team.next().unwrap(), team.next().unwrap());
    a.connect(&n1.url).await;
    a.settle(1).await;
    b.connect(&n2.url).await;
    b.write();
    b.push().await;
    b.settle(2).await;
    b.disconnect();
    a.settle(2).await;
    a.repo.revoke(&identity(2).public()).unwrap();
    a.push().await;
    a.settle(3).await;
    // B did not hear of it and writes on its old history, through node 2.
    b.write();
    b.repo.seal().unwrap();
    let (commits, _) = b.repo.export().unwrap();
    let seal = b.repo.seal_bytes(b.repo.seal_count() - 1).unwrap();
    let mut ws = socket(&n2.url).await;
    hello_as(&mut ws, &n2.url, "acl", Some(&identity(2))).await;
    let m = Message::Push {
        commits: commits[2..].to_vec(),
        seals: vec![seal],
    };
    ws.send(Ws::binary(m.encode())).await.unwrap();
    let (code, text) = expect_error(&mut ws, Duration::from_secs(10)).await;
    assert_eq!(code, ErrorCode::Permission, "{text}");
    assert_eq!(
        assert_gapless(&pg, "acl").await,
        3,
        "nothing of B's push stored"
    );
}

/// Issue 23, leak 2 across nodes: readers subscribed on node 2 when the owner pushes [revoke
/// them all, new data] through node 1 receive nothing of that push (node 2 takes it in through
/// PostgreSQL's NOTIFY and re-checks its subscribers before relaying) and are told `cannot-read`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_revoked_through_another_node_receive_nothing_after_it() {
    let pg = Postgres::start("leak");
    let n1 = Server::node("leak-1", &pg.url, &FAST);
    let n2 = Server::node("leak-2", &pg.url, &FAST);
    let readers: Vec<_> = (0..6u8).map(|i| identity(40 + i)).collect();
    let (rounds, mut leaked, mut told) = (8u8, 0, 0);
    for round in 0..rounds {
        let repo = format!("leak-{round}");
        let mut owner = Peer::new(1, &repo);
        owner.write();
        let mut t = ibexdb::Txn::new();
        for r in &readers {
            let key = format!("_acl/{}", r.public().to_hex());
            t.put(&key, ibexdb::member_value(ibexdb::Role::Reader))
                .unwrap();
        }
        owner.repo.commit(t).unwrap();
        owner.connect(&n1.url).await;
        owner.settle(2).await;
        let mut socks = Vec::new();
        for r in &readers {
            let mut ws = socket(&n2.url).await;
            assert_eq!(hello_as(&mut ws, &n2.url, &repo, Some(r)).await, 2);
            let mut got = 0;
            while got < 2 {
                match recv(&mut ws, Duration::from_secs(10)).await {
                    Some(Message::Commits { commits, .. }) => got += commits.len(),
                    m => panic!("round {round}: catch-up, got {m:?}"),
                }
            }
            socks.push(ws);
        }
        for r in &readers {
            owner.repo.revoke(&r.public()).unwrap();
        }
        owner.write();
        owner.push().await;
        owner.settle(2 + readers.len() + 1).await;
        for ws in &mut socks {
            let (mut commits, mut error) = (0, None);
            loop {
                match recv_or_closed(ws, Duration::from_millis(500)).await {
                    Recv::Message(Message::Commits { commits: c, .. }) => commits += c.len(),
                    Recv::Message(Message::Error { code, kind, .. }) => error = Some((code, kind)),
                    Recv::Message(_) => {}
                    Recv::Idle | Recv::Closed => break,
                }
            }
            leaked += usize::from(commits > 0);
            told += usize::from(error == Some((ErrorCode::Permission, Some("cannot-read".into()))));
        }
    }
    let total = usize::from(rounds) * readers.len();
    assert_eq!(
        leaked, 0,
        "{leaked} of {total} revoked readers on node 2 received commits"
    );
    assert_eq!(
        told, total,
        "every revoked reader on node 2 is told cannot-read"
    );
}

/// One writer on `url` until `stop`: writes, pushes, reads; reconnects when the node closes
/// its connection (an `UnavailableError` while PostgreSQL is down). Counts the
/// `UnavailableError`s it is told.
async fn keep_writing(
    mut p: Peer,
    url: String,
    stop: Arc<AtomicBool>,
    unavailable: Arc<AtomicU64>,
) -> Peer {
    p.connect(&url).await;
    while !stop.load(Relaxed) {
        p.write();
        if p.ws.is_some() && p.client.welcomed() {
            p.push().await;
        }
        loop {
            match p.poll(Duration::from_millis(5)).await {
                Polled::Event(ClientEvent::ServerError { code, .. }) => {
                    if code == ErrorCode::Unavailable {
                        unavailable.fetch_add(1, Relaxed);
                    }
                }
                Polled::Event(_) => continue,
                Polled::Idle => break,
                Polled::Closed => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    p.connect(&url).await;
                    break;
                }
            }
        }
    }
    p
}

/// PostgreSQL is stopped under load and started again: clients are told
/// `UnavailableError`, then resume by themselves; nothing acknowledged is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_stopped_under_load_then_back_loses_nothing_acknowledged() {
    let pg = Postgres::start("outage");
    let args = [
        &FAST[..],
        &["--pg-timeout-ms", "1000", "--repo-retry-ms", "200"],
    ]
    .concat();
    let nodes = [
        Server::node("outage-1", &pg.url, &args),
        Server::node("outage-2", &pg.url, &args),
    ];
    let stop = Arc::new(AtomicBool::new(false));
    let unavailable = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for (i, p) in Peer::team("outage", &[1, 2, 3, 4]).into_iter().enumerate() {
        let url = nodes[i % 2].url.clone();
        tasks.push(tokio::spawn(keep_writing(
            p,
            url,
            stop.clone(),
            unavailable.clone(),
        )));
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let c = pg.client().await;
    let before: i64 = c
        .query_one("SELECT count(*) FROM ibexdb_commits", &[])
        .await
        .unwrap()
        .get(0);
    drop(c);
    tokio::task::block_in_place(|| pg.stop());
    tokio::time::sleep(Duration::from_millis(2000)).await;
    let health = |n: &Server| tokio::task::block_in_place(|| n.http_get("/healthz").0);
    assert!(
        health(&nodes[0]).contains("503"),
        "unhealthy while PostgreSQL is down"
    );
    tokio::task::block_in_place(|| pg.resume());
    let c = pg.client().await;
    let at_resume: i64 = c
        .query_one("SELECT count(*) FROM ibexdb_commits", &[])
        .await
        .unwrap()
        .get(0);
    tokio::time::sleep(Duration::from_millis(3000)).await;
    assert!(health(&nodes[1]).contains("200"), "healthy again");
    let after: i64 = c
        .query_one("SELECT count(*) FROM ibexdb_commits", &[])
        .await
        .unwrap()
        .get(0);
    stop.store(true, Relaxed);
    let mut peers = Vec::new();
    for t in tasks {
        peers.push(t.await.unwrap());
    }
    println!(
        "stored before the stop {before}, at the restart {at_resume}, 3 s later {after}; {} UnavailableErrors",
        unavailable.load(Relaxed)
    );
    assert!(before > 10, "writes went through before the stop");
    assert!(
        unavailable.load(Relaxed) > 0,
        "clients were told UnavailableError"
    );
    assert!(after > at_resume, "writes resumed after the restart");
    let total = peers.iter().map(|p| p.writes as usize).sum::<usize>() + 1;
    assert_acked_stored(&pg, "outage", &peers).await;
    let urls: Vec<String> = nodes.iter().map(|n| n.url.clone()).collect();
    converge(&mut peers, &urls, total, 0).await;
    assert_eq!(assert_gapless(&pg, "outage").await, total);
}

/// A repository closed on a node (idle) leaves its snapshot in PostgreSQL; a node opening it
/// starts from that snapshot and takes in only the rows after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_opens_from_the_snapshot_another_left_in_postgres() {
    let pg = Postgres::start("snap");
    let idle = [&FAST[..], &["--repo-idle-ms", "200"]].concat();
    let a = Server::node("snap-a", &pg.url, &idle);
    let mut p = Peer::new(1, "snap");
    p.repo.set_public(true, false).unwrap();
    for _ in 0..30 {
        p.write();
    }
    p.connect(&a.url).await;
    p.settle(31).await;
    p.disconnect();
    let c = pg.client().await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let rows = c
            .query("SELECT seq FROM ibexdb_snapshots", &[])
            .await
            .unwrap();
        if rows.first().map(|r| r.get::<_, i64>(0)) == Some(31) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no snapshot after the idle close"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Five more through another node, then a third node opens the repository.
    let b = Server::node("snap-b", &pg.url, &FAST);
    for _ in 0..5 {
        p.write();
    }
    p.connect(&b.url).await;
    p.settle(36).await;
    let n3 = Server::node("snap-c", &pg.url, &FAST);
    let mut fresh = Peer::new(9, "snap");
    fresh.catch_up(&n3.url).await;
    assert_eq!(fresh.repo.commit_count(), 36);
    assert_eq!(
        fresh.repo.state_hash().unwrap(),
        p.repo.state_hash().unwrap()
    );
    let log = n3.log_text();
    let open = log
        .lines()
        .find(|l| l.contains("event=repo_open") && l.contains("repo=snap"))
        .unwrap_or_else(|| panic!("no repo_open in\n{log}"));
    assert!(open.contains("from_snapshot=true"), "{open}");
    assert!(open.contains("commits=36"), "{open}");
}

/// The limits hold for relays that come from another node: a reader of node 2 that stops
/// reading is dropped once its queue is full, while writes go through node 1; everyone else
/// gets every commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_reader_of_another_node_is_dropped() {
    let pg = Postgres::start("slow");
    let big = [
        "--queue-bytes",
        "2200000",
        "--queue-messages",
        "64",
        "--push-bytes-rate",
        "1000000000",
        "--push-bytes-burst",
        "1000000000",
        "--push-rate",
        "1000",
    ];
    let n1 = Server::node("slow-1", &pg.url, &big);
    let n2 = Server::node("slow-2", &pg.url, &big);
    let mut team = Peer::team("r", &[1, 2]).into_iter();
    let (mut w, mut reader) = (team.next().unwrap(), team.next().unwrap());
    w.pad = 400_000;
    w.connect(&n1.url).await;
    w.settle(1).await;
    let mut slow = socket(&n2.url).await;
    hello(&mut slow, "r").await; // then it never reads
    reader.connect(&n2.url).await;
    const N: usize = 61; // the founding commit + 60 writes: 24 MB through PostgreSQL
    w.write_past(&mut reader, N - 1).await;
    w.settle(N).await;
    reader.settle(N).await;
    assert_eq!(
        reader.repo.state_hash().unwrap(),
        w.repo.state_hash().unwrap()
    );
    assert!(
        n2.metric("ibexdb_queue_drops_total") >= 1.0,
        "the slow reader was dropped"
    );
    let (code, text) = expect_error(&mut slow, Duration::from_secs(20)).await;
    assert_eq!(code, ErrorCode::Limit);
    assert!(text.contains("queue is full"), "{text}");
}
