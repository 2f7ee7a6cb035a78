//! Secondary indexes and the snapshot (docs/design.md §8, "Indexes"): which built indexes a
//! snapshot holds, and restoring a collection's declared indexes from the snapshot instead of
//! building them from every item — so that a query after an open reads the index and only the
//! blocks of its rows.
//!
//! A persisted index describes the snapshot's items. It is used only while its collection has
//! not changed since that snapshot (`Collection::touched`: a commit replayed from the log's
//! tail, or any write after the open, sets it); otherwise the index is built from the items,
//! as without a snapshot.

use super::Repo;
use crate::query::{Index, QueryEngine, Restorer};
use crate::state::State;
use crate::store::snapshot::{self, ColdIndexes, Persist};
use crate::store::Storage;
use std::collections::BTreeMap;

impl<S: Storage> Repo<S> {
    /// Restore `collection`'s declared indexes from the snapshot when it holds every one of
    /// them and the collection has not changed since. Anything that fails (a block damaged, a
    /// path missing) leaves them to be built from the items on first use.
    pub(super) fn restore_indexes(&mut self, collection: &str) {
        let Some(paths) = self
            .query
            .unbuilt_indexes(collection)
            .map(<[String]>::to_vec)
        else {
            return;
        };
        let unchanged = self
            .graph
            .state
            .collection(collection)
            .is_some_and(|c| !c.touched());
        let (Some(list), Some(src)) = (self.snap_indexes.get(collection), &self.snap) else {
            return;
        };
        if !unchanged {
            return;
        }
        let mut built = BTreeMap::new();
        for p in paths {
            let Some(ci) = list.iter().find(|ci| ci.path == p) else {
                return;
            };
            let mut r = Restorer::new();
            if snapshot::load_index(src, ci, &mut r).is_err() {
                return;
            }
            built.insert(p.clone(), Index::restored(&p, r, ci.stats));
        }
        self.query.install_indexes(collection, built);
    }
}

/// What the next snapshot holds: every built index; appended, also the file's indexes (`kept`)
/// of collections unchanged since and not built now (their blocks stay where they are).
pub(super) fn to_persist<'a>(
    query: &'a QueryEngine,
    state: &'a State,
    kept: &'a ColdIndexes,
    append: bool,
) -> Vec<Persist<'a>> {
    let mut out: Vec<Persist<'a>> = query
        .built_indexes()
        .map(|(collection, path, index)| Persist::Built {
            collection,
            path,
            index,
        })
        .collect();
    if !append {
        return out;
    }
    // Listed after the built ones: for an index both built and kept, the snapshot holds the
    // built one (the encoder keeps the first of equal (collection, path)).
    for (c, list) in kept {
        if state.collection(c).is_some_and(|x| !x.touched()) {
            out.extend(list.iter().map(|index| Persist::Kept {
                collection: c,
                index,
            }));
        }
    }
    out
}

/// The first index of the snapshot `d` (in `src`) that differs from one built from the items of
/// `shadow` (a replay of the log prefix the snapshot covers), or that does not read back:
/// `verify()`'s check of the persisted indexes.
pub(super) fn snapshot_index_differs<S: Storage>(
    d: &snapshot::SnapshotData,
    src: &S,
    shadow: &crate::graph::Graph,
) -> Option<String> {
    for (c, list) in &d.indexes {
        for ci in list {
            let mut r = Restorer::new();
            let read = snapshot::load_index(src, ci, &mut r);
            let same = read.is_ok()
                && Index::restored(&ci.path, r, ci.stats)
                    == Index::build(&ci.path, shadow.state.collection(c));
            if !same {
                return Some(format!("{c}.{}", ci.path));
            }
        }
    }
    None
}
