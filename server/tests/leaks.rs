//! Relays against read rights (issue 23, leaks 1 and 2), from outside over real WebSockets:
//! nothing is queued to a session before its read right was checked against the access list
//! that includes the commits being relayed.

mod common;
use common::*;
use futures_util::future::join_all;
use ibexdb::{ClientEvent, ErrorCode, Identity, Message, Txn};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);

/// What a watcher saw: commits received, and the error it was told (if any).
#[derive(Default, Debug)]
struct Seen {
    commits: usize,
    error: Option<(ErrorCode, Option<String>)>,
}

/// Read until the socket closes or is silent for `quiet`.
async fn drain(ws: &mut Socket, quiet: Duration, seen: &mut Seen) {
    loop {
        match recv_or_closed(ws, quiet).await {
            Recv::Message(Message::Commits { commits, .. }) => seen.commits += commits.len(),
            Recv::Message(Message::Error { code, kind, .. }) => seen.error = Some((code, kind)),
            Recv::Message(_) => {}
            Recv::Idle | Recv::Closed => return,
        }
    }
}

/// A watcher's `Hello` for `repo` (signed by `who`, or anonymous), and the first answer.
async fn watch(url: &str, repo: &str, who: Option<Identity>) -> (Socket, Seen) {
    let mut ws = socket(url).await;
    let nonce = challenge(&mut ws).await;
    let auth = who
        .as_ref()
        .map(|id| ibexdb::SessionProof::sign(id, nonce, url, repo));
    let m = Message::Hello {
        repo: repo.into(),
        cursor: 0,
        auth,
        create: false,
    };
    send(&mut ws, &m).await;
    let mut seen = Seen::default();
    match recv_or_closed(&mut ws, WAIT).await {
        Recv::Message(Message::Welcome { .. }) => {}
        Recv::Message(Message::Error { code, kind, .. }) => seen.error = Some((code, kind)),
        Recv::Message(m) => panic!("unexpected {m:?}"),
        Recv::Idle | Recv::Closed => panic!("no answer to the Hello"),
    }
    (ws, seen)
}

/// Leak 1: sessions that asked for a name before it existed never receive the private root
/// its founder pushes (50 rounds x 8 watchers, half anonymous, half with keys of their own).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchers_of_an_uncreated_name_never_receive_its_private_root() {
    let server = Server::fresh_with("leak1", &["--creates-per-ip", "1000"]);
    let url = server.url.clone();
    let (mut leaked, mut watchers) = (0, 0);
    for round in 0..50u8 {
        let repo = format!("private-{round}");
        let hellos = (0..8u8).map(|i| {
            let who = (i % 2 == 1).then(|| identity(100 + i));
            watch(&url, &repo, who)
        });
        let mut ws: Vec<(Socket, Seen)> = join_all(hellos).await;
        let mut owner = Peer::new(1, &repo);
        owner.write();
        owner.connect(&url).await;
        owner.settle(1).await;
        join_all(
            ws.iter_mut()
                .map(|(s, seen)| drain(s, Duration::from_millis(150), seen)),
        )
        .await;
        for (_, seen) in &ws {
            watchers += 1;
            leaked += usize::from(seen.commits > 0);
            assert_eq!(
                seen.error.as_ref().map(|e| e.0),
                Some(ErrorCode::Permission),
                "round {round}: every watcher is told it may not read: {seen:?}"
            );
        }
    }
    assert_eq!(
        leaked, 0,
        "{leaked} of {watchers} watchers received the root"
    );
}

/// Leak 2: the owner pushes [revoke 8 readers, new data] in one push; the revoked readers
/// receive nothing of it (not the revocations, not the data) and are told `cannot-read`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoked_readers_never_receive_what_follows_their_revocation() {
    let server = Server::fresh_with("leak2", &["--creates-per-ip", "1000"]);
    let url = server.url.clone();
    let readers: Vec<Identity> = (0..8u8).map(|i| identity(40 + i)).collect();
    let (mut leaked, mut told) = (0, 0);
    let rounds = 30u8;
    for round in 0..rounds {
        let repo = format!("revoke-{round}");
        let mut owner = Peer::new(1, &repo);
        owner.write();
        let mut t = Txn::new();
        for r in &readers {
            let key = format!("_acl/{}", r.public().to_hex());
            t.put(&key, ibexdb::member_value(ibexdb::Role::Reader))
                .unwrap();
        }
        owner.repo.commit(t).unwrap();
        owner.connect(&url).await;
        owner.settle(2).await;
        let mut socks = Vec::new();
        for r in &readers {
            let mut ws = socket(&url).await;
            assert_eq!(hello_as(&mut ws, &url, &repo, Some(r)).await, 2);
            let mut seen = Seen::default();
            while seen.commits < 2 {
                match recv(&mut ws, WAIT).await {
                    Some(Message::Commits { commits, .. }) => seen.commits += commits.len(),
                    m => panic!("round {round}: catch-up, got {m:?}"),
                }
            }
            socks.push(ws);
        }
        // One push: every reader revoked, then new data.
        for r in &readers {
            owner.repo.revoke(&r.public()).unwrap();
        }
        owner.write();
        owner.push().await;
        owner.settle(2 + readers.len() + 1).await;
        let mut seen: Vec<Seen> = (0..readers.len()).map(|_| Seen::default()).collect();
        join_all(
            socks
                .iter_mut()
                .zip(seen.iter_mut())
                .map(|(ws, s)| drain(ws, Duration::from_millis(300), s)),
        )
        .await;
        for s in &seen {
            leaked += usize::from(s.commits > 0);
            if s.error == Some((ErrorCode::Permission, Some("cannot-read".into()))) {
                told += 1;
            }
        }
    }
    let total = usize::from(rounds) * readers.len();
    assert_eq!(
        leaked, 0,
        "{leaked} of {total} revoked readers received commits"
    );
    assert_eq!(told, total, "every revoked reader is told cannot-read");
}

/// The owner itself keeps receiving after it revoked everyone else (the check drops only
/// those who may not read).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_still_allowed_keeps_receiving_after_others_are_revoked() {
    let server = Server::fresh("leak3");
    let url = server.url.clone();
    let mut owner = Peer::new(1, "r");
    owner.write();
    let (keep, gone) = (identity(60), identity(61));
    owner
        .repo
        .grant(&keep.public(), ibexdb::Role::Reader)
        .unwrap();
    owner
        .repo
        .grant(&gone.public(), ibexdb::Role::Reader)
        .unwrap();
    owner.connect(&url).await;
    owner.settle(3).await;
    let mut a = Peer::new(60, "r");
    assert_eq!(a.catch_up(&url).await, 3);
    owner.repo.revoke(&gone.public()).unwrap();
    owner.write();
    owner.push().await;
    owner.settle(5).await;
    while a.client.cursor() < 5 {
        match a.event(WAIT).await {
            Some(ClientEvent::ServerError { message, .. }) => panic!("{message}"),
            Some(_) => {}
            None => panic!("the reader still allowed received nothing"),
        }
    }
}

/// Leak 1's other shape: anonymous watchers of a public repository; the owner pushes
/// [make it private, secret data] in one push: the watchers receive nothing of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anonymous_watchers_never_receive_what_follows_a_switch_to_private() {
    let server = Server::fresh_with("leak4", &["--creates-per-ip", "1000"]);
    let url = server.url.clone();
    let (mut leaked, mut total) = (0, 0);
    for round in 0..20u8 {
        let repo = format!("public-{round}");
        let mut owner = Peer::new(1, &repo);
        owner.repo.set_public(true, false).unwrap();
        owner.connect(&url).await;
        owner.settle(1).await;
        let mut socks = Vec::new();
        for _ in 0..8 {
            let mut ws = socket(&url).await;
            assert_eq!(hello(&mut ws, &repo).await, 1);
            let mut seen = Seen::default();
            while seen.commits < 1 {
                match recv(&mut ws, WAIT).await {
                    Some(Message::Commits { commits, .. }) => seen.commits += commits.len(),
                    m => panic!("round {round}: catch-up, got {m:?}"),
                }
            }
            socks.push(ws);
        }
        owner.repo.set_public(false, false).unwrap();
        owner.write();
        owner.push().await;
        owner.settle(3).await;
        let mut seen: Vec<Seen> = (0..socks.len()).map(|_| Seen::default()).collect();
        join_all(
            socks
                .iter_mut()
                .zip(seen.iter_mut())
                .map(|(ws, s)| drain(ws, Duration::from_millis(300), s)),
        )
        .await;
        for s in &seen {
            total += 1;
            leaked += usize::from(s.commits > 0);
            assert_eq!(
                s.error,
                Some((ErrorCode::Permission, Some("cannot-read".into())))
            );
        }
    }
    assert_eq!(
        leaked, 0,
        "{leaked} of {total} anonymous watchers received commits"
    );
}
