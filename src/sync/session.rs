//! Authenticated sessions (docs/design.md §12.3): the server opens every connection with a
//! fresh random challenge; the client answers in its `Hello` with a P-384 signature over a
//! domain-separated message that binds the challenge, the server's URL as the client dialed it,
//! the protocol version, the repository and the key. The server checks that the answer is for
//! this connection's challenge (else `replayed`), in time (`stale`), for one of its own URLs
//! (`wrong-server`: a relaying server cannot reuse it) and signed by the key (`bad-signature`).
//! A client without a key answers anonymously: it reaches only repositories open to everyone.

use crate::codec::{Reader, Writer};
use crate::commit::{Identity, PublicKey, Signature, PUBLIC_KEY_LEN, SIGNATURE_LEN};
use crate::error::{AuthErrorKind, Error, Result};

use super::version::PROTOCOL_VERSION;

/// Length of a challenge nonce.
pub const NONCE_LEN: usize = 32;
/// Longest URL a proof may carry.
pub const MAX_URL: usize = 2048;
const SESSION_DOMAIN: &[u8] = b"ibexdb-session-v2";

/// A client's proof that it holds `key`, for one challenge.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionProof {
    pub key: PublicKey,
    /// The challenge it answers.
    pub nonce: [u8; NONCE_LEN],
    /// The server's URL as the client dialed it.
    pub url: String,
    pub signature: Signature,
}

fn auth(kind: AuthErrorKind, detail: impl Into<String>) -> Error {
    Error::Auth {
        kind,
        detail: detail.into(),
    }
}

impl SessionProof {
    /// The signed bytes: domain, protocol version, nonce, URL, repository, key.
    pub fn message(nonce: &[u8; NONCE_LEN], url: &str, repo: &str, key: &PublicKey) -> Vec<u8> {
        let mut w = Writer::with_capacity(SESSION_DOMAIN.len() + 1 + NONCE_LEN + url.len() + 200);
        w.bytes(SESSION_DOMAIN);
        w.u8(PROTOCOL_VERSION);
        w.bytes(nonce);
        w.lp(url.as_bytes());
        w.lp(repo.as_bytes());
        w.bytes(&key.0);
        w.into_inner()
    }

    /// Answer challenge `nonce` from the server at `url` for repository `repo`.
    pub fn sign(identity: &Identity, nonce: [u8; NONCE_LEN], url: &str, repo: &str) -> Self {
        let key = identity.public();
        let signature = identity.sign(&Self::message(&nonce, url, repo, &key));
        SessionProof {
            key,
            nonce,
            url: url.to_string(),
            signature,
        }
    }

    pub(super) fn encode(&self, w: &mut Writer) {
        w.bytes(&self.key.0);
        w.bytes(&self.nonce);
        w.lp(self.url.as_bytes());
        w.bytes(&self.signature.0);
    }

    pub(super) fn decode(r: &mut Reader<'_>) -> Result<Self> {
        let key = PublicKey(r.array::<PUBLIC_KEY_LEN>()?);
        let nonce = r.array::<NONCE_LEN>()?;
        let url = r.str()?;
        if url.len() > MAX_URL {
            return Err(r.err("URL longer than 2048 bytes"));
        }
        let signature = Signature(r.array::<SIGNATURE_LEN>()?);
        Ok(SessionProof {
            key,
            nonce,
            url: url.to_string(),
            signature,
        })
    }

    /// Check this answer against what the server expects (its challenge, when it was issued,
    /// the `host:port` forms it is reached under) for repository `repo`. Returns the proven
    /// key. Checks run in order: replayed, stale, wrong server, signature.
    pub fn verify(&self, expect: &Expected<'_>, repo: &str) -> Result<PublicKey> {
        if self.nonce != *expect.nonce {
            return Err(auth(
                AuthErrorKind::Replayed,
                "the answer was made for another challenge than this connection's",
            ));
        }
        if expect.now_ms > expect.issued_ms.saturating_add(expect.max_age_ms) {
            return Err(auth(
                AuthErrorKind::Stale,
                format!("the challenge expired after {} ms", expect.max_age_ms),
            ));
        }
        let host = url_authority(&self.url);
        if !host.is_some_and(|h| expect.hosts.iter().any(|a| a.eq_ignore_ascii_case(&h))) {
            return Err(auth(
                AuthErrorKind::WrongServer,
                format!("the answer is for {:?}, not this server", self.url),
            ));
        }
        let msg = Self::message(&self.nonce, &self.url, repo, &self.key);
        self.key
            .verify(&msg, &self.signature)
            .map_err(|e| match e {
                Error::Signature {
                    kind: crate::SignatureErrorKind::BadSignature,
                    ..
                } => auth(AuthErrorKind::BadSignature, "the answer does not verify"),
                _ => auth(
                    AuthErrorKind::Malformed,
                    "the key or signature is malformed",
                ),
            })?;
        Ok(self.key)
    }
}

/// What the server expects of an answer.
pub struct Expected<'a> {
    pub nonce: &'a [u8; NONCE_LEN],
    pub issued_ms: u64,
    pub now_ms: u64,
    pub max_age_ms: u64,
    /// The `host:port` forms under which clients reach this server.
    pub hosts: &'a [String],
}

/// The `host:port` of a `ws://` or `wss://` URL, lowercased, with the scheme's default port
/// made explicit; `None` for anything else.
pub fn url_authority(url: &str) -> Option<String> {
    let (rest, default_port) = if let Some(r) = url.strip_prefix("ws://") {
        (r, 80)
    } else if let Some(r) = url.strip_prefix("wss://") {
        (r, 443)
    } else {
        return None;
    };
    let auth = rest.split(['/', '?', '#']).next()?;
    if auth.is_empty() || auth.contains('@') {
        return None;
    }
    let has_port = match auth.rfind(':') {
        Some(i) => !auth[i..].contains(']'),
        None => false,
    };
    let auth = auth.to_ascii_lowercase();
    Some(if has_port {
        auth
    } else {
        format!("{auth}:{default_port}")
    })
}
