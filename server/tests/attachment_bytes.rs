//! Attachment bytes through the real `ibexdb-server` over real WebSockets on 127.0.0.1
//! (protocol version 5, docs/design.md §12.2 *Attachment bytes*): a writer uploads what a
//! stored commit records and a reader downloads it; strangers, readers, unknown hashes, wrong
//! bytes and uploads over the limits are refused with their typed errors before anything is
//! kept; a dropped upload leaves no file; memory and disk stay within a constant of the bytes.

mod common;
use common::measure::{disk_bytes, rss, Baseline};
use common::*;
use ibexdb::{Attachment, ErrorCode, Identity, Map, Message, Sha256Stream, Txn, Value};
use ibexdb::{ATTACH_CHUNK_BYTES, PROTOCOL_VERSION};
use std::path::PathBuf;
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(20);

/// `n` bytes of a deterministic sequence (`seed` tells files apart).
fn bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn att(b: &[u8]) -> Attachment {
    let mut h = Sha256Stream::new();
    h.update(b);
    Attachment {
        size: h.len(),
        hash: h.finish(),
        media_type: "application/octet-stream".into(),
    }
}

/// Peer 1 founds `repo` (owner; peer 2 a writer; anyone reads unless `private`) with item
/// `tasks/t` carrying `files` as attachments `f0`, `f1`, …; returns the settled owner.
async fn founded(url: &str, repo: &str, files: &[&Attachment], private: bool) -> Peer {
    let mut owner = if private {
        let mut p = Peer::new(1, repo);
        let mut t = Txn::new();
        t.put("tasks/seed", Map::new()).unwrap();
        p.repo.commit(t).unwrap();
        p
    } else {
        Peer::team(repo, &[1, 2]).remove(0)
    };
    let mut t = Txn::new();
    t.put("tasks/t", Map::from([("title", Value::from("t"))]))
        .unwrap();
    owner.repo.commit(t).unwrap();
    let mut t = Txn::new();
    for (i, a) in files.iter().enumerate() {
        t.attach("tasks/t", &format!("f{i}"), a).unwrap();
    }
    owner.repo.commit(t).unwrap();
    let total = owner.repo.commit_count();
    owner.connect(url).await;
    owner.settle(total).await;
    owner
}

/// A session on `repo` as `who` (anonymous without): its socket after the `Welcome`, or after
/// the `Error` refusing it to read (a waiting session), with that error's code.
async fn session(url: &str, repo: &str, who: Option<&Identity>) -> (Socket, Option<ErrorCode>) {
    let mut ws = socket(url).await;
    let nonce = challenge(&mut ws).await;
    let m = Message::Hello {
        repo: repo.into(),
        cursor: 1 << 40, // past the head: the server sends no history
        auth: who.map(|id| ibexdb::SessionProof::sign(id, nonce, url, repo)),
        create: false,
    };
    send(&mut ws, &m).await;
    match recv(&mut ws, WAIT).await {
        Some(Message::Welcome { .. }) => (ws, None),
        Some(Message::Error { code, .. }) => (ws, Some(code)),
        m => panic!("expected Welcome or Error, got {m:?}"),
    }
}

/// The next attachment message (commits relayed meanwhile are skipped).
async fn next_attach(ws: &mut Socket) -> Option<Message> {
    let deadline = Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match recv(ws, left).await? {
            m @ (Message::AttachWant { .. }
            | Message::AttachChunk { .. }
            | Message::AttachError { .. }
            | Message::Error { .. }) => return Some(m),
            _ => continue,
        }
    }
}

/// The `(name, kind)` of an attachment refusal.
fn refusal(m: Option<Message>) -> (String, String) {
    match m {
        Some(Message::AttachError { name, kind, .. }) => (name, kind.unwrap_or_default()),
        m => panic!("expected AttachError, got {m:?}"),
    }
}

/// Offer `a` and send `data` as its bytes if asked; the server's last answer.
async fn upload(ws: &mut Socket, a: &Attachment, data: &[u8]) -> Option<Message> {
    let hash = a.hash;
    send(ws, &Message::AttachOffer { hash, size: a.size }).await;
    let offset = match next_attach(ws).await? {
        Message::AttachWant { offset, .. } if offset < a.size => offset as usize,
        m => return Some(m),
    };
    for (i, c) in data[offset..].chunks(ATTACH_CHUNK_BYTES).enumerate() {
        let offset = (offset + i * ATTACH_CHUNK_BYTES) as u64;
        let m = Message::AttachChunk {
            hash,
            offset,
            bytes: c.to_vec(),
        };
        send(ws, &m).await;
    }
    next_attach(ws).await
}

/// Download `a` from `offset`: the bytes, or the refusal.
async fn download(ws: &mut Socket, a: &Attachment, offset: u64) -> Result<Vec<u8>, Message> {
    let (hash, size) = (a.hash, a.size);
    let length = u64::MAX; // the rest, in one window
    send(
        ws,
        &Message::AttachGet {
            hash,
            size,
            offset,
            length,
        },
    )
    .await;
    let mut out = Vec::new();
    loop {
        match next_attach(ws).await {
            Some(Message::AttachChunk {
                offset: at, bytes, ..
            }) => {
                assert_eq!(at, offset + out.len() as u64, "chunks in order");
                out.extend_from_slice(&bytes);
                if at + bytes.len() as u64 == size {
                    return Ok(out);
                }
            }
            Some(m) => return Err(m),
            None => panic!("the download stopped"),
        }
    }
}

fn files_dir(server: &Server, repo: &str) -> PathBuf {
    server.data.join(format!("{repo}.attachments"))
}

fn names(dir: &PathBuf) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn hex(h: &[u8; 32]) -> String {
    h.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_uploads_and_a_reader_downloads_byte_for_byte() {
    let server = Server::fresh("att-roundtrip");
    let (big, small, empty) = (bytes(700_000, 1), bytes(1, 2), Vec::new());
    let (a, b, e) = (att(&big), att(&small), att(&empty));
    let _owner = founded(&server.url, "files", &[&a, &b, &e], false).await;
    let (mut w, _) = session(&server.url, "files", Some(&identity(2))).await;
    for (x, data) in [(&a, &big), (&b, &small), (&e, &empty)] {
        match upload(&mut w, x, data).await {
            Some(Message::AttachWant { hash, offset }) => {
                assert_eq!((hash, offset), (x.hash, x.size), "stored")
            }
            m => panic!("upload refused: {m:?}"),
        }
        let on_disk = std::fs::read(files_dir(&server, "files").join(hex(&x.hash))).unwrap();
        assert!(on_disk == *data, "the file holds the bytes");
    }
    // Offered again: the server holds it, nothing is sent.
    send(
        &mut w,
        &Message::AttachOffer {
            hash: a.hash,
            size: a.size,
        },
    )
    .await;
    assert!(
        matches!(next_attach(&mut w).await, Some(Message::AttachWant { offset, .. }) if offset == a.size)
    );
    // An anonymous reader (the repository is readable by anyone) downloads, whole and from an
    // offset (a resumed download).
    let (mut r, refused) = session(&server.url, "files", None).await;
    assert_eq!(refused, None);
    for (x, data) in [(&a, &big), (&b, &small), (&e, &empty)] {
        assert!(download(&mut r, x, 0).await.unwrap() == *data);
    }
    assert!(download(&mut r, &a, 300_001).await.unwrap() == big[300_001..]);
    // In windows, as the browser asks: each answer is the window and nothing more.
    let mut got = Vec::new();
    while got.len() < big.len() {
        let (offset, length) = (got.len() as u64, 100_000);
        let get = Message::AttachGet {
            hash: a.hash,
            size: a.size,
            offset,
            length,
        };
        send(&mut r, &get).await;
        let want = (a.size - offset).min(length) as usize;
        let mut window = Vec::new();
        while window.len() < want {
            match next_attach(&mut r).await {
                Some(Message::AttachChunk {
                    offset: at, bytes, ..
                }) => {
                    assert_eq!(at, offset + window.len() as u64);
                    window.extend_from_slice(&bytes);
                }
                m => panic!("window stopped: {m:?}"),
            }
        }
        assert_eq!(window.len(), want, "no more than the window");
        got.extend_from_slice(&window);
    }
    assert!(got == big);
    assert!(matches!(
        recv_or_closed(&mut r, Duration::from_millis(200)).await,
        Recv::Idle
    ));
    assert_eq!(
        names(&files_dir(&server, "files")),
        {
            let mut v = vec![hex(&a.hash), hex(&b.hash), hex(&e.hash)];
            v.sort();
            v
        },
        "no temporary file is left"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strangers_readers_and_unknown_hashes_store_nothing() {
    let server = Server::fresh("att-refused");
    let data = bytes(600_000, 3);
    let a = att(&data);
    let _owner = founded(&server.url, "files", &[&a], false).await;
    let before = disk_bytes(&server.data);
    // A key that may only read, and an anonymous session: `cannot-write`, then a chunk sent
    // anyway is a protocol error and the connection closes.
    for who in [Some(identity(3)), None] {
        let (mut ws, _) = session(&server.url, "files", who.as_ref()).await;
        let got = refusal(upload(&mut ws, &a, &data).await);
        assert_eq!(got, ("PermissionError".into(), "cannot-write".into()));
        let chunk = Message::AttachChunk {
            hash: a.hash,
            offset: 0,
            bytes: data[..1000].to_vec(),
        };
        send(&mut ws, &chunk).await;
        let (code, _) = expect_error(&mut ws, WAIT).await;
        assert_eq!(code, ErrorCode::Protocol);
    }
    // A writer offering bytes no commit records (or with another size).
    let (mut w, _) = session(&server.url, "files", Some(&identity(2))).await;
    let other = bytes(1000, 4);
    let got = refusal(upload(&mut w, &att(&other), &other).await);
    assert_eq!(got, ("PermissionError".into(), "not-found".into()));
    let wrong_size = Attachment {
        size: a.size - 1,
        ..a.clone()
    };
    let got = refusal(upload(&mut w, &wrong_size, &data[1..]).await);
    assert_eq!(got, ("PermissionError".into(), "not-found".into()));
    // A download of bytes the server does not hold yet.
    let got = refusal(download(&mut w, &a, 0).await.err());
    assert_eq!(got.0, "UnavailableError");
    assert_eq!(disk_bytes(&server.data), before, "nothing was stored");
    assert!(names(&files_dir(&server, "files")).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_without_permission_cannot_download() {
    let server = Server::fresh("att-private");
    let data = bytes(10_000, 5);
    let a = att(&data);
    let _owner = founded(&server.url, "private", &[&a], true).await;
    let (mut w, _) = session(&server.url, "private", Some(&identity(1))).await;
    assert!(
        matches!(upload(&mut w, &a, &data).await, Some(Message::AttachWant { offset, .. }) if offset == a.size)
    );
    for who in [Some(identity(3)), None] {
        let (mut s, refused) = session(&server.url, "private", who.as_ref()).await;
        assert_eq!(refused, Some(ErrorCode::Permission), "a waiting session");
        let got = refusal(download(&mut s, &a, 0).await.err());
        assert_eq!(got, ("PermissionError".into(), "cannot-read".into()));
    }
    assert!(download(&mut w, &a, 0).await.unwrap() == data);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_bytes_are_refused_and_nothing_is_kept() {
    let server = Server::fresh("att-mismatch");
    let data = bytes(500_000, 6);
    let a = att(&data);
    let _owner = founded(&server.url, "files", &[&a], false).await;
    let (mut w, _) = session(&server.url, "files", Some(&identity(1))).await;
    let mut forged = data.clone();
    forged[400_000] ^= 1;
    let got = refusal(upload(&mut w, &a, &forged).await);
    assert_eq!(got, ("SignatureError".into(), "tampered".into()));
    assert!(names(&files_dir(&server, "files")).is_empty(), "no file");
    // The session goes on: the right bytes are then stored.
    assert!(
        matches!(upload(&mut w, &a, &data).await, Some(Message::AttachWant { offset, .. }) if offset == a.size)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_over_the_limits_are_refused_with_limit_error() {
    let server = Server::fresh_with(
        "att-limits",
        &[
            "--max-attachment-bytes",
            "1000",
            "--max-repo-attachment-bytes",
            "1500",
        ],
    );
    let (x, y, z) = (bytes(800, 7), bytes(800, 8), bytes(1001, 9));
    let (a, b, c) = (att(&x), att(&y), att(&z));
    let _owner = founded(&server.url, "files", &[&a, &b, &c], false).await;
    let (mut w, _) = session(&server.url, "files", Some(&identity(1))).await;
    let got = refusal(upload(&mut w, &c, &z).await);
    assert_eq!(got, ("LimitError".into(), "attachment size".into()));
    assert!(
        matches!(upload(&mut w, &a, &x).await, Some(Message::AttachWant { offset, .. }) if offset == 800)
    );
    let got = refusal(upload(&mut w, &b, &y).await);
    assert_eq!(got, ("LimitError".into(), "attachment bytes".into()));
    assert_eq!(names(&files_dir(&server, "files")), vec![hex(&a.hash)]);
    // After a restart the total is counted from the files on disk.
    let mut server = server;
    server.kill();
    let server = server.restart();
    let (mut w, _) = session(&server.url, "files", Some(&identity(1))).await;
    let got = refusal(upload(&mut w, &b, &y).await);
    assert_eq!(got, ("LimitError".into(), "attachment bytes".into()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_upload_leaves_no_file() {
    let server = Server::fresh("att-drop");
    let data = bytes(2 << 20, 10);
    let a = att(&data);
    let _owner = founded(&server.url, "files", &[&a], false).await;
    let (mut w, _) = session(&server.url, "files", Some(&identity(2))).await;
    send(
        &mut w,
        &Message::AttachOffer {
            hash: a.hash,
            size: a.size,
        },
    )
    .await;
    assert!(matches!(
        next_attach(&mut w).await,
        Some(Message::AttachWant { offset: 0, .. })
    ));
    for (i, c) in data[..1 << 20].chunks(ATTACH_CHUNK_BYTES).enumerate() {
        let m = Message::AttachChunk {
            hash: a.hash,
            offset: (i * ATTACH_CHUNK_BYTES) as u64,
            bytes: c.to_vec(),
        };
        send(&mut w, &m).await;
    }
    let dir = files_dir(&server, "files");
    let deadline = Instant::now() + WAIT;
    while disk_bytes(&dir) < 1 << 20 {
        assert!(
            Instant::now() < deadline,
            "the first half never reached the disk"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop(w);
    while !names(&dir).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the temporary file stayed: {:?}",
            names(&dir)
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The repository's reservation was given back: the whole file is accepted afterwards.
    let (mut w, _) = session(&server.url, "files", Some(&identity(2))).await;
    assert!(
        matches!(upload(&mut w, &a, &data).await, Some(Message::AttachWant { offset, .. }) if offset == a.size)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_and_disk_stay_within_a_constant_of_the_bytes() {
    const MIB: u64 = 1 << 20;
    let server = Server::fresh("att-bounds");
    let data = bytes(48 << 20, 11);
    let a = att(&data);
    let _owner = founded(&server.url, "files", &[&a], false).await;
    let (mut w, _) = session(&server.url, "files", Some(&identity(2))).await;
    let (mut r, _) = session(&server.url, "files", None).await;
    let base = Baseline::take(server.pid(), &server.data);
    let rss0 = rss(server.pid());
    let t = Instant::now();
    assert!(
        matches!(upload(&mut w, &a, &data).await, Some(Message::AttachWant { offset, .. }) if offset == a.size)
    );
    let up = t.elapsed();
    let (rss_up, disk_up) = base.grew(&server.data);
    // A reader that asks and then does not read: the server queues at most half its queue.
    send(
        &mut r,
        &Message::AttachGet {
            hash: a.hash,
            size: a.size,
            offset: 0,
            length: a.size,
        },
    )
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rss_stalled = rss(server.pid()).saturating_sub(rss0);
    let t = Instant::now();
    let mut got = Vec::with_capacity(data.len());
    while got.len() < data.len() {
        match next_attach(&mut r).await {
            Some(Message::AttachChunk { bytes, .. }) => got.extend_from_slice(&bytes),
            m => panic!("download stopped: {m:?}"),
        }
    }
    let down = t.elapsed();
    assert!(got == data);
    let (rss_all, _) = base.grew(&server.data);
    eprintln!(
        "48 MiB: upload {up:?}, download {down:?}; RSS +{:.1} MiB after the upload, +{:.1} MiB with a stalled reader, +{:.1} MiB after; disk +{:.2} MiB",
        rss_up as f64 / MIB as f64,
        rss_stalled as f64 / MIB as f64,
        rss_all as f64 / MIB as f64,
        disk_up as f64 / MIB as f64
    );
    assert!(disk_up <= a.size + MIB, "disk grew {disk_up}");
    assert!(disk_up >= a.size, "the file is there");
    for grew in [rss_up, rss_stalled, rss_all] {
        assert!(grew < 16 * MIB, "RSS grew {grew} bytes for 48 MiB");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attachment_messages_speak_version_5() {
    assert_eq!(PROTOCOL_VERSION, 5);
    let m = Message::AttachOffer {
        hash: [7; 32],
        size: 300,
    };
    let b = m.encode();
    assert_eq!(&b[..2], [5, 8]);
    assert_eq!(&b[34..], [0xac, 0x02]);
    assert_eq!(Message::decode(&b).unwrap(), m);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_nodes_keep_the_bytes_in_chunk_rows_checked_and_bounded() {
    let pg = common::pg::Postgres::start("att-pg");
    let limits = ["--max-repo-attachment-bytes", "1000000"];
    let n1 = Server::node("att-pg-1", &pg.url, &limits);
    let n2 = Server::node("att-pg-2", &pg.url, &limits);
    let (big, small, over) = (bytes(600_000, 12), bytes(3, 13), bytes(500_000, 14));
    let (a, b, c) = (att(&big), att(&small), att(&over));
    let _owner = founded(&n1.url, "files", &[&a, &b, &c], false).await;
    // A stranger (a reader) stores nothing; the writer uploads through node 1.
    let (mut s, _) = session(&n1.url, "files", Some(&identity(3))).await;
    let got = refusal(upload(&mut s, &a, &big).await);
    assert_eq!(got, ("PermissionError".into(), "cannot-write".into()));
    let (mut w, _) = session(&n1.url, "files", Some(&identity(2))).await;
    let mut forged = big.clone();
    forged[1] ^= 1;
    let got = refusal(upload(&mut w, &a, &forged).await);
    assert_eq!(got, ("SignatureError".into(), "tampered".into()));
    let client = pg.client().await;
    let count = |t: &'static str| {
        let c = &client;
        async move {
            let q = format!("SELECT count(*) FROM {t}");
            c.query_one(q.as_str(), &[]).await.unwrap().get::<_, i64>(0)
        }
    };
    assert_eq!(
        (
            count("ibexdb_attachments").await,
            count("ibexdb_attachment_chunks").await
        ),
        (0, 0)
    );
    for (x, data) in [(&a, &big), (&b, &small)] {
        assert!(
            matches!(upload(&mut w, x, data).await, Some(Message::AttachWant { offset, .. }) if offset == x.size)
        );
    }
    // 600,000 bytes in rows of 256 KiB: 3 rows; 3 bytes: 1.
    assert_eq!(
        (
            count("ibexdb_attachments").await,
            count("ibexdb_attachment_chunks").await
        ),
        (2, 4)
    );
    // Over the repository's limit, counted across nodes: refused through node 2.
    let (mut w2, _) = session(&n2.url, "files", Some(&identity(2))).await;
    let got = refusal(upload(&mut w2, &c, &over).await);
    assert_eq!(got, ("LimitError".into(), "attachment bytes".into()));
    // A reader on the other node downloads them, whole and from an offset inside a row.
    let (mut r, _) = session(&n2.url, "files", None).await;
    assert!(download(&mut r, &a, 0).await.unwrap() == big);
    assert!(download(&mut r, &a, 300_001).await.unwrap() == big[300_001..]);
    assert!(download(&mut r, &b, 0).await.unwrap() == small);
    // A dropped upload leaves no row and no staged file.
    send(
        &mut w2,
        &Message::AttachOffer {
            hash: a.hash,
            size: a.size,
        },
    )
    .await;
    assert!(
        matches!(next_attach(&mut w2).await, Some(Message::AttachWant { offset, .. }) if offset == a.size)
    );
    assert_eq!(count("ibexdb_attachments").await, 2);
    let staged = std::env::temp_dir().join("ibexdb-server-uploads");
    let mine = |n: &Server| format!("tmp-{}-", n.pid());
    for n in [&n1, &n2] {
        assert!(
            names(&staged).iter().all(|f| !f.starts_with(&mine(n))),
            "no staged file"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_upload_is_ended_and_leaves_no_file() {
    let server = Server::fresh_with("att-stall", &["--message-timeout-ms", "1000"]);
    let data = bytes(600_000, 15);
    let a = att(&data);
    let _owner = founded(&server.url, "files", &[&a], false).await;
    let (mut w, _) = session(&server.url, "files", Some(&identity(2))).await;
    send(
        &mut w,
        &Message::AttachOffer {
            hash: a.hash,
            size: a.size,
        },
    )
    .await;
    assert!(matches!(
        next_attach(&mut w).await,
        Some(Message::AttachWant { offset: 0, .. })
    ));
    let m = Message::AttachChunk {
        hash: a.hash,
        offset: 0,
        bytes: data[..ATTACH_CHUNK_BYTES].to_vec(),
    };
    send(&mut w, &m).await;
    // Answering pings keeps the connection, not the upload.
    let t = Instant::now();
    let (code, text) = expect_error(&mut w, WAIT).await;
    assert_eq!(code, ErrorCode::Limit, "{text}");
    assert!(text.contains("attachment upload timeout"), "{text}");
    assert!(t.elapsed() < Duration::from_secs(5));
    let dir = files_dir(&server, "files");
    let deadline = Instant::now() + WAIT;
    while !names(&dir).is_empty() {
        assert!(Instant::now() < deadline, "left {:?}", names(&dir));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
