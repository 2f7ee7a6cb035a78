//! Sorted secondary indexes.
//!
//! An index on a path holds one entry `(key, id)` per visible item, where `key` is the value at
//! the path or [`IKey::Missing`] (sorting first), ordered by [`Value::total_cmp`] then id. It
//! serves equality, ranges, prefixes and sort order. For sets (and lists) it also holds one
//! `(element, id)` entry per string element, serving `contains`.

use super::eval::CPath;
use super::index_build;
use crate::chunked::Chunked;
use crate::state::{Collection, ItemId};
use crate::store::snapshot::IndexEntries;
use crate::value::{Map, Name, Value};
use std::cmp::Ordering;
use std::ops::Bound;

/// An index key: the value at the path, or missing.
#[derive(Debug, Clone)]
pub(crate) enum IKey {
    Missing,
    Val(Value),
}

impl Ord for IKey {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (IKey::Val(a), IKey::Val(b)) => a.total_cmp(b),
            (IKey::Missing, IKey::Missing) => Ordering::Equal,
            (IKey::Missing, _) => Ordering::Less,
            (_, IKey::Missing) => Ordering::Greater,
        }
    }
}
impl PartialOrd for IKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl PartialEq for IKey {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for IKey {}

impl IKey {
    pub fn as_opt(&self) -> Option<&Value> {
        match self {
            IKey::Missing => None,
            IKey::Val(v) => Some(v),
        }
    }
}

/// An id position inside one key: `Lo`/`Hi` bracket every id (for range bounds).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum IdPos {
    Lo,
    /// Held inline for ids up to `Name::INLINE` bytes (22, 14 on wasm32): no allocation per entry.
    At(ItemId),
    Hi,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Entry {
    pub key: IKey,
    pub id: IdPos,
}

impl Entry {
    pub(super) fn new(key: IKey, id: &str) -> Entry {
        Entry {
            key,
            id: IdPos::At(ItemId::new(id)),
        }
    }
    pub fn id(&self) -> &str {
        match &self.id {
            IdPos::At(s) => s.as_str(),
            _ => "",
        }
    }
}

/// The entry bounds covering keys in `(lo, hi)`, or `None` when the range is empty.
pub(crate) fn entry_bounds(
    lo: &Bound<IKey>,
    hi: &Bound<IKey>,
) -> Option<(Bound<Entry>, Bound<Entry>)> {
    let e = |k: &IKey, id: IdPos| Entry { key: k.clone(), id };
    let l = match lo {
        Bound::Included(k) => Bound::Included(e(k, IdPos::Lo)),
        Bound::Excluded(k) => Bound::Excluded(e(k, IdPos::Hi)),
        Bound::Unbounded => Bound::Unbounded,
    };
    let h = match hi {
        Bound::Included(k) => Bound::Included(e(k, IdPos::Hi)),
        Bound::Excluded(k) => Bound::Excluded(e(k, IdPos::Lo)),
        Bound::Unbounded => Bound::Unbounded,
    };
    if let (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) =
        (&l, &h)
    {
        match a.cmp(b) {
            Ordering::Greater => return None,
            Ordering::Equal if !matches!((&l, &h), (Bound::Included(_), Bound::Included(_))) => {
                return None
            }
            _ => {}
        }
    }
    Some((l, h))
}

/// Iterate the entries of `set` with keys in `(lo, hi)`.
pub(crate) fn range<'a>(
    set: &'a Chunked<Entry>,
    lo: &Bound<IKey>,
    hi: &Bound<IKey>,
) -> impl DoubleEndedIterator<Item = &'a Entry> + 'a {
    let r = entry_bounds(lo, hi).map(|b| set.range_keys(b));
    r.into_iter().flatten()
}

/// One secondary index.
#[derive(Debug, Clone)]
pub(crate) struct Index {
    pub path: String,
    cpath: CPath,
    /// One entry per visible item: the whole value (or missing) at the path.
    pub values: Chunked<Entry>,
    /// One entry per string element of a set or list at the path.
    pub elems: Chunked<Entry>,
    /// Running numeric stats over the values (for aggregates without a scan).
    pub stats: NumStats,
}

/// Count and exact sum of the numbers at an index's path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct NumStats {
    /// Number-valued items.
    pub nums: u64,
    /// Sum of the integral ones (exact).
    pub int_sum: i128,
    /// Numbers that are not integers in the i64 range (their sum is not tracked).
    pub non_int: u64,
}

impl NumStats {
    pub(crate) fn update(&mut self, v: Option<&Value>, add: bool) {
        let Some(Value::Number(x)) = v else { return };
        let d = if add { 1 } else { -1i64 };
        self.nums = self.nums.wrapping_add_signed(d);
        if x.fract() == 0.0 && x.abs() < 9.2e18 {
            self.int_sum += d as i128 * (*x as i64) as i128;
        } else {
            self.non_int = self.non_int.wrapping_add_signed(d);
        }
    }

    /// (sum, count) of the numbers, when exactly known.
    pub fn sum(&self) -> Option<(f64, u64)> {
        (self.non_int == 0).then_some((self.int_sum as f64, self.nums))
    }
}

impl PartialEq for Index {
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path
            && self.values == other.values
            && self.elems == other.elems
            && self.stats == other.stats
    }
}

/// A key ordering "missing" first, then numbers as `f64::total_cmp` does (numbers are finite
/// and never `-0.0`, see [`Value::number`]).
pub(super) fn num_key(v: Option<&Value>) -> u64 {
    match v {
        Some(Value::Number(x)) => {
            let b = x.to_bits();
            // Flip negatives entirely and set the sign bit of positives: unsigned order then
            // equals numeric order. Zero maps to 1 << 63, far above 0 (missing).
            if b >> 63 == 1 {
                !b
            } else {
                b | 1 << 63
            }
        }
        _ => 0,
    }
}

/// The number `num_key` made `k` from (`None`: missing).
pub(super) fn number_of_key(k: u64) -> Option<Value> {
    let bits = match k {
        0 => return None,
        b if b >> 63 == 1 => b & !(1 << 63),
        b => !b,
    };
    Some(Value::Number(f64::from_bits(bits)))
}

pub(super) fn cmp_opt(a: Option<&Value>, b: Option<&Value>) -> Ordering {
    match (a, b) {
        (Some(a), Some(b)) => a.total_cmp(b),
        (None, None) => Ordering::Equal,
        (None, _) => Ordering::Less,
        (_, None) => Ordering::Greater,
    }
}

pub(super) fn elements(v: &Value) -> Box<dyn Iterator<Item = &str> + '_> {
    match v {
        Value::Set(s) => Box::new(s.iter().map(Name::as_str)),
        Value::List(l) => Box::new(l.iter().filter_map(|x| match x {
            Value::String(s) => Some(s.as_str()),
            _ => None,
        })),
        _ => Box::new(std::iter::empty()),
    }
}

impl Index {
    /// The index of `path` restored from a snapshot (`index_build.rs` `Restorer`, filled by
    /// `store::snapshot::load_index`), with the numeric stats stored beside it.
    pub fn restored(path: &str, r: index_build::Restorer, stats: (u64, i128, u64)) -> Index {
        let (values, elems, stats) = r.finish(stats);
        Index {
            path: path.to_string(),
            cpath: CPath::new(path),
            values,
            elems,
            stats,
        }
    }

    /// The index of `path` over the visible items of `coll` (`index_build.rs`).
    pub fn build(path: &str, coll: Option<&Collection>) -> Index {
        let cpath = CPath::new(path);
        let built = coll.map(|c| {
            index_build::numeric(&cpath, c).unwrap_or_else(|| index_build::general(&cpath, c))
        });
        let (values, elems, stats) = built.unwrap_or_default();
        Index {
            path: path.to_string(),
            cpath,
            values,
            elems,
            stats,
        }
    }

    fn add(&mut self, id: &str, v: Option<&Value>) {
        self.stats.update(v, true);
        if let Some(v) = v {
            for e in elements(v) {
                self.elems
                    .insert(Entry::new(IKey::Val(Value::String(Name::new(e))), id));
            }
        }
        self.values.insert(Entry::new(
            v.map_or(IKey::Missing, |v| IKey::Val(v.clone())),
            id,
        ));
    }

    fn remove(&mut self, id: &str, v: Option<&Value>) {
        self.stats.update(v, false);
        if let Some(v) = v {
            for e in elements(v) {
                self.elems
                    .remove(&Entry::new(IKey::Val(Value::String(Name::new(e))), id));
            }
        }
        self.values.remove(&Entry::new(
            v.map_or(IKey::Missing, |v| IKey::Val(v.clone())),
            id,
        ));
    }

    /// Apply one item's change (`None` = absent or deleted).
    pub fn changed(&mut self, id: &str, old: Option<&Map>, new: Option<&Map>) {
        let ov = old.and_then(|m| self.cpath.get(m));
        let nv = new.and_then(|m| self.cpath.get(m));
        if old.is_some() && new.is_some() && ov == nv {
            return;
        }
        if old.is_some() {
            self.remove(id, ov);
        }
        if new.is_some() {
            self.add(id, nv);
        }
    }

    /// The value-entry range holding sets (they sort last).
    pub fn set_entries(&self) -> impl Iterator<Item = &Entry> {
        range(
            &self.values,
            &Bound::Included(IKey::Val(Value::Set(Default::default()))),
            &Bound::Unbounded,
        )
    }

    /// Describe the first difference from `other` (a rebuilt index), if any.
    pub fn diff(&self, other: &Index) -> Option<String> {
        for (what, a, b) in [
            ("value", &self.values, &other.values),
            ("element", &self.elems, &other.elems),
        ] {
            if a != b {
                let extra = a.keys().find(|e| !b.contains(e));
                let missing = b.keys().find(|e| !a.contains(e));
                return Some(format!(
                    "{} {what} entries maintained, {} expected; first extra: {:?}; first missing: {:?}",
                    a.len(),
                    b.len(),
                    extra.map(|e| (e.id(), e.key.as_opt())),
                    missing.map(|e| (e.id(), e.key.as_opt())),
                ));
            }
        }
        if self.stats != other.stats {
            return Some(format!(
                "numeric stats {:?} maintained, {:?} expected",
                self.stats, other.stats
            ));
        }
        None
    }
}

/// What a snapshot stores of an index (`store/snapshot/indexes.rs`).
impl IndexEntries for Index {
    fn stats(&self) -> (u64, i128, u64) {
        (self.stats.nums, self.stats.int_sum, self.stats.non_int)
    }
    fn values(&self) -> Box<dyn Iterator<Item = (Option<&Value>, &str)> + '_> {
        Box::new(self.values.keys().map(|e| (e.key.as_opt(), e.id())))
    }
    fn elems(&self) -> Box<dyn Iterator<Item = (&str, &str)> + '_> {
        // Element entries hold strings (`Index::add`).
        Box::new(self.elems.keys().filter_map(|e| match &e.key {
            IKey::Val(Value::String(s)) => Some((s.as_str(), e.id())),
            _ => None,
        }))
    }
}

#[cfg(test)]
mod build_tests {
    use super::*;

    #[test]
    fn num_key_orders_like_total_cmp_with_missing_first() {
        let xs = [
            -f64::MAX,
            -1e300,
            -2.5,
            -1.0,
            -f64::MIN_POSITIVE,
            -5e-324,
            0.0,
            5e-324,
            1.0,
            2.5,
            1e300,
            f64::MAX,
        ];
        let vals: Vec<Option<Value>> = std::iter::once(None)
            .chain(xs.iter().map(|&x| Some(Value::number(x).unwrap())))
            .collect();
        for v in &vals {
            assert_eq!(number_of_key(num_key(v.as_ref())).as_ref(), v.as_ref());
        }
        for a in &vals {
            for b in &vals {
                assert_eq!(
                    num_key(a.as_ref()).cmp(&num_key(b.as_ref())),
                    cmp_opt(a.as_ref(), b.as_ref()),
                    "{a:?} vs {b:?}"
                );
            }
        }
    }
}
