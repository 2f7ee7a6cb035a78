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
use crate::cold::IndexBlock;
use crate::error::Result;
use crate::query::{Index, QueryEngine};
use crate::state::State;
use crate::store::snapshot::{self, ColdIndexes, IndexSink, Persist};
use crate::store::Storage;
use std::collections::BTreeMap;

impl<S: Storage> Repo<S> {
    /// Restore `collection`'s declared indexes from the snapshot when it holds every one of
    /// them and the collection has not changed since: lazily, no block read (`query/lazy.rs`;
    /// a read notes the blocks it needs, [`Repo::with_indexes`] reads them). Anything that
    /// fails (keys out of order, a path missing) leaves them to be built from the items on
    /// first use.
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
        let (Some(list), Some(_)) = (self.snap_indexes.get(collection), &self.snap) else {
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
            let Ok(ix) = Index::lazy(ci) else {
                return;
            };
            built.insert(p.clone(), ix);
        }
        self.query.install_indexes(collection, built);
    }

    /// Restore the persisted indexes of the collections `changes` write, before they are
    /// applied: the changes then go into the lazily restored indexes (kept with the blocks
    /// they fall in, `query/lazy.rs`), so the next snapshot holds the indexes instead of
    /// dropping them, and the next session's first query does not build them from every item.
    pub(super) fn restore_written_indexes(&mut self, changes: &[crate::commit::Change]) {
        let mut last: Option<&str> = None;
        for ch in changes {
            if last != Some(ch.collection.as_str()) {
                self.restore_indexes(&ch.collection);
                last = Some(&ch.collection);
            }
        }
    }

    /// Run `f` (a read of `collection`) until it notes no block of a lazily restored index:
    /// the blocks it noted are read and it runs again, so its answer saw every entry it
    /// needed. Each round reads at least one block, or drops the indexes.
    pub(super) fn with_indexes<T>(
        &mut self,
        collection: &str,
        mut f: impl FnMut(&mut Self) -> Result<T>,
    ) -> Result<T> {
        loop {
            self.query.clear_index_notes(collection);
            let r = f(self);
            if !self.query.index_notes(collection) {
                return r;
            }
            self.materialize_indexes(collection, false);
        }
    }

    /// Read the noted blocks (every block when `all`) of `collection`'s lazily restored
    /// indexes. A block that fails its checks, or a round that reads nothing, leaves the
    /// indexes to be built from the items (and the snapshot's indexes of the collection
    /// unused), as a failed restore does.
    pub(super) fn materialize_indexes(&mut self, collection: &str, all: bool) {
        let read = match &self.snap {
            Some(src) => {
                let mut load = |b: &IndexBlock, values: bool, sink: &mut dyn IndexSink| {
                    snapshot::load_index_block(src, b, values, sink)
                };
                self.query.materialize_indexes(collection, all, &mut load)
            }
            None => Ok(false),
        };
        if !matches!(read, Ok(true)) && self.query.indexes_lazy(collection) {
            self.query.drop_indexes(collection);
            self.snap_indexes.remove(collection);
        }
    }

    /// Bytes of the snapshot's index blocks that an appended snapshot would list where they
    /// are (indexes of unchanged collections, not built or still partly in the file): they
    /// count as cold, as items still in their blocks do, when choosing to append.
    pub(super) fn kept_index_bytes(&self) -> u64 {
        let state = &self.graph.state;
        let mut n = 0;
        for (c, list) in &self.snap_indexes {
            let unchanged = state.collection(c).is_some_and(|x| !x.touched());
            if unchanged && (!self.query.indexes_built(c) || self.query.indexes_lazy(c)) {
                let blocks = list.iter().flat_map(|ix| ix.values.iter().chain(&ix.elems));
                n += blocks.map(|b| u64::from(b.len)).sum::<u64>();
            } else if !unchanged {
                // Written since: its blocks not read yet stay, with the writes kept beside.
                n += self.query.cold_index_bytes(c);
            }
        }
        n
    }

    /// Read every lazily restored index whole: before the snapshot file is rewritten or
    /// emptied, and before `verify()` compares them with the items.
    pub(super) fn materialize_all_indexes(&mut self) {
        for c in self.query.lazy_collections() {
            self.materialize_indexes(&c, true);
        }
    }

    /// Before a snapshot is appended: of the lazily restored indexes of collections written
    /// since, read the blocks that keep too many writes (`Entries::note_heavy`); the other
    /// blocks stay where they are in the file, listed with the writes to their ranges, and the
    /// entries read are written as new blocks. Those of unchanged collections stay whole.
    pub(super) fn materialize_touched_indexes(&mut self) {
        for c in self.query.lazy_collections() {
            let state = &self.graph.state;
            let touched = state.collection(&c).is_none_or(|x| x.touched());
            if touched && self.query.note_heavy_runs(&c) {
                self.materialize_indexes(&c, false);
            }
        }
    }
}

/// What the next snapshot holds: every built index read whole; appended, also the file's
/// indexes (`kept`) of collections unchanged since and not built now or still partly in the
/// file's blocks (their blocks stay where they are).
pub(super) fn to_persist<'a>(
    query: &'a QueryEngine,
    state: &'a State,
    kept: &'a ColdIndexes,
    append: bool,
) -> Vec<Persist<'a>> {
    // A lazily restored index of a collection written since is written with its blocks kept
    // where they are (appending only: compacting or rewriting read every index whole first).
    let touched = |c: &str| state.collection(c).is_none_or(|x| x.touched());
    let mut out: Vec<Persist<'a>> = query
        .built_indexes()
        .filter(|(c, _, index)| index.is_hot() || (append && touched(c)))
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
            let mut load = |b: &IndexBlock, values: bool, sink: &mut dyn IndexSink| {
                snapshot::load_index_block(src, b, values, sink)
            };
            let read = Index::lazy(ci).and_then(|mut ix| {
                ix.materialize(true, &mut load)?;
                Ok(ix)
            });
            let same =
                read.is_ok_and(|ix| ix == Index::build(&ci.path, shadow.state.collection(c)));
            if !same {
                return Some(format!("{c}.{}", ci.path));
            }
        }
    }
    None
}
