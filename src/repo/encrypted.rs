//! An end-to-end encrypted repository on this device (docs/design.md §6.8): founding one,
//! sealing local commits, and the epoch keys a grant or a revocation wraps to the members.
//! The cipher and the keyring are in `src/crypt/`.

use super::Repo;
use crate::access::Role;
use crate::commit::{Change, Commit, CommitId, Op, PublicKey};
use crate::crypt::{
    config_value, key_id, wrap_id, Keyring, Kid, CONFIG_ID, KEYS_COLLECTION, KEY_LEN,
};
use crate::error::{Error, Result};
use crate::store::Storage;
use crate::txn::Txn;
use crate::value::Map;

fn no_random() -> Error {
    Error::InvalidValue {
        path: "options.random".into(),
        reason: "an encrypted repository's writes need a random source".into(),
    }
}

impl<S: Storage> Repo<S> {
    /// Whether the repository is end-to-end encrypted (its root says so).
    pub fn is_encrypted(&self) -> bool {
        let founding = self.opts.encrypted && self.first_commit();
        self.graph
            .keyring
            .as_ref()
            .is_some_and(|k| k.encrypted || founding)
    }

    /// Whether the stored root founds an encrypted repository (read from the log once, at
    /// open: any writer may overwrite the `_keys/config` item, never the root).
    pub(super) fn root_founds_encrypted(&self) -> Result<bool> {
        let Some(root) = self.graph.commits.first() else {
            return Ok(false);
        };
        let (_, payload) = self.log.read_frame(root.offset)?;
        let (config, _) = Commit::decode_one(&payload, KEYS_COLLECTION, CONFIG_ID, 64)?;
        Ok(crate::crypt::founds_encrypted(&config))
    }

    /// The rule of an encrypted repository on a batch about to be stored (§6.8): if the
    /// repository's root (stored, or in the batch: its `_keys/config` read here, as a sync
    /// server's access-only decode keeps no `_keys` change) founds it encrypted, every commit's data is
    /// sealed; `DecryptError` `plaintext` refuses the batch otherwise. Returns whether it is
    /// encrypted.
    pub(super) fn check_batch_sealed(
        &self,
        accepted: &[(Commit, CommitId, &Vec<u8>)],
    ) -> Result<bool> {
        let mut encrypted = self.encrypted_root;
        for (c, _, b) in accepted {
            if c.parents.is_empty() && !encrypted {
                // Its `_keys/config` only (`{"encrypted": true}` takes 12 bytes): a root of
                // any size costs one small change, not a whole decode (§12.4).
                let config = Commit::decode_one(b, KEYS_COLLECTION, CONFIG_ID, 64)?.0;
                encrypted = crate::crypt::founds_encrypted(&config);
            }
        }
        if encrypted {
            for (c, id, _) in accepted {
                crate::crypt::check_sealed(c, id)?;
            }
        }
        Ok(encrypted)
    }

    /// A local commit about to be stored (`wire`: as it travels) obeys the same rule.
    pub(super) fn check_own_sealed(&mut self, wire: &Commit, id: &CommitId) -> Result<()> {
        if wire.parents.is_empty() {
            self.encrypted_root = crate::crypt::founds_encrypted(wire);
        }
        if self.encrypted_root {
            crate::crypt::check_sealed(wire, id)?;
        }
        Ok(())
    }

    /// A commit that waited for its parents, once ready: whether it breaks the rule.
    pub(super) fn unsealed_data(&self, commit: &Commit, id: &CommitId) -> bool {
        self.encrypted_root && crate::crypt::check_sealed(commit, id).is_err()
    }

    fn first_commit(&self) -> bool {
        self.graph.commits.is_empty() && self.wait.len() == 0
    }

    /// Before the root of a repository opened `encrypted` is written: epoch 0's key.
    fn founding_epoch(&mut self) -> Result<()> {
        let founding = self.opts.encrypted && self.first_commit();
        if !founding || self.graph.keyring.as_ref().is_none_or(|k| k.has_keys()) {
            return Ok(());
        }
        let key = self.random_key()?;
        let k = self.graph.keyring.as_mut().unwrap();
        k.encrypted = true;
        k.insert(0, key);
        Ok(())
    }

    /// The epoch this device's writes use (of the keys it holds that no revoked member was
    /// given, the newest); `None` in a repository that is not encrypted, when no owner has
    /// wrapped a key to this device, or when every key it holds was given to a member revoked
    /// since (until an owner starts a new epoch).
    pub fn epoch(&self) -> Option<u32> {
        self.graph
            .keyring
            .as_ref()
            .and_then(|k| k.write_key())
            .map(|(e, _)| e)
    }

    /// Choose again the key this device's writes use if a key, a `_keys` item or the access
    /// list changed since (§6.8): the newest key held that no member outside the access list
    /// was wrapped (by the `_keys` items: a legacy `<epoch>-<member>` wrap names every key of
    /// its epoch).
    pub(super) fn refresh_write_key(&mut self) -> Result<()> {
        let acl = self.graph.acl;
        if !self
            .graph
            .keyring
            .as_ref()
            .is_some_and(|k| k.needs_choice(acl))
        {
            return Ok(());
        }
        let holds = self.graph.keyring.as_ref().is_some_and(|k| k.has_keys());
        let mut revoked: std::collections::BTreeSet<(u32, Option<Kid>)> = Default::default();
        if holds {
            self.warm_collection(KEYS_COLLECTION)?;
            // The members by their hex (no point is decoded: a flood of wraps costs a lookup
            // each).
            let members: std::collections::HashSet<String> = self
                .graph
                .current_acl()
                .members()
                .map(|(m, _)| m.to_hex())
                .collect();
            if let Some(c) = self.graph.state.collection(KEYS_COLLECTION) {
                for (id, _) in c.iter() {
                    if let Some((e, kid, hex)) = crate::crypt::parse_wrap_id(id) {
                        if !members.contains(hex) {
                            revoked.insert((e, kid));
                        }
                    }
                }
            }
        }
        let k = self.graph.keyring.as_mut().unwrap();
        k.choose(acl, |e, kid| {
            revoked.contains(&(e, Some(*kid))) || revoked.contains(&(e, None))
        });
        Ok(())
    }

    /// The commits whose data this device could not decrypt since open, and why (each a
    /// `DecryptError`; the first 1,024, [`Repo::decrypt_failed`] counts them all): their data
    /// is not applied here. A replay from the log (open without a snapshot, `verify()`) finds
    /// them again.
    pub fn decrypt_failures(&self) -> &[(CommitId, Error)] {
        self.graph
            .keyring
            .as_ref()
            .map_or(&[], |k| k.failures.as_slice())
    }

    /// How many commits' data this device could not decrypt (and has not opened since).
    pub fn decrypt_failed(&self) -> usize {
        self.graph.keyring.as_ref().map_or(0, |k| k.failed)
    }

    /// Bytes of sealed data this device keeps in memory for when a key arrives (at most
    /// 64 MiB, `crypt::MAX_PENDING_BYTES`).
    pub fn decrypt_pending_bytes(&self) -> usize {
        self.graph.keyring.as_ref().map_or(0, |k| k.pending_bytes())
    }

    /// The keyring of this replica, set at open (after a snapshot's state is loaded: the keys
    /// wrapped to it are read from its `_keys` items).
    pub(super) fn init_keyring(&mut self) -> Result<()> {
        let Some(id) = self.opts.identity.clone() else {
            return Ok(());
        };
        if self.opts.trusted || self.opts.access_only {
            return Ok(());
        }
        let mut k = Keyring::new(id, &self.opts.name);
        if !self.graph.commits.is_empty() {
            self.warm_collection(KEYS_COLLECTION)?;
            // Any writer may overwrite or delete a `_keys` item; what this device learned
            // when the commits were applied must not depend on what the item holds now. So
            // the flag and the keys wrapped to this device are learned again from the commits
            // that wrote those items (their history, read from the log): the flag only from
            // the root, every wrap this device can open from an owner.
            let me = k.me_public();
            // Every wrap to this device, deleted or not (the collection's items, tombstones
            // included: bounded by the items, never up to a hostile epoch number).
            let me_hex = me.to_hex();
            let mut ids = vec![CONFIG_ID.to_string()];
            if let Some(c) = self.graph.state.collection(KEYS_COLLECTION) {
                ids.extend(
                    c.items
                        .iter()
                        .map(|(id, _)| id.as_str())
                        .filter(|id| {
                            crate::crypt::parse_wrap_id(id).is_some_and(|(_, _, h)| h == me_hex)
                        })
                        .map(str::to_string),
                );
            }
            let mut seen = std::collections::BTreeSet::new();
            for id in &ids {
                let Some(item) = self.graph.state.item(KEYS_COLLECTION, id) else {
                    continue;
                };
                for &idx in &item.history {
                    if !seen.insert(idx) {
                        continue;
                    }
                    let info = &self.graph.commits[idx as usize];
                    let (_, payload) = self.log.read_frame(info.offset)?;
                    let (commit, _) = crate::commit::Commit::decode(&payload)?;
                    // Judged by the access list of the commit's own past (and itself), not
                    // the list as it is now: a key wrapped by an owner since demoted stays.
                    let _ = k.learn(&commit, self.graph.acls.get(info.acl));
                }
            }
        }
        self.graph.keyring = Some(Box::new(k));
        Ok(())
    }

    /// A keyring for a replay of the whole log (`verify()`, a rebuild): the same identity, no
    /// keys yet.
    pub(super) fn fresh_keyring(&self) -> Option<Box<Keyring>> {
        self.graph.keyring.as_ref().map(|k| Box::new(k.fresh()))
    }

    /// In the root of a repository opened `encrypted`: the flag and epoch 0's key, wrapped to
    /// this device.
    pub(super) fn founding_keys(&mut self, changes: &mut Vec<Change>) -> Result<()> {
        if !self.first_commit() || !self.opts.encrypted || self.graph.keyring.is_none() {
            return Ok(());
        }
        self.founding_epoch()?;
        let me = self.author;
        let random = self.opts.random.as_mut().ok_or_else(no_random)?;
        let k = self.graph.keyring.as_ref().unwrap();
        let (_, kid, key) = k.epochs().next().unwrap();
        let (kid, key) = (kid, *key);
        let wrapped = k.wrap_value(0, &key, &me, &mut **random)?;
        let put = |id: String, m: Map| Change {
            collection: KEYS_COLLECTION.into(),
            id,
            op: Op::Put(m),
        };
        changes.push(put(CONFIG_ID.into(), config_value()));
        changes.push(put(wrap_id(0, &kid, &me), wrapped));
        changes.sort_by(|a, b| (&a.collection, &a.id).cmp(&(&b.collection, &b.id)));
        Ok(())
    }

    /// The commit as it travels and is stored: its data changes sealed (`None`: as it is).
    pub(super) fn seal_local(&mut self, commit: &mut Commit) -> Result<Option<Commit>> {
        let Some(k) = self.graph.keyring.as_mut() else {
            return Ok(None);
        };
        if !k.encrypted {
            return Ok(None);
        }
        self.refresh_write_key()?;
        let k = self.graph.keyring.as_mut().unwrap();
        let random = self.opts.random.as_mut().ok_or_else(no_random)?;
        k.seal_commit(commit, &mut **random)
    }

    fn random_key(&mut self) -> Result<[u8; KEY_LEN]> {
        let random = self.opts.random.as_mut().ok_or_else(no_random)?;
        let mut key = [0u8; KEY_LEN];
        random(&mut key);
        Ok(key)
    }

    /// Into `txn`: every epoch key this device holds, wrapped to `to` (a grant in an encrypted
    /// repository: the new member reads the history it is given keys for).
    pub(super) fn wrap_epochs_to(&mut self, to: &PublicKey, txn: &mut Txn) -> Result<()> {
        if !self.is_encrypted() {
            return Ok(());
        }
        self.founding_epoch()?;
        let random = self.opts.random.as_mut().ok_or_else(no_random)?;
        let k = self.graph.keyring.as_ref().unwrap();
        for (epoch, kid, key) in k.epochs() {
            let v = k.wrap_value(epoch, key, to, &mut **random)?;
            txn.put(
                &format!("{KEYS_COLLECTION}/{}", wrap_id(epoch, &kid, to)),
                v,
            )?;
        }
        Ok(())
    }

    /// Into `txn` (a revocation of `revoked`; `None`: the merge of concurrent revocations): a
    /// new epoch, its key wrapped to every other member (and to this device), so the revoked
    /// key can read nothing written after it.
    pub(super) fn new_epoch(&mut self, revoked: Option<&PublicKey>, txn: &mut Txn) -> Result<()> {
        if !self.is_encrypted() {
            return Ok(());
        }
        let mut members: Vec<PublicKey> = self
            .access()
            .members()
            .filter(|(m, r)| {
                Some(m) != revoked && matches!(r, Role::Owner | Role::Writer | Role::Reader)
            })
            .map(|(m, _)| m)
            .collect();
        if !members.contains(&self.author) {
            members.push(self.author);
        }
        let key = self.random_key()?;
        let random = self.opts.random.as_mut().ok_or_else(no_random)?;
        let k = self.graph.keyring.as_ref().unwrap();
        let epoch = match k.latest() {
            None => 0,
            Some(l) => l.checked_add(1).ok_or_else(|| Error::Limit {
                what: "epochs".into(),
                detail: "no epoch follows 2^32 - 1".into(),
            })?,
        };
        let kid = key_id(&key);
        for m in &members {
            let v = k.wrap_value(epoch, &key, m, &mut **random)?;
            txn.put(&format!("{KEYS_COLLECTION}/{}", wrap_id(epoch, &kid, m)), v)?;
        }
        Ok(())
    }

    /// Wrap every epoch key this device holds to every member that lacks one (an owner's
    /// device after an invite was redeemed: the new member can then read). Returns the commit,
    /// `None` when nothing was missing.
    pub fn share_keys(&mut self) -> Result<Option<CommitId>> {
        if !self.is_encrypted() {
            return Ok(None);
        }
        let members: Vec<PublicKey> = self.access().members().map(|(m, _)| m).collect();
        self.warm_collection(KEYS_COLLECTION)?;
        let random = self.opts.random.as_mut().ok_or_else(no_random)?;
        let k = self.graph.keyring.as_ref().unwrap();
        let mut txn = Txn::new();
        for m in &members {
            for (e, kid, key) in k.epochs() {
                let id = wrap_id(e, &kid, m);
                // A wrap of the form before key ids names the one key its epoch then had.
                let legacy = format!("{e:08x}-{}", m.to_hex());
                let state = &self.graph.state;
                if state.get(KEYS_COLLECTION, &id).is_some()
                    || state.get(KEYS_COLLECTION, &legacy).is_some()
                {
                    continue;
                }
                let v = k.wrap_value(e, key, m, &mut **random)?;
                txn.put(&format!("{KEYS_COLLECTION}/{id}"), v)?;
            }
        }
        if txn.is_empty() {
            return Ok(None);
        }
        self.commit(txn)
    }

    /// Apply the commits kept for want of a key that open now that one arrived (§6.8).
    pub(super) fn apply_opened(&mut self) -> Result<()> {
        for (id, index, late) in self.graph.take_opened() {
            self.warm_changes(&late.changes)?;
            self.graph.apply_late(&id, index, late, &mut self.query);
        }
        Ok(())
    }

    /// On an owner's device of an encrypted repository whose access list changed: wrap the
    /// epoch keys to the members that lack them (one commit, synced like any other).
    pub(super) fn share_keys_as_owner(&mut self) -> Result<()> {
        let owner = self.access().role(&self.author) == Some(Role::Owner);
        let holds = self.graph.keyring.as_ref().is_some_and(|k| k.has_keys());
        if owner && self.is_encrypted() && holds {
            // Not a failure of the receive: the next change of the access list tries again.
            let _ = self.share_keys();
        }
        Ok(())
    }

    /// After a receive, on an owner's device that holds keys but none free of a revoked
    /// member (two owners revoked concurrently, each wrapping its new epoch to the member the
    /// other revoked; or a writer's `_keys` item names one): a new epoch, wrapped to the
    /// members (§6.8). Two owners may both start one: neither key was given to a revoked
    /// member, so neither starts another.
    pub(super) fn merge_epochs_as_owner(&mut self) -> Result<()> {
        self.refresh_write_key()?;
        let owner = self.access().role(&self.author) == Some(Role::Owner);
        let holds = self.graph.keyring.as_ref().is_some_and(|k| k.has_keys());
        if owner && holds && self.is_encrypted() && self.epoch().is_none() {
            let mut txn = Txn::new();
            // Not a failure of the receive: the next receive tries again.
            if self.new_epoch(None, &mut txn).is_ok() {
                let _ = self.commit(txn);
            }
        }
        Ok(())
    }

    /// A logged commit's data as this device reads it (history, a migration's older edit).
    pub(super) fn open_logged(&self, commit: &mut Commit) -> Result<()> {
        match self.graph.keyring.as_ref() {
            Some(k) => k.open(commit),
            None => Ok(()),
        }
    }
}
