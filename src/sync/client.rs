//! A peer's side of sync (docs/design.md §12.2): the handshake (answer the server's challenge
//! with a signed `Hello`), the cursor of what it has received, and what it still has to push
//! (`push_from`, `sent_upto`, the commits the server already knows).

use super::seals::SealIndex;
use super::session::{SessionProof, NONCE_LEN};
use super::wire::{check_repo_name, protocol, ErrorCode, Message, Rights, BATCH_BYTES};
use crate::commit::CommitId;
use crate::error::{ProtocolErrorKind, Result};
use crate::repo::Repo;
use crate::store::Storage;
use std::collections::HashSet;

/// What a message did to a [`Client`].
#[derive(Debug, Clone, PartialEq)]
pub enum ClientEvent {
    /// The server's challenge was answered: send the `Hello` that [`Client::outgoing`] returns.
    Challenged { server_time_ms: u64 },
    /// The server's `Welcome`: it has `head` commits; the session has these rights.
    Welcome { head: u64, rights: Rights },
    /// Commits received and applied; the cursor is now `cursor`.
    Received {
        applied: usize,
        duplicates: usize,
        cursor: u64,
    },
    /// The server stored `count` of our commits.
    Acked { count: usize },
    /// The server refused something: the fields of its `Error` message (the code, the error's
    /// stable name, its kind, its text).
    ServerError {
        code: ErrorCode,
        name: String,
        kind: Option<String>,
        message: String,
    },
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
    /// The server's URL as dialed (bound into the session proof).
    url: String,
    /// The `Hello` answering the server's challenge, until `outgoing` hands it out.
    hello: Option<Message>,
    /// The server refused a push for lack of permission: pushing stops until the access
    /// list lets this replica's author write.
    refused: bool,
    cursor: u64,
    push_from: usize,
    sent_upto: usize,
    known: HashSet<CommitId>,
    seals: SealIndex,
    welcomed: bool,
}

impl Client {
    /// Sync `repo_name` with the server at `url`, resuming after sequence `cursor` with the
    /// first `push_from` commit-table entries known to the server.
    pub fn new(repo_name: &str, url: &str, cursor: u64, push_from: usize) -> Result<Client> {
        check_repo_name(repo_name)?;
        Ok(Client {
            repo_name: repo_name.to_string(),
            url: url.to_string(),
            hello: None,
            refused: false,
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

    /// Whether the server refused a push of ours for lack of permission (pushing is paused
    /// until the access list lets this replica write).
    pub fn refused(&self) -> bool {
        self.refused
    }

    /// Sync with the server at `url` from now on (the next connection's proof names it). The
    /// cursor is kept: nodes of one deployment share sequence numbers (docs/design.md §12); a
    /// server with fewer commits than the cursor makes the client start over (`Welcome`).
    pub fn set_url(&mut self, url: &str) {
        self.url = url.to_string();
    }

    /// Start a (re)connection: nothing is sent until the server's `Challenge` arrives. Pushes
    /// in flight on an earlier connection are pushed again.
    pub fn connect(&mut self) {
        self.sent_upto = self.push_from;
        self.welcomed = false;
        self.hello = None;
    }

    /// The `Hello` answering `nonce`: signed by the repository's identity, or anonymous
    /// without one.
    fn answer<S: Storage>(&self, repo: &Repo<S>, nonce: [u8; NONCE_LEN]) -> Message {
        let auth = repo
            .identity()
            .map(|id| SessionProof::sign(id, nonce, &self.url, &self.repo_name));
        Message::Hello {
            repo: self.repo_name.clone(),
            cursor: self.cursor,
            auth,
            // Holding a root, it may found the repository on a server that has none.
            create: repo.commit_count() > 0,
        }
    }

    fn advance<S: Storage>(&mut self, repo: &Repo<S>) {
        let core = repo.graph();
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
        self.handle_checked(repo, msg, false)
    }

    /// [`Client::handle`] for a host that verified the signature of every seal in `msg` itself
    /// (see [`Repo::receive_vouched`]); everything else is checked as usual.
    pub fn handle_vouched<S: Storage>(
        &mut self,
        repo: &mut Repo<S>,
        msg: Message,
    ) -> Result<ClientEvent> {
        self.handle_checked(repo, msg, true)
    }

    fn handle_checked<S: Storage>(
        &mut self,
        repo: &mut Repo<S>,
        msg: Message,
        vouched: bool,
    ) -> Result<ClientEvent> {
        match msg {
            Message::Challenge {
                nonce,
                server_time_ms,
            } => {
                if self.welcomed || self.hello.is_some() {
                    return Err(protocol(
                        ProtocolErrorKind::Unexpected,
                        "a second challenge",
                    ));
                }
                self.hello = Some(self.answer(repo, nonce));
                Ok(ClientEvent::Challenged { server_time_ms })
            }
            Message::Welcome {
                repo: name,
                head,
                rights,
            } => self.on_welcome(name, head, rights),
            Message::Commits {
                from,
                to,
                commits,
                seals,
            } => self.on_commits(repo, from, to, &commits, &seals, vouched),
            Message::Ack { ids } => {
                let count = ids.len();
                self.known.extend(ids);
                self.advance(repo);
                Ok(ClientEvent::Acked { count })
            }
            Message::Error {
                code,
                name,
                kind,
                message,
            } => {
                // A refused push (after the Welcome); a PermissionError before it refuses the
                // session (it may not read), which pushing has nothing to do with.
                self.refused |= code == ErrorCode::Permission && self.welcomed;
                Ok(ClientEvent::ServerError {
                    code,
                    name,
                    kind,
                    message,
                })
            }
            Message::Push { .. }
            | Message::Hello { .. }
            | Message::AttachOffer { .. }
            | Message::AttachGet { .. } => Err(protocol(
                ProtocolErrorKind::Unexpected,
                "a client-to-server message sent by the server",
            )),
            // Attachment bytes are the host's to store: it routes these messages itself
            // (docs/design.md §12.2, *Attachment bytes*).
            Message::AttachWant { .. }
            | Message::AttachChunk { .. }
            | Message::AttachError { .. } => Err(protocol(
                ProtocolErrorKind::Unexpected,
                "an attachment message given to the sync client (the host handles them)",
            )),
        }
    }

    /// The server's `Welcome` with its head: a head below our cursor means the server lost
    /// data or is another server, so start over.
    fn on_welcome(&mut self, name: String, cursor: u64, rights: Rights) -> Result<ClientEvent> {
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
        Ok(ClientEvent::Welcome {
            head: cursor,
            rights,
        })
    }

    /// Sequences `from + 1 ..= to`: they must follow the cursor; applied through
    /// `Repo::receive`.
    fn on_commits<S: Storage>(
        &mut self,
        repo: &mut Repo<S>,
        from: u64,
        to: u64,
        commits: &[(CommitId, Vec<u8>)],
        seals: &[Vec<u8>],
        vouched: bool,
    ) -> Result<ClientEvent> {
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
        let report = if vouched {
            repo.receive_vouched(commits, seals)?
        } else {
            repo.receive(commits, seals)?
        };
        for (id, _) in commits {
            self.known.insert(*id);
        }
        // A grant may have arrived: try pushing again.
        self.refused &= !repo.access().can_write(&repo.author());
        self.cursor = to;
        self.advance(repo);
        Ok(ClientEvent::Received {
            applied: report.applied,
            duplicates: report.duplicates,
            cursor: to,
        })
    }

    /// The next `Push` to send, if there are commits the server lacks: seals local commits
    /// first (a signed commit must travel with its seal), then takes up to about
    /// `BATCH_BYTES` (1 MiB) of commits in commit-table order. Call until it returns `None`.
    /// Before the `Welcome`, it returns the `Hello` answering the challenge, once.
    pub fn outgoing<S: Storage>(&mut self, repo: &mut Repo<S>) -> Result<Option<Message>> {
        if let Some(hello) = self.hello.take() {
            return Ok(Some(hello));
        }
        if !self.welcomed || self.refused || self.sent_upto >= repo.commit_count() {
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
            let id = repo.graph().commits[p].id;
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
