//! The query engine's side of indexes restored lazily from a snapshot (`lazy.rs`): which
//! collections' indexes noted blocks to read, reading them, and dropping indexes whose blocks
//! fail (the repository drives it: `repo/indexes.rs`).

use super::index::Index;
use super::lazy::BlockLoader;
use crate::error::Result;
use std::cell::OnceCell;
use std::collections::BTreeMap;

/// The repository's side: which collections' indexes noted blocks, reading them, dropping
/// indexes that fail.
impl super::QueryEngine {
    /// The collection's built indexes, mutable.
    fn built_mut(&mut self, collection: &str) -> Option<&mut BTreeMap<String, Index>> {
        self.indexes.get_mut(collection)?.built.get_mut()
    }

    /// Whether a read of `collection`'s indexes noted blocks of the snapshot to read.
    pub(crate) fn index_notes(&self, collection: &str) -> bool {
        let built = self.indexes.get(collection).and_then(|d| d.built.get());
        built.is_some_and(|m| m.values().any(Index::has_notes))
    }

    pub(crate) fn clear_index_notes(&self, collection: &str) {
        if let Some(m) = self.indexes.get(collection).and_then(|d| d.built.get()) {
            m.values().for_each(Index::clear_notes);
        }
    }

    /// Whether `collection`'s indexes hold blocks of the snapshot not read yet.
    pub(crate) fn indexes_lazy(&self, collection: &str) -> bool {
        let built = self.indexes.get(collection).and_then(|d| d.built.get());
        built.is_some_and(|m| m.values().any(|ix| !ix.is_hot()))
    }

    /// The collections whose indexes hold blocks of the snapshot not read yet.
    pub(crate) fn lazy_collections(&self) -> Vec<String> {
        let lazy = |c: &&String| self.indexes_lazy(c);
        self.indexes.keys().filter(lazy).cloned().collect()
    }

    /// Read the blocks of `collection`'s indexes that reads noted (every one when `all`) with
    /// `load`; whether any was read.
    pub(crate) fn materialize_indexes(
        &mut self,
        collection: &str,
        all: bool,
        load: &mut BlockLoader<'_>,
    ) -> Result<bool> {
        let mut any = false;
        if let Some(m) = self.built_mut(collection) {
            for ix in m.values_mut() {
                any |= ix.materialize(all, load)?;
            }
        }
        Ok(any)
    }

    /// Note the blocks of `collection`'s indexes whose kept writes a snapshot should no
    /// longer carry; whether any was noted.
    pub(crate) fn note_heavy_runs(&self, collection: &str) -> bool {
        let built = self.indexes.get(collection).and_then(|d| d.built.get());
        built
            .into_iter()
            .flat_map(|m| m.values())
            .for_each(Index::note_heavy);
        self.index_notes(collection)
    }

    /// Bytes of the snapshot's blocks `collection`'s indexes have not read yet.
    pub(crate) fn cold_index_bytes(&self, collection: &str) -> u64 {
        let built = self.indexes.get(collection).and_then(|d| d.built.get());
        built
            .into_iter()
            .flat_map(|m| m.values())
            .map(Index::cold_bytes)
            .sum()
    }

    /// Forget `collection`'s indexes: they are built from the items on their next use.
    pub(crate) fn drop_indexes(&mut self, collection: &str) {
        if let Some(d) = self.indexes.get_mut(collection) {
            d.built = OnceCell::new();
        }
    }
}
