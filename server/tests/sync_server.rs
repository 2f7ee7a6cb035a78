//! The real `ibexdb-server` binary over real WebSockets on 127.0.0.1, with clients that each
//! hold an in-memory signed core `Repo` and the core's sync `Client`.

mod common;
use common::*;
use futures_util::SinkExt;
use ibexdb::{Client, ErrorCode, Message, PROTOCOL_VERSION};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message as Ws;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_clients_write_concurrently_and_converge() {
    let server = Server::fresh("converge");
    let url = server.url.clone();
    let mut tasks = Vec::new();
    const N: u64 = 40;
    // Peer 1 founds the repository (one commit) and lets the others write.
    const TOTAL: usize = 3 * N as usize + 1;
    for mut p in Peer::team("team", &[1, 2, 3]) {
        let url = url.clone();
        tasks.push(tokio::spawn(async move {
            p.connect(&url).await;
            for _ in 0..N {
                p.write();
                if p.client.welcomed() {
                    p.push().await;
                }
                while p.step(Duration::from_millis(1)).await {}
            }
            p.settle(TOTAL).await;
            p
        }));
    }
    let mut peers = Vec::new();
    for t in tasks {
        peers.push(t.await.unwrap());
    }
    let h = peers[0].repo.state_hash().unwrap();
    for p in peers.iter_mut() {
        assert_eq!(p.repo.state_hash().unwrap(), h, "peer {} differs", p.n);
        assert_eq!(p.repo.commit_count(), TOTAL);
    }
    // A newcomer (anyone may read) gets the same state from the server alone.
    let mut late = Peer::new(9, "team");
    late.connect(&url).await;
    late.settle(TOTAL).await;
    assert_eq!(late.repo.state_hash().unwrap(), h);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnect_with_cursor_gets_only_what_was_missed() {
    let server = Server::fresh("resume");
    let mut team = Peer::team("r", &[1, 2]).into_iter();
    let (mut a, mut b) = (team.next().unwrap(), team.next().unwrap());
    for _ in 0..10 {
        a.write();
    }
    a.connect(&server.url).await;
    a.settle(11).await;
    b.connect(&server.url).await;
    b.settle(11).await;
    assert_eq!(b.received, 11);
    a.disconnect();
    let cursor = a.client.cursor();
    assert_eq!(cursor, 11);
    for _ in 0..5 {
        b.write();
    }
    b.push().await;
    b.settle(16).await;
    a.received = 0;
    a.connect(&server.url).await;
    a.settle(16).await;
    assert_eq!(a.received, 5, "only the 5 missed commits are resent");
    assert_eq!(a.repo.state_hash().unwrap(), b.repo.state_hash().unwrap());
    // While both are connected, a write reaches the other one live.
    a.write();
    a.push().await;
    a.settle(17).await;
    b.settle(17).await;
    assert_eq!(a.repo.state_hash().unwrap(), b.repo.state_hash().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tampered_or_unsigned_push_is_refused_nothing_stored_connection_usable() {
    let server = Server::fresh("tamper");
    let mut a = Peer::new(1, "r");
    a.write();
    a.repo.seal().unwrap();
    let (commits, seals) = a.repo.export().unwrap();
    let mut tampered = commits.clone();
    let last = tampered[0].1.len() - 1;
    tampered[0].1[last] ^= 0x01;
    // A founding push that does not verify creates nothing: no file, and the session ends.
    let bad = [
        (tampered, seals.clone(), None),
        (commits.clone(), vec![], Some("missing")),
    ];
    for (bad, bad_seals, kind_wanted) in bad {
        let mut ws = socket(&server.url).await;
        assert_eq!(
            hello_as(&mut ws, &server.url, "r", Some(&identity(1))).await,
            0
        );
        let m = Message::Push {
            commits: bad,
            seals: bad_seals,
        };
        send(&mut ws, &m).await;
        match recv(&mut ws, Duration::from_secs(5)).await {
            Some(Message::Error {
                code, name, kind, ..
            }) => {
                assert!(
                    matches!(code, ErrorCode::Signature | ErrorCode::Decode),
                    "{code:?}"
                );
                assert!(name.ends_with("Error"), "{name}");
                if let Some(k) = kind_wanted {
                    assert_eq!(kind.as_deref(), Some(k));
                }
            }
            m => panic!("expected an Error, got {m:?}"),
        }
        assert!(recv(&mut ws, Duration::from_secs(5)).await.is_none());
        assert!(
            !server.data.join("r.log").exists(),
            "no file for a refused founding"
        );
    }
    // The genuine push founds it.
    let mut ws = socket(&server.url).await;
    hello_as(&mut ws, &server.url, "r", Some(&identity(1))).await;
    send(
        &mut ws,
        &Message::Push {
            commits: commits.clone(),
            seals,
        },
    )
    .await;
    match recv(&mut ws, Duration::from_secs(5)).await {
        Some(Message::Ack { ids }) => assert_eq!(ids, vec![commits[0].0]),
        m => panic!("expected an Ack, got {m:?}"),
    }
    let before = server.log_len("r");
    assert!(before > 0);
    // In an existing repository a refused push leaves the connection usable.
    a.write();
    a.repo.seal().unwrap();
    let (all, all_seals) = a.repo.export().unwrap();
    let next = vec![all[1].clone()];
    let unsealed = Message::Push {
        commits: next.clone(),
        seals: vec![],
    };
    send(&mut ws, &unsealed).await;
    let answer = loop {
        match recv(&mut ws, Duration::from_secs(5)).await {
            Some(Message::Commits { .. }) => continue, // the cursor after the founding
            m => break m,
        }
    };
    match answer {
        Some(Message::Error {
            code: ErrorCode::Signature,
            name,
            kind,
            message,
        }) => {
            assert!(message.contains("Missing"), "{message}");
            assert_eq!(
                (name.as_str(), kind.as_deref()),
                ("SignatureError", Some("missing"))
            );
        }
        m => panic!("expected a SignatureError, got {m:?}"),
    }
    assert_eq!(server.log_len("r"), before, "nothing stored");
    let sealed = Message::Push {
        commits: next.clone(),
        seals: all_seals,
    };
    send(&mut ws, &sealed).await;
    loop {
        match recv(&mut ws, Duration::from_secs(5)).await {
            Some(Message::Ack { ids }) => {
                assert_eq!(ids, vec![next[0].0]);
                break;
            }
            Some(Message::Commits { .. }) => continue,
            m => panic!("expected an Ack, got {m:?}"),
        }
    }
    assert!(server.log_len("r") > before);
    // Someone else may not read A's repository.
    let mut b = Peer::new(2, "r");
    b.connect(&server.url).await;
    loop {
        match b.event(Duration::from_secs(5)).await {
            Some(ibexdb::ClientEvent::ServerError {
                code,
                name,
                kind,
                message,
            }) => {
                assert_eq!(code, ErrorCode::Permission, "{message}");
                assert_eq!(
                    (name.as_str(), kind.as_deref()),
                    ("PermissionError", Some("cannot-read"))
                );
                break;
            }
            Some(_) => continue,
            None => panic!("no PermissionError for a stranger"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_messages_get_a_protocol_error_and_the_connection_closes() {
    let server = Server::fresh("protocol");
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (vec![PROTOCOL_VERSION, 99], "UnknownType"),
        (vec![1, 1, 1, b'r', 0], "Version"),
        (vec![7, 1, 1, b'r', 0], "Version"),
        (
            [
                Message::Hello {
                    repo: "r".into(),
                    cursor: 0,
                    auth: None,
                    create: false,
                }
                .encode(),
                vec![0],
            ]
            .concat(),
            "TrailingBytes",
        ),
        (vec![PROTOCOL_VERSION, 3, 5], "Malformed"),
        (Message::Ack { ids: vec![] }.encode(), "Unexpected"),
        (
            Message::Push {
                commits: vec![],
                seals: vec![],
            }
            .encode(),
            "Push before Hello",
        ),
    ];
    for (bytes, expect) in cases {
        let mut ws = socket(&server.url).await;
        challenge(&mut ws).await;
        ws.send(Ws::binary(bytes)).await.unwrap();
        match recv(&mut ws, Duration::from_secs(5)).await {
            Some(Message::Error {
                code: ErrorCode::Protocol,
                name,
                message,
                ..
            }) => {
                assert_eq!(name, "ProtocolError", "{message}");
                assert!(
                    message.contains(expect),
                    "{message} should mention {expect}"
                );
            }
            m => panic!("expected a protocol Error for {expect}, got {m:?}"),
        }
        assert!(
            recv(&mut ws, Duration::from_secs(5)).await.is_none(),
            "closed after {expect}"
        );
    }
    // Text frames are refused too.
    let mut ws = socket(&server.url).await;
    challenge(&mut ws).await;
    ws.send(Ws::text("hello")).await.unwrap();
    assert!(matches!(
        recv(&mut ws, Duration::from_secs(5)).await,
        Some(Message::Error {
            code: ErrorCode::Protocol,
            ..
        })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_keeps_everything_acked() {
    let mut server = Server::fresh("restart");
    let mut a = Peer::new(1, "durable");
    for _ in 0..20 {
        a.write();
    }
    a.repo.set_public(true, false).unwrap();
    a.connect(&server.url).await;
    a.settle(21).await; // every commit acked
    server.kill(); // SIGKILL: no clean shutdown
    let server = Server::start(server.data.clone());
    let mut b = Peer::new(2, "durable");
    b.connect(&server.url).await;
    b.settle(21).await;
    assert_eq!(b.repo.state_hash().unwrap(), a.repo.state_hash().unwrap());
    // The old client resumes against the restarted server with its cursor.
    a.write();
    a.connect(&server.url).await;
    a.settle(22).await;
    b.settle(22).await;
    assert_eq!(b.repo.state_hash().unwrap(), a.repo.state_hash().unwrap());
}

/// Several clients push concurrently; the server is killed with SIGKILL in the middle. After a
/// restart every commit any client saw acknowledged is on the server, and every client
/// converges once it reconnects and re-pushes what was not acknowledged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_concurrent_pushes_loses_nothing_acked() {
    let fast = ["--push-rate", "100000", "--push-burst", "100000"];
    let mut server = Server::fresh_with("kill9", &fast);
    let url = server.url.clone();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut tasks = Vec::new();
    for mut p in Peer::team("crash", &[1, 2, 3, 4]) {
        let (url, stop) = (url.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            p.connect(&url).await;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                p.write();
                if p.client.welcomed() {
                    p.push().await;
                }
                while p.event(Duration::from_millis(2)).await.is_some() {}
            }
            p
        }));
    }
    tokio::time::sleep(Duration::from_millis(2000)).await;
    server.kill(); // SIGKILL while pushes are in flight
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut peers = Vec::new();
    for t in tasks {
        peers.push(t.await.unwrap());
    }
    let acked: usize = peers.iter().map(|p| p.acked.len()).sum();
    assert!(
        acked > 20,
        "only {acked} commits were acknowledged before the kill"
    );
    let server = server.restart();
    let mut fresh = Peer::new(9, "crash");
    fresh.catch_up(&server.url).await;
    for p in &peers {
        for id in &p.acked {
            assert!(
                fresh.repo.has_commit(id),
                "acknowledged commit {} lost",
                id.to_hex()
            );
        }
    }
    let total: u64 = peers.iter().map(|p| p.writes).sum::<u64>() + 1; // + the founding commit
    for p in peers.iter_mut() {
        p.connect(&server.url).await;
    }
    for p in peers.iter_mut() {
        let deadline = Instant::now() + Duration::from_secs(60);
        while p.client.push_from() < p.repo.commit_count() || !p.client.welcomed() {
            assert!(Instant::now() < deadline, "peer {} did not re-push", p.n);
            p.step(Duration::from_millis(100)).await;
        }
    }
    for p in peers.iter_mut() {
        p.settle(total as usize).await;
    }
    let h = peers[0].repo.state_hash().unwrap();
    for p in peers.iter_mut() {
        assert_eq!(p.repo.state_hash().unwrap(), h, "peer {} differs", p.n);
    }
}

/// Peers write, go offline, come back with their cursor (or with none, as after losing their
/// sync state), in an order drawn from a seed; at the end all converge. Set
/// `IBEXDB_SIM_SEED` to replay a run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seeded_multi_peer_simulation() {
    let seed = seed("seeded_multi_peer_simulation");
    let mut rng = Rng(seed);
    let server = Server::fresh("sim");
    let mut peers = Peer::team("sim", &[1, 2, 3, 4]);
    for _ in 0..120 {
        let p = &mut peers[rng.below(4) as usize];
        match rng.below(10) {
            0..=4 => {
                p.write();
                if p.ws.is_some() && p.client.welcomed() {
                    p.push().await;
                }
            }
            5 => p.disconnect(),
            6 if p.ws.is_none() => {
                if rng.below(4) == 0 {
                    // Lost its sync state: starts over from cursor 0 (duplicates only).
                    p.client = Client::new("sim", &server.url, 0, 0).unwrap();
                }
                p.connect(&server.url).await;
            }
            _ => {
                if p.ws.is_some() {
                    while p.step(Duration::from_millis(2)).await {}
                }
            }
        }
    }
    let total: u64 = peers.iter().map(|p| p.writes).sum::<u64>() + 1; // + the founding commit
    for p in peers.iter_mut() {
        if p.ws.is_none() {
            p.connect(&server.url).await;
        }
    }
    // Everyone pushes, then everyone catches up.
    for _ in 0..2 {
        for p in peers.iter_mut() {
            let deadline = Instant::now() + Duration::from_secs(30);
            while p.client.push_from() < p.repo.commit_count() || !p.client.welcomed() {
                assert!(Instant::now() < deadline, "seed {seed}: peer {} stuck", p.n);
                p.step(Duration::from_millis(100)).await;
            }
        }
    }
    for p in peers.iter_mut() {
        p.settle(total as usize).await;
    }
    assert_converged(&mut peers, seed);
}
