//! A peer's side of sync (docs/design.md §12.2): the cursor of what it has received, and what
//! it still has to push (`push_from`, `sent_upto`, the commits the server already knows).

use super::seals::SealIndex;
use super::wire::{check_repo_name, protocol, ErrorCode, Message, BATCH_BYTES};
use crate::commit::CommitId;
use crate::error::{ProtocolErrorKind, Result};
use crate::repo::Repo;
use crate::store::Storage;
use std::collections::HashSet;

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
        match msg {
            Message::Hello { repo: name, cursor } => self.on_hello(name, cursor),
            Message::Commits {
                from,
                to,
                commits,
                seals,
            } => self.on_commits(repo, from, to, &commits, &seals),
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

    /// The server's `Hello` with its head: a head below our cursor means the server lost
    /// data or is another server, so start over.
    fn on_hello(&mut self, name: String, cursor: u64) -> Result<ClientEvent> {
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

    /// Sequences `from + 1 ..= to`: they must follow the cursor; applied through
    /// `Repo::receive`.
    fn on_commits<S: Storage>(
        &mut self,
        repo: &mut Repo<S>,
        from: u64,
        to: u64,
        commits: &[(CommitId, Vec<u8>)],
        seals: &[Vec<u8>],
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
        let report = repo.receive(commits, seals)?;
        for (id, _) in commits {
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

    /// The next `Push` to send, if there are commits the server lacks: seals local commits
    /// first (a signed commit must travel with its seal), then takes up to about
    /// `BATCH_BYTES` (1 MiB) of commits in commit-table order. Call until it returns `None`.
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
