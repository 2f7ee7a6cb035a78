//! End-to-end encrypted repositories (docs/design.md §6.8). A repository founded encrypted
//! (`_keys/config` in its root) carries its data changes sealed: every change to an
//! application collection of a commit is encoded, padded and encrypted with AES-256-GCM under
//! the current **epoch key**, and the commit carries the ciphertext as items of the reserved
//! collection `_e` instead (`_e/0000`, `_e/0001`, … in chunks of at most 8 MiB). The commit
//! is encoded, hashed and sealed over the ciphertext, so a sync server verifies signatures and
//! the access rule over what it can see and never holds a content key. Epoch keys are wrapped
//! to each member (`cipher.rs`) and travel as `_keys/<epoch>-<member key hex>` items written by
//! an owner: a grant wraps every epoch to the new member, a revocation starts a new epoch
//! wrapped to every remaining member. The device decrypts a commit before it is applied
//! (`Keyring::open`), so the state, the indexes and the queries only ever see plaintext.
//!
//! | file        | what                                                             |
//! |-------------|------------------------------------------------------------------|
//! | `cipher.rs` | AES-256-GCM, and wrapping a key to a member (ECDH P-384 + HKDF)  |
//! | `mod.rs`    | [`Keyring`]: the epoch keys a device holds; sealing and opening  |

mod cipher;

#[cfg(feature = "testing")]
pub use cipher::key_agreements;
pub use cipher::{KEY_LEN, NONCE_LEN};

use crate::access::{Acl, Role};
use crate::commit::{Change, Commit, CommitId, Identity, Op, PublicKey};
use crate::error::{DecryptErrorKind, Error, Result};
use crate::value::{Map, Value};
use cipher::derr;
use std::collections::BTreeMap;

/// The reserved collection of the encryption flag and the wrapped epoch keys.
pub const KEYS_COLLECTION: &str = "_keys";
/// The id of the flag, `_keys/config` = `{"encrypted": true}`, written in the root.
pub const CONFIG_ID: &str = "config";
/// The reserved collection that carries a commit's sealed data changes.
pub const SEALED_COLLECTION: &str = "_e";
/// The field of a sealed chunk, and of a wrapped key.
const CHUNK_FIELD: &str = "c";
/// Largest chunk of a commit's ciphertext in one `_e` item (half the item limit).
const CHUNK: usize = 8 << 20;
/// The plaintext is padded to a multiple of this many bytes (the server sees sizes only so).
pub const PAD: usize = 64;
/// Format version of a sealed blob written now: 2 names the key (epoch and key id); 1 (read
/// still) named the epoch only.
const SEALED_VERSION: u8 = 2;
/// Version 1: version, epoch, nonce.
const HEAD_V1: usize = 1 + 4 + NONCE_LEN;
/// Version 2: version, epoch, key id, nonce.
const HEAD: usize = 1 + 4 + KID_LEN + NONCE_LEN;
/// Length of a key id.
pub const KID_LEN: usize = 8;
/// The header of a commit without parents (§4.1: version, flags, author key, hlc, no
/// parents): what a version-2 plaintext leaves out of the inner commit, since the outer one's
/// author and hlc are authenticated as additional data and make it again.
const INNER_HEAD: usize = 1 + 1 + 49 + 8 + 1;

/// An epoch key's id: the first 8 bytes of SHA-256(`"ibexdb-epoch-key/1"` ‖ key). Two owners
/// that start an epoch concurrently make two keys of one number; the id tells them apart (in
/// the `_keys` ids of their wraps and in each sealed blob), so every device looks a key up by
/// (epoch, id) and none is lost.
pub type Kid = [u8; KID_LEN];

/// The id of `key`.
pub fn key_id(key: &[u8; KEY_LEN]) -> Kid {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    h.update(b"ibexdb-epoch-key/1");
    h.update(key);
    h.finalize()[..KID_LEN].try_into().unwrap()
}

/// The most bytes of sealed chunks a device keeps in memory for want of a key; past it, a commit
/// that cannot be opened is not kept (a replay from the log opens it once the key is there).
pub const MAX_PENDING_BYTES: usize = 64 << 20;
/// The most decrypt failures a device lists (`Repo::decrypt_failures`); later ones are counted.
pub const MAX_FAILURES: usize = 1024;

/// Fills a buffer with cryptographically random bytes (the core has no RNG of its own).
pub type Random = Box<dyn FnMut(&mut [u8]) + Send>;

/// The value of `_keys/config`.
pub fn config_value() -> Map {
    let mut m = Map::new();
    m.insert("encrypted".into(), Value::Bool(true));
    m
}

/// The `_keys` id of the key `kid` of `epoch` wrapped to `member`: 8 hex digits of the epoch,
/// 16 of the key id, the member's 98 (`<epoch>-<kid>-<member>`).
pub fn wrap_id(epoch: u32, kid: &Kid, member: &PublicKey) -> String {
    format!(
        "{epoch:08x}-{}-{}",
        crate::commit::hex(kid),
        member.to_hex()
    )
}

/// A wrap's `_keys` id: the epoch, the key id (`None` in the form written before key ids,
/// `<epoch>-<member>`: any key of the epoch) and the member's hex.
pub(crate) fn parse_wrap_id(id: &str) -> Option<(u32, Option<Kid>, &str)> {
    let (e, rest) = id.split_once('-')?;
    (e.len() == 8).then_some(())?;
    let epoch = u32::from_str_radix(e, 16).ok()?;
    match rest.split_once('-') {
        None => Some((epoch, None, rest)),
        Some((k, hex)) => {
            let lower =
                k.len() == 2 * KID_LEN && k.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'));
            let kid: Kid = crate::commit::from_hex(k)
                .filter(|_| lower)?
                .try_into()
                .ok()?;
            Some((epoch, Some(kid), hex))
        }
    }
}

/// Whether a change is one the device encrypts: any application collection.
pub fn is_data(ch: &Change) -> bool {
    !ch.collection.starts_with('_')
}

/// Whether `root` (a commit without parents, decoded whole) founds an encrypted repository:
/// it puts `_keys/config` = `{"encrypted": true}`.
pub fn founds_encrypted(root: &Commit) -> bool {
    root.parents.is_empty() && root.changes.iter().any(|c| {
        c.collection == KEYS_COLLECTION
            && c.id == CONFIG_ID
            && matches!(&c.op, Op::Put(m) if matches!(m.get("encrypted"), Some(Value::Bool(true))))
    })
}

/// The rule of an encrypted repository (docs/design.md §6.8): a commit carries no change to an
/// application collection outside its sealed chunks, whatever the op (a put or a patch holds
/// values, an attach a file's name and hash, a delete the item's id and collection).
/// `DecryptError` `plaintext` otherwise. `commit` may be decoded access-only (a sync server:
/// [`Change::elided_data`] stands for such changes).
pub fn check_sealed(commit: &Commit, id: &CommitId) -> Result<()> {
    let plain = commit
        .changes
        .iter()
        .any(|c| c.elides_data() || (!c.is_elided() && is_data(c)));
    if !plain {
        return Ok(());
    }
    Err(derr(
        DecryptErrorKind::Plaintext,
        format!(
            "commit {} of an encrypted repository carries data changes unsealed",
            id.to_hex()
        ),
    ))
}

/// The epoch keys a device holds for one repository, learned from the `_keys` items wrapped to
/// its identity, and the commits it could not open.
#[derive(Clone)]
pub struct Keyring {
    me: Identity,
    me_hex: String,
    repo: String,
    /// The repository's root says it is encrypted.
    pub encrypted: bool,
    /// The keys held, by (epoch, key id).
    epochs: BTreeMap<(u32, Kid), cipher::EpochKey>,
    /// The key new writes use ([`Keyring::choose`]); `None`: none held, or every key held
    /// was wrapped to a member revoked since.
    write: Option<(u32, Kid)>,
    /// A key or a `_keys` item arrived since the write key was chosen.
    stale: bool,
    /// The access list (index) the write key was chosen against.
    acl_seen: Option<u32>,
    /// This session's nonce prefix (8 random bytes, drawn at the first seal) and counter.
    nonce: Option<([u8; 8], u32)>,
    /// The highest epoch any `_keys` item names (wrapped to anyone).
    latest: Option<u32>,
    /// Commits whose data this device could not decrypt, and why (their data is not applied):
    /// the first [`MAX_FAILURES`].
    pub failures: Vec<(CommitId, Error)>,
    /// How many commits could not be decrypted (and were not opened since).
    pub failed: usize,
    /// The sealed chunks of the commits that failed for want of a key, with their index in
    /// the commit table: opened and applied late when a key of their epoch arrives.
    pending: Vec<(CommitId, u32, Commit)>,
    /// Bytes of sealed chunks `pending` holds (at most [`MAX_PENDING_BYTES`]).
    pending_bytes: usize,
    /// A key arrived since the pending commits were last tried.
    fresh: bool,
    /// The last commit whose sealed chunks [`Keyring::open_applied`] replaced (or removed).
    pub opened: Option<CommitId>,
}

impl std::fmt::Debug for Keyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keyring")
            .field("encrypted", &self.encrypted)
            .field("epochs", &self.epochs.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// A keyring is derived from the log like the rest of the graph, and holds no part of the
/// model `verify()` compares: any two are equal.
impl PartialEq for Keyring {
    fn eq(&self, _: &Keyring) -> bool {
        true
    }
}

impl Keyring {
    pub fn new(me: Identity, repo: &str) -> Keyring {
        Keyring {
            me_hex: me.public().to_hex(),
            me,
            repo: repo.to_string(),
            encrypted: false,
            epochs: BTreeMap::new(),
            write: None,
            stale: true,
            acl_seen: None,
            nonce: None,
            latest: None,
            failures: Vec::new(),
            failed: 0,
            pending: Vec::new(),
            pending_bytes: 0,
            fresh: false,
            opened: None,
        }
    }

    /// A fresh keyring for the same identity (a replay from the log's start).
    pub fn fresh(&self) -> Keyring {
        Keyring::new(self.me.clone(), &self.repo)
    }

    /// The key new writes use, as last chosen ([`Keyring::choose`]).
    pub fn write_key(&self) -> Option<(u32, Kid)> {
        self.write
    }

    /// Whether this device holds any key.
    pub fn has_keys(&self) -> bool {
        !self.epochs.is_empty()
    }

    /// Whether the write key must be chosen again: a key or a `_keys` item arrived, or the
    /// access list (index `acl`) changed since.
    pub fn needs_choice(&self, acl: u32) -> bool {
        self.encrypted && (self.stale || self.acl_seen != Some(acl))
    }

    /// Choose the key new writes use (§6.8): of the keys held that no member outside the
    /// access list holds (`revoked(epoch, kid)`: a wrap of it names a key that is no member
    /// now), the newest epoch's, the smallest key id among equals (two owners that started
    /// the epoch concurrently). So a device that knows a revocation never seals with a key
    /// the revoked member was given, whatever the order its commits arrived in.
    pub fn choose(&mut self, acl: u32, revoked: impl Fn(u32, &Kid) -> bool) {
        self.write = self
            .epochs
            .keys()
            .filter(|(e, k)| !revoked(*e, k))
            .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)))
            .copied();
        self.stale = false;
        self.acl_seen = Some(acl);
    }

    /// The highest epoch this device holds a key of (a new epoch takes the next number).
    pub fn latest(&self) -> Option<u32> {
        self.latest
    }

    /// The keys this device holds, with their epoch and id.
    pub fn epochs(&self) -> impl Iterator<Item = (u32, Kid, &[u8; KEY_LEN])> {
        self.epochs.iter().map(|((e, i), k)| (*e, *i, &k.key))
    }

    /// This device's public key.
    pub fn me_public(&self) -> PublicKey {
        self.me.public()
    }

    /// Hold `key` for `epoch` (one this device made, or unwrapped); its id.
    pub fn insert(&mut self, epoch: u32, key: [u8; KEY_LEN]) -> Kid {
        let kid = key_id(&key);
        self.epochs.insert((epoch, kid), cipher::EpochKey::new(key));
        self.latest = Some(self.latest.map_or(epoch, |l| l.max(epoch)));
        self.stale = true;
        kid
    }

    fn holds(&self, epoch: u32, kid: Option<&Kid>) -> bool {
        match kid {
            Some(k) => self.epochs.contains_key(&(epoch, *k)),
            None => self
                .epochs
                .range((epoch, [0; KID_LEN])..=(epoch, [0xff; KID_LEN]))
                .next()
                .is_some(),
        }
    }

    /// Learn from one `_keys` item: the flag, or a wrapped key (kept if it is this device's and
    /// wrapped by an owner of `acl`, or by the root's author in the root). A key wrapped to this
    /// device that does not open, or not by an owner, is a `DecryptError` (and is not kept).
    pub fn learn_item(
        &mut self,
        id: &str,
        value: &Map,
        acl: &Acl,
        author: &PublicKey,
        root_author: Option<&PublicKey>,
    ) -> Result<()> {
        if id == CONFIG_ID {
            self.encrypted |= matches!(value.get("encrypted"), Some(Value::Bool(true)));
            return Ok(());
        }
        let Some((epoch, kid, hex)) = parse_wrap_id(id) else {
            return Ok(());
        };
        // Not `latest`: any writer may name any epoch in a `_keys` id (u32::MAX would make
        // the next revocation's epoch overflow); only keys held count (an owner holds every
        // epoch an owner made, wrapped to it with the other members).
        if hex != self.me_hex || self.holds(epoch, kid.as_ref()) {
            return Ok(());
        }
        let (Some(Value::String(from)), Some(Value::Bytes(w))) =
            (value.get("from"), value.get(CHUNK_FIELD))
        else {
            return Err(derr(
                DecryptErrorKind::Malformed,
                "a wrapped key is not {from, c}",
            ));
        };
        let from = crate::commit::from_hex(from.as_str());
        let Some(Ok(from)) = from.map(|b| PublicKey::from_bytes(&b)) else {
            return Err(derr(
                DecryptErrorKind::Malformed,
                "a wrapped key's sender is not a key",
            ));
        };
        // An owner's device wraps keys in its own commits (`from` is their author): a wrap
        // in another's commit is refused before any curve arithmetic, so a writer's flood of
        // wraps costs no member a key agreement each (at every apply and open).
        let allowed =
            from == *author && (acl.role(&from) == Some(Role::Owner) || root_author == Some(&from));
        if !allowed {
            return Err(derr(
                DecryptErrorKind::Unwrap,
                format!(
                    "epoch {epoch}'s key was wrapped by a key that is not an owner (or not the \
                     commit's author)"
                ),
            ));
        }
        let info = cipher::wrap_info(&self.repo, epoch, &from, &self.me.public());
        let k = cipher::unwrap(&self.me, &from, &info, w)?;
        if kid.is_some_and(|kid| kid != key_id(&k)) {
            return Err(derr(
                DecryptErrorKind::Malformed,
                format!("a wrapped key of epoch {epoch} is not the key its id names"),
            ));
        }
        self.insert(epoch, k);
        self.fresh = true;
        Ok(())
    }

    /// Learn what `commit`'s `_keys` puts say (`acl`: the access list before it); the errors of
    /// the keys wrapped to this device that it could not take.
    pub fn learn(&mut self, commit: &Commit, acl: &Acl) -> Vec<Error> {
        let root = commit.parents.is_empty().then_some(&commit.author);
        let mut errors = Vec::new();
        for ch in &commit.changes {
            if ch.collection != KEYS_COLLECTION {
                continue;
            }
            // Who holds which key may have changed: the write key is chosen again.
            self.stale = true;
            if let Op::Put(m) = &ch.op {
                if ch.id == CONFIG_ID && root.is_none() {
                    continue; // the flag is fixed at creation
                }
                if let Err(e) = self.learn_item(&ch.id, m, acl, &commit.author, root) {
                    errors.push(e);
                }
            }
        }
        errors
    }

    /// `epoch`'s key wrapped by this device (an owner) to `to`: the `_keys` item's value.
    pub fn wrap_value(
        &self,
        epoch: u32,
        key: &[u8; KEY_LEN],
        to: &PublicKey,
        random: &mut dyn FnMut(&mut [u8]),
    ) -> Result<Map> {
        let info = cipher::wrap_info(&self.repo, epoch, &self.me.public(), to);
        let w = cipher::wrap(&self.me, to, &info, key, random)?;
        let mut m = Map::new();
        m.insert("from".into(), Value::from(self.me.public().to_hex()));
        m.insert(CHUNK_FIELD.into(), Value::from(w));
        Ok(m)
    }

    /// The commit as it travels: its data changes replaced by the sealed chunks (`None` when it
    /// has none, or the repository is not encrypted). `commit` keeps its changes (moved out to
    /// be encoded, and back).
    pub fn seal_commit(
        &mut self,
        commit: &mut Commit,
        random: &mut dyn FnMut(&mut [u8]),
    ) -> Result<Option<Commit>> {
        if !self.encrypted || !commit.changes.iter().any(is_data) {
            return Ok(None);
        }
        let Some((epoch, kid)) = self.write else {
            let why = if self.epochs.is_empty() {
                "this device holds no key of the repository (no owner has wrapped one to it)"
            } else {
                "every key this device holds was given to a member since revoked: an owner's \
                 device starts a new epoch when it learns of the revocations"
            };
            return Err(derr(DecryptErrorKind::MissingKey, why));
        };
        // Most commits hold data only: nothing to split.
        let (data, mut rest): (Vec<Change>, Vec<Change>) = if commit.changes.iter().all(is_data) {
            (std::mem::take(&mut commit.changes), Vec::new())
        } else {
            std::mem::take(&mut commit.changes)
                .into_iter()
                .partition(is_data)
        };
        let mut inner = Commit {
            trusted: commit.trusted,
            author: commit.author,
            hlc: commit.hlc,
            parents: Vec::new(),
            changes: data,
        };
        let encoded = inner.encode();
        debug_assert_eq!(encoded[INNER_HEAD - 1], 0, "an inner commit has no parents");
        // The body: the inner commit without its header (made again from the outer one).
        let body = &encoded[INNER_HEAD..];
        let n = body.len();
        let padded = 4 + n.div_ceil(PAD) * PAD;
        // Give the commit its changes back, in key order.
        if rest.is_empty() {
            commit.changes = inner.changes;
        } else {
            commit.changes = rest.clone();
            commit.changes.append(&mut inner.changes);
            commit
                .changes
                .sort_by(|a, b| (&a.collection, &a.id).cmp(&(&b.collection, &b.id)));
        }
        let nonce = self.next_nonce(random);
        // The blob is built in one buffer and encrypted in place.
        let mut blob = Vec::with_capacity(HEAD + padded + cipher::TAG_LEN);
        blob.push(SEALED_VERSION);
        blob.extend_from_slice(&epoch.to_be_bytes());
        blob.extend_from_slice(&kid);
        blob.extend_from_slice(&nonce);
        blob.extend_from_slice(&(n as u32).to_be_bytes());
        blob.extend_from_slice(body);
        blob.resize(HEAD + padded, 0);
        let aad = self.aad(commit, epoch, Some(&kid));
        let tag = self.epochs[&(epoch, kid)].seal_in_place(&nonce, &aad, &mut blob[HEAD..]);
        blob.extend_from_slice(&tag);
        for (i, chunk) in blob.chunks(CHUNK).enumerate() {
            let mut m = Map::new();
            m.insert(CHUNK_FIELD.into(), Value::from(chunk));
            rest.push(Change {
                collection: SEALED_COLLECTION.into(),
                id: format!("{i:04x}"),
                op: Op::Put(m),
            });
        }
        rest.sort_by(|a, b| (&a.collection, &a.id).cmp(&(&b.collection, &b.id)));
        Ok(Some(Commit {
            trusted: commit.trusted,
            author: commit.author,
            hlc: commit.hlc,
            parents: commit.parents.clone(),
            changes: rest,
        }))
    }

    /// A fresh nonce: this session's random 8-byte prefix and a 4-byte counter (a new prefix
    /// every 2³² seals). Unique per key unless two sessions under one epoch draw the same
    /// prefix (birthday bound: ~2³² sessions per epoch), without a system call per commit.
    fn next_nonce(&mut self, random: &mut dyn FnMut(&mut [u8])) -> [u8; NONCE_LEN] {
        let (prefix, count) = match self.nonce {
            Some((p, c)) if c < u32::MAX => (p, c),
            _ => {
                let mut p = [0u8; 8];
                random(&mut p);
                (p, 0)
            }
        };
        self.nonce = Some((prefix, count + 1));
        let mut n = [0u8; NONCE_LEN];
        n[..8].copy_from_slice(&prefix);
        n[8..].copy_from_slice(&count.to_be_bytes());
        n
    }

    /// The additional data of a sealed blob: version 2 (`kid` given) binds the key id too.
    fn aad(&self, commit: &Commit, epoch: u32, kid: Option<&Kid>) -> cipher::Aad {
        let mut a = cipher::Aad::new();
        a.extend_from_slice(if kid.is_some() {
            b"ibexdb-e2e/2"
        } else {
            b"ibexdb-e2e/1"
        });
        a.extend_from_slice(&(self.repo.len() as u32).to_be_bytes());
        a.extend_from_slice(self.repo.as_bytes());
        a.extend_from_slice(&commit.author.0);
        a.extend_from_slice(&commit.hlc.to_be_bytes());
        a.extend_from_slice(&epoch.to_be_bytes());
        if let Some(k) = kid {
            a.extend_from_slice(k);
        }
        a
    }

    /// Replace `commit`'s sealed chunks by the data changes they hold. Without chunks, nothing
    /// to do. `DecryptError`: `missing-key` (no key of the commit's epoch here), `aead` (the
    /// ciphertext does not authenticate under it), `malformed`; the chunks are then removed
    /// and the commit's data does not apply on this device.
    pub fn open(&self, commit: &mut Commit) -> Result<()> {
        self.open_keeping(commit).map_err(|(e, _)| e)
    }

    /// [`Keyring::open`] of a commit about to be applied as the commit `index` of the table:
    /// one that fails for want of a key is kept, and opened when the key arrives
    /// ([`Keyring::take_opened`]); every failure is recorded.
    pub fn open_applied(&mut self, commit: &mut Commit, id: &CommitId, index: u32) {
        self.opened = commit
            .changes
            .iter()
            .any(|c| c.collection == SEALED_COLLECTION)
            .then_some(*id);
        if let Err((e, chunks)) = self.open_keeping(commit) {
            if matches!(
                e,
                Error::Decrypt {
                    kind: DecryptErrorKind::MissingKey,
                    ..
                }
            ) {
                let size: usize = chunks
                    .iter()
                    .map(|c| chunk_bytes(c).map_or(0, <[u8]>::len))
                    .sum();
                if self.pending_bytes + size <= MAX_PENDING_BYTES {
                    self.pending_bytes += size;
                    let kept = Commit {
                        trusted: commit.trusted,
                        author: commit.author,
                        hlc: commit.hlc,
                        parents: Vec::new(),
                        changes: chunks,
                    };
                    self.pending.push((*id, index, kept));
                }
            }
            self.fail(*id, e);
        }
    }

    /// What the permission rule judges of a commit whose sealed data this device replaced: the
    /// commit as every replica sees it, its data changes standing as one sealed chunk (so a
    /// device with the key, one without and the server decide alike, §6.8): the data stand as
    /// one [`Change::elided`] marker, as in a sync server's access-only decode (the rule reads
    /// it as data; no stored schema applies to sealed data). It takes `commit`'s parents (no
    /// copy): give them back after the judgement.
    pub fn wire_view(commit: &mut Commit) -> Commit {
        let mut changes: Vec<Change> = commit
            .changes
            .iter()
            .filter(|c| !is_data(c))
            .cloned()
            .collect();
        changes.push(Change::elided());
        Commit {
            trusted: commit.trusted,
            author: commit.author,
            hlc: commit.hlc,
            parents: std::mem::take(&mut commit.parents),
            changes,
        }
    }

    /// Bytes of sealed chunks kept for when a key arrives.
    pub fn pending_bytes(&self) -> usize {
        self.pending_bytes
    }

    /// Record a failure (the first [`MAX_FAILURES`]; then only counted).
    pub fn fail(&mut self, id: CommitId, e: Error) {
        self.failed += 1;
        if self.failures.len() < MAX_FAILURES {
            self.failures.push((id, e));
        }
    }

    /// The kept commits that open now that new keys arrived (their data changes only), each
    /// with its id and index; their failures are cleared.
    pub fn take_opened(&mut self) -> Vec<(CommitId, u32, Commit)> {
        if !std::mem::take(&mut self.fresh) || self.pending.is_empty() {
            return Vec::new();
        }
        let mut out = Vec::new();
        self.pending_bytes = 0;
        for (id, index, mut c) in std::mem::take(&mut self.pending) {
            let size: usize = c
                .changes
                .iter()
                .map(|c| chunk_bytes(c).map_or(0, <[u8]>::len))
                .sum();
            match self.open_keeping(&mut c) {
                Ok(()) => {
                    self.failures.retain(|(f, _)| *f != id);
                    self.failed -= 1;
                    out.push((id, index, c));
                }
                Err((_, chunks)) => {
                    c.changes = chunks;
                    self.pending_bytes += size;
                    self.pending.push((id, index, c));
                }
            }
        }
        out
    }

    fn open_keeping(&self, commit: &mut Commit) -> std::result::Result<(), (Error, Vec<Change>)> {
        if !commit
            .changes
            .iter()
            .any(|c| c.collection == SEALED_COLLECTION)
        {
            return Ok(());
        }
        let sealed = |c: &Change| c.collection == SEALED_COLLECTION;
        // Most commits hold their sealed data only: nothing to split.
        let (chunks, rest): (Vec<Change>, Vec<Change>) = if commit.changes.iter().all(sealed) {
            (std::mem::take(&mut commit.changes), Vec::new())
        } else {
            std::mem::take(&mut commit.changes)
                .into_iter()
                .partition(sealed)
        };
        commit.changes = rest;
        match self.open_chunks(commit, &chunks) {
            Ok(()) => Ok(()),
            Err(e) => Err((e, chunks)),
        }
    }

    fn open_chunks(&self, commit: &mut Commit, chunks: &[Change]) -> Result<()> {
        let data = match chunks {
            [one] => self.open_blob(commit, chunk_bytes(one)?)?,
            _ => {
                let mut joined = Vec::new();
                for ch in chunks {
                    joined.extend_from_slice(chunk_bytes(ch)?);
                }
                self.open_blob(commit, &joined)?
            }
        };
        if commit.changes.is_empty() {
            // The inner commit decoded canonically: in key order, no key twice.
            commit.changes = data;
            return Ok(());
        }
        commit.changes.extend(data);
        commit
            .changes
            .sort_by(|a, b| (&a.collection, &a.id).cmp(&(&b.collection, &b.id)));
        if commit
            .changes
            .windows(2)
            .any(|w| w[0].collection == w[1].collection && w[0].id == w[1].id)
        {
            commit.changes.retain(|c| !is_data(c));
            return Err(derr(
                DecryptErrorKind::Malformed,
                "a sealed change repeats a key",
            ));
        }
        Ok(())
    }

    fn open_blob(&self, commit: &Commit, blob: &[u8]) -> Result<Vec<Change>> {
        let malformed = |why: &str| derr(DecryptErrorKind::Malformed, why.to_string());
        let head = match blob.first() {
            Some(1) => HEAD_V1,
            Some(2) => HEAD,
            _ => 0,
        };
        if head == 0 || blob.len() < head + cipher::TAG_LEN {
            return Err(malformed(
                "a sealed blob is too short or of an unknown version",
            ));
        }
        let epoch = u32::from_be_bytes(blob[1..5].try_into().unwrap());
        let kid: Option<Kid> = (head == HEAD).then(|| blob[5..5 + KID_LEN].try_into().unwrap());
        // Version 1 names no key: each key of the epoch is tried (one, unless two owners
        // started it concurrently).
        let keys: Vec<&cipher::EpochKey> = match &kid {
            Some(k) => self.epochs.get(&(epoch, *k)).into_iter().collect(),
            None => self
                .epochs
                .range((epoch, [0; KID_LEN])..=(epoch, [0xff; KID_LEN]))
                .map(|(_, k)| k)
                .collect(),
        };
        if keys.is_empty() {
            return Err(derr(
                DecryptErrorKind::MissingKey,
                format!("no key of epoch {epoch} (of this id) was wrapped to this device"),
            ));
        }
        let nonce: [u8; NONCE_LEN] = blob[head - NONCE_LEN..head].try_into().unwrap();
        let aad = self.aad(commit, epoch, kid.as_ref());
        let aead = || {
            derr(
                DecryptErrorKind::Aead,
                format!("the sealed data does not authenticate under the key of epoch {epoch}"),
            )
        };
        if kid.is_none() {
            return self.open_v1(commit, &keys, &nonce, &aad, &blob[head..], aead);
        }
        // Version 2: decrypted in place after room for the inner commit's header, which is
        // then written from the outer commit over the room's end (before the length).
        let ct = &blob[head..];
        let mut buf = vec![0u8; INNER_HEAD];
        buf.extend_from_slice(ct);
        let Some(plain) = keys[0].open_in_place(&nonce, &aad, &mut buf[INNER_HEAD..]) else {
            return Err(aead());
        };
        let plain_len = plain.len();
        let plain = &buf[INNER_HEAD..INNER_HEAD + plain_len];
        if plain.len() < 4 {
            return Err(malformed("a sealed plaintext has no length"));
        }
        let n = u32::from_be_bytes(plain[..4].try_into().unwrap()) as usize;
        if 4 + n > plain.len() {
            return Err(malformed("bad padded length"));
        }
        let mut head_bytes = [0u8; INNER_HEAD];
        head_bytes[0] = crate::commit::COMMIT_VERSION;
        head_bytes[1] = if commit.trusted {
            crate::commit::FLAG_TRUSTED
        } else {
            0
        };
        head_bytes[2..51].copy_from_slice(&commit.author.0);
        head_bytes[51..59].copy_from_slice(&commit.hlc.to_le_bytes());
        buf[4..4 + INNER_HEAD].copy_from_slice(&head_bytes);
        let inner = Commit::decode_unhashed(&buf[4..4 + INNER_HEAD + n])
            .map_err(|_| malformed("the sealed changes do not decode"))?;
        check_inner(commit, inner)
    }

    /// A version-1 blob: the plaintext holds the whole inner commit; each key of the epoch is
    /// tried.
    fn open_v1(
        &self,
        commit: &Commit,
        keys: &[&cipher::EpochKey],
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        ct: &[u8],
        aead: impl Fn() -> Error,
    ) -> Result<Vec<Change>> {
        let malformed = |why: &str| derr(DecryptErrorKind::Malformed, why.to_string());
        let plain = keys
            .iter()
            .find_map(|key| key.open(nonce, aad, ct))
            .ok_or_else(aead)?;
        if plain.len() < 4 {
            return Err(malformed("a sealed plaintext has no length"));
        }
        let n = u32::from_be_bytes(plain[..4].try_into().unwrap()) as usize;
        let inner = plain
            .get(4..4 + n)
            .ok_or_else(|| malformed("bad padded length"))?;
        let inner = Commit::decode_unhashed(inner)
            .map_err(|_| malformed("the sealed changes do not decode"))?;
        check_inner(commit, inner)
    }
}

/// The inner commit of a sealed blob belongs to `commit` and writes only data.
fn check_inner(commit: &Commit, inner: Commit) -> Result<Vec<Change>> {
    let malformed = |why: &str| derr(DecryptErrorKind::Malformed, why.to_string());
    if inner.author != commit.author || inner.hlc != commit.hlc || !inner.parents.is_empty() {
        return Err(malformed("the sealed changes belong to another commit"));
    }
    if inner.changes.iter().any(|c| !is_data(c)) {
        return Err(malformed("a sealed change writes a reserved collection"));
    }
    Ok(inner.changes)
}

/// The bytes of one sealed chunk.
fn chunk_bytes(ch: &Change) -> Result<&[u8]> {
    match &ch.op {
        Op::Put(m) => match m.get(CHUNK_FIELD) {
            Some(Value::Bytes(b)) => Ok(b),
            _ => Err(derr(
                DecryptErrorKind::Malformed,
                "a sealed chunk holds no bytes",
            )),
        },
        _ => Err(derr(
            DecryptErrorKind::Malformed,
            "a sealed chunk is not a put",
        )),
    }
}

#[cfg(test)]
mod tests;
