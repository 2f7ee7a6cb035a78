//! [`Chunked`]: an ordered map kept as a list of sorted chunks of bounded size — a B+ tree of
//! two levels. It holds the items of a collection (`item_map.rs`) and the entries of a
//! secondary index (`query/index.rs`, as a set: `V = ()`).
//!
//! Why not `std::collections::BTreeMap`/`BTreeSet` (docs/design.md §6.5): std's only bulk build
//! (`from_iter`) collects its input into a vector and sorts it with a scratch buffer of half its
//! size, so building a tree of a million items from a snapshot held the items up to three times
//! at its peak, and wasm memory never shrinks below a peak. Inserting in ascending order instead
//! (a bulk load, an index of increasing values) leaves std's nodes about half full for good.
//! Here a sorted input is moved once into chunks filled to capacity ([`Builder`]), the chunks
//! of sorted input loaded later (a snapshot block) are spliced in without touching their
//! entries, and appends fill the last chunk before opening the next. Iteration walks
//! contiguous slices.
//!
//! A chunk holds its keys and its values in two vectors (as std's nodes do), so a search inside
//! a chunk reads keys only, in order; and the map keeps a copy of each chunk's last key (its
//! fence) in one vector of its own, so finding the chunk is a binary search over contiguous
//! keys.
//!
//! Invariants (`check`): no chunk is empty, none holds more than [`Chunked::CAP`] entries, the
//! keys of the chunks' concatenation are strictly ascending, and `fences[i]` equals the last
//! key of `chunks[i]`.

use std::cell::Cell;
use std::cmp::Ordering;
use std::ops::Bound;

/// A sorted map of distinct keys in chunks of at most [`Chunked::CAP`] entries.
#[derive(Clone)]
pub struct Chunked<K, V = ()> {
    /// The last key of each chunk.
    fences: Vec<K>,
    chunks: Vec<Chunk<K, V>>,
    len: usize,
    /// The chunk the last search ended in: a search tries it first (a finger), so a run of
    /// lookups in key order (an index range's items, a sorted batch) skips the binary search.
    finger: Cell<usize>,
}

/// One chunk: `keys[i]` maps to `vals[i]`.
#[derive(Clone)]
struct Chunk<K, V> {
    keys: Vec<K>,
    vals: Vec<V>,
}

impl<K: Clone, V> Chunk<K, V> {
    /// A chunk of one entry, with room for `cap`.
    fn with(k: K, v: V, cap: usize) -> Self {
        let (mut keys, mut vals) = (Vec::with_capacity(cap), Vec::with_capacity(cap));
        keys.push(k);
        vals.push(v);
        Chunk { keys, vals }
    }

    fn len(&self) -> usize {
        self.keys.len()
    }

    fn last(&self) -> &K {
        self.keys.last().expect("no empty chunk")
    }

    /// Room for `n` more entries.
    fn reserve(&mut self, n: usize) {
        self.keys.reserve_exact(n);
        self.vals.reserve_exact(n);
    }

    fn insert(&mut self, at: usize, k: K, v: V) {
        self.keys.insert(at, k);
        self.vals.insert(at, v);
    }

    fn remove(&mut self, at: usize) -> (K, V) {
        (self.keys.remove(at), self.vals.remove(at))
    }

    /// The entries from `at` on (`at` is inside), moved into a chunk of their own with room
    /// for `cap`.
    fn split_off(&mut self, at: usize, cap: usize) -> Self {
        let cap = cap.max(self.len() - at);
        let (mut keys, mut vals) = (Vec::with_capacity(cap), Vec::with_capacity(cap));
        keys.extend(self.keys.drain(at..));
        vals.extend(self.vals.drain(at..));
        Chunk { keys, vals }
    }

    /// Append `other`'s entries, which sort after these.
    fn extend(&mut self, other: Self) {
        self.keys.extend(other.keys);
        self.vals.extend(other.vals);
    }

    fn entries(&self) -> impl DoubleEndedIterator<Item = (&K, &V)> + Clone {
        self.keys.iter().zip(&self.vals)
    }
}

/// An entry's place while the map does not change, in 32 bits: its chunk's index and its
/// offset in it (below 256: `CAP` is at most 256). Slots order as their entries do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Slot(pub u32);

/// A position: chunk index and offset in it. `(chunks.len(), 0)` is the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pos {
    chunk: usize,
    at: usize,
}

impl<K, V> Default for Chunked<K, V> {
    fn default() -> Self {
        Chunked::new()
    }
}

/// Equal when the entries are, however they are chunked.
impl<K: PartialEq + Clone, V: PartialEq> PartialEq for Chunked<K, V> {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl<K: Eq + Clone, V: Eq> Eq for Chunked<K, V> {}

impl<K: std::fmt::Debug + Clone, V: std::fmt::Debug> std::fmt::Debug for Chunked<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K, V> Chunked<K, V> {
    /// Entries per chunk: about 2 KiB of them, between 16 and 256. An insertion moves at most
    /// one chunk's entries; a lookup is a binary search over the fences, then a scan of one
    /// chunk's keys.
    pub const CAP: usize = {
        let size = std::mem::size_of::<(K, V)>();
        let n = 2048 / if size == 0 { 1 } else { size };
        if n < 16 {
            16
        } else if n > 256 {
            256
        } else {
            n
        }
    };

    pub const fn new() -> Self {
        Chunked {
            fences: Vec::new(),
            chunks: Vec::new(),
            len: 0,
            finger: Cell::new(0),
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn end(&self) -> Pos {
        Pos {
            chunk: self.chunks.len(),
            at: 0,
        }
    }
}

impl<K: Clone, V> Chunked<K, V> {
    /// The entries in key order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&K, &V)> + Clone + '_ {
        self.chunks.iter().flat_map(Chunk::entries)
    }

    /// The keys in order.
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &K> + Clone + '_ {
        self.chunks.iter().flat_map(|c| c.keys.iter())
    }

    pub fn first(&self) -> Option<&K> {
        self.chunks.first().map(|c| &c.keys[0])
    }

    pub fn last(&self) -> Option<&K> {
        self.fences.last()
    }

    /// The entries with their slots, in order; `None` when the map has too many chunks
    /// (2^24) for a slot to name them.
    pub fn slots(&self) -> Option<impl Iterator<Item = (Slot, &K, &V)> + '_> {
        (self.chunks.len() <= 1 << 24).then(|| {
            self.chunks.iter().enumerate().flat_map(|(i, c)| {
                let at = (i as u32) << 8;
                (at..)
                    .map(Slot)
                    .zip(c.entries())
                    .map(|(s, (k, v))| (s, k, v))
            })
        })
    }

    /// The entry at `s`, from [`Chunked::slots`] with no change in between.
    pub fn at_slot(&self, s: Slot) -> (&K, &V) {
        let c = &self.chunks[(s.0 >> 8) as usize];
        let at = (s.0 & 0xff) as usize;
        (&c.keys[at], &c.vals[at])
    }

    /// The first position whose key is not `before` (`before` holds for a prefix of the keys
    /// and for nothing after it), or the end.
    pub fn partition_point(&self, mut before: impl FnMut(&K) -> bool) -> Pos {
        // The chunk is the first whose fence is not `before`: the finger's, when its fence is
        // not and the previous one is.
        let f = self.finger.get();
        let at_finger = f < self.fences.len()
            && !before(&self.fences[f])
            && (f == 0 || before(&self.fences[f - 1]));
        let chunk = if at_finger {
            f
        } else {
            let c = self.fences.partition_point(&mut before);
            self.finger.set(c);
            c
        };
        match self.chunks.get(chunk) {
            // A linear scan inside the chunk, as std's B-tree nodes do: its keys are read in
            // order (the hardware fetches the next lines ahead), where a binary search would
            // wait for each line in turn.
            Some(c) => Pos {
                chunk,
                at: c.keys.iter().position(|k| !before(k)).unwrap_or(c.len()),
            },
            None => self.end(),
        }
    }

    /// The entries from `from` (included) to `to` (excluded).
    pub fn between(&self, from: Pos, to: Pos) -> impl DoubleEndedIterator<Item = (&K, &V)> + '_ {
        let from = from.min(to);
        // Chunks `from.chunk ..= to.chunk` (the last one only when `to` is inside it), each
        // sliced at the ends.
        let last = if to.at == 0 { to.chunk } else { to.chunk + 1 };
        let chunks = self.chunks.get(from.chunk..last).unwrap_or_default();
        chunks.iter().enumerate().flat_map(move |(i, c)| {
            let ci = from.chunk + i;
            let start = if ci == from.chunk { from.at } else { 0 };
            let end = if ci == to.chunk { to.at } else { c.len() };
            let r = start..end.max(start);
            c.keys[r.clone()].iter().zip(&c.vals[r])
        })
    }

    /// Search with `f` comparing a key to the target (as `slice::binary_search_by`): `Ok`
    /// with the position of the match, or `Err` with where it would be inserted.
    pub fn search(&self, mut f: impl FnMut(&K) -> Ordering) -> Result<Pos, Pos> {
        let p = self.partition_point(|k| f(k) == Ordering::Less);
        let hit = self
            .chunks
            .get(p.chunk)
            .and_then(|c| c.keys.get(p.at))
            .is_some_and(|k| f(k) == Ordering::Equal);
        if hit {
            Ok(p)
        } else {
            Err(p)
        }
    }

    /// The value at `p`, a position [`Chunked::search`] or [`Chunked::insert_at`] returned
    /// with no change in between.
    pub fn at_mut(&mut self, p: Pos) -> &mut V {
        &mut self.chunks[p.chunk].vals[p.at]
    }

    pub fn get(&self, f: impl FnMut(&K) -> Ordering) -> Option<&V> {
        let p = self.search(f).ok()?;
        Some(&self.chunks[p.chunk].vals[p.at])
    }

    /// Set chunk `i`'s fence to its last key.
    fn refence(&mut self, i: usize) {
        self.fences[i] = self.chunks[i].last().clone();
    }

    /// Insert chunk `c` at index `i` of the chunk list.
    fn insert_chunk(&mut self, i: usize, c: Chunk<K, V>) {
        self.fences.insert(i, c.last().clone());
        self.chunks.insert(i, c);
    }

    fn remove_chunk(&mut self, i: usize) -> Chunk<K, V> {
        self.fences.remove(i);
        self.chunks.remove(i)
    }

    /// Insert `(k, v)` at `p`, the `Err` of a [`Chunked::search`] for `k` with no change in
    /// between (so the keys stay sorted); where it ended up.
    pub fn insert_at(&mut self, p: Pos, k: K, v: V) -> Pos {
        self.len += 1;
        if self.chunks.is_empty() {
            self.insert_chunk(0, Chunk::with(k, v, 4.min(Self::CAP)));
            return Pos { chunk: 0, at: 0 };
        }
        // Past the end: after the last chunk's last entry.
        let p = if p.chunk == self.chunks.len() {
            let chunk = p.chunk - 1;
            Pos {
                chunk,
                at: self.chunks[chunk].len(),
            }
        } else {
            p
        };
        // At the start of a chunk: the end of the previous one, if it has room.
        let p = if p.at == 0 && p.chunk > 0 && self.chunks[p.chunk - 1].len() < Self::CAP {
            Pos {
                chunk: p.chunk - 1,
                at: self.chunks[p.chunk - 1].len(),
            }
        } else {
            p
        };
        let c = &mut self.chunks[p.chunk];
        if c.len() < Self::CAP {
            Self::grow(c);
            let at_end = p.at == c.len();
            c.insert(p.at, k, v);
            if at_end {
                self.refence(p.chunk);
            }
            return p;
        }
        if p.at == c.len() {
            // Appending past a full chunk: open the next one (appends fill chunks entirely).
            let next = p.chunk + 1;
            match self.chunks.get_mut(next) {
                Some(n) if n.len() < Self::CAP => {
                    Self::grow(n);
                    n.insert(0, k, v);
                }
                _ => self.insert_chunk(next, Chunk::with(k, v, Self::CAP)),
            }
            return Pos { chunk: next, at: 0 };
        }
        // A full chunk: split it in two halves.
        let half = Self::CAP / 2;
        let upper = c.split_off(half, Self::CAP);
        self.refence(p.chunk);
        self.insert_chunk(p.chunk + 1, upper);
        let p = if p.at <= half {
            p
        } else {
            Pos {
                chunk: p.chunk + 1,
                at: p.at - half,
            }
        };
        let c = &mut self.chunks[p.chunk];
        let at_end = p.at == c.len();
        c.insert(p.at, k, v);
        if at_end {
            self.refence(p.chunk);
        }
        p
    }

    /// Room for one more entry in a chunk that is not full: double, up to `CAP`.
    fn grow(c: &mut Chunk<K, V>) {
        if c.len() == c.keys.capacity() || c.len() == c.vals.capacity() {
            let want = (c.len() * 2).clamp(4, Self::CAP);
            c.reserve(want - c.len());
        }
    }

    /// Remove the entry `f` finds.
    pub fn remove_by(&mut self, f: impl FnMut(&K) -> Ordering) -> Option<(K, V)> {
        let p = self.search(f).ok()?;
        self.len -= 1;
        let c = &mut self.chunks[p.chunk];
        let e = c.remove(p.at);
        if c.len() == 0 {
            self.remove_chunk(p.chunk);
        } else {
            if p.at == c.len() {
                self.refence(p.chunk);
            }
            if self.chunks[p.chunk].len() < Self::CAP / 4 {
                self.coalesce(p.chunk);
            }
        }
        Some(e)
    }

    /// Merge a small chunk into a neighbour when both fit in one.
    fn coalesce(&mut self, i: usize) {
        let n = self.chunks[i].len();
        if i + 1 < self.chunks.len() && self.chunks[i + 1].len() + n <= Self::CAP {
            let next = self.remove_chunk(i + 1);
            self.chunks[i].extend(next);
            self.refence(i);
        } else if i > 0 && self.chunks[i - 1].len() + n <= Self::CAP {
            let this = self.remove_chunk(i);
            self.chunks[i - 1].extend(this);
            self.refence(i - 1);
        }
    }

    /// Append the chunks of `other`, whose keys all sort after every key here.
    pub fn append(&mut self, other: Chunked<K, V>) {
        self.len += other.len;
        self.fences.extend(other.fences);
        self.chunks.extend(other.chunks);
    }

    /// The map of the entries of `iter`, whose keys must be strictly ascending.
    pub fn from_sorted(iter: impl IntoIterator<Item = (K, V)>) -> Self {
        let mut b = Builder::new();
        for (k, v) in iter {
            b.push(k, v);
        }
        b.finish()
    }

    /// The map of these chunks (each non-empty, in order).
    fn of_chunks(chunks: Vec<Chunk<K, V>>) -> Self {
        Chunked {
            fences: chunks.iter().map(|c| c.last().clone()).collect(),
            len: chunks.iter().map(Chunk::len).sum(),
            chunks,
            finger: Cell::new(0),
        }
    }

    /// Whether every invariant holds: for tests.
    #[cfg(test)]
    fn check(&self) -> bool
    where
        K: Ord,
    {
        let chunks = self.fences.len() == self.chunks.len()
            && self.chunks.iter().zip(&self.fences).all(|(c, f)| {
                c.len() > 0 && c.len() <= Self::CAP && c.vals.len() == c.len() && c.last() == f
            });
        let mut keys = self.keys();
        let sorted = match keys.next() {
            None => true,
            Some(mut prev) => keys.all(|k| {
                let ok = prev < k;
                prev = k;
                ok
            }),
        };
        let len = self.chunks.iter().map(Chunk::len).sum::<usize>();
        chunks && sorted && self.len == len
    }
}

impl<K: Ord + Clone, V> Chunked<K, V> {
    /// Merge `other` into `self`. The two hold no equal keys, and the range `[first, last]` of
    /// each of `other`'s chunks holds no key of `self` (what loading a snapshot block
    /// guarantees), so whole chunks move and only a chunk of `self` that a chunk of `other`
    /// falls inside is split.
    pub fn merge_disjoint(&mut self, other: Chunked<K, V>) {
        if other.is_empty() {
            return;
        }
        if self.is_empty() {
            *self = other;
            return;
        }
        if other.chunks.len() <= 8 {
            // A block or two into a large map: splice, without rebuilding the chunk list.
            self.len += other.len;
            for c in other.chunks {
                self.splice_chunk(c);
            }
            return;
        }
        let mut out: Vec<Chunk<K, V>> = Vec::with_capacity(self.chunks.len() + other.chunks.len());
        let mut a = std::mem::take(&mut self.chunks).into_iter();
        let mut b = other.chunks.into_iter();
        let (mut ha, mut hb) = (a.next(), b.next());
        loop {
            match (ha.take(), hb.take()) {
                (Some(mut x), Some(y)) => {
                    let y0 = &y.keys[0];
                    if x.keys[0] < *y0 {
                        // `x` first: whole, or its part below `y`'s first key.
                        let k = x.keys.partition_point(|k| k < y0);
                        if k == x.len() {
                            Self::push_chunk(&mut out, x);
                            ha = a.next();
                        } else {
                            let rest = x.split_off(k, 0);
                            Self::push_chunk(&mut out, x);
                            ha = Some(rest);
                        }
                        hb = Some(y);
                    } else {
                        // `y` holds no key of `self` inside its range: all of it first.
                        Self::push_chunk(&mut out, y);
                        ha = Some(x);
                        hb = b.next();
                    }
                }
                (Some(x), None) => {
                    Self::push_chunk(&mut out, x);
                    out.extend(a.by_ref());
                    break;
                }
                (None, Some(y)) => {
                    Self::push_chunk(&mut out, y);
                    out.extend(b.by_ref());
                    break;
                }
                (None, None) => break,
            }
        }
        *self = Chunked::of_chunks(out);
    }

    /// Insert the chunk `c`, whose range holds no key of `self`, where it belongs (the
    /// caller counts its entries).
    fn splice_chunk(&mut self, c: Chunk<K, V>) {
        let p = self.partition_point(|k| *k < c.keys[0]);
        let at = if p.at > 0 {
            let tail = self.chunks[p.chunk].split_off(p.at, 0);
            self.refence(p.chunk);
            self.insert_chunk(p.chunk + 1, tail);
            p.chunk + 1
        } else {
            p.chunk
        };
        match at.checked_sub(1) {
            Some(prev) if self.chunks[prev].len() + c.len() <= Self::CAP / 2 => {
                self.chunks[prev].extend(c);
                self.refence(prev);
            }
            _ => self.insert_chunk(at, c),
        }
    }

    /// Append a chunk, joining it to the previous one when both are small enough to share
    /// one (splits at merge points would otherwise leave slivers).
    fn push_chunk(out: &mut Vec<Chunk<K, V>>, c: Chunk<K, V>) {
        match out.last_mut() {
            Some(l) if l.len() + c.len() <= Self::CAP / 2 => l.extend(c),
            _ => out.push(c),
        }
    }

    /// The entries with keys inside `(lo, hi)`.
    pub fn range(
        &self,
        (lo, hi): (Bound<K>, Bound<K>),
    ) -> impl DoubleEndedIterator<Item = (&K, &V)> + '_ {
        let from = match &lo {
            Bound::Included(k) => self.partition_point(|e| e < k),
            Bound::Excluded(k) => self.partition_point(|e| e <= k),
            Bound::Unbounded => Pos { chunk: 0, at: 0 },
        };
        let to = match &hi {
            Bound::Included(k) => self.partition_point(|e| e <= k),
            Bound::Excluded(k) => self.partition_point(|e| e < k),
            Bound::Unbounded => self.end(),
        };
        self.between(from, to)
    }
}

/// Builds a [`Chunked`] from entries in ascending key order, filling each chunk to `CAP`
/// (the last one exactly): each entry is moved once, each fence written once per chunk.
pub struct Builder<K, V = ()> {
    done: Chunked<K, V>,
    keys: Vec<K>,
    vals: Vec<V>,
}

impl<K: Clone, V> Builder<K, V> {
    pub fn new() -> Self {
        Builder {
            done: Chunked::new(),
            keys: Vec::new(),
            vals: Vec::new(),
        }
    }

    /// Append `(k, v)`; `k` must sort after every key pushed before (not checked here: the
    /// callers check their input's order themselves, with [`Builder::last`]).
    pub fn push(&mut self, k: K, v: V) {
        if self.keys.len() == Chunked::<K, V>::CAP {
            self.seal(Chunked::<K, V>::CAP);
        }
        if self.keys.capacity() == 0 {
            self.keys.reserve_exact(Chunked::<K, V>::CAP);
            self.vals.reserve_exact(Chunked::<K, V>::CAP);
        }
        self.keys.push(k);
        self.vals.push(v);
    }

    /// The last key pushed.
    pub fn last(&self) -> Option<&K> {
        self.keys.last().or_else(|| self.done.last())
    }

    /// Close the current chunk; the next gets room for `cap`.
    fn seal(&mut self, cap: usize) {
        let (mut keys, mut vals) = (Vec::with_capacity(cap), Vec::with_capacity(cap));
        std::mem::swap(&mut keys, &mut self.keys);
        std::mem::swap(&mut vals, &mut self.vals);
        if !keys.is_empty() {
            let d = &mut self.done;
            d.len += keys.len();
            d.fences.push(keys.last().expect("not empty").clone());
            d.chunks.push(Chunk { keys, vals });
        }
    }

    pub fn finish(mut self) -> Chunked<K, V> {
        self.keys.shrink_to_fit();
        self.vals.shrink_to_fit();
        self.seal(0);
        self.done
    }
}

impl<K: Clone, V> Default for Builder<K, V> {
    fn default() -> Self {
        Builder::new()
    }
}

/// A set: a map to `()`.
impl<K: Ord + Clone> Chunked<K> {
    pub fn contains(&self, k: &K) -> bool {
        self.search(|e| e.cmp(k)).is_ok()
    }

    /// Insert `k`; false when it is already there.
    pub fn insert(&mut self, k: K) -> bool {
        match self.search(|e| e.cmp(&k)) {
            Ok(_) => false,
            Err(p) => {
                self.insert_at(p, k, ());
                true
            }
        }
    }

    /// Remove `k`; false when it was not there.
    pub fn remove(&mut self, k: &K) -> bool {
        self.remove_by(|e| e.cmp(k)).is_some()
    }

    /// The set of the keys of `iter`, strictly ascending.
    pub fn from_sorted_keys(iter: impl IntoIterator<Item = K>) -> Self {
        Chunked::from_sorted(iter.into_iter().map(|k| (k, ())))
    }

    /// The keys inside `(lo, hi)`.
    pub fn range_keys(
        &self,
        bounds: (Bound<K>, Bound<K>),
    ) -> impl DoubleEndedIterator<Item = &K> + '_ {
        self.range(bounds).map(|(k, _)| k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// A small xorshift: the tests need no crate.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    fn same(c: &Chunked<u32>, m: &BTreeSet<u32>) {
        assert!(c.check());
        assert_eq!(c.len(), m.len());
        assert!(c.keys().eq(m.iter()));
        assert!(c.keys().rev().eq(m.iter().rev()));
    }

    #[test]
    fn random_inserts_and_removes_match_a_btreeset() {
        for seed in 1..=8u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let mut c = Chunked::new();
            let mut m = BTreeSet::new();
            let span = [50, 5_000, 100_000][seed as usize % 3];
            for step in 0..20_000 {
                let x = rng.below(span) as u32;
                if rng.below(3) == 0 {
                    assert_eq!(c.remove(&x), m.remove(&x), "seed {seed} step {step}");
                } else {
                    assert_eq!(c.insert(x), m.insert(x), "seed {seed} step {step}");
                }
                assert_eq!(c.contains(&x), m.contains(&x));
            }
            same(&c, &m);
            // Drain it all: no empty chunk is left behind.
            for x in m.clone() {
                assert!(c.remove(&x));
            }
            assert!(c.is_empty() && c.chunks.is_empty());
        }
    }

    #[test]
    fn ranges_match_a_btreeset_both_ways() {
        let mut rng = Rng(77);
        let m: BTreeSet<u32> = (0..3_000).map(|_| rng.below(10_000) as u32).collect();
        let c = Chunked::from_sorted_keys(m.iter().copied());
        same(&c, &m);
        for _ in 0..2_000 {
            let (a, b) = (rng.below(10_500) as u32, rng.below(10_500) as u32);
            let bound = |k: u32, r: u64| match r {
                0 => Bound::Included(k),
                1 => Bound::Excluded(k),
                _ => Bound::Unbounded,
            };
            let (lo, hi) = (bound(a, rng.below(3)), bound(b, rng.below(3)));
            if a > b && !matches!((lo, hi), (Bound::Unbounded, _) | (_, Bound::Unbounded)) {
                // BTreeSet panics on an inverted range; ours is empty.
                assert_eq!(c.range_keys((lo, hi)).count(), 0);
                continue;
            }
            if a == b && matches!((lo, hi), (Bound::Excluded(_), Bound::Excluded(_))) {
                assert_eq!(c.range_keys((lo, hi)).count(), 0);
                continue;
            }
            assert!(
                c.range_keys((lo, hi)).eq(m.range((lo, hi))),
                "{lo:?} {hi:?}"
            );
            assert!(c.range_keys((lo, hi)).rev().eq(m.range((lo, hi)).rev()));
        }
    }

    #[test]
    fn appends_fill_chunks_and_bulk_builds_are_full() {
        let cap = Chunked::<u32>::CAP;
        let mut c = Chunked::new();
        for x in 0..(10 * cap as u32 + 3) {
            assert!(c.insert(x));
        }
        assert_eq!(c.chunks.len(), 11);
        assert!(c.chunks[..10].iter().all(|k| k.len() == cap));
        let d = Chunked::from_sorted_keys(0..(10 * cap as u32 + 3));
        assert_eq!(c, d);
        assert_eq!(d.chunks.last().unwrap().keys.capacity(), 3);
    }

    #[test]
    fn merging_disjoint_runs_moves_chunks_and_keeps_order() {
        for seed in 1..=20u64 {
            let mut rng = Rng(seed.wrapping_mul(0x2545_f491_4f6c_dd1d));
            // Runs of consecutive numbers, each either loaded or left in a "block" whose range
            // holds no loaded number (as a snapshot's cold blocks).
            let all: Vec<u32> = (0..4_000).collect();
            let mut loaded = BTreeSet::new();
            let mut blocks = Vec::new();
            let mut i = 0;
            while i < all.len() {
                let n = 1 + rng.below(700) as usize;
                let run: Vec<u32> = all[i..(i + n).min(all.len())].to_vec();
                i += n;
                if rng.below(2) == 0 {
                    loaded.extend(run);
                } else {
                    blocks.push(run);
                }
            }
            let mut c = Chunked::from_sorted_keys(loaded.iter().copied());
            let mut other = Chunked::new();
            for b in &blocks {
                // A block decodes into chunks of its own (the last one short).
                other.append(Chunked::from_sorted_keys(b.iter().copied()));
            }
            c.merge_disjoint(other);
            let m: BTreeSet<u32> = all.iter().copied().collect();
            same(&c, &m);
        }
    }

    #[test]
    fn splicing_one_block_into_a_large_sequence() {
        let mut rng = Rng(5);
        for _ in 0..200 {
            // Multiples of 10 loaded; a block of up to 9 numbers between two of them.
            let mut c = Chunked::from_sorted_keys((0..5_000u32).map(|x| x * 10));
            let mut m: BTreeSet<u32> = c.keys().copied().collect();
            let base = rng.below(5_001) as u32 * 10;
            let n = 1 + rng.below(9) as u32;
            let block: Vec<u32> = (base + 1..base + 1 + n).collect();
            m.extend(block.iter().copied());
            c.merge_disjoint(Chunked::from_sorted_keys(block));
            same(&c, &m);
        }
    }

    #[test]
    fn splicing_a_few_multi_chunk_blocks_into_different_gaps() {
        let mut rng = Rng(9);
        for _ in 0..200 {
            // Multiples of 10,000 loaded; one or two blocks of up to 1,000 numbers each (up to
            // four chunks of 256) in distinct gaps, decoded as one map: the splice path.
            let mut c = Chunked::from_sorted_keys((0..400u32).map(|x| x * 10_000));
            let mut m: BTreeSet<u32> = c.keys().copied().collect();
            let mut gaps: Vec<u32> = (0..1 + rng.below(2))
                .map(|_| rng.below(400) as u32)
                .collect();
            gaps.sort_unstable();
            gaps.dedup();
            let mut other = Chunked::new();
            for g in gaps {
                let n = 1 + rng.below(1_000) as u32;
                let block: Vec<u32> = (g * 10_000 + 1..g * 10_000 + 1 + n).collect();
                m.extend(block.iter().copied());
                other.append(Chunked::from_sorted_keys(block));
            }
            assert!(other.chunks.len() <= 8);
            c.merge_disjoint(other);
            same(&c, &m);
        }
    }

    #[test]
    fn slots_name_entries_in_order() {
        let c = Chunked::from_sorted((0..5_000u32).map(|x| (x * 3, x)));
        let slots: Vec<_> = c.slots().unwrap().collect();
        assert_eq!(slots.len(), 5_000);
        assert!(slots.windows(2).all(|w| w[0].0 < w[1].0));
        for (s, k, v) in slots {
            assert_eq!(c.at_slot(s), (k, v));
            assert_eq!(*k, v * 3);
        }
    }

    #[test]
    fn positions_at_the_ends() {
        let c = Chunked::from_sorted_keys(0..1_000u32);
        assert_eq!(c.range((Bound::Excluded(999), Bound::Unbounded)).count(), 0);
        assert_eq!(c.range((Bound::Unbounded, Bound::Excluded(0))).count(), 0);
        assert_eq!(c.range((Bound::Included(999), Bound::Unbounded)).count(), 1);
        assert_eq!(c.first(), Some(&0));
        assert_eq!(c.last(), Some(&999));
        let e: Chunked<u32> = Chunked::new();
        assert_eq!(
            e.range_keys((Bound::Unbounded, Bound::Unbounded)).count(),
            0
        );
        assert_eq!(e.get(|x| x.cmp(&3)), None);
    }
}
