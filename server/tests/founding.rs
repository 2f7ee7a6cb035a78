//! Creating repositories (issue 23, item 3), from outside over real WebSockets: nothing is
//! stored, opened or subscribed for a name until its founder's verified root arrives, and one
//! source address cannot use more than `--max-repos-per-ip` repositories.

mod common;
use common::*;
use futures_util::future::join_all;
use ibexdb::{ClientEvent, CommitId, ErrorCode, Message, SessionProof};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);

/// Files the server keeps in its data directory.
fn files(server: &Server) -> usize {
    std::fs::read_dir(&server.data).map_or(0, |d| d.count())
}

/// A `Hello` for `repo` (keyed by peer `n`, or anonymous), with or without the create flag;
/// then, if `push` is given and the server welcomed it, that push. The server's answers.
async fn stranger(
    url: String,
    repo: String,
    n: Option<u8>,
    create: bool,
    push: Option<Message>,
) -> Vec<Message> {
    let mut ws = socket(&url).await;
    let nonce = challenge(&mut ws).await;
    let auth = n.map(|n| SessionProof::sign(&identity(n), nonce, &url, &repo));
    let hello = Message::Hello {
        repo,
        cursor: 0,
        auth,
        create,
    };
    send(&mut ws, &hello).await;
    let mut got = Vec::new();
    while let Some(m) = recv(&mut ws, WAIT).await {
        if matches!(m, Message::Welcome { .. }) {
            if let Some(p) = &push {
                send(&mut ws, p).await;
            }
        }
        got.push(m);
    }
    got
}

fn is_refusal(got: &[Message], code: ErrorCode, kind: &str) -> bool {
    got.iter().any(
        |m| matches!(m, Message::Error { code: c, kind: Some(k), .. } if *c == code && k == kind),
    )
}

/// 600 fresh names asked for by strangers (anonymous or keyed, with and without the create
/// flag, with junk or empty founding pushes): every one refused with a typed error, and not
/// one file made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn six_hundred_fresh_names_leave_no_file() {
    let server = Server::fresh_with("fresh", &["--handshake-timeout-ms", "1000"]);
    let before = files(&server);
    let rss0 = server.rss();
    let orphan = {
        let mut p = Peer::new(9, "elsewhere");
        p.write();
        p.write();
        p.repo.seal().unwrap();
        let (c, s) = p.repo.export().unwrap();
        Message::Push {
            commits: c[1..].to_vec(),
            seals: s,
        }
    };
    let empty = Message::Push {
        commits: vec![],
        seals: vec![],
    };
    let junk = Message::Push {
        commits: vec![(CommitId([7; 32]), vec![1, 2, 3])],
        seals: vec![],
    };
    let mut refused = 0;
    for chunk in 0..12 {
        let tasks = (0..50).map(|i| {
            let k = chunk * 50 + i;
            let repo = format!("fresh-{k}");
            let key = (k % 2 == 0).then_some(20 + (k % 7) as u8);
            let (create, push) = match k % 5 {
                0 | 1 => (false, None),
                2 => (true, Some(empty.clone())),
                3 => (true, Some(junk.clone())),
                _ => (true, Some(orphan.clone())),
            };
            stranger(server.url.clone(), repo, key, create, push)
        });
        for got in join_all(tasks).await {
            assert!(
                got.iter().any(|m| matches!(m, Message::Error { .. })),
                "a typed refusal: {got:?}"
            );
            assert!(!got.iter().any(|m| matches!(m, Message::Commits { .. })));
            refused += 1;
        }
    }
    assert_eq!(refused, 600);
    assert_eq!(files(&server) - before, 0, "no file for 600 fresh names");
    assert_eq!(server.metric("ibexdb_repositories_open"), 0.0);
    let grown = server.rss().saturating_sub(rss0);
    println!(
        "600 fresh names: 0 files, RSS {} -> {} KiB",
        rss0 >> 10,
        server.rss() >> 10
    );
    assert!(grown < 32 << 20, "RSS grew {} KiB", grown >> 10);
    // A Hello without the create flag on an unknown name is told `not-found`.
    let got = stranger(server.url.clone(), "nobody".into(), None, false, None).await;
    assert!(
        is_refusal(&got, ErrorCode::Permission, "not-found"),
        "{got:?}"
    );
}

/// One address founds valid repositories as fast as it can, holding them: past
/// `--max-repos-per-ip` it is refused; the owner of an existing repository, from another
/// address, is still served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_address_cannot_fill_the_open_repositories() {
    let args = ["--max-repos", "8", "--max-repos-per-ip", "4"];
    let server = Server::fresh_with("fill", &args);
    let mut owner = Peer::new(1, "home");
    owner.write();
    owner.connect_from(&server.url, "127.0.0.2").await;
    owner.settle(1).await;
    owner.disconnect();
    let mut held = Vec::new();
    let (mut founded, mut limited) = (0, 0);
    for k in 0..12u8 {
        let mut p = Peer::new(30 + k, &format!("squat-{k}"));
        p.write();
        p.connect_from(&server.url, "127.0.0.1").await;
        loop {
            match p.poll(WAIT).await {
                Polled::Event(ClientEvent::Acked { .. }) => {
                    founded += 1;
                    break;
                }
                Polled::Event(ClientEvent::ServerError { code, message, .. }) => {
                    assert_eq!(code, ErrorCode::Limit, "{message}");
                    assert!(message.contains("--max-repos-per-ip"), "{message}");
                    limited += 1;
                    break;
                }
                Polled::Event(_) => continue,
                _ => panic!("no answer for squat-{k}"),
            }
        }
        held.push(p);
    }
    assert_eq!((founded, limited), (4, 8));
    // The owner, from its own address, is served while the squatter holds its repositories.
    owner.connect_from(&server.url, "127.0.0.2").await;
    owner.write();
    owner.settle(2).await;
}

/// Peer `n` for `repo` that pins `founder` as the repository's expected owner.
fn pinned(n: u8, repo: &str, founder: u8) -> Peer {
    let mut p = Peer::new(n, repo);
    let mut opts = ibexdb::RepoOptions::new(repo, Some(identity(n)), ibexdb::system_clock());
    opts.expected_founder = Some(identity(founder).public());
    p.repo = ibexdb::Repo::open(ibexdb::MemStorage::new(), None, opts).unwrap();
    p
}

/// Name squatting (issue 23, item 11): a squatter founds the name first, open to everyone. A
/// client that pins the expected founder refuses the squatter's root with `PermissionError`
/// `wrong-founder` and applies nothing of it; a device that is not the pinned founder cannot
/// found the name itself either; the real founder's pinned client founds where the name is free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pinned_founder_refuses_a_squatters_repository() {
    let server = Server::fresh("squat");
    let url = server.url.clone();
    let _squatter = public_repo(&url, "notes", 66).await;
    // The real owner (key 1), fresh on a device, pins itself.
    let mut me = pinned(1, "notes", 1);
    me.connect(&url).await;
    let refused = loop {
        let Some(ws) = me.ws.as_mut() else {
            panic!("closed without a refusal")
        };
        let Some(m) = recv(ws, WAIT).await else {
            panic!("no commits")
        };
        match me.client.handle(&mut me.repo, m) {
            Ok(ClientEvent::Challenged { .. }) => me.push().await,
            Ok(_) => continue,
            Err(e) => break e,
        }
    };
    assert_eq!(refused.name(), "PermissionError");
    assert_eq!(refused.kind(), Some("wrong-founder"), "{refused}");
    assert_eq!(
        me.repo.commit_count(),
        0,
        "nothing of the squatter's applied"
    );
    assert!(me.repo.get("_acl/public").unwrap().is_none());
    // A replica that took the squatter's history in before the app pinned the founder is
    // refused at open once pinned.
    let mut unpinned = Peer::new(1, "notes");
    assert_eq!(unpinned.catch_up(&url).await, 1);
    unpinned.repo.flush().unwrap();
    let bytes = unpinned.repo.storage().bytes().to_vec();
    let mut opts = ibexdb::RepoOptions::new("notes", Some(identity(1)), ibexdb::system_clock());
    opts.expected_founder = Some(identity(1).public());
    let e = ibexdb::Repo::open(ibexdb::MemStorage::from_bytes(bytes), None, opts).err();
    assert_eq!(
        e.and_then(|e| e.kind().map(String::from)).as_deref(),
        Some("wrong-founder")
    );
    // A second device of someone else, pinned to key 1, cannot found the name either.
    let mut other = pinned(2, "fresh-notes", 1);
    let mut t = ibexdb::Txn::new();
    t.put("items/a", ibexdb::map! { "x" => 1i64 }.as_map())
        .unwrap();
    let e = other.repo.commit(t).unwrap_err();
    assert_eq!(e.kind(), Some("wrong-founder"));
    assert_eq!(other.repo.commit_count(), 0);
    // Key 1's pinned client founds a free name; a pinned joiner receives it.
    let mut real = pinned(1, "fresh-notes", 1);
    real.write();
    real.connect(&url).await;
    real.settle(1).await;
    let mut joiner = pinned(1, "fresh-notes", 1);
    assert_eq!(joiner.catch_up(&url).await, 1);
    assert_eq!(joiner.repo.commit_count(), 1);
}

/// Creations are counted per source address (`--creates-per-ip` per minute): past them a
/// verified root is refused (`creates per ip`) and nothing is stored; another address creates.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creations_are_limited_per_address() {
    let server = Server::fresh_with("creates", &["--creates-per-ip", "3"]);
    let url = server.url.clone();
    let mut outcomes = Vec::new();
    for (k, ip) in [
        (0u8, "127.0.0.1"),
        (1, "127.0.0.1"),
        (2, "127.0.0.1"),
        (3, "127.0.0.1"),
        (4, "127.0.0.2"),
    ] {
        let mut p = Peer::new(70 + k, &format!("made-{k}"));
        p.write();
        p.connect_from(&url, ip).await;
        let outcome = loop {
            match p.poll(WAIT).await {
                Polled::Event(ClientEvent::Acked { .. }) => break "created".to_string(),
                Polled::Event(ClientEvent::ServerError { code, kind, .. }) => {
                    assert_eq!(code, ErrorCode::Limit);
                    break kind.unwrap_or_default();
                }
                Polled::Event(_) => continue,
                _ => panic!("no answer for made-{k}"),
            }
        };
        outcomes.push(outcome);
    }
    assert_eq!(
        outcomes,
        ["created", "created", "created", "creates per ip", "created"]
    );
    assert!(!server.data.join("made-3.log").exists(), "nothing stored");
}
