//! Every limit of the server provoked over real WebSockets, each refusal asserted by its error
//! code and text, with the stored data unchanged and other clients still served.

mod common;
use common::*;
use futures_util::SinkExt;
use ibexdb::{ErrorCode, Message};
use std::time::{Duration, Instant};
use tokio_tungstenite::tungstenite::Message as Ws;

const WAIT: Duration = Duration::from_secs(10);

/// The server still serves: a new replica of key `n` (the owner, if `repo` holds `before`
/// commits already) reads them, writes, and reads its write back.
async fn still_serves(url: &str, repo: &str, n: u8, before: usize) {
    let mut p = Peer::new(n, repo);
    if before > 0 {
        p.catch_up(url).await;
        assert_eq!(p.repo.commit_count(), before);
        p.write();
        p.push().await;
    } else {
        p.write();
        p.connect(url).await;
    }
    p.settle(before + 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_message_is_refused_with_a_limit_error() {
    let server = Server::fresh_with("size", &["--max-message-bytes", "65536"]);
    public_repo(&server.url, "r", 2).await;
    let mut ws = socket(&server.url).await;
    hello(&mut ws, "r").await;
    let before = server.log_len("r");
    let big = Message::Push {
        commits: vec![(ibexdb::CommitId([1; 32]), vec![0; 100_000])],
        seals: vec![],
    };
    ws.send(Ws::binary(big.encode())).await.unwrap();
    let (code, text) = expect_error(&mut ws, WAIT).await;
    assert_eq!(code, ErrorCode::Limit, "{text}");
    assert!(
        text.starts_with("LimitError") && text.contains("message size"),
        "{text}"
    );
    assert!(text.contains("65536"), "{text}");
    assert!(
        recv(&mut ws, WAIT).await.is_none(),
        "closed after the refusal"
    );
    assert_eq!(server.log_len("r"), before, "nothing stored");
    still_serves(&server.url, "r", 2, 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_are_limited_in_total_and_per_source_address() {
    let args = ["--max-connections", "3", "--max-connections-per-ip", "2"];
    let server = Server::fresh_with("conns", &args);
    drop(public_repo(&server.url, "r", 1).await);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut held = Vec::new();
    for ip in ["127.0.0.1", "127.0.0.1"] {
        let mut ws = try_socket(&server.url, Some(ip)).await.unwrap();
        hello(&mut ws, "r").await;
        held.push(ws);
    }
    let mut third = try_socket(&server.url, Some("127.0.0.1")).await.unwrap();
    let (code, text) = expect_error(&mut third, WAIT).await;
    assert_eq!(code, ErrorCode::Limit);
    assert!(
        text.contains("connections per ip") && text.contains("--max-connections-per-ip"),
        "{text}"
    );
    let mut other = try_socket(&server.url, Some("127.0.0.2")).await.unwrap();
    hello(&mut other, "r").await;
    let mut fourth = try_socket(&server.url, Some("127.0.0.3")).await.unwrap();
    let (code, text) = expect_error(&mut fourth, WAIT).await;
    assert_eq!(code, ErrorCode::Limit);
    assert!(
        text.contains("maximum of 3 connections") && text.contains("--max-connections"),
        "{text}"
    );
    // A place freed is a place for the next one.
    drop(held.pop());
    tokio::time::sleep(Duration::from_millis(300)).await;
    still_serves(&server.url, "r", 1, 1).await;
    assert!(server.log_text().contains("what=\"connections per ip\""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_pushes_is_refused_past_the_push_budget() {
    let args = ["--push-rate", "2", "--push-burst", "3"];
    let server = Server::fresh_with("rate", &args);
    // Founded by another key from another address (a founding push takes from its address's
    // budget), open to anyone's writes; peer 1 holds its history.
    let mut owner = Peer::new(3, "r");
    owner.repo.set_public(true, true).unwrap();
    owner.connect_from(&server.url, "127.0.0.3").await;
    owner.settle(1).await;
    let (root, root_seals) = owner.repo.export().unwrap();
    drop(owner);
    let mut a = Peer::new(1, "r");
    a.repo.receive(&root, &root_seals).unwrap();
    a.write();
    a.repo.seal().unwrap();
    let (commits, seals) = a.repo.export().unwrap();
    let mut ws = socket(&server.url).await;
    hello_as(&mut ws, &server.url, "r", Some(&identity(1))).await;
    let empty = Message::Push {
        commits: vec![],
        seals: vec![],
    };
    for _ in 0..3 {
        send(&mut ws, &empty).await;
    }
    let real = Message::Push {
        commits: commits.clone(),
        seals,
    };
    send(&mut ws, &real).await;
    let mut acks = 0;
    let (code, text) = loop {
        match recv(&mut ws, WAIT).await {
            Some(Message::Ack { .. }) => acks += 1,
            Some(Message::Commits { .. }) => {} // the founder's root
            Some(Message::Error {
                code,
                name,
                message,
                ..
            }) => break (code, format!("{name}: {message}")),
            m => panic!("unexpected {m:?}"),
        }
    };
    assert_eq!(acks, 3, "the burst is served");
    assert_eq!(code, ErrorCode::Limit);
    assert!(
        text.contains("push rate") && text.contains("nothing of this push was stored"),
        "{text}"
    );
    let before = server.log_len("r");
    assert_eq!(
        server.metric("ibexdb_commits_stored_total"),
        1.0,
        "the founding commit only"
    );
    // The connection stays usable: once the budget refilled, the same push is stored.
    tokio::time::sleep(Duration::from_millis(600)).await;
    send(&mut ws, &real).await;
    match recv(&mut ws, WAIT).await {
        Some(Message::Ack { ids }) => assert_eq!(ids, vec![commits[0].0, commits[1].0]),
        m => panic!("expected an Ack, got {m:?}"),
    }
    assert!(server.log_len("r") > before);
    // The budget is the address's, not the connection's: a new connection from it waits too.
    tokio::time::sleep(Duration::from_millis(600)).await;
    still_serves(&server.url, "r", 1, 2).await;
}

/// A subscriber that stops reading is dropped once its queue is full; the server's memory
/// stays bounded and everyone else gets every commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_reader_is_dropped_and_memory_stays_bounded() {
    let args = [
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
    let server = Server::fresh_with("slow", &args);
    let mut team = Peer::team("r", &[1, 2]).into_iter();
    let (mut w, mut reader) = (team.next().unwrap(), team.next().unwrap());
    w.pad = 400_000;
    w.connect(&server.url).await;
    w.settle(1).await; // the founding commit: anyone may read
    let mut slow = socket(&server.url).await;
    hello(&mut slow, "r").await; // then it never reads
    reader.connect(&server.url).await;
    const N: usize = 101; // the founding commit + 100 writes: 40 MB through the server
    w.write_past(&mut reader, N - 1).await;
    w.settle(N).await;
    reader.settle(N).await;
    assert_eq!(
        reader.repo.state_hash().unwrap(),
        w.repo.state_hash().unwrap()
    );
    assert!(
        server.metric("ibexdb_queue_drops_total") >= 1.0,
        "the slow reader was dropped"
    );
    let rss = server.rss();
    assert!(
        rss < 150 << 20,
        "server RSS {} MiB with a slow reader",
        rss >> 20
    );
    // The slow reader, reading at last, finds the refusal at the end of what it was sent.
    let (code, text) = expect_error(&mut slow, WAIT).await;
    assert_eq!(code, ErrorCode::Limit);
    assert!(
        text.contains("queue is full") && text.contains("--queue-bytes"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orphan_commits_and_junk_seals_are_capped() {
    let founder = Server::fresh("pending");
    let mut a = Peer::new(1, "r");
    a.write();
    a.connect(&founder.url).await;
    a.settle(1).await; // founded by its root
    a.disconnect();
    for _ in 0..4 {
        a.write();
    }
    a.repo.seal().unwrap();
    let (c, s) = a.repo.export().unwrap();
    // Room for two of the three orphans' bytes (the server restarted on the founded data).
    let parked: usize = c[2..4].iter().map(|(_, b)| b.len()).sum();
    let parked = parked.to_string();
    let data = founder.data.clone();
    drop(founder);
    let args = ["--max-parked-bytes", &parked, "--max-unknown-sealed", "3"];
    let server = Server::start_with(data, &args);
    let mut ws = socket(&server.url).await;
    hello_as(&mut ws, &server.url, "r", Some(&identity(1))).await;
    let before = server.log_len("r");
    // Junk seals: a seal over four ids the server does not have.
    send(
        &mut ws,
        &Message::Push {
            commits: vec![],
            seals: s.clone(),
        },
    )
    .await;
    let (code, text) = expect_error(&mut ws, WAIT).await;
    assert_eq!(code, ErrorCode::Limit);
    assert!(
        text.contains("sealed unknown commits") && text.contains("at most 3"),
        "{text}"
    );
    // Orphans: three commits whose first parent never comes.
    send(
        &mut ws,
        &Message::Push {
            commits: c[2..].to_vec(),
            seals: s.clone(),
        },
    )
    .await;
    let (code, text) = expect_error(&mut ws, WAIT).await;
    assert_eq!(code, ErrorCode::Limit);
    assert!(
        text.contains("parked bytes") && text.contains(&format!("at most {parked}")),
        "{text}"
    );
    assert_eq!(server.log_len("r"), before, "nothing stored");
    // The whole history in order is stored, on the same connection.
    send(
        &mut ws,
        &Message::Push {
            commits: c.clone(),
            seals: s,
        },
    )
    .await;
    match recv(&mut ws, WAIT).await {
        Some(Message::Ack { ids }) => assert_eq!(ids.len(), 5),
        m => panic!("expected an Ack, got {m:?}"),
    }
    let refused = server.metric("ibexdb_commits_refused_total{code=\"10\"");
    assert_eq!(
        refused, 3.0,
        "the orphans' commits counted as refused by code 10"
    );
    still_serves(&server.url, "r", 1, 5).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_connections_time_out_and_live_ones_do_not() {
    let args = ["--idle-timeout-ms", "1000", "--handshake-timeout-ms", "500"];
    let server = Server::fresh_with("timeouts", &args);
    // Handshake timeout: a WebSocket that never says Hello.
    let mut mute = socket(&server.url).await;
    let (code, text) = expect_error(&mut mute, WAIT).await;
    assert_eq!(code, ErrorCode::Limit);
    assert!(
        text.contains("handshake timeout") && text.contains("500 ms"),
        "{text}"
    );
    // A TCP connection that never sends a byte is closed.
    let mut raw = tokio::net::TcpStream::connect(&server.addr).await.unwrap();
    let t = Instant::now();
    let mut buf = [0u8; 16];
    let n = tokio::time::timeout(WAIT, tokio::io::AsyncReadExt::read(&mut raw, &mut buf))
        .await
        .expect("closed by the server");
    assert!(matches!(n, Ok(0) | Err(_)));
    assert!(t.elapsed() < Duration::from_secs(3));
    // Idle: one client reads (and so answers pings), the other does not.
    let mut live = public_repo(&server.url, "r", 1).await;
    let mut idle = socket(&server.url).await;
    hello(&mut idle, "r").await;
    let until = Instant::now() + Duration::from_millis(2500);
    while Instant::now() < until {
        live.step(Duration::from_millis(50)).await;
    }
    let (code, text) = expect_error(&mut idle, WAIT).await;
    assert_eq!(code, ErrorCode::Limit);
    assert!(
        text.contains("idle timeout") && text.contains("--idle-timeout-ms"),
        "{text}"
    );
    live.write();
    live.push().await;
    live.settle(2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_repositories_are_capped_and_idle_ones_closed_and_reopened() {
    let args = ["--max-repos", "2", "--repo-idle-ms", "300"];
    let server = Server::fresh_with("repos", &args);
    let mut a = Peer::new(1, "one");
    a.write();
    a.connect(&server.url).await;
    a.settle(1).await;
    let mut b = Peer::new(2, "two");
    b.write();
    b.connect(&server.url).await;
    b.settle(1).await;
    // A third founder's root verifies, but no repository may be opened for it.
    let mut c = Peer::new(3, "three");
    c.write();
    c.connect(&server.url).await;
    let (code, text) = loop {
        match c.poll(WAIT).await {
            Polled::Event(ibexdb::ClientEvent::ServerError {
                code,
                name,
                message,
                ..
            }) => break (code, format!("{name}: {message}")),
            Polled::Event(_) => continue,
            _ => panic!("no refusal for a third repository"),
        }
    };
    drop(c);
    assert!(
        !server.data.join("three.log").exists(),
        "nothing stored for it"
    );
    assert_eq!(code, ErrorCode::Limit);
    assert!(
        text.contains("open repositories") && text.contains("--max-repos"),
        "{text}"
    );
    // Once "one" is idle it makes room for "three" (least recently used), without waiting.
    a.disconnect();
    tokio::time::sleep(Duration::from_millis(100)).await;
    still_serves(&server.url, "three", 3, 0).await;
    // "one" reopens transparently from disk (evicting whichever is idle).
    drop(b);
    let mut again = Peer::new(1, "one"); // the owner, on a new device
    again.catch_up(&server.url).await;
    assert_eq!(
        again.repo.state_hash().unwrap(),
        a.repo.state_hash().unwrap()
    );
    drop(again);
    // Idle repositories are closed after --repo-idle-ms, their snapshots written.
    let deadline = Instant::now() + WAIT;
    while server.metric("ibexdb_repositories_open") > 0.0 {
        assert!(Instant::now() < deadline, "idle repositories stay open");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let snap = std::fs::metadata(server.data.join("one.snapshot")).unwrap();
    assert!(snap.len() > 0, "snapshot written on close");
    assert!(server.log_text().contains("event=repo_close repo=one"));
}

/// Out of file descriptors, the accept loop backs off (no hot loop) and serves again once
/// descriptors are free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_errors_back_off_and_the_server_recovers() {
    let server = Server::start_with_fds(Server::dir("emfile"), 48, &[]);
    let mut held = Vec::new();
    for _ in 0..60 {
        let open = tokio::time::timeout(Duration::from_millis(300), try_socket(&server.url, None));
        match open.await {
            Ok(Some(ws)) => held.push(ws),
            _ => break,
        }
    }
    assert!(held.len() >= 10 && held.len() < 60, "held {}", held.len());
    tokio::time::sleep(Duration::from_millis(500)).await;
    let errors = server.log_text().matches("event=accept_error").count();
    assert!(
        (1..100).contains(&errors),
        "{errors} accept errors logged in 0.5 s"
    );
    drop(held);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    still_serves(&server.url, "r", 1, 0).await;
}
