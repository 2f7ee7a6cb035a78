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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seal_only_pushes_need_write_and_known_seals_are_not_stored_again() {
    let server = Server::fresh("seals");
    let url = server.url.clone();
    let owner = team_founded(&url, "r").await;
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
    let owner = team_founded(&url, "r").await;
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

/// Write `burst` to `raw` as fast as it is taken, for `d`; the bytes taken.
async fn push_for(raw: &mut raw_ws::Raw, burst: &[u8], d: Duration) -> u64 {
    let end = tokio::time::Instant::now() + d;
    let mut n = 0;
    while let Ok(Ok(())) = tokio::time::timeout_at(end, raw.tcp.writable()).await {
        match raw.tcp.try_write(burst) {
            Ok(k) => n += k as u64,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => panic!("closed before the client read its refusals: {e}"),
        }
    }
    n
}

/// §6: a client whose pushes are refused and who never reads: the refusals are queued only up
/// to `--queue-bytes`, then the connection is dropped; the log is rate-limited.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_to_a_client_that_does_not_read_stay_within_the_queue_and_the_log() {
    let args = [
        "--queue-bytes",
        "262144",
        "--push-rate",
        "1000000",
        "--push-burst",
        "1000000",
    ];
    let server = Server::fresh_with("noread", &args);
    let url = server.url.clone();
    let owner = team_founded(&url, "r").await;
    let before = server.log_len("r");
    let (commits, _) = owner.repo.export().unwrap();
    // A decodable commit sent under another id: refused (tampered), the connection kept.
    let bad = Message::Push {
        commits: vec![(CommitId([5; 32]), commits[0].1.clone())],
        seals: vec![],
    };
    let f = raw_ws::frame(2, &bad.encode());
    let base = Baseline::take(server.pid(), &server.data);
    let log_before = server.log_text().len();
    // Pushed until the server stops reading: it refuses each push, the refusals fill the
    // kernel's buffers towards the client, then the queue; past its bound the connection is
    // dropped (queue discarded, nothing more read). Its last message, and the close, wait for
    // the client to read, up to the write timeout (`--idle-timeout-ms`): a slow reader learns
    // why it was dropped. (This test once treated "the socket closed within 5 s" as "dropped":
    // true only when the queue filled before the kernel's buffers, which a loaded machine's
    // debug server did not reach in 5 s; it flaked 2 of 20 runs, and every run under load.)
    let mut raw = raw_ws::Raw::connect_small(&server.addr, 4096).await;
    raw.hello("r").await;
    let (mut sent, burst) = (0u64, f.repeat(64));
    let t = std::time::Instant::now();
    let what = "ibexdb_refusals_total{what=\"SignatureError\"}";
    // Dropped: for 2 s the server refused nothing more and took none of the client's bytes.
    let (mut refused, mut still) = (-1.0, std::time::Instant::now());
    loop {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the server kept reading"
        );
        let wrote = push_for(&mut raw, &burst, Duration::from_millis(250)).await;
        sent += wrote;
        let now = server.metric(what);
        if now != refused || wrote > 0 {
            (refused, still) = (now, std::time::Instant::now());
        } else if still.elapsed() >= Duration::from_secs(2) {
            break;
        }
    }
    let (rss, disk) = base.grew(&server.data);
    let logged = server.log_text().len() - log_before;
    eprintln!(
        "sent {sent} bytes of refused pushes ({refused} refused, dropped after {:?}): RSS +{} KiB, disk +{disk}, log +{logged} bytes",
        t.elapsed(),
        rss >> 10
    );
    assert!(
        sent > 1 << 20,
        "the client pushed more than the queue holds: {sent}"
    );
    assert!(rss < 24 << 20, "RSS grew {rss} bytes");
    assert!(logged < 64 << 10, "the log grew {logged} bytes");
    assert!(server.metric("ibexdb_log_suppressed_total") > 0.0);
    // Reading at last, the client finds refusals, the last one, then the close.
    let (mut errors, mut last) = (0u64, None);
    loop {
        match raw.next(WAIT).await {
            raw_ws::Got::Frame(2, p) => {
                last = Some(Message::decode(&p).unwrap());
                errors += 1;
            }
            raw_ws::Got::Frame(8, _) | raw_ws::Got::Closed => break,
            raw_ws::Got::Frame(..) => {}
            raw_ws::Got::Nothing => panic!("not closed after {errors} refusals read"),
        }
    }
    assert!(matches!(last, Some(Message::Error { .. })), "{last:?}");
    assert!(errors as f64 <= refused, "{errors} read, {refused} refused");
    assert_eq!(server.log_len("r"), before, "nothing stored");
    drop(owner);
}

/// §7: a message begun and never finished, the client answering every ping: closed after
/// `--message-timeout-ms` with a `LimitError`, though the idle timer never fires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_never_finished_is_closed_at_its_deadline_though_pongs_arrive() {
    let args = ["--message-timeout-ms", "1500", "--idle-timeout-ms", "600"];
    let server = Server::fresh_with("slowmsg", &args);
    let owner = team_founded(&server.url, "r").await;
    let mut raw = raw_ws::Raw::connect(&server.addr).await;
    raw.hello("r").await;
    let t = std::time::Instant::now();
    // The first fragment of a message; pongs may come between fragments, the rest never does.
    raw.send(&raw_ws::first_fragment(2, &vec![0u8; 64 << 10]))
        .await;
    let mut pongs = 0;
    let err = loop {
        match raw.next(Duration::from_secs(10)).await {
            raw_ws::Got::Frame(9, p) => {
                pongs += 1;
                raw.send(&raw_ws::frame(10, &p)).await;
            }
            raw_ws::Got::Frame(2, p) => {
                if let m @ Message::Error { .. } = Message::decode(&p).unwrap() {
                    break m;
                }
            }
            raw_ws::Got::Frame(..) => {}
            _ => panic!("closed without an Error after {:?}", t.elapsed()),
        }
        assert!(t.elapsed() < Duration::from_secs(10), "still open");
    };
    let took = t.elapsed();
    match err {
        Message::Error { code, message, .. } => {
            assert_eq!(code, ErrorCode::Limit);
            assert!(
                message.contains("message timeout") && message.contains("--message-timeout-ms"),
                "{message}"
            );
        }
        m => panic!("expected an Error, got {m:?}"),
    }
    assert!(pongs >= 1, "the client answered pings meanwhile");
    assert!(
        took >= Duration::from_millis(1400) && took < Duration::from_secs(5),
        "{took:?}"
    );
    drop(owner);
}

/// §8: a message over `--max-message-bytes` gets the `LimitError` before the close, even when
/// the client is still sending megabytes of it (no reset that would destroy the refusal).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_message_gets_its_limit_error_not_a_reset() {
    let server = Server::fresh_with("huge", &["--max-message-bytes", "1048576"]);
    let owner = team_founded(&server.url, "r").await;
    let before = server.log_len("r");
    let base = Baseline::take(server.pid(), &server.data);
    for _ in 0..3 {
        let mut ws = socket(&server.url).await;
        hello(&mut ws, "r").await;
        let big = Message::Push {
            commits: vec![(CommitId([1; 32]), vec![0; 8 << 20])],
            seals: vec![],
        };
        use futures_util::SinkExt;
        let _ = ws
            .send(tokio_tungstenite::tungstenite::Message::binary(
                big.encode(),
            ))
            .await;
        let (code, text) = expect_error(&mut ws, WAIT).await;
        assert_eq!(code, ErrorCode::Limit, "{text}");
        assert!(
            text.contains("message size") && text.contains("1048576"),
            "{text}"
        );
    }
    let (rss, disk) = base.grew(&server.data);
    eprintln!(
        "3 x 8 MiB over-size messages: RSS +{} KiB, disk +{disk}",
        rss >> 10
    );
    assert!(rss < 16 << 20, "RSS grew {rss}");
    assert_eq!(server.log_len("r"), before, "nothing stored");
    drop(owner);
}

/// §12: a server full of one address's connections still answers `/metrics` and admits a
/// newcomer (the reserve); the push budget is the address's and survives reconnecting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_server_keeps_room_for_newcomers_and_metrics() {
    let args = [
        "--max-connections",
        "20",
        "--max-connections-per-ip",
        "20",
        "--reserved-connections",
        "2",
    ];
    let server = Server::fresh_with("full", &args);
    // A repository anyone may read, founded from another address (its founder stays: 1 place).
    let mut owner = Peer::new(1, "r");
    owner.repo.set_public(true, true).unwrap();
    owner.connect_from(&server.url, "127.0.0.3").await;
    owner.settle(1).await;
    let mut held = Vec::new();
    for _ in 0..17 {
        let mut ws = try_socket(&server.url, Some("127.0.0.1")).await.unwrap();
        hello(&mut ws, "r").await;
        held.push(ws);
    }
    let mut over = try_socket(&server.url, Some("127.0.0.1")).await.unwrap();
    let (code, text) = expect_error(&mut over, WAIT).await;
    assert_eq!(code, ErrorCode::Limit);
    assert!(text.contains("--reserved-connections"), "{text}");
    let mut newcomer = try_socket(&server.url, Some("127.0.0.2")).await.unwrap();
    hello(&mut newcomer, "r").await;
    let (status, body) = server.http_get("/metrics");
    assert!(status.contains("200"), "{status}");
    assert!(body.contains("ibexdb_connections 19"), "{body}");
    drop(owner);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconnecting_does_not_refill_the_push_budget() {
    let args = ["--push-rate", "1", "--push-burst", "2"];
    let server = Server::fresh_with("budget", &args);
    let url = server.url.clone();
    let owner = team_founded(&url, "r").await; // one push of the burst
    let empty = Message::Push {
        commits: vec![],
        seals: vec![],
    };
    let mut ws = socket(&url).await;
    hello_as(&mut ws, &url, "r", Some(&identity(1))).await;
    send(&mut ws, &empty).await;
    assert!(matches!(answer(&mut ws).await, Some(Message::Ack { .. })));
    drop(ws);
    let mut ws = socket(&url).await;
    hello_as(&mut ws, &url, "r", Some(&identity(1))).await;
    send(&mut ws, &empty).await;
    match answer(&mut ws).await {
        Some(Message::Error { code, message, .. }) => {
            assert_eq!(code, ErrorCode::Limit);
            assert!(message.contains("push rate"), "{message}");
        }
        m => panic!("expected the push rate refusal, got {m:?}"),
    }
    drop(owner);
}

/// §5: orphans (commits whose parent never comes) wait encoded: six of 1 MiB lists of nulls
/// (32 MiB each once decoded) cost the server about what was sent, and the bound is in bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orphans_wait_encoded_and_bounded_in_bytes() {
    let server = Server::fresh_with("orphans", &["--max-parked-bytes", "7000000"]);
    let url = server.url.clone();
    let mut a = Peer::team("r", &[1]).remove(0);
    a.repo
        .commit({
            let mut t = ibexdb::Txn::new();
            t.put("items/withheld", ibexdb::map! { "n" => 1 }.as_map())
                .unwrap();
            t
        })
        .unwrap();
    for i in 0..7 {
        let mut t = ibexdb::Txn::new();
        let nulls = ibexdb::Value::List(vec![ibexdb::Value::Null; 1 << 20]);
        t.put(
            &format!("items/o{i}"),
            ibexdb::map! { "l" => nulls }.as_map(),
        )
        .unwrap();
        a.repo.commit(t).unwrap();
    }
    a.repo.seal().unwrap();
    let (commits, seals) = a.repo.export().unwrap();
    // commits[0] founds the repository, [1] is the withheld parent, [2..] the orphans.
    let mut ws = socket(&url).await;
    hello_as(&mut ws, &url, "r", Some(&identity(1))).await;
    let root = Message::Push {
        commits: vec![commits[0].clone()],
        seals: seals.clone(),
    };
    send(&mut ws, &root).await;
    assert!(matches!(answer(&mut ws).await, Some(Message::Ack { ids }) if ids.len() == 1));
    let before = server.log_len("r");
    let base = Baseline::take(server.pid(), &server.data);
    let mut sent = 0;
    for o in &commits[2..8] {
        let push = Message::Push {
            commits: vec![o.clone()],
            seals: seals.clone(),
        };
        let bytes = push.encode();
        sent += bytes.len();
        send(&mut ws, &push).await;
        match answer(&mut ws).await {
            Some(Message::Ack { ids }) => assert!(ids.is_empty(), "an orphan is not acknowledged"),
            m => panic!("expected an empty Ack, got {m:?}"),
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (rss, disk) = base.grew(&server.data);
    eprintln!(
        "6 orphans of 1 MiB lists of nulls ({sent} bytes sent): RSS +{} KiB, disk +{disk}",
        rss >> 10
    );
    assert!(
        rss < 3 * sent as u64 + (16 << 20),
        "RSS grew {rss} for {sent} sent"
    );
    // Only their seal is stored (it covers ids the server does not have, within its bounds).
    assert!(
        server.log_len("r") - before < 4096,
        "orphans are not stored"
    );
    let parked_log = server.log_len("r");
    // The seventh would pass --max-parked-bytes: refused, nothing stored.
    let push = Message::Push {
        commits: vec![commits[8].clone()],
        seals: seals.clone(),
    };
    send(&mut ws, &push).await;
    match answer(&mut ws).await {
        Some(Message::Error { code, message, .. }) => {
            assert_eq!(code, ErrorCode::Limit);
            assert!(
                message.contains("parked bytes") && message.contains("--max-parked-bytes"),
                "{message}"
            );
        }
        m => panic!("expected the parked-bytes refusal, got {m:?}"),
    }
    assert_eq!(server.log_len("r"), parked_log, "nothing stored");
    // The parent arrives: the six are stored and acknowledged.
    let push = Message::Push {
        commits: vec![commits[1].clone()],
        seals,
    };
    send(&mut ws, &push).await;
    match answer(&mut ws).await {
        Some(Message::Ack { ids }) => assert_eq!(ids.len(), 1),
        m => panic!("expected an Ack, got {m:?}"),
    }
    assert!(server.log_len("r") > before + 6 * (1 << 20));
}
