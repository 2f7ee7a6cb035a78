//! Hostile clients against the real server over real WebSockets (issue 23): for each class,
//! the refusal the client gets, that stored data did not change, and a bound on the server's
//! memory (RSS) and bytes on disk relative to what the client sent.

mod common;
use common::measure::Baseline;
use common::*;
use ibexdb::{CommitId, ErrorCode, Message, Seal};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);

/// `n` ids no commit has.
fn junk_ids(tag: u8, n: usize) -> Vec<CommitId> {
    (0..n)
        .map(|i| {
            let mut id = [tag; 32];
            id[..8].copy_from_slice(&(i as u64).to_be_bytes());
            CommitId(id)
        })
        .collect()
}

/// The next `Ack` or `Error` (skipping catch-up and relays); `None` on close.
async fn answer(ws: &mut Socket) -> Option<Message> {
    loop {
        match recv(ws, WAIT).await? {
            m @ (Message::Ack { .. } | Message::Error { .. }) => return Some(m),
            _ => continue,
        }
    }
}

/// Founds `repo` as peer 1 (owner, anyone may read): the owner, settled.
async fn founded(url: &str, repo: &str) -> Peer {
    let mut owner = Peer::team(repo, &[1]).remove(0);
    owner.connect(url).await;
    owner.push().await;
    owner.settle(1).await;
    owner
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seal_only_pushes_need_write_and_known_seals_are_not_stored_again() {
    let server = Server::fresh("seals");
    let url = server.url.clone();
    let owner = founded(&url, "r").await;
    let (_, owner_seals) = owner.repo.export().unwrap();
    let before = server.log_len("r");
    let base = Baseline::take(server.pid(), &server.data);
    // A reader (anyone may read) pushes seals only: refused, nothing stored.
    let reader = identity(9);
    let mut ws = socket(&url).await;
    hello_as(&mut ws, &url, "r", Some(&reader)).await;
    let seal = Seal::create(&reader, "r", &junk_ids(7, 100)).encode();
    let push = Message::Push {
        commits: vec![],
        seals: vec![seal],
    };
    send(&mut ws, &push).await;
    let (code, text) = expect_error(&mut ws, WAIT).await;
    assert_eq!(code, ErrorCode::Permission, "{text}");
    assert!(text.contains("cannot-write"), "{text}");
    // The owner re-sends its known seal ten times: acknowledged, never stored again.
    let mut ws = socket(&url).await;
    hello_as(&mut ws, &url, "r", Some(&identity(1))).await;
    for _ in 0..10 {
        let push = Message::Push {
            commits: vec![],
            seals: owner_seals.clone(),
        };
        send(&mut ws, &push).await;
        match answer(&mut ws).await {
            Some(Message::Ack { ids }) => assert!(ids.is_empty()),
            m => panic!("expected Ack, got {m:?}"),
        }
    }
    assert_eq!(server.log_len("r"), before, "nothing stored");
    let (_, disk) = base.grew(&server.data);
    assert_eq!(disk, 0, "no byte written to disk");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seals_over_unknown_ids_are_bounded_per_session_in_bytes() {
    // 100 ids of 32 bytes per session.
    let server = Server::fresh_with("sealcap", &["--session-unknown-sealed-bytes", "3200"]);
    let url = server.url.clone();
    let owner = founded(&url, "r").await;
    let me = identity(1);
    let mut ws = socket(&url).await;
    hello_as(&mut ws, &url, "r", Some(&me)).await;
    let push = |ids: Vec<CommitId>| Message::Push {
        commits: vec![],
        seals: vec![Seal::create(&me, "r", &ids).encode()],
    };
    send(&mut ws, &push(junk_ids(7, 60))).await;
    assert!(matches!(answer(&mut ws).await, Some(Message::Ack { .. })));
    let after_first = server.log_len("r");
    send(&mut ws, &push(junk_ids(8, 60))).await;
    let (code, text) = expect_error(&mut ws, WAIT).await;
    assert_eq!(code, ErrorCode::Limit, "{text}");
    assert!(
        text.contains("per session") && text.contains("--session-unknown-sealed-bytes"),
        "{text}"
    );
    assert_eq!(server.log_len("r"), after_first, "nothing more stored");
    // The refusal leaves the connection usable: a push within the bound is taken.
    send(&mut ws, &push(junk_ids(9, 30))).await;
    assert!(matches!(answer(&mut ws).await, Some(Message::Ack { .. })));
    drop(owner);
}

#[test]
fn seal_lists_cost_no_more_than_their_input() {
    // 65536 empty "seals" (2 bytes each on the wire) used to decode into 65536 vectors.
    let m = Message::Push {
        commits: vec![],
        seals: vec![vec![]; 1 << 16],
    };
    let e = Message::decode(&m.encode()).unwrap_err().to_string();
    assert!(e.contains("exceeds the remaining input"), "{e}");
    let short = Message::Push {
        commits: vec![],
        seals: vec![vec![2; Seal::MIN_BYTES - 1]],
    };
    let e = Message::decode(&short.encode()).unwrap_err().to_string();
    assert!(e.contains("shortest seal"), "{e}");
}
