//! Failures that must stay local: a repository whose files cannot be opened answers
//! `Unavailable` (and does not hang its clients or touch other repositories); bad names get
//! their own code; snapshots let a repository reopen without replaying its log.

mod common;
use common::*;
use ibexdb::{ErrorCode, Message};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repository_that_cannot_open_is_unavailable_and_others_are_served() {
    let dir = Server::dir("storage");
    std::fs::create_dir_all(&dir).unwrap();
    // A log replaced by junk (fails to open, even for root), and one replaced by a directory.
    std::fs::write(dir.join("junk.log"), vec![0x5a; 4096]).unwrap();
    std::fs::create_dir(dir.join("dir.log")).unwrap();
    let server = Server::start_with(dir, &["--repo-retry-ms", "300"]);
    for name in ["junk", "dir", "junk"] {
        let t = Instant::now();
        let mut ws = socket(&server.url).await;
        challenge(&mut ws).await;
        send(
            &mut ws,
            &Message::Hello {
                repo: name.into(),
                cursor: 0,
                auth: None,
                create: false,
            },
        )
        .await;
        let (code, text) = expect_error(&mut ws, WAIT).await;
        assert_eq!(code, ErrorCode::Unavailable, "{text}");
        assert!(
            text.starts_with("UnavailableError") && text.contains(name),
            "{text}"
        );
        assert!(t.elapsed() < Duration::from_secs(3), "answered at once");
        assert!(
            recv(&mut ws, WAIT).await.is_none(),
            "closed after the refusal"
        );
    }
    let mut p = Peer::new(1, "fine");
    p.write();
    p.connect(&server.url).await;
    p.settle(1).await;
    // After the retry delay it is tried again (and fails again, still without hanging).
    tokio::time::sleep(Duration::from_millis(400)).await;
    let mut ws = socket(&server.url).await;
    challenge(&mut ws).await;
    send(
        &mut ws,
        &Message::Hello {
            repo: "junk".into(),
            cursor: 0,
            auth: None,
            create: false,
        },
    )
    .await;
    assert_eq!(expect_error(&mut ws, WAIT).await.0, ErrorCode::Unavailable);
    assert!(server.metric("ibexdb_repository_failures_total") >= 3.0);
    assert_eq!(
        std::fs::read(server.data.join("junk.log")).unwrap(),
        vec![0x5a; 4096],
        "untouched"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_repository_names_get_their_code() {
    let server = Server::fresh("names");
    for name in [".hidden", "a/b", "", &"x".repeat(129)] {
        let mut ws = socket(&server.url).await;
        challenge(&mut ws).await;
        send(
            &mut ws,
            &Message::Hello {
                repo: name.to_string(),
                cursor: 0,
                auth: None,
                create: false,
            },
        )
        .await;
        let (code, text) = expect_error(&mut ws, WAIT).await;
        assert_eq!(code, ErrorCode::InvalidRepository, "{name:?}: {text}");
        assert!(text.starts_with("InvalidKeyError"), "{text}");
    }
    assert_eq!(
        std::fs::read_dir(&server.data).unwrap().count(),
        0,
        "no file created"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repository_reopens_from_its_snapshot() {
    let args = ["--snapshot-tail-bytes", "20000", "--repo-idle-ms", "200"];
    let server = Server::fresh_with("snap", &args);
    let mut a = Peer::new(1, "big");
    a.pad = 1000;
    for _ in 0..60 {
        a.write();
    }
    a.connect(&server.url).await;
    a.settle(60).await;
    a.disconnect();
    let deadline = Instant::now() + WAIT;
    while !server.log_text().contains("event=snapshot repo=big") && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let log = server.log_text();
    assert!(
        log.contains("event=snapshot repo=big"),
        "written past the tail threshold:\n{log}"
    );
    let mut server = server;
    server.kill(); // SIGKILL: the snapshot written while running is what the restart finds
    let server = server.restart();
    let mut b = Peer::new(1, "big"); // the owner, on a new device
    b.catch_up(&server.url).await;
    assert_eq!(b.repo.state_hash().unwrap(), a.repo.state_hash().unwrap());
    let log = server.log_text();
    let open = log
        .lines()
        .find(|l| l.contains("event=repo_open repo=big"))
        .unwrap();
    assert!(open.contains("from_snapshot=true"), "{open}");
    let replayed: usize = open
        .split("replayed_frames=")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        replayed < 60,
        "only the tail after the snapshot is replayed: {open}"
    );
}

/// A repository thread that panics tells its clients and is replaced: they reconnect and the
/// next client reopens it from disk; other repositories are not touched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_repository_thread_is_replaced() {
    let var = ("IBEXDB_SERVER_PANIC_ON_PUSH", "boom");
    let server = Server::start_with_env(Server::dir("panic"), var, &[]);
    let mut other = Peer::new(3, "calm");
    other.write();
    other.connect(&server.url).await;
    other.settle(1).await;
    let mut a = Peer::new(1, "boom");
    a.write();
    a.connect(&server.url).await;
    let (code, text) = loop {
        match a.event(WAIT).await {
            Some(ibexdb::ClientEvent::ServerError {
                code,
                name,
                message,
                ..
            }) => break (code, format!("{name}: {message}")),
            Some(_) => continue,
            None => panic!("no error after the panic"),
        }
    };
    assert_eq!(code, ErrorCode::Unavailable, "{text}");
    assert!(text.contains("repository thread failed"), "{text}");
    assert!(server.metric("ibexdb_repository_failures_total") >= 1.0);
    // Reconnecting reopens the repository from disk; the push goes through this time.
    a.connect(&server.url).await;
    a.settle(1).await;
    let mut b = Peer::new(1, "boom"); // the owner, on a new device
    b.catch_up(&server.url).await;
    assert_eq!(b.repo.state_hash().unwrap(), a.repo.state_hash().unwrap());
    // The other repository kept its connection throughout.
    other.write();
    other.push().await;
    other.settle(2).await;
}
