//! The access list after each commit, interned: most commits leave the list as their parents
//! had it, so a commit costs one `u32` index into this table.

use super::Acl;
use std::collections::HashMap;
use std::sync::Arc;

/// Interned access lists; index 0 is the empty list.
#[derive(Debug, Clone)]
pub struct AclTable {
    lists: Vec<Arc<Acl>>,
    index: HashMap<Arc<Acl>, u32>,
}

impl Default for AclTable {
    fn default() -> Self {
        let empty = Arc::new(Acl::default());
        AclTable {
            lists: vec![empty.clone()],
            index: HashMap::from([(empty, 0)]),
        }
    }
}

impl PartialEq for AclTable {
    fn eq(&self, other: &Self) -> bool {
        self.lists == other.lists
    }
}

impl AclTable {
    /// The index of `acl`, adding it if new.
    pub fn intern(&mut self, acl: Acl) -> u32 {
        if let Some(&i) = self.index.get(&acl) {
            return i;
        }
        let i = self.lists.len() as u32;
        let a = Arc::new(acl);
        self.lists.push(a.clone());
        self.index.insert(a, i);
        i
    }

    /// The list at index `i` (the empty list for an index out of range).
    pub fn get(&self, i: u32) -> &Acl {
        self.lists.get(i as usize).unwrap_or(&self.lists[0])
    }

    /// The access list of the causal past of a commit whose parents have these indices.
    pub fn past(&self, parents: impl IntoIterator<Item = u32>) -> Acl {
        let mut it = parents.into_iter();
        let Some(first) = it.next() else {
            return Acl::default();
        };
        let mut acl = self.get(first).clone();
        for p in it {
            if p != first {
                acl.join(self.get(p));
            }
        }
        acl
    }

    /// Every list, in index order (snapshots).
    pub fn lists(&self) -> impl Iterator<Item = &Acl> {
        self.lists.iter().map(|a| a.as_ref())
    }

    pub fn len(&self) -> usize {
        self.lists.len()
    }
}
