//! Reads of attachments (docs/design.md §6.7): an item's, and every hash a visible item
//! refers to (what a host keeps of its attachment files; the rest it may reclaim).

use super::Repo;
use crate::attach::{attachments_of, Attachment};
use crate::error::Result;
use crate::key::split_key;
use crate::store::Storage;
use std::collections::BTreeSet;

impl<S: Storage> Repo<S> {
    /// The attachments of the visible item at `key`, by name (empty when it has none or does
    /// not exist).
    pub fn attachments(&mut self, key: &str) -> Result<Vec<(String, Attachment)>> {
        let (c, i) = split_key(key)?;
        self.warm_key(c, i)?;
        Ok(self
            .graph
            .state
            .get(c, i)
            .map(|m| {
                attachments_of(m)
                    .into_iter()
                    .map(|(n, a)| (n.to_owned(), a))
                    .collect()
            })
            .unwrap_or_default())
    }

    /// The hashes every visible item's attachments refer to. History does not keep a file
    /// alive: an attachment detached, replaced, or of a deleted item is not here. Loads every
    /// cold item (a host calls it when it has attachment files to judge, §6.7).
    pub fn attachment_hashes(&mut self) -> Result<BTreeSet<[u8; 32]>> {
        self.warm_all()?;
        let mut out = BTreeSet::new();
        for coll in self.graph.state.collections.values() {
            for (_, m) in coll.iter() {
                out.extend(attachments_of(m).into_iter().map(|(_, a)| a.hash));
            }
        }
        Ok(out)
    }
}
