//! Building a secondary index (`index.rs`): over a loaded collection, its entries sorted and
//! moved once into the index's chunks (`chunked.rs`); or read back from a snapshot, where it
//! was persisted (`store/snapshot/indexes.rs`), each entry checked to follow the one before.
//!
//! The build's own memory matters as much as its time: wasm memory keeps its peak, so what the
//! build holds besides the finished index stays paid for. A path holding only numbers (the
//! common case: counters, timestamps, foreign ids) is sorted as 12-byte (key, slot) records
//! that are given back as the index takes their place; other paths borrow each item's value.

use super::entry::{cmp_opt, elements, num_key, number_of_key, Entry, IKey, NumStats};
use super::eval::CPath;
use crate::chunked::{Builder, Chunked, Slot};
use crate::state::Collection;
use crate::value::{Name, Value};

/// A built index: value entries, element entries, numeric stats.
pub(super) type Built = (Chunked<Entry>, Chunked<Entry>, NumStats);

/// A number's sort key (`num_key`, split in two words) and its item's slot: sorted, these
/// order as the index's entries (by value, then by id: slots order as ids do).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Keyed([u32; 3]);

impl Keyed {
    fn new(key: u64, slot: Slot) -> Keyed {
        Keyed([(key >> 32) as u32, key as u32, slot.0])
    }
    fn key(self) -> u64 {
        u64::from(self.0[0]) << 32 | u64::from(self.0[1])
    }
    fn slot(self) -> Slot {
        Slot(self.0[2])
    }
}

/// The index of `cpath` when every visible item holds a number or nothing there; `None`
/// otherwise (or when the collection is too large for slots).
pub(super) fn numeric(cpath: &CPath, c: &Collection) -> Option<Built> {
    let mut stats = NumStats::default();
    let mut keyed = Vec::with_capacity(c.count());
    for (slot, _, m) in c.slots()? {
        let v = cpath.get(m);
        if !matches!(v, None | Some(Value::Number(_))) {
            return None;
        }
        stats.update(v, true);
        keyed.push(Keyed::new(num_key(v), slot));
    }
    // Descending, so that popping from the end yields the entries in order, and the records'
    // memory can be handed back, a sixteenth at a time, as the index grows.
    keyed.sort_unstable_by(|a, b| b.cmp(a));
    let step = (keyed.len() / 16).max(1 << 12);
    let mut shrink_at = keyed.len().saturating_sub(step);
    let mut values = Builder::new();
    while let Some(k) = keyed.pop() {
        let (id, _) = c.at_slot(k.slot());
        let key = number_of_key(k.key()).map_or(IKey::Missing, IKey::Val);
        values.push(Entry::new(key, id), ());
        if keyed.len() == shrink_at {
            keyed.shrink_to_fit();
            shrink_at = shrink_at.saturating_sub(step);
        }
    }
    Some((values.finish(), Chunked::new(), stats))
}

/// The index of `cpath` for values of any kind: (id, value) borrowed in id order, so that a
/// position orders ties exactly as the ids do and sorting never compares or clones ids.
pub(super) fn general(cpath: &CPath, c: &Collection) -> Built {
    let mut stats = NumStats::default();
    let items: Vec<(&str, Option<&Value>)> = c.iter().map(|(id, m)| (id, cpath.get(m))).collect();
    for (_, v) in &items {
        stats.update(*v, true);
    }
    let mut order: Vec<u32> = (0..items.len() as u32).collect();
    order.sort_unstable_by(|&a, &b| {
        let key = |i: u32| items[i as usize].1;
        cmp_opt(key(a), key(b)).then(a.cmp(&b))
    });
    let values = Chunked::from_sorted_keys(order.iter().map(|&i| {
        let (id, v) = items[i as usize];
        Entry::new(v.map_or(IKey::Missing, |v| IKey::Val(v.clone())), id)
    }));
    drop(order);
    let mut elems: Vec<(&str, u32)> = Vec::new();
    for (i, (_, v)) in items.iter().enumerate() {
        if let Some(v) = v {
            elems.extend(elements(v).map(|e| (e, i as u32)));
        }
    }
    elems.sort_unstable();
    elems.dedup();
    let elems = Chunked::from_sorted_keys(
        elems
            .into_iter()
            .map(|(e, i)| Entry::new(IKey::Val(Value::String(Name::new(e))), items[i as usize].0)),
    );
    (values, elems, stats)
}
