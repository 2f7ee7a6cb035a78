//! Large values off the heap (docs/design.md §6.6). A top-level string or bytes field of an
//! item whose content is at least [`FAR_MIN`] bytes is not kept in memory once its commit is
//! in the log: the item holds a [`Far`] (where the bytes are in the log, their length and
//! CRC-32) and the repository loads the value with one positioned read when something needs
//! it.
//!
//! - [`release`]: after a commit is applied, its large values that the state now holds are
//!   replaced by references into the commit's log frame (`locate` finds them in the commit's
//!   bytes; the state's value must equal those bytes, so a value a newer write replaced is
//!   left alone).
//! - [`load`]: a far value read back and checked against its CRC.
//! - [`resolve`]: an item's map with its far values loaded (reads hand these out).
//! - [`unfar`]: a collection's far values loaded back into memory, for good, before anything
//!   compares them (a filter or sort, an index, a live query, an aggregate).
//!
//! The log is append-only and a snapshot never moves it, so a reference stays valid while the
//! log holds the frame: snapshots write the reference itself ([`write_ref`], [`read_ref`]),
//! anchored to the log they cover (`store/snapshot/`).

use crate::codec::{Reader, Writer};
use crate::error::{Error, Result};
use crate::hashing::crc32;
use crate::item::Item;
use crate::state::State;
use crate::value::{skip_value, Far, Map, Value, T_FAR};
use std::sync::Arc;

/// Content bytes from which a value is kept far (docs/design.md §6.6 says why 16 KiB).
pub const FAR_MIN: usize = 16 * 1024;

const T_STRING: u8 = 4;
const T_BYTES: u8 = 8;

/// A large top-level field value written by one change of a commit.
struct Located<'a> {
    collection: &'a str,
    id: &'a str,
    field: &'a str,
    bytes: bool,
    /// Offset of the content in the commit's bytes.
    start: usize,
    content: &'a [u8],
}

/// Every top-level string or bytes value of at least [`FAR_MIN`] bytes that a Put or a
/// Patch's Assign writes, in the commit's bytes (docs/design.md §4.1). The commit decoded
/// already, so the walk checks only what it needs.
fn locate(payload: &[u8]) -> Result<Vec<Located<'_>>> {
    let mut r = Reader::new(payload, "commit");
    r.take(2)?; // version, flags
    r.take(49)?; // author
    r.take(8)?; // hlc
    let np = r.count(32, usize::MAX)?;
    r.take(32 * np)?;
    let colls = (0..r.count(1, usize::MAX)?)
        .map(|_| r.str())
        .collect::<Result<Vec<_>>>()?;
    let names = (0..r.count(1, usize::MAX)?)
        .map(|_| r.str())
        .collect::<Result<Vec<_>>>()?;
    let name = |r: &mut Reader<'_>, t: &[&'_ str]| -> Result<usize> {
        let i = r.varint()? as usize;
        (i < t.len())
            .then_some(i)
            .ok_or_else(|| r.err("index out of range"))
    };
    let mut out = Vec::new();
    for _ in 0..r.count(2, usize::MAX)? {
        let collection = colls[name(&mut r, &colls)?];
        let id = r.str()?;
        let op = r.u8()?;
        match op {
            1 => {
                for _ in 0..r.count(1, usize::MAX)? {
                    let f = names[name(&mut r, &names)?];
                    value(&mut r, payload, &mut out, (collection, id, f))?;
                }
            }
            2 => {}
            3 => {
                for _ in 0..r.count(2, usize::MAX)? {
                    let f = names[name(&mut r, &names)?];
                    match r.u8()? {
                        1 => value(&mut r, payload, &mut out, (collection, id, f))?,
                        2 => {}
                        3 => {
                            for _ in 0..r.count(1, usize::MAX)? {
                                r.lp()?;
                            }
                            for _ in 0..r.count(2, usize::MAX)? {
                                r.lp()?;
                                let nd = r.count(24, usize::MAX)?;
                                r.take(24 * nd)?;
                            }
                        }
                        4 => {
                            // An attachment's descriptor: hash, size, media type.
                            r.take(32)?;
                            r.varint()?;
                            r.lp()?;
                        }
                        // An op this walk does not know: what it found so far is right, the
                        // rest stays in memory.
                        _ => return Ok(out),
                    }
                }
            }
            _ => return Ok(out),
        }
    }
    Ok(out)
}

/// One value of a change: recorded when it is a large string or bytes, else stepped over.
fn value<'p>(
    r: &mut Reader<'p>,
    payload: &'p [u8],
    out: &mut Vec<Located<'p>>,
    (collection, id, field): (&'p str, &'p str, &'p str),
) -> Result<()> {
    let tag = payload.get(r.pos()).copied().unwrap_or(0);
    if tag != T_STRING && tag != T_BYTES {
        return skip_value(r, 0);
    }
    r.u8()?;
    let content = r.lp()?;
    if content.len() >= FAR_MIN {
        out.push(Located {
            collection,
            id,
            field,
            bytes: tag == T_BYTES,
            start: r.pos() - content.len(),
            content,
        });
    }
    Ok(())
}

/// After the commit whose bytes are `payload`, at log offset `payload_at`, was applied:
/// replace each large value it wrote that the state still holds by a reference into the log.
/// Fields for which `pinned(collection, field)` is true (indexed ones, or every field of a
/// collection with live queries or running aggregates) and reserved collections keep their
/// values. Returns how many values were released.
pub(crate) fn release(
    state: &mut State,
    payload: &[u8],
    payload_at: u64,
    pinned: &dyn Fn(&str, &str) -> bool,
) -> Result<usize> {
    if payload.len() < FAR_MIN {
        return Ok(0);
    }
    let mut n = 0;
    for l in locate(payload)? {
        if l.collection.starts_with('_') || pinned(l.collection, l.field) {
            continue;
        }
        let Some(c) = state.collection_mut(l.collection) else {
            continue;
        };
        let Ok(pos) = c.items.search(l.id) else {
            continue;
        };
        let Some(v) = c.items.at_mut(pos).value.get_mut(l.field) else {
            continue;
        };
        let same = match &*v {
            Value::String(s) => !l.bytes && s.as_bytes() == l.content,
            Value::Bytes(b) => l.bytes && **b == *l.content,
            _ => false,
        };
        if same {
            *v = Value::Far(Arc::new(Far {
                bytes: l.bytes,
                at: payload_at + l.start as u64,
                len: l.content.len() as u32,
                crc: crc32(l.content),
            }));
            *c.far.entry(l.field.to_string()).or_insert(0) += 1;
            n += 1;
        }
    }
    Ok(n)
}

/// Read a far value back with `read` (a positioned read of the log) and check it.
pub(crate) fn load(read: &dyn Fn(u64, &mut [u8]) -> Result<()>, f: &Far) -> Result<Value> {
    let mut buf = vec![0u8; f.len as usize];
    read(f.at, &mut buf)?;
    let bad = |why: &str| Error::Corrupt {
        offset: f.at,
        next_valid: None,
        reason: format!("large value of {} bytes: {why}", f.len),
    };
    if crc32(&buf) != f.crc {
        return Err(bad("checksum mismatch"));
    }
    Ok(if f.bytes {
        Value::Bytes(buf.into())
    } else {
        let s = String::from_utf8(buf).map_err(|_| bad("not UTF-8"))?;
        Value::String(crate::value::Name::from_string(s))
    })
}

/// Write `f` as a snapshot block holds it: `T_FAR` (9), `u8` bytes?, `u64` at, `u32` len,
/// `u32` crc (docs/design.md §8, *Item blocks*).
pub(crate) fn write_ref(w: &mut Writer, f: &Far) {
    w.u8(T_FAR);
    w.u8(u8::from(f.bytes));
    w.u64(f.at);
    w.u32(f.len);
    w.u32(f.crc);
}

/// Read what [`write_ref`] wrote, its tag included: a reference whose length is below
/// [`FAR_MIN`], whose kind is not 0 or 1, or that reaches past the `log_len` bytes of the log
/// the snapshot covers was never written.
pub(crate) fn read_ref(r: &mut Reader<'_>, log_len: u64) -> Result<Far> {
    if r.u8()? != T_FAR {
        return Err(r.err("not a large value's reference"));
    }
    let bytes = match r.u8()? {
        0 => false,
        1 => true,
        _ => return Err(r.err("bad large value kind")),
    };
    let (at, len, crc) = (r.u64()?, r.u32()?, r.u32()?);
    let inside = at
        .checked_add(u64::from(len))
        .is_some_and(|end| end <= log_len);
    if (len as usize) < FAR_MIN || !inside {
        return Err(r.err("bad large value reference"));
    }
    Ok(Far {
        bytes,
        at,
        len,
        crc,
    })
}

/// Whether `m` holds a far value.
pub(crate) fn has_far(m: &Map) -> bool {
    m.values().any(|v| matches!(v, Value::Far(_)))
}

/// `m` with its far values loaded.
pub(crate) fn resolve(read: &dyn Fn(u64, &mut [u8]) -> Result<()>, m: &Map) -> Result<Map> {
    let mut out = m.clone();
    for v in out.values_mut() {
        if let Value::Far(f) = v {
            *v = load(read, f)?;
        }
    }
    Ok(out)
}

/// Load the far values of `collection` in `fields` (every field for `None`) back into memory;
/// nothing is read when none of those fields holds one.
pub(crate) fn unfar(
    state: &mut State,
    collection: &str,
    fields: Option<&[&str]>,
    read: &dyn Fn(u64, &mut [u8]) -> Result<()>,
) -> Result<()> {
    let Some(c) = state.collection_mut(collection) else {
        return Ok(());
    };
    let wanted = |k: &str| fields.is_none_or(|f| f.contains(&k));
    let which: Vec<String> = c.far.keys().filter(|k| wanted(k)).cloned().collect();
    if which.is_empty() {
        return Ok(());
    }
    let far_in = |m: &Map| {
        m.iter()
            .any(|(k, v)| matches!(v, Value::Far(_)) && which.iter().any(|w| w == k.as_str()))
    };
    let ids: Vec<_> = c
        .items
        .iter()
        .filter(|(_, it)| far_in(&it.value))
        .map(|(id, _)| id.clone())
        .collect();
    for id in ids {
        let Ok(pos) = c.items.search(&id) else {
            continue;
        };
        for (k, v) in c.items.at_mut(pos).value.iter_mut() {
            if let Value::Far(f) = v {
                if which.iter().any(|w| w == k.as_str()) {
                    *v = load(read, f)?;
                }
            }
        }
    }
    c.far.retain(|k, _| !which.contains(k));
    Ok(())
}

/// Whether two item maps hold the same values, far ones compared by content.
pub(crate) fn same_map(
    read: &dyn Fn(u64, &mut [u8]) -> Result<()>,
    a: &Map,
    b: &Map,
) -> Result<bool> {
    if a == b {
        return Ok(true);
    }
    if !has_far(a) && !has_far(b) {
        return Ok(false);
    }
    Ok(resolve(read, a)? == resolve(read, b)?)
}

/// Whether two items are equal, their far values compared by content.
pub(crate) fn same_item(
    read: &dyn Fn(u64, &mut [u8]) -> Result<()>,
    a: &Item,
    b: &Item,
) -> Result<bool> {
    let same_meta = a.reset == b.reset
        && a.reset_is_delete == b.reset_is_delete
        && a.last == b.last
        && a.meta == b.meta
        && a.history == b.history;
    Ok(same_meta && same_map(read, &a.value, &b.value)?)
}

/// Whether two loaded states hold the same items, far values compared by content (`verify()`
/// compares a replay, which released every large value, with the live state).
pub(crate) fn same_state(
    read: &dyn Fn(u64, &mut [u8]) -> Result<()>,
    a: &State,
    b: &State,
) -> Result<bool> {
    if a.collections.len() != b.collections.len() {
        return Ok(false);
    }
    for ((na, ca), (nb, cb)) in a.collections.iter().zip(&b.collections) {
        if na != nb
            || ca.count() != cb.count()
            || ca.items.iter().count() != cb.items.iter().count()
        {
            return Ok(false);
        }
        for ((ia, xa), (ib, xb)) in ca.items.iter().zip(cb.items.iter()) {
            if ia != ib || !same_item(read, xa, xb)? {
                return Ok(false);
            }
        }
    }
    Ok(true)
}
