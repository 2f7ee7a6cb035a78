//! Items not loaded yet: after an open from a snapshot, a collection's items stay in the
//! snapshot file's item blocks (docs/design.md §8) until something needs them. A collection
//! holds the index of its unloaded blocks ([`ColdBlock`]); the repository loads a block before
//! it reads or writes a key the block may hold, and all of them before a scan
//! (`store/snapshot/blocks.rs` decodes them, `repo/warm.rs` decides when).
//!
//! Invariant: the ranges `[first, last]` of a collection's cold blocks are disjoint, ascending,
//! and hold no key of the collection's loaded items; an item of the collection is either loaded
//! or inside exactly one cold block's range.
//!
//! A loaded block stays listed as *clean* ([`CleanBlocks`]) until a change touches a key in its
//! range: an appended snapshot lists a clean block where it is instead of writing its items
//! again, so a snapshot's cost follows what changed, not what was read (docs/design.md §8,
//! "When written").

use crate::item::ItemId;
use crate::value::Name;
use std::collections::BTreeMap;
use std::ops::Bound;

/// Where one block of a collection's items is in the snapshot file, and what it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct ColdBlock {
    /// The smallest and largest id of the block's items.
    pub first: ItemId,
    pub last: ItemId,
    /// Byte range in the snapshot file.
    pub offset: u64,
    pub len: u32,
    /// Items in the block, and how many of them are visible (not deleted).
    pub count: u32,
    pub live: u32,
    /// Checksum of the block's bytes (`hashing::block_sum`).
    pub crc: u32,
}

impl ColdBlock {
    /// Whether `id` falls inside the block's range (the block holds it if it exists).
    pub fn covers(&self, id: &str) -> bool {
        self.first.as_str() <= id && id <= self.last.as_str()
    }
}

/// What a snapshot's items refer to by index, kept while any block is cold: the field-name
/// table, and the number of commits the snapshot's table held (item stamps and history
/// indices below it are valid).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ColdTables {
    pub names: Vec<Name>,
    pub commits: usize,
    /// Log bytes the snapshot covers: its references to large values lie inside them.
    pub log_len: u64,
}

/// A collection's cold blocks, in id order. A block leaves when it is loaded: a read of one
/// key takes its block out in O(log n), not by shifting the blocks after it (a run of random
/// reads over a large collection loads blocks one by one). Loaded blocks stay in place,
/// flagged, until they are half of the list, then the list is compacted.
#[derive(Debug, Clone, Default)]
pub struct ColdBlocks {
    /// Sorted and disjoint; those flagged in `loaded` are no longer cold.
    all: Vec<ColdBlock>,
    loaded: Vec<bool>,
    /// Blocks still cold.
    left: usize,
}

/// Where a cold block is in a collection's [`ColdBlocks`], until the next change of the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockAt(usize);

impl ColdBlocks {
    /// `blocks` sorted and disjoint (the snapshot's directory checks it).
    pub fn new(blocks: Vec<ColdBlock>) -> ColdBlocks {
        ColdBlocks {
            loaded: vec![false; blocks.len()],
            left: blocks.len(),
            all: blocks,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.left == 0
    }

    /// Blocks still cold.
    pub fn len(&self) -> usize {
        self.left
    }

    /// The cold blocks, in id order.
    pub fn iter(&self) -> impl Iterator<Item = &ColdBlock> {
        let flags = self.loaded.iter();
        self.all
            .iter()
            .zip(flags)
            .filter(|(_, l)| !**l)
            .map(|(b, _)| b)
    }

    /// The cold block whose range covers `id`, if any.
    pub fn of(&self, id: &str) -> Option<BlockAt> {
        let i = self.all.partition_point(|b| b.last.as_str() < id);
        (i < self.all.len() && !self.loaded[i] && self.all[i].covers(id)).then_some(BlockAt(i))
    }

    pub fn get(&self, at: BlockAt) -> &ColdBlock {
        &self.all[at.0]
    }

    /// Block `at` was loaded: it is no longer cold.
    pub fn take(&mut self, at: BlockAt) {
        debug_assert!(!self.loaded[at.0], "a block loaded twice");
        self.loaded[at.0] = true;
        self.left -= 1;
        if self.left * 2 < self.all.len() {
            self.compact();
        }
    }

    /// Every block was loaded.
    pub fn take_all(&mut self) {
        *self = ColdBlocks::default();
    }

    /// The cold blocks moved in the file: `to(offset)` is each one's new offset.
    pub fn relocate(&mut self, to: &dyn Fn(u64) -> u64) {
        for (b, loaded) in self.all.iter_mut().zip(&self.loaded) {
            if !loaded {
                b.offset = to(b.offset);
            }
        }
    }

    fn compact(&mut self) {
        let mut flags = self.loaded.iter();
        self.all.retain(|_| !flags.next().unwrap());
        self.loaded = vec![false; self.all.len()];
    }
}

/// Equal when the same blocks are cold.
impl PartialEq for ColdBlocks {
    fn eq(&self, other: &ColdBlocks) -> bool {
        self.left == other.left && self.iter().eq(other.iter())
    }
}

/// A collection's loaded blocks whose items no change has touched since they were loaded or
/// written: their bytes in the snapshot file still hold exactly those items. Keyed by first id;
/// ranges disjoint, and disjoint from the cold blocks'.
#[derive(Debug, Clone, Default)]
pub struct CleanBlocks(BTreeMap<ItemId, ColdBlock>);

impl CleanBlocks {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// A block was loaded: its items are in memory and in the file alike.
    pub fn insert(&mut self, b: ColdBlock) {
        self.0.insert(b.first.clone(), b);
    }

    /// A change is about to touch `id`: the block whose range covers it (if any) no longer
    /// holds what is in memory (a new key inside a block's range counts as a change of it).
    pub fn dirty(&mut self, id: &str) {
        if self.0.is_empty() {
            return;
        }
        let upto = (Bound::Unbounded, Bound::Included(id));
        let hit = self
            .0
            .range::<str, (Bound<&str>, Bound<&str>)>(upto)
            .next_back();
        if let Some((first, _)) = hit.filter(|(_, b)| b.covers(id)) {
            let first = first.clone();
            self.0.remove(&first);
        }
    }

    /// The clean blocks, in id order.
    pub fn iter(&self) -> impl Iterator<Item = &ColdBlock> {
        self.0.values()
    }

    /// Bytes of the snapshot file they occupy.
    pub fn bytes(&self) -> u64 {
        self.0.values().map(|b| u64::from(b.len)).sum()
    }

    /// The blocks moved in the file: `to(offset)` is each block's new offset.
    pub fn relocate(&mut self, to: &dyn Fn(u64) -> u64) {
        for b in self.0.values_mut() {
            b.offset = to(b.offset);
        }
    }

    /// After a snapshot was written: exactly `blocks` hold loaded items unchanged.
    pub fn replace(&mut self, blocks: impl IntoIterator<Item = ColdBlock>) {
        self.0 = blocks.into_iter().map(|b| (b.first.clone(), b)).collect();
    }
}

/// One block of a persisted index's entries (docs/design.md §8, "Indexes").
#[derive(Debug, Clone, PartialEq)]
pub struct IndexBlock {
    pub offset: u64,
    pub len: u32,
    /// Entries in the block.
    pub count: u32,
    pub crc: u32,
    /// The block's first and last entries, encoded as in the block (since version 6): a
    /// query reads only the blocks whose range it needs (`query/lazy.rs`).
    pub first: Box<[u8]>,
    pub last: Box<[u8]>,
    /// Writes to the block's range made after it was written, in order (since version 9):
    /// each entry encoded as in the block, inserted (`true`) or removed. Applied when the
    /// block is read, so a snapshot keeps a written index without reading its blocks.
    pub pending: Vec<(Box<[u8]>, bool)>,
}

impl IndexBlock {
    /// Entries once its kept writes are applied: the block's, plus inserts, minus removals
    /// (`None` if the removals outnumber them: a damaged directory).
    pub fn entries(&self) -> Option<u64> {
        let ins = self.pending.iter().filter(|(_, i)| *i).count() as u64;
        let rem = self.pending.len() as u64 - ins;
        (u64::from(self.count) + ins).checked_sub(rem)
    }
}

/// A secondary index as a snapshot holds it: its path, its numeric stats and where its value
/// and element entries are. Valid for the snapshot's items: the repository uses it only while
/// its collection has not changed since (`Collection::touched`).
#[derive(Debug, Clone, PartialEq)]
pub struct ColdIndex {
    pub path: String,
    /// Number-valued items, exact sum of the integral ones, numbers that are not integers.
    pub stats: (u64, i128, u64),
    pub values: Vec<IndexBlock>,
    pub elems: Vec<IndexBlock>,
}

impl ColdIndex {
    /// Value entries: one per visible item.
    pub fn value_count(&self) -> Option<u64> {
        self.values.iter().map(IndexBlock::entries).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks(n: u32) -> Vec<ColdBlock> {
        (0..n)
            .map(|i| ColdBlock {
                first: ItemId::from(format!("k{:04}", 10 * i).as_str()),
                last: ItemId::from(format!("k{:04}", 10 * i + 5).as_str()),
                offset: u64::from(i) * 100,
                len: 100,
                count: 6,
                live: 6,
                crc: i,
            })
            .collect()
    }

    #[test]
    fn blocks_taken_in_any_order_leave_the_others_findable() {
        let all = blocks(50);
        let mut cold = ColdBlocks::new(all.clone());
        // A full-period walk over 0..50 (17 is coprime to 50): compactions happen on the way.
        for (n, i) in (0..50u32).map(|j| (j * 17) % 50).enumerate() {
            let id = format!("k{:04}", 10 * i + 3);
            let at = cold.of(&id).expect("a cold block covers it");
            assert_eq!(cold.get(at).crc, i);
            assert!(cold.of(&format!("k{:04}", 10 * i + 7)).is_none(), "a gap");
            cold.take(at);
            assert!(cold.of(&id).is_none(), "taken");
            assert_eq!(cold.len(), 50 - n - 1);
            let left: Vec<u32> = cold.iter().map(|b| b.crc).collect();
            let want: Vec<u32> = (0..50)
                .filter(|k| !(0..=n as u32).any(|m| (m * 17) % 50 == *k))
                .collect();
            assert_eq!(left, want);
            for k in &want {
                let at = cold.of(&format!("k{:04}", 10 * k)).unwrap();
                assert_eq!(cold.get(at).crc, *k);
            }
        }
        assert!(cold.is_empty());
        assert_eq!(cold, ColdBlocks::default());
    }
}
