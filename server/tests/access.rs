//! Sessions and permissions over real WebSockets (docs/design.md §6.4, §12.3): every refusal
//! provoked and asserted by its error code and kind, with the server's stored data unchanged.

mod common;
use common::*;
use ibexdb::{map, Commit, CommitId, ErrorCode, Identity, Message, Role, Seal, SessionProof};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);

/// A `Hello` with `proof` on a fresh connection: the server's answer (an `Error`'s code and
/// text, or `None` for a `Welcome`).
async fn answer(
    url: &str,
    repo: &str,
    proof: impl FnOnce([u8; 32]) -> SessionProof,
) -> Option<(ErrorCode, String)> {
    let mut ws = socket(url).await;
    let nonce = challenge(&mut ws).await;
    let m = Message::Hello {
        repo: repo.into(),
        cursor: 0,
        auth: Some(proof(nonce)),
        create: false,
    };
    send(&mut ws, &m).await;
    match recv(&mut ws, WAIT).await {
        Some(Message::Welcome { .. }) => None,
        Some(Message::Error {
            code,
            name,
            message,
            ..
        }) => Some((code, format!("{name}: {message}"))),
        m => panic!("unexpected {m:?}"),
    }
}

/// Founds `repo` on the server as peer 1; returns it, settled.
async fn founded(url: &str, repo: &str) -> Peer {
    let mut owner = Peer::new(1, repo);
    owner.write();
    owner.connect(url).await;
    owner.settle(1).await;
    owner
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_session_proofs_are_refused_each_with_its_own_kind() {
    let server = Server::fresh("auth");
    let owner = founded(&server.url, "r").await;
    let before = server.log_len("r");
    let url = server.url.clone();
    let me = identity(1);
    // A good proof is welcome.
    assert_eq!(
        answer(&url, "r", |n| SessionProof::sign(&me, n, &url, "r")).await,
        None
    );
    // Replayed: an answer recorded on another connection.
    let mut other = socket(&url).await;
    let old = challenge(&mut other).await;
    let (code, text) = answer(&url, "r", |_| SessionProof::sign(&me, old, &url, "r"))
        .await
        .unwrap();
    assert_eq!(code, ErrorCode::Auth);
    assert!(
        text.starts_with("AuthError") && text.contains("replayed"),
        "{text}"
    );
    // Made for another server (a relay cannot reuse it).
    let (code, text) = answer(&url, "r", |n| {
        SessionProof::sign(&me, n, "wss://evil.example/", "r")
    })
    .await
    .unwrap();
    assert_eq!(code, ErrorCode::Auth);
    assert!(text.contains("wrong-server"), "{text}");
    // Signed by another key than the one it names.
    let (code, text) = answer(&url, "r", |n| {
        let mut p = SessionProof::sign(&identity(7), n, &url, "r");
        p.key = me.public();
        p
    })
    .await
    .unwrap();
    assert_eq!(code, ErrorCode::Auth);
    assert!(text.contains("bad-signature"), "{text}");
    // Made for another repository.
    let (code, text) = answer(&url, "r", |n| SessionProof::sign(&me, n, &url, "other"))
        .await
        .unwrap();
    assert_eq!(code, ErrorCode::Auth);
    assert!(text.contains("bad-signature"), "{text}");
    // Anonymous, or a stranger's key: the repository is not theirs to read.
    let mut ws = socket(&url).await;
    challenge(&mut ws).await;
    let hello = Message::Hello {
        repo: "r".into(),
        cursor: 0,
        auth: None,
        create: false,
    };
    send(&mut ws, &hello).await;
    let (code, text) = expect_error(&mut ws, WAIT).await;
    assert_eq!(code, ErrorCode::Permission);
    assert!(
        text.starts_with("PermissionError") && text.contains("cannot-read"),
        "{text}"
    );
    let stranger = identity(8);
    let (code, _) = answer(&url, "r", |n| SessionProof::sign(&stranger, n, &url, "r"))
        .await
        .unwrap();
    assert_eq!(code, ErrorCode::Permission);
    assert_eq!(server.log_len("r"), before, "nothing stored");
    drop(owner);
}

/// A commit made by `who` on top of `heads`, bypassing its replica's checks, with its seal.
fn forged(who: &Identity, repo: &str, heads: Vec<CommitId>, hlc_ms: u64) -> Message {
    let c = Commit {
        trusted: false,
        author: who.public(),
        hlc: hlc_ms << 16,
        parents: heads,
        changes: vec![ibexdb::Change {
            collection: "items".into(),
            id: "forged".into(),
            op: ibexdb::Op::Put(map! { "by" => "forger" }.as_map()),
        }],
    };
    let bytes = c.encode();
    let id = CommitId::of(&bytes);
    Message::Push {
        commits: vec![(id, bytes)],
        seals: vec![Seal::create(who, repo, &[id]).encode()],
    }
}

/// The next server error `p` is told (within a few seconds).
async fn server_error(p: &mut Peer) -> (ErrorCode, String) {
    for _ in 0..50 {
        if let Some(ibexdb::ClientEvent::ServerError {
            code,
            name,
            message,
            ..
        }) = p.event(Duration::from_millis(200)).await
        {
            return (code, format!("{name}: {message}"));
        }
    }
    panic!("peer {} was told nothing", p.n)
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_need_permission_revocations_hold_and_histories_stay_in_their_repository() {
    let server = Server::fresh("perm");
    let url = server.url.clone();
    let mut team = Peer::team("r", &[1, 2, 3]).into_iter();
    let (mut owner, mut writer, mut reader) = (
        team.next().unwrap(),
        team.next().unwrap(),
        team.next().unwrap(),
    );
    owner
        .repo
        .grant(&identity(3).public(), Role::Reader)
        .unwrap();
    owner.connect(&url).await;
    owner.settle(2).await;
    writer.connect(&url).await;
    writer.settle(2).await;
    reader.connect(&url).await;
    reader.settle(2).await;
    // The reader, bypassing its own replica's check, pushes a write: refused.
    let before = server.log_len("r");
    let mut ws = socket(&url).await;
    hello_as(&mut ws, &url, "r", Some(&identity(3))).await;
    send(
        &mut ws,
        &forged(&identity(3), "r", reader.repo.heads(), now_ms()),
    )
    .await;
    let (code, text) = expect_error(&mut ws, WAIT).await;
    assert_eq!(code, ErrorCode::Permission);
    assert!(text.contains("cannot-write"), "{text}");
    assert_eq!(server.log_len("r"), before, "nothing stored");
    // A writer's commit from the far future: refused by the clock-skew rule.
    let mut ws = socket(&url).await;
    hello_as(&mut ws, &url, "r", Some(&identity(2))).await;
    let later = now_ms() + 3 * 3_600_000;
    send(
        &mut ws,
        &forged(&identity(2), "r", writer.repo.heads(), later),
    )
    .await;
    let (code, text) = expect_error(&mut ws, WAIT).await;
    assert_eq!(code, ErrorCode::ClockSkew, "{text}");
    // The same history under another repository's name: its seals do not verify there.
    let (commits, seals) = owner.repo.export().unwrap();
    let mut ws = socket(&url).await;
    hello_as(&mut ws, &url, "copy", Some(&identity(1))).await;
    send(&mut ws, &Message::Push { commits, seals }).await;
    let (code, text) = expect_error(&mut ws, WAIT).await;
    assert_eq!(code, ErrorCode::Signature);
    assert!(text.contains("WrongRepository"), "{text}");
    assert!(
        !server.data.join("copy.log").exists(),
        "nothing stored, not even a file: the founding push did not verify"
    );
    // The owner revokes the writer. The write it made concurrently (before the revocation
    // reached it) is valid by the rule, but the server's admission refuses it: pushing stops.
    writer.write();
    owner.repo.revoke(&identity(2).public()).unwrap();
    owner.push().await;
    owner.settle(3).await;
    let before = server.log_len("r");
    let (code, text) = server_error(&mut writer).await;
    assert_eq!(code, ErrorCode::Permission, "{text}");
    assert!(text.contains("cannot-write"), "{text}");
    assert!(writer.client.refused());
    assert_eq!(
        server.log_len("r"),
        before,
        "nothing of the revoked writer stored"
    );
    // The repository stops being public: the revoked key's live connection is closed, and it
    // cannot subscribe again; the reader keeps reading.
    owner.repo.set_public(false, false).unwrap();
    owner.push().await;
    owner.settle(4).await;
    let (code, text) = server_error(&mut writer).await;
    assert_eq!(code, ErrorCode::Permission, "{text}");
    assert!(text.contains("cannot-read"), "{text}");
    let refused = answer(&url, "r", |n| {
        SessionProof::sign(&identity(2), n, &url, "r")
    })
    .await;
    assert_eq!(refused.unwrap().0, ErrorCode::Permission);
    let before = server.log_len("r");
    assert!(before > 0);
    // The reader still reads everything the owner writes.
    owner.write();
    owner.push().await;
    owner.settle(5).await;
    reader.settle(5).await;
    assert_eq!(
        reader.repo.state_hash().unwrap(),
        owner.repo.state_hash().unwrap()
    );
}

/// Issue 23 §10: a revoked writer's commits reach an honest writer peer to peer — one made
/// concurrently with the revocation (it counts), one forged after it and backdated (it does
/// not). The honest replica writes on top of both and pushes: the server accepts the whole
/// push (the honest commit vouches for its history), stores the void commit without effect,
/// and every replica computes the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_honest_push_is_accepted_over_a_revoked_writers_commits() {
    let server = Server::fresh("poison");
    let url = server.url.clone();
    let mut team = Peer::team("r", &[1, 2, 3]).into_iter();
    let (mut owner, mut revoked, mut honest) = (
        team.next().unwrap(),
        team.next().unwrap(),
        team.next().unwrap(),
    );
    owner.connect(&url).await;
    owner.settle(1).await;
    honest.connect(&url).await;
    honest.settle(1).await;
    // Offline, the writer writes; the owner revokes it.
    revoked.write();
    let concurrent = revoked.repo.heads()[0];
    owner.repo.revoke(&identity(2).public()).unwrap();
    owner.push().await;
    owner.settle(2).await;
    honest.settle(2).await;
    // The revocation reaches the revoked writer; it forges a backdated write after it.
    let (commits, seals) = owner.repo.export().unwrap();
    revoked.repo.receive(&commits, &seals).unwrap();
    let Message::Push { commits, seals } = forged(
        &identity(2),
        "r",
        revoked.repo.heads(),
        now_ms() - 30 * 60_000,
    ) else {
        unreachable!()
    };
    let poisoned = commits[0].0;
    revoked.repo.receive(&commits, &seals).unwrap();
    assert_eq!(revoked.repo.counts(&poisoned), Some(false));
    // Both reach the honest writer, which writes on top of them and pushes.
    revoked.repo.seal().unwrap();
    let (commits, seals) = revoked.repo.export().unwrap();
    let r = honest.repo.receive(&commits, &seals).unwrap();
    assert_eq!((r.applied, r.refused), (1, 1));
    let before = server.log_len("r");
    honest.write();
    let mine = honest.repo.heads()[0];
    honest.push().await;
    honest.settle(5).await; // panics on any server error
    assert!(server.log_len("r") > before, "the push was stored");
    // Every replica computes the same: the owner, and a reader that joins afterwards.
    owner.settle(5).await;
    let mut late = Peer::new(4, "r");
    late.catch_up(&url).await;
    let hash = owner.repo.state_hash().unwrap();
    for p in [&mut owner, &mut honest, &mut late] {
        assert_eq!(p.repo.commit_count(), 5, "peer {}", p.n);
        assert_eq!(p.repo.counts(&poisoned), Some(false), "peer {}", p.n);
        assert_eq!(p.repo.counts(&concurrent), Some(true), "peer {}", p.n);
        assert_eq!(p.repo.counts(&mine), Some(true), "peer {}", p.n);
        assert!(p.repo.get("items/forged").unwrap().is_none());
        assert_eq!(p.repo.state_hash().unwrap(), hash, "peer {}", p.n);
    }
    // The revoked key itself still cannot push, not even on the old history; nor can another
    // key push its new commit without a descendant vouching for it.
    let root = owner.repo.export().unwrap().0[0].0;
    for session in [2, 3] {
        let mut ws = socket(&url).await;
        hello_as(&mut ws, &url, "r", Some(&identity(session))).await;
        send(&mut ws, &forged(&identity(2), "r", vec![root], now_ms())).await;
        let (code, text) = expect_error(&mut ws, WAIT).await;
        assert_eq!(code, ErrorCode::Permission, "{text}");
        assert!(text.contains("cannot-write"), "{text}");
    }
    // A commit that does not count and that nothing vouches for is refused too: a writer's
    // own `_acl` edit.
    let before = server.log_len("r");
    let c = Commit {
        trusted: false,
        author: identity(3).public(),
        hlc: now_ms() << 16,
        parents: owner.repo.heads(),
        changes: vec![ibexdb::Change {
            collection: "_acl".into(),
            id: identity(3).public().to_hex(),
            op: ibexdb::Op::Put(ibexdb::member_value(Role::Owner)),
        }],
    };
    let bytes = c.encode();
    let id = CommitId::of(&bytes);
    let push = Message::Push {
        commits: vec![(id, bytes)],
        seals: vec![Seal::create(&identity(3), "r", &[id]).encode()],
    };
    let mut ws = socket(&url).await;
    hello_as(&mut ws, &url, "r", Some(&identity(3))).await;
    send(&mut ws, &push).await;
    let (code, text) = expect_error(&mut ws, WAIT).await;
    assert_eq!(code, ErrorCode::Permission, "{text}");
    assert!(text.contains("cannot-administer"), "{text}");
    assert_eq!(server.log_len("r"), before, "nothing stored");
    assert_eq!(owner.repo.commit_count(), 5);
}
