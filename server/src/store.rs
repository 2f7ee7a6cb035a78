//! The seam between a repository thread and where its repository is kept: the embedded file
//! store (`files`, one node) or PostgreSQL (`pg`, any number of nodes), which both implement
//! it (`backend` says which one this server uses). Both hand the thread
//! a core `Hub` to read from (sequence numbers, catch-up batches, rights) and store pushes
//! durably before they are acknowledged (docs/design.md §12.4, §12.5).

use crate::config::Config;
use ibexdb::{Admission, Clock, CommitId, Error, ErrorCode, Hub, RepoOptions, Storage};

/// The options of a server's copy of repository `name`, in either store: trusted mode without
/// an identity (the server writes no commits of its own), with the configured bounds, keeping
/// only the access list (commits are checked, not built: docs/design.md §12.4).
pub fn server_options(cfg: &Config, name: &str, clock: Clock) -> RepoOptions {
    let mut opts = RepoOptions::new(name, None, clock);
    opts.trusted = true;
    opts.accept_trusted = cfg.accept_trusted;
    opts.max_pending_bytes = cfg.max_parked_bytes;
    opts.max_unknown_sealed = cfg.max_unknown_sealed;
    opts.access_only = true;
    opts
}

/// What a stored push did.
#[derive(Debug, Default)]
pub struct Stored {
    /// The pushed commits now stored durably (new or already there): the `Ack`.
    pub ack: Vec<CommitId>,
    /// Sequences `relay_from + 1 ..= to` are new to this node's subscribers (commits other
    /// nodes stored just before, then this push's).
    pub relay_from: u64,
    /// Sequences `from + 1 ..= to` were added by this push.
    pub from: u64,
    pub to: u64,
}

/// Commits other nodes stored, now in this node's replica: sequences `from + 1 ..= to`.
#[derive(Debug, Default, PartialEq)]
pub struct Refreshed {
    pub from: u64,
    pub to: u64,
    /// The access list changed (every relay re-checks read rights anyway).
    pub access_changed: bool,
}

/// Why a push (or a refresh) did not store.
#[derive(Debug)]
pub enum StoreError {
    /// Refused by verification: nothing stored, nothing changed; the connection goes on.
    Refused(Error),
    /// The store cannot be reached now; nothing changed here. The pusher is told
    /// `UnavailableError` and disconnected (it re-pushes when it reconnects).
    Unavailable(Error),
    /// The repository's state here may differ from what is stored (a write failed halfway):
    /// every connection is told and the repository is reopened from the store.
    Broken(Error),
}

impl StoreError {
    pub fn error(&self) -> &Error {
        match self {
            StoreError::Refused(e) | StoreError::Unavailable(e) | StoreError::Broken(e) => e,
        }
    }

    /// A core error from a verified push: a storage error means the files may be half
    /// written; any other error is a refusal.
    pub fn from_push(e: Error) -> StoreError {
        match ErrorCode::of(&e) {
            ErrorCode::Storage => StoreError::Broken(e),
            _ => StoreError::Refused(e),
        }
    }
}

/// One open repository in its store, as its thread uses it.
pub trait RepoStore {
    type S: Storage;

    /// The core's hub over this node's copy: heads, rights, catch-up batches.
    fn hub(&self) -> &Hub<Self::S>;

    /// Verify a push for a session (`Admission::Server`) and store it durably; nothing is
    /// acknowledged before it is durable.
    fn push(
        &mut self,
        admission: &Admission,
        commits: &[(CommitId, Vec<u8>)],
        seals: &[Vec<u8>],
    ) -> Result<Stored, StoreError>;

    /// Take in what other nodes stored (nothing to do for the file store): up to `head` if
    /// a notice told it, else up to what the store says now.
    fn refresh(&mut self, head: Option<u64>) -> Result<Refreshed, StoreError>;

    /// Bytes written since the last snapshot.
    fn tail_bytes(&self) -> u64;

    /// Write a snapshot so the repository opens without replaying its history.
    fn write_snapshot(&mut self) -> Result<(), Error>;

    /// Open this repository again from the store (after `StoreError::Broken`).
    fn reopen(&mut self) -> Result<(), Error>;

    /// Closing: a repository that holds no commit (its founding push failed after the files
    /// were made) leaves nothing behind.
    fn remove_if_empty(&mut self) {}
}
