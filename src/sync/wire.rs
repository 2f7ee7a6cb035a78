//! The sync protocol's messages and their byte layout (docs/design.md §12.2): every message is
//! `version ‖ type ‖ body`; decoding refuses anything else with a typed `ProtocolError`.

use super::session::{SessionProof, NONCE_LEN};
use super::version::PROTOCOL_VERSION;
use crate::codec::{Reader, Writer};
use crate::commit::{CommitId, Seal, MAX_COMMIT_BYTES};
use crate::error::{Error, ProtocolErrorKind, Result};

/// Largest message accepted: one maximal commit plus room for seals and framing.
pub const MAX_MESSAGE_BYTES: usize = MAX_COMMIT_BYTES + (16 << 20);
/// Target size of the `Commits` and `Push` messages the state machines build (a single larger
/// commit still goes in a message of its own).
pub const BATCH_BYTES: usize = 1 << 20;
pub use crate::key::{check_repo_name, MAX_REPO_NAME};
/// Longest error message text (bytes).
pub const MAX_ERROR_TEXT: usize = 4096;
/// Longest error name (`Error::name`: ASCII letters only), in bytes.
pub const MAX_ERROR_NAME: usize = 64;
/// Longest error kind (`Error::kind`), in bytes; an empty kind is none.
pub const MAX_ERROR_KIND: usize = 64;

pub const TYPE_HELLO: u8 = 1;
pub const TYPE_COMMITS: u8 = 2;
pub const TYPE_PUSH: u8 = 3;
pub const TYPE_ACK: u8 = 4;
pub const TYPE_ERROR: u8 = 5;
pub const TYPE_CHALLENGE: u8 = 6;
pub const TYPE_WELCOME: u8 = 7;

/// What a session may do in a repository (the `Welcome`'s bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rights {
    pub read: bool,
    pub write: bool,
    pub administer: bool,
}

impl Rights {
    fn bits(self) -> u8 {
        u8::from(self.read) | u8::from(self.write) << 1 | u8::from(self.administer) << 2
    }

    fn from_bits(b: u8) -> Option<Rights> {
        (b < 8).then_some(Rights {
            read: b & 1 != 0,
            write: b & 2 != 0,
            administer: b & 4 != 0,
        })
    }
}

/// Error codes carried by [`Message::Error`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// Anything else.
    Other = 0,
    /// A message was refused ([`Error::Protocol`]).
    Protocol = 1,
    /// A pushed commit or seal failed signature checks ([`Error::Signature`]); nothing stored.
    Signature = 2,
    /// A pushed commit or seal could not be decoded; nothing stored.
    Decode = 3,
    /// A pushed commit's clock is too far ahead; nothing stored.
    ClockSkew = 4,
    /// A pushed commit is too large; nothing stored.
    TooLarge = 5,
    /// The server could not store the push (nothing acknowledged; the repository is closed).
    Storage = 6,
    /// The repository name is not acceptable.
    InvalidRepository = 7,
    /// The access rule refused a read or write ([`Error::Permission`]).
    Permission = 8,
    /// The session's proof of key possession was refused ([`Error::Auth`]).
    Auth = 9,
    /// A resource limit was reached ([`Error::Limit`]): message size, connections, rate,
    /// queue, pending commits, open repositories, timeouts.
    Limit = 10,
    /// The server cannot serve this now ([`Error::Unavailable`]): shutting down, or the
    /// repository cannot be opened. Try again later.
    Unavailable = 11,
    /// A pushed commit breaks its collection's stored schema in its causal past
    /// ([`Error::Schema`], [`Error::SchemaVersion`]), or writes a malformed one
    /// ([`Error::InvalidSchema`]; docs/design.md §2.4); nothing stored.
    Schema = 12,
}

impl ErrorCode {
    pub fn from_u64(v: u64) -> ErrorCode {
        match v {
            1 => ErrorCode::Protocol,
            2 => ErrorCode::Signature,
            3 => ErrorCode::Decode,
            4 => ErrorCode::ClockSkew,
            5 => ErrorCode::TooLarge,
            6 => ErrorCode::Storage,
            7 => ErrorCode::InvalidRepository,
            8 => ErrorCode::Permission,
            9 => ErrorCode::Auth,
            10 => ErrorCode::Limit,
            11 => ErrorCode::Unavailable,
            12 => ErrorCode::Schema,
            _ => ErrorCode::Other,
        }
    }

    /// The code for a core error.
    pub fn of(e: &Error) -> ErrorCode {
        match e {
            Error::Protocol { .. } => ErrorCode::Protocol,
            Error::Signature { .. } => ErrorCode::Signature,
            Error::Decode { .. } => ErrorCode::Decode,
            Error::ClockSkew { .. } => ErrorCode::ClockSkew,
            Error::TooLarge { .. } => ErrorCode::TooLarge,
            Error::Storage(_) | Error::Corrupt { .. } => ErrorCode::Storage,
            Error::Permission { .. } => ErrorCode::Permission,
            Error::Auth { .. } => ErrorCode::Auth,
            Error::Limit { .. } => ErrorCode::Limit,
            Error::Unavailable { .. } => ErrorCode::Unavailable,
            Error::InvalidKey { .. } => ErrorCode::InvalidRepository,
            Error::Schema { .. } | Error::SchemaVersion { .. } | Error::InvalidSchema { .. } => {
                ErrorCode::Schema
            }
            _ => ErrorCode::Other,
        }
    }
}

/// One protocol message. Every message travels alone in one transport frame (one binary
/// WebSocket message).
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// Server → client, first on every connection: a fresh random nonce to sign, and the
    /// server's clock (so a client can see how far off its own is).
    Challenge {
        nonce: [u8; NONCE_LEN],
        server_time_ms: u64,
    },
    /// Client → server: subscribe to `repo`, resuming after sequence `cursor` (0 = from the
    /// start), proving a key (`auth`) or anonymous (`None`). `create`: the client holds a root
    /// and will push it if the server has no repository of that name (a `Hello` without it on
    /// an unknown name is refused with `PermissionError` `not-found`; docs/design.md §12.2).
    Hello {
        repo: String,
        cursor: u64,
        auth: Option<SessionProof>,
        create: bool,
    },
    /// Server → client: the reply to `Hello`: the server's current last sequence and what the
    /// session may do.
    Welcome {
        repo: String,
        head: u64,
        rights: Rights,
    },
    /// Server → client: the commits with sequence in `from + 1 ..= to`, in sequence order, with
    /// the seals that cover them. Commits the receiving client pushed itself may be left out;
    /// after this message the client's cursor is `to`.
    Commits {
        from: u64,
        to: u64,
        commits: Vec<(CommitId, Vec<u8>)>,
        seals: Vec<Vec<u8>>,
    },
    /// Client → server: commits (parents before children) and the seals that cover them.
    Push {
        commits: Vec<(CommitId, Vec<u8>)>,
        seals: Vec<Vec<u8>>,
    },
    /// Server → client: these pushed commits are stored durably.
    Ack { ids: Vec<CommitId> },
    /// Either way: something was refused. After an error about a `Push`, nothing of that push
    /// was stored. The fields are those of the core error that says why ([`Message::error`]).
    Error {
        code: ErrorCode,
        /// The error's stable name ([`Error::name`], e.g. `PermissionError`).
        name: String,
        /// What kind of that error ([`Error::kind`]: e.g. `cannot-write`, or the limit).
        kind: Option<String>,
        /// The error's text.
        message: String,
    },
    /// Client → server: the client holds the bytes of an attachment (SHA-256 `hash`, `size`
    /// bytes) that a commit of this repository records, and would upload them
    /// (docs/design.md §12.2, *Attachment bytes*).
    AttachOffer { hash: [u8; 32], size: u64 },
    /// Server → client: the answer to an offer, and to an upload's last chunk: send the bytes
    /// from `offset` (0: all of them); `offset` = size: the server holds them durably.
    AttachWant { hash: [u8; 32], offset: u64 },
    /// Either way: bytes `offset .. offset + bytes.len()` of an attachment (at most
    /// [`ATTACH_CHUNK_BYTES`]): an upload after `AttachWant`, or a download after `AttachGet`.
    AttachChunk {
        hash: [u8; 32],
        offset: u64,
        bytes: Vec<u8>,
    },
    /// Client → server: send the bytes of attachment `hash` (of `size` bytes, as the commit
    /// records) from `offset`, at most `length` of them (a window: the client asks for the next
    /// one as it stores what came, so its memory holds about one window).
    AttachGet {
        hash: [u8; 32],
        size: u64,
        offset: u64,
        length: u64,
    },
    /// Server → client: an offer, upload or download of attachment `hash` was refused; the
    /// fields are an `Error`'s. The session goes on.
    AttachError {
        hash: [u8; 32],
        code: ErrorCode,
        name: String,
        kind: Option<String>,
        message: String,
    },
}

pub(super) fn protocol(kind: ProtocolErrorKind, detail: impl Into<String>) -> Error {
    Error::protocol(kind, detail)
}

fn write_commits(w: &mut Writer, commits: &[(CommitId, Vec<u8>)], seals: &[Vec<u8>]) {
    w.varint(commits.len() as u64);
    for (id, b) in commits {
        w.bytes(&id.0);
        w.lp(b);
    }
    w.varint(seals.len() as u64);
    for s in seals {
        w.lp(s);
    }
}

type CommitList = (Vec<(CommitId, Vec<u8>)>, Vec<Vec<u8>>);

fn read_commits(r: &mut Reader<'_>) -> Result<CommitList> {
    let n = r.count(33, usize::MAX)?;
    let mut commits = Vec::with_capacity(n);
    for _ in 0..n {
        let id = CommitId(r.array::<32>()?);
        let b = r.lp()?;
        if b.len() > MAX_COMMIT_BYTES {
            return Err(r.err("commit larger than MAX_COMMIT_BYTES"));
        }
        commits.push((id, b.to_vec()));
    }
    // Each seal is at least `Seal::MIN_BYTES` (plus its length prefix): a count of empty
    // seals cannot make the list cost more than the input.
    let n = r.count(Seal::MIN_BYTES + 1, usize::MAX)?;
    let mut seals = Vec::with_capacity(n);
    for _ in 0..n {
        let b = r.lp()?;
        if b.len() < Seal::MIN_BYTES {
            return Err(r.err("seal shorter than the shortest seal"));
        }
        seals.push(b.to_vec());
    }
    Ok((commits, seals))
}

impl Message {
    pub fn type_byte(&self) -> u8 {
        match self {
            Message::Challenge { .. } => TYPE_CHALLENGE,
            Message::Hello { .. } => TYPE_HELLO,
            Message::Welcome { .. } => TYPE_WELCOME,
            Message::Commits { .. } => TYPE_COMMITS,
            Message::Push { .. } => TYPE_PUSH,
            Message::Ack { .. } => TYPE_ACK,
            Message::Error { .. } => TYPE_ERROR,
            Message::AttachOffer { .. } => TYPE_ATTACH_OFFER,
            Message::AttachWant { .. } => TYPE_ATTACH_WANT,
            Message::AttachChunk { .. } => TYPE_ATTACH_CHUNK,
            Message::AttachGet { .. } => TYPE_ATTACH_GET,
            Message::AttachError { .. } => TYPE_ATTACH_ERROR,
        }
    }

    /// An `Error` message for a core error: its code, name, kind and text.
    pub fn error(e: &Error) -> Message {
        Message::Error {
            code: ErrorCode::of(e),
            name: e.name().to_string(),
            kind: e.kind().map(str::to_string),
            message: e.to_string(),
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u8(PROTOCOL_VERSION);
        w.u8(self.type_byte());
        match self {
            Message::Challenge {
                nonce,
                server_time_ms,
            } => {
                w.bytes(nonce);
                w.u64(*server_time_ms);
            }
            Message::Hello {
                repo,
                cursor,
                auth,
                create,
            } => {
                w.lp(repo.as_bytes());
                w.varint(*cursor);
                match auth {
                    None => w.u8(0),
                    Some(p) => {
                        w.u8(1);
                        p.encode(&mut w);
                    }
                }
                w.u8(u8::from(*create));
            }
            Message::Welcome { repo, head, rights } => {
                w.lp(repo.as_bytes());
                w.varint(*head);
                w.u8(rights.bits());
            }
            Message::Commits {
                from,
                to,
                commits,
                seals,
            } => {
                w.varint(*from);
                w.varint(*to);
                write_commits(&mut w, commits, seals);
            }
            Message::Push { commits, seals } => write_commits(&mut w, commits, seals),
            Message::Ack { ids } => {
                w.varint(ids.len() as u64);
                for id in ids {
                    w.bytes(&id.0);
                }
            }
            Message::Error {
                code,
                name,
                kind,
                message,
            } => write_error(&mut w, *code, name, kind.as_deref(), message),
            m => encode_attach(&mut w, m),
        }
        w.into_inner()
    }

    /// Decode one message. Errors are [`Error::Protocol`]: `TooLarge` over
    /// [`MAX_MESSAGE_BYTES`], `Version` for another protocol version, `UnknownType`,
    /// `Malformed` for a bad body, `TrailingBytes` after it.
    pub fn decode(bytes: &[u8]) -> Result<Message> {
        let ty = check_header(bytes)?;
        let mut r = Reader::new(&bytes[2..], "sync message");
        let msg = match ty {
            TYPE_CHALLENGE => decode_challenge(&mut r),
            TYPE_HELLO => decode_hello(&mut r),
            TYPE_WELCOME => decode_welcome(&mut r),
            TYPE_COMMITS => decode_commits(&mut r),
            TYPE_PUSH => {
                read_commits(&mut r).map(|(commits, seals)| Message::Push { commits, seals })
            }
            TYPE_ACK => decode_ack(&mut r),
            TYPE_ERROR => decode_error(&mut r),
            TYPE_ATTACH_OFFER..=TYPE_ATTACH_ERROR => decode_attach(ty, &mut r),
            t => {
                return Err(protocol(
                    ProtocolErrorKind::UnknownType,
                    format!("unknown message type {t}"),
                ))
            }
        }
        .map_err(|e| match e {
            Error::Decode { reason, .. } => {
                protocol(ProtocolErrorKind::Malformed, format!("type {ty}: {reason}"))
            }
            e => e,
        })?;
        if let Message::Hello { repo, .. } | Message::Welcome { repo, .. } = &msg {
            check_repo_name(repo)?;
        }
        if !r.is_empty() {
            return Err(protocol(
                ProtocolErrorKind::TrailingBytes,
                format!(
                    "{} bytes after the end of a type {ty} message",
                    r.remaining()
                ),
            ));
        }
        Ok(msg)
    }
}

/// Size limit, length and version of a message; returns its type byte.
fn check_header(bytes: &[u8]) -> Result<u8> {
    if bytes.len() > MAX_MESSAGE_BYTES {
        return Err(protocol(
            ProtocolErrorKind::TooLarge,
            format!(
                "message of {} bytes exceeds the limit of {MAX_MESSAGE_BYTES}",
                bytes.len()
            ),
        ));
    }
    if bytes.len() < 2 {
        return Err(protocol(
            ProtocolErrorKind::Malformed,
            "message shorter than its 2-byte header",
        ));
    }
    if bytes[0] != PROTOCOL_VERSION {
        return Err(protocol(
            ProtocolErrorKind::Version,
            format!(
                "protocol version {} is not supported (this peer speaks {PROTOCOL_VERSION})",
                bytes[0]
            ),
        ));
    }
    Ok(bytes[1])
}

fn decode_challenge(r: &mut Reader<'_>) -> Result<Message> {
    let nonce = r.array::<NONCE_LEN>()?;
    let server_time_ms = r.u64()?;
    Ok(Message::Challenge {
        nonce,
        server_time_ms,
    })
}

fn decode_hello(r: &mut Reader<'_>) -> Result<Message> {
    let repo = r.str()?.to_string();
    let cursor = r.varint()?;
    let auth = match r.u8()? {
        0 => None,
        1 => Some(SessionProof::decode(r)?),
        _ => return Err(r.err("bad authentication flag")),
    };
    let create = match r.u8()? {
        0 => false,
        1 => true,
        _ => return Err(r.err("bad create flag")),
    };
    Ok(Message::Hello {
        repo,
        cursor,
        auth,
        create,
    })
}

fn decode_welcome(r: &mut Reader<'_>) -> Result<Message> {
    let repo = r.str()?.to_string();
    let head = r.varint()?;
    let rights = Rights::from_bits(r.u8()?).ok_or_else(|| r.err("bad rights bits"))?;
    Ok(Message::Welcome { repo, head, rights })
}

fn decode_commits(r: &mut Reader<'_>) -> Result<Message> {
    let from = r.varint()?;
    let to = r.varint()?;
    if to < from {
        return Err(r.err(format!("range end {to} before its start {from}")));
    }
    let (commits, seals) = read_commits(r)?;
    if commits.len() as u64 > to - from {
        return Err(r.err("more commits than the sequence range holds"));
    }
    Ok(Message::Commits {
        from,
        to,
        commits,
        seals,
    })
}

fn decode_ack(r: &mut Reader<'_>) -> Result<Message> {
    let n = r.count(32, usize::MAX)?;
    let mut ids = Vec::with_capacity(n);
    for _ in 0..n {
        ids.push(CommitId(r.array::<32>()?));
    }
    Ok(Message::Ack { ids })
}

/// An `Error`'s fields (also the tail of an `AttachError`).
fn write_error(w: &mut Writer, code: ErrorCode, name: &str, kind: Option<&str>, message: &str) {
    w.varint(code as u64);
    w.lp(cut(name, MAX_ERROR_NAME));
    w.lp(cut(kind.unwrap_or(""), MAX_ERROR_KIND));
    w.lp(cut(message, MAX_ERROR_TEXT));
}

fn decode_error(r: &mut Reader<'_>) -> Result<Message> {
    let code = ErrorCode::from_u64(r.varint()?);
    let name = r.str()?;
    if name.is_empty()
        || name.len() > MAX_ERROR_NAME
        || !name.bytes().all(|b| b.is_ascii_alphabetic())
    {
        return Err(r.err("an error name must be 1 to 64 ASCII letters"));
    }
    let kind = r.str()?;
    if kind.len() > MAX_ERROR_KIND {
        return Err(r.err("error kind longer than MAX_ERROR_KIND"));
    }
    let message = r.str()?;
    if message.len() > MAX_ERROR_TEXT {
        return Err(r.err("error text longer than MAX_ERROR_TEXT"));
    }
    Ok(Message::Error {
        code,
        name: name.to_string(),
        kind: (!kind.is_empty()).then(|| kind.to_string()),
        message: message.to_string(),
    })
}

/// `s` cut to at most `max` bytes, at a character boundary.
fn cut(s: &str, max: usize) -> &[u8] {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s.as_bytes()[..end]
}

// ----- the attachment messages (version 5; docs/design.md §12.2, *Attachment bytes*): an upload
// is `AttachOffer` → `AttachWant{offset}` → `AttachChunk`s from that offset → `AttachWant{offset =
// size}` once the server holds the bytes; a download is `AttachGet` → `AttachChunk`s over the window it asked for.
// A refusal of either is an `AttachError` naming the hash, and the session goes on.

pub const TYPE_ATTACH_OFFER: u8 = 8;
pub const TYPE_ATTACH_WANT: u8 = 9;
pub const TYPE_ATTACH_CHUNK: u8 = 10;
pub const TYPE_ATTACH_GET: u8 = 11;
pub const TYPE_ATTACH_ERROR: u8 = 12;

/// Largest `AttachChunk` body: 256 KiB (under the server's default `--max-message-bytes`
/// of 16 MiB; a server configured below a chunk's message refuses it as too large).
pub const ATTACH_CHUNK_BYTES: usize = 256 << 10;

impl Message {
    /// An `AttachError` about `hash` for a core error: its code, name, kind and text.
    pub fn attach_error(hash: [u8; 32], e: &Error) -> Message {
        Message::AttachError {
            hash,
            code: ErrorCode::of(e),
            name: e.name().to_string(),
            kind: e.kind().map(str::to_string),
            message: e.to_string(),
        }
    }
}

fn encode_attach(w: &mut Writer, m: &Message) {
    match m {
        Message::AttachOffer { hash, size } => {
            w.bytes(hash);
            w.varint(*size);
        }
        Message::AttachWant { hash, offset } => {
            w.bytes(hash);
            w.varint(*offset);
        }
        Message::AttachChunk {
            hash,
            offset,
            bytes,
        } => {
            w.bytes(hash);
            w.varint(*offset);
            w.lp(bytes);
        }
        Message::AttachGet {
            hash,
            size,
            offset,
            length,
        } => {
            w.bytes(hash);
            w.varint(*size);
            w.varint(*offset);
            w.varint(*length);
        }
        Message::AttachError {
            hash,
            code,
            name,
            kind,
            message,
        } => {
            w.bytes(hash);
            write_error(w, *code, name, kind.as_deref(), message);
        }
        _ => unreachable!("not an attachment message"),
    }
}

fn decode_attach(ty: u8, r: &mut Reader<'_>) -> Result<Message> {
    let hash = r.array::<32>()?;
    Ok(match ty {
        TYPE_ATTACH_OFFER => Message::AttachOffer {
            hash,
            size: r.varint()?,
        },
        TYPE_ATTACH_WANT => Message::AttachWant {
            hash,
            offset: r.varint()?,
        },
        TYPE_ATTACH_CHUNK => {
            let offset = r.varint()?;
            let bytes = r.lp()?;
            if bytes.len() > ATTACH_CHUNK_BYTES {
                return Err(r.err("attachment chunk larger than ATTACH_CHUNK_BYTES"));
            }
            Message::AttachChunk {
                hash,
                offset,
                bytes: bytes.to_vec(),
            }
        }
        TYPE_ATTACH_GET => {
            let size = r.varint()?;
            let offset = r.varint()?;
            if offset > size {
                return Err(r.err("attachment offset past its size"));
            }
            let length = r.varint()?;
            Message::AttachGet {
                hash,
                size,
                offset,
                length,
            }
        }
        _ => match decode_error(r)? {
            Message::Error {
                code,
                name,
                kind,
                message,
            } => Message::AttachError {
                hash,
                code,
                name,
                kind,
                message,
            },
            _ => unreachable!("decode_error returns an Error"),
        },
    })
}
