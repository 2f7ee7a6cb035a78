//! An outside attack (attack34) on what the server stores: large values (≥ 16 KiB strings and
//! bytes, docs/design.md §6.6) and attachment descriptors (the Attach op, code 4, §6.7) pushed
//! by a writer and by a stranger, and what a session that may not read learns of a private
//! repository. Real server, real WebSockets on 127.0.0.1; memory (VmRSS) and the data
//! directory's bytes measured from outside.

mod common;
use common::measure::{disk_bytes, Baseline};
use common::*;
use ibexdb::{
    Attachment, Change, Commit, CommitId, ErrorCode, FieldOp, Map, Message, Op, Seal, Txn, Value,
};
use std::collections::BTreeMap;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(20);
/// `attach::MAX_ATTACHMENT_SIZE`: 2^53 − 1.
const MAX_SIZE: u64 = (1 << 53) - 1;

/// `len` bytes of text that differ per `seed` (no run a compressor or a dedup could fold).
fn text(seed: u64, len: usize) -> String {
    let mut rng = Rng(seed);
    (0..len)
        .map(|_| (b'a' + rng.below(26) as u8) as char)
        .collect()
}

/// A put of item `key` with a large string and large bytes, then (a second commit) an
/// attachment on it whose descriptor claims a huge size and a long media type.
fn write_large(p: &mut Peer, key: &str, seed: u64) {
    let mut t = Txn::new();
    let mut m = Map::new();
    m.insert("text".into(), Value::from(text(seed, 200 << 10)));
    m.insert("raw".into(), Value::from(vec![seed as u8; 20 << 10]));
    t.put(key, m).unwrap();
    p.repo.commit(t).unwrap();
    let mut t = Txn::new();
    let a = Attachment {
        hash: [seed as u8; 32],
        size: MAX_SIZE,
        media_type: format!("application/{}", "x".repeat(200)),
    };
    t.attach(key, "photo.jpg", &a).unwrap();
    p.repo.commit(t).unwrap();
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Two commits by the stranger (key 9) on `heads`, bypassing its replica's checks: a put of
/// item `docs/s<i>` with a 200 KiB string and 20 KiB of bytes, then an attach on it.
fn forged_large(heads: &[CommitId], i: u64, ms: u64) -> ((CommitId, Vec<u8>), (CommitId, Vec<u8>)) {
    let mut m = Map::new();
    m.insert("text".into(), Value::from(text(i, 200 << 10)));
    m.insert("raw".into(), Value::from(vec![i as u8; 20 << 10]));
    let one = |parents: Vec<CommitId>, hlc: u64, op: Op| {
        let c = Commit {
            trusted: false,
            author: identity(9).public(),
            hlc: hlc << 16,
            parents,
            changes: vec![Change {
                collection: "docs".into(),
                id: format!("s{i}"),
                op,
            }],
        };
        let bytes = c.encode();
        (CommitId::of(&bytes), bytes)
    };
    let put = one(heads.to_vec(), ms, Op::Put(m));
    let a = Attachment {
        hash: [i as u8; 32],
        size: MAX_SIZE,
        media_type: "image/jpeg".into(),
    };
    let field = ibexdb::attachment_field("photo.jpg");
    let patch = BTreeMap::from([(field, FieldOp::Assign(descriptor(&a)))]);
    let attach = one(vec![put.0], ms + 1, Op::Patch(patch));
    (put, attach)
}

/// The value an attachment field holds (`attach::descriptor_value`).
fn descriptor(a: &Attachment) -> Value {
    let mut m = Map::new();
    m.insert("hash".into(), Value::from(a.hash.to_vec()));
    m.insert("size".into(), Value::Number(a.size as f64));
    m.insert("type".into(), Value::from(a.media_type.as_str()));
    Value::Map(m)
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

/// A writer pushes 40 items of a 200 KiB string and 20 KiB of bytes, each with an attachment:
/// the server stores them (disk ≈ what was sent), holds a small part of them in memory (its
/// copy is access-only), relays them byte for byte to a reader, and serves them again after a
/// restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writers_large_values_and_attachments_cost_their_bytes_on_disk_and_little_memory() {
    let server = Server::fresh("large-writer");
    let url = server.url.clone();
    let mut team = Peer::team("big", &[1, 2]).into_iter();
    let (mut owner, mut writer) = (team.next().unwrap(), team.next().unwrap());
    owner.connect(&url).await;
    owner.push().await;
    owner.settle(1).await;
    writer.connect(&url).await;
    writer.settle(1).await;
    // Warm the allocator with one round first.
    write_large(&mut writer, "docs/warm", 999);
    writer.push().await;
    writer.settle(3).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let base = Baseline::take(server.pid(), &server.data);
    let before = writer.repo.export().unwrap().0.len();
    for i in 0..40u64 {
        write_large(&mut writer, &format!("docs/d{i}"), i);
        writer.push().await;
        while writer.event(Duration::from_millis(1)).await.is_some() {}
    }
    writer.settle(83).await;
    let (commits, _) = writer.repo.export().unwrap();
    let sent: u64 = commits[before..].iter().map(|(_, b)| b.len() as u64).sum();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (rss, disk) = base.grew(&server.data);
    eprintln!(
        "writer: {sent} bytes of commits (80) → server RSS +{} KiB, disk +{} KiB",
        rss >> 10,
        disk >> 10
    );
    assert!(disk >= sent, "stored: disk grew {disk} for {sent} sent");
    assert!(
        disk < sent + sent / 4 + (1 << 20),
        "disk grew {disk} for {sent}"
    );
    assert!(
        rss < sent / 2 + (16 << 20),
        "the server's access-only copy holds values: RSS grew {rss} for {sent}"
    );
    // A reader receives all of it and holds what the writer holds.
    let mut reader = Peer::new(3, "big");
    reader.catch_up(&url).await;
    assert_eq!(reader.repo.commit_count(), 83);
    assert_eq!(
        reader.repo.state_hash().unwrap(),
        writer.repo.state_hash().unwrap()
    );
    let got = reader.repo.get("docs/d7").unwrap().unwrap().clone();
    assert_eq!(got.get("text"), Some(&Value::from(text(7, 200 << 10))));
    let att = reader.repo.attachments("docs/d7").unwrap();
    assert_eq!(att.len(), 1);
    assert_eq!(att[0].1.size, MAX_SIZE);
    // And after a restart, from the server's files.
    drop(reader);
    let mut server = server;
    server.kill();
    let server = server.restart();
    let mut again = Peer::new(4, "big");
    again.catch_up(&server.url).await;
    assert_eq!(
        again.repo.state_hash().unwrap(),
        writer.repo.state_hash().unwrap()
    );
}

/// A stranger (a key of its own, the repository readable by anyone) pushes large values with
/// attachments, ten times on one connection, each push on the last one's commits (so from the
/// second on, orphans whose parent was refused): every push is refused with a typed
/// `PermissionError` `cannot-write` the client receives, the data directory does not grow by a
/// byte, and the server's memory keeps none of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_strangers_large_values_and_attachments_are_refused_typed_and_leave_nothing() {
    let server = Server::fresh("large-stranger");
    let url = server.url.clone();
    let _owner = team_founded(&url, "open").await;
    let root = _owner.repo.heads();
    let mut ws = socket(&url).await;
    hello_as(&mut ws, &url, "open", Some(&identity(9))).await;
    let log = server.log_len("open");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let base = Baseline::take(server.pid(), &server.data);
    let disk0 = disk_bytes(&server.data);
    let mut sent = 0u64;
    let mut heads = root;
    let now = now_ms();
    for i in 0..10u64 {
        let (put, attach) = forged_large(&heads, i, now + 2 * i);
        let ids = [put.0, attach.0];
        heads = vec![attach.0];
        let seal = Seal::create(&identity(9), "open", &ids).encode();
        // From the second push on, the put is an orphan: its parent was refused.
        let commits = vec![put, attach];
        let push = Message::Push {
            commits,
            seals: vec![seal],
        };
        sent += push.encode().len() as u64;
        send(&mut ws, &push).await;
        match answer(&mut ws).await {
            Some(Message::Error {
                code, name, kind, ..
            }) => {
                assert_eq!(code, ErrorCode::Permission, "push {i}");
                assert_eq!(name, "PermissionError");
                assert_eq!(kind.as_deref(), Some("cannot-write"), "push {i}");
            }
            m => panic!("push {i}: expected cannot-write, got {m:?}"),
        }
    }
    let (rss, disk) = base.grew(&server.data);
    eprintln!(
        "stranger: {sent} bytes pushed → server RSS +{} KiB, disk +{disk}",
        rss >> 10
    );
    assert_eq!(server.log_len("open"), log, "nothing stored");
    assert_eq!(disk_bytes(&server.data), disk0, "not a byte on disk");
    assert!(rss < sent + (8 << 20), "RSS grew {rss} for {sent}");
    drop(ws);
    // Nothing of the stranger's waits for it: a reader sees the owner's one commit.
    let mut reader = Peer::new(3, "open");
    assert_eq!(reader.catch_up(&url).await, 1);
}

/// The `Error` a session gets for a `Hello` on `repo` (keyed by `who`, or anonymous), with
/// `cursor` and `create`: (code, name, kind, text).
async fn refusal(
    url: &str,
    repo: &str,
    who: Option<u8>,
    cursor: u64,
    create: bool,
) -> (ErrorCode, String, Option<String>, String) {
    let mut ws = socket(url).await;
    let nonce = challenge(&mut ws).await;
    let id = who.map(identity);
    let hello = Message::Hello {
        repo: repo.into(),
        cursor,
        auth: id
            .as_ref()
            .map(|id| ibexdb::SessionProof::sign(id, nonce, url, repo)),
        create,
    };
    send(&mut ws, &hello).await;
    loop {
        match recv(&mut ws, WAIT).await {
            Some(Message::Error {
                code,
                name,
                kind,
                message,
            }) => return (code, name, kind, message),
            Some(Message::Welcome { .. }) => panic!("{repo}: welcomed"),
            Some(_) => continue,
            None => panic!("{repo}: closed without an Error"),
        }
    }
}

/// A private repository of one small commit and one of 30 commits of 100 KiB: a session that
/// may not read (anonymous, a stranger's key, with any cursor, with the create flag) gets the
/// same refusal for both, word for word but the name: nothing tells their sizes, heads or
/// members apart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_that_may_not_read_learns_nothing_of_a_private_repositorys_size() {
    let server = Server::fresh("private-oracle");
    let url = server.url.clone();
    let mut small = Peer::new(1, "secret-a");
    small.write();
    small.connect(&url).await;
    small.settle(1).await;
    let mut big = Peer::new(2, "secret-b");
    big.pad = 100 << 10;
    for _ in 0..30 {
        big.write();
    }
    big.connect(&url).await;
    big.settle(30).await;
    for (who, cursor, create) in [
        (None, 0, false),
        (Some(9), 0, false),
        (Some(9), 5, false),
        (Some(9), u64::MAX, true),
        (None, 29, true),
    ] {
        let a = refusal(&url, "secret-a", who, cursor, create).await;
        let b = refusal(&url, "secret-b", who, cursor, create).await;
        assert_eq!(a.0, ErrorCode::Permission);
        assert_eq!(a.2.as_deref(), Some("cannot-read"), "{a:?}");
        let b_text = b.3.replace("secret-b", "secret-a");
        assert_eq!(
            (a.0, &a.1, &a.2, &a.3),
            (b.0, &b.1, &b.2, &b_text),
            "who {who:?} cursor {cursor} create {create}"
        );
    }
}

/// What a client that breaks the WebSocket framing itself is told, after its `Hello`: each
/// hostile frame, then the server's next message (`Some(code, kind)` for an `Error`).
async fn framing_answer(
    url: &str,
    addr: &str,
    frame: Vec<u8>,
) -> Option<(ErrorCode, Option<String>)> {
    let _ = url;
    let mut raw = raw_ws::Raw::connect(addr).await;
    raw.hello("open").await;
    raw.send(&frame).await;
    loop {
        match raw.message(Duration::from_secs(5)).await {
            Some(Message::Error { code, kind, .. }) => return Some((code, kind)),
            Some(_) => continue,
            None => return None,
        }
    }
}

/// A client that breaks the WebSocket framing (reserved bits, an unknown opcode, a
/// continuation with nothing to continue, a fragmented ping, an unmasked frame) is refused
/// with a typed `ProtocolError` it receives before the close, as a malformed message is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn websocket_framing_errors_are_refused_with_a_typed_error() {
    let server = Server::fresh("framing");
    let url = server.url.clone();
    let _owner = public_repo(&url, "open", 1).await;
    let push = Message::Push {
        commits: vec![],
        seals: vec![],
    }
    .encode();
    let mut rsv = raw_ws::frame(2, &push);
    rsv[0] |= 0x40; // RSV1 without an extension
    let opcode = raw_ws::frame(3, b"x"); // reserved data opcode
    let continuation = raw_ws::frame(0, b"x"); // nothing to continue
    let mut ping = raw_ws::frame(9, b"x");
    ping[0] &= 0x7f; // a fragmented control frame
    let mut unmasked = raw_ws::frame(2, &push);
    unmasked[1] &= 0x7f; // no mask bit (the zero key stays: four more payload bytes)
    let mut got = Vec::new();
    for (what, f) in [
        ("reserved bits", rsv),
        ("reserved opcode", opcode),
        ("lone continuation", continuation),
        ("fragmented ping", ping),
        ("unmasked frame", unmasked),
    ] {
        got.push((what, framing_answer(&url, &server.addr, f).await));
    }
    let untyped: Vec<_> = got
        .iter()
        .filter(|(_, a)| !matches!(a, Some((ErrorCode::Protocol, _))))
        .collect();
    assert!(
        untyped.is_empty(),
        "closed without a typed ProtocolError: {untyped:?}"
    );
}

/// A stranger's `Hello` on a private repository the server holds closed makes it open the
/// repository to learn the stranger may not read it (the access list lives in it). What that
/// costs: the refusal comes at once, the open repository costs the server a small part of its
/// bytes on disk, and it is closed again once the stranger has left (`--repo-idle-ms`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_strangers_hello_on_a_closed_private_repository_costs_little_and_does_not_last() {
    let mut server = Server::fresh_with("closed-private", &["--repo-idle-ms", "300"]);
    let mut owner = Peer::new(1, "vault");
    owner.pad = 2000;
    for _ in 0..1500 {
        owner.write();
    }
    owner.connect(&server.url).await;
    owner.settle(1500).await;
    owner.disconnect();
    server.kill();
    let server = server.restart();
    let url = server.url.clone();
    let disk = disk_bytes(&server.data);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let base = Baseline::take(server.pid(), &server.data);
    let t0 = std::time::Instant::now();
    let (code, _, kind, _) = refusal(&url, "vault", Some(9), 0, false).await;
    let took = t0.elapsed();
    assert_eq!(code, ErrorCode::Permission);
    assert_eq!(kind.as_deref(), Some("cannot-read"));
    let (rss, grew) = base.grew(&server.data);
    eprintln!(
        "stranger's Hello on a closed private repository of {disk} bytes: answered in {took:?}, RSS +{} KiB, disk +{grew}",
        rss >> 10
    );
    assert!(
        rss < disk / 2 + (8 << 20),
        "RSS grew {rss} for {disk} on disk"
    );
    // Gone with the stranger: the repository closes once idle.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !server.log_text().contains("event=repo_close") {
        assert!(
            std::time::Instant::now() < deadline,
            "still open:\n{}",
            server.log_text()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
