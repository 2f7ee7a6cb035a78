//! The application's own login at the server door (docs/design.md §12.4, "Bearer tokens"):
//! with `--auth-jwks FILE|URL`, every connection presents a JSON Web Token from the application's
//! identity provider, checked here before the handshake: its signature (ES256 or RS256, by a
//! key of the JWKS, chosen by `kid`), `exp` and `nbf` (with `LEEWAY_S`), `aud` and, if
//! configured, `iss`. Its claims then bound which repositories the session may open or create
//! (`Grant`), in addition to the signed access list, never instead of it.
//!
//! A token travels in the `Authorization: Bearer` header (non-browser clients) or, since a
//! browser's `new WebSocket` cannot set headers, as the subprotocol entry `ibexdb.bearer.TOKEN`
//! beside `ibexdb` (the server answers `ibexdb`). Tokens longer than `MAX_TOKEN_BYTES` are
//! refused unparsed. A session ends at its token's `exp` plus the leeway (`Grant::ends_s`).
//! Keys from a URL (`jwks_fetch`) are fetched again when a token names an unknown `kid`
//! (`Auth::check_fresh`, rate-limited) and every `--auth-jwks-max-age-ms`; a failed fetch keeps
//! them.

use crate::jwks_fetch::{self, Url};
use crate::log;
use crate::refusal::Refusal;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ibexdb::{AuthErrorKind, Error};
use ring::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};
use tokio_rustls::TlsConnector;

/// The longest token accepted (bytes); a longer one is refused without being parsed.
pub const MAX_TOKEN_BYTES: usize = 8192;
/// Clock difference tolerated on `exp` and `nbf` by default (seconds; `--auth-leeway-s`).
pub const LEEWAY_S: u64 = 60;
/// The subprotocol prefix that carries a token from a browser.
pub const PROTOCOL_PREFIX: &str = "ibexdb.bearer.";
/// The subprotocol the server answers when a client offers it.
pub const PROTOCOL: &str = "ibexdb";
/// The claim listing the repositories a token may open: names, or prefixes ending in `*`.
pub const CLAIM_REPOS: &str = "ibexdb_repos";
/// The claim (a boolean) that lets a token create repositories it may open.
pub const CLAIM_CREATE: &str = "ibexdb_create";

/// What a connection's request offered.
#[derive(Debug, Clone, PartialEq)]
pub enum Bearer {
    Missing,
    /// Longer than `MAX_TOKEN_BYTES` (its length).
    TooLarge(usize),
    Token(String),
}

enum Key {
    /// An uncompressed P-256 point (`04 || x || y`).
    Es256(Vec<u8>),
    Rs256 {
        n: Vec<u8>,
        e: Vec<u8>,
    },
}

struct Jwk {
    kid: Option<String>,
    key: Key,
}

/// Where the keys come from when `--auth-jwks` is a URL: fetched at start, again when a token
/// names a `kid` the keys lack (at most once per `min_interval`; connections that ask meanwhile
/// wait for the fetch under way) and every `--auth-jwks-max-age-ms` (start.rs). A failed fetch
/// keeps the keys.
struct Remote {
    url: Url,
    /// The URL as given, for the log.
    shown: String,
    tls: Option<TlsConnector>,
    min_interval: Duration,
    /// When the last fetch ended (held while a fetch runs): the interval counts from there, so
    /// tokens that queued behind a slow fetch do not each start another one after it.
    last: tokio::sync::Mutex<Option<Instant>>,
}

/// How a URL source is fetched (`--auth-jwks-ca`, `--auth-jwks-refresh-ms`).
pub struct RemoteOptions {
    pub ca: Option<PathBuf>,
    pub min_interval: Duration,
}

/// The verifier configured by `--auth-jwks`, `--auth-audience` and `--auth-issuer`.
pub struct Auth {
    keys: RwLock<Arc<Vec<Jwk>>>,
    remote: Option<Remote>,
    audience: String,
    issuer: Option<String>,
    /// Clock difference tolerated on `exp` and `nbf` (seconds).
    leeway_s: u64,
}

/// What a verified token allows: the repositories it may open, and whether it may create them.
#[derive(Debug, Clone, PartialEq)]
pub struct Grant {
    /// Names, or prefixes ending in `*` (`*` alone: any repository).
    pub repos: Vec<String>,
    pub create: bool,
    /// When the session must end (Unix seconds): the token's `exp` plus the leeway.
    pub ends_s: u64,
}

fn refusal(kind: AuthErrorKind, detail: impl Into<String>) -> Refusal {
    Refusal::from(&Error::Auth {
        kind,
        detail: detail.into(),
    })
}

fn b64(s: &str, what: &str) -> Result<Vec<u8>, String> {
    URL_SAFE_NO_PAD
        .decode(s.trim_end_matches('='))
        .map_err(|_| format!("{what} is not base64url"))
}

/// The token a request offers: `Authorization: Bearer …`, else a subprotocol entry
/// `ibexdb.bearer.…`. Also whether the client offered the `ibexdb` subprotocol (to be answered).
pub fn bearer(headers: &tokio_tungstenite::tungstenite::http::HeaderMap) -> (Bearer, bool) {
    let mut found = Bearer::Missing;
    for v in headers.get_all("authorization") {
        let v = v.as_bytes();
        if v.len() > 7 && v[..7].eq_ignore_ascii_case(b"bearer ") {
            found = token_of(&v[7..]);
        }
    }
    let mut offered = false;
    for v in headers.get_all("sec-websocket-protocol") {
        for entry in v.as_bytes().split(|&b| b == b',') {
            let entry = entry.trim_ascii();
            if entry == PROTOCOL.as_bytes() {
                offered = true;
            } else if let Some(t) = entry.strip_prefix(PROTOCOL_PREFIX.as_bytes()) {
                if found == Bearer::Missing {
                    found = token_of(t);
                }
            }
        }
    }
    (found, offered)
}

fn token_of(t: &[u8]) -> Bearer {
    let t = t.trim_ascii();
    if t.len() > MAX_TOKEN_BYTES {
        return Bearer::TooLarge(t.len());
    }
    match std::str::from_utf8(t) {
        Ok(s) => Bearer::Token(s.to_string()),
        Err(_) => Bearer::Token(String::new()),
    }
}

impl Auth {
    /// The keys of `source`: a JWKS file (`{"keys": [...]}`), or an `https://` URL (`http://`
    /// to a loopback address) fetched now. EC P-256 and RSA keys; others are skipped; none is
    /// an error.
    pub async fn load(
        source: &str,
        (audience, issuer): (&str, Option<&str>),
        leeway_s: u64,
        opts: RemoteOptions,
    ) -> Result<Auth, String> {
        let (keys, remote) = if jwks_fetch::is_url(source) {
            let url = jwks_fetch::parse(source).map_err(|e| format!("--auth-jwks {e}"))?;
            let tls = match url.tls {
                true => Some(jwks_fetch::tls_connector(opts.ca.as_deref())?),
                false => None,
            };
            let remote = Remote {
                url,
                shown: source.to_string(),
                tls,
                min_interval: opts.min_interval,
                last: tokio::sync::Mutex::new(Some(Instant::now())),
            };
            let keys = remote
                .fetch_keys()
                .await
                .map_err(|e| format!("--auth-jwks {source}: {e}"))?;
            (keys, Some(remote))
        } else {
            let text = std::fs::read_to_string(source)
                .map_err(|e| format!("--auth-jwks {source}: {e}"))?;
            let keys = parse_jwks(&text).map_err(|e| format!("--auth-jwks {source}: {e}"))?;
            if keys.is_empty() {
                return Err(format!(
                    "--auth-jwks {source}: no ES256 (EC P-256) or RS256 (RSA) key"
                ));
            }
            (keys, None)
        };
        Ok(Auth {
            keys: RwLock::new(Arc::new(keys)),
            remote,
            audience: audience.to_string(),
            issuer: issuer.map(str::to_string),
            leeway_s,
        })
    }

    /// How many keys the JWKS gave (0 in the start log line: no tokens required).
    pub fn key_count(&self) -> usize {
        self.keys().len()
    }

    /// Whether the keys come from a URL (and are refreshed).
    pub fn is_remote(&self) -> bool {
        self.remote.is_some()
    }

    fn keys(&self) -> Arc<Vec<Jwk>> {
        self.keys.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// `check`, and when the token names a key the keys lack and they come from a URL, fetch
    /// them again (rate-limited: `Remote`) and check once more.
    pub async fn check_fresh(&self, bearer: &Bearer, now_s: fn() -> u64) -> Result<Grant, Refusal> {
        match self.check(bearer, now_s()) {
            Err(r) if self.remote.is_some() && r.kind() == Some("unknown-key") => {
                self.refresh("unknown-kid").await;
                self.check(bearer, now_s())
            }
            other => other,
        }
    }

    /// Fetch a URL's keys again, unless a fetch ended less than `min_interval` ago (one under
    /// way is waited for, and then counts as that fetch). A failed fetch, an oversized or garbage answer, or one without a
    /// usable key keeps the keys as they are; each attempt is logged (`event=jwks_refresh`).
    pub async fn refresh(&self, why: &str) {
        let Some(remote) = &self.remote else { return };
        let mut last = remote.last.lock().await;
        if last.is_some_and(|t| t.elapsed() < remote.min_interval) {
            return;
        }
        let started = Instant::now();
        let ms = || started.elapsed().as_millis();
        let fetched = remote.fetch_keys().await;
        *last = Some(Instant::now());
        match fetched {
            Ok(keys) => {
                let n = keys.len();
                *self.keys.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(keys);
                let fields: [(&str, &dyn std::fmt::Display); 5] = [
                    ("url", &remote.shown),
                    ("why", &why),
                    ("ok", &true),
                    ("keys", &n),
                    ("ms", &ms()),
                ];
                log::event("jwks_refresh", &fields);
            }
            Err(e) => {
                let kept = self.key_count();
                let fields: [(&str, &dyn std::fmt::Display); 6] = [
                    ("url", &remote.shown),
                    ("why", &why),
                    ("ok", &false),
                    ("kept", &kept),
                    ("ms", &ms()),
                    ("error", &e),
                ];
                log::event("jwks_refresh", &fields);
            }
        }
    }

    /// Check a connection's token at `now_s` (Unix seconds): what it grants, or the refusal.
    pub fn check(&self, bearer: &Bearer, now_s: u64) -> Result<Grant, Refusal> {
        let token = match bearer {
            Bearer::Missing => {
                return Err(refusal(
                    AuthErrorKind::TokenMissing,
                    "this server requires a bearer token (Authorization header or the ibexdb.bearer.TOKEN subprotocol)",
                ))
            }
            Bearer::TooLarge(n) => {
                return Err(refusal(
                    AuthErrorKind::TokenTooLarge,
                    format!("the token is {n} bytes; at most {MAX_TOKEN_BYTES}"),
                ))
            }
            Bearer::Token(t) => t,
        };
        let invalid = |d: String| refusal(AuthErrorKind::TokenInvalid, d);
        let parts: Vec<&str> = token.split('.').collect();
        let [h, p, s] = parts[..] else {
            return Err(invalid("not a JWS compact token (three parts)".into()));
        };
        let header: Value = serde_json::from_slice(&b64(h, "the header").map_err(invalid)?)
            .map_err(|_| invalid("the header is not JSON".into()))?;
        let alg = header["alg"].as_str().unwrap_or("");
        if alg != "ES256" && alg != "RS256" {
            return Err(invalid(format!("algorithm {alg:?}: only ES256 and RS256")));
        }
        let keys = self.keys();
        let key = select(&keys, header["kid"].as_str(), alg)?;
        let sig = b64(s, "the signature").map_err(invalid)?;
        let signed = &token.as_bytes()[..h.len() + 1 + p.len()];
        let ok = match &key.key {
            Key::Es256(point) => UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, point)
                .verify(signed, &sig)
                .is_ok(),
            Key::Rs256 { n, e } => RsaPublicKeyComponents { n, e }
                .verify(&signature::RSA_PKCS1_2048_8192_SHA256, signed, &sig)
                .is_ok(),
        };
        if !ok {
            return Err(invalid("the signature does not verify".into()));
        }
        let claims: Value = serde_json::from_slice(&b64(p, "the payload").map_err(invalid)?)
            .map_err(|_| invalid("the payload is not JSON".into()))?;
        let exp = self.check_claims(&claims, now_s)?;
        let mut g = grant(&claims)?;
        g.ends_s = (exp.max(0.0) as u64).saturating_add(self.leeway_s);
        Ok(g)
    }

    /// The claims' checks; the token's `exp` when they pass.
    fn check_claims(&self, c: &Value, now_s: u64) -> Result<f64, Refusal> {
        let Some(exp) = c["exp"].as_f64() else {
            return Err(refusal(AuthErrorKind::TokenInvalid, "no exp claim"));
        };
        let leeway = self.leeway_s;
        if now_s as f64 > exp + leeway as f64 {
            return Err(refusal(
                AuthErrorKind::TokenExpired,
                format!("expired at {exp} (now {now_s}, leeway {leeway} s)"),
            ));
        }
        if let Some(nbf) = c["nbf"].as_f64() {
            if ((now_s + leeway) as f64) < nbf {
                return Err(refusal(
                    AuthErrorKind::TokenNotYetValid,
                    format!("not valid before {nbf} (now {now_s}, leeway {leeway} s)"),
                ));
            }
        }
        let aud_ok = match &c["aud"] {
            Value::String(a) => *a == self.audience,
            Value::Array(v) => v.iter().any(|a| a.as_str() == Some(&self.audience)),
            _ => false,
        };
        if !aud_ok {
            return Err(refusal(
                AuthErrorKind::WrongAudience,
                format!("the token's aud does not name {:?}", self.audience),
            ));
        }
        if let Some(iss) = &self.issuer {
            if c["iss"].as_str() != Some(iss) {
                return Err(refusal(
                    AuthErrorKind::WrongIssuer,
                    format!("the token's iss is not {iss:?}"),
                ));
            }
        }
        Ok(exp)
    }
}

/// The key for `kid` (any key of `alg`'s type when the token names none and only one fits).
fn select<'k>(keys: &'k [Jwk], kid: Option<&str>, alg: &str) -> Result<&'k Jwk, Refusal> {
    let fits = |k: &&Jwk| match k.key {
        Key::Es256(_) => alg == "ES256",
        Key::Rs256 { .. } => alg == "RS256",
    };
    let unknown = |d: String| refusal(AuthErrorKind::UnknownKey, d);
    match kid {
        Some(kid) => keys
            .iter()
            .filter(fits)
            .find(|k| k.kid.as_deref() == Some(kid))
            .ok_or_else(|| unknown(format!("no {alg} key with kid {kid:?} in --auth-jwks"))),
        None => {
            let fitting: Vec<&Jwk> = keys.iter().filter(fits).collect();
            match fitting[..] {
                [k] => Ok(k),
                _ => Err(unknown(format!(
                    "the token names no kid and --auth-jwks has {} {alg} keys",
                    fitting.len()
                ))),
            }
        }
    }
}

/// The claims' grant: `ibexdb_repos` (a list of strings; absent: none) and `ibexdb_create`
/// (absent: false).
fn grant(c: &Value) -> Result<Grant, Refusal> {
    let bad = |d: &str| refusal(AuthErrorKind::TokenInvalid, d.to_string());
    let repos = match &c[CLAIM_REPOS] {
        Value::Null => Vec::new(),
        Value::Array(v) => v
            .iter()
            .map(|r| r.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| bad("ibexdb_repos holds a non-string"))?,
        _ => return Err(bad("ibexdb_repos is not a list")),
    };
    let create = match &c[CLAIM_CREATE] {
        Value::Null => false,
        Value::Bool(b) => *b,
        _ => return Err(bad("ibexdb_create is not a boolean")),
    };
    Ok(Grant {
        repos,
        create,
        ends_s: 0,
    })
}

impl Grant {
    /// The refusal that ends a session when its token expires (sent before the close).
    pub fn expired(&self) -> Refusal {
        refusal(
            AuthErrorKind::TokenExpired,
            format!(
                "the session's token expired (the session ends at exp plus the leeway, {} s since 1970); dial again with a fresh token",
                self.ends_s
            ),
        )
    }

    /// Whether the token names `repo` (a name, or a prefix ending in `*`).
    pub fn covers(&self, repo: &str) -> bool {
        self.repos.iter().any(|r| match r.strip_suffix('*') {
            Some(prefix) => repo.starts_with(prefix),
            None => r == repo,
        })
    }

    /// The refusal for opening `repo`, if the token does not name it.
    pub fn may_open(&self, repo: &str) -> Result<(), Refusal> {
        if self.covers(repo) {
            return Ok(());
        }
        Err(refusal(
            AuthErrorKind::TokenScope,
            format!("the token's {CLAIM_REPOS} claim does not name {repo:?}"),
        ))
    }

    /// The refusal for creating `repo`, if the token may not.
    pub fn may_create(&self, repo: &str) -> Result<(), Refusal> {
        self.may_open(repo)?;
        if self.create {
            return Ok(());
        }
        Err(refusal(
            AuthErrorKind::TokenCannotCreate,
            format!("the token has no {CLAIM_CREATE}: true claim; {repo:?} does not exist"),
        ))
    }
}

impl Remote {
    /// The keys the URL serves now (an error for an answer with none).
    async fn fetch_keys(&self) -> Result<Vec<Jwk>, String> {
        let body = jwks_fetch::fetch(&self.url, self.tls.as_ref()).await?;
        let text = std::str::from_utf8(&body).map_err(|_| "the JWKS is not UTF-8".to_string())?;
        let keys = parse_jwks(text)?;
        if keys.is_empty() {
            return Err("no ES256 (EC P-256) or RS256 (RSA) key".into());
        }
        Ok(keys)
    }
}

fn parse_jwks(text: &str) -> Result<Vec<Jwk>, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let Some(keys) = v["keys"].as_array() else {
        return Err("no \"keys\" list".into());
    };
    let mut out = Vec::new();
    for k in keys {
        let kid = k["kid"].as_str().map(str::to_string);
        let field = |f: &str| -> Result<Vec<u8>, String> {
            b64(k[f].as_str().ok_or(format!("a key lacks {f:?}"))?, f)
        };
        let key = match (k["kty"].as_str(), k["crv"].as_str()) {
            (Some("EC"), Some("P-256")) => {
                let (x, y) = (field("x")?, field("y")?);
                if x.len() != 32 || y.len() != 32 {
                    return Err("a P-256 key's x and y must be 32 bytes".into());
                }
                Key::Es256([&[4u8][..], &x, &y].concat())
            }
            (Some("RSA"), _) => Key::Rs256 {
                n: field("n")?,
                e: field("e")?,
            },
            _ => continue,
        };
        if let Some(alg) = k["alg"].as_str() {
            let want = if matches!(key, Key::Es256(_)) {
                "ES256"
            } else {
                "RS256"
            };
            if alg != want {
                continue;
            }
        }
        out.push(Jwk { kid, key });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_match_names_and_prefixes() {
        let g = Grant {
            repos: vec!["team-*".into(), "notes".into()],
            create: false,
            ends_s: 0,
        };
        assert!(g.covers("team-a") && g.covers("notes"));
        assert!(!g.covers("notes2") && !g.covers("other"));
        assert!(g.may_create("team-a").is_err());
        let all = Grant {
            repos: vec!["*".into()],
            create: true,
            ends_s: 0,
        };
        assert!(all.may_create("anything").is_ok());
        let none = grant(&serde_json::json!({})).unwrap();
        assert!(!none.covers("x") && !none.create);
    }

    #[test]
    fn bearer_comes_from_the_header_or_the_subprotocol() {
        use tokio_tungstenite::tungstenite::http::{HeaderMap, HeaderValue};
        let mut h = HeaderMap::new();
        assert_eq!(bearer(&h), (Bearer::Missing, false));
        h.insert(
            "sec-websocket-protocol",
            HeaderValue::from_static("ibexdb, ibexdb.bearer.a.b.c"),
        );
        assert_eq!(bearer(&h), (Bearer::Token("a.b.c".into()), true));
        h.insert("authorization", HeaderValue::from_static("Bearer x.y.z"));
        assert_eq!(bearer(&h).0, Bearer::Token("x.y.z".into()));
        let long = format!("Bearer {}", "a".repeat(MAX_TOKEN_BYTES + 1));
        h.insert("authorization", HeaderValue::from_str(&long).unwrap());
        assert_eq!(bearer(&h).0, Bearer::TooLarge(MAX_TOKEN_BYTES + 1));
    }
}
