//! The hostile cases over TLS (issue 23): the server serving `wss://` (`--tls-cert`,
//! `--tls-key`, a self-signed certificate made here) holds as over plain TCP — forged and
//! replayed handshakes, an over-size message, slowloris during the TLS handshake and after it,
//! a slow reader, and memory per connection, idle and half-open (a TLS handshake begun and
//! never finished), measured from outside.

mod common;
use common::measure::rss;
use common::*;
use futures_util::SinkExt;
use ibexdb::{ErrorCode, Message, SessionProof};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_tungstenite::tungstenite::Message as Ws;

const WAIT: Duration = Duration::from_secs(10);
const KIB: u64 = 1 << 10;

/// A server on `wss://` with `args`, and a client configuration that trusts its certificate.
fn tls_server(tag: &str, args: &[&str]) -> (Server, TlsConnector) {
    let dir = Server::dir(tag);
    std::fs::create_dir_all(&dir).unwrap();
    let key = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let (cert, keyfile) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, key.cert.pem()).unwrap();
    std::fs::write(&keyfile, key.signing_key.serialize_pem()).unwrap();
    let tls = [
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        keyfile.to_str().unwrap(),
    ];
    let server = Server::start_with(dir.join("data"), &[&tls[..], args].concat());
    assert!(server.url.starts_with("wss://"));
    (server, tls_connector(key.cert.der()))
}

/// Metric `name` of a TLS server (its `/metrics` over `https://`).
async fn tls_metric(server: &Server, tls: &TlsConnector, name: &str) -> f64 {
    let tcp = TcpStream::connect(&server.addr).await.unwrap();
    let host = tokio_rustls::rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut s = tls.connect(host, tcp).await.unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut body = String::new();
    let _ = s.read_to_string(&mut body).await;
    let line = body
        .lines()
        .find(|l| l.starts_with(name) && !l.starts_with('#'))
        .unwrap_or_else(|| panic!("no metric {name} in\n{body}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

/// Found `repo` over TLS as peer 1 of a team (anyone may read); the owner, settled.
async fn founded(server: &Server, tls: &TlsConnector, repo: &str) -> Peer {
    let mut owner = Peer::team(repo, &[1]).remove(0);
    owner.connect_tls(&server.url, tls).await;
    owner.push().await;
    owner.settle(1).await;
    owner
}

/// Whether the server closed `tcp` (end of stream or reset) within `wait`.
async fn closed_within(tcp: &mut TcpStream, wait: Duration) -> bool {
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, tcp.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
            Err(_) => return false,
        }
    }
}

/// `len` bytes of a ClientHello that claims 0xFFFF bytes (the most a handshake message may
/// hold) and never ends, in records of 16 KiB.
fn endless_client_hello(len: usize) -> Vec<u8> {
    let mut body = vec![0x01, 0x00, 0xFF, 0xFF];
    body.resize(len - 5 * len.div_ceil(16 << 10), 0x41);
    let mut out = Vec::new();
    for chunk in body.chunks(16 << 10) {
        out.extend_from_slice(&[0x16, 0x03, 0x01]);
        out.extend_from_slice(&(chunk.len() as u16).to_be_bytes());
        out.extend_from_slice(chunk);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_and_replayed_handshakes_are_refused_over_tls() {
    let (server, tls) = tls_server("tls-auth", &[]);
    let owner = founded(&server, &tls, "r").await;
    let before = server.log_len("r");
    // The name the client dials (the certificate's).
    let url = server.url.replace("127.0.0.1", "localhost");
    let me = ibexdb::Identity::from_entropy(&[1; 48]);
    let answer = |proof: Box<dyn FnOnce([u8; 32]) -> SessionProof + Send>| {
        let (server_url, tls) = (server.url.clone(), tls.clone());
        async move {
            let mut ws = tls_socket(&server_url, &tls).await;
            let nonce = challenge(&mut ws).await;
            let m = Message::Hello {
                repo: "r".into(),
                cursor: 0,
                auth: Some(proof(nonce)),
                create: false,
            };
            send(&mut ws, &m).await;
            match recv(&mut ws, WAIT).await {
                Some(Message::Welcome { .. }) => None,
                Some(Message::Error { code, message, .. }) => Some((code, message)),
                m => panic!("unexpected {m:?}"),
            }
        }
    };
    let (u, k) = (url.clone(), me.clone());
    assert_eq!(
        answer(Box::new(move |n| SessionProof::sign(&k, n, &u, "r"))).await,
        None,
        "a good proof is welcome over TLS"
    );
    // Replayed: the answer to another connection's challenge.
    let mut other = tls_socket(&server.url, &tls).await;
    let old = challenge(&mut other).await;
    let (u, k) = (url.clone(), me.clone());
    let (code, text) = answer(Box::new(move |_| SessionProof::sign(&k, old, &u, "r")))
        .await
        .unwrap();
    assert_eq!(code, ErrorCode::Auth);
    assert!(text.contains("replayed"), "{text}");
    // Made for another server.
    let k = me.clone();
    let (code, text) = answer(Box::new(move |n| {
        SessionProof::sign(&k, n, "wss://evil.example/", "r")
    }))
    .await
    .unwrap();
    assert_eq!(code, ErrorCode::Auth);
    assert!(text.contains("wrong-server"), "{text}");
    // Signed by another key than the one it names.
    let (u, k) = (url.clone(), me.public());
    let (code, text) = answer(Box::new(move |n| {
        let mut p = SessionProof::sign(&identity(7), n, &u, "r");
        p.key = k;
        p
    }))
    .await
    .unwrap();
    assert_eq!(code, ErrorCode::Auth);
    assert!(text.contains("bad-signature"), "{text}");
    // A message before the Hello.
    let mut ws = tls_socket(&server.url, &tls).await;
    challenge(&mut ws).await;
    let push = Message::Push {
        commits: vec![],
        seals: vec![],
    };
    send(&mut ws, &push).await;
    let (code, _) = expect_error(&mut ws, WAIT).await;
    assert_eq!(code, ErrorCode::Protocol);
    assert_eq!(server.log_len("r"), before, "nothing stored");
    drop(owner);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_message_over_tls_gets_its_limit_error() {
    let (server, tls) = tls_server("tls-size", &["--max-message-bytes", "65536"]);
    let owner = founded(&server, &tls, "r").await;
    let before = server.log_len("r");
    let mut ws = tls_socket(&server.url, &tls).await;
    hello(&mut ws, "r").await;
    // 8 MiB, far past the limit: the refusal still arrives (no reset destroys it).
    let big = Message::Push {
        commits: vec![(ibexdb::CommitId([1; 32]), vec![0; 8 << 20])],
        seals: vec![],
    };
    // The server reads and drops the rest unparsed while its refusal goes out (its linger).
    let _ = ws.send(Ws::binary(big.encode())).await;
    let (code, text) = expect_error(&mut ws, WAIT).await;
    assert_eq!(code, ErrorCode::Limit, "{text}");
    assert!(
        text.contains("message size") && text.contains("65536"),
        "{text}"
    );
    assert!(recv(&mut ws, WAIT).await.is_none(), "closed after it");
    assert_eq!(server.log_len("r"), before, "nothing stored");
    drop(owner);
}

/// Slowloris at each stage: a TLS handshake begun and never finished, an HTTP head sent a byte
/// at a time inside TLS, an upgraded connection that never says `Hello`. Each is closed at
/// `--handshake-timeout-ms` (the last told `LimitError`), and a good client is served meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slowloris_during_and_after_the_tls_handshake_is_cut_at_the_handshake_timeout() {
    let (server, tls) = tls_server("tls-slow", &["--handshake-timeout-ms", "1500"]);
    let owner = founded(&server, &tls, "r").await;
    let t = Instant::now();
    // During the TLS handshake: half a ClientHello record, then silence.
    let mut half = TcpStream::connect(&server.addr).await.unwrap();
    half.write_all(&endless_client_hello(100)).await.unwrap();
    // After it: TLS done, the HTTP request head a byte every 100 ms.
    let name = tokio_rustls::rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let tcp = TcpStream::connect(&server.addr).await.unwrap();
    let mut dribble = tls.connect(name, tcp).await.expect("TLS handshake");
    let head = b"GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n";
    let dribbler = tokio::spawn(async move {
        for b in head.iter().cycle() {
            if dribble.write_all(&[*b]).await.is_err() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            let mut buf = [0u8; 64];
            if let Ok(r) =
                tokio::time::timeout(Duration::from_millis(1), dribble.read(&mut buf)).await
            {
                if matches!(r, Ok(0) | Err(_)) {
                    return true;
                }
            }
        }
        false
    });
    // Upgraded, then silent: no Hello.
    let mut mute = tls_socket(&server.url, &tls).await;
    challenge(&mut mute).await;
    // A good client meanwhile.
    let mut reader = tls_socket(&server.url, &tls).await;
    hello(&mut reader, "r").await;

    assert!(closed_within(&mut half, WAIT).await, "half a ClientHello");
    let (code, text) = expect_error(&mut mute, WAIT).await;
    assert_eq!(code, ErrorCode::Limit);
    assert!(text.contains("handshake timeout"), "{text}");
    assert!(
        tokio::time::timeout(WAIT, dribbler).await.unwrap().unwrap(),
        "the dribbled HTTP head"
    );
    let took = t.elapsed();
    assert!(took < Duration::from_secs(6), "all cut by {took:?}");
    drop(owner);
}

/// A reader that stops reading over TLS while data is relayed is dropped at its queue's bound
/// (`--queue-bytes`), finds the refusal when it reads at last, and the server's memory stays
/// bounded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_reader_over_tls_is_dropped_and_memory_stays_bounded() {
    let args = [
        "--queue-bytes",
        "1048576",
        "--push-rate",
        "1000",
        "--push-bytes-rate",
        "1000000000",
        "--push-bytes-burst",
        "1000000000",
    ];
    let (server, tls) = tls_server("tls-slowread", &args);
    let mut owner = founded(&server, &tls, "r").await;
    let mut slow = tls_socket(&server.url, &tls).await;
    hello(&mut slow, "r").await; // then it does not read
    let before = rss(server.pid());
    owner.pad = 200_000;
    for _ in 0..60 {
        owner.write();
        owner.push().await;
        while owner.event(Duration::from_millis(2)).await.is_some() {}
    }
    owner.settle(61).await;
    let grew = rss(server.pid()).saturating_sub(before);
    eprintln!(
        "12 MB relayed to a TLS reader that does not read: RSS +{} KiB",
        grew / KIB
    );
    let drops = tls_metric(&server, &tls, "ibexdb_queue_drops_total").await;
    assert!(drops >= 1.0, "dropped");
    assert!(grew < 48 << 20, "RSS grew {grew}");
    let (code, text) = expect_error(&mut slow, WAIT).await;
    assert_eq!(code, ErrorCode::Limit);
    assert!(text.contains("--queue-bytes"), "{text}");
}

/// What TLS connections cost: idle subscribers, and handshakes begun and never finished, each
/// holding all a client may send before its handshake completes (`MAX_HANDSHAKE_BYTES`,
/// 16 KiB, of a ClientHello claiming 64 KiB), until the handshake timeout closes them. A client
/// that sends more is closed at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_connections_idle_and_half_open_cost_bounded_memory() {
    let (server, tls) = tls_server("tls-mem", &["--handshake-timeout-ms", "5000"]);
    let owner = founded(&server, &tls, "r").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let n = 100u64;
    let before = rss(server.pid());
    let mut idle = Vec::new();
    for _ in 0..n {
        let mut ws = tls_socket(&server.url, &tls).await;
        hello(&mut ws, "r").await;
        idle.push(ws);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let per_idle = rss(server.pid()).saturating_sub(before) / n;

    let before = rss(server.pid());
    let t = Instant::now();
    let most = endless_client_hello(16 << 10);
    let mut half = Vec::new();
    for _ in 0..n {
        let mut tcp = TcpStream::connect(&server.addr).await.unwrap();
        tcp.write_all(&most).await.unwrap();
        half.push(tcp);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let per_half = rss(server.pid()).saturating_sub(before) / n;
    assert!(
        !closed_within(&mut half[0], Duration::from_millis(300)).await,
        "a handshake within the bound waits for its timeout"
    );
    eprintln!(
        "RSS per TLS connection: idle subscriber {} KiB, half-open handshake (16 KiB of ClientHello) {} KiB",
        per_idle / KIB,
        per_half / KIB
    );
    assert!(per_idle < 128 * KIB, "idle: {per_idle}");
    assert!(per_half < 48 * KIB, "half-open: {per_half}");
    // More than a handshake may read: closed at once, not at the timeout.
    let mut over = TcpStream::connect(&server.addr).await.unwrap();
    over.write_all(&endless_client_hello(64 << 10))
        .await
        .unwrap();
    assert!(
        closed_within(&mut over, Duration::from_secs(2)).await,
        "over the bound"
    );
    assert!(t.elapsed() < Duration::from_secs(4), "before the timeout");
    for tcp in half.iter_mut() {
        assert!(
            closed_within(tcp, WAIT).await,
            "closed at the handshake timeout"
        );
    }
    drop((idle, owner));
}
