//! Sorted secondary indexes.
//!
//! An index on a path holds one entry `(key, id)` per visible item, where `key` is the value at
//! the path or [`IKey::Missing`] (sorting first), ordered by [`Value::total_cmp`] then id. It
//! serves equality, ranges, prefixes and sort order. For sets (and lists) it also holds one
//! `(element, id)` entry per string element, serving `contains`. The entries and their order
//! are `entry.rs`; building an index is `index_build.rs`.

use super::entry::{elements, Entry, IKey, NumStats};
use super::eval::CPath;
use super::index_build;
use super::lazy::{BlockLoader, Entries};
use crate::cold::ColdIndex;
use crate::error::Result;
use crate::state::Collection;
use crate::store::snapshot::{ElemEntry, IndexEntries, Piece, ValueEntry};
use crate::value::{Map, Name, Value};
use std::ops::Bound;

/// One secondary index.
#[derive(Debug, Clone)]
pub(crate) struct Index {
    pub path: String,
    cpath: CPath,
    /// One entry per visible item: the whole value (or missing) at the path.
    pub values: Entries,
    /// One entry per string element of a set or list at the path.
    pub elems: Entries,
    /// Running numeric stats over the values (for aggregates without a scan).
    pub stats: NumStats,
}

impl PartialEq for Index {
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path
            && self.values == other.values
            && self.elems == other.elems
            && self.stats == other.stats
    }
}

impl Index {
    /// The index `ci` of a snapshot, none of its blocks read yet: a read notes the blocks it
    /// needs (`lazy.rs`). Fails when the directory's keys are not in order.
    pub fn lazy(ci: &ColdIndex) -> Result<Index> {
        let (nums, int_sum, non_int) = ci.stats;
        Ok(Index {
            path: ci.path.clone(),
            cpath: CPath::new(&ci.path),
            values: Entries::cold(&ci.values, true)?,
            elems: Entries::cold(&ci.elems, false)?,
            stats: NumStats {
                nums,
                int_sum,
                non_int,
            },
        })
    }

    /// Whether every block is read.
    pub fn is_hot(&self) -> bool {
        self.values.is_hot() && self.elems.is_hot()
    }

    /// Whether a read noted blocks still to read.
    pub fn has_notes(&self) -> bool {
        self.values.has_notes() || self.elems.has_notes()
    }

    pub fn clear_notes(&self) {
        self.values.clear_notes();
        self.elems.clear_notes();
    }

    /// Note the blocks whose kept writes a snapshot should no longer carry (`Entries::note_heavy`).
    pub fn note_heavy(&self) {
        self.values.note_heavy();
        self.elems.note_heavy();
    }

    /// Bytes of the snapshot's blocks not read yet.
    pub fn cold_bytes(&self) -> u64 {
        self.values.cold_bytes() + self.elems.cold_bytes()
    }

    /// Read the noted blocks (all of them when `all`); whether any was read.
    pub fn materialize(&mut self, all: bool, load: &mut BlockLoader<'_>) -> Result<bool> {
        let v = self.values.materialize(all, load)?;
        let e = self.elems.materialize(all, load)?;
        Ok(v || e)
    }

    /// The index of `path` over the visible items of `coll` (`index_build.rs`).
    pub fn build(path: &str, coll: Option<&Collection>) -> Index {
        let cpath = CPath::new(path);
        let built = coll.map(|c| {
            index_build::numeric(&cpath, c).unwrap_or_else(|| index_build::general(&cpath, c))
        });
        let (values, elems, stats) = built.unwrap_or_default();
        Index {
            path: path.to_string(),
            cpath,
            values: Entries::hot(values),
            elems: Entries::hot(elems),
            stats,
        }
    }

    fn add(&mut self, id: &str, v: Option<&Value>) {
        self.stats.update(v, true);
        if let Some(v) = v {
            for e in elements(v) {
                self.elems
                    .insert(Entry::new(IKey::Val(Value::String(Name::new(e))), id));
            }
        }
        self.values.insert(Entry::new(
            v.map_or(IKey::Missing, |v| IKey::Val(v.clone())),
            id,
        ));
    }

    fn remove(&mut self, id: &str, v: Option<&Value>) {
        self.stats.update(v, false);
        if let Some(v) = v {
            for e in elements(v) {
                self.elems
                    .remove(&Entry::new(IKey::Val(Value::String(Name::new(e))), id));
            }
        }
        self.values.remove(&Entry::new(
            v.map_or(IKey::Missing, |v| IKey::Val(v.clone())),
            id,
        ));
    }

    /// Apply one item's change (`None` = absent or deleted).
    pub fn changed(&mut self, id: &str, old: Option<&Map>, new: Option<&Map>) {
        let ov = old.and_then(|m| self.cpath.get(m));
        let nv = new.and_then(|m| self.cpath.get(m));
        if old.is_some() && new.is_some() && ov == nv {
            return;
        }
        if old.is_some() {
            self.remove(id, ov);
        }
        if new.is_some() {
            self.add(id, nv);
        }
    }

    /// The value-entry range holding sets (they sort last).
    pub fn set_entries(&self) -> impl Iterator<Item = &Entry> {
        self.values.range(
            &Bound::Included(IKey::Val(Value::Set(Default::default()))),
            &Bound::Unbounded,
        )
    }

    /// Describe the first difference from `other` (a rebuilt index), if any.
    pub fn diff(&self, other: &Index) -> Option<String> {
        for (what, a, b) in [
            ("value", &self.values, &other.values),
            ("element", &self.elems, &other.elems),
        ] {
            if a != b {
                let extra = a.all().find(|e| !b.contains(e));
                let missing = b.all().find(|e| !a.contains(e));
                return Some(format!(
                    "{} {what} entries maintained, {} expected; first extra: {:?}; first missing: {:?}",
                    a.len(),
                    b.len(),
                    extra.map(|e| (e.id(), e.key.as_opt())),
                    missing.map(|e| (e.id(), e.key.as_opt())),
                ));
            }
        }
        if self.stats != other.stats {
            return Some(format!(
                "numeric stats {:?} maintained, {:?} expected",
                self.stats, other.stats
            ));
        }
        None
    }
}

/// What a snapshot stores of an index (`store/snapshot/indexes.rs`).
impl IndexEntries for Index {
    fn stats(&self) -> (u64, i128, u64) {
        (self.stats.nums, self.stats.int_sum, self.stats.non_int)
    }
    fn values(&self) -> Vec<Piece<'_, ValueEntry<'_>>> {
        self.values.snapshot_pieces(|e| (e.key.as_opt(), e.id()))
    }
    fn elems(&self) -> Vec<Piece<'_, ElemEntry<'_>>> {
        // Element entries hold strings (`Index::add`).
        self.elems.snapshot_pieces(|e| match &e.key {
            IKey::Val(Value::String(s)) => (s.as_str(), e.id()),
            _ => ("", e.id()),
        })
    }
}
