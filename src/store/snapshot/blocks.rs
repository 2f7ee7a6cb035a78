//! A snapshot's item blocks (docs/design.md §8): loading the cold blocks a read or a write
//! needs into the state, and decoding one block's items. Every count, order and reference is
//! checked, and each block against its checksum and its directory entry: a damaged block is a
//! `DecodeError`, never a wrong item (the repository then rebuilds its state from the log).

use super::{I_DELETE, I_META, M_SET, M_TOP};
use crate::chunked::Builder;
use crate::codec::Reader;
use crate::cold::ColdBlock;
use crate::commit::{Change, Stamp};
use crate::error::{Error, Result};
use crate::item::{FieldMeta, History, Item, ItemId, StampRef};
use crate::item_map::ItemMap;
use crate::large;
use crate::state::State;
use crate::store::Storage;
use crate::value::{skip_value, Map, Name, Value, T_FAR};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Contiguous blocks are read together, up to this many bytes per read.
const READ_BYTES: u64 = 4 << 20;

/// Load the block of `collection` that may hold `id` (nothing when no cold block covers it).
pub fn load_key<S: Storage>(state: &mut State, src: &S, collection: &str, id: &str) -> Result<()> {
    let Some(c) = state.collection(collection) else {
        return Ok(());
    };
    let Some(at) = c.cold_block_of(id) else {
        return Ok(());
    };
    let items = decode_cold(state, src, &[c.cold().get(at)])?;
    let c = state.collection_mut(collection).expect("cold blocks");
    c.take_cold(at);
    c.insert_loaded(items);
    state.drop_cold_tables_if_done();
    Ok(())
}

/// Load the blocks that may hold the items `changes` write.
pub fn load_changes<S: Storage>(state: &mut State, src: &S, changes: &[Change]) -> Result<()> {
    for ch in changes {
        load_key(state, src, &ch.collection, &ch.id)?;
    }
    Ok(())
}

/// Load every cold block of `collection`. The state changes only once every block decoded.
pub fn load_collection<S: Storage>(state: &mut State, src: &S, collection: &str) -> Result<()> {
    let Some(c) = state
        .collection(collection)
        .filter(|c| !c.cold().is_empty())
    else {
        return Ok(());
    };
    let blocks: Vec<&ColdBlock> = c.cold().iter().collect();
    let items = decode_cold(state, src, &blocks)?;
    let c = state.collection_mut(collection).expect("cold blocks");
    c.take_all_cold();
    c.insert_loaded(items);
    state.drop_cold_tables_if_done();
    Ok(())
}

/// Load every cold block of every collection.
pub fn load_all<S: Storage>(state: &mut State, src: &S) -> Result<()> {
    let names: Vec<String> = state
        .collections
        .iter()
        .filter(|(_, c)| !c.cold().is_empty())
        .map(|(n, _)| n.clone())
        .collect();
    for n in names {
        load_collection(state, src, &n)?;
    }
    Ok(())
}

/// The items of the cold `blocks` of one collection of `state` (ascending), decoded, in id
/// order; the state is not changed.
pub fn decode_cold<S: Storage>(state: &State, src: &S, blocks: &[&ColdBlock]) -> Result<ItemMap> {
    let tables = state
        .cold_tables()
        .ok_or_else(|| Error::decode("snapshot", "cold blocks without their tables"))?;
    let t = Tables {
        stamps: &state.stamps()[..tables.commits],
        names: &tables.names,
        log_len: tables.log_len,
    };
    decode_blocks(src, &t, blocks)
}

/// The items of `blocks` (in id order), reading contiguous blocks together. They go straight
/// into the map's chunks, each block's into chunks of its own: no intermediate vector,
/// nothing sorted (`chunked.rs`).
fn decode_blocks<S: Storage>(src: &S, t: &Tables<'_>, blocks: &[&ColdBlock]) -> Result<ItemMap> {
    let mut items = ItemMap::new();
    read_blocks(src, blocks, &mut |bytes, b| {
        // Chunks never span two blocks: loaded items may lie between them.
        let mut part = Builder::new();
        decode_block(bytes, b, t, &mut part)?;
        items.append_run(ItemMap::from_built(part));
        Ok(())
    })?;
    Ok(items)
}

/// Hand each of `blocks` to `each` with its bytes, in order, reading runs of blocks that follow
/// each other in the file together (up to [`READ_BYTES`] per read).
pub(super) fn read_blocks<S: Storage>(
    src: &S,
    blocks: &[&ColdBlock],
    each: &mut dyn FnMut(&[u8], &ColdBlock) -> Result<()>,
) -> Result<()> {
    let mut i = 0;
    while i < blocks.len() {
        let start = blocks[i].offset;
        let mut end = start + u64::from(blocks[i].len);
        let mut j = i + 1;
        while j < blocks.len() && blocks[j].offset == end && end - start < READ_BYTES {
            end += u64::from(blocks[j].len);
            j += 1;
        }
        let bytes = src.read_vec(start, (end - start) as usize)?;
        for b in &blocks[i..j] {
            let at = (b.offset - start) as usize;
            each(&bytes[at..at + b.len as usize], b)?;
        }
        i = j;
    }
    Ok(())
}

/// One block's items, checked against its checksum and directory entry, into the empty `out`.
fn decode_block(
    bytes: &[u8],
    b: &ColdBlock,
    t: &Tables<'_>,
    out: &mut Builder<ItemId, Item>,
) -> Result<()> {
    if crate::hashing::block_sum(bytes) != b.crc {
        return Err(Error::decode("snapshot", "block checksum mismatch"));
    }
    let mut r = Reader::new(bytes, "snapshot block");
    let mut live = 0;
    let mut first: Option<ItemId> = None;
    for _ in 0..b.count {
        let id = ItemId::new(r.str()?);
        // `ItemId`'s order is `str`'s; between inline ids it is two word compares.
        if out.last().is_some_and(|l| *l >= id) {
            return Err(r.err("item ids not strictly ascending"));
        }
        if first.is_none() {
            first = Some(id.clone());
        }
        let it = item(&mut r, t)?;
        live += u32::from(it.is_live());
        out.push(id, it);
    }
    r.finish()?;
    if first.as_ref() != Some(&b.first) || out.last() != Some(&b.last) || live != b.live {
        return Err(r.err("block differs from its directory entry"));
    }
    Ok(())
}

/// What items refer to by index: the commits' stamps and the field names.
struct Tables<'a> {
    stamps: &'a [Stamp],
    names: &'a [Name],
    /// Log bytes the snapshot covers.
    log_len: u64,
}

impl Tables<'_> {
    fn stamp(&self, r: &mut Reader<'_>) -> Result<Stamp> {
        match r.varint()? {
            0 => Ok(Stamp::ZERO),
            1 => Stamp::decode(r),
            k => self
                .stamps
                .get((k - 2) as usize)
                .copied()
                .ok_or_else(|| r.err("stamp reference out of range")),
        }
    }

    /// A stamp that must be a commit's (or zero): an item's reset and last write.
    fn stamp_ref(&self, r: &mut Reader<'_>) -> Result<StampRef> {
        match r.varint()? {
            0 => Ok(0),
            k if k >= 2 && k - 2 < self.stamps.len() as u64 => Ok((k - 1) as StampRef),
            _ => Err(r.err("item stamp is not a commit's")),
        }
    }

    /// A field name by its index.
    fn name(&self, r: &mut Reader<'_>) -> Result<Name> {
        let i = r.varint()?;
        let n = self.names.get(i as usize).cloned();
        n.ok_or_else(|| r.err("name index out of range"))
    }
}

fn item(r: &mut Reader<'_>, t: &Tables<'_>) -> Result<Item> {
    let reset = t.stamp_ref(r)?;
    let last = t.stamp_ref(r)?;
    let flags = r.u8()?;
    let value = fields(r, t)?;
    let history = history(r, t.stamps.len())?;
    let meta = match flags & I_META {
        0 => None,
        _ => Some(Box::new(item_meta(r, t)?)),
    };
    Ok(Item {
        value,
        reset,
        reset_is_delete: flags & I_DELETE != 0,
        last,
        meta,
        history,
    })
}

/// An item's visible fields.
fn fields(r: &mut Reader<'_>, t: &Tables<'_>) -> Result<Map> {
    let nf = r.count(2, usize::MAX)?;
    let mut value = Map::with_capacity(nf);
    for _ in 0..nf {
        let k = t.name(r)?;
        let v = field_value(r, t.log_len)?;
        // The encoder writes fields in name order: append without searching (comparing two
        // short names is two word compares).
        if value.keys().next_back().is_none_or(|l| *l < k) {
            value.push_ordered(k, v);
        } else {
            value.insert(k, v);
        }
    }
    Ok(value)
}

/// A top-level field's value: a value (`Value::decode`), or a reference to a large value in
/// the first `log_len` bytes of the log (`large::read_ref`, docs/design.md §6.6).
pub(super) fn field_value(r: &mut Reader<'_>, log_len: u64) -> Result<Value> {
    if r.peek() == Some(T_FAR) {
        return Ok(Value::Far(Arc::new(large::read_ref(r, log_len)?)));
    }
    Value::decode(r)
}

/// Step over a top-level field's value (see [`field_value`]).
pub(super) fn skip_field_value(r: &mut Reader<'_>, log_len: u64) -> Result<()> {
    if r.peek() == Some(T_FAR) {
        return large::read_ref(r, log_len).map(drop);
    }
    skip_value(r, 0)
}

/// The commit-table indices of an item's history, delta-encoded; `nc` commits exist.
fn history(r: &mut Reader<'_>, nc: usize) -> Result<History> {
    let nh = r.count(1, u32::MAX as usize)?;
    let mut history = History::default();
    let mut prev = 0u64;
    for _ in 0..nh {
        prev += r.varint()?;
        if prev >= nc as u64 {
            return Err(r.err("history index out of range"));
        }
        history.push(prev as u32);
    }
    Ok(history)
}

/// An item's per-field merge metadata.
fn item_meta(r: &mut Reader<'_>, t: &Tables<'_>) -> Result<BTreeMap<Name, FieldMeta>> {
    let nm = r.count(2, usize::MAX)?;
    let mut m = BTreeMap::new();
    for _ in 0..nm {
        let k = t.name(r)?;
        m.insert(k, field_meta(r, t)?);
    }
    Ok(m)
}

fn field_meta(r: &mut Reader<'_>, t: &Tables<'_>) -> Result<FieldMeta> {
    let stamp = t.stamp(r)?;
    let flags = r.u8()?;
    if flags > (M_SET | M_TOP) {
        return Err(r.err("bad field flags"));
    }
    let top = match flags & M_TOP {
        0 => stamp,
        _ => t.stamp(r)?,
    };
    let dots = match flags & M_SET {
        0 => None,
        _ => Some(dots(r, t)?),
    };
    Ok(FieldMeta { stamp, top, dots })
}

/// A set field's elements, each with the stamps of the adds that put it there.
fn dots(r: &mut Reader<'_>, t: &Tables<'_>) -> Result<BTreeMap<Name, Vec<Stamp>>> {
    let ne = r.count(2, usize::MAX)?;
    let mut d = BTreeMap::new();
    for _ in 0..ne {
        let e = Name::new(r.str()?);
        let nd = r.count(1, usize::MAX)?;
        let mut ds = Vec::with_capacity(nd);
        for _ in 0..nd {
            ds.push(t.stamp(r)?);
        }
        d.insert(e, ds);
    }
    Ok(d)
}
