//! An access list: the merge of a set of counted `_acl` writes (docs/design.md §6.4). No write
//! wins by its clock. Each entry (a member's role, the public switches) keeps the writes to it
//! that no other write to it has in its causal past — one write, or several concurrent ones —
//! and reads as the **least privilege** among them: a revocation beats a concurrent grant,
//! reader beats writer beats owner, a switch is on only if every concurrent write turns it on.
//! Merging is commutative, associative and idempotent, so the access list of a commit's causal
//! past is the merge of its parents' access lists, whatever the order.

use super::invite::{InviteDef, InviteId};
use super::parse::AclWrite;
use super::role::Role;
use crate::commit::{CommitId, PublicKey};
use crate::schema::{SchemaWrite, StoredSchema};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// One write to an entry: the commit that made it, the value, and every write to the same
/// entry in that commit's causal past (the writes it supersedes, transitively).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Write<T> {
    pub id: CommitId,
    pub value: T,
    pub covers: Arc<BTreeSet<CommitId>>,
}

/// The writes to one entry that no other write to it supersedes, in commit-id order (empty:
/// never written).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Register<T> {
    pub heads: Vec<Write<T>>,
}

impl<T> Default for Register<T> {
    fn default() -> Self {
        Register { heads: Vec::new() }
    }
}

impl<T: Clone + Eq> Register<T> {
    /// Merge the writes of another view of the same entry: keep those no write of either side
    /// has in its past.
    pub(crate) fn join(&mut self, other: &Register<T>) {
        if self.heads == other.heads {
            return;
        }
        for w in &other.heads {
            if !self.heads.iter().any(|h| h.id == w.id) {
                self.heads.push(w.clone());
            }
        }
        let all = self.heads.clone();
        self.heads
            .retain(|w| !all.iter().any(|h| h.covers.contains(&w.id)));
        self.heads.sort_by_key(|w| w.id);
    }

    /// A write by commit `id`, which has every current head in its past: it supersedes them.
    pub(crate) fn write(&mut self, id: CommitId, value: T) {
        let mut covers = BTreeSet::new();
        for h in &self.heads {
            covers.insert(h.id);
            covers.extend(h.covers.iter().copied());
        }
        // A commit that writes an entry twice: its last write stands.
        covers.remove(&id);
        self.heads = vec![Write {
            id,
            value,
            covers: Arc::new(covers),
        }];
    }
}

/// An invite as an access list knows it: its definition's uncovered writes (`None`: revoked)
/// and every redemption merged in, by commit id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct InviteState {
    pub(crate) def: Register<Option<InviteDef>>,
    pub(crate) redeemed: BTreeMap<CommitId, Redemption>,
}

/// One redemption: who, for which role, under a definition allowing `uses`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Redemption {
    pub key: PublicKey,
    pub role: Role,
    pub uses: u32,
}

/// Where an invite stands in an access list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InviteStatus {
    Open(InviteDef),
    Revoked,
}

impl InviteState {
    /// The invite's definition: revoked if any uncovered write revokes it (least privilege),
    /// otherwise the definition of the least commit id among concurrent writes.
    pub fn status(&self) -> Option<InviteStatus> {
        let heads = &self.def.heads;
        if heads.is_empty() {
            return None;
        }
        if heads.iter().any(|w| w.value.is_none()) {
            return Some(InviteStatus::Revoked);
        }
        heads[0].value.map(InviteStatus::Open)
    }

    /// The redemptions that count: ordered by commit id, the one of rank `i` (from 0) counts
    /// iff `i` is below the uses of the definition it was judged against. Two concurrent
    /// redemptions of a single-use invite: the least commit id counts, the other gives no
    /// role, whichever replica merges them and in whatever order.
    pub fn effective(&self) -> impl Iterator<Item = (&CommitId, &Redemption)> + '_ {
        self.redeemed
            .iter()
            .enumerate()
            .filter(|(i, (_, r))| *i < r.uses as usize)
            .map(|(_, e)| e)
    }

    pub(crate) fn join(&mut self, other: &InviteState) {
        self.def.join(&other.def);
        for (k, v) in &other.redeemed {
            self.redeemed.insert(*k, *v);
        }
    }
}

/// An access list (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Acl {
    /// The key whose root made it owner: the repository is owned and the rules apply.
    /// `None`: everyone may read and write and nobody may change the list.
    pub(crate) founder: Option<PublicKey>,
    /// Each member's uncovered writes: a role, or `None` for a revocation.
    pub(crate) members: BTreeMap<PublicKey, Register<Option<Role>>>,
    /// The uncovered writes of the public switches (read, write).
    pub(crate) public: Register<(bool, bool)>,
    /// Each collection's stored schema (`_schema/<collection>`, docs/design.md §2.4): its
    /// uncovered writes, read as the one with the highest version (then commit id).
    pub(crate) schemas: BTreeMap<String, Register<StoredSchema>>,
    /// Every invite (`_acl/invite-<id>`) and its counted redemptions (§6.4 "Invites").
    pub(crate) invites: BTreeMap<InviteId, InviteState>,
}

impl Acl {
    /// Whether the repository has an owner (its root claimed one).
    pub fn owned(&self) -> bool {
        self.founder.is_some()
    }

    /// The key that founded an owned repository: only it may change its own role.
    pub fn founder(&self) -> Option<PublicKey> {
        self.founder
    }

    /// `key`'s role, if it has one: the least among concurrent writes.
    /// A member written by an owner has the role of that entry (so an owner's revocation
    /// takes a redeemed role away); a key with no such entry has the highest role its counted
    /// redemptions give it.
    pub fn role(&self, key: &PublicKey) -> Option<Role> {
        match self.members.get(key) {
            Some(r) if !r.heads.is_empty() => r.heads.iter().map(|w| w.value).min().flatten(),
            _ => self.redeemed_role(key),
        }
    }

    /// Whether an owner wrote `key`'s member entry (a grant or a revocation): then that entry,
    /// not a redemption, says its role.
    pub fn entry_written(&self, key: &PublicKey) -> bool {
        self.members.get(key).is_some_and(|r| !r.heads.is_empty())
    }

    fn redeemed_role(&self, key: &PublicKey) -> Option<Role> {
        self.invites
            .values()
            .flat_map(|s| s.effective())
            .filter(|(_, r)| r.key == *key)
            .map(|(_, r)| r.role)
            .max()
    }

    /// The invite `id` as this list knows it.
    pub fn invite(&self, id: &InviteId) -> Option<&InviteState> {
        self.invites.get(id)
    }

    /// Every invite, in id order.
    pub fn invites(&self) -> impl Iterator<Item = (&InviteId, &InviteState)> + '_ {
        self.invites.iter()
    }

    /// Whether `key`'s entry has concurrent writes that disagree (the least one counts).
    pub fn contested(&self, key: &PublicKey) -> bool {
        self.members.get(key).is_some_and(|r| {
            r.heads
                .first()
                .is_some_and(|f| r.heads.iter().any(|w| w.value != f.value))
        })
    }

    /// The public switches: (anyone may read, anyone may write); each is on only if every
    /// concurrent write turns it on.
    pub fn public(&self) -> (bool, bool) {
        let h = &self.public.heads;
        if h.is_empty() {
            return (false, false);
        }
        (h.iter().all(|w| w.value.0), h.iter().all(|w| w.value.1))
    }

    /// The members that hold a role, in key order.
    pub fn members(&self) -> impl Iterator<Item = (PublicKey, Role)> + '_ {
        let mut keys: std::collections::BTreeSet<PublicKey> =
            self.members.keys().copied().collect();
        for s in self.invites.values() {
            keys.extend(s.redeemed.values().map(|r| r.key));
        }
        keys.into_iter()
            .filter_map(|k| self.role(&k).map(|r| (k, r)))
    }

    /// Number of owners.
    pub fn owners(&self) -> usize {
        self.members().filter(|(_, r)| *r == Role::Owner).count()
    }

    /// May `key` read (`None`: an anonymous session)?
    pub fn can_read(&self, key: Option<&PublicKey>) -> bool {
        !self.owned() || self.public().0 || key.is_some_and(|k| self.role(k).is_some())
    }

    /// May `author` change items (not the access list)?
    pub fn can_write(&self, author: &PublicKey) -> bool {
        !self.owned() || self.public().1 || self.role(author) >= Some(Role::Writer)
    }

    /// May `author` change the access list?
    pub fn can_administer(&self, author: &PublicKey) -> bool {
        self.owned() && self.role(author) == Some(Role::Owner)
    }

    /// Merge `other` into this list.
    pub fn join(&mut self, other: &Acl) {
        if self.founder.is_none() {
            self.founder = other.founder;
        }
        for (k, r) in &other.members {
            match self.members.get_mut(k) {
                Some(mine) => mine.join(r),
                None => {
                    self.members.insert(*k, r.clone());
                }
            }
        }
        self.public.join(&other.public);
        for (i, st) in &other.invites {
            match self.invites.get_mut(i) {
                Some(mine) => mine.join(st),
                None => {
                    self.invites.insert(*i, st.clone());
                }
            }
        }
        for (c, r) in &other.schemas {
            match self.schemas.get_mut(c) {
                Some(mine) => mine.join(r),
                None => {
                    self.schemas.insert(c.clone(), r.clone());
                }
            }
        }
    }

    /// Apply the `_schema` writes of commit `id`, whose causal past this list is.
    pub(crate) fn apply_schemas(&mut self, id: CommitId, writes: &[SchemaWrite]) {
        for w in writes {
            let reg = self.schemas.entry(w.collection.clone()).or_default();
            reg.write(id, w.schema.clone());
        }
    }

    /// `collection`'s stored schema: among concurrent writes, the highest version, then the
    /// greatest commit id (no stamp decides, as for the access list).
    pub fn stored_schema(&self, collection: &str) -> Option<&StoredSchema> {
        let r = self.schemas.get(collection)?;
        r.heads
            .iter()
            .max_by_key(|w| (w.value.version, w.id))
            .map(|w| &w.value)
    }

    /// Every collection's stored schema, in name order.
    pub fn stored_schemas(&self) -> impl Iterator<Item = (&str, &StoredSchema)> + '_ {
        self.schemas
            .keys()
            .filter_map(|c| self.stored_schema(c).map(|s| (c.as_str(), s)))
    }

    /// The repository's schema version: the highest version of its stored schemas (0: none).
    pub fn schema_version(&self) -> u32 {
        self.stored_schemas()
            .map(|(_, s)| s.version)
            .max()
            .unwrap_or(0)
    }

    /// Apply the `_acl` writes of commit `id`, whose causal past this list is.
    pub(crate) fn apply(&mut self, id: CommitId, writes: &[AclWrite]) {
        for w in writes {
            match *w {
                AclWrite::Member(k, role) => self.members.entry(k).or_default().write(id, role),
                AclWrite::Public { read, write } => self.public.write(id, (read, write)),
                AclWrite::Invite(i, def) => self.invites.entry(i).or_default().def.write(id, def),
                AclWrite::Redeem {
                    key, role, invite, ..
                } => {
                    let st = self.invites.entry(invite).or_default();
                    let uses = match st.status() {
                        Some(InviteStatus::Open(d)) => d.uses,
                        _ => 0,
                    };
                    st.redeemed.insert(id, Redemption { key, role, uses });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commit::Identity;

    /// A random history of `_acl` writes (each commit on 1–2 earlier ones, writing one of two
    /// entries); returns the access list after each commit.
    fn history(seed: u64, n: usize, keys: &[PublicKey]) -> Vec<Acl> {
        let mut x = seed;
        let mut next = move |m: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        let mut after: Vec<Acl> = Vec::new();
        for i in 0..n {
            let mut past = Acl::default();
            for _ in 0..(if i == 0 { 0 } else { 1 + next(2) }) {
                past.join(&after[next(i as u64) as usize]);
            }
            let mut id = [0u8; 32];
            id[..8].copy_from_slice(&(i as u64).to_le_bytes());
            let role = [
                None,
                Some(Role::Reader),
                Some(Role::Writer),
                Some(Role::Owner),
            ][next(4) as usize];
            let w = if next(5) == 0 {
                AclWrite::Public {
                    read: next(2) == 0,
                    write: next(2) == 0,
                }
            } else {
                AclWrite::Member(keys[next(keys.len() as u64) as usize], role)
            };
            if next(5) == 0 {
                // An invite (one of two), its revocation, or a redemption of it.
                let inv = [[1u8; 16], [2u8; 16]][next(2) as usize];
                let w = match next(3) {
                    0 => AclWrite::Invite(inv, None),
                    1 => AclWrite::Invite(
                        inv,
                        Some(InviteDef {
                            key: keys[0],
                            role: Role::Writer,
                            expires: 10,
                            uses: 1 + next(2) as u32,
                        }),
                    ),
                    _ => AclWrite::Redeem {
                        key: keys[next(keys.len() as u64) as usize],
                        role: Role::Reader,
                        invite: inv,
                        proof: crate::commit::Signature([0; 96]),
                    },
                };
                past.apply(CommitId(id), &[w]);
            } else if next(4) == 0 {
                // A stored schema of one of two collections, at a version from 1 to 3.
                let mut m = crate::value::Map::new();
                m.insert(
                    "version".into(),
                    crate::value::Value::from(1 + next(3) as i64),
                );
                let collection = ["a", "b"][next(2) as usize].to_string();
                let schema = StoredSchema::from_map(&collection, &m).unwrap();
                past.apply_schemas(CommitId(id), &[SchemaWrite { collection, schema }]);
            } else {
                past.apply(CommitId(id), &[w]);
            }
            after.push(past);
        }
        after
    }

    #[test]
    fn the_merge_is_commutative_associative_and_idempotent() {
        let keys: Vec<PublicKey> = (1..=2u8)
            .map(|n| Identity::from_entropy(&[n; 48]).public())
            .collect();
        for seed in 0..40 {
            let lists = history(seed, 30, &keys);
            let j = |a: &Acl, b: &Acl| {
                let mut x = a.clone();
                x.join(b);
                x
            };
            for (i, a) in lists.iter().enumerate() {
                let b = &lists[(i * 7 + 3) % lists.len()];
                let c = &lists[(i * 13 + 5) % lists.len()];
                assert_eq!(j(a, b), j(b, a), "seed {seed}");
                assert_eq!(j(&j(a, b), c), j(a, &j(b, c)), "seed {seed}");
                assert_eq!(j(a, a), *a, "seed {seed}");
                // Joining again changes nothing.
                assert_eq!(j(&j(a, b), b), j(a, b), "seed {seed}");
                // The stored schemas read the same whichever way the lists were merged.
                let (ab, ba) = (j(a, b), j(b, a));
                let read = |x: &Acl| -> Vec<(String, u32)> {
                    x.stored_schemas()
                        .map(|(c, s)| (c.to_string(), s.version))
                        .collect()
                };
                assert_eq!(read(&ab), read(&ba), "seed {seed}");
                // So do roles given by redemptions.
                for k in &keys {
                    assert_eq!(ab.role(k), ba.role(k), "seed {seed}");
                }
            }
        }
    }

    #[test]
    fn a_write_supersedes_its_past_and_concurrent_writes_give_the_least_privilege() {
        let k = Identity::from_entropy(&[1; 48]).public();
        let id = |n: u8| CommitId([n; 32]);
        let mut base = Acl::default();
        base.apply(id(1), &[AclWrite::Member(k, Some(Role::Owner))]);
        let (mut grant, mut revoke) = (base.clone(), base.clone());
        grant.apply(id(2), &[AclWrite::Member(k, Some(Role::Owner))]);
        revoke.apply(id(3), &[AclWrite::Member(k, None)]);
        let mut both = grant.clone();
        both.join(&revoke);
        assert_eq!(both.role(&k), None);
        assert!(both.contested(&k));
        // A grant that has the revocation in its past wins over it.
        let mut regrant = both.clone();
        regrant.apply(id(4), &[AclWrite::Member(k, Some(Role::Writer))]);
        regrant.join(&grant);
        regrant.join(&revoke);
        assert_eq!(regrant.role(&k), Some(Role::Writer));
        assert!(!regrant.contested(&k));
    }
}
