//! The sync protocol: binary messages and the two transport-free state machines that use them,
//! [`Hub`] (the server's side of one repository) and [`Client`] (a peer's side). Nothing here
//! knows about sockets, tasks or time: the server binary and the browser worker move the bytes.
//!
//! **Reconciliation.** The server numbers the commits of each repository by their position in
//! its commit table (1, 2, 3, …: the order in which it applied them, parents before children);
//! that number is the *sequence*. A client keeps the highest sequence it has seen (its *cursor*,
//! 0 = nothing) and resumes with it: the server streams every commit after the cursor, with the
//! seals that cover them, then every commit it stores later. In the other direction the client
//! pushes, in its own commit-table order, every commit the server has not acknowledged or sent
//! it. The server verifies a push with [`Repo::receive`] (seals, ids, causal buffering), flushes
//! it to storage, and only then acknowledges it and relays it to the repository's subscribers.
//! Design document §12 gives the byte layout of every message.

use crate::codec::{Reader, Writer};
use crate::commit::PublicKey;
use crate::commit::{CommitId, Seal, MAX_COMMIT_BYTES};
use crate::error::{Error, ProtocolErrorKind, Result};
use crate::repo::Repo;
use crate::store::Storage;
use std::collections::{BTreeSet, HashMap, HashSet};

/// The protocol version this code speaks (byte 0 of every message).
pub const PROTOCOL_VERSION: u8 = 1;
/// Largest message accepted: one maximal commit plus room for seals and framing.
pub const MAX_MESSAGE_BYTES: usize = MAX_COMMIT_BYTES + (16 << 20);
/// Target size of the `Commits` and `Push` messages the state machines build (a single larger
/// commit still goes in a message of its own).
pub const BATCH_BYTES: usize = 1 << 20;
/// Longest repository name (bytes).
pub const MAX_REPO_NAME: usize = 128;
/// Longest error message text (bytes).
pub const MAX_ERROR_TEXT: usize = 4096;

pub const TYPE_HELLO: u8 = 1;
pub const TYPE_COMMITS: u8 = 2;
pub const TYPE_PUSH: u8 = 3;
pub const TYPE_ACK: u8 = 4;
pub const TYPE_ERROR: u8 = 5;

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
            _ => ErrorCode::Other,
        }
    }
}

/// One protocol message. Every message travels alone in one transport frame (one binary
/// WebSocket message).
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// Client → server: subscribe to `repo`, resuming after sequence `cursor` (0 = from the
    /// start). Server → client: the reply, with `cursor` = the server's current last sequence.
    Hello { repo: String, cursor: u64 },
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
    /// was stored.
    Error { code: ErrorCode, message: String },
}

fn protocol(kind: ProtocolErrorKind, detail: impl Into<String>) -> Error {
    Error::protocol(kind, detail)
}

/// A repository name: 1–128 bytes of `A–Z a–z 0–9 . _ -`, not starting with `.` (it names a
/// file on the server).
pub fn check_repo_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= MAX_REPO_NAME
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(protocol(
            ProtocolErrorKind::Malformed,
            format!("invalid repository name {name:?}: 1-{MAX_REPO_NAME} bytes of A-Z a-z 0-9 . _ -, not starting with '.'"),
        ))
    }
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
    let n = r.count(1, usize::MAX)?;
    let mut seals = Vec::with_capacity(n);
    for _ in 0..n {
        seals.push(r.lp()?.to_vec());
    }
    Ok((commits, seals))
}

impl Message {
    pub fn type_byte(&self) -> u8 {
        match self {
            Message::Hello { .. } => TYPE_HELLO,
            Message::Commits { .. } => TYPE_COMMITS,
            Message::Push { .. } => TYPE_PUSH,
            Message::Ack { .. } => TYPE_ACK,
            Message::Error { .. } => TYPE_ERROR,
        }
    }

    /// An `Error` message for a core error (its name and text).
    pub fn error(e: &Error) -> Message {
        Message::Error {
            code: ErrorCode::of(e),
            message: format!("{}: {e}", e.name()),
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u8(PROTOCOL_VERSION);
        w.u8(self.type_byte());
        match self {
            Message::Hello { repo, cursor } => {
                w.lp(repo.as_bytes());
                w.varint(*cursor);
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
            Message::Error { code, message } => {
                w.varint(*code as u64);
                let mut end = message.len().min(MAX_ERROR_TEXT);
                while !message.is_char_boundary(end) {
                    end -= 1;
                }
                w.lp(&message.as_bytes()[..end]);
            }
        }
        w.into_inner()
    }

    /// Decode one message. Errors are [`Error::Protocol`]: `TooLarge` over
    /// [`MAX_MESSAGE_BYTES`], `Version` for another protocol version, `UnknownType`,
    /// `Malformed` for a bad body, `TrailingBytes` after it.
    pub fn decode(bytes: &[u8]) -> Result<Message> {
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
        let ty = bytes[1];
        let mut r = Reader::new(&bytes[2..], "sync message");
        let malformed = |e: Error| match e {
            Error::Decode { reason, .. } => {
                protocol(ProtocolErrorKind::Malformed, format!("type {ty}: {reason}"))
            }
            e => e,
        };
        let msg = match ty {
            TYPE_HELLO => (|| {
                let repo = r.str()?.to_string();
                let cursor = r.varint()?;
                Ok(Message::Hello { repo, cursor })
            })(),
            TYPE_COMMITS => (|| {
                let from = r.varint()?;
                let to = r.varint()?;
                if to < from {
                    return Err(r.err(format!("range end {to} before its start {from}")));
                }
                let (commits, seals) = read_commits(&mut r)?;
                if commits.len() as u64 > to - from {
                    return Err(r.err("more commits than the sequence range holds"));
                }
                Ok(Message::Commits {
                    from,
                    to,
                    commits,
                    seals,
                })
            })(),
            TYPE_PUSH => {
                read_commits(&mut r).map(|(commits, seals)| Message::Push { commits, seals })
            }
            TYPE_ACK => (|| {
                let n = r.count(32, usize::MAX)?;
                let mut ids = Vec::with_capacity(n);
                for _ in 0..n {
                    ids.push(CommitId(r.array::<32>()?));
                }
                Ok(Message::Ack { ids })
            })(),
            TYPE_ERROR => (|| {
                let code = ErrorCode::from_u64(r.varint()?);
                let message = r.str()?;
                if message.len() > MAX_ERROR_TEXT {
                    return Err(r.err("error text longer than MAX_ERROR_TEXT"));
                }
                Ok(Message::Error {
                    code,
                    message: message.to_string(),
                })
            })(),
            t => {
                return Err(protocol(
                    ProtocolErrorKind::UnknownType,
                    format!("unknown message type {t}"),
                ))
            }
        }
        .map_err(malformed)?;
        if let Message::Hello { repo, .. } = &msg {
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

/// Which stored seals cover which commits, kept up to date incrementally from the repository's
/// seal list (which only grows).
#[derive(Default)]
struct SealIndex {
    indexed: usize,
    authors: Vec<PublicKey>,
    cover: HashMap<CommitId, Vec<u32>>,
}

impl SealIndex {
    fn refresh<S: Storage>(&mut self, repo: &Repo<S>) -> Result<()> {
        while self.indexed < repo.seal_count() {
            let seal = Seal::decode(&repo.seal_bytes(self.indexed)?)?;
            let i = self.authors.len() as u32;
            self.authors.push(seal.author);
            for id in &seal.ids {
                self.cover.entry(*id).or_default().push(i);
            }
            self.indexed += 1;
        }
        Ok(())
    }

    /// The stored seals that cover the commits at these commit-table positions for their
    /// authors (trusted commits need none).
    fn seals_for<S: Storage>(&self, repo: &Repo<S>, positions: &[usize]) -> Result<Vec<Vec<u8>>> {
        let core = repo.core();
        let mut need = BTreeSet::new();
        for &p in positions {
            let c = &core.commits[p];
            if c.trusted {
                continue;
            }
            let author = &core.authors[c.author as usize];
            if let Some(v) = self.cover.get(&c.id) {
                if let Some(&s) = v.iter().find(|&&s| self.authors[s as usize] == *author) {
                    need.insert(s);
                }
            }
        }
        need.into_iter()
            .map(|s| repo.seal_bytes(s as usize))
            .collect()
    }
}

/// Positions `start..end` of the commit table, with the commits sent for them
/// (position, id, bytes).
type Batch = (usize, usize, Vec<(usize, CommitId, Vec<u8>)>);

/// Commits at commit-table positions `from..to` (skipping `skip`), at most about
/// [`BATCH_BYTES`] per message, as `(from, to, positions)` ranges.
fn batches<S: Storage>(
    repo: &Repo<S>,
    from: usize,
    to: usize,
    skip: &HashSet<CommitId>,
) -> Result<Vec<Batch>> {
    let core = repo.core();
    let mut out = Vec::new();
    let mut start = from;
    let mut cur = Vec::new();
    let mut bytes = 0;
    for p in from..to {
        let id = core.commits[p].id;
        if !skip.contains(&id) {
            let b = repo.commit_bytes_at(p)?;
            bytes += b.len() + 40;
            cur.push((p, id, b));
        }
        if bytes >= BATCH_BYTES {
            out.push((start, p + 1, std::mem::take(&mut cur)));
            start = p + 1;
            bytes = 0;
        }
    }
    if start < to {
        out.push((start, to, cur));
    }
    Ok(out)
}

fn commits_messages<S: Storage>(
    repo: &Repo<S>,
    seals: &SealIndex,
    from: usize,
    to: usize,
    skip: &HashSet<CommitId>,
) -> Result<Vec<Message>> {
    let mut out = Vec::new();
    for (a, b, list) in batches(repo, from, to, skip)? {
        let positions: Vec<usize> = list.iter().map(|(p, _, _)| *p).collect();
        let seals = seals.seals_for(repo, &positions)?;
        out.push(Message::Commits {
            from: a as u64,
            to: b as u64,
            commits: list.into_iter().map(|(_, id, b)| (id, b)).collect(),
            seals,
        });
    }
    Ok(out)
}

/// What a push did on the server.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PushOutcome {
    /// The pushed commits now stored durably (new or already there): the `Ack`.
    pub ack: Vec<CommitId>,
    /// Sequences `from + 1 ..= to` were added by this push (relay them).
    pub from: u64,
    pub to: u64,
    /// Pushed commits that wait for parents the server does not have (not stored, not acked).
    pub pending: usize,
}

/// The server's side of one repository: sequence numbers, catch-up, verified durable pushes.
pub struct Hub<S: Storage> {
    repo: Repo<S>,
    seals: SealIndex,
}

impl<S: Storage> Hub<S> {
    pub fn new(repo: Repo<S>) -> Result<Hub<S>> {
        let mut seals = SealIndex::default();
        seals.refresh(&repo)?;
        Ok(Hub { repo, seals })
    }

    pub fn repo(&self) -> &Repo<S> {
        &self.repo
    }

    pub fn into_repo(self) -> Repo<S> {
        self.repo
    }

    /// The last sequence number (= number of stored commits).
    pub fn head(&self) -> u64 {
        self.repo.commit_count() as u64
    }

    /// The reply to a `Hello` with `cursor`: a `Hello` carrying the head, then `Commits`
    /// messages for every commit after the cursor. A cursor past the head (the client knew a
    /// server that had more) is treated as 0.
    pub fn hello(&self, repo_name: &str, cursor: u64) -> Result<Vec<Message>> {
        let head = self.head();
        let from = if cursor > head { 0 } else { cursor };
        let mut out = vec![Message::Hello {
            repo: repo_name.to_string(),
            cursor: head,
        }];
        out.extend(self.range(from, head, &HashSet::new())?);
        Ok(out)
    }

    /// `Commits` messages for sequences `from + 1 ..= to`, leaving out `skip`.
    pub fn range(&self, from: u64, to: u64, skip: &HashSet<CommitId>) -> Result<Vec<Message>> {
        commits_messages(&self.repo, &self.seals, from as usize, to as usize, skip)
    }

    /// Verify and store a push. On error nothing was stored (a verification error) or the
    /// repository must be closed and reopened (a storage error: frames may be half written).
    /// On success everything new is flushed to storage before this returns.
    pub fn push(
        &mut self,
        commits: &[(CommitId, Vec<u8>)],
        seals: &[Vec<u8>],
    ) -> Result<PushOutcome> {
        let from = self.head();
        let report = self.repo.receive(commits, seals)?;
        self.repo.flush()?;
        self.seals.refresh(&self.repo)?;
        let ack = commits
            .iter()
            .map(|(id, _)| *id)
            .filter(|id| self.repo.has_commit(id))
            .collect();
        Ok(PushOutcome {
            ack,
            from,
            to: self.head(),
            pending: report.pending,
        })
    }
}

/// What a message did to a [`Client`].
#[derive(Debug, Clone, PartialEq)]
pub enum ClientEvent {
    /// The server's `Hello`: it has `head` commits.
    Welcome { head: u64 },
    /// Commits received and applied; the cursor is now `cursor`.
    Received {
        applied: usize,
        duplicates: usize,
        cursor: u64,
    },
    /// The server stored `count` of our commits.
    Acked { count: usize },
    /// The server refused something.
    ServerError { code: ErrorCode, message: String },
}

/// A peer's side of sync for one repository. The repository is passed to each call, so the
/// host keeps owning it.
///
/// State: `cursor` (last server sequence received), `push_from` (every commit-table position
/// before it is known to the server), `sent_upto` (positions before it were pushed on this
/// connection or are known), and the known ids past `push_from`. The host may persist `cursor`
/// and `push_from` (after flushing what it received) to resume cheaply after a restart; with
/// 0/0 it re-downloads and re-pushes everything, which is correct, only slower.
pub struct Client {
    repo_name: String,
    cursor: u64,
    push_from: usize,
    sent_upto: usize,
    known: HashSet<CommitId>,
    seals: SealIndex,
    welcomed: bool,
}

impl Client {
    pub fn new(repo_name: &str, cursor: u64, push_from: usize) -> Result<Client> {
        check_repo_name(repo_name)?;
        Ok(Client {
            repo_name: repo_name.to_string(),
            cursor,
            push_from,
            sent_upto: push_from,
            known: HashSet::new(),
            seals: SealIndex::default(),
            welcomed: false,
        })
    }

    pub fn cursor(&self) -> u64 {
        self.cursor
    }

    pub fn push_from(&self) -> usize {
        self.push_from
    }

    /// Whether the server's `Hello` arrived on this connection.
    pub fn welcomed(&self) -> bool {
        self.welcomed
    }

    /// Start a (re)connection: the `Hello` to send. Pushes in flight on an earlier connection
    /// are pushed again.
    pub fn connect(&mut self) -> Message {
        self.sent_upto = self.push_from;
        self.welcomed = false;
        Message::Hello {
            repo: self.repo_name.clone(),
            cursor: self.cursor,
        }
    }

    fn advance<S: Storage>(&mut self, repo: &Repo<S>) {
        let core = repo.core();
        while self.push_from < core.commits.len()
            && self.known.remove(&core.commits[self.push_from].id)
        {
            self.push_from += 1;
        }
        self.sent_upto = self.sent_upto.max(self.push_from);
    }

    /// Handle one message from the server. Received commits go through [`Repo::receive`]
    /// (verified; the host flushes them like any write). An error here means the server sent
    /// something this peer refuses: drop the connection.
    pub fn handle<S: Storage>(&mut self, repo: &mut Repo<S>, msg: Message) -> Result<ClientEvent> {
        match msg {
            Message::Hello { repo: name, cursor } => {
                if name != self.repo_name {
                    return Err(protocol(
                        ProtocolErrorKind::Unexpected,
                        format!(
                            "server answered for repository {name:?}, not {:?}",
                            self.repo_name
                        ),
                    ));
                }
                if cursor < self.cursor {
                    // The server has fewer commits than we saw: it lost data or is another
                    // server. It resends everything; push everything it may lack.
                    self.cursor = 0;
                    self.push_from = 0;
                    self.sent_upto = 0;
                    self.known.clear();
                }
                self.welcomed = true;
                Ok(ClientEvent::Welcome { head: cursor })
            }
            Message::Commits {
                from,
                to,
                commits,
                seals,
            } => {
                if !self.welcomed || from != self.cursor {
                    return Err(protocol(
                        ProtocolErrorKind::Unexpected,
                        format!(
                            "commits {}..={to} do not follow the cursor {}",
                            from + 1,
                            self.cursor
                        ),
                    ));
                }
                let report = repo.receive(&commits, &seals)?;
                for (id, _) in &commits {
                    self.known.insert(*id);
                }
                self.cursor = to;
                self.advance(repo);
                Ok(ClientEvent::Received {
                    applied: report.applied,
                    duplicates: report.duplicates,
                    cursor: to,
                })
            }
            Message::Ack { ids } => {
                let count = ids.len();
                self.known.extend(ids);
                self.advance(repo);
                Ok(ClientEvent::Acked { count })
            }
            Message::Error { code, message } => Ok(ClientEvent::ServerError { code, message }),
            Message::Push { .. } => Err(protocol(
                ProtocolErrorKind::Unexpected,
                "a server does not push",
            )),
        }
    }

    /// The next `Push` to send, if there are commits the server lacks: seals local commits
    /// first (a signed commit must travel with its seal), then takes up to about
    /// [`BATCH_BYTES`] of commits in commit-table order. Call until it returns `None`.
    pub fn outgoing<S: Storage>(&mut self, repo: &mut Repo<S>) -> Result<Option<Message>> {
        if !self.welcomed || self.sent_upto >= repo.commit_count() {
            return Ok(None);
        }
        if repo.unsealed() > 0 {
            repo.seal()?;
        }
        self.seals.refresh(repo)?;
        let total = repo.commit_count();
        let mut positions = Vec::new();
        let mut commits = Vec::new();
        let mut bytes = 0;
        while self.sent_upto < total && bytes < BATCH_BYTES {
            let p = self.sent_upto;
            let id = repo.core().commits[p].id;
            if !self.known.contains(&id) {
                let b = repo.commit_bytes_at(p)?;
                bytes += b.len() + 40;
                commits.push((id, b));
                positions.push(p);
            }
            self.sent_upto += 1;
        }
        if commits.is_empty() {
            return Ok(None);
        }
        let seals = self.seals.seals_for(repo, &positions)?;
        Ok(Some(Message::Push { commits, seals }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commit::Identity;
    use crate::repo::{Clock, RepoOptions};
    use crate::store::MemStorage;
    use crate::txn::Txn;
    use crate::{map, Value};

    const T0: u64 = 1_700_000_000_000;

    fn clock() -> Clock {
        let mut t = T0;
        Box::new(move || {
            t += 1;
            t
        })
    }

    fn signed(n: u8) -> Repo<MemStorage> {
        let opts = RepoOptions::new(Some(Identity::from_entropy(&[n; 48])), clock());
        Repo::open(MemStorage::new(), None, opts).unwrap()
    }

    fn server() -> Hub<MemStorage> {
        let mut opts = RepoOptions::new(None, clock());
        opts.accept_trusted = false;
        Hub::new(Repo::open(MemStorage::new(), None, opts).unwrap()).unwrap()
    }

    fn write(r: &mut Repo<MemStorage>, key: &str, n: i64) {
        let mut t = Txn::new();
        t.put(key, map! { "n" => n }.as_map()).unwrap();
        r.commit(t).unwrap();
    }

    fn kind(e: Error) -> ProtocolErrorKind {
        match e {
            Error::Protocol { kind, .. } => kind,
            e => panic!("expected a protocol error, got {e:?}"),
        }
    }

    fn id(n: u8) -> CommitId {
        CommitId([n; 32])
    }

    #[test]
    fn every_message_round_trips() {
        let msgs = vec![
            Message::Hello {
                repo: "team-1.notes_v2".into(),
                cursor: 300,
            },
            Message::Commits {
                from: 4,
                to: 9,
                commits: vec![(id(1), vec![1, 2, 3]), (id(2), vec![])],
                seals: vec![vec![9; 10]],
            },
            Message::Push {
                commits: vec![(id(3), vec![7; 200])],
                seals: vec![],
            },
            Message::Ack {
                ids: vec![id(1), id(2)],
            },
            Message::Error {
                code: ErrorCode::Signature,
                message: "SignatureError: bad".into(),
            },
        ];
        for m in msgs {
            let b = m.encode();
            assert_eq!(b[0], PROTOCOL_VERSION);
            assert_eq!(Message::decode(&b).unwrap(), m);
        }
    }

    #[test]
    fn hello_layout_is_as_documented() {
        let b = Message::Hello {
            repo: "ab".into(),
            cursor: 300,
        }
        .encode();
        assert_eq!(b, vec![1, 1, 2, b'a', b'b', 0xac, 0x02]);
    }

    #[test]
    fn decode_rejects_bad_input_with_typed_errors() {
        let good = Message::Ack { ids: vec![id(1)] }.encode();
        let mut v = good.clone();
        v[0] = 2;
        assert_eq!(
            kind(Message::decode(&v).unwrap_err()),
            ProtocolErrorKind::Version
        );
        let mut v = good.clone();
        v[1] = 99;
        assert_eq!(
            kind(Message::decode(&v).unwrap_err()),
            ProtocolErrorKind::UnknownType
        );
        let mut v = good.clone();
        v.push(0);
        assert_eq!(
            kind(Message::decode(&v).unwrap_err()),
            ProtocolErrorKind::TrailingBytes
        );
        assert_eq!(
            kind(Message::decode(&good[..good.len() - 1]).unwrap_err()),
            ProtocolErrorKind::Malformed
        );
        assert_eq!(
            kind(Message::decode(&[1]).unwrap_err()),
            ProtocolErrorKind::Malformed
        );
        let big = vec![1u8; MAX_MESSAGE_BYTES + 1];
        assert_eq!(
            kind(Message::decode(&big).unwrap_err()),
            ProtocolErrorKind::TooLarge
        );
        // A count larger than the input cannot make the decoder allocate.
        assert_eq!(
            kind(Message::decode(&[1, TYPE_ACK, 0xff, 0xff, 0xff, 0x0f]).unwrap_err()),
            ProtocolErrorKind::Malformed
        );
        // Bad repository names (path separators, leading dot, empty).
        for name in ["../x", ".hidden", "", "a/b", "é"] {
            let b = Message::Hello {
                repo: name.into(),
                cursor: 0,
            }
            .encode();
            assert_eq!(
                kind(Message::decode(&b).unwrap_err()),
                ProtocolErrorKind::Malformed
            );
        }
        // A range that ends before it starts, or holds fewer sequences than commits.
        let b = Message::Commits {
            from: 5,
            to: 4,
            commits: vec![],
            seals: vec![],
        }
        .encode();
        assert_eq!(
            kind(Message::decode(&b).unwrap_err()),
            ProtocolErrorKind::Malformed
        );
        let b = Message::Commits {
            from: 5,
            to: 5,
            commits: vec![(id(1), vec![])],
            seals: vec![],
        }
        .encode();
        assert_eq!(
            kind(Message::decode(&b).unwrap_err()),
            ProtocolErrorKind::Malformed
        );
        assert_eq!(
            Error::protocol(ProtocolErrorKind::Version, "x").name(),
            "ProtocolError"
        );
    }

    /// Deliver every message through encode/decode, as a transport would.
    fn wire(m: Message) -> Message {
        Message::decode(&m.encode()).unwrap()
    }

    /// Connect `c` to `hub`, exchange until quiet. Returns what the client pushed.
    fn sync(hub: &mut Hub<MemStorage>, c: &mut Client, r: &mut Repo<MemStorage>) -> usize {
        let Message::Hello { repo, cursor } = wire(c.connect()) else {
            unreachable!()
        };
        for m in hub.hello(&repo, cursor).unwrap() {
            c.handle(r, wire(m)).unwrap();
        }
        let mut pushed = 0;
        while let Some(m) = c.outgoing(r).unwrap() {
            let Message::Push { commits, seals } = wire(m) else {
                unreachable!()
            };
            pushed += commits.len();
            let out = hub.push(&commits, &seals).unwrap();
            c.handle(r, wire(Message::Ack { ids: out.ack })).unwrap();
            let skip = commits.iter().map(|(id, _)| *id).collect();
            for m in hub.range(out.from, out.to, &skip).unwrap() {
                c.handle(r, wire(m)).unwrap();
            }
        }
        pushed
    }

    #[test]
    fn peers_converge_through_a_hub_and_resume_from_their_cursor() {
        let mut hub = server();
        let (mut a, mut b) = (signed(1), signed(2));
        let mut ca = Client::new("r", 0, 0).unwrap();
        let mut cb = Client::new("r", 0, 0).unwrap();
        for i in 0..5 {
            write(&mut a, &format!("t/a{i}"), i);
            write(&mut b, &format!("t/b{i}"), i);
            write(&mut b, "t/shared", i);
        }
        write(&mut a, "t/shared", 100);
        assert_eq!(sync(&mut hub, &mut ca, &mut a), 6);
        assert_eq!(sync(&mut hub, &mut cb, &mut b), 10);
        assert_eq!(sync(&mut hub, &mut ca, &mut a), 0);
        assert_eq!(a.state_hash(), b.state_hash());
        assert_eq!(a.state_hash(), hub.repo().state_hash());
        assert_eq!(hub.head(), 16);
        assert_eq!((ca.cursor(), cb.cursor()), (16, 16));
        assert_eq!(ca.push_from(), 16);
        // Resume: only what was missed is sent.
        write(&mut b, "t/late", 1);
        sync(&mut hub, &mut cb, &mut b);
        let msgs = hub.hello("r", ca.cursor()).unwrap();
        let n: usize = msgs
            .iter()
            .map(|m| match m {
                Message::Commits { commits, .. } => commits.len(),
                _ => 0,
            })
            .sum();
        assert_eq!(n, 1);
        sync(&mut hub, &mut ca, &mut a);
        assert_eq!(a.state_hash(), b.state_hash());
        // A fresh client state (cursor 0, push_from 0) re-syncs correctly: only duplicates.
        let mut fresh = Client::new("r", 0, 0).unwrap();
        sync(&mut hub, &mut fresh, &mut a);
        assert_eq!(hub.head(), 17);
        assert_eq!(a.state_hash(), hub.repo().state_hash());
    }

    #[test]
    fn tampered_or_unsigned_pushes_are_refused_and_nothing_is_stored() {
        let mut hub = server();
        let mut a = signed(1);
        write(&mut a, "t/x", 1);
        a.seal().unwrap();
        let (commits, seals) = a.export().unwrap();
        // Tampered: one byte of the commit changed.
        let mut bad = commits.clone();
        let last = bad[0].1.len() - 1;
        bad[0].1[last] ^= 1;
        let e = hub.push(&bad, &seals).unwrap_err();
        assert!(
            matches!(e, Error::Signature { .. } | Error::Decode { .. }),
            "{e:?}"
        );
        // Unsigned: the seal left out.
        let e = hub.push(&commits, &[]).unwrap_err();
        assert_eq!(ErrorCode::of(&e), ErrorCode::Signature);
        assert!(Message::error(&e).encode().len() > 2);
        // Trusted-mode commits are refused by a hub that requires signatures.
        let mut opts = RepoOptions::new(None, clock());
        opts.trusted = true;
        let mut t = Repo::open(MemStorage::new(), None, opts).unwrap();
        write(&mut t, "t/y", 1);
        let e = hub.push(&t.export().unwrap().0, &[]).unwrap_err();
        assert_eq!(ErrorCode::of(&e), ErrorCode::Signature);
        assert_eq!(hub.head(), 0);
        assert_eq!(
            hub.repo().storage().bytes().len() as u64,
            hub.repo().log_len()
        );
        // The good push still goes through afterwards.
        let out = hub.push(&commits, &seals).unwrap();
        assert_eq!((out.from, out.to, out.ack.len()), (0, 1, 1));
    }

    #[test]
    fn hello_from_a_client_ahead_of_the_server_resets_and_repushes() {
        let mut hub = server();
        let mut a = signed(1);
        write(&mut a, "t/x", 1);
        let mut c = Client::new("r", 50, 1).unwrap();
        assert_eq!(sync(&mut hub, &mut c, &mut a), 1);
        assert_eq!(hub.head(), 1);
        assert_eq!(c.cursor(), 1);
    }

    #[test]
    fn commits_out_of_order_are_a_protocol_error() {
        let mut a = signed(1);
        let mut c = Client::new("r", 0, 0).unwrap();
        c.connect();
        c.handle(
            &mut a,
            Message::Hello {
                repo: "r".into(),
                cursor: 3,
            },
        )
        .unwrap();
        let e = c
            .handle(
                &mut a,
                Message::Commits {
                    from: 2,
                    to: 3,
                    commits: vec![],
                    seals: vec![],
                },
            )
            .unwrap_err();
        assert_eq!(kind(e), ProtocolErrorKind::Unexpected);
        let _ = Value::from(1i64);
    }
}
