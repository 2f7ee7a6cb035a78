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
