//! A repository: the unit of storage, sync and ownership. One log (and optional snapshot), one
//! commit graph with its materialized state, the query indexes and live queries.
//!
//! This file holds the type, `open` and the durability calls; the rest of `Repo`'s methods are
//! grouped by what they do:
//!
//! | file          | what                                                                  |
//! |---------------|-----------------------------------------------------------------------|
//! | `access.rs`   | the access list: `access`, `grant`, `revoke`, `set_public`; the rule  |
//! |               | for this replica's own commits (§6.4)                                 |
//! | `read.rs`     | `get`, `history`, heads, queries, counts, aggregates, live queries    |
//! | `write.rs`    | `commit` (a `Txn` → one commit), `seal`                               |
//! | `admit.rs`    | the permission rule on receive; a sync server's admission rules      |
//! | `receive.rs`  | `receive`: check seals, check each commit, store (§5.4)               |
//! | `export.rs`   | stored commits and seals for peers                                    |
//! | `verify.rs`   | `verify` (§9)                                                         |
//! | `vouch.rs`    | `verify_vouched`: `verify` with seal signatures checked by the caller |
//! | `replay.rs`   | log frames → commit graph (open, verify)                              |
//! | `causal.rs`   | the causal buffer: commits waiting for their parents                  |

mod access;
mod admit;
mod attachments;
mod causal;
mod encrypted;
mod export;
mod far;
mod indexes;
mod read;
mod receive;
mod replay;
mod schemas;
mod verify;
mod vouch;
mod warm;
mod write;

pub use admit::Admission;
pub use export::Export;
pub use read::HistoryEntry;
pub use receive::ReceiveReport;
pub use schemas::Pending;
pub use verify::VerifyReport;
pub use vouch::{SealCheck, SealChecks};
pub use write::{Durability, SealRequest};

use crate::commit::{CommitId, Identity, PublicKey, PUBLIC_KEY_LEN};
use crate::error::{Error, Result, SignatureErrorKind};
use crate::graph::Graph;
use crate::query::QueryEngine;
use crate::schema::{Schema, SCHEMA_COLLECTION};
use crate::store::log::{Log, Recovery, HEADER_LEN};
use crate::store::snapshot;
use crate::store::Storage;
use causal::Waiting;
use replay::replay_frame;
use std::collections::BTreeMap;

/// Milliseconds since the Unix epoch. The core has no clock of its own (wasm32 has none).
pub type Clock = Box<dyn FnMut() -> u64 + Send>;

/// The system clock (native builds).
#[cfg(not(target_arch = "wasm32"))]
pub fn system_clock() -> Clock {
    Box::new(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0)
    })
}

/// The author recorded on commits made without an identity (trusted mode only).
pub const ANONYMOUS: PublicKey = PublicKey([0u8; PUBLIC_KEY_LEN]);

/// How a repository is opened.
pub struct RepoOptions {
    /// The repository's name (`check_repo_name`). It is bound into every seal: a seal made
    /// for another repository is refused.
    pub name: String,
    /// The key that signs local commits. Required unless `trusted`.
    pub identity: Option<Identity>,
    /// Write unsigned commits (marked trusted in the commit).
    pub trusted: bool,
    /// Accept unsigned (trusted) commits from other peers.
    pub accept_trusted: bool,
    /// What to do with damage in the middle of the log.
    pub recovery: Recovery,
    /// Remote commits whose clock is further ahead of ours than this are refused.
    pub max_clock_skew_ms: u64,
    pub clock: Clock,
    /// At most this many received commits wait for missing parents; a batch that would make
    /// more wait is refused whole with [`Error::Limit`] (a server bounds what peers may park).
    pub max_pending: usize,
    /// At most this many bytes of received commits waiting for missing parents (kept encoded);
    /// a batch that would make more wait is refused whole with [`Error::Limit`]. Bounded by
    /// default ([`DEFAULT_MAX_PENDING_BYTES`]): an honest server sends every commit after its
    /// parents, and a hostile one must not make a replica hold all it sends.
    pub max_pending_bytes: usize,
    /// At most this many ids covered by stored seals whose commits have not arrived (the
    /// graph's seal cover); a batch that would add more is refused whole with [`Error::Limit`].
    pub max_unknown_sealed: usize,
    /// The founder the application expects (issue 23, name squatting): a root whose signed
    /// author is not this key, or that does not make it owner, is refused with
    /// `PermissionError` `wrong-founder` (received or written here), and nothing of the
    /// squatter's history is applied.
    pub expected_founder: Option<PublicKey>,
    /// Keep only the access list (a sync server, docs/design.md §12.4): received and logged
    /// commits are decoded by [`Commit::decode_access_only`], which checks every change and
    /// builds only the `_acl` ones, so the state holds no other item and what a peer sends
    /// costs a bounded multiple of its bytes. Reads of items find nothing.
    ///
    /// [`Commit::decode_access_only`]: crate::Commit::decode_access_only
    pub access_only: bool,
    /// Found the repository end-to-end encrypted (docs/design.md §6.8): its root records the
    /// flag, and every replica then seals its data changes. Ignored for a repository that has
    /// a root already (the flag is fixed at creation).
    pub encrypted: bool,
    /// The source of random bytes for epoch keys and nonces (an encrypted repository's writes
    /// need one): the system's on native builds, the host's on wasm32.
    pub random: Option<crate::crypt::Random>,
}

/// [`RepoOptions::max_pending_bytes`] unless set: 64 MiB (one maximal commit), what a replica
/// may park for parents that have not arrived. A sync server sets its own (`--max-parked-bytes`).
pub const DEFAULT_MAX_PENDING_BYTES: usize = 64 << 20;

impl RepoOptions {
    /// Repository `name`, in signed mode when an identity is given, trusted mode otherwise.
    pub fn new(name: &str, identity: Option<Identity>, clock: Clock) -> RepoOptions {
        RepoOptions {
            name: name.to_string(),
            trusted: identity.is_none(),
            accept_trusted: identity.is_none(),
            identity,
            recovery: Recovery::Strict,
            max_clock_skew_ms: 60 * 60 * 1000,
            clock,
            max_pending: usize::MAX,
            max_pending_bytes: DEFAULT_MAX_PENDING_BYTES,
            max_unknown_sealed: usize::MAX,
            expected_founder: None,
            access_only: false,
            encrypted: false,
            random: system_random(),
        }
    }
}

/// The system's random source (native builds).
#[cfg(not(target_arch = "wasm32"))]
fn system_random() -> Option<crate::crypt::Random> {
    Some(Box::new(|b: &mut [u8]| {
        getrandom::getrandom(b).expect("the system's random source failed")
    }))
}

/// wasm32 has none: the host passes one.
#[cfg(target_arch = "wasm32")]
fn system_random() -> Option<crate::crypt::Random> {
    None
}

/// What `open` found.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OpenReport {
    pub from_snapshot: bool,
    pub replayed_frames: usize,
    pub truncated_tail: Option<(u64, u64)>,
    pub repaired: Vec<(u64, u64)>,
    /// Where open's time went, by the repository's clock (milliseconds, so coarse): reading
    /// and decoding the snapshot's meta section (its items load on first use), and scanning +
    /// replaying the log from its end.
    pub snapshot_ms: u64,
    pub replay_ms: u64,
}

/// A repository over a storage backend `S` (log file plus optional snapshot file).
pub struct Repo<S: Storage> {
    log: Log<S>,
    snap: Option<S>,
    graph: Graph,
    query: QueryEngine,
    schemas: BTreeMap<String, Schema>,
    /// The application's declared schema version and schemas (`declare_app`, §2.4).
    app: Option<schemas::AppSchemas>,
    wait: Waiting,
    unsealed: Vec<CommitId>,
    hlc: u64,
    author: PublicKey,
    opts: RepoOptions,
    snapshot_log_len: u64,
    /// Length of the snapshot file as last written or opened (0: no valid file): where an
    /// appended snapshot starts.
    snapshot_len: u64,
    /// The secondary indexes that file holds, by collection: each valid while its collection
    /// is not `touched` (`repo/indexes.rs`).
    snap_indexes: snapshot::ColdIndexes,
    /// Where that file's commit table is: the segments an appended snapshot keeps.
    snap_table: Vec<snapshot::TableSegment>,
    open_report: OpenReport,
    /// A read of an item with large values: the item with them loaded (`far.rs`).
    far_scratch: crate::value::Map,
}

impl<S: Storage> Repo<S> {
    /// Open (or create) a repository on `log`, using `snapshot` (if valid) to skip replaying
    /// the history it covers. A snapshot that is missing, damaged or does not match the log is
    /// ignored: it is derived data.
    pub fn open(log: S, snapshot: Option<S>, mut opts: RepoOptions) -> Result<Repo<S>> {
        crate::key::check_repo_name(&opts.name)?;
        if opts.identity.is_none() && !opts.trusted {
            return Err(Error::sig(
                SignatureErrorKind::Missing,
                "signed mode needs an identity (or open in trusted mode)",
            ));
        }
        // A snapshot is used only if it decodes, fits the log, and its anchor frame matches;
        // it is checked before the log is scanned from its end offset.
        // Only its meta section is read here: items stay in its blocks until needed.
        let log_len = log.len()?;
        let t0 = (opts.clock)();
        let snap_data = snapshot
            .as_ref()
            .and_then(|s| snapshot::read(s).ok())
            .filter(|d| d.log_len <= log_len && snapshot::anchor_matches(d, &log))
            // A snapshot with items, opened access-only (written before the option): replay.
            .filter(|d| !opts.access_only || d.graph.state.only_access_list());
        let t1 = (opts.clock)();
        let (log, scan) = Log::open(log, snap_data.as_ref().map(|d| d.log_len), opts.recovery)?;
        let author = opts.identity.as_ref().map_or(ANONYMOUS, Identity::public);
        let mut repo = Repo {
            log,
            snap: snapshot,
            graph: Graph::default(),
            query: QueryEngine::new(),
            schemas: BTreeMap::new(),
            app: None,
            wait: Waiting::new(opts.access_only),
            unsealed: Vec::new(),
            hlc: 0,
            author,
            opts,
            snapshot_log_len: 0,
            snapshot_len: 0,
            snap_indexes: snapshot::ColdIndexes::new(),
            snap_table: Vec::new(),
            open_report: OpenReport::default(),
            far_scratch: crate::value::Map::new(),
        };
        if let Some(d) = snap_data {
            repo.snapshot_log_len = d.log_len;
            repo.snapshot_len = repo.snapshot_bytes()?;
            repo.graph = d.graph;
            repo.snap_indexes = d.indexes;
            repo.snap_table = d.table;
            repo.open_report.from_snapshot = true;
        }
        repo.init_keyring()?;
        let mut n = 0;
        let mut snap_failed = false;
        let (g, w, log) = (&mut repo.graph, &mut repo.wait, &repo.log);
        let snap = repo.snap.as_ref();
        scan.each(&|at, b| log.read_at(at, b), &mut |f| {
            // The tail's commits write items that may still be in the snapshot's blocks.
            let mut warm = |g: &mut Graph, c: &crate::commit::Commit| match snap {
                Some(s) if g.state.has_cold() => {
                    snapshot::load_changes(&mut g.state, s, &c.changes)
                        .inspect_err(|_| snap_failed = true)
                }
                _ => Ok(()),
            };
            let r = replay_frame(g, w, f.kind, f.offset, f.payload, None, Some(&mut warm));
            if snap_failed {
                return Ok(false);
            }
            r?;
            n += 1;
            Ok(true)
        })?;
        if snap_failed {
            repo.rebuild_from_log()?;
        }
        repo.open_report.replayed_frames = n;
        let t3 = (repo.opts.clock)();
        repo.open_report.snapshot_ms = t1.saturating_sub(t0);
        repo.open_report.replay_ms = t3.saturating_sub(t1);
        repo.open_report.truncated_tail = scan.truncated_tail();
        repo.open_report.repaired = scan.repaired().to_vec();
        repo.hlc = repo.graph.commits.iter().map(|c| c.hlc).max().unwrap_or(0);
        repo.unsealed = repo.own_unsealed();
        repo.check_stored_founder()?;
        Ok(repo)
    }

    /// Own signed commits that a crash left unsealed: they get sealed at the next `seal()`.
    fn own_unsealed(&self) -> Vec<CommitId> {
        let Some(&me) = self.graph.author_idx.get(&self.author) else {
            return Vec::new();
        };
        self.graph
            .commits
            .iter()
            .filter(|c| c.author == me && !c.trusted && !c.sealed)
            .map(|c| c.id)
            .collect()
    }

    /// What open found (snapshot use, frames replayed, tail truncated, ranges repaired).
    pub fn open_report(&self) -> &OpenReport {
        &self.open_report
    }

    /// The repository's name (bound into its seals).
    pub fn name(&self) -> &str {
        &self.opts.name
    }

    /// This repository's author key.
    pub fn author(&self) -> PublicKey {
        self.author
    }

    pub fn identity(&self) -> Option<&Identity> {
        self.opts.identity.as_ref()
    }

    pub fn is_trusted_mode(&self) -> bool {
        self.opts.trusted
    }

    /// Declare (or replace) a collection's schema and its indexes (built on first use).
    pub fn define_schema(&mut self, collection: &str, schema: Schema) -> Result<()> {
        crate::key::validate_collection(collection)?;
        if collection == crate::access::ACL_COLLECTION || collection == SCHEMA_COLLECTION {
            return Err(Error::InvalidSchema {
                collection: collection.to_string(),
                reason: format!("the {collection} collection is reserved"),
            });
        }
        // Indexes already built (restored from the snapshot while items are still cold) are
        // joined by new ones built from the items: load them first.
        if self.query.indexes_built(collection) {
            self.warm_collection(collection)?;
        }
        // The indexed fields keep their values in memory from now on (docs/design.md §6.6).
        let kept: Vec<&str> = (schema.indexes.iter().chain(&schema.text_indexes))
            .map(|p| p.split('.').next().unwrap_or(p))
            .collect();
        self.unfar(collection, Some(&kept))?;
        self.query
            .set_indexes(collection, &schema.indexes, &self.graph.state);
        self.query
            .set_text_indexes(collection, &schema.text_indexes);
        self.schemas.insert(collection.to_string(), schema);
        Ok(())
    }

    pub fn schema(&self, collection: &str) -> Option<&Schema> {
        self.schemas.get(collection)
    }

    /// Commits received (or found in a repaired log) whose parents have not arrived.
    pub fn pending(&self) -> usize {
        self.wait.len()
    }

    /// The commit graph, for the sync layer (commit-table order, seal offsets).
    pub(crate) fn graph(&self) -> &Graph {
        &self.graph
    }

    /// Test hook: the commit graph.
    #[cfg(feature = "testing")]
    pub fn core(&self) -> &Graph {
        &self.graph
    }

    /// Test hook: the materialized state (call [`Repo::load_all`] first to see cold items).
    #[cfg(feature = "testing")]
    pub fn state(&self) -> &crate::state::State {
        &self.graph.state
    }

    // ----- durability --------------------------------------------------------------------

    /// Write buffered frames with one write call and flush them to storage. Out of room
    /// (`QuotaExceeded`), the snapshot makes room: it only saves replaying the log, so it is
    /// dropped (its items loaded first) and the write tried once more.
    pub fn flush(&mut self) -> Result<()> {
        match self.log.flush() {
            Err(e) if is_quota(&e) && self.drop_snapshot()? => self.log.flush(),
            done => done,
        }
    }

    /// Empty the snapshot file to give its bytes to the log; false when there was none to
    /// drop. Every item is loaded first (none stays in the file's blocks), and the next open
    /// replays the whole log until a new snapshot is written.
    fn drop_snapshot(&mut self) -> Result<bool> {
        if self.snap.as_ref().map_or(Ok(0), |s| s.len())? == 0 {
            return Ok(false);
        }
        self.warm_all()?;
        self.materialize_all_indexes();
        let s = self.snap.as_mut().unwrap();
        s.truncate(0)?;
        s.flush()?;
        self.graph.state.forget_clean();
        self.snapshot_log_len = 0;
        self.snapshot_len = 0;
        self.snap_indexes.clear();
        self.snap_table.clear();
        self.open_report.from_snapshot = false;
        Ok(true)
    }

    /// Whether buffered frames wait to be written.
    pub fn has_unflushed(&self) -> bool {
        self.log.has_pending() || self.log.written_len() != self.log.durable_len()
    }

    /// Bytes of log not covered by the snapshot.
    pub fn tail_bytes(&self) -> u64 {
        self.log.len() - self.snapshot_log_len.max(HEADER_LEN)
    }

    pub fn log_len(&self) -> u64 {
        self.log.len()
    }

    /// Flush, then write a snapshot of the whole state (if a snapshot file was given). While
    /// the blocks it can keep (cold ones, and loaded ones no change touched since) are at
    /// least half of the file, the snapshot is appended to it: the changed items as new blocks
    /// and a new meta section (the kept blocks stay where they are, so the cost follows what
    /// changed, not the repository's size). Otherwise the file is compacted: the kept blocks
    /// move down to its start as they are, and the rest is appended after them; with no block
    /// to keep, every item is loaded and the file rewritten.
    pub fn write_snapshot(&mut self) -> Result<bool> {
        if self.snap.is_none() {
            return Ok(false);
        }
        self.flush()?;
        let blocks = self.graph.state.kept_block_bytes();
        let table: u64 = self.snap_table.iter().map(|t| u64::from(t.len)).sum();
        let cold = blocks + self.kept_index_bytes() + table;
        let mut append = (cold > 0 && self.snapshot_len > 0 && 2 * cold >= self.snapshot_len)
            .then_some(self.snapshot_len);
        let compact = append.is_none() && blocks > 0 && self.snapshot_len > 0;
        if append.is_none() {
            // No index may keep blocks in a file that is compacted or rewritten.
            self.materialize_all_indexes();
        } else {
            self.materialize_touched_indexes();
        }
        if append.is_none() && !compact {
            self.warm_all()?;
            // Rewritten: no loaded block may stay listed in the file.
            self.graph.state.forget_clean();
        }
        let log_len = self.log.len();
        // Until the write completes, the file holds no snapshot of this log.
        self.snapshot_log_len = 0;
        if append.is_none() {
            self.snapshot_len = 0;
        }
        if compact {
            append = Some(self.compact_snapshot()?);
        }
        let kept = &self.snap_indexes;
        let keep_indexes = append.is_some() && !compact;
        let persist = indexes::to_persist(&self.query, &self.graph.state, kept, keep_indexes);
        let s = self.snap.as_mut().unwrap();
        let log = (log_len, self.log.storage());
        let table: &[_] = if keep_indexes { &self.snap_table } else { &[] };
        let (end, indexes, blocks) =
            match snapshot::write_for(&self.graph, log, s, (append, table), &persist) {
                Ok(done) => done,
                Err(e) => {
                    // A snapshot that did not fit takes no room: cut the file back to what it held
                    // before, the previous snapshot when appending (its blocks still hold the cold
                    // items), nothing when rewriting (every item was loaded). Best effort: the
                    // error reported is the write's.
                    let keep = append.unwrap_or(0);
                    if is_quota(&e)
                        && s.truncate(keep).and_then(|()| s.flush()).is_ok()
                        && append.is_none()
                    {
                        self.snap_indexes.clear();
                        self.snap_table.clear();
                    }
                    if append.is_none() {
                        // The file no longer holds the blocks loaded from it.
                        self.graph.state.forget_clean();
                    }
                    return Err(e);
                }
            };
        self.snapshot_len = end;
        self.snapshot_log_len = log_len;
        self.snap_indexes = indexes;
        self.snap_table = blocks.table;
        self.graph
            .state
            .snapshot_written(blocks.blocks, blocks.tables);
        self.graph.state.untouch();
        Ok(true)
    }

    /// Move the kept item blocks down to the start of the snapshot file (`snapshot::compact`)
    /// and point the state at their new places; returns where the rest of the snapshot goes.
    /// If a move fails, no block of the file can be trusted: the state is rebuilt from the log.
    fn compact_snapshot(&mut self) -> Result<u64> {
        let s = self.snap.as_mut().expect("a snapshot file");
        match snapshot::compact(s, &self.graph.state.kept_blocks()) {
            Ok((moved, end)) => {
                self.graph.state.relocate_blocks(&|o| moved[&o]);
                self.snapshot_len = end;
                Ok(end)
            }
            Err(e) => {
                let _ = s.truncate(0).and_then(|()| s.flush());
                self.graph.state.forget_clean();
                self.snap_indexes.clear();
                self.snap_table.clear();
                self.rebuild_from_log()?;
                Err(e)
            }
        }
    }

    /// Size of the snapshot file.
    pub fn snapshot_bytes(&self) -> Result<u64> {
        Ok(match &self.snap {
            Some(s) => s.len()?,
            None => 0,
        })
    }

    pub fn storage(&self) -> &S {
        self.log.storage()
    }

    pub fn snapshot_storage(&self) -> Option<&S> {
        self.snap.as_ref()
    }

    /// Flush and hand back the storage backends. Without room for buffered seal frames (and
    /// only those), close drops them and succeeds: the commits they cover are durable, and
    /// the next open finds them unsealed and seals them again. Unwritten commits are an error.
    pub fn close(mut self) -> Result<(S, Option<S>)> {
        self.flush_for_close()?;
        Ok((self.log.into_storage(), self.snap))
    }

    /// What [`Repo::close`] does before handing the files back: flush, dropping buffered seal
    /// frames (only those) when out of room. For a caller that ends right after (a worker about
    /// to be terminated) and lets go of the repository without freeing its memory.
    pub fn flush_for_close(&mut self) -> Result<()> {
        if let Err(e) = self.flush() {
            if !(is_quota(&e) && self.log.pending_seals_only()) {
                return Err(e);
            }
            self.log.discard_pending();
        }
        Ok(())
    }
}

/// The storage is out of room (the browser's quota, or the repository's byte limit).
fn is_quota(e: &Error) -> bool {
    matches!(e, Error::Storage(se) if se.kind == crate::error::StorageErrorKind::QuotaExceeded)
}
