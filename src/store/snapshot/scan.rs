//! One top-level field, or the id, of every visible item in a collection's cold blocks, read
//! without building the items (docs/design.md §8, *Scans*): an aggregate's first scan after an
//! open needs one value per item, and `keys` one id, not the items. Each block is checked as
//! `blocks.rs` checks it when it loads one (its checksum, its item count, its first and last id,
//! ascending ids, its visible count, stamp and name references in range); the other fields, the
//! history and the metadata are stepped over.

use super::blocks::{field_value, read_blocks, skip_field_value};
use super::{I_DELETE, I_META, M_SET, M_TOP};
use crate::codec::Reader;
use crate::cold::ColdBlock;
use crate::error::{Error, Result};
use crate::state::State;
use crate::store::Storage;
use crate::value::Value;

/// Call `visit` with the value of `field` (`None` when absent) of every visible item in the
/// cold blocks of `collection`; the loaded items are the caller's. The state does not change.
pub fn scan_field<S: Storage>(
    state: &State,
    src: &S,
    collection: &str,
    field: &str,
    visit: &mut dyn FnMut(Option<&Value>),
) -> Result<()> {
    scan(state, src, collection, Some(field), &mut |_, v| visit(v))
}

/// Call `visit` with the id of every visible item in the cold blocks of `collection`, in
/// order; the loaded items are the caller's. The state does not change.
pub fn scan_ids<S: Storage>(
    state: &State,
    src: &S,
    collection: &str,
    visit: &mut dyn FnMut(&str),
) -> Result<()> {
    scan(state, src, collection, None, &mut |id, _| visit(id))
}

/// Walk the visible items of `collection`'s cold blocks: `visit(id, value of field)`.
fn scan<S: Storage>(
    state: &State,
    src: &S,
    collection: &str,
    field: Option<&str>,
    visit: &mut dyn FnMut(&str, Option<&Value>),
) -> Result<()> {
    let Some(tables) = state.cold_tables() else {
        return Ok(());
    };
    let Some(c) = state.collection(collection) else {
        return Ok(());
    };
    let blocks: Vec<&ColdBlock> = c.cold().iter().collect();
    // The field's index in the snapshot's name table (none: no cold item has it).
    let target = field.and_then(|f| tables.names.iter().position(|n| n.as_str() == f));
    let refs = Refs {
        commits: tables.commits as u64,
        names: tables.names.len() as u64,
        log_len: tables.log_len,
    };
    read_blocks(src, &blocks, &mut |bytes, b| {
        scan_block(bytes, b, refs, target, visit)
    })
}

/// How many commits and names the snapshot's references may point at.
#[derive(Clone, Copy)]
struct Refs {
    commits: u64,
    names: u64,
    /// Log bytes the snapshot covers (where its large values' references point).
    log_len: u64,
}

impl Refs {
    /// A stamp written by reference (0: zero, 1: raw, k ≥ 2: commit k − 2); its code.
    fn stamp(self, r: &mut Reader<'_>) -> Result<u64> {
        let k = r.varint()?;
        match k {
            0 => {}
            1 => {
                r.take(24)?;
            }
            k if k - 2 < self.commits => {}
            _ => return Err(r.err("stamp reference out of range")),
        }
        Ok(k)
    }

    /// An item's reset or last write: a commit's stamp, or zero.
    fn item_stamp(self, r: &mut Reader<'_>) -> Result<u64> {
        match r.varint()? {
            0 => Ok(0),
            k if k >= 2 && k - 2 < self.commits => Ok(k),
            _ => Err(r.err("item stamp is not a commit's")),
        }
    }

    fn name(self, r: &mut Reader<'_>) -> Result<u64> {
        let i = r.varint()?;
        if i >= self.names {
            return Err(r.err("name index out of range"));
        }
        Ok(i)
    }
}

fn scan_block(
    bytes: &[u8],
    b: &ColdBlock,
    refs: Refs,
    target: Option<usize>,
    visit: &mut dyn FnMut(&str, Option<&Value>),
) -> Result<()> {
    if crate::hashing::block_sum(bytes) != b.crc {
        return Err(Error::decode("snapshot", "block checksum mismatch"));
    }
    let mut r = Reader::new(bytes, "snapshot block");
    let mut live = 0;
    let mut prev: Option<&[u8]> = None;
    let mut first: &[u8] = &[];
    for i in 0..b.count {
        let id = r.lp()?;
        if prev.is_some_and(|p| p >= id) {
            return Err(r.err("item ids not strictly ascending"));
        }
        if i == 0 {
            first = id;
        }
        prev = Some(id);
        let reset = refs.item_stamp(&mut r)?;
        let last = refs.item_stamp(&mut r)?;
        let flags = r.u8()?;
        let visible = !(flags & I_DELETE != 0 && reset == last);
        live += u32::from(visible);
        let mut found: Option<Value> = None;
        for _ in 0..r.count(2, usize::MAX)? {
            let name = refs.name(&mut r)?;
            if Some(name as usize) == target && visible {
                found = Some(field_value(&mut r, refs.log_len)?);
            } else {
                skip_field_value(&mut r, refs.log_len)?;
            }
        }
        if visible {
            let id = std::str::from_utf8(id).map_err(|_| r.err("item id is not UTF-8"))?;
            visit(id, found.as_ref());
        }
        // History: commit-table indices, delta-encoded.
        for _ in 0..r.count(1, u32::MAX as usize)? {
            r.varint()?;
        }
        if flags & I_META != 0 {
            skip_meta(&mut r, refs)?;
        }
    }
    r.finish()?;
    let last = prev.unwrap_or_default();
    let same = first == b.first.as_bytes() && last == b.last.as_bytes() && live == b.live;
    if !same {
        return Err(r.err("block differs from its directory entry"));
    }
    Ok(())
}

/// Step over an item's per-field merge metadata.
fn skip_meta(r: &mut Reader<'_>, refs: Refs) -> Result<()> {
    for _ in 0..r.count(2, usize::MAX)? {
        refs.name(r)?;
        refs.stamp(r)?;
        let flags = r.u8()?;
        if flags > (M_SET | M_TOP) {
            return Err(r.err("bad field flags"));
        }
        if flags & M_TOP != 0 {
            refs.stamp(r)?;
        }
        if flags & M_SET != 0 {
            for _ in 0..r.count(2, usize::MAX)? {
                r.lp()?;
                for _ in 0..r.count(1, usize::MAX)? {
                    refs.stamp(r)?;
                }
            }
        }
    }
    Ok(())
}
