//! Snapshots (docs/design.md §8): a derived, deletable checkpoint of the commit graph and the
//! materialized state, so opening does not replay all history. Anchored to the log by the
//! offset and checksum of the last frame it covers; a snapshot that does not match its log is
//! ignored.
//!
//! The file: a header, the items of every collection cut into blocks of 4–32 KiB (each with
//! its own checksum), then the meta section (log length and anchor, the commit table, the field-name
//! table, each collection's block directory) and a footer pointing at it. Open reads only the
//! meta section; a block is read when a read, a write or a scan first needs its items
//! (`cold.rs`). `encode.rs` writes the file in one streaming pass through `out.rs` (the index
//! blocks and their directory: `indexes.rs`), `decode.rs` reads the meta section and
//! `blocks.rs` the blocks, one function per section.

mod blocks;
mod commits;
mod decode;
mod encode;
mod indexes;
mod out;
mod scan;

use blocks::decode_cold;
pub use blocks::{load_all, load_changes, load_collection, load_key};
pub use commits::TableSegment;
pub use decode::read;
use decode::{FOOT_LEN, HEAD_LEN};
pub use encode::Written;
pub use indexes::{
    decode_entry as decode_index_entry, encode_elem_entry as encode_index_elem_entry,
    encode_value_entry as encode_index_value_entry, load_block as load_index_block, ColdIndexes,
    ElemEntry, IndexEntries, IndexSink, Persist, Piece, ValueEntry,
};
pub use scan::{scan_field, scan_ids};

use super::log::{probe_frame, HEADER_LEN};
use super::storage::Storage;
use crate::commit::{PublicKey, Stamp};
use crate::error::Result;
use crate::graph::{CommitInfo, Graph};
use crate::item::{Item, ItemId};
use crate::state::State;

pub const SNAPSHOT_MAGIC: &[u8; 8] = b"IBEXSNP1";
/// Version 10 keeps large values where they are in the log (an item's field holds a reference,
/// `large::write_ref`; each collection's directory entry ends with its far values per field).
/// Version 9 lists with each index block the writes to its range since (`IndexBlock::pending`:
/// a snapshot keeps a written index without reading it). Version 8 writes the commit table in segments an appended snapshot keeps (docs/design.md §8,
/// *Commit table*). Version 7 adds the stored schemas to every access list (docs/design.md §2.4). Version 6 lists each index block's first and last entries in the index directory (a query
/// reads only the index blocks it needs); version 5 changed the access lists (each entry keeps its uncovered writes by commit id, not
/// a stamp; the founder's key) and marks the commits that do not count; version 4 added the persisted secondary indexes; version 3 cut the items into blocks read
/// on demand; version 2 added the access lists (docs/design.md §8). A file of an older version
/// is ignored (the log is replayed) and rewritten at the next snapshot.
pub const SNAPSHOT_VERSION: u32 = 10;
/// Commit flags.
const F_TRUSTED: u8 = 1;
const F_SEALED: u8 = 2;
/// The commit does not count (docs/design.md §6.4).
const F_VOID: u8 = 4;
/// Item flags.
const I_DELETE: u8 = 1;
const I_META: u8 = 2;
/// Field-metadata flags: the field is a set (dots follow); `top` differs from `stamp`.
const M_SET: u8 = 1;
const M_TOP: u8 = 2;

/// A decoded snapshot.
pub struct SnapshotData {
    /// Log bytes covered (a frame boundary).
    pub log_len: u64,
    /// Offset and crc of the last frame covered (None when the log held no frames).
    pub anchor: Option<(u64, u32)>,
    pub graph: Graph,
    /// The persisted secondary indexes, by collection (valid for the snapshot's items).
    pub indexes: ColdIndexes,
    /// Where the commit table's segments are (an appended snapshot keeps them).
    pub table: Vec<TableSegment>,
}

/// Write a snapshot of `graph`, which must be the result of replaying exactly the first
/// `log_len` bytes of `log` (anchored to the last frame it covers), to `dst`, a chunk at a
/// time, and flush; returns the file's new length and the indexes it holds. Without `append`,
/// the file is rewritten (every item must be loaded). With `append` = the length of the file
/// the graph's cold blocks are in, the new blocks and meta section are written after it, and
/// the cold blocks stay where they are. `persist`: the indexes to hold (valid for `graph`).
/// `table`: the commit-table segments of the file an append keeps (those of the snapshot it
/// was opened from or last wrote; ignored without `append`).
pub fn write_for<S: Storage, D: Storage>(
    graph: &Graph,
    (log_len, log): (u64, &S),
    dst: &mut D,
    (append, table): (Option<u64>, &[TableSegment]),
    persist: &[Persist<'_>],
) -> Result<(u64, ColdIndexes, Written)> {
    let at = (log_len, anchor_of(graph, log)?);
    if append.is_none() {
        dst.truncate(0)?;
    }
    let mut end = append.unwrap_or(0);
    let table = if append.is_some() { table } else { &[] };
    let (written, blocks) = encode::encode(graph, at, (append, table), persist, &mut |b| {
        dst.write_at(end, b)?;
        end += b.len() as u64;
        Ok(())
    })?;
    // What a failed append before this one may have left past the end.
    if dst.len()? != end {
        dst.truncate(end)?;
    }
    dst.flush()?;
    let mut indexes = ColdIndexes::new();
    for (c, ix) in written {
        indexes.entry(c).or_default().push(ix);
    }
    Ok((end, indexes, blocks))
}

/// Compaction, the first half of a snapshot that would otherwise rewrite the file: move the
/// kept item `blocks` ((offset, len), any order) down to the start of the file, in file order,
/// as they are (no decoding), and return where each went (old offset → new offset) and the end
/// of the last one, where the rest of the snapshot is appended. The footer is cleared first, so
/// a crash in between leaves a file that open ignores (the log is replayed). Reads take runs of
/// contiguous blocks at once and writes go out in pieces of up to [`MOVE_BYTES`]; a block's
/// new place never lies past its old one, so no read finds bytes already overwritten.
pub fn compact<S: Storage>(
    dst: &mut S,
    blocks: &[(u64, u32)],
) -> Result<(std::collections::HashMap<u64, u64>, u64)> {
    let len = dst.len()?;
    let foot = FOOT_LEN as u64;
    if len >= foot {
        dst.write_at(len - foot, &[0; FOOT_LEN])?;
    }
    let mut sorted = blocks.to_vec();
    sorted.sort_unstable();
    let mut moved = std::collections::HashMap::with_capacity(sorted.len());
    let (mut out, mut at) = (Vec::with_capacity(MOVE_BYTES), HEAD_LEN as u64);
    let mut i = 0;
    while i < sorted.len() {
        // A run of blocks contiguous in the file, read at once (up to MOVE_BYTES).
        let (start, mut end) = (sorted[i].0, sorted[i].0 + u64::from(sorted[i].1));
        let mut j = i + 1;
        while j < sorted.len() && sorted[j].0 == end && end - start < MOVE_BYTES as u64 {
            end += u64::from(sorted[j].1);
            j += 1;
        }
        let to = at + out.len() as u64;
        for &(off, _) in &sorted[i..j] {
            moved.insert(off, to + (off - start));
        }
        let n = usize::try_from(end - start).expect("a run fits in memory");
        let from = out.len();
        out.resize(from + n, 0);
        dst.read_at(start, &mut out[from..])?;
        if out.len() >= MOVE_BYTES {
            dst.write_at(at, &out)?;
            at += out.len() as u64;
            out.clear();
        }
        i = j;
    }
    dst.write_at(at, &out)?;
    Ok((moved, at + out.len() as u64))
}

/// Compaction moves blocks in pieces of this size.
const MOVE_BYTES: usize = 1 << 20;

/// Whether the snapshot in `src` (whose meta section is `d`) holds exactly `graph` (every
/// item loaded) as the replay of the first `d.log_len` bytes of `log`: the same anchor, commit
/// table, heads, seal bookkeeping, access lists and items. Items are compared a block at a
/// time: the snapshot is never decoded whole. A block that does not decode does not hold it.
pub fn holds<S: Storage, L: Storage>(d: &SnapshotData, src: &S, graph: &Graph, log: &L) -> bool {
    let (a, b) = (&d.graph, graph);
    let same_table = a.commits == b.commits
        && a.heads == b.heads
        && a.authors == b.authors
        && a.seal_offsets == b.seal_offsets
        && a.seal_cover == b.seal_cover
        && a.acls == b.acls
        && a.acl == b.acl;
    if !same_table || anchor_of(b, log).ok() != Some(d.anchor) {
        return false;
    }
    let (ca, cb) = (&a.state.collections, &b.state.collections);
    ca.len() == cb.len()
        && ca.iter().zip(cb).all(|((na, x), (nb, y))| {
            na == nb
                && x.count() == y.count()
                && same_items(&a.state, (src, log), na, y.items.iter())
        })
}

/// Whether cold collection `name` of `state` (in `src`) holds exactly `items`, in order.
fn same_items<'a, S: Storage, L: Storage>(
    state: &State,
    (src, log): (&S, &L),
    name: &str,
    mut items: impl Iterator<Item = (&'a ItemId, &'a Item)>,
) -> bool {
    let Some(c) = state.collection(name) else {
        return items.next().is_none();
    };
    for b in c.cold().iter() {
        let Ok(block) = decode_cold(state, src, &[b]) else {
            return false;
        };
        for (id, it) in block.iter() {
            let far = |at: u64, buf: &mut [u8]| Ok(log.read_at(at, buf)?);
            match items.next() {
                Some((i, x))
                    if i == id && crate::large::same_item(&far, x, it).unwrap_or(false) => {}
                _ => return false,
            }
        }
    }
    items.next().is_none()
}

/// The offset and CRC of the last log frame `graph` covers.
fn anchor_of<S: Storage>(graph: &Graph, log: &S) -> Result<Option<(u64, u32)>> {
    Ok(match last_frame(graph) {
        Some(off) => Some((off, probe_frame(log, off)?.1)),
        None => None,
    })
}

/// The offset of the last frame `graph` covers: its last commit or its last seal.
fn last_frame(graph: &Graph) -> Option<u64> {
    let c = graph.commits.last().map(|c| c.offset);
    let s = graph.seal_offsets.iter().max().copied();
    c.max(s)
}

/// Whether the snapshot's anchor matches `log`: the last covered frame is where the snapshot
/// says, with the same checksum, and ends exactly at `log_len`.
pub fn anchor_matches<S: Storage>(d: &SnapshotData, log: &S) -> bool {
    match d.anchor {
        None => d.log_len == HEADER_LEN,
        Some((off, crc)) => {
            matches!(probe_frame(log, off), Ok((_, c, end)) if c == crc && end == d.log_len)
        }
    }
}

/// The stamp of each commit of the table, by index: stamps are written as references to
/// them (`varint k ≥ 2` = commit `k − 2`).
fn commit_stamps(authors: &[PublicKey], commits: &[CommitInfo]) -> Vec<Stamp> {
    let tags: Vec<u64> = authors.iter().map(PublicKey::tag).collect();
    commits
        .iter()
        .map(|c| Stamp {
            hlc: c.hlc,
            author: tags[c.author as usize],
            commit: c.id.tag(),
        })
        .collect()
}

/// Test hook: every persisted index of the snapshot in `s` as (collection, path, value blocks,
/// element blocks), each block as (offset, length).
#[cfg(feature = "testing")]
#[allow(clippy::type_complexity)]
pub fn index_blocks<S: Storage>(
    s: &S,
) -> Result<Vec<(String, String, Vec<(u64, u32)>, Vec<(u64, u32)>)>> {
    let d = read(s)?;
    let spans = |l: &[crate::cold::IndexBlock]| l.iter().map(|b| (b.offset, b.len)).collect();
    Ok(d.indexes
        .iter()
        .flat_map(|(c, list)| {
            list.iter().map(move |ix| {
                (
                    c.clone(),
                    ix.path.clone(),
                    spans(&ix.values),
                    spans(&ix.elems),
                )
            })
        })
        .collect())
}

/// Test hook: where the commit table of the snapshot in `s` is, as (offset, length, commits)
/// per segment.
#[cfg(feature = "testing")]
pub fn table_segments<S: Storage>(s: &S) -> Result<Vec<(u64, u32, u32)>> {
    Ok(read(s)?
        .table
        .iter()
        .map(|t| (t.offset, t.len, t.count))
        .collect())
}
