//! An index's entries, some of which may still be in a snapshot's blocks (docs/design.md §8,
//! "Indexes"): [`Entries`] holds the entries read so far (`hot`, a [`Chunked`] set) and, for
//! each block not read yet, its first and last entries and where it is (`cold` runs). A read
//! of the index that meets a cold run notes it instead of answering from it; the repository
//! then reads, checks and decodes the noted blocks ([`Entries::materialize`]) and asks again
//! (`Repo::with_indexes`). So the first query after an open reads the blocks of its ranges,
//! not the whole index.
//!
//! Invariants: the cold runs are in order, their ranges `[first, last]` disjoint and strictly
//! ascending, and no hot entry lies inside one (hot entries come from read blocks, or were
//! inserted outside every run; a write inside a run's range is kept with the run and applied
//! when its block is read, so a write reads no block). Every read goes through the methods
//! here, which note what they pass over; a read that noted nothing saw every entry it needed.

use super::entry::{entry_bounds, Entry, IKey};
use crate::chunked::{Builder, Chunked};
use crate::cold::IndexBlock;
use crate::error::{Error, Result};
use crate::store::snapshot::{self, IndexSink, Piece};
use crate::value::{Name, Value};
use std::cell::RefCell;
use std::collections::BTreeSet;
use std::ops::Bound;

/// A block of entries not read yet, and the writes to its range since the open.
#[derive(Debug, Clone)]
struct Run {
    first: Entry,
    last: Entry,
    block: IndexBlock,
    /// Entries inserted (`true`) or removed inside `[first, last]` since the open, in order:
    /// applied when the block is read.
    pending: Vec<(Entry, bool)>,
    /// Entries it holds: the block's, plus inserts, minus removes.
    len: usize,
}

/// A cold run keeps at most this many writes (or 1/16 of its block's entries) into a snapshot,
/// and an index's runs at most [`MAX_KEPT_WRITES`] in all (`Entries::note_heavy`).
const MAX_RUN_WRITES: usize = 64;
const MAX_KEPT_WRITES: usize = 4096;

/// An entry encoded as a block holds it (a value entry when `values`; element entries hold
/// strings, `Index::add`).
fn encode_entry(e: &Entry, values: bool) -> Box<[u8]> {
    if values {
        return snapshot::encode_index_value_entry((e.key.as_opt(), e.id()));
    }
    let s = match &e.key {
        IKey::Val(Value::String(s)) => s.as_str(),
        _ => "",
    };
    snapshot::encode_index_elem_entry((s, e.id()))
}

/// Reads one index block into a sink: (block, value entries?, sink). The repository's reads
/// of the snapshot file (`snapshot::load_index_block`).
pub(crate) type BlockLoader<'a> =
    dyn FnMut(&IndexBlock, bool, &mut dyn IndexSink) -> Result<()> + 'a;

/// An index's value or element entries; see the module docs.
#[derive(Clone, Default)]
pub(crate) struct Entries {
    hot: Chunked<Entry>,
    cold: Vec<Run>,
    /// Entries in the cold runs (their `len`s).
    cold_len: usize,
    /// Value entries (`true`) or element entries: how the blocks decode.
    values: bool,
    /// Cold runs a read passed over (indices into `cold`).
    noted: RefCell<BTreeSet<usize>>,
}

impl std::fmt::Debug for Entries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entries")
            .field("hot", &self.hot)
            .field("cold", &self.cold.len())
            .finish()
    }
}

/// Equal when both are read whole and hold the same entries (lazy ones compare unequal: the
/// caller reads them whole first, as `verify()` does).
impl PartialEq for Entries {
    fn eq(&self, other: &Self) -> bool {
        self.cold.is_empty() && other.cold.is_empty() && self.hot == other.hot
    }
}

/// Whether `e` sorts before the lower bound `l`.
fn below(e: &Entry, l: &Bound<Entry>) -> bool {
    match l {
        Bound::Included(k) => e < k,
        Bound::Excluded(k) => e <= k,
        Bound::Unbounded => false,
    }
}

/// Whether `e` sorts after the upper bound `h`.
fn above(e: &Entry, h: &Bound<Entry>) -> bool {
    match h {
        Bound::Included(k) => e > k,
        Bound::Excluded(k) => e >= k,
        Bound::Unbounded => false,
    }
}

/// Collects decoded entries in order, each checked to follow the one before.
struct Collect {
    values: bool,
    out: Builder<Entry>,
}

impl Collect {
    fn push(&mut self, e: Entry) -> Result<()> {
        if self.out.last().is_some_and(|l| *l >= e) {
            return Err(Error::decode(
                "snapshot index",
                "entries not strictly ascending",
            ));
        }
        self.out.push(e, ());
        Ok(())
    }
}

impl IndexSink for Collect {
    fn value(&mut self, v: Option<Value>, id: &str) -> Result<()> {
        if !self.values {
            return Err(Error::decode(
                "snapshot index",
                "a value entry among elements",
            ));
        }
        self.push(Entry::new(v.map_or(IKey::Missing, IKey::Val), id))
    }
    fn elem(&mut self, e: &str, id: &str) -> Result<()> {
        if self.values {
            return Err(Error::decode(
                "snapshot index",
                "an element entry among values",
            ));
        }
        self.push(Entry::new(IKey::Val(Value::String(Name::new(e))), id))
    }
}

/// The one entry `bytes` encode (a block's first or last, from the directory).
fn key_of(bytes: &[u8], values: bool) -> Result<Entry> {
    let mut c = Collect {
        values,
        out: Builder::new(),
    };
    snapshot::decode_index_entry(bytes, values, &mut c)?;
    let e = c.out.finish().first().cloned();
    e.ok_or_else(|| Error::decode("snapshot index", "no key"))
}

impl Entries {
    /// Entries read whole (built, or restored eagerly).
    pub(crate) fn hot(hot: Chunked<Entry>) -> Entries {
        Entries {
            hot,
            ..Entries::default()
        }
    }

    /// Every entry still in `blocks` (value entries when `values`), none read: each block's
    /// first and last entries decoded and checked to be in order within and across blocks.
    pub(crate) fn cold(blocks: &[IndexBlock], values: bool) -> Result<Entries> {
        let mut cold: Vec<Run> = Vec::with_capacity(blocks.len());
        let mut cold_len = 0;
        for b in blocks {
            let first = key_of(&b.first, values)?;
            let last = key_of(&b.last, values)?;
            let ordered = match b.count {
                0 => false,
                1 => first == last,
                _ => first < last,
            };
            if !ordered || cold.last().is_some_and(|r| r.last >= first) {
                return Err(Error::decode("snapshot index", "block keys out of order"));
            }
            let pending = b
                .pending
                .iter()
                .map(|(bytes, insert)| Ok((key_of(bytes, values)?, *insert)))
                .collect::<Result<Vec<_>>>()?;
            let len = b.entries().and_then(|n| usize::try_from(n).ok());
            let inside = pending.iter().all(|(e, _)| first <= *e && *e <= last);
            let Some(len) = len.filter(|_| inside) else {
                return Err(Error::decode("snapshot index", "bad kept writes"));
            };
            cold_len += len;
            cold.push(Run {
                first,
                last,
                block: b.clone(),
                pending,
                len,
            });
        }
        Ok(Entries {
            cold,
            cold_len,
            values,
            ..Entries::default()
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.hot.len() + self.cold_len
    }

    /// Whether every entry is read (no block left in the snapshot).
    pub(crate) fn is_hot(&self) -> bool {
        self.cold.is_empty()
    }

    /// Whether a read passed over a cold run since the last [`Entries::materialize`].
    pub(crate) fn has_notes(&self) -> bool {
        !self.noted.borrow().is_empty()
    }

    pub(crate) fn clear_notes(&self) {
        self.noted.borrow_mut().clear();
    }

    fn note(&self, i: usize) {
        self.noted.borrow_mut().insert(i);
    }

    /// Every entry, in order: only when read whole (the snapshot encoder, `verify()`).
    pub(crate) fn all(&self) -> impl DoubleEndedIterator<Item = &Entry> + '_ {
        debug_assert!(self.is_hot());
        self.hot.keys()
    }

    /// Every entry in order, as the snapshot encoder takes them (`store/snapshot/indexes.rs`):
    /// the hot entries between the cold runs (`map`ped) and each cold run's block with the
    /// writes kept with it.
    pub(crate) fn snapshot_pieces<'a, T: 'a>(
        &'a self,
        map: fn(&'a Entry) -> T,
    ) -> Vec<Piece<'a, T>> {
        let mut out = Vec::with_capacity(2 * self.cold.len() + 1);
        let mut lo = Bound::Unbounded;
        for r in &self.cold {
            let hi = Bound::Excluded(r.first.clone());
            out.push(Piece::New(Box::new(self.hot.range_keys((lo, hi)).map(map))));
            let pending = r.pending.iter();
            let kept = pending.map(|(e, ins)| (encode_entry(e, self.values), *ins));
            out.push(Piece::Kept(&r.block, kept.collect()));
            lo = Bound::Excluded(r.last.clone());
        }
        let rest = self.hot.range_keys((lo, Bound::Unbounded));
        out.push(Piece::New(Box::new(rest.map(map))));
        out
    }

    /// Note the cold runs whose kept writes a snapshot should no longer carry in its
    /// directory (they are decoded at every restore): those with more than
    /// [`MAX_RUN_WRITES`] or 1/16 of their block's entries, then the heaviest until at most
    /// [`MAX_KEPT_WRITES`] remain. The repository reads them before it writes the snapshot.
    pub(crate) fn note_heavy(&self) {
        let mut light = Vec::new();
        let mut total = 0;
        for (i, r) in self.cold.iter().enumerate() {
            let n = r.pending.len();
            if n > MAX_RUN_WRITES.max(r.block.count as usize / 16) {
                self.note(i);
            } else if n > 0 {
                total += n;
                light.push((n, i));
            }
        }
        light.sort_unstable_by(|a, b| b.cmp(a));
        for (n, i) in light {
            if total <= MAX_KEPT_WRITES {
                break;
            }
            self.note(i);
            total -= n;
        }
    }

    /// Bytes of the snapshot's blocks not read yet.
    pub(crate) fn cold_bytes(&self) -> u64 {
        self.cold.iter().map(|r| u64::from(r.block.len)).sum()
    }

    /// The cold runs `[a, b)` that may hold an entry inside `(l, h)`.
    fn overlapping(&self, l: &Bound<Entry>, h: &Bound<Entry>) -> (usize, usize) {
        let a = self.cold.partition_point(|r| below(&r.last, l));
        let b = self.cold.partition_point(|r| !above(&r.first, h));
        (a, b.max(a))
    }

    /// The entries with keys in `(lo, hi)`, in order both ways. A cold run inside the range
    /// is noted when the iteration reaches it, and skipped.
    pub(crate) fn range(
        &self,
        lo: &Bound<IKey>,
        hi: &Bound<IKey>,
    ) -> impl DoubleEndedIterator<Item = &Entry> + '_ {
        let r = entry_bounds(lo, hi).map(|(l, h)| {
            let (a, b) = self.overlapping(&l, &h);
            self.pieces(l, h, a, b)
        });
        r.into_iter().flatten()
    }

    /// The entries from `(l, h)`, where cold runs `[a, b)` lie: the hot entries between them,
    /// each run noted when reached.
    fn pieces(
        &self,
        l: Bound<Entry>,
        h: Bound<Entry>,
        a: usize,
        b: usize,
    ) -> impl DoubleEndedIterator<Item = &Entry> + '_ {
        let m = b - a;
        (0..2 * m + 1)
            .flat_map(move |p| {
                if p % 2 == 1 {
                    self.note(a + p / 2);
                    return None;
                }
                let g = p / 2;
                let lo = match g {
                    0 => l.clone(),
                    _ => Bound::Excluded(self.cold[a + g - 1].last.clone()),
                };
                let hi = match g {
                    _ if g == m => h.clone(),
                    _ => Bound::Excluded(self.cold[a + g].first.clone()),
                };
                Some(self.hot.range_keys((lo, hi)))
            })
            .flatten()
    }

    /// The string entries starting with `p`, in order (cold runs noted as by `range`).
    pub(crate) fn prefix<'a>(&'a self, p: &str) -> impl Iterator<Item = &'a Entry> + 'a {
        let (l, a, b) = self.prefix_runs(p);
        let p = p.to_string();
        self.pieces(l, Bound::Unbounded, a, b)
            .take_while(move |e| matches!(&e.key, IKey::Val(Value::String(s)) if s.starts_with(&p)))
    }

    /// The lower bound of strings starting with `p`, and the cold runs `[a, b)` that may hold
    /// one (they are contiguous in the order).
    fn prefix_runs(&self, p: &str) -> (Bound<Entry>, usize, usize) {
        let l = Bound::Included(Entry {
            key: IKey::Val(Value::String(Name::new(p))),
            id: super::entry::IdPos::Lo,
        });
        let a = self.cold.partition_point(|r| below(&r.last, &l));
        let starts = |e: &Entry| matches!(&e.key, IKey::Val(Value::String(s)) if s.starts_with(p));
        let b = a + self.cold[a..].partition_point(|r| below(&r.first, &l) || starts(&r.first));
        (l, a, b)
    }

    /// Number of entries with keys in `(lo, hi)`, counting at most `cap`: a cold run wholly
    /// inside counts its block's entries without reading it; one the range cuts is noted.
    pub(crate) fn count_range(&self, lo: &Bound<IKey>, hi: &Bound<IKey>, cap: usize) -> usize {
        let Some((l, h)) = entry_bounds(lo, hi) else {
            return 0;
        };
        let (a, b) = self.overlapping(&l, &h);
        let inside = |r: &Run| !below(&r.first, &l) && !above(&r.last, &h);
        self.count_in(a, b, cap, inside, |cap| {
            self.hot
                .range_keys((l.clone(), h.clone()))
                .take(cap)
                .count()
        })
    }

    /// Number of string entries starting with `p`, counting at most `cap` (as `count_range`).
    pub(crate) fn count_prefix(&self, p: &str, cap: usize) -> usize {
        let (_, a, b) = self.prefix_runs(p);
        let starts = |e: &Entry| matches!(&e.key, IKey::Val(Value::String(s)) if s.starts_with(p));
        let inside = |r: &Run| starts(&r.first) && starts(&r.last);
        self.count_in(a, b, cap, inside, |cap| {
            self.hot_prefix(p).take(cap).count()
        })
    }

    /// The hot entries starting with `p` (cold runs are not noted: the count notes them).
    fn hot_prefix<'a>(&'a self, p: &'a str) -> impl Iterator<Item = &'a Entry> + 'a {
        let l = Bound::Included(Entry {
            key: IKey::Val(Value::String(Name::new(p))),
            id: super::entry::IdPos::Lo,
        });
        self.hot
            .range_keys((l, Bound::Unbounded))
            .take_while(move |e| matches!(&e.key, IKey::Val(Value::String(s)) if s.starts_with(p)))
    }

    /// The count over cold runs `[a, b)` (those `inside` by their counts; the others are
    /// noted, unless those inside reach `cap`) plus `hot(at most)`, at most `cap`.
    fn count_in(
        &self,
        a: usize,
        b: usize,
        cap: usize,
        inside: impl Fn(&Run) -> bool,
        hot: impl FnOnce(usize) -> usize,
    ) -> usize {
        let runs = &self.cold[a..b];
        let n: usize = runs.iter().filter(|r| inside(r)).map(|r| r.len).sum();
        if n >= cap {
            return cap;
        }
        for (i, r) in runs.iter().enumerate() {
            if !inside(r) {
                self.note(a + i);
            }
        }
        n + hot(cap - n)
    }

    /// Every entry in order (`desc`: from the last), for a walk that stops once it has what it
    /// needs: it ends at the first cold run, which is noted with the runs after it up to as many
    /// entries as the walk had passed (so a long walk reads blocks in doubling batches).
    pub(crate) fn walk(&self, desc: bool) -> Box<dyn Iterator<Item = &Entry> + '_> {
        if self.cold.is_empty() {
            return if desc {
                Box::new(self.hot.keys().rev())
            } else {
                Box::new(self.hot.keys())
            };
        }
        let walked = std::rc::Rc::new(std::cell::Cell::new(0usize));
        let count = {
            let w = walked.clone();
            move |_: &&Entry| w.set(w.get() + 1)
        };
        let n = self.cold.len();
        let end = move || {
            let mut want = walked.get().max(1);
            for k in 0..n {
                let i = if desc { n - 1 - k } else { k };
                self.note(i);
                let c = self.cold[i].len.max(1);
                if c >= want {
                    break;
                }
                want -= c;
            }
            None
        };
        if desc {
            let l = Bound::Excluded(self.cold[n - 1].last.clone());
            let hot = self.hot.range_keys((l, Bound::Unbounded)).rev();
            Box::new(hot.inspect(count).chain(std::iter::from_fn(end)))
        } else {
            let h = Bound::Excluded(self.cold[0].first.clone());
            let hot = self.hot.range_keys((Bound::Unbounded, h));
            Box::new(hot.inspect(count).chain(std::iter::from_fn(end)))
        }
    }

    /// Read the noted cold runs (every one when `all`) with `load`, each checked against its
    /// block (checksum, count), its entries in order and equal at the ends to the directory's; then
    /// the writes kept with it are applied and its entries are hot. Whether any was read.
    pub(crate) fn materialize(&mut self, all: bool, load: &mut BlockLoader<'_>) -> Result<bool> {
        let noted = std::mem::take(self.noted.get_mut());
        let pick: Vec<usize> = if all {
            (0..self.cold.len()).collect()
        } else {
            noted.into_iter().filter(|&i| i < self.cold.len()).collect()
        };
        if pick.is_empty() {
            return Ok(false);
        }
        let mut read = Chunked::new();
        for &i in &pick {
            let r = &self.cold[i];
            let mut c = Collect {
                values: self.values,
                out: Builder::new(),
            };
            load(&r.block, self.values, &mut c)?;
            let mut got = c.out.finish();
            if got.len() != r.block.count as usize
                || got.first() != Some(&r.first)
                || got.last() != Some(&r.last)
            {
                return Err(Error::decode(
                    "snapshot index",
                    "a block's entries differ from its directory entry",
                ));
            }
            for (e, insert) in &r.pending {
                if *insert {
                    got.insert(e.clone());
                } else {
                    got.remove(e);
                }
            }
            // Runs are in order, and their entries stay inside their ranges: their chunks
            // follow each other.
            read.append(got);
        }
        self.hot.merge_disjoint(read);
        let mut k = 0;
        let mut next = pick.iter().peekable();
        self.cold.retain(|_| {
            let take = next.next_if_eq(&&k).is_some();
            k += 1;
            !take
        });
        self.cold_len = self.cold.iter().map(|r| r.len).sum();
        Ok(true)
    }

    /// The cold run whose range holds `e`, if any.
    fn run_of(&self, e: &Entry) -> Option<usize> {
        let i = self.cold.partition_point(|r| r.last < *e);
        self.cold.get(i).filter(|r| r.first <= *e).map(|_| i)
    }

    /// Insert `e`; inside a cold run's range, kept with the run. The index's maintenance
    /// removes an item's old entries before it inserts its new ones, so `e` is in a block only
    /// if a write kept with its run says so (a list may name an element twice).
    pub(crate) fn insert(&mut self, e: Entry) {
        match self.run_of(&e) {
            Some(i) => self.keep(i, e, true),
            None => {
                self.hot.insert(e);
            }
        }
    }

    /// Remove `e`; inside a cold run's range, kept with the run (an entry unless a write kept
    /// with its run removed it, as `insert`).
    pub(crate) fn remove(&mut self, e: &Entry) {
        match self.run_of(e) {
            Some(i) => self.keep(i, e.clone(), false),
            None => {
                self.hot.remove(e);
            }
        }
    }

    /// Keep an insert or a removal of `e` with cold run `i`, unless a write kept with it left
    /// `e` as this one would.
    fn keep(&mut self, i: usize, e: Entry, insert: bool) {
        let r = &mut self.cold[i];
        let last = r.pending.iter().rev().find(|(x, _)| *x == e);
        if last.is_some_and(|(_, ins)| *ins == insert) {
            return;
        }
        r.pending.push((e, insert));
        if insert {
            r.len += 1;
            self.cold_len += 1;
        } else {
            r.len -= 1;
            self.cold_len -= 1;
        }
    }

    /// Whether `e` is an entry (every block read).
    pub(crate) fn contains(&self, e: &Entry) -> bool {
        self.hot.contains(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Writer;
    use crate::store::{MemStorage, Storage};
    use std::collections::BTreeSet;

    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            (z ^ (z >> 31)) % n
        }
    }

    /// A random key: missing, a number, or a string of a small alphabet.
    fn key(rng: &mut Rng) -> IKey {
        match rng.below(8) {
            0 => IKey::Missing,
            1..=4 => IKey::Val(Value::Number(rng.below(300) as f64 / 2.0)),
            _ => {
                let s: String = (0..1 + rng.below(3))
                    .map(|_| (b'a' + rng.below(4) as u8) as char)
                    .collect();
                IKey::Val(Value::String(Name::new(&s)))
            }
        }
    }

    fn entry(rng: &mut Rng) -> Entry {
        Entry::new(key(rng), &format!("i{:04}", rng.below(2000)))
    }

    /// The value entries `set` encoded as blocks of 1 to 40 entries in one file.
    fn file(set: &BTreeSet<Entry>, rng: &mut Rng) -> (MemStorage, Vec<IndexBlock>) {
        let mut bytes = vec![0u8; 12];
        let mut blocks = Vec::new();
        let all: Vec<&Entry> = set.iter().collect();
        let enc = |e: &Entry| {
            let mut w = Writer::new();
            match &e.key {
                IKey::Missing => w.u8(0),
                IKey::Val(v) => {
                    w.u8(1);
                    v.encode(&mut w);
                }
            }
            w.lp(e.id().as_bytes());
            w.into_inner()
        };
        let mut i = 0;
        while i < all.len() {
            let n = (1 + rng.below(40) as usize).min(all.len() - i);
            let part = &all[i..i + n];
            let body: Vec<u8> = part.iter().flat_map(|e| enc(e)).collect();
            blocks.push(IndexBlock {
                offset: bytes.len() as u64,
                len: body.len() as u32,
                count: n as u32,
                crc: crate::hashing::block_sum(&body),
                first: enc(part[0]).into(),
                last: enc(part[n - 1]).into(),
                pending: Vec::new(),
            });
            bytes.extend(body);
            i += n;
        }
        (MemStorage::from_bytes(bytes), blocks)
    }

    /// Run `read` until it notes nothing, reading the noted blocks in between.
    fn settle<T>(e: &mut Entries, src: &MemStorage, read: impl Fn(&Entries) -> T) -> T {
        loop {
            e.clear_notes();
            let r = read(e);
            if !e.has_notes() {
                return r;
            }
            let mut load = |b: &IndexBlock, values: bool, sink: &mut dyn IndexSink| {
                snapshot::load_index_block(src, b, values, sink)
            };
            assert!(
                e.materialize(false, &mut load).unwrap(),
                "a round reads a block"
            );
        }
    }

    fn bound(rng: &mut Rng) -> Bound<IKey> {
        match rng.below(5) {
            0 => Bound::Unbounded,
            1 | 2 => Bound::Included(key(rng)),
            _ => Bound::Excluded(key(rng)),
        }
    }

    /// The model's entries with keys in `(lo, hi)`.
    fn model_range(m: &BTreeSet<Entry>, lo: &Bound<IKey>, hi: &Bound<IKey>) -> Vec<Entry> {
        let inside = |e: &Entry| {
            let above = match lo {
                Bound::Included(k) => e.key >= *k,
                Bound::Excluded(k) => e.key > *k,
                Bound::Unbounded => true,
            };
            let below = match hi {
                Bound::Included(k) => e.key <= *k,
                Bound::Excluded(k) => e.key < *k,
                Bound::Unbounded => true,
            };
            above && below
        };
        m.iter().filter(|e| inside(e)).cloned().collect()
    }

    #[test]
    fn cold_entries_read_on_demand_answer_like_a_set() {
        for seed in 0..40 {
            let mut rng = Rng(seed);
            let mut model: BTreeSet<Entry> = (0..rng.below(600)).map(|_| entry(&mut rng)).collect();
            let (src, blocks) = file(&model, &mut rng);
            let mut e = Entries::cold(&blocks, true).unwrap();
            assert_eq!(e.len(), model.len());
            for step in 0..300 {
                let what = format!("seed {seed} step {step}");
                match rng.below(9) {
                    0 => {
                        let x = entry(&mut rng);
                        if model.remove(&x) {
                            e.remove(&x);
                        } else {
                            model.insert(x.clone());
                            e.insert(x);
                        }
                    }
                    1 | 2 => {
                        let (lo, hi) = (bound(&mut rng), bound(&mut rng));
                        let want = model_range(&model, &lo, &hi);
                        let fwd: Vec<Entry> =
                            settle(&mut e, &src, |e| e.range(&lo, &hi).cloned().collect());
                        assert_eq!(fwd, want, "{what}");
                        let mut back: Vec<Entry> =
                            settle(&mut e, &src, |e| e.range(&lo, &hi).rev().cloned().collect());
                        back.reverse();
                        assert_eq!(back, want, "{what}");
                    }
                    3 | 4 => {
                        let (lo, hi) = (bound(&mut rng), bound(&mut rng));
                        let cap = 1 + rng.below(700) as usize;
                        let want = model_range(&model, &lo, &hi).len().min(cap);
                        let n = settle(&mut e, &src, |e| e.count_range(&lo, &hi, cap));
                        assert_eq!(n, want, "{what}");
                    }
                    5 => {
                        let p: String = (0..rng.below(3))
                            .map(|_| (b'a' + rng.below(4) as u8) as char)
                            .collect();
                        let starts = |x: &Entry| matches!(&x.key, IKey::Val(Value::String(s)) if s.starts_with(&p));
                        let want: Vec<Entry> =
                            model.iter().filter(|x| starts(x)).cloned().collect();
                        let got: Vec<Entry> =
                            settle(&mut e, &src, |e| e.prefix(&p).cloned().collect());
                        assert_eq!(got, want, "{what}");
                        let cap = 1 + rng.below(300) as usize;
                        let n = settle(&mut e, &src, |e| e.count_prefix(&p, cap));
                        assert_eq!(n, want.len().min(cap), "{what}");
                    }
                    6 | 7 => {
                        let (desc, k) = (rng.below(2) == 0, rng.below(120) as usize);
                        let want: Vec<Entry> = if desc {
                            model.iter().rev().take(k).cloned().collect()
                        } else {
                            model.iter().take(k).cloned().collect()
                        };
                        let got: Vec<Entry> =
                            settle(&mut e, &src, |e| e.walk(desc).take(k).cloned().collect());
                        assert_eq!(got, want, "{what}");
                    }
                    _ => assert_eq!(e.len(), model.len(), "{what}"),
                }
            }
            let mut load = |b: &IndexBlock, values: bool, sink: &mut dyn IndexSink| {
                snapshot::load_index_block(&src, b, values, sink)
            };
            e.materialize(true, &mut load).unwrap();
            assert!(e.is_hot());
            assert!(e.all().eq(model.iter()), "seed {seed}: read whole");
        }
    }

    #[test]
    fn a_damaged_block_fails_when_read() {
        let mut rng = Rng(1);
        let model: BTreeSet<Entry> = (0..400).map(|_| entry(&mut rng)).collect();
        let (src, blocks) = file(&model, &mut rng);
        let mut e = Entries::cold(&blocks, true).unwrap();
        let mut bytes = vec![0u8; src.len().unwrap() as usize];
        src.read_at(0, &mut bytes).unwrap();
        let b = &blocks[blocks.len() / 2];
        bytes[b.offset as usize + 1] ^= 0x40;
        let bad = MemStorage::from_bytes(bytes);
        let mut load = |b: &IndexBlock, values: bool, sink: &mut dyn IndexSink| {
            snapshot::load_index_block(&bad, b, values, sink)
        };
        assert!(e.materialize(true, &mut load).is_err());
        // Keys out of order in the directory are refused before any block is read.
        let mut swapped = blocks.clone();
        swapped.swap(0, 1);
        assert!(Entries::cold(&swapped, true).is_err());
    }
}
