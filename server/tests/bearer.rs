//! The application's own login at the server door (issue 27 §4; docs/design.md §12.4), from
//! outside over real WebSockets: with `--auth-jwks`, a good token (ES256 in the Authorization
//! header, RS256 in the `ibexdb.bearer.` subprotocol) syncs end to end; a missing, forged,
//! expired, not-yet-valid, wrong-audience, wrong-issuer, unknown-kid or oversized token, a token
//! for another repository and a create without the create claim are each a typed `AuthError`
//! the client receives, and nothing is stored for the refused names.

mod common;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use common::*;
use ibexdb::{ErrorCode, Message, SessionProof};
use ring::rand::SystemRandom;
use ring::rsa::PublicKeyComponents;
use ring::signature::{self, EcdsaKeyPair, KeyPair, RsaKeyPair};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

const WAIT: Duration = Duration::from_secs(10);
const AUD: &str = "task-board";
const ISS: &str = "https://login.test";

/// A 2048-bit RSA key for RS256 tokens, made once with `openssl genpkey` for this test only (ring
/// verifies RSA but cannot generate keys); PKCS#8, base64. The ES256 keys are generated per run.
const TEST_RSA_PKCS8: &str = concat!(
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC4/tNNxkJKicTR4zhwgEBy2RsmmDRQ8YHFrR1yM6",
    "OhRJRy187o/MEXQQNqq7ehvzhG4DIs7Vn1R8k8+D5Dbg9nDVH/iR/jJqueb7XDM9LTDGzed1PkLz1HeI/joWfNWRo0",
    "9sl6JzI1PcUkjAtETpDb3KHCQV7oHt6d6xPTuig2eC2QKqIldLG4NDAWHF/YHQ1YDQ2Sd7mQScovSt1eSpBY2G3rx4",
    "nj4TWP1RDa1FI8W76zEAzdtecrphlF3KMc39vzAdeAEmBb6d6E1B2Z12vCPG1902ght9+p6tnSnD12hEWsCgIdOOvR",
    "fduM/jMhBrc3NjHwvhP3mr34R5MS116/AgMBAAECggEAImdhrKkeUvZkIBR9vo5bbgBqSDcuI4+GbtjPDRoFaEx0vx",
    "bbaAD5d/WjSQc+U1pYgPXY3voVLMR47FnOWoPxYVzczwUVZQ0gBYsI5pCQuKcq6ASRGXKfltcZC2BNCad0dD0hIxJ/",
    "B9/A9hcFUWK7FehmPNYjbE+xXvUE7u9D4z0NVeji1C/mbM6UMNZIf0a+PpenHljt9guooHqmga77WsmHDym0hHwpVl",
    "JI8nyVqXc7I4OCDuvpXUHsgOtj1qHUBV5kKrpoMA9Nf73RoM0pST3wZJ5m+j9Tu7sMA3deDuLRgxdwfE94rG3nDM02",
    "MbBhMCswcElnzVQLiu1mc0QlIQKBgQDjkJ7ufPBAY7QEj7zb4H3ufh4Ygo3/2HMGfHdoPVAXWHW61kt4ATzVPyko1f",
    "EIlYQh037c25cmRdgT0pBpfZp5VmgxP7BWdXimAHFiaGBVWVyOtpMwU+XdBtKXESgNmr7zP//Bz9T4C6hu1NACIEoB",
    "xa2WaB46jUn2n0NHevbcmwKBgQDQHHwko4DGbK0upVLNB4RJgQDmpzoKD1nGYlpTg9XRxTgQaZHWRW6RKTEBNT/fEz",
    "SbYyqR1k5NGPxyG9aV1JY856kpCuTgQokiBUg8sUfTe0pemTwcEJDFfhGg+FR7AaTiDRStnR+gLYpoi7rbaZ7SgHsR",
    "a68N89rM6hgtq1B+rQKBgAKw6CA72/927l8LcBlNi0+xsBtsF8/JuHqAKE1UREkyY5oFBLlzkkuXRp5UAVivo/Nec+",
    "aativesZJycAC/Wn9K1UqXzTcIhpe3859NSq5Xsy+A2za8F0DI3t6odkfK560quZSKJ6OTR7efzqHnzdg9hTL9IjZh",
    "C1neQkZrHtY3AoGAE9JCuLKh90QuknzIkCKhJOcWkOFok8C2ikCf3ch2uw4PsvB7JW9jgovr0POja7nGju45Bb7lok",
    "447R1dqNOgo5hk8jXJatqreQQLx0wTTT827B+oK/wf7c9+GljMoxKbA7S/PXHzqyvrPN3iJDfBGseF8TjSaX/KXS4G",
    "s4LXndkCgYEAqRzV/ngj5Pv4O7cWEaDObXqwXhQ3RfmNvd4DTTcDV8zZ7ps8MXHqU2dFvZyMOPrHpU4LitAkDcEvqs",
    "e9kQNgRc3vL4AdRtDIWLWaav8FNu6B9cBF4jYRh86ojth+Ej9DKVOejmKha8giVX9+u+WDihmKK3nt+eGg1UicUqz7",
    "VcQ=",
);

/// The identity provider of the test: two ES256 keys (one published, one not) and an RSA key.
struct Provider {
    es: EcdsaKeyPair,
    stranger: EcdsaKeyPair,
    rsa: RsaKeyPair,
    rng: SystemRandom,
}

fn b64(b: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(b)
}

fn es_key(rng: &SystemRandom) -> EcdsaKeyPair {
    let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, rng).unwrap();
    EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), rng).unwrap()
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

impl Provider {
    fn new() -> Provider {
        let rng = SystemRandom::new();
        let der = STANDARD.decode(TEST_RSA_PKCS8).unwrap();
        Provider {
            es: es_key(&rng),
            stranger: es_key(&rng),
            rsa: RsaKeyPair::from_pkcs8(&der).unwrap(),
            rng,
        }
    }

    /// The published keys: `es1` (P-256) and `rs1` (RSA).
    fn jwks(&self) -> Value {
        let p = self.es.public_key().as_ref();
        let rsa: PublicKeyComponents<Vec<u8>> = self.rsa.public().into();
        json!({ "keys": [
            { "kty": "EC", "crv": "P-256", "kid": "es1", "alg": "ES256",
              "x": b64(&p[1..33]), "y": b64(&p[33..65]) },
            { "kty": "RSA", "kid": "rs1", "alg": "RS256", "n": b64(&rsa.n), "e": b64(&rsa.e) },
        ]})
    }

    /// A compact JWS: `alg` with `kid`, signed by the published key of that algorithm (or, with
    /// `forged`, by the unpublished P-256 key).
    fn sign(&self, alg: &str, kid: &str, claims: &Value, forged: bool) -> String {
        let header = json!({ "alg": alg, "typ": "JWT", "kid": kid });
        let input = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        );
        let sig = match (alg, forged) {
            ("RS256", _) => {
                let mut sig = vec![0; self.rsa.public().modulus_len()];
                let pad = &signature::RSA_PKCS1_SHA256;
                self.rsa
                    .sign(pad, &self.rng, input.as_bytes(), &mut sig)
                    .unwrap();
                sig
            }
            (_, false) => self
                .es
                .sign(&self.rng, input.as_bytes())
                .unwrap()
                .as_ref()
                .to_vec(),
            (_, true) => self
                .stranger
                .sign(&self.rng, input.as_bytes())
                .unwrap()
                .as_ref()
                .to_vec(),
        };
        format!("{input}.{}", b64(&sig))
    }

    fn es256(&self, claims: &Value) -> String {
        self.sign("ES256", "es1", claims, false)
    }
}

/// Claims good for an hour, for `repos`, creating if `create`.
fn claims(repos: &[&str], create: bool) -> Value {
    json!({ "sub": "user-1", "aud": AUD, "iss": ISS, "iat": now(), "exp": now() + 3600,
            "ibexdb_repos": repos, "ibexdb_create": create })
}

/// How a client presents its token.
enum Bearer {
    None,
    Header(String),
    Protocol(String),
}

/// A WebSocket to `url` presenting `bearer`.
async fn dial(url: &str, bearer: &Bearer) -> Socket {
    let mut req = url.into_client_request().unwrap();
    let h = req.headers_mut();
    match bearer {
        Bearer::None => {}
        Bearer::Header(t) => {
            h.insert("authorization", format!("Bearer {t}").parse().unwrap());
        }
        Bearer::Protocol(t) => {
            let v = format!("ibexdb, ibexdb.bearer.{t}");
            h.insert("sec-websocket-protocol", v.parse().unwrap());
        }
    }
    let addr = url.split("://").nth(1).unwrap();
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let io: Box<dyn Io> = Box::new(tcp);
    let (ws, resp) = tokio_tungstenite::client_async(req, io).await.unwrap();
    if matches!(bearer, Bearer::Protocol(_)) {
        let chosen = resp.headers().get("sec-websocket-protocol").unwrap();
        assert_eq!(chosen, "ibexdb", "the server answers the plain subprotocol");
    }
    ws
}

/// Connect with `bearer`, answer a challenge with a keyed `Hello` for `repo` (offering to
/// create it if `create`): an `AuthError`'s kind, `Code:kind` for another error, or "welcomed".
async fn attempt(url: &str, bearer: &Bearer, repo: &str, create: bool) -> String {
    let mut ws = dial(url, bearer).await;
    loop {
        match recv(&mut ws, WAIT).await {
            Some(Message::Challenge { nonce, .. }) => {
                let auth = Some(SessionProof::sign(&identity(3), nonce, url, repo));
                let hello = Message::Hello {
                    repo: repo.into(),
                    cursor: 0,
                    auth,
                    create,
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

/// The names of the files in the server's data directory.
fn stored(server: &Server) -> Vec<String> {
    std::fs::read_dir(&server.data).map_or(Vec::new(), |d| {
        d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    })
}

fn start(provider: &Provider, tag: &str) -> Server {
    start_with(provider, tag, &[])
}

fn start_with(provider: &Provider, tag: &str, more: &[&str]) -> Server {
    let dir = Server::dir(tag);
    std::fs::create_dir_all(&dir).unwrap();
    let jwks = dir.with_extension("jwks.json");
    std::fs::write(&jwks, provider.jwks().to_string()).unwrap();
    let jwks = jwks.to_string_lossy().into_owned();
    let mut args = vec![
        "--auth-jwks",
        &jwks,
        "--auth-audience",
        AUD,
        "--auth-issuer",
        ISS,
    ];
    args.extend_from_slice(more);
    Server::start_with(dir, &args)
}

/// A good ES256 token in the Authorization header founds and writes `team-a`; a member with
/// a good RS256 token in the subprotocol reads it all; both push and pull.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_good_token_syncs_end_to_end() {
    let idp = Provider::new();
    let server = start(&idp, "jwt-good");
    let url = server.url.clone();
    let mut team = Peer::team("team-a", &[1, 2]);
    let mut member = team.pop().unwrap();
    let mut owner = team.pop().unwrap();
    let owner_token = idp.es256(&claims(&["team-*"], true));
    owner.ws = Some(dial(&url, &Bearer::Header(owner_token)).await);
    owner.client.set_url(&url);
    owner.client.connect();
    owner.push().await;
    owner.settle(1).await;
    owner.write();
    owner.push().await;
    owner.settle(2).await;

    let member_token = idp.sign("RS256", "rs1", &claims(&["team-a"], false), false);
    member.ws = Some(dial(&url, &Bearer::Protocol(member_token)).await);
    member.client.set_url(&url);
    member.client.connect();
    member.write();
    member.push().await;
    member.settle(3).await;
    while owner.repo.commit_count() < 3 {
        assert!(owner.step(WAIT).await, "the owner hears the member's write");
    }
    assert!(stored(&server).iter().any(|f| f == "team-a.log"));

    // A token does not stand in for the access list: team-b is private to its founder, and a
    // session whose token names it but whose key is no member gets the list's answer.
    let mut founder = Peer::new(1, "team-b");
    founder.write();
    let token = idp.es256(&claims(&["team-b"], true));
    founder.ws = Some(dial(&url, &Bearer::Header(token)).await);
    founder.client.set_url(&url);
    founder.client.connect();
    founder.push().await;
    founder.settle(1).await;
    let token = Bearer::Header(idp.es256(&claims(&["team-*"], false)));
    let got = attempt(&url, &token, "team-b", false).await;
    assert_eq!(got, "Permission:cannot-read");
}

/// Every bad token, and every request its claims do not allow: a typed `AuthError` the
/// client receives, and no file for the name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_tokens_are_refused_and_nothing_is_stored() {
    let idp = Provider::new();
    let server = start(&idp, "jwt-bad");
    let url = server.url.clone();
    let good = claims(&["team-*"], true);
    let with = |k: &str, v: Value| {
        let mut c = good.clone();
        c[k] = v;
        c
    };
    let h = |t: String| Bearer::Header(t);
    let none_alg = {
        let head = b64(br#"{"alg":"none","typ":"JWT"}"#);
        format!("{head}.{}.", b64(good.to_string().as_bytes()))
    };
    let cases: Vec<(&str, Bearer, &str, bool)> = vec![
        ("team-missing", Bearer::None, "token-missing", true),
        (
            "team-forged",
            h(idp.sign("ES256", "es1", &good, true)),
            "token-invalid",
            true,
        ),
        ("team-none", h(none_alg), "token-invalid", true),
        (
            "team-garbage",
            h("not.a-token".into()),
            "token-invalid",
            true,
        ),
        (
            "team-expired",
            h(idp.es256(&with("exp", json!(now() - 3600)))),
            "token-expired",
            true,
        ),
        (
            "team-early",
            h(idp.es256(&with("nbf", json!(now() + 3600)))),
            "token-not-yet-valid",
            true,
        ),
        (
            "team-aud",
            h(idp.es256(&with("aud", json!(["other-app"])))),
            "wrong-audience",
            true,
        ),
        (
            "team-iss",
            h(idp.es256(&with("iss", json!("https://evil.test")))),
            "wrong-issuer",
            true,
        ),
        (
            "team-kid",
            h(idp.sign("ES256", "nope", &good, false)),
            "unknown-key",
            true,
        ),
        ("team-huge", h("a".repeat(9000)), "token-too-large", true),
        (
            "team-confused",
            h(idp.sign("RS256", "es1", &good, false)),
            "unknown-key",
            true,
        ),
        (
            "team-protocol-forged",
            Bearer::Protocol(idp.sign("ES256", "es1", &good, true)),
            "token-invalid",
            true,
        ),
        ("private-x", h(idp.es256(&good)), "token-scope", true),
        (
            "solo-new",
            h(idp.es256(&claims(&["solo-*"], false))),
            "token-cannot-create",
            true,
        ),
        (
            "solo-open",
            h(idp.es256(&with("ibexdb_repos", Value::Null))),
            "token-scope",
            false,
        ),
    ];
    for (repo, bearer, kind, create) in &cases {
        let got = attempt(&url, bearer, repo, *create).await;
        assert_eq!(&got, kind, "{repo}");
    }
    assert!(
        server.log_text().contains("auth=2"),
        "the start line counts the keys"
    );
    let files = stored(&server);
    for (repo, ..) in &cases {
        assert!(
            !files.iter().any(|f| f.starts_with(repo)),
            "{repo} left {files:?}"
        );
    }
    // A good token passes the door: an unknown name without the create flag then meets the
    // server's own answer (not-found), not a token refusal.
    let got = attempt(&url, &h(idp.es256(&good)), "team-ok", false).await;
    assert_eq!(got, "Permission:not-found");
}

/// A session ends when its token does: with `--auth-leeway-s 0` and a token good for 3 s, a
/// welcomed session that keeps quiet gets `AuthError` `token-expired` at `exp`, then the close;
/// the same key with a fresh token is welcomed again. A session whose token outlives the wait
/// is not cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_ends_when_its_token_expires() {
    let idp = Provider::new();
    let server = start_with(&idp, "jwt-expiry", &["--auth-leeway-s", "0"]);
    let url = server.url.clone();
    let mut owner = Peer::new(1, "team-exp");
    owner.write();
    owner.ws = Some(dial(&url, &Bearer::Header(idp.es256(&claims(&["team-*"], true)))).await);
    owner.client.set_url(&url);
    owner.client.connect();
    owner.push().await;
    owner.settle(1).await;

    // A token good for 3 more seconds (exp is whole seconds: 2-3 s from now).
    let mut short = claims(&["team-*"], false);
    short["exp"] = json!(now() + 3);
    let exp = short["exp"].as_u64().unwrap();
    let long = Bearer::Header(idp.es256(&claims(&["team-*"], false)));
    let mut cut = welcomed(&url, &Bearer::Header(idp.es256(&short)), "team-exp").await;
    let mut kept = welcomed(&url, &long, "team-exp").await;
    let got = loop {
        match recv_or_closed(&mut cut, Duration::from_secs(8)).await {
            Recv::Message(Message::Error { code, kind, .. }) => break (code, kind),
            Recv::Message(_) => continue,
            Recv::Closed => panic!("the session closed without a token-expired error"),
            Recv::Idle => panic!("the session was not cut within 8 s"),
        }
    };
    let at = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    assert_eq!(got, (ErrorCode::Auth, Some("token-expired".to_string())));
    assert!(
        at.as_secs() >= exp && at.as_secs_f64() < exp as f64 + 1.5,
        "cut at {at:?}, exp {exp}"
    );
    assert!(matches!(recv_or_closed(&mut cut, WAIT).await, Recv::Closed));
    // The other session (its token good for an hour) is still served.
    loop {
        match recv_or_closed(&mut kept, Duration::from_millis(300)).await {
            Recv::Message(Message::Error { kind, .. }) => panic!("kept session refused: {kind:?}"),
            Recv::Message(_) => continue, // its catch-up
            Recv::Idle => break,
            Recv::Closed => panic!("the session with a good token was closed"),
        }
    }
    // A fresh token: welcomed again.
    let _again = welcomed(&url, &long, "team-exp").await;
    assert!(server.log_text().contains("token-expired"));
}

/// A session of the owner (identity 1) of `repo` with `bearer`, past its Welcome.
async fn welcomed(url: &str, bearer: &Bearer, repo: &str) -> Socket {
    let mut ws = dial(url, bearer).await;
    loop {
        match recv(&mut ws, WAIT).await {
            Some(Message::Challenge { nonce, .. }) => {
                let auth = Some(SessionProof::sign(&identity(1), nonce, url, repo));
                let hello = Message::Hello {
                    repo: repo.into(),
                    cursor: 0,
                    auth,
                    create: false,
                };
                send(&mut ws, &hello).await;
            }
            Some(Message::Welcome { .. }) => return ws,
            m => panic!("unexpected {m:?}"),
        }
    }
}

/// What the test's JWKS endpoint answers.
#[derive(Clone)]
enum Serve {
    /// 200 with this body and its Content-Length.
    Json(Vec<u8>),
    /// 200 without a length, this many bytes, then the close.
    Stream(usize),
    /// Nothing: the request is read and never answered.
    Stall,
}

/// A plain HTTP/1.1 endpoint on 127.0.0.1 serving `Serve` (switchable), counting requests.
struct Endpoint {
    url: String,
    serve: Arc<Mutex<Serve>>,
    hits: Arc<AtomicUsize>,
}

impl Endpoint {
    async fn start(first: Serve) -> Endpoint {
        Endpoint::start_tls(first, None).await
    }

    /// With `tls`, `https://localhost:PORT/…` (the acceptor's certificate names localhost).
    async fn start_tls(first: Serve, tls: Option<tokio_rustls::TlsAcceptor>) -> Endpoint {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let url = match tls {
            Some(_) => format!("https://localhost:{port}/.well-known/jwks.json"),
            None => format!("http://127.0.0.1:{port}/.well-known/jwks.json"),
        };
        let serve = Arc::new(Mutex::new(first));
        let hits = Arc::new(AtomicUsize::new(0));
        let (s, h) = (serve.clone(), hits.clone());
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let (s, h, tls) = (s.clone(), h.clone(), tls.clone());
                tokio::spawn(async move {
                    let mut tcp: Box<dyn Io> = match tls {
                        Some(acceptor) => match acceptor.accept(tcp).await {
                            Ok(t) => Box::new(t),
                            Err(_) => return,
                        },
                        None => Box::new(tcp),
                    };
                    let mut head = Vec::new();
                    let mut b = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match tcp.read(&mut b).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&b[..n]),
                        }
                    }
                    h.fetch_add(1, SeqCst);
                    let serve = s.lock().unwrap().clone();
                    let ok =
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close";
                    let _ = match serve {
                        Serve::Json(body) => {
                            let head = format!("{ok}\r\nContent-Length: {}\r\n\r\n", body.len());
                            tcp.write_all(&[head.as_bytes(), &body].concat()).await
                        }
                        Serve::Stream(n) => {
                            let body = vec![b'{'; n];
                            tcp.write_all(&[format!("{ok}\r\n\r\n").as_bytes(), &body].concat())
                                .await
                        }
                        Serve::Stall => {
                            tokio::time::sleep(Duration::from_secs(30)).await;
                            Ok(())
                        }
                    };
                });
            }
        });
        Endpoint { url, serve, hits }
    }

    fn set(&self, serve: Serve) {
        *self.serve.lock().unwrap() = serve;
    }

    fn hits(&self) -> usize {
        self.hits.load(SeqCst)
    }
}

/// `--auth-jwks URL` (issue 27 §4): the keys are fetched at start; a token naming a kid they
/// lack makes the server fetch them again, at most once per `--auth-jwks-refresh-ms`, so a key
/// the provider adds (rotation) is accepted without a restart; a garbage, oversized (by its
/// length or streamed without one) or stalled answer is refused and the keys are kept (tokens of
/// the old keys still pass; the new kid is `unknown-key`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jwks_url_is_fetched_refreshed_on_a_new_kid_and_bad_answers_keep_the_keys() {
    let idp = Provider::new();
    let es1 = idp.jwks()["keys"][0].clone();
    let p = idp.stranger.public_key().as_ref();
    let es2 = json!({ "kty": "EC", "crv": "P-256", "kid": "es2", "alg": "ES256",
                      "x": b64(&p[1..33]), "y": b64(&p[33..65]) });
    let jwks = |keys: &[&Value]| Serve::Json(json!({ "keys": keys }).to_string().into_bytes());
    let ep = Endpoint::start(jwks(&[&es1])).await;
    let dir = Server::dir("jwt-url");
    std::fs::create_dir_all(&dir).unwrap();
    let args = [
        "--auth-jwks",
        &ep.url,
        "--auth-audience",
        AUD,
        "--auth-jwks-refresh-ms",
        "400",
    ];
    let server = Server::start_with(dir, &args);
    let url = server.url.clone();
    assert_eq!(ep.hits(), 1, "fetched at start");
    let good = claims(&["team-*"], true);
    let old = Bearer::Header(idp.es256(&good));
    let new = Bearer::Header(idp.sign("ES256", "es2", &good, true));
    let passes = "Permission:not-found"; // past the door: the server's own answer for the name
    assert_eq!(attempt(&url, &old, "team-u", false).await, passes);
    assert_eq!(ep.hits(), 1, "a known kid fetches nothing");

    // A kid the keys lack: fetched again (still not there), then rate-limited.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(attempt(&url, &new, "team-u", false).await, "unknown-key");
    assert_eq!(ep.hits(), 2);
    assert_eq!(attempt(&url, &new, "team-u", false).await, "unknown-key");
    assert_eq!(ep.hits(), 2, "at most one fetch per --auth-jwks-refresh-ms");

    // Rotation: the provider publishes es2; the next unknown-kid fetch finds it.
    ep.set(jwks(&[&es1, &es2]));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(attempt(&url, &new, "team-u", false).await, passes);
    assert_eq!(ep.hits(), 3);

    // Bad answers: refused, keys kept (es1 and es2 pass, an es3 token stays unknown).
    let es3 = Bearer::Header(idp.sign("ES256", "es3", &good, true));
    let bad = [
        Serve::Json(b"<html>not json</html>".to_vec()),
        Serve::Json(br#"{"keys": [{"kty": "OKP", "crv": "Ed25519", "x": "AA"}]}"#.to_vec()),
        Serve::Json(vec![b' '; 1 << 20]),
        Serve::Stream(1 << 20),
    ];
    for (i, serve) in bad.into_iter().enumerate() {
        ep.set(serve);
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(attempt(&url, &es3, "team-u", false).await, "unknown-key");
        assert_eq!(ep.hits(), 4 + i, "answer {i} was fetched");
        assert_eq!(attempt(&url, &old, "team-u", false).await, passes, "{i}");
        assert_eq!(attempt(&url, &new, "team-u", false).await, passes, "{i}");
    }
    // A stalled endpoint: the fetch gives up after 5 s and the token is refused then.
    ep.set(Serve::Stall);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let t0 = std::time::Instant::now();
    assert_eq!(attempt(&url, &es3, "team-u", false).await, "unknown-key");
    let waited = t0.elapsed();
    assert!(
        waited >= Duration::from_secs(4) && waited < Duration::from_secs(8),
        "{waited:?}"
    );
    assert_eq!(attempt(&url, &old, "team-u", false).await, passes);
    let log = server.log_text();
    assert_eq!(log.matches("ok=false").count(), 5, "{log}");
    assert_eq!(log.matches("ok=true").count(), 2, "{log}");
    assert!(log.contains("over 262144 bytes"), "{log}");
}

/// A JWKS URL that cannot be fetched at start, or an `http://` URL off the loopback, is a start
/// error: the server does not run without the keys it was told to require.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jwks_url_that_fails_at_start_stops_the_server() {
    let ep = Endpoint::start(Serve::Json(b"{\"keys\": []}".to_vec())).await;
    let cases = [
        (ep.url.as_str(), "no ES256"),
        ("http://127.0.0.1:1/jwks.json", "connect"),
        ("http://login.example.com/jwks.json", "loopback"),
    ];
    for (jwks, why) in cases {
        let dir = Server::dir("jwt-url-bad");
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ibexdb-server"))
            .args(["--data", dir.to_str().unwrap(), "--listen", "127.0.0.1:0"])
            .args(["--auth-jwks", jwks, "--auth-audience", AUD])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{jwks} started");
        assert!(out.stdout.is_empty(), "{jwks}: no listening line");
        assert!(err.contains(why), "{jwks}: {err}");
    }
}

/// An `https://` JWKS URL is verified: with `--auth-jwks-ca` naming the endpoint's (self-signed)
/// certificate the keys are fetched over TLS and a token passes; without it (the system's CAs)
/// the certificate is refused and the server does not start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_jwks_url_is_verified_against_the_ca() {
    use tokio_rustls::rustls::pki_types::{pem::PemObject, CertificateDer, PrivateKeyDer};
    let idp = Provider::new();
    let dir = Server::dir("jwt-https");
    std::fs::create_dir_all(&dir).unwrap();
    let key = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, key.cert.pem()).unwrap();
    let certs = vec![CertificateDer::from_pem_slice(key.cert.pem().as_bytes()).unwrap()];
    let pk = PrivateKeyDer::from_pem_slice(key.signing_key.serialize_pem().as_bytes()).unwrap();
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = tokio_rustls::rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, pk)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let body = idp.jwks().to_string().into_bytes();
    let ep = Endpoint::start_tls(Serve::Json(body), Some(acceptor)).await;
    let ca = ca.to_str().unwrap();
    let args = [
        "--auth-jwks",
        &ep.url,
        "--auth-audience",
        AUD,
        "--auth-jwks-ca",
        ca,
    ];
    let server = Server::start_with(dir.join("data"), &args);
    let token = Bearer::Header(idp.es256(&claims(&["team-*"], true)));
    let got = attempt(&server.url, &token, "team-s", false).await;
    assert_eq!(got, "Permission:not-found", "the token passed the door");
    assert_eq!(ep.hits(), 1);

    // The system's CAs do not know the certificate: no keys, no start.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ibexdb-server"))
        .args([
            "--data",
            dir.join("d2").to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ])
        .args(["--auth-jwks", &ep.url, "--auth-audience", AUD])
        .env("SSL_CERT_FILE", "/etc/ssl/certs/ca-certificates.crt")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("TLS with localhost"),
        "{err}"
    );
}

/// A key the provider removes stops being trusted at the next periodic fetch
/// (`--auth-jwks-max-age-ms`), without any token naming an unknown kid.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_removed_from_the_jwks_url_is_dropped_at_the_periodic_fetch() {
    let idp = Provider::new();
    let es1 = idp.jwks()["keys"][0].clone();
    let rs1 = idp.jwks()["keys"][1].clone();
    let jwks = |keys: &[&Value]| Serve::Json(json!({ "keys": keys }).to_string().into_bytes());
    let ep = Endpoint::start(jwks(&[&es1, &rs1])).await;
    let dir = Server::dir("jwt-url-age");
    std::fs::create_dir_all(&dir).unwrap();
    let args = [
        &["--auth-jwks", &ep.url, "--auth-audience", AUD][..],
        &[
            "--auth-jwks-max-age-ms",
            "400",
            "--auth-jwks-refresh-ms",
            "100",
        ],
    ]
    .concat();
    let server = Server::start_with(dir, &args);
    let url = server.url.clone();
    let good = claims(&["team-*"], true);
    let es = Bearer::Header(idp.es256(&good));
    let passes = "Permission:not-found";
    assert_eq!(attempt(&url, &es, "team-r", false).await, passes);
    ep.set(jwks(&[&rs1]));
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert!(ep.hits() >= 3, "fetched every 400 ms: {}", ep.hits());
    let hits = ep.hits();
    assert_eq!(attempt(&url, &es, "team-r", false).await, "unknown-key");
    let rs = Bearer::Header(idp.sign("RS256", "rs1", &good, false));
    assert_eq!(attempt(&url, &rs, "team-r", false).await, passes);
    assert!(ep.hits() <= hits + 1, "one unknown-kid fetch at most");
    assert!(server.log_text().contains("why=max-age ok=true keys=1"));
}
