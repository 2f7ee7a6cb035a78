//! Items not loaded yet: after an open from a snapshot, a collection's items stay in the
//! snapshot file's item blocks (docs/design.md §8) until something needs them. A collection
//! holds the index of its unloaded blocks ([`ColdBlock`]); the repository loads a block before
//! it reads or writes a key the block may hold, and all of them before a scan
//! (`store/snapshot/blocks.rs` decodes them, `repo/warm.rs` decides when).
//!
//! Invariant: the ranges `[first, last]` of a collection's cold blocks are disjoint, ascending,
//! and hold no key of the collection's loaded items; an item of the collection is either loaded
//! or inside exactly one cold block's range.

use crate::state::ItemId;
use crate::value::Name;

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
    /// CRC-32 of the block's bytes.
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
}

/// The index (into `blocks`) of the block whose range covers `id`, if any. `blocks` is sorted
/// and disjoint (the module's invariant).
pub fn block_of(blocks: &[ColdBlock], id: &str) -> Option<usize> {
    let i = blocks.partition_point(|b| b.last.as_str() < id);
    (i < blocks.len() && blocks[i].covers(id)).then_some(i)
}

/// One block of a persisted index's entries (docs/design.md §8, "Indexes").
#[derive(Debug, Clone, PartialEq)]
pub struct IndexBlock {
    pub offset: u64,
    pub len: u32,
    /// Entries in the block.
    pub count: u32,
    pub crc: u32,
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
    pub fn value_count(&self) -> u64 {
        self.values.iter().map(|b| u64::from(b.count)).sum()
    }
}
