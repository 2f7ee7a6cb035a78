//! [`Name`]: a small immutable string held inline when short. Field names, set elements and
//! item ids are `Name`s.
//!
//! Items are small maps of a few fields. A `BTreeMap<String, Value>` spends a node sized for 11
//! entries plus one allocation per field name on each of them; short names live inside the
//! entry itself here (see [`super::Map`] and [`super::Set`], which keep names in sorted
//! vectors).

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
pub(super) fn search<T>(v: &[T], k: &[u8], name: impl Fn(&T) -> &Name) -> Result<usize, usize> {
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
}
