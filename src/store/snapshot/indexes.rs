//! A snapshot's persisted secondary indexes (docs/design.md §8, "Indexes"): each index's value
//! and element entries in checksummed blocks after the item blocks, and their directory at the
//! end of the meta section. The query engine's indexes are written through [`IndexEntries`] and
//! read back through two sinks, so this module knows the format, not the index.

use super::out::Out;
use crate::codec::{Reader, Writer};
use crate::cold::{ColdIndex, IndexBlock};
use crate::error::{Error, Result};
use crate::state::Collection;
use crate::store::Storage;
use crate::value::Value;
use std::collections::BTreeMap;

/// A persisted index's entries are cut into blocks of about this many bytes; a query reads
/// the blocks of its ranges (`query/lazy.rs`).
pub(super) const BLOCK_BYTES: usize = 32 << 10;

/// A stretch of an index's entries, in order, as the snapshot encoder takes them.
pub enum Piece<'a, T> {
    /// Entries to write as new blocks.
    New(Box<dyn Iterator<Item = T> + 'a>),
    /// A block of the file being appended to, not read since: listed where it is, with the
    /// writes to its range since it was written (encoded as in a block; `true`: inserted).
    Kept(&'a IndexBlock, Vec<(Box<[u8]>, bool)>),
}

/// A value entry as a block holds it: the value at the path (`None`: missing), the item's id.
pub type ValueEntry<'a> = (Option<&'a Value>, &'a str);
/// An element entry as a block holds it: a string element of a set or list, the item's id.
pub type ElemEntry<'a> = (&'a str, &'a str);

/// A built index, as the snapshot encoder reads it.
pub trait IndexEntries {
    /// Number-valued items, the exact sum of the integral ones, numbers that are not integers.
    fn stats(&self) -> (u64, i128, u64);
    /// One entry per visible item, in index order: the value at the path (`None`: missing)
    /// and the item's id.
    fn values(&self) -> Vec<Piece<'_, ValueEntry<'_>>>;
    /// One entry per string element of a set or list at the path, in order: (element, id).
    fn elems(&self) -> Vec<Piece<'_, ElemEntry<'_>>>;
}

/// A value entry, encoded as in a block: `u8` 0 (missing) or 1 and the value, then `lp(id)`.
fn put_value(w: &mut Writer, (v, id): ValueEntry<'_>) {
    match v {
        None => w.u8(0),
        Some(v) => {
            w.u8(1);
            v.encode(w);
        }
    }
    w.lp(id.as_bytes());
}

/// An element entry, encoded as in a block: `lp(element)`, `lp(id)`.
fn put_elem(w: &mut Writer, (e, id): ElemEntry<'_>) {
    w.lp(e.as_bytes());
    w.lp(id.as_bytes());
}

/// One value entry encoded alone (a kept write, `Piece::Kept`).
pub fn encode_value_entry(e: ValueEntry<'_>) -> Box<[u8]> {
    let mut w = Writer::new();
    put_value(&mut w, e);
    w.into_inner().into()
}

/// One element entry encoded alone (a kept write, `Piece::Kept`).
pub fn encode_elem_entry(e: ElemEntry<'_>) -> Box<[u8]> {
    let mut w = Writer::new();
    put_elem(&mut w, e);
    w.into_inner().into()
}

/// Where a persisted index's entries go when it is read back, in order.
pub trait IndexSink {
    /// A value entry: the value at the path (`None`: missing) and the item's id.
    fn value(&mut self, v: Option<Value>, id: &str) -> Result<()>;
    /// An element entry: a string element of a set or list at the path, and the item's id.
    fn elem(&mut self, e: &str, id: &str) -> Result<()>;
}

/// An index the snapshot is to hold.
pub enum Persist<'a> {
    /// Built in memory: its entries are written.
    Built {
        collection: &'a str,
        path: &'a str,
        index: &'a dyn IndexEntries,
    },
    /// Still in the file being appended to, and still valid (its collection unchanged): its
    /// blocks are listed where they are.
    Kept {
        collection: &'a str,
        index: &'a ColdIndex,
    },
}

impl Persist<'_> {
    fn key(&self) -> (&str, &str) {
        match self {
            Persist::Built {
                collection, path, ..
            } => (collection, path),
            Persist::Kept { collection, index } => (collection, &index.path),
        }
    }
}

/// The persisted indexes, by collection.
pub type ColdIndexes = BTreeMap<String, Vec<ColdIndex>>;

/// Write the entries of the built indexes as blocks; returns every index's directory entry,
/// in (collection, path) order.
pub(super) fn write(f: &mut Out<'_>, indexes: &[Persist<'_>]) -> Result<Vec<(String, ColdIndex)>> {
    let mut sorted: Vec<&Persist<'_>> = indexes.iter().collect();
    sorted.sort_by(|a, b| a.key().cmp(&b.key()));
    sorted.dedup_by(|a, b| a.key() == b.key());
    let mut block = Writer::with_capacity(2 * BLOCK_BYTES);
    let mut out = Vec::with_capacity(sorted.len());
    for p in sorted {
        let ix = match p {
            Persist::Kept { index, .. } => (*index).clone(),
            Persist::Built { path, index, .. } => {
                let values = pieces(f, &mut block, index.values(), put_value)?;
                let elems = pieces(f, &mut block, index.elems(), put_elem)?;
                ColdIndex {
                    path: path.to_string(),
                    stats: index.stats(),
                    values,
                    elems,
                }
            }
        };
        out.push((p.key().0.to_string(), ix));
    }
    Ok(out)
}

/// An index's entries from its pieces: new ones encoded into blocks, kept blocks listed
/// with their writes.
fn pieces<T>(
    f: &mut Out<'_>,
    block: &mut Writer,
    pieces: Vec<Piece<'_, T>>,
    put: fn(&mut Writer, T),
) -> Result<Vec<IndexBlock>> {
    let mut out = Vec::new();
    for p in pieces {
        match p {
            Piece::New(entries) => out.extend(blocks(f, block, entries, put)?),
            Piece::Kept(b, pending) => out.push(IndexBlock {
                pending,
                ..b.clone()
            }),
        }
    }
    Ok(out)
}

/// Encode `entries` into blocks of about [`BLOCK_BYTES`], handed to the output.
fn blocks<T>(
    f: &mut Out<'_>,
    block: &mut Writer,
    entries: impl Iterator<Item = T>,
    put: impl Fn(&mut Writer, T),
) -> Result<Vec<IndexBlock>> {
    let mut out = Vec::new();
    let mut entries = entries.peekable();
    while entries.peek().is_some() {
        block.buf.clear();
        let mut count = 0u32;
        let (mut first_end, mut last_start) = (0, 0);
        while block.buf.len() < BLOCK_BYTES {
            let Some(e) = entries.next() else { break };
            last_start = block.buf.len();
            put(block, e);
            if count == 0 {
                first_end = block.buf.len();
            }
            count += 1;
        }
        out.push(IndexBlock {
            offset: f.offset(),
            len: block.buf.len() as u32,
            count,
            crc: crate::hashing::block_sum(&block.buf),
            first: block.buf[..first_end].into(),
            last: block.buf[last_start..].into(),
            pending: Vec::new(),
        });
        f.block(&block.buf)?;
    }
    Ok(out)
}

/// The index directory, after the collections' block directory in the meta section.
pub(super) fn directory(w: &mut Writer, indexes: &[(String, ColdIndex)]) {
    w.varint(indexes.len() as u64);
    for (c, ix) in indexes {
        w.lp(c.as_bytes());
        w.lp(ix.path.as_bytes());
        let (nums, sum, non_int) = ix.stats;
        w.varint(nums);
        w.bytes(&sum.to_le_bytes());
        w.varint(non_int);
        for list in [&ix.values, &ix.elems] {
            w.varint(list.len() as u64);
            for b in list {
                w.varint(b.offset);
                w.varint(u64::from(b.len));
                w.varint(u64::from(b.count));
                w.u32(b.crc);
                w.lp(&b.first);
                w.lp(&b.last);
                w.varint(b.pending.len() as u64);
                for (e, insert) in &b.pending {
                    w.u8(u8::from(*insert));
                    w.lp(e);
                }
            }
        }
    }
}

/// The fewest bytes an entry takes: a value entry's tag and `lp(id)`; an element entry's two
/// lengths.
const MIN_ENTRY_BYTES: u64 = 2;

/// Read the index directory: every index of an existing collection, (collection, path)
/// strictly ascending, one value entry per visible item, blocks between the header and
/// `meta_offset` (their spans are added to `spans` for the overlap check).
pub(super) fn read_directory(
    r: &mut Reader<'_>,
    (head, meta_offset): (u64, u64),
    collections: &BTreeMap<String, Collection>,
    spans: &mut Vec<(u64, u64)>,
) -> Result<ColdIndexes> {
    let n = r.count(2 + 2 + 16 + 2 + 2, usize::MAX)?;
    let mut out = ColdIndexes::new();
    let mut last: Option<(String, String)> = None;
    for _ in 0..n {
        let c = r.str()?.to_owned();
        let path = r.str()?.to_owned();
        let stats = (r.varint()?, i128::from_le_bytes(r.array()?), r.varint()?);
        let values = block_list(r, (head, meta_offset), spans)?;
        let elems = block_list(r, (head, meta_offset), spans)?;
        let key = (c, path);
        if last.as_ref().is_some_and(|l| *l >= key) {
            return Err(r.err("indexes not strictly ascending"));
        }
        let ix = ColdIndex {
            path: key.1.clone(),
            stats,
            values,
            elems,
        };
        match collections.get(&key.0) {
            Some(coll) if ix.value_count() == Some(coll.count() as u64) => {}
            _ => return Err(r.err("an index that does not match its collection")),
        }
        out.entry(key.0.clone()).or_default().push(ix);
        last = Some(key);
    }
    Ok(out)
}

fn block_list(
    r: &mut Reader<'_>,
    (head, meta_offset): (u64, u64),
    spans: &mut Vec<(u64, u64)>,
) -> Result<Vec<IndexBlock>> {
    let nb = r.count(4 + 4 + 2 * MIN_ENTRY_BYTES as usize, usize::MAX)?;
    let mut out = Vec::with_capacity(nb);
    for _ in 0..nb {
        let b = IndexBlock {
            offset: r.varint()?,
            len: u32::try_from(r.varint()?).map_err(|_| r.err("index block too long"))?,
            count: u32::try_from(r.varint()?).map_err(|_| r.err("bad index block count"))?,
            crc: r.u32()?,
            first: r.lp()?.into(),
            last: r.lp()?.into(),
            pending: pending(r)?,
        };
        let end = b.offset.checked_add(u64::from(b.len));
        let sane = b.count >= 1 && u64::from(b.count) * MIN_ENTRY_BYTES <= u64::from(b.len);
        if !sane || b.offset < head || end.is_none_or(|e| e > meta_offset) {
            return Err(r.err("bad index block entry"));
        }
        spans.push((b.offset, b.offset + u64::from(b.len)));
        out.push(b);
    }
    Ok(out)
}

/// A block's kept writes: `varint` n, then n × (`u8` 1 inserted / 0 removed, `lp(entry)`).
fn pending(r: &mut Reader<'_>) -> Result<Vec<(Box<[u8]>, bool)>> {
    let n = r.count(1 + 1 + MIN_ENTRY_BYTES as usize, usize::MAX)?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let insert = match r.u8()? {
            0 => false,
            1 => true,
            _ => return Err(r.err("bad kept index write")),
        };
        out.push((r.lp()?.into(), insert));
    }
    Ok(out)
}

/// Read one block of value entries (`values`) or element entries from `src` into `sink`,
/// checked against its checksum and its count; the sink checks the order.
pub fn load_block<S: Storage>(
    src: &S,
    b: &IndexBlock,
    values: bool,
    sink: &mut dyn IndexSink,
) -> Result<()> {
    read_block(src, b, &mut |r| entry(r, values, sink))
}

/// Decode one entry encoded alone (a block's first or last, from the directory) into `sink`.
pub fn decode_entry(bytes: &[u8], values: bool, sink: &mut dyn IndexSink) -> Result<()> {
    let mut r = Reader::new(bytes, "snapshot index key");
    entry(&mut r, values, sink)?;
    r.finish()
}

/// One value entry (`values`) or element entry.
fn entry(r: &mut Reader<'_>, values: bool, sink: &mut dyn IndexSink) -> Result<()> {
    if values {
        let v = match r.u8()? {
            0 => None,
            1 => Some(Value::decode(r)?),
            _ => return Err(r.err("bad index entry tag")),
        };
        sink.value(v, r.str()?)
    } else {
        let e = r.str()?;
        sink.elem(e, r.str()?)
    }
}

/// Read one block, check its checksum, decode its `count` entries with `entry`.
fn read_block<S: Storage>(
    src: &S,
    b: &IndexBlock,
    entry: &mut dyn FnMut(&mut Reader<'_>) -> Result<()>,
) -> Result<()> {
    let bytes = src.read_vec(b.offset, b.len as usize)?;
    if crate::hashing::block_sum(&bytes) != b.crc {
        return Err(Error::decode("snapshot", "index block checksum mismatch"));
    }
    let mut r = Reader::new(&bytes, "snapshot index block");
    for _ in 0..b.count {
        entry(&mut r)?;
    }
    r.finish()
}
