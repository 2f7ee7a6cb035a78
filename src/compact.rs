//! Compact in-memory containers for item values: [`Name`] (a small immutable string held
//! inline when short), [`Map`] (fields as a vector sorted by name) and [`Set`] (a sorted vector
//! of strings).
//!
//! Items are small maps of a few fields. A `BTreeMap<String, Value>` spends a node sized for 11
//! entries plus one allocation per field name on each of them; a sorted vector holds exactly its
//! fields in one allocation, and short names live inside the entry itself. Both keep the
//! `BTreeMap`/`BTreeSet` API the rest of the crate uses and iterate in ascending byte order of
//! the names (the order of the canonical encoding, the state hash and queries).

use crate::value::Value;
use std::borrow::Borrow;
use std::cmp::Ordering;
use std::fmt;

/// A short immutable string: up to [`Name::INLINE`] bytes are held inline (no allocation, and a
/// comparison reads bytes held in place instead of following a pointer), longer ones on the
/// heap. Ordered bytewise, like `str`. Used for field names, set elements and item ids.
#[derive(Clone)]
pub struct Name(Repr);

#[derive(Clone)]
enum Repr {
    /// Invariant: `buf[..len]` is a copy of a whole `&str` (valid UTF-8), the rest is zero.
    Inline {
        len: u8,
        buf: [u8; Name::INLINE],
    },
    Heap(Box<str>),
}

impl Name {
    /// Longest string stored inline (the most that keep `Name` as small as a `String`).
    pub const INLINE: usize = 22;

    #[inline]
    pub fn new(s: &str) -> Name {
        if s.len() <= Self::INLINE {
            let mut buf = [0u8; Self::INLINE];
            buf[..s.len()].copy_from_slice(s.as_bytes());
            Name(Repr::Inline {
                len: s.len() as u8,
                buf,
            })
        } else {
            Name(Repr::Heap(s.into()))
        }
    }

    /// Take an owned string, reusing its allocation when it is too long to be held inline.
    #[inline]
    pub fn from_string(s: String) -> Name {
        if s.len() <= Self::INLINE {
            Name::new(&s)
        } else {
            Name(Repr::Heap(s.into_boxed_str()))
        }
    }

    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, buf } => &buf[..*len as usize],
            Repr::Heap(s) => s.as_bytes(),
        }
    }

    #[inline]
    pub fn as_str(&self) -> &str {
        match &self.0 {
            // Always valid (see `Repr::Inline`); checked rather than assumed, the check is a
            // few nanoseconds on a short string.
            Repr::Inline { .. } => {
                std::str::from_utf8(self.as_bytes()).expect("a Name holds UTF-8")
            }
            Repr::Heap(s) => s,
        }
    }
}

impl std::ops::Deref for Name {
    type Target = str;
    #[inline]
    fn deref(&self) -> &str {
        self.as_str()
    }
}
impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}
impl Borrow<str> for Name {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}
impl PartialEq for Name {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}
impl Eq for Name {}
impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}
impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}
impl PartialEq<String> for Name {
    fn eq(&self, other: &String) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}
impl PartialOrd for Name {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Name {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        match (&self.0, &other.0) {
            // Zero-padded buffers compare like the strings they hold (a shorter string that is
            // a prefix of the other compares lower either way; equal buffers differ only in
            // trailing NULs, which the length orders). Two big-endian words, no byte loop.
            (Repr::Inline { len: la, buf: a }, Repr::Inline { len: lb, buf: b }) => {
                let hi = |x: &[u8; Name::INLINE]| u128::from_be_bytes(x[..16].try_into().unwrap());
                let lo = |x: &[u8; Name::INLINE]| {
                    let mut w = [0u8; 8];
                    w[..6].copy_from_slice(&x[16..]);
                    u64::from_be_bytes(w)
                };
                hi(a)
                    .cmp(&hi(b))
                    .then_with(|| lo(a).cmp(&lo(b)))
                    .then_with(|| la.cmp(lb))
            }
            _ => self.as_bytes().cmp(other.as_bytes()),
        }
    }
}
impl std::hash::Hash for Name {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        // Like `str`, so that `Borrow<str>` lookups in hash maps agree.
        self.as_str().hash(state)
    }
}
impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}
impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
impl Default for Name {
    fn default() -> Name {
        Name::new("")
    }
}
impl From<&str> for Name {
    #[inline]
    fn from(s: &str) -> Name {
        Name::new(s)
    }
}
impl From<&String> for Name {
    #[inline]
    fn from(s: &String) -> Name {
        Name::new(s)
    }
}
impl From<String> for Name {
    #[inline]
    fn from(s: String) -> Name {
        Name::from_string(s)
    }
}
impl From<&Name> for Name {
    #[inline]
    fn from(s: &Name) -> Name {
        s.clone()
    }
}
impl From<Name> for String {
    fn from(n: Name) -> String {
        match n.0 {
            Repr::Heap(s) => s.into(),
            Repr::Inline { .. } => n.as_str().to_owned(),
        }
    }
}

/// Position of `k` in a slice sorted by name: `Ok(i)` when present, `Err(i)` where it would go.
/// Items have a handful of fields: a linear scan beats a binary search there.
#[inline]
fn search<T>(v: &[T], k: &[u8], name: impl Fn(&T) -> &Name) -> Result<usize, usize> {
    if v.len() <= 8 {
        for (i, e) in v.iter().enumerate() {
            match name(e).as_bytes().cmp(k) {
                Ordering::Less => {}
                Ordering::Equal => return Ok(i),
                Ordering::Greater => return Err(i),
            }
        }
        Err(v.len())
    } else {
        v.binary_search_by(|e| name(e).as_bytes().cmp(k))
    }
}

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

/// Sort by name, keeping the last of equal names (as repeated `BTreeMap::insert` would).
fn sort_dedup_last<T>(v: &mut Vec<T>, name: impl Fn(&T) -> &Name) {
    if v.windows(2).all(|w| name(&w[0]) < name(&w[1])) {
        return;
    }
    // Stable: equal names keep their insertion order, the last one wins below.
    v.sort_by(|a, b| name(a).cmp(name(b)));
    let mut out: Vec<T> = Vec::with_capacity(v.len());
    for e in v.drain(..) {
        match out.last_mut() {
            Some(l) if name(l) == name(&e) => *l = e,
            _ => out.push(e),
        }
    }
    *v = out;
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

/// A set of strings: a vector sorted strictly ascending, with the `BTreeSet` API the crate
/// uses.
#[derive(Clone, PartialEq, Eq, Default, PartialOrd, Ord, Hash)]
pub struct Set(Vec<Name>);

impl Set {
    pub const fn new() -> Set {
        Set(Vec::new())
    }
    pub fn with_capacity(n: usize) -> Set {
        Set(Vec::with_capacity(n))
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
    fn find(&self, e: &str) -> Result<usize, usize> {
        search(&self.0, e.as_bytes(), |n| n)
    }
    #[inline]
    pub fn contains(&self, e: &str) -> bool {
        self.find(e).is_ok()
    }
    pub fn get(&self, e: &str) -> Option<&Name> {
        self.find(e).ok().map(|i| &self.0[i])
    }
    /// Add `e`; false when it was already there.
    #[inline]
    pub fn insert(&mut self, e: impl Into<Name>) -> bool {
        let e = e.into();
        if self.0.last().is_none_or(|l| *l < e) {
            self.0.push(e);
            return true;
        }
        match self.find(&e) {
            Ok(_) => false,
            Err(i) => {
                self.0.insert(i, e);
                true
            }
        }
    }
    /// Append an element the caller has checked is greater than every element held.
    #[inline]
    pub(crate) fn push_ordered(&mut self, e: Name) {
        debug_assert!(self.0.last().is_none_or(|l| *l < e));
        self.0.push(e);
    }
    pub fn remove(&mut self, e: &str) -> bool {
        match self.find(e) {
            Ok(i) => {
                self.0.remove(i);
                true
            }
            Err(_) => false,
        }
    }
    pub fn retain(&mut self, f: impl FnMut(&Name) -> bool) {
        self.0.retain(f)
    }
    pub fn iter(&self) -> std::slice::Iter<'_, Name> {
        self.0.iter()
    }
    pub fn first(&self) -> Option<&Name> {
        self.0.first()
    }
    pub fn last(&self) -> Option<&Name> {
        self.0.last()
    }
    /// The elements, sorted strictly ascending.
    pub fn as_slice(&self) -> &[Name] {
        &self.0
    }
    pub fn is_subset(&self, other: &Set) -> bool {
        self.len() <= other.len() && self.iter().all(|e| other.contains(e))
    }
}

impl fmt::Debug for Set {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl<'a> IntoIterator for &'a Set {
    type Item = &'a Name;
    type IntoIter = std::slice::Iter<'a, Name>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}
impl IntoIterator for Set {
    type Item = Name;
    type IntoIter = std::vec::IntoIter<Name>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}
impl<S: Into<Name>> FromIterator<S> for Set {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> Set {
        let mut v: Vec<Name> = iter.into_iter().map(Into::into).collect();
        if !v.windows(2).all(|w| w[0] < w[1]) {
            v.sort_unstable();
            v.dedup();
        }
        Set(v)
    }
}
impl<S: Into<Name>> Extend<S> for Set {
    /// Appends, then sorts once (see `Extend for Map`).
    fn extend<I: IntoIterator<Item = S>>(&mut self, iter: I) {
        self.0.extend(iter.into_iter().map(Into::into));
        if !self.0.windows(2).all(|w| w[0] < w[1]) {
            self.0.sort_unstable();
            self.0.dedup();
        }
    }
}
impl<S: Into<Name>, const N: usize> From<[S; N]> for Set {
    fn from(a: [S; N]) -> Set {
        a.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_small_and_ordered_like_str() {
        assert_eq!(std::mem::size_of::<Name>(), 24);
        let ids = [
            "",
            "a",
            "a\u{0}",
            "a\u{0}\u{1}",
            "a\u{1}",
            "a\u{e9}",
            "ab",
            "b",
            &"x".repeat(15),
            &"x".repeat(16),
            &"x".repeat(17),
            &"x".repeat(22),
            &"x".repeat(23),
            &format!("{}a", "x".repeat(21)),
            "y",
        ];
        for a in ids {
            assert_eq!(Name::new(a).as_str(), a);
            assert_eq!(String::from(Name::new(a)), a);
            assert_eq!(Name::from_string(a.to_owned()).as_str(), a);
            for b in ids {
                assert_eq!(Name::new(a).cmp(&Name::new(b)), a.cmp(b), "{a:?} {b:?}");
                assert_eq!(Name::new(a) == Name::new(b), a == b);
            }
        }
    }

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

    #[test]
    fn set_behaves_like_a_btreeset() {
        let s: Set = ["q", "p", "q", "a"].into();
        assert_eq!(
            s.iter().map(|e| e.as_str()).collect::<Vec<_>>(),
            ["a", "p", "q"]
        );
        let mut t = s.clone();
        assert!(!t.insert("p"));
        assert!(t.insert("b"));
        assert!(t.remove("a"));
        assert!(!t.remove("a"));
        assert_eq!(
            t.iter().map(|e| e.as_str()).collect::<Vec<_>>(),
            ["b", "p", "q"]
        );
        assert!(t.contains("q") && !t.contains("z"));
    }
}
