//! [`Set`]: a set of strings as a vector of [`Name`]s sorted strictly ascending, with the
//! `BTreeSet` API the crate uses. Iterates in ascending byte order (the order of the canonical
//! encoding, the state hash and queries).

use super::name::{search, Name};
use std::fmt;

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
