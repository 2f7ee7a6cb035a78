//! A repository: the unit of storage, sync and ownership. One log, one commit graph, the
//! materialized state, query indexes and live queries.

use crate::commit::{Change, Commit, CommitId, FieldOp, Op, Seal, MAX_COMMIT_BYTES, MAX_SEAL_IDS};
use crate::commit::{Identity, PublicKey};
use crate::error::{Error, Result, SignatureErrorKind};
use crate::graph::Graph;
use crate::key::split_key;
use crate::query::QueryEngine;
use crate::schema::Schema;
use crate::state::{NoSink, State};
use crate::store::log::{Log, Recovery, FRAME_COMMIT, FRAME_SEAL};
use crate::store::snapshot;
use crate::store::Storage;
use crate::txn::{FieldWrite, Txn, Write};
use crate::value::{Map, Value, MAX_ITEM_BYTES};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// When a write is durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// The call returns after the commit is flushed to storage.
    Flush,
    /// The call returns once the commit is applied in memory; the host flushes within a
    /// bounded delay (or on `flush()`). A crash loses at most the unflushed tail.
    Relaxed,
}

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
pub const ANONYMOUS: PublicKey = PublicKey([0u8; crate::commit::PUBLIC_KEY_LEN]);

/// How a repository is opened.
pub struct RepoOptions {
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
}

impl RepoOptions {
    /// Signed mode when an identity is given, trusted mode otherwise.
    pub fn new(identity: Option<Identity>, clock: Clock) -> RepoOptions {
        RepoOptions {
            trusted: identity.is_none(),
            accept_trusted: identity.is_none(),
            identity,
            recovery: Recovery::Strict,
            max_clock_skew_ms: 60 * 60 * 1000,
            clock,
        }
    }
}

/// One entry of an item's history.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryEntry {
    pub commit: CommitId,
    pub author: PublicKey,
    pub hlc: u64,
    /// Wall-clock milliseconds (the physical part of the HLC).
    pub time_ms: u64,
    pub trusted: bool,
    pub op: Op,
}

/// What `verify()` proved.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct VerifyReport {
    pub commits: usize,
    pub seals: usize,
    pub signatures_verified: usize,
    pub trusted_commits: usize,
    /// Local commits not yet sealed (they will be; not an error).
    pub unsealed: usize,
    pub items: usize,
    pub log_bytes: u64,
    /// A snapshot file was checked against a replay of the log prefix it covers.
    pub snapshot_checked: bool,
}

/// Commits (id, bytes) in log order and seals, as exported for another peer.
pub type Export = (Vec<(CommitId, Vec<u8>)>, Vec<Vec<u8>>);

/// What `receive()` did.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReceiveReport {
    pub applied: usize,
    pub duplicates: usize,
    /// Waiting for missing parents.
    pub pending: usize,
}

/// What `open` found.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct OpenReport {
    pub from_snapshot: bool,
    pub replayed_frames: usize,
    pub truncated_tail: Option<(u64, u64)>,
    pub repaired: Vec<(u64, u64)>,
}

/// Where a waiting commit's bytes are.
enum Stored {
    /// Already in the log at this offset (replay, or a repaired log with a hole).
    InLog(u64),
    /// Received from a peer, not stored yet.
    Bytes(Vec<u8>),
}

struct Pending {
    commit: Commit,
    stored: Stored,
    missing: usize,
}

/// Commits whose parents have not arrived yet, indexed by what they wait for.
#[derive(Default)]
struct Waiting {
    pending: HashMap<CommitId, Pending>,
    by_parent: HashMap<CommitId, Vec<CommitId>>,
}

impl Waiting {
    fn contains(&self, id: &CommitId) -> bool {
        self.pending.contains_key(id)
    }

    fn defer(&mut self, commit: Commit, id: CommitId, stored: Stored, missing: &[CommitId]) {
        for p in missing {
            self.by_parent.entry(*p).or_default().push(id);
        }
        self.pending.insert(
            id,
            Pending {
                commit,
                stored,
                missing: missing.len(),
            },
        );
    }

    /// The commits that become ready once `arrived` is applied; the caller applies each and
    /// calls this again for it.
    fn ready(&mut self, arrived: &CommitId) -> Vec<(Commit, CommitId, Stored)> {
        let mut out = Vec::new();
        for child in self.by_parent.remove(arrived).unwrap_or_default() {
            let p = self
                .pending
                .get_mut(&child)
                .expect("waiting child is pending");
            p.missing -= 1;
            if p.missing == 0 {
                let p = self.pending.remove(&child).unwrap();
                out.push((p.commit, child, p.stored));
            }
        }
        out
    }
}

/// Apply one log frame during replay (open, verify). Commits whose parents come later in the
/// log (possible after a repair, or when a received parent completed a hole) wait for them.
fn replay_frame(
    core: &mut Graph,
    wait: &mut Waiting,
    kind: u8,
    offset: u64,
    payload: &[u8],
    verify_sigs: bool,
) -> Result<()> {
    match kind {
        FRAME_COMMIT => {
            let (commit, id) = Commit::decode(payload).map_err(|e| at(offset, e))?;
            if core.by_id.contains_key(&id) || wait.contains(&id) {
                return Err(corrupt(offset, "duplicate commit in log"));
            }
            let missing: Vec<CommitId> = commit
                .parents
                .iter()
                .filter(|p| !core.by_id.contains_key(p))
                .copied()
                .collect();
            if !missing.is_empty() {
                wait.defer(commit, id, Stored::InLog(offset), &missing);
                return Ok(());
            }
            core.add_commit(commit, id, offset, &mut NoSink);
            let mut stack = vec![id];
            while let Some(a) = stack.pop() {
                for (c, cid, stored) in wait.ready(&a) {
                    let Stored::InLog(o) = stored else {
                        unreachable!("replay defers only logged commits")
                    };
                    core.add_commit(c, cid, o, &mut NoSink);
                    stack.push(cid);
                }
            }
        }
        FRAME_SEAL => {
            let seal = Seal::decode(payload).map_err(|e| at(offset, e))?;
            if verify_sigs {
                seal.verify().map_err(|e| at(offset, e))?;
            }
            core.add_seal(&seal, offset);
        }
        k => return Err(corrupt(offset, &format!("unknown frame kind {k}"))),
    }
    Ok(())
}

fn corrupt(offset: u64, reason: &str) -> Error {
    Error::Corrupt {
        offset,
        next_valid: None,
        reason: reason.to_string(),
    }
}

fn at(offset: u64, e: Error) -> Error {
    match e {
        Error::Decode { what, reason } => corrupt(offset, &format!("{what}: {reason}")),
        e => e,
    }
}

/// A repository over a storage backend `S` (log file plus optional snapshot file).
pub struct Repo<S: Storage> {
    log: Log<S>,
    snap: Option<S>,
    core: Graph,
    query: QueryEngine,
    schemas: BTreeMap<String, Schema>,
    wait: Waiting,
    unsealed: Vec<CommitId>,
    hlc: u64,
    author: PublicKey,
    opts: RepoOptions,
    snapshot_log_len: u64,
    open_report: OpenReport,
}

impl<S: Storage> Repo<S> {
    /// Open (or create) a repository on `log`, using `snapshot` (if valid) to skip replaying
    /// the history it covers. A snapshot that is missing, damaged or does not match the log is
    /// ignored: it is derived data.
    pub fn open(log: S, snapshot: Option<S>, opts: RepoOptions) -> Result<Repo<S>> {
        if opts.identity.is_none() && !opts.trusted {
            return Err(Error::sig(
                SignatureErrorKind::Missing,
                "signed mode needs an identity (or open in trusted mode)",
            ));
        }
        // A snapshot is used only if it decodes, fits the log, and its anchor frame matches;
        // it is checked before the log is scanned from its end offset.
        let log_len = log.len()?;
        let snap_data = snapshot
            .as_ref()
            .and_then(|s| snapshot::read(s).ok())
            .filter(|d| d.log_len <= log_len && snapshot::anchor_matches(d, &log));
        let (log, scan) = Log::open(log, snap_data.as_ref().map(|d| d.log_len), opts.recovery)?;
        let author = opts.identity.as_ref().map_or(ANONYMOUS, Identity::public);
        let mut repo = Repo {
            log,
            snap: snapshot,
            core: Graph::default(),
            query: QueryEngine::new(),
            schemas: BTreeMap::new(),
            wait: Waiting::default(),
            unsealed: Vec::new(),
            hlc: 0,
            author,
            opts,
            snapshot_log_len: 0,
            open_report: OpenReport::default(),
        };
        if let Some(d) = snap_data {
            repo.snapshot_log_len = d.log_len;
            repo.core = d.graph;
            repo.open_report.from_snapshot = true;
        }
        let mut n = 0;
        for f in scan.frames() {
            replay_frame(
                &mut repo.core,
                &mut repo.wait,
                f.kind,
                f.offset,
                f.payload,
                false,
            )?;
            n += 1;
        }
        repo.open_report.replayed_frames = n;
        repo.open_report.truncated_tail = scan.truncated_tail();
        repo.open_report.repaired = scan.repaired().to_vec();
        repo.hlc = repo.core.commits.iter().map(|c| c.hlc).max().unwrap_or(0);
        // Own signed commits that a crash left unsealed get sealed at the next seal().
        if let Some(&me) = repo.core.author_idx.get(&repo.author) {
            repo.unsealed = repo
                .core
                .commits
                .iter()
                .filter(|c| c.author == me && !c.trusted && !c.sealed)
                .map(|c| c.id)
                .collect();
        }
        Ok(repo)
    }

    /// What open found (snapshot use, frames replayed, tail truncated, ranges repaired).
    pub fn open_report(&self) -> &OpenReport {
        &self.open_report
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

    /// Declare (or replace) a collection's schema and its indexes (built on first use, see
    /// [`QueryEngine::set_indexes`]).
    pub fn define_schema(&mut self, collection: &str, schema: Schema) -> Result<()> {
        crate::key::validate_collection(collection)?;
        self.query
            .set_indexes(collection, &schema.indexes, &self.core.state);
        self.schemas.insert(collection.to_string(), schema);
        Ok(())
    }

    pub fn schema(&self, collection: &str) -> Option<&Schema> {
        self.schemas.get(collection)
    }

    // ----- reads -------------------------------------------------------------------------

    /// The visible value at `key`.
    pub fn get(&self, key: &str) -> Result<Option<&Map>> {
        let (c, i) = split_key(key)?;
        Ok(self.core.state.get(c, i))
    }

    pub fn state(&self) -> &State {
        &self.core.state
    }

    pub fn core(&self) -> &Graph {
        &self.core
    }

    pub fn query_engine(&self) -> &QueryEngine {
        &self.query
    }

    pub fn query_engine_mut(&mut self) -> (&mut QueryEngine, &State) {
        (&mut self.query, &self.core.state)
    }

    /// SHA-256 of the visible state; equal on replicas holding the same commits.
    pub fn state_hash(&self) -> [u8; 32] {
        self.core.state.hash()
    }

    pub fn heads(&self) -> Vec<CommitId> {
        self.core.heads.iter().copied().collect()
    }

    pub fn commit_count(&self) -> usize {
        self.core.commits.len()
    }

    pub fn has_commit(&self, id: &CommitId) -> bool {
        self.core.by_id.contains_key(id)
    }

    /// The commits that changed `key`, oldest first.
    pub fn history(&self, key: &str) -> Result<Vec<HistoryEntry>> {
        let (c, i) = split_key(key)?;
        let Some(item) = self.core.state.item(c, i) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::with_capacity(item.history.len());
        for &idx in &item.history {
            let info = &self.core.commits[idx as usize];
            let (_, payload) = self.log.read_frame(info.offset)?;
            let (commit, id) = Commit::decode(&payload)?;
            let op = commit
                .changes
                .into_iter()
                .find(|ch| ch.collection == c && ch.id == i)
                .map(|ch| ch.op)
                .ok_or_else(|| Error::VerifyFailed {
                    reason: format!("commit {id:?} does not touch {key}"),
                })?;
            out.push(HistoryEntry {
                commit: id,
                author: commit.author,
                hlc: commit.hlc,
                time_ms: commit.hlc >> 16,
                trusted: commit.trusted,
                op,
            });
        }
        Ok(out)
    }

    // ----- writes ------------------------------------------------------------------------

    fn next_hlc(&mut self) -> u64 {
        let now = (self.opts.clock)() << 16;
        self.hlc = now.max(self.hlc + 1);
        self.hlc
    }

    /// Validate and commit a transaction atomically (buffered; see [`Repo::flush`]).
    /// Returns `None` for a transaction with nothing to do.
    pub fn commit(&mut self, txn: Txn) -> Result<Option<CommitId>> {
        let changes = self.build_changes(txn)?;
        if changes.is_empty() {
            return Ok(None);
        }
        let commit = Commit {
            trusted: self.opts.trusted,
            author: self.author,
            hlc: self.next_hlc(),
            // Heads beyond the decoder's limit stay heads and are merged by later commits.
            parents: self
                .core
                .heads
                .iter()
                .take(crate::commit::MAX_PARENTS)
                .copied()
                .collect(),
            changes,
        };
        let bytes = commit.encode();
        if bytes.len() > MAX_COMMIT_BYTES {
            return Err(Error::TooLarge {
                what: "transaction".into(),
                size: bytes.len() as u64,
                limit: MAX_COMMIT_BYTES as u64,
            });
        }
        let id = CommitId::of(&bytes);
        let offset = self.log.append(FRAME_COMMIT, &bytes)?;
        let trusted = commit.trusted;
        self.core.add_commit(commit, id, offset, &mut self.query);
        if !trusted {
            self.unsealed.push(id);
        }
        Ok(Some(id))
    }

    /// Commit with the given durability.
    pub fn commit_with(&mut self, txn: Txn, durability: Durability) -> Result<Option<CommitId>> {
        let id = self.commit(txn)?;
        if durability == Durability::Flush {
            self.flush()?;
        }
        Ok(id)
    }

    fn build_changes(&self, txn: Txn) -> Result<Vec<Change>> {
        let mut changes = Vec::with_capacity(txn.len());
        for ((coll, id), w) in txn.into_writes() {
            let schema = self.schemas.get(&coll);
            let op = match w {
                Write::Put(mut m) => {
                    if let Some(s) = schema {
                        s.check_item(&coll, &mut m)?;
                    }
                    check_size(&coll, &id, Value::map_encoded_len(&m))?;
                    Op::Put(m)
                }
                Write::Delete => Op::Delete,
                Write::Patch { fields, must_exist } => {
                    let item = self.core.state.item(&coll, &id);
                    let live = item.and_then(|i| i.visible());
                    if must_exist && live.is_none() {
                        return Err(Error::NotFound {
                            key: format!("{coll}/{id}"),
                        });
                    }
                    // A patch that creates the item must still give it every required field.
                    if let (None, Some(s)) = (live, schema) {
                        for (name, spec) in &s.fields {
                            let assigned = matches!(fields.get(name), Some(FieldWrite::Assign(_)));
                            let set_created = spec.ty == crate::schema::FieldType::Set
                                && matches!(fields.get(name), Some(FieldWrite::SetEdit { .. }));
                            if spec.required && !assigned && !set_created {
                                return Err(Error::Schema {
                                    collection: coll.clone(),
                                    field: name.clone(),
                                    rule: "is required (the write creates the item)".into(),
                                });
                            }
                        }
                    }
                    let meta = item.map(|i| i.expanded_meta());
                    let mut ops = BTreeMap::new();
                    let mut size = 0;
                    for (name, fw) in fields {
                        let fop = match fw {
                            FieldWrite::Assign(v) => {
                                if let Some(s) = schema {
                                    s.check_assign(&coll, &name, Some(&v))?;
                                }
                                size += v.encoded_len();
                                FieldOp::Assign(v)
                            }
                            FieldWrite::Unset => {
                                if let Some(s) = schema {
                                    s.check_assign(&coll, &name, None)?;
                                }
                                FieldOp::Unset
                            }
                            FieldWrite::SetEdit { add, remove } => {
                                if let Some(s) = schema {
                                    s.check_set_edit(&coll, &name)?;
                                }
                                if let Some(v) = live.and_then(|m| m.get(&name)) {
                                    if !matches!(v, Value::Set(_)) {
                                        return Err(Error::invalid_value(
                                            &format!("{coll}/{id}.{name}"),
                                            format!("is a {}, not a set", v.type_name()),
                                        ));
                                    }
                                }
                                let dots = meta
                                    .as_ref()
                                    .and_then(|m| m.get(name.as_str()))
                                    .and_then(|fm| fm.dots.as_ref());
                                let remove: BTreeMap<String, Vec<_>> = remove
                                    .into_iter()
                                    .filter_map(|e| {
                                        let d = dots?.get(e.as_str())?.clone();
                                        Some((e, d))
                                    })
                                    .collect();
                                size += add.iter().map(|e| e.len() + 5).sum::<usize>();
                                if add.is_empty() && remove.is_empty() {
                                    continue;
                                }
                                FieldOp::SetEdit { add, remove }
                            }
                        };
                        ops.insert(name, fop);
                    }
                    check_size(&coll, &id, size)?;
                    if ops.is_empty() {
                        continue;
                    }
                    Op::Patch(ops)
                }
            };
            changes.push(Change {
                collection: coll,
                id,
                op,
            });
        }
        Ok(changes)
    }

    /// Sign every local commit not yet covered by a seal, with one signature per batch
    /// (up to 65,536 commits). Call it off the write's critical path; nothing leaves the
    /// device unsealed. Returns the seals made.
    pub fn seal(&mut self) -> Result<Vec<Seal>> {
        if self.unsealed.is_empty() {
            return Ok(Vec::new());
        }
        let Some(identity) = self.opts.identity.clone() else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for chunk in self.unsealed.chunks(MAX_SEAL_IDS) {
            let seal = Seal::create(&identity, chunk);
            let offset = self.log.append(FRAME_SEAL, &seal.encode())?;
            self.core.add_seal(&seal, offset);
            out.push(seal);
        }
        self.unsealed.clear();
        Ok(out)
    }

    /// Local commits waiting for a seal.
    pub fn unsealed(&self) -> usize {
        self.unsealed.len()
    }

    /// Write buffered frames with one write call and flush them to storage.
    pub fn flush(&mut self) -> Result<()> {
        self.log.flush()
    }

    /// Whether buffered frames wait to be written.
    pub fn has_unflushed(&self) -> bool {
        self.log.has_pending() || self.log.written_len() != self.log.durable_len()
    }

    /// Bytes of log not covered by the snapshot.
    pub fn tail_bytes(&self) -> u64 {
        self.log.len() - self.snapshot_log_len.max(crate::store::log::HEADER_LEN)
    }

    pub fn log_len(&self) -> u64 {
        self.log.len()
    }

    /// Flush, then write a snapshot of the whole state (if a snapshot file was given).
    pub fn write_snapshot(&mut self) -> Result<bool> {
        if self.snap.is_none() {
            return Ok(false);
        }
        self.flush()?;
        let log_len = self.log.len();
        let bytes = snapshot::encode_for(&self.core, log_len, self.log.storage())?;
        let s = self.snap.as_mut().unwrap();
        s.truncate(0)?;
        s.write_at(0, &bytes)?;
        s.flush()?;
        self.snapshot_log_len = log_len;
        Ok(true)
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

    /// Flush and hand back the storage backends.
    pub fn close(mut self) -> Result<(S, Option<S>)> {
        self.flush()?;
        Ok((self.log.into_storage(), self.snap))
    }

    // ----- sync --------------------------------------------------------------------------

    /// The stored bytes of a commit.
    pub fn commit_bytes(&self, id: &CommitId) -> Result<Vec<u8>> {
        let idx = *self
            .core
            .by_id
            .get(id)
            .ok_or_else(|| Error::NotFound { key: id.to_hex() })?;
        Ok(self
            .log
            .read_frame(self.core.commits[idx as usize].offset)?
            .1)
    }

    /// The stored bytes of the commit at position `i` of the commit table (the order in which
    /// commits were applied: parents before children). The sync layer numbers commits by it.
    pub fn commit_bytes_at(&self, i: usize) -> Result<Vec<u8>> {
        let c = self.core.commits.get(i).ok_or_else(|| Error::NotFound {
            key: format!("commit #{i}"),
        })?;
        Ok(self.log.read_frame(c.offset)?.1)
    }

    /// Number of stored seals.
    pub fn seal_count(&self) -> usize {
        self.core.seal_offsets.len()
    }

    /// The stored bytes of the `i`-th stored seal (storage order).
    pub fn seal_bytes(&self, i: usize) -> Result<Vec<u8>> {
        let &o = self
            .core
            .seal_offsets
            .get(i)
            .ok_or_else(|| Error::NotFound {
                key: format!("seal #{i}"),
            })?;
        Ok(self.log.read_frame(o)?.1)
    }

    /// Every commit (log order: parents before children) with its id, and every seal, as
    /// stored.
    pub fn export(&self) -> Result<Export> {
        let mut commits = Vec::with_capacity(self.core.commits.len());
        for c in &self.core.commits {
            commits.push((c.id, self.log.read_frame(c.offset)?.1));
        }
        let mut seals = Vec::with_capacity(self.core.seal_offsets.len());
        for &o in &self.core.seal_offsets {
            seals.push(self.log.read_frame(o)?.1);
        }
        Ok((commits, seals))
    }

    /// Accept commits (each with the id the sender claims for it) and seals from another peer.
    /// Everything is verified before anything is applied: a batch with one bad commit is
    /// refused whole. Commits whose parents are missing wait in memory until they arrive.
    pub fn receive(
        &mut self,
        commits: &[(CommitId, Vec<u8>)],
        seals: &[Vec<u8>],
    ) -> Result<ReceiveReport> {
        let mut decoded_seals = Vec::with_capacity(seals.len());
        let mut cover: HashMap<CommitId, Vec<PublicKey>> = HashMap::new();
        for b in seals {
            let seal = Seal::decode(b)?;
            // A seal that proves nothing new (every id it covers is already sealed here by
            // the same author, or by an earlier seal in this batch) is neither verified nor
            // stored again: re-sent seals cost nothing and never pile up in the log.
            let new_coverage = seal.ids.iter().any(|id| {
                !cover.get(id).is_some_and(|a| a.contains(&seal.author))
                    && !self.core.is_sealed_by(id, &seal.author)
            });
            if !new_coverage {
                continue;
            }
            seal.verify()?;
            for id in &seal.ids {
                cover.entry(*id).or_default().push(seal.author);
            }
            decoded_seals.push((seal, b));
        }
        let now = (self.opts.clock)();
        let mut report = ReceiveReport::default();
        let mut accepted: Vec<(Commit, CommitId, &Vec<u8>)> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (claimed, b) in commits {
            let (commit, id) = Commit::decode(b)?;
            if id != *claimed {
                return Err(Error::sig(
                    SignatureErrorKind::Tampered,
                    format!(
                        "commit bytes hash to {} but were sent as {}",
                        id.to_hex(),
                        claimed.to_hex()
                    ),
                ));
            }
            if self.core.by_id.contains_key(&id) || self.wait.contains(&id) || !seen.insert(id) {
                report.duplicates += 1;
                continue;
            }
            if commit.trusted {
                if !self.opts.accept_trusted {
                    return Err(Error::sig(
                        SignatureErrorKind::Unsigned,
                        format!("commit {} is unsigned (trusted mode) and this peer requires signatures", id.to_hex()),
                    ));
                }
            } else {
                let by = |v: Option<&Vec<PublicKey>>| v.is_some_and(|a| a.contains(&commit.author));
                if !by(cover.get(&id)) && !by(self.core.seal_cover.get(&id)) {
                    let other = cover.contains_key(&id) || self.core.seal_cover.contains_key(&id);
                    return Err(Error::sig(
                        if other {
                            SignatureErrorKind::WrongKey
                        } else {
                            SignatureErrorKind::Missing
                        },
                        if other {
                            format!(
                                "commit {} is sealed only by keys other than its author",
                                id.to_hex()
                            )
                        } else {
                            format!(
                                "commit {} arrived without a seal from its author",
                                id.to_hex()
                            )
                        },
                    ));
                }
            }
            check_received(&commit)?;
            let ms = commit.hlc >> 16;
            if ms > now.saturating_add(self.opts.max_clock_skew_ms) {
                return Err(Error::ClockSkew {
                    hlc_ms: ms,
                    now_ms: now,
                });
            }
            accepted.push((commit, id, b));
        }
        // All checks passed: store seals first (a torn tail then drops commits, not seals).
        for (seal, b) in &decoded_seals {
            let offset = self.log.append(FRAME_SEAL, b)?;
            self.core.add_seal(seal, offset);
        }
        for (commit, id, b) in accepted {
            let missing: Vec<CommitId> = commit
                .parents
                .iter()
                .filter(|p| !self.core.by_id.contains_key(p))
                .copied()
                .collect();
            if missing.is_empty() {
                report.applied += self.add_ready(commit, id, Stored::Bytes(b.clone()))?;
            } else {
                self.wait
                    .defer(commit, id, Stored::Bytes(b.clone()), &missing);
            }
        }
        report.pending = self.wait.pending.len();
        Ok(report)
    }

    /// Apply a commit whose parents are present, then every waiting commit it completes.
    /// Returns how many commits were applied.
    fn add_ready(&mut self, commit: Commit, id: CommitId, stored: Stored) -> Result<usize> {
        let mut n = 0;
        let mut stack = vec![(commit, id, stored)];
        while let Some((commit, id, stored)) = stack.pop() {
            let offset = match stored {
                Stored::InLog(o) => o,
                Stored::Bytes(b) => self.log.append(FRAME_COMMIT, &b)?,
            };
            self.hlc = self.hlc.max(commit.hlc);
            self.core.add_commit(commit, id, offset, &mut self.query);
            n += 1;
            stack.extend(self.wait.ready(&id));
        }
        Ok(n)
    }

    /// Commits received (or found in a repaired log) whose parents have not arrived.
    pub fn pending(&self) -> usize {
        self.wait.pending.len()
    }

    // ----- verification ------------------------------------------------------------------

    /// Re-prove the whole repository: every frame checksum, every commit hash, every seal
    /// signature, that every signed commit is sealed by its author, that the snapshot equals a
    /// replay of the log prefix it covers, that the live state equals a full replay, and that
    /// every index matches the state.
    pub fn verify(&mut self) -> Result<VerifyReport> {
        let scan = self.log.scan_all()?;
        let mut shadow = Graph::default();
        let mut shadow_wait = Waiting::default();
        let mut report = VerifyReport {
            log_bytes: self.log.len(),
            ..VerifyReport::default()
        };
        let snap = match &self.snap {
            Some(s) if s.len()? > 0 => match snapshot::read(s) {
                Ok(d) => Some((d.log_len, snapshot::read_bytes(s)?)),
                Err(_) => None,
            },
            _ => None,
        };
        let mut snap_done = false;
        let log_storage = self.log.storage();
        let check_snap = |shadow: &Graph, done: &mut bool, pos: u64| -> Result<()> {
            if let Some((len, bytes)) = &snap {
                if !*done && pos >= *len {
                    *done = true;
                    if snapshot::encode_for(shadow, *len, log_storage)? != *bytes {
                        return Err(Error::VerifyFailed {
                            reason: format!(
                                "the snapshot differs from a replay of the first {len} log bytes"
                            ),
                        });
                    }
                }
            }
            Ok(())
        };
        for f in scan.frames() {
            check_snap(&shadow, &mut snap_done, f.offset)?;
            if f.kind == FRAME_SEAL {
                report.seals += 1;
                report.signatures_verified += 1;
            }
            replay_frame(
                &mut shadow,
                &mut shadow_wait,
                f.kind,
                f.offset,
                f.payload,
                true,
            )?;
        }
        check_snap(&shadow, &mut snap_done, u64::MAX)?;
        report.snapshot_checked = snap_done && snap.is_some();
        for c in &shadow.commits {
            if c.trusted {
                report.trusted_commits += 1;
            } else if !c.sealed {
                if shadow.authors[c.author as usize] == self.author && self.unsealed.contains(&c.id)
                {
                    report.unsealed += 1;
                } else {
                    return Err(Error::sig(
                        SignatureErrorKind::Missing,
                        format!("commit {} is not sealed by its author", c.id.to_hex()),
                    ));
                }
            }
        }
        report.commits = shadow.commits.len();
        if shadow.commits != self.core.commits || shadow.heads != self.core.heads {
            return Err(Error::VerifyFailed {
                reason: "the commit table differs from a replay of the log".into(),
            });
        }
        if shadow.state != self.core.state {
            let key = first_difference(&shadow.state, &self.core.state);
            return Err(Error::VerifyFailed {
                reason: format!("the state differs from a full replay of the log (first at {key})"),
            });
        }
        self.query.verify_indexes(&self.core.state)?;
        report.items = self.core.state.len();
        Ok(report)
    }
}

/// The structural and size rules a local write obeys, applied to a received commit, so a peer
/// cannot make this replica store what it could not have written itself: nested field names,
/// nesting depth, finite numbers, and [`MAX_ITEM_BYTES`] per change (measured as for a local
/// write). Schemas are local and not applied (docs/design.md §13).
fn check_received(commit: &Commit) -> Result<()> {
    for ch in &commit.changes {
        let path = |field: &str| format!("{}/{}.{field}", ch.collection, ch.id);
        let size = match &ch.op {
            Op::Delete => 0,
            Op::Put(m) => {
                for (name, v) in m {
                    v.validate(&path(name))?;
                }
                Value::map_encoded_len(m)
            }
            Op::Patch(ops) => {
                let mut size = 0;
                for (name, fop) in ops {
                    match fop {
                        FieldOp::Assign(v) => {
                            v.validate(&path(name))?;
                            size += v.encoded_len();
                        }
                        FieldOp::Unset => {}
                        FieldOp::SetEdit { add, .. } => {
                            size += add.iter().map(|e| e.len() + 5).sum::<usize>();
                        }
                    }
                }
                size
            }
        };
        check_size(&ch.collection, &ch.id, size)?;
    }
    Ok(())
}

fn check_size(coll: &str, id: &str, size: usize) -> Result<()> {
    if size > MAX_ITEM_BYTES {
        return Err(Error::TooLarge {
            what: format!("item {coll}/{id}"),
            size: size as u64,
            limit: MAX_ITEM_BYTES as u64,
        });
    }
    Ok(())
}

fn first_difference(a: &State, b: &State) -> String {
    let names: BTreeSet<&String> = a.collections.keys().chain(b.collections.keys()).collect();
    for n in names {
        let (ca, cb) = (a.collections.get(n), b.collections.get(n));
        let ids: BTreeSet<&crate::state::ItemId> = ca
            .into_iter()
            .flat_map(|c| c.items.keys())
            .chain(cb.into_iter().flat_map(|c| c.items.keys()))
            .collect();
        for id in ids {
            if ca.and_then(|c| c.items.get(id)) != cb.and_then(|c| c.items.get(id)) {
                return format!("{n}/{id}");
            }
        }
    }
    "collection counts".into()
}
