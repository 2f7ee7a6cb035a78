//! The authenticated handshake (docs/design.md §12.3): send this connection's `Challenge` (a
//! fresh random nonce), read the client's `Hello`, and check its proof of key possession. The
//! proven key (or an anonymous session) goes into the `Session` that travels with every
//! command to the repository thread, where the access list decides what it may do.

use crate::frames;
use crate::outbox::Outbox;
use crate::refusal::{Ended, Refusal};
use crate::session::Session;
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use ibexdb::{Expected, Message, SessionProof, NONCE_LEN};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio_tungstenite::tungstenite::{Error as WsError, Message as Ws};

/// What the handshake yields: the repository, the client's cursor, and whether it offers to
/// create the repository (it holds a root).
pub struct Hello {
    pub repo: String,
    pub cursor: u64,
    pub create: bool,
}

/// What an answer must match.
pub struct Expect<'a> {
    /// The `host:port` forms under which clients reach this server.
    pub hosts: &'a [String],
    /// How long a challenge stays valid.
    pub max_age: Duration,
    /// The largest message (for the WebSocket error text).
    pub max: usize,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Challenge the client, then read frames until the first protocol message, which must be a
/// `Hello` whose proof (if any) answers this challenge.
pub async fn handshake<S>(
    source: &mut S,
    out: &Outbox,
    session: &mut Session,
    expect: &Expect<'_>,
) -> Result<Hello, Ended>
where
    S: Stream<Item = Result<Ws, WsError>> + Unpin,
{
    let mut nonce = [0u8; NONCE_LEN];
    getrandom::fill(&mut nonce).map_err(|_| Ended::Closed("no random source"))?;
    let issued_ms = now_ms();
    let challenge = Message::Challenge {
        nonce,
        server_time_ms: issued_ms,
    };
    out.force(Bytes::from(challenge.encode()));
    let (repo, cursor, auth, create) = read_hello(source, expect.max).await?;
    if let Some(proof) = auth {
        session.key = Some(verify(&proof, &nonce, issued_ms, expect, &repo)?);
    }
    Ok(Hello {
        repo,
        cursor,
        create,
    })
}

fn verify(
    proof: &SessionProof,
    nonce: &[u8; NONCE_LEN],
    issued_ms: u64,
    expect: &Expect<'_>,
    repo: &str,
) -> Result<ibexdb::PublicKey, Ended> {
    let expected = Expected {
        nonce,
        issued_ms,
        now_ms: now_ms(),
        max_age_ms: expect.max_age.as_millis() as u64,
        hosts: expect.hosts,
    };
    proof
        .verify(&expected, repo)
        .map_err(|e| Ended::Refused(Refusal::from(&e)))
}

type HelloParts = (String, u64, Option<SessionProof>, bool);

/// The first protocol message: a `Hello`, or the reason the connection ends.
async fn read_hello<S>(source: &mut S, max: usize) -> Result<HelloParts, Ended>
where
    S: Stream<Item = Result<Ws, WsError>> + Unpin,
{
    let bytes = loop {
        if let Some(b) = frames::message(source.next().await, max, "closed before Hello")? {
            break b;
        }
    };
    match Message::decode(&bytes) {
        Ok(Message::Hello {
            repo,
            cursor,
            auth,
            create,
        }) => Ok((repo, cursor, auth, create)),
        Ok(Message::Push { .. }) => Err(Ended::protocol("Push before Hello")),
        Ok(_) => Err(Ended::protocol(
            "a server-to-client message sent to the server",
        )),
        Err(e) => Err(Ended::Refused(Refusal::from(&e))),
    }
}
