//! The entries of a secondary index (`index.rs`) and their order: the key (a value, or
//! missing), the id, the bounds of a key range, the sort keys of numbers, and the numeric stats
//! an index keeps beside its entries. Building an index (`index_build.rs`) and reading one
//! (`plan.rs`, `agg.rs`) share them.

use crate::item::ItemId;
use crate::value::{Name, Value};
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

#[cfg(test)]
mod tests {
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
