//! An access list: the merge of a set of `_acl` writes. Merging is commutative, associative and
//! idempotent (per entry the newest stamp wins; `owned` is an or), so the access list of a
//! commit's causal past is the merge of its parents' access lists, whatever the order.

use super::parse::AclWrite;
use super::role::Role;
use crate::commit::{PublicKey, Stamp};
use std::collections::BTreeMap;

/// A value with the stamp of the write that set it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Stamped<T> {
    pub stamp: Stamp,
    pub value: T,
}

impl<T: Copy> Stamped<T> {
    /// Keep the newer of the two.
    fn join(&mut self, other: Stamped<T>) {
        if other.stamp > self.stamp {
            *self = other;
        }
    }
}

/// An access list (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Acl {
    /// The root made its author owner: the rules apply. Otherwise everyone may read and write
    /// and nobody may change the list.
    pub(crate) owned: bool,
    /// Each member's newest write: a role, or `None` once revoked.
    pub(crate) members: BTreeMap<PublicKey, Stamped<Option<Role>>>,
    /// The newest write of the public switches (read, write).
    pub(crate) public: Option<Stamped<(bool, bool)>>,
}

impl Acl {
    /// Whether the repository has an owner (its root claimed one).
    pub fn owned(&self) -> bool {
        self.owned
    }

    /// `key`'s role, if it has one.
    pub fn role(&self, key: &PublicKey) -> Option<Role> {
        self.members.get(key).and_then(|s| s.value)
    }

    /// The public switches: (anyone may read, anyone may write).
    pub fn public(&self) -> (bool, bool) {
        self.public.map_or((false, false), |p| p.value)
    }

    /// The members that hold a role, in key order.
    pub fn members(&self) -> impl Iterator<Item = (PublicKey, Role)> + '_ {
        self.members
            .iter()
            .filter_map(|(k, s)| s.value.map(|r| (*k, r)))
    }

    /// Number of owners.
    pub fn owners(&self) -> usize {
        self.members().filter(|(_, r)| *r == Role::Owner).count()
    }

    /// May `key` read (`None`: an anonymous session)?
    pub fn can_read(&self, key: Option<&PublicKey>) -> bool {
        !self.owned || self.public().0 || key.is_some_and(|k| self.role(k).is_some())
    }

    /// May `author` change items (not the access list)?
    pub fn can_write(&self, author: &PublicKey) -> bool {
        !self.owned || self.public().1 || self.role(author) >= Some(Role::Writer)
    }

    /// May `author` change the access list?
    pub fn can_administer(&self, author: &PublicKey) -> bool {
        self.owned && self.role(author) == Some(Role::Owner)
    }

    /// Merge `other` into this list.
    pub fn join(&mut self, other: &Acl) {
        self.owned |= other.owned;
        for (k, s) in &other.members {
            self.members
                .entry(*k)
                .and_modify(|mine| mine.join(*s))
                .or_insert(*s);
        }
        if let Some(p) = other.public {
            self.join_public(p);
        }
    }

    fn join_public(&mut self, p: Stamped<(bool, bool)>) {
        match &mut self.public {
            Some(mine) => mine.join(p),
            None => self.public = Some(p),
        }
    }

    /// Apply the `_acl` writes of one commit made at `stamp`.
    pub(crate) fn apply(&mut self, stamp: Stamp, writes: &[AclWrite]) {
        for w in writes {
            match *w {
                AclWrite::Member(k, role) => {
                    let s = Stamped { stamp, value: role };
                    self.members
                        .entry(k)
                        .and_modify(|mine| mine.join(s))
                        .or_insert(s);
                }
                AclWrite::Public { read, write } => self.join_public(Stamped {
                    stamp,
                    value: (read, write),
                }),
            }
        }
    }
}
