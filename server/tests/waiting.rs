//! A joining device learns its grant live (issue 22 §3): a session that may not read yet is
//! told `cannot-read` at once and kept waiting (bounded per repository and per address); the
//! owner's grant welcomes it and its catch-up follows within a second.

mod common;
use common::*;
use ibexdb::{ClientEvent, ErrorCode, Message, Role};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(10);

/// Connect peer `p` (no commits: it cannot found) and read until its `cannot-read` refusal.
async fn refused_and_kept(p: &mut Peer, url: &str, ip: &str) {
    p.connect_from(url, ip).await;
    loop {
        match p.poll(WAIT).await {
            Polled::Event(ClientEvent::ServerError { code, kind, .. }) => {
                assert_eq!(code, ErrorCode::Permission);
                assert_eq!(kind.as_deref(), Some("cannot-read"));
                break;
            }
            Polled::Event(_) => continue,
            _ => panic!("peer {}: no refusal", p.n),
        }
    }
}

/// Whether the connection is still open after `quiet` of silence.
async fn still_open(p: &mut Peer, quiet: Duration) -> bool {
    match p.poll(quiet).await {
        Polled::Idle => true,
        Polled::Closed => false,
        Polled::Event(e) => panic!("peer {}: unexpected {e:?}", p.n),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_joiner_gets_its_data_within_a_second_of_the_grant() {
    let server = Server::fresh("wait");
    let url = server.url.clone();
    let mut owner = Peer::new(1, "team");
    owner.write();
    owner.connect(&url).await;
    owner.settle(1).await;
    let mut times = Vec::new();
    for round in 0..8u8 {
        let n = 10 + round;
        let mut joiner = Peer::new(n, "team");
        refused_and_kept(&mut joiner, &url, "127.0.0.1").await;
        assert!(still_open(&mut joiner, Duration::from_millis(300)).await);
        assert_eq!(joiner.repo.commit_count(), 0);
        let t = Instant::now();
        owner
            .repo
            .grant(&identity(n).public(), Role::Reader)
            .unwrap();
        owner.push().await;
        let total = owner.repo.commit_count();
        while joiner.repo.commit_count() < total {
            assert!(t.elapsed() < WAIT, "round {round}: no data after the grant");
            match joiner.poll(WAIT).await {
                Polled::Event(ClientEvent::ServerError { message, .. }) => panic!("{message}"),
                Polled::Event(_) => {}
                _ => panic!("round {round}: closed while waiting"),
            }
        }
        times.push(t.elapsed());
        owner.settle(total).await;
    }
    times.sort();
    println!(
        "grant -> joiner has the data: median {:?}, max {:?} ({} rounds)",
        times[times.len() / 2],
        times[times.len() - 1],
        times.len()
    );
    assert!(times[times.len() - 1] < Duration::from_secs(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_is_bounded_per_repository_and_per_address() {
    let args = ["--max-waiting-per-repo", "2", "--max-waiting-per-ip", "3"];
    let server = Server::fresh_with("waitcap", &args);
    let url = server.url.clone();
    for repo in ["a", "b"] {
        let mut owner = Peer::new(1, repo);
        owner.write();
        owner.connect(&url).await;
        owner.settle(1).await;
    }
    let quiet = Duration::from_millis(300);
    let mut a: Vec<Peer> = (0..3).map(|i| Peer::new(20 + i, "a")).collect();
    for p in a.iter_mut() {
        refused_and_kept(p, &url, "127.0.0.1").await;
    }
    let open: Vec<bool> =
        futures_util::future::join_all(a.iter_mut().map(|p| still_open(p, quiet))).await;
    assert_eq!(open, [true, true, false], "two wait in a repository");
    let mut b: Vec<Peer> = (0..2).map(|i| Peer::new(30 + i, "b")).collect();
    for p in b.iter_mut() {
        refused_and_kept(p, &url, "127.0.0.1").await;
    }
    let open: Vec<bool> =
        futures_util::future::join_all(b.iter_mut().map(|p| still_open(p, quiet))).await;
    assert_eq!(open, [true, false], "three wait per address");
    // Another address still may wait.
    let mut other = Peer::new(40, "b");
    refused_and_kept(&mut other, &url, "127.0.0.2").await;
    assert!(still_open(&mut other, quiet).await);
    // A waiting session that pushes is refused (cannot-write) and closed.
    let ws = a[0].ws.as_mut().unwrap();
    let push = Message::Push {
        commits: vec![],
        seals: vec![],
    };
    send(ws, &push).await;
    let (code, text) = expect_error(ws, WAIT).await;
    assert_eq!(code, ErrorCode::Permission);
    assert!(text.contains("cannot-write"), "{text}");
}

/// An anonymous stranger from `ip` asking to read private repository `repo`: refused
/// (`cannot-read`) and kept waiting; its socket.
async fn squat(url: &str, ip: &str, repo: &str) -> Socket {
    let mut ws = try_socket(url, Some(ip)).await.expect("connect");
    challenge(&mut ws).await;
    let hello = Message::Hello {
        repo: repo.into(),
        cursor: 0,
        auth: None,
        create: false,
    };
    send(&mut ws, &hello).await;
    let (code, text) = expect_error(&mut ws, WAIT).await;
    assert_eq!(code, ErrorCode::Permission, "{text}");
    assert!(text.contains("cannot-read"), "{text}");
    ws
}

/// Which of `socks` were told they lost their waiting place (`LimitError`, closed): they are
/// taken out.
async fn displaced(server: &Server, socks: &mut [Option<Socket>]) -> Vec<usize> {
    let mut out = Vec::new();
    for (i, slot) in socks.iter_mut().enumerate() {
        let Some(ws) = slot.as_mut() else { continue };
        match recv_or_closed(ws, Duration::from_millis(20)).await {
            Recv::Message(Message::Error { code, message, .. }) => {
                assert_eq!(code, ErrorCode::Limit, "{message}");
                assert!(message.contains("waiting places"), "{message}");
                assert!(matches!(recv_or_closed(ws, WAIT).await, Recv::Closed));
                *slot = None;
                out.push(i);
            }
            Recv::Idle => {}
            Recv::Message(m) => panic!("squatter {i}: unexpected {m:?}"),
            Recv::Closed => panic!("squatter {i}: closed untold:\n{}", server.log_text()),
        }
    }
    out
}

/// Issue 23 (squatting): strangers from 8 addresses fill every waiting place of a private
/// repository (64 = 8 × 8, the defaults). An invitee from another address still waits: it takes
/// the place of the longest-waiting stranger of an address holding the most (told `LimitError`
/// `waiting places`, closed), and gets its data once granted. A squatter from an address
/// already holding places cannot take the invitee's; one from yet another address takes a
/// stranger's, not the invitee's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn squatters_from_many_addresses_cannot_keep_an_invitee_from_waiting() {
    let server = Server::fresh("squat");
    let url = server.url.clone();
    let mut owner = Peer::new(1, "private");
    owner.write();
    owner.connect(&url).await;
    owner.settle(1).await;
    let mut squatters = Vec::new();
    for a in 2..10 {
        for _ in 0..8 {
            squatters.push(Some(squat(&url, &format!("127.0.0.{a}"), "private").await));
        }
    }
    assert!(
        displaced(&server, &mut squatters).await.is_empty(),
        "64 places held"
    );
    // Full: a ninth stranger from a held address is refused and closed.
    let mut more = try_socket(&url, Some("127.0.0.2")).await.unwrap();
    challenge(&mut more).await;
    let hello = Message::Hello {
        repo: "private".into(),
        cursor: 0,
        auth: None,
        create: false,
    };
    send(&mut more, &hello).await;
    let (code, _) = expect_error(&mut more, WAIT).await;
    assert_eq!(code, ErrorCode::Permission);
    assert!(matches!(
        recv_or_closed(&mut more, WAIT).await,
        Recv::Closed
    ));

    let mut invitee = Peer::new(50, "private");
    refused_and_kept(&mut invitee, &url, "127.0.0.20").await;
    assert!(still_open(&mut invitee, Duration::from_millis(300)).await);
    let gone = displaced(&server, &mut squatters).await;
    assert_eq!(
        gone,
        [0],
        "the longest-waiting stranger of an address holding 8"
    );
    // 127.0.0.2 now holds 7, the invitee's address 1: a stranger from 127.0.0.2 gets no place.
    let mut again = try_socket(&url, Some("127.0.0.2")).await.unwrap();
    challenge(&mut again).await;
    send(&mut again, &hello).await;
    expect_error(&mut again, WAIT).await;
    assert!(matches!(
        recv_or_closed(&mut again, WAIT).await,
        Recv::Closed
    ));
    // A stranger from a new address takes a place from an address holding 8, not the invitee's.
    let _late = squat(&url, "127.0.0.21", "private").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(displaced(&server, &mut squatters).await, [8]);
    assert!(still_open(&mut invitee, Duration::from_millis(300)).await);

    owner
        .repo
        .grant(&identity(50).public(), Role::Reader)
        .unwrap();
    owner.push().await;
    let total = owner.repo.commit_count();
    let t = Instant::now();
    while invitee.repo.commit_count() < total {
        assert!(t.elapsed() < WAIT, "no data after the grant");
        match invitee.poll(WAIT).await {
            Polled::Event(ClientEvent::ServerError { message, .. }) => panic!("{message}"),
            Polled::Event(_) => {}
            _ => panic!("the invitee was closed while waiting"),
        }
    }
    assert_eq!(
        server.metric("ibexdb_refusals_total{what=\"waiting places\"}"),
        2.0
    );
}

/// A session waits at most `--max-waiting-ms`: then it is told `LimitError` (`waiting time`)
/// and closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_waits_at_most_the_longest_waiting_time() {
    let server = Server::fresh_with("waitlong", &["--max-waiting-ms", "700"]);
    let url = server.url.clone();
    let mut owner = Peer::new(1, "private");
    owner.write();
    owner.connect(&url).await;
    owner.settle(1).await;
    let t = Instant::now();
    let mut ws = squat(&url, "127.0.0.1", "private").await;
    let (code, text) = expect_error(&mut ws, WAIT).await;
    let waited = t.elapsed();
    assert_eq!(code, ErrorCode::Limit, "{text}");
    assert!(text.contains("waiting time"), "{text}");
    assert!(matches!(recv_or_closed(&mut ws, WAIT).await, Recv::Closed));
    assert!(
        waited >= Duration::from_millis(700) && waited < Duration::from_secs(3),
        "{waited:?}"
    );
}
