//! Invites through the real server (docs/design.md §6.4 "Invites"): a device whose key is in
//! no access list connects (told `cannot-read`, kept waiting), pushes its redemption built on
//! the invite's commit, and is welcomed as a member; a second use, an expired invite, a
//! revoked one, a wrong secret and a backdated redemption are each refused with their typed
//! error, and nothing of a refused push is stored.

mod common;
use common::*;
use ibexdb::{
    map, redemption_commit, Change, Commit, CommitId, ErrorCode, Message, Op, Role, Seal,
};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const WAIT: Duration = Duration::from_secs(10);

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// A session of key `n` on `repo`, refused `cannot-read` and kept waiting.
async fn waiting(url: &str, repo: &str, n: u8) -> Socket {
    let mut ws = socket(url).await;
    let nonce = challenge(&mut ws).await;
    let hello = Message::Hello {
        repo: repo.into(),
        cursor: 0,
        auth: Some(ibexdb::SessionProof::sign(&identity(n), nonce, url, repo)),
        create: false,
    };
    send(&mut ws, &hello).await;
    let got = refused_kind(&mut ws).await;
    assert!(got.starts_with("cannot-read"), "{got}");
    ws
}

/// Push a redemption of the invite `secret` by key `n`, on `invite_commit`, stamped `ms`.
async fn redeem(
    ws: &mut Socket,
    repo: &str,
    n: u8,
    secret: u8,
    role: Role,
    on: CommitId,
    ms: u64,
) -> CommitId {
    let (id, bytes, seal) =
        redemption_commit(&identity(n), repo, &[secret; 32], role, vec![on], ms);
    let push = Message::Push {
        commits: vec![(id, bytes)],
        seals: vec![seal],
    };
    send(ws, &push).await;
    id
}

/// The kind of the next `Error`.
async fn refused_kind(ws: &mut Socket) -> String {
    match recv(ws, WAIT).await {
        Some(Message::Error {
            code: ErrorCode::Permission,
            kind,
            message,
            ..
        }) => format!("{}: {message}", kind.unwrap_or_default()),
        m => panic!("expected a refusal, got {m:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_device_redeems_an_invite_through_the_server_once_and_is_welcomed() {
    let server = Server::fresh("invites");
    let url = server.url.clone();
    let repo = "inv";
    let mut owner = Peer::new(1, repo);
    owner.write();
    let far = now_ms() + 3_600_000;
    let invite = |owner: &mut Peer, secret: u8, role: Role, expires: u64, uses: u32| {
        owner
            .repo
            .invite(&[secret; 32], role, expires, uses)
            .unwrap();
        owner.repo.heads()[0]
    };
    let writer = invite(&mut owner, 1, Role::Writer, far, 1);
    let expired = invite(&mut owner, 2, Role::Reader, now_ms() - 1, 1);
    let revoked = invite(&mut owner, 3, Role::Reader, far, 3);
    let (rid, _) = owner.repo.invite(&[3; 32], Role::Reader, far, 3).unwrap();
    owner.repo.revoke_invite(&rid).unwrap();
    let spare = invite(&mut owner, 4, Role::Reader, far, 3);
    owner.connect(&url).await;
    owner.push().await;
    let total = owner.repo.commit_count();
    owner.settle(total).await;
    owner.disconnect();

    // The owner is offline. Device 20 redeems the writer invite.
    let mut d = waiting(&url, repo, 20).await;
    let mine = redeem(&mut d, repo, 20, 1, Role::Writer, writer, now_ms()).await;
    match recv(&mut d, WAIT).await {
        Some(Message::Ack { ids }) => assert_eq!(ids, vec![mine]),
        m => panic!("expected Ack, got {m:?}"),
    }
    match recv(&mut d, WAIT).await {
        Some(Message::Welcome { .. }) => {}
        m => panic!("expected Welcome, got {m:?}"),
    }
    // Its catch-up: the whole history, its redemption included.
    let mut got = 0;
    while got < total + 1 {
        match recv(&mut d, WAIT).await {
            Some(Message::Commits { commits, .. }) => got += commits.len(),
            m => panic!("expected Commits, got {m:?}"),
        }
    }
    // It writes as a writer now.
    let c = Commit {
        trusted: false,
        author: identity(20).public(),
        hlc: now_ms() << 16,
        parents: vec![mine],
        changes: vec![Change {
            collection: "items".into(),
            id: "from-20".into(),
            op: Op::Put(map! { "v" => 1i64 }.as_map()),
        }],
    };
    let bytes = c.encode();
    let cid = CommitId::of(&bytes);
    let seal = Seal::create(&identity(20), repo, &[cid]).encode();
    send(
        &mut d,
        &Message::Push {
            commits: vec![(cid, bytes)],
            seals: vec![seal],
        },
    )
    .await;
    loop {
        match recv(&mut d, WAIT).await {
            Some(Message::Ack { ids }) => {
                assert_eq!(ids, vec![cid]);
                break;
            }
            Some(Message::Error { message, .. }) => panic!("{message}"),
            Some(_) => {}
            None => panic!("no Ack"),
        }
    }

    // Each refusal is typed, and stores nothing.
    let cases: [(u8, u8, Role, CommitId, u64, &str); 5] = [
        (21, 1, Role::Writer, writer, now_ms(), "invite-used"),
        (22, 2, Role::Reader, expired, now_ms(), "invite-expired"),
        (23, 3, Role::Reader, revoked, now_ms(), "invite-revoked"),
        // A wrong secret: no such invite in the commit's past.
        (24, 9, Role::Reader, spare, now_ms(), "invite-invalid"),
        // Backdated by two hours (more than the server's clock-skew bound).
        (
            25,
            4,
            Role::Reader,
            spare,
            now_ms() - 7_200_000,
            "invite-expired",
        ),
    ];
    for (n, secret, role, on, ms, want) in cases {
        let before = server.log_len(repo);
        let mut w = waiting(&url, repo, n).await;
        redeem(&mut w, repo, n, secret, role, on, ms).await;
        let got = refused_kind(&mut w).await;
        assert!(got.starts_with(want), "device {n}: {got}");
        assert_eq!(
            server.log_len(repo),
            before,
            "device {n}: stored on refusal"
        );
    }
    // The spare invite still works for a fresh device (the refusals used nothing).
    let mut e = waiting(&url, repo, 26).await;
    let id = redeem(&mut e, repo, 26, 4, Role::Reader, spare, now_ms()).await;
    match recv(&mut e, WAIT).await {
        Some(Message::Ack { ids }) => assert_eq!(ids, vec![id]),
        m => panic!("expected Ack, got {m:?}"),
    }
    // The owner, back online, sees both members.
    owner.connect(&url).await;
    owner.push().await;
    owner.settle(total + 3).await;
    let acl = owner.repo.access();
    assert_eq!(acl.role(&identity(20).public()), Some(Role::Writer));
    assert_eq!(acl.role(&identity(26).public()), Some(Role::Reader));
    assert_eq!(acl.role(&identity(21).public()), None);
    assert!(owner.repo.get("items/from-20").unwrap().is_some());
}

/// From outside: a stranger kept waiting (no role) uses the redemption door to push what is not
/// a redemption, or a redemption carrying bulk beside it, 20 times 1 MiB. Each push is refused
/// with a typed error, nothing reaches the data directory, and the server's memory does not
/// keep what the stranger sent once it is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stranger_cannot_push_bulk_through_the_redemption_door() {
    let server = Server::fresh("invites-door");
    let url = server.url.clone();
    let repo = "door";
    let mut owner = Peer::new(1, repo);
    owner.write();
    let far = now_ms() + 3_600_000;
    owner.repo.invite(&[7; 32], Role::Reader, far, 1).unwrap();
    let invite = owner.repo.heads()[0];
    owner.connect(&url).await;
    owner.push().await;
    let total = owner.repo.commit_count();
    owner.settle(total).await;
    owner.disconnect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (disk0, rss0) = (common::measure::disk_bytes(&server.data), server.rss());

    let blob = "x".repeat(1 << 20);
    for k in 0..20u64 {
        // A refused push ends the session: the stranger dials again each time.
        let mut d = waiting(&url, repo, 30).await;
        // A signed, sealed commit of its own key on the invite's commit: a 1 MiB item, and
        // every other push also its own member entry (a redemption claim without a proof).
        let mut changes = vec![Change {
            collection: "items".into(),
            id: format!("bulk-{k}"),
            op: Op::Put(map! { "v" => blob.clone() }.as_map()),
        }];
        if k % 2 == 1 {
            changes.push(Change {
                collection: "_acl".into(),
                id: identity(30).public().to_hex(),
                op: Op::Put(map! { "role" => "owner" }.as_map()),
            });
        }
        let c = Commit {
            trusted: false,
            author: identity(30).public(),
            hlc: (now_ms() << 16) + k,
            parents: vec![invite],
            changes,
        };
        let bytes = c.encode();
        let cid = CommitId::of(&bytes);
        let seal = Seal::create(&identity(30), repo, &[cid]).encode();
        send(
            &mut d,
            &Message::Push {
                commits: vec![(cid, bytes)],
                seals: vec![seal],
            },
        )
        .await;
        let got = refused_kind(&mut d).await;
        eprintln!("push {k}: {got}");
        assert!(
            got.starts_with("cannot-write") || got.starts_with("invite-invalid"),
            "push {k}: {got}"
        );
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (disk1, rss1) = (common::measure::disk_bytes(&server.data), server.rss());
    eprintln!(
        "20 x 1 MiB through the redemption door: disk {disk0} -> {disk1} B, RSS {} -> {} MiB",
        rss0 >> 20,
        rss1 >> 20
    );
    assert_eq!(disk1, disk0, "nothing the stranger sent is on disk");
    assert!(
        rss1 < rss0 + (8 << 20),
        "the server keeps less than 8 MiB of 20 MiB sent: {rss0} -> {rss1}"
    );
    // The real redemption still works afterwards (the door is not jammed).
    let mut e = waiting(&url, repo, 31).await;
    let mine = redeem(&mut e, repo, 31, 7, Role::Reader, invite, now_ms()).await;
    match recv(&mut e, WAIT).await {
        Some(Message::Ack { ids }) => assert_eq!(ids, vec![mine]),
        m => panic!("expected Ack, got {m:?}"),
    }
}
