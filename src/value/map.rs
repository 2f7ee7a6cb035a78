//! [`Map`]: an item's fields (or a nested map) as one vector of `(Name, Value)` sorted strictly
//! ascending by name, with the `BTreeMap` API the rest of the crate uses. One allocation holds
//! every field, and iteration is in ascending byte order of the names (the order of the
//! canonical encoding, the state hash and queries).

use super::name::{search, Name};
use super::Value;
use std::fmt;

/// An item's (or a nested map's) fields: a vector of `(name, value)` sorted strictly ascending
/// by name, with the `BTreeMap` API the crate uses.
///
/// `insert` is O(n) (O(1) when appending in order), so a map of many fields built in arbitrary
/// order (a parsed JSON object) should be built with `collect` or `extend`, which sort once.
#[derive(Clone, PartialEq, Default)]
pub struct Map(Vec<(Name, Value)>);

impl Map {
    pub const fn new() -> Map {
        Map(Vec::new())
    }
    pub fn with_capacity(n: usize) -> Map {
        Map(Vec::with_capacity(n))
    }
    #[inline]
    pub fn len(&self) -> usize {
        self.0.len()
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn clear(&mut self) {
        self.0.clear()
    }
    #[inline]
    fn find(&self, k: &str) -> Result<usize, usize> {
        search(&self.0, k.as_bytes(), |e| &e.0)
    }
    #[inline]
    pub fn get(&self, k: &str) -> Option<&Value> {
        self.find(k).ok().map(|i| &self.0[i].1)
    }
    #[inline]
    pub fn get_mut(&mut self, k: &str) -> Option<&mut Value> {
        self.find(k).ok().map(|i| &mut self.0[i].1)
    }
    pub fn get_key_value(&self, k: &str) -> Option<(&Name, &Value)> {
        self.find(k).ok().map(|i| (&self.0[i].0, &self.0[i].1))
    }
    #[inline]
    pub fn contains_key(&self, k: &str) -> bool {
        self.find(k).is_ok()
    }
    /// Insert or replace; returns the old value. Appending in ascending order (decoding) is
    /// the fast path.
    #[inline]
    pub fn insert(&mut self, k: Name, v: Value) -> Option<Value> {
        if self.0.last().is_none_or(|(l, _)| *l < k) {
            self.0.push((k, v));
            return None;
        }
        match self.find(&k) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, v)),
            Err(i) => {
                self.0.insert(i, (k, v));
                None
            }
        }
    }
    /// Append an entry whose name the caller has checked is greater than every name held
    /// (decoders verify canonical order themselves; this skips comparing again).
    #[inline]
    pub(crate) fn push_ordered(&mut self, k: Name, v: Value) {
        debug_assert!(self.0.last().is_none_or(|(l, _)| *l < k));
        self.0.push((k, v));
    }
    pub fn remove(&mut self, k: &str) -> Option<Value> {
        self.find(k).ok().map(|i| self.0.remove(i).1)
    }
    pub fn remove_entry(&mut self, k: &str) -> Option<(Name, Value)> {
        self.find(k).ok().map(|i| self.0.remove(i))
    }
    pub fn retain(&mut self, mut f: impl FnMut(&Name, &mut Value) -> bool) {
        self.0.retain_mut(|(k, v)| f(k, v))
    }
    pub fn entry(&mut self, k: Name) -> Entry<'_> {
        let pos = self.find(&k);
        Entry { map: self, pos, k }
    }
    pub fn iter(&self) -> Iter<'_> {
        Iter(self.0.iter())
    }
    pub fn iter_mut(&mut self) -> IterMut<'_> {
        IterMut(self.0.iter_mut())
    }
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &Name> + ExactSizeIterator + Clone {
        self.0.iter().map(|e| &e.0)
    }
    pub fn values(&self) -> impl DoubleEndedIterator<Item = &Value> + ExactSizeIterator + Clone {
        self.0.iter().map(|e| &e.1)
    }
    pub fn values_mut(
        &mut self,
    ) -> impl DoubleEndedIterator<Item = &mut Value> + ExactSizeIterator {
        self.0.iter_mut().map(|e| &mut e.1)
    }
    pub fn into_keys(self) -> impl DoubleEndedIterator<Item = Name> + ExactSizeIterator {
        self.0.into_iter().map(|e| e.0)
    }
    pub fn into_values(self) -> impl DoubleEndedIterator<Item = Value> + ExactSizeIterator {
        self.0.into_iter().map(|e| e.1)
    }
    pub fn first_key_value(&self) -> Option<(&Name, &Value)> {
        self.0.first().map(|e| (&e.0, &e.1))
    }
    pub fn last_key_value(&self) -> Option<(&Name, &Value)> {
        self.0.last().map(|e| (&e.0, &e.1))
    }
    /// The entries, sorted strictly ascending by name.
    pub fn as_slice(&self) -> &[(Name, Value)] {
        &self.0
    }
}

impl fmt::Debug for Map {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// A slot of [`Map::entry`].
pub struct Entry<'a> {
    map: &'a mut Map,
    pos: Result<usize, usize>,
    k: Name,
}

impl<'a> Entry<'a> {
    pub fn or_insert_with(self, f: impl FnOnce() -> Value) -> &'a mut Value {
        let i = match self.pos {
            Ok(i) => i,
            Err(i) => {
                self.map.0.insert(i, (self.k, f()));
                i
            }
        };
        &mut self.map.0[i].1
    }
    pub fn or_insert(self, v: Value) -> &'a mut Value {
        self.or_insert_with(|| v)
    }
    pub fn or_default(self) -> &'a mut Value {
        self.or_insert_with(|| Value::Null)
    }
    pub fn key(&self) -> &Name {
        &self.k
    }
}

/// Iterator over `(&name, &value)` in ascending name order.
#[derive(Clone)]
pub struct Iter<'a>(std::slice::Iter<'a, (Name, Value)>);
impl<'a> Iterator for Iter<'a> {
    type Item = (&'a Name, &'a Value);
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|e| (&e.0, &e.1))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}
impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back().map(|e| (&e.0, &e.1))
    }
}
impl ExactSizeIterator for Iter<'_> {}

/// Iterator over `(&name, &mut value)` in ascending name order.
pub struct IterMut<'a>(std::slice::IterMut<'a, (Name, Value)>);
impl<'a> Iterator for IterMut<'a> {
    type Item = (&'a Name, &'a mut Value);
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|e| (&e.0, &mut e.1))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}
impl DoubleEndedIterator for IterMut<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back().map(|e| (&e.0, &mut e.1))
    }
}
impl ExactSizeIterator for IterMut<'_> {}

impl<'a> IntoIterator for &'a Map {
    type Item = (&'a Name, &'a Value);
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}
impl<'a> IntoIterator for &'a mut Map {
    type Item = (&'a Name, &'a mut Value);
    type IntoIter = IterMut<'a>;
    fn into_iter(self) -> IterMut<'a> {
        self.iter_mut()
    }
}
impl IntoIterator for Map {
    type Item = (Name, Value);
    type IntoIter = std::vec::IntoIter<(Name, Value)>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

/// Sort by name, keeping the last of equal names (as repeated `BTreeMap::insert` would). In
/// place: an item decoded from a host (its fields in the host's order) costs no second vector.
fn sort_dedup_last<T>(v: &mut Vec<T>, name: impl Fn(&T) -> &Name) {
    if v.windows(2).all(|w| name(&w[0]) < name(&w[1])) {
        return;
    }
    // Stable: equal names keep their insertion order; of a run of equal names the retained
    // (first) slot takes each later value, so the last one wins.
    v.sort_by(|a, b| name(a).cmp(name(b)));
    v.dedup_by(|later, kept| {
        let same = name(later) == name(kept);
        if same {
            std::mem::swap(later, kept);
        }
        same
    });
}

impl<K: Into<Name>> FromIterator<(K, Value)> for Map {
    fn from_iter<I: IntoIterator<Item = (K, Value)>>(iter: I) -> Map {
        let mut v: Vec<(Name, Value)> = iter.into_iter().map(|(k, v)| (k.into(), v)).collect();
        sort_dedup_last(&mut v, |e| &e.0);
        Map(v)
    }
}
impl<K: Into<Name>> Extend<(K, Value)> for Map {
    /// Appends, then sorts once: O((n + m) log(n + m)) whatever the order of the input
    /// (inserting one by one into a sorted vector would be quadratic for unsorted input).
    fn extend<I: IntoIterator<Item = (K, Value)>>(&mut self, iter: I) {
        self.0.extend(iter.into_iter().map(|(k, v)| (k.into(), v)));
        sort_dedup_last(&mut self.0, |e| &e.0);
    }
}
impl<K: Into<Name>, const N: usize> From<[(K, Value); N]> for Map {
    fn from(a: [(K, Value); N]) -> Map {
        a.into_iter().collect()
    }
}
impl From<std::collections::BTreeMap<String, Value>> for Map {
    fn from(m: std::collections::BTreeMap<String, Value>) -> Map {
        // Already sorted and unique.
        Map(m
            .into_iter()
            .map(|(k, v)| (Name::from_string(k), v))
            .collect())
    }
}
impl std::ops::Index<&str> for Map {
    type Output = Value;
    fn index(&self, k: &str) -> &Value {
        self.get(k).expect("no entry found for key")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Set;

    #[test]
    fn map_behaves_like_a_btreemap() {
        use std::collections::BTreeMap;
        // A fixed pseudo-random sequence of inserts and removes over a small key space, long
        // names included (the binary-search path beyond 8 entries too).
        let mut m = Map::new();
        let mut b: BTreeMap<String, Value> = BTreeMap::new();
        let mut x = 12345u64;
        for step in 0..5000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let k = format!("{}{}", "k".repeat((x >> 60) as usize * 3), (x >> 33) % 20);
            match (x >> 20) % 4 {
                0 => assert_eq!(m.remove(&k), b.remove(&k)),
                1 => {
                    *m.entry(k.as_str().into()).or_insert(Value::Null) = Value::from(step as i64);
                    b.insert(k.clone(), Value::from(step as i64));
                }
                _ => assert_eq!(
                    m.insert(k.clone().into(), Value::from(step as i64)),
                    b.insert(k, Value::from(step as i64))
                ),
            }
            assert_eq!(m.len(), b.len());
            assert!(m
                .iter()
                .map(|(k, v)| (k.as_str(), v))
                .eq(b.iter().map(|(k, v)| (k.as_str(), v))));
            for (k, v) in &b {
                assert_eq!(m.get(k), Some(v));
            }
        }
        let c: Map = [
            ("b", Value::from(1i64)),
            ("a", Value::Null),
            ("b", Value::from(2i64)),
        ]
        .into();
        assert_eq!(c.keys().map(|k| k.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(c.get("b"), Some(&Value::from(2i64)));
    }

    #[test]
    fn extend_sorts_once_and_the_last_write_wins() {
        let mut m: Map = [("m", Value::Null)].into();
        m.extend(
            (0..2000i64)
                .rev()
                .map(|i| (format!("k{i:05}"), Value::from(i))),
        );
        m.extend([("m", Value::from(1i64))]);
        assert_eq!(m.len(), 2001);
        assert!(m.keys().zip(m.keys().skip(1)).all(|(a, b)| a < b));
        assert_eq!(m.get("m"), Some(&Value::from(1i64)));
        assert_eq!(m.get("k00007"), Some(&Value::from(7i64)));
        let mut s: Set = ["b"].into();
        s.extend(["z", "a", "b"]);
        assert_eq!(
            s.iter().map(|e| e.as_str()).collect::<Vec<_>>(),
            ["a", "b", "z"]
        );
    }
}
