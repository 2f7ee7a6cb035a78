//! Local writes: a [`Txn`] becomes one commit (docs/design.md §4). Each write is checked
//! against the collection's schema and the size limit, a patch's set removes are given the
//! dots this replica observed, and the commit is stamped with the next HLC (§4.3), appended
//! (buffered) and applied. Sealing (§5.2) signs the local commits later, in batches.

use super::Repo;
use crate::commit::{Change, Commit, CommitId, FieldOp, Op, Seal, Signature, Stamp};
use crate::commit::{MAX_COMMIT_BYTES, MAX_PARENTS, MAX_SEAL_IDS};
use crate::error::{Error, Result, SignatureErrorKind};
use crate::item::{FieldMeta, Item};
use crate::schema::{FieldType, Schema};
use crate::store::log::{FRAME_COMMIT, FRAME_SEAL};
use crate::store::Storage;
use crate::txn::{FieldWrite, Txn, Write};
use crate::value::{Map, Name, Value};
use std::collections::{BTreeMap, BTreeSet};

/// A seal to be signed outside the core: see [`Repo::seal_request`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealRequest {
    /// How many unsealed commits (the oldest) the seal covers.
    pub count: usize,
    /// The bytes to sign.
    pub message: Vec<u8>,
}

/// A seal's ids: sorted, without duplicates (as `Seal::create` makes them).
fn seal_ids(ids: &[CommitId]) -> Vec<CommitId> {
    let mut ids = ids.to_vec();
    ids.sort();
    ids.dedup();
    ids
}

/// When a write is durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// The call returns after the commit is flushed to storage.
    Flush,
    /// The call returns once the commit is applied in memory; the host flushes within a
    /// bounded delay (or on `flush()`). A crash loses at most the unflushed tail.
    Relaxed,
}

/// Buffered log bytes past which a commit flushes the log (docs/design.md §7.2).
pub const FLUSH_BUFFERED: usize = 32 << 20;

impl<S: Storage> Repo<S> {
    /// Validate and commit a transaction atomically (buffered; see [`Repo::flush`]).
    /// Returns `None` for a transaction with nothing to do.
    pub fn commit(&mut self, txn: Txn) -> Result<Option<CommitId>> {
        self.check_identity()?;
        // An application older than the repository's schemas writes nothing (§2.4).
        if let Some(e) = self.read_only() {
            return Err(e);
        }
        for (coll, ids) in &txn.writes {
            // Its persisted indexes take the write (kept with their blocks) instead of being
            // dropped at the next snapshot.
            self.restore_indexes(coll);
            for id in ids.keys() {
                self.warm_key(coll, id)?;
            }
        }
        let mut changes = self.build_changes(txn)?;
        if changes.is_empty() {
            return Ok(None);
        }
        self.founding_claim(&mut changes);
        self.founding_schemas(&mut changes);
        self.founding_keys(&mut changes)?;
        let mut commit = Commit {
            trusted: self.opts.trusted,
            author: self.author,
            hlc: self.next_hlc(),
            // Heads beyond the decoder's limit stay heads and are merged by later commits.
            parents: self.graph.heads.iter().take(MAX_PARENTS).copied().collect(),
            changes,
        };
        // An encrypted repository's commit travels and is stored with its data sealed (§6.8).
        let sealed = self.seal_local(&mut commit)?;
        let wire = sealed.as_ref().unwrap_or(&commit);
        let bytes = wire.encode();
        if bytes.len() > MAX_COMMIT_BYTES {
            return Err(Error::TooLarge {
                what: "transaction".into(),
                size: bytes.len() as u64,
                limit: MAX_COMMIT_BYTES as u64,
            });
        }
        let id = CommitId::of(&bytes);
        self.check_own_commit(wire, &id)?;
        self.check_own_sealed(wire, &id)?;
        let offset = self.log.append(FRAME_COMMIT, &bytes)?;
        // Only once it is logged: the epoch keys it wraps to this device (§6.8).
        self.graph.open_sealed(&mut commit, &id);
        if sealed.is_some() {
            // Judged as it travels, like a received one (§6.8).
            if let Some(k) = self.graph.keyring.as_mut() {
                k.opened = Some(id);
            }
        }
        let trusted = commit.trusted;
        self.graph
            .add_commit(commit, id, offset, None, &mut self.query);
        self.apply_opened()?;
        self.refresh_write_key()?;
        // An encrypted commit's bytes hold no plaintext value: nothing of it is released.
        self.release_far(&bytes, offset)?;
        if !trusted {
            self.unsealed.push(id);
        }
        // A load of many commits before one flush (2 GB of large values) would hold them all in
        // the write buffer: past `FLUSH_BUFFERED` they are made durable now (durability only
        // comes sooner). A failure leaves the buffer as it was; the caller's flush reports it.
        if self.log.buffered() >= FLUSH_BUFFERED {
            let _ = self.flush();
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

    /// The identity's stored public key is its secret's (checked once, before the first write
    /// of a session: `Identity::from_parts`).
    fn check_identity(&self) -> Result<()> {
        match &self.opts.identity {
            Some(id) if !self.opts.trusted => id.check(),
            _ => Ok(()),
        }
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
        identity.check()?;
        let mut out = Vec::new();
        for chunk in self.unsealed.chunks(MAX_SEAL_IDS) {
            let seal = Seal::create(&identity, &self.opts.name, chunk);
            let offset = self.log.append(FRAME_SEAL, &seal.encode())?;
            self.graph.add_seal(&seal, offset);
            out.push(seal);
        }
        self.unsealed.clear();
        Ok(out)
    }

    /// What to sign to seal the unsealed local commits with a signature made outside the core
    /// (a host's platform crypto, e.g. WebCrypto in a browser worker, is several times faster
    /// than the core's P-384 in wasm): the first batch of up to 65,536 unsealed commits, and
    /// the seal message over them (§5.1), to sign with this repository's identity (ECDSA P-384,
    /// SHA-384, `r ‖ s`). `None` when nothing waits for a seal or the repository has no
    /// identity. Pass the signature to [`Repo::seal_with`].
    pub fn seal_request(&self) -> Option<SealRequest> {
        let identity = self.opts.identity.as_ref()?;
        // A damaged stored identity makes no seal (its first write already failed).
        identity.check().ok()?;
        let count = self.unsealed.len().min(MAX_SEAL_IDS);
        if count == 0 {
            return None;
        }
        let ids = seal_ids(&self.unsealed[..count]);
        Some(SealRequest {
            count,
            message: Seal::message(&self.opts.name, &identity.public(), &ids),
        })
    }

    /// Seal the first `count` unsealed commits (a [`SealRequest`]'s) with `signature`, made by
    /// this repository's identity over the request's message. The signature is not checked
    /// here: the caller vouches for it (every receiver and `verify()` check it). Commits made
    /// after the request stay unsealed. Returns the seal (buffered until `flush`).
    pub fn seal_with(&mut self, count: usize, signature: Signature) -> Result<Seal> {
        let Some(identity) = self.opts.identity.as_ref() else {
            return Err(Error::sig(
                SignatureErrorKind::Unsigned,
                "a repository without an identity makes no seals",
            ));
        };
        identity.check()?;
        if count == 0 || count > self.unsealed.len().min(MAX_SEAL_IDS) {
            return Err(Error::InvalidValue {
                path: "count".into(),
                reason: format!(
                    "a seal covers 1..={} unsealed commits, not {count}",
                    self.unsealed.len().min(MAX_SEAL_IDS)
                ),
            });
        }
        let seal = Seal {
            repo: self.opts.name.clone(),
            author: identity.public(),
            ids: seal_ids(&self.unsealed[..count]),
            signature,
        };
        let offset = self.log.append(FRAME_SEAL, &seal.encode())?;
        self.graph.add_seal(&seal, offset);
        self.unsealed.drain(..count);
        Ok(seal)
    }

    /// Local commits waiting for a seal.
    pub fn unsealed(&self) -> usize {
        self.unsealed.len()
    }

    /// `max(now, last hlc + 1)`: local stamps strictly increase and exceed every stamp seen.
    fn next_hlc(&mut self) -> u64 {
        let now = (self.opts.clock)() << 16;
        self.hlc = now.max(self.hlc + 1);
        self.hlc
    }

    /// One change per written key, in key order; writes with nothing left to do are dropped.
    fn build_changes(&self, txn: Txn) -> Result<Vec<Change>> {
        let mut changes = Vec::with_capacity(txn.len());
        for ((coll, id), w) in txn.into_writes() {
            let schema = self.schemas.get(&coll);
            let op = match w {
                Write::Put(m) => Some(put_op(schema, &coll, &id, m)?),
                Write::Delete => Some(Op::Delete),
                Write::Patch { fields, must_exist } => {
                    let item = self.graph.state.item(&coll, &id);
                    let target = Target {
                        coll: &coll,
                        id: &id,
                        schema,
                        live: item.and_then(Item::visible),
                    };
                    let meta = item.map(|it| it.expanded_meta(self.graph.state.stamps()));
                    patch_op(&target, meta, fields, must_exist)?
                }
            };
            if let Some(op) = op {
                changes.push(Change {
                    collection: coll,
                    id,
                    op,
                });
            }
        }
        Ok(changes)
    }
}

/// A put: the schema fills defaults and checks the item, then the size limit. Per-write
/// functions are not inlined into the commit's loop (V8 tiering: src/hashing.rs).
#[inline(never)]
fn put_op(schema: Option<&Schema>, coll: &str, id: &str, mut m: Map) -> Result<Op> {
    if let Some(s) = schema {
        s.check_item(coll, &mut m)?;
    }
    check_size(coll, id, Value::map_encoded_len(&m))?;
    Ok(Op::Put(m))
}

/// The item a patch writes to.
struct Target<'a> {
    coll: &'a str,
    id: &'a str,
    schema: Option<&'a Schema>,
    /// Its visible fields (None: absent or deleted).
    live: Option<&'a Map>,
}

/// A patch: field by field, in name order. None when nothing is left to write (set edits
/// that add nothing and remove nothing unseen).
#[inline(never)]
fn patch_op(
    t: &Target<'_>,
    meta: Option<BTreeMap<Name, FieldMeta>>,
    fields: BTreeMap<String, FieldWrite>,
    must_exist: bool,
) -> Result<Option<Op>> {
    if must_exist && t.live.is_none() {
        return Err(Error::NotFound {
            key: format!("{}/{}", t.coll, t.id),
        });
    }
    if let (None, Some(s)) = (t.live, t.schema) {
        check_creates_required(s, t.coll, &fields)?;
    }
    let mut ops = BTreeMap::new();
    let mut size = 0;
    for (name, fw) in fields {
        let fop = match fw {
            FieldWrite::Assign(v) => {
                if let Some(s) = t.schema {
                    s.check_assign(t.coll, &name, Some(&v))?;
                }
                size += v.encoded_len();
                FieldOp::Assign(v)
            }
            FieldWrite::Unset => {
                if let Some(s) = t.schema {
                    s.check_assign(t.coll, &name, None)?;
                }
                FieldOp::Unset
            }
            FieldWrite::SetEdit { add, remove } => {
                size += add.iter().map(|e| e.len() + 5).sum::<usize>();
                match set_edit_op(t, meta.as_ref(), &name, add, remove)? {
                    Some(fop) => fop,
                    None => continue,
                }
            }
        };
        ops.insert(name, fop);
    }
    check_size(t.coll, t.id, size)?;
    Ok((!ops.is_empty()).then_some(Op::Patch(ops)))
}

/// A patch that creates the item must still give it every required field (an assignment, or
/// a set edit of a declared set).
fn check_creates_required(
    s: &Schema,
    coll: &str,
    fields: &BTreeMap<String, FieldWrite>,
) -> Result<()> {
    for (name, spec) in &s.fields {
        let assigned = matches!(fields.get(name), Some(FieldWrite::Assign(_)));
        let set_created = spec.ty == FieldType::Set
            && matches!(fields.get(name), Some(FieldWrite::SetEdit { .. }));
        if spec.required && !assigned && !set_created {
            return Err(Error::Schema {
                collection: coll.to_string(),
                field: name.clone(),
                rule: "is required (the write creates the item)".into(),
            });
        }
    }
    Ok(())
}

/// A set edit: the field must be a set (or absent), and each removed element carries the
/// dots this replica has observed for it (an element never seen is not removed). None when
/// there is nothing to add or remove.
fn set_edit_op(
    t: &Target<'_>,
    meta: Option<&BTreeMap<Name, FieldMeta>>,
    name: &str,
    add: BTreeSet<String>,
    remove: BTreeSet<String>,
) -> Result<Option<FieldOp>> {
    if let Some(s) = t.schema {
        s.check_set_edit(t.coll, name)?;
    }
    if let Some(v) = t.live.and_then(|m| m.get(name)) {
        if !matches!(v, Value::Set(_)) {
            return Err(Error::invalid_value(
                &format!("{}/{}.{name}", t.coll, t.id),
                format!("is a {}, not a set", v.type_name()),
            ));
        }
    }
    let dots = meta
        .and_then(|m| m.get(name))
        .and_then(|fm| fm.dots.as_ref());
    let remove: BTreeMap<String, Vec<Stamp>> = remove
        .into_iter()
        .filter_map(|e| {
            let d = dots?.get(e.as_str())?.clone();
            Some((e, d))
        })
        .collect();
    if add.is_empty() && remove.is_empty() {
        return Ok(None);
    }
    Ok(Some(FieldOp::SetEdit { add, remove }))
}

/// The size limit of one write ([`crate::value::MAX_ITEM_BYTES`]), for local and received
/// writes alike.
pub(super) fn check_size(coll: &str, id: &str, size: usize) -> Result<()> {
    crate::value::check_item_size(coll, id, size)
}
