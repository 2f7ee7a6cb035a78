//! The bounds of the server's door (issue 27 §4; docs/design.md §12.4 "Bearer tokens"),
//! measured from outside on the real server over real WebSockets:
//!
//! * a flood of 1,000 connections with bad, expired, forged, unknown-kid and oversized bearer
//!   tokens (up to and past `MAX_TOKEN_BYTES`) is refused, each with its typed `AuthError` kind,
//!   leaves no byte on disk and costs a bounded amount of resident memory;
//! * a JWKS URL that answers with an endless body (by length, by chunks or until the close), an
//!   endless head, a trickle, garbage or JSON nested past the parser's depth is read within its
//!   byte bound and its time bound: the refresh is logged `event=jwks_refresh ok=false` with the
//!   reason, RSS stays bounded, and the server keeps serving good tokens with its last good keys,
//!   also while a fetch hangs;
//! * a flood of tokens naming an unknown kid while the JWKS URL hangs makes one fetch, not one
//!   per token (the refresh interval counts from the end of the last fetch).

mod common;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use common::measure::Baseline;
use common::*;
use ibexdb::{ErrorCode, Message, SessionProof};
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

const WAIT: Duration = Duration::from_secs(15);
const AUD: &str = "task-board";
/// `auth.rs` `MAX_TOKEN_BYTES`.
const MAX_TOKEN_BYTES: usize = 8192;
/// `jwks_fetch.rs` `MAX_JWKS_BYTES`.
const MAX_JWKS_BYTES: usize = 256 << 10;
const MIB: u64 = 1 << 20;

fn b64(b: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(b)
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// The identity provider: a published P-256 key (`es1`) and one nobody published.
struct Provider {
    es: EcdsaKeyPair,
    stranger: EcdsaKeyPair,
    rng: SystemRandom,
}

impl Provider {
    fn new() -> Provider {
        let rng = SystemRandom::new();
        let key = |rng: &SystemRandom| {
            let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
            let pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, rng).unwrap();
            EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), rng).unwrap()
        };
        Provider {
            es: key(&rng),
            stranger: key(&rng),
            rng,
        }
    }

    fn jwks(&self) -> Vec<u8> {
        let p = self.es.public_key().as_ref();
        json!({ "keys": [{ "kty": "EC", "crv": "P-256", "kid": "es1", "alg": "ES256",
                           "x": b64(&p[1..33]), "y": b64(&p[33..65]) }] })
        .to_string()
        .into_bytes()
    }

    /// An ES256 JWS naming `kid`, signed by the published key or (`forged`) the stranger's.
    fn sign(&self, kid: &str, claims: &Value, forged: bool) -> String {
        let header = json!({ "alg": "ES256", "typ": "JWT", "kid": kid });
        let input = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        );
        let key = if forged { &self.stranger } else { &self.es };
        let sig = key.sign(&self.rng, input.as_bytes()).unwrap();
        format!("{input}.{}", b64(sig.as_ref()))
    }
}

/// Claims good for an hour for every `flood-*` and `team-*` repository, with `pad` bytes of
/// filler (to bring a token near the size limit).
fn claims(pad: usize) -> Value {
    json!({ "sub": "user-1", "aud": AUD, "iat": now(), "exp": now() + 3600,
            "ibexdb_repos": ["flood-*", "team-*"], "ibexdb_create": true, "pad": "p".repeat(pad) })
}

/// A token in the Authorization header, or in the `ibexdb.bearer.` subprotocol.
enum Bearer {
    Header(String),
    Protocol(String),
}

/// Connect with `bearer`, answer the challenge with a keyed `Hello` for `repo` (offering to
/// create it): the `AuthError`'s kind, `Code:kind` for another error, or "welcomed".
async fn attempt(url: &str, bearer: &Bearer, repo: &str) -> String {
    let mut req = url.into_client_request().unwrap();
    let h = req.headers_mut();
    match bearer {
        Bearer::Header(t) => h.insert("authorization", format!("Bearer {t}").parse().unwrap()),
        Bearer::Protocol(t) => h.insert(
            "sec-websocket-protocol",
            format!("ibexdb, ibexdb.bearer.{t}").parse().unwrap(),
        ),
    };
    let addr = url.split("://").nth(1).unwrap();
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let io: Box<dyn Io> = Box::new(tcp);
    let (mut ws, _) = tokio_tungstenite::client_async(req, io).await.unwrap();
    loop {
        match recv(&mut ws, WAIT).await {
            Some(Message::Challenge { nonce, .. }) => {
                let auth = Some(SessionProof::sign(&identity(3), nonce, url, repo));
                let hello = Message::Hello {
                    repo: repo.into(),
                    cursor: 0,
                    auth,
                    create: true,
                };
                send(&mut ws, &hello).await;
            }
            Some(Message::Error { code, kind, .. }) => {
                let kind = kind.unwrap_or_default();
                return match code {
                    ErrorCode::Auth => kind,
                    code => format!("{code:?}:{kind}"),
                };
            }
            Some(Message::Welcome { .. }) => return "welcomed".into(),
            m => panic!("unexpected {m:?}"),
        }
    }
}

/// The `i`th token of the flood, with the kind the server must answer.
fn hostile(idp: &Provider, i: usize) -> (Bearer, &'static str) {
    // Filler that brings a signed token to just under the limit (base64 grows it by 4/3).
    let near = (MAX_TOKEN_BYTES - 400) * 3 / 4;
    let mut expired = claims(near);
    expired["exp"] = json!(now() - 3600);
    let mut wrong_aud = claims(i % 2000);
    wrong_aud["aud"] = json!("other-app");
    let (token, kind) = match i % 7 {
        0 => (idp.sign("es1", &claims(near), true), "token-invalid"),
        1 => (idp.sign("es1", &expired, false), "token-expired"),
        2 => {
            let third = "A".repeat(MAX_TOKEN_BYTES / 3 - 1);
            (format!("{third}.{third}.{third}"), "token-invalid")
        }
        3 => (
            "a".repeat(MAX_TOKEN_BYTES + 1 + i % 4000),
            "token-too-large",
        ),
        4 => (idp.sign("nope", &claims(near), false), "unknown-key"),
        5 => (idp.sign("es1", &wrong_aud, false), "wrong-audience"),
        _ => ("not.a-token".to_string(), "token-invalid"),
    };
    assert!(token.len() <= MAX_TOKEN_BYTES || kind == "token-too-large");
    let bearer = if i % 2 == 0 {
        Bearer::Header(token)
    } else {
        Bearer::Protocol(token)
    };
    (bearer, kind)
}

/// Run attempts `range` of the flood, `par` at a time; every answer must be the typed kind.
async fn flood(url: &str, idp: &Arc<Provider>, range: std::ops::Range<usize>, par: usize) {
    let next = Arc::new(AtomicUsize::new(range.start));
    let mut tasks = Vec::new();
    for _ in 0..par {
        let (url, idp, next, end) = (url.to_string(), idp.clone(), next.clone(), range.end);
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, SeqCst);
                if i >= end {
                    return;
                }
                let (bearer, kind) = hostile(&idp, i);
                let got = attempt(&url, &bearer, &format!("flood-{i}")).await;
                assert_eq!(got, kind, "attempt {i}");
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

/// 1,000 connections with hostile tokens (up to 8 KiB, and past the limit up to 12 KiB), 25 at
/// a time, after 140 to warm the allocator: each refused with its typed kind, nothing on disk,
/// RSS within 6 MiB of the warmed baseline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_hostile_tokens_is_refused_typed_in_bounded_memory_and_stores_nothing() {
    let idp = Arc::new(Provider::new());
    let dir = Server::dir("door-flood");
    std::fs::create_dir_all(&dir).unwrap();
    let jwks = dir.with_extension("jwks.json");
    std::fs::write(&jwks, idp.jwks()).unwrap();
    let jwks = jwks.to_string_lossy().into_owned();
    let server = Server::start_with(dir, &["--auth-jwks", &jwks, "--auth-audience", AUD]);
    let url = server.url.clone();
    flood(&url, &idp, 0..140, 25).await;
    let base = Baseline::take(server.pid(), &server.data);
    let t0 = Instant::now();
    flood(&url, &idp, 140..1140, 25).await;
    let took = t0.elapsed();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (rss, disk) = base.grew(&server.data);
    println!(
        "1000 hostile tokens in {took:?}: RSS +{} KiB (of {} KiB), disk +{disk} B",
        rss >> 10,
        server.rss() >> 10
    );
    assert_eq!(disk, 0, "nothing stored");
    let files: Vec<String> = std::fs::read_dir(&server.data).map_or(Vec::new(), |d| {
        d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    });
    assert!(!files.iter().any(|f| f.starts_with("flood-")), "{files:?}");
    assert!(rss < 6 * MIB, "RSS grew by {rss} bytes");
    // The door still opens for a good token.
    let good = Bearer::Header(idp.sign("es1", &claims(0), false));
    assert_eq!(attempt(&url, &good, "team-ok").await, "welcomed");
}

/// What the JWKS endpoint answers.
#[derive(Clone, Copy, Debug)]
enum Serve {
    /// The keys, with their Content-Length.
    Keys,
    /// A 200 head, then bytes until the reader stops (no length: "until the close").
    Endless,
    /// A 200 head with a Content-Length of 1 GiB, then bytes until the reader stops.
    LongLength,
    /// Chunks of 16 KiB, never the last one.
    EndlessChunks,
    /// A head line that never ends.
    EndlessHead,
    /// A Content-Length of 4 KiB, sent one byte every 50 ms.
    Trickle,
    /// 200 KiB of random bytes, with their length.
    Garbage,
    /// 200 KiB of `[`: JSON nested past any parser's depth.
    Nested,
    /// The request is read and never answered.
    Stall,
}

/// A plain HTTP/1.1 JWKS endpoint on 127.0.0.1: what it serves (switchable), how many requests
/// it had, and how many bytes it managed to send in all.
struct Endpoint {
    url: String,
    serve: Arc<Mutex<Serve>>,
    hits: Arc<AtomicUsize>,
    sent: Arc<AtomicU64>,
}

impl Endpoint {
    async fn start(keys: Vec<u8>) -> Endpoint {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!(
            "http://127.0.0.1:{}/.well-known/jwks.json",
            listener.local_addr().unwrap().port()
        );
        let ep = Endpoint {
            url,
            serve: Arc::new(Mutex::new(Serve::Keys)),
            hits: Arc::new(AtomicUsize::new(0)),
            sent: Arc::new(AtomicU64::new(0)),
        };
        let (serve, hits, sent) = (ep.serve.clone(), ep.hits.clone(), ep.sent.clone());
        let keys = Arc::new(keys);
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (serve, hits, sent, keys) =
                    (serve.clone(), hits.clone(), sent.clone(), keys.clone());
                tokio::spawn(async move {
                    let mut tcp = tcp;
                    let mut head = Vec::new();
                    let mut b = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match tcp.read(&mut b).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&b[..n]),
                        }
                    }
                    hits.fetch_add(1, SeqCst);
                    let mode = *serve.lock().unwrap();
                    answer(&mut tcp, mode, &keys, &sent).await;
                });
            }
        });
        ep
    }

    fn set(&self, serve: Serve) {
        *self.serve.lock().unwrap() = serve;
    }

    fn hits(&self) -> usize {
        self.hits.load(SeqCst)
    }
}

/// Write `bytes` and count them; false once the reader is gone.
async fn put(tcp: &mut tokio::net::TcpStream, bytes: &[u8], sent: &AtomicU64) -> bool {
    let ok = tcp.write_all(bytes).await.is_ok();
    if ok {
        sent.fetch_add(bytes.len() as u64, SeqCst);
    }
    ok
}

async fn answer(tcp: &mut tokio::net::TcpStream, mode: Serve, keys: &[u8], sent: &AtomicU64) {
    const OK: &str = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close";
    // At most 512 MiB of anything endless: far past every bound the fetch has.
    const ENOUGH: usize = 512 << 20;
    let block = vec![b'{'; 16 << 10];
    match mode {
        Serve::Keys => {
            let head = format!("{OK}\r\nContent-Length: {}\r\n\r\n", keys.len());
            put(tcp, &[head.as_bytes(), keys].concat(), sent).await;
        }
        Serve::Endless | Serve::LongLength | Serve::EndlessChunks => {
            let head = match mode {
                Serve::Endless => format!("{OK}\r\n\r\n"),
                Serve::LongLength => format!("{OK}\r\nContent-Length: {}\r\n\r\n", 1u64 << 30),
                _ => format!("{OK}\r\nTransfer-Encoding: chunked\r\n\r\n"),
            };
            let chunk = [format!("{:x}\r\n", block.len()).as_bytes(), &block, b"\r\n"].concat();
            let piece = if matches!(mode, Serve::EndlessChunks) {
                &chunk
            } else {
                &block
            };
            if !put(tcp, head.as_bytes(), sent).await {
                return;
            }
            let mut n = 0;
            while n < ENOUGH && put(tcp, piece, sent).await {
                n += piece.len();
            }
        }
        Serve::EndlessHead => {
            let mut n = 0;
            let mut ok = put(tcp, b"HTTP/1.1 200 OK\r\nX-Filler: ", sent).await;
            while ok && n < ENOUGH {
                ok = put(tcp, &vec![b'a'; 16 << 10], sent).await;
                n += 16 << 10;
            }
        }
        Serve::Trickle => {
            if put(
                tcp,
                format!("{OK}\r\nContent-Length: 4096\r\n\r\n").as_bytes(),
                sent,
            )
            .await
            {
                for _ in 0..4096 {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    if !put(tcp, b" ", sent).await {
                        return;
                    }
                }
            }
        }
        Serve::Garbage | Serve::Nested => {
            let body: Vec<u8> = match mode {
                Serve::Garbage => (0..200u32 << 10)
                    .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
                    .collect(),
                _ => vec![b'['; 200 << 10],
            };
            let head = format!("{OK}\r\nContent-Length: {}\r\n\r\n", body.len());
            put(tcp, &[head.as_bytes(), &body].concat(), sent).await;
        }
        Serve::Stall => tokio::time::sleep(Duration::from_secs(60)).await,
    }
}

/// A JWKS URL that misbehaves in every way: each refresh is bounded in bytes (what the endpoint
/// got to send stays within the fetch's bound plus the sockets' buffers) and in time (at most
/// `FETCH_TIMEOUT`, 5 s), is logged `ok=false` with its reason, leaves RSS within 8 MiB, keeps
/// the last good keys, and a good token is welcomed promptly while the fetch is still running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_jwks_url_is_bounded_in_bytes_and_time_and_the_last_good_keys_serve_on() {
    let idp = Provider::new();
    let ep = Endpoint::start(idp.jwks()).await;
    let dir = Server::dir("door-jwks");
    std::fs::create_dir_all(&dir).unwrap();
    let args = [
        "--auth-jwks",
        &ep.url,
        "--auth-audience",
        AUD,
        "--auth-jwks-refresh-ms",
        "300",
    ];
    let server = Server::start_with(dir, &args);
    let url = server.url.clone();
    let good = Bearer::Header(idp.sign("es1", &claims(0), false));
    let unknown = idp.sign("es9", &claims(0), false);
    assert_eq!(attempt(&url, &good, "team-0").await, "welcomed");
    let base = Baseline::take(server.pid(), &server.data);
    let cases = [
        (Serve::Endless, "over 262144 bytes"),
        (
            Serve::LongLength,
            "Content-Length 1073741824 is over 262144 bytes",
        ),
        (Serve::EndlessChunks, "the body is over 262144 bytes"),
        (Serve::EndlessHead, "the response head is over 16384 bytes"),
        (Serve::Trickle, "no complete answer within 5 s"),
        (Serve::Garbage, "not UTF-8"),
        (Serve::Nested, "not JSON"),
        (Serve::Stall, "no complete answer within 5 s"),
    ];
    let mut peak = 0;
    for (n, (mode, why)) in cases.iter().enumerate() {
        ep.set(*mode);
        let sent0 = ep.sent.load(SeqCst);
        tokio::time::sleep(Duration::from_millis(400)).await;
        let t0 = Instant::now();
        // The unknown kid makes the server fetch; meanwhile a good token is served at once.
        let (u, uu) = (url.clone(), Bearer::Header(unknown.clone()));
        let fetching = tokio::spawn(async move { attempt(&u, &uu, "team-1").await });
        tokio::time::sleep(Duration::from_millis(100)).await;
        let t1 = Instant::now();
        assert_eq!(
            attempt(&url, &good, &format!("team-g{n}")).await,
            "welcomed",
            "{mode:?}"
        );
        let served = t1.elapsed();
        assert_eq!(fetching.await.unwrap(), "unknown-key", "{mode:?}");
        let took = t0.elapsed();
        tokio::time::sleep(Duration::from_millis(200)).await;
        let sent = ep.sent.load(SeqCst) - sent0;
        let (rss, _) = base.grew(&server.data);
        peak = peak.max(rss);
        println!(
            "{mode:?}: refused in {took:?}, a good token served in {served:?}, the endpoint sent {} KiB, RSS +{} KiB",
            sent >> 10,
            rss >> 10
        );
        assert!(served < Duration::from_secs(2), "{mode:?}: {served:?}");
        assert!(took < Duration::from_secs(7), "{mode:?}: {took:?}");
        // What the fetch let in: its bound plus what loopback sockets buffer (a few MiB).
        assert!(
            sent < MAX_JWKS_BYTES as u64 + 24 * MIB,
            "{mode:?}: {sent} bytes"
        );
        assert!(rss < 8 * MIB, "{mode:?}: RSS grew by {rss} bytes");
        let log = server.log_text();
        let line = log
            .lines()
            .rfind(|l| l.contains("event=jwks_refresh"))
            .unwrap_or_default();
        assert!(
            line.contains("ok=false") && line.contains("kept=1") && line.contains(why),
            "{mode:?}: {line}"
        );
    }
    assert_eq!(ep.hits(), 1 + cases.len(), "one fetch per case");
    println!(
        "peak RSS growth over the hostile JWKS answers: {} KiB",
        peak >> 10
    );
}

/// 60 connections with tokens naming an unknown kid, all at once, while the JWKS URL hangs:
/// one fetch (not one per token after another, 5 s each), every token refused `unknown-key`
/// within the one fetch's 5 s, and good tokens served meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_kids_while_the_jwks_url_hangs_make_one_fetch() {
    let idp = Arc::new(Provider::new());
    let ep = Endpoint::start(idp.jwks()).await;
    let dir = Server::dir("door-jwks-hang");
    std::fs::create_dir_all(&dir).unwrap();
    let args = [
        "--auth-jwks",
        &ep.url,
        "--auth-audience",
        AUD,
        "--auth-jwks-refresh-ms",
        "300",
    ];
    let server = Server::start_with(dir, &args);
    let url = server.url.clone();
    ep.set(Serve::Stall);
    tokio::time::sleep(Duration::from_millis(400)).await;
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..60 {
        let (url, idp) = (url.clone(), idp.clone());
        tasks.push(tokio::spawn(async move {
            let t = Bearer::Protocol(idp.sign("es9", &claims(0), false));
            attempt(&url, &t, &format!("team-{i}")).await
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let good = Bearer::Header(idp.sign("es1", &claims(0), false));
    assert_eq!(attempt(&url, &good, "team-good").await, "welcomed");
    for t in tasks {
        assert_eq!(t.await.unwrap(), "unknown-key");
    }
    let took = t0.elapsed();
    println!(
        "60 unknown kids during a hanging fetch: answered in {took:?}, {} fetches",
        ep.hits() - 1
    );
    assert_eq!(ep.hits(), 2, "one fetch at start, one for the whole flood");
    assert!(took < Duration::from_secs(8), "{took:?}");
}
