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
    /// Longest string stored inline: the most that keep `Name` as small as a `String` on 64-bit
    /// targets (24 bytes); on wasm32, where a `String` is 12 bytes, 14, which makes `Name` 16
    /// bytes and a [`Value`](super::Value) 16 instead of 24 (a field entry 32 bytes, not 48).
    pub const INLINE: usize = if cfg!(target_pointer_width = "32") {
        14
    } else {
        22
    };

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
            // Always valid (see `Repr::Inline`); checked rather than assumed: an inline name
            // is at most 22 bytes, and ASCII ones (most) pass a word-at-a-time check.
            Repr::Inline { .. } => crate::codec::utf8(self.as_bytes()).expect("a Name holds UTF-8"),
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
            (Repr::Inline { len: la, buf: a }, Repr::Inline { len: lb, buf: b }) => {
                cmp_inline(a, *la, b, *lb)
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

/// Order two inline names like the strings they hold: zero-padded buffers compare like their
/// strings (a shorter string that is a prefix of the other compares lower either way; equal
/// buffers differ only in trailing NULs, which the length orders). Big-endian words, no byte
/// loop.
#[inline]
fn cmp_inline<const N: usize>(a: &[u8; N], la: u8, b: &[u8; N], lb: u8) -> Ordering {
    let word = |x: &[u8; N], at: usize| {
        let mut w = [0u8; 8];
        let end = (at + 8).min(N);
        w[..end - at].copy_from_slice(&x[at..end]);
        u64::from_be_bytes(w)
    };
    let mut at = 0;
    while at < N {
        match word(a, at).cmp(&word(b, at)) {
            Ordering::Equal => at += 8,
            o => return o,
        }
    }
    la.cmp(&lb)
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
        let width = std::mem::size_of::<usize>();
        assert_eq!(
            std::mem::size_of::<Name>(),
            if width == 4 { 16 } else { 24 }
        );
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

    /// The inline comparison at both targets' sizes (wasm32's 14 is tested natively here).
    #[test]
    fn inline_order_is_str_order_at_every_size() {
        fn check<const N: usize>() {
            let pad = |s: &str| {
                let mut b = [0u8; N];
                b[..s.len()].copy_from_slice(s.as_bytes());
                (b, s.len() as u8)
            };
            let x = |n: usize| "x".repeat(n);
            let ids = [
                String::new(),
                "a".into(),
                "a\u{0}".into(),
                "a\u{0}\u{1}".into(),
                "a\u{1}".into(),
                "a\u{e9}".into(),
                "ab".into(),
                "b".into(),
                x(7),
                x(8),
                x(9),
                format!("{}\u{0}", x(8)),
                format!("{}a", x(N - 1)),
                x(N),
                "y".into(),
            ];
            for a in &ids {
                for b in &ids {
                    let ((ba, la), (bb, lb)) = (pad(a), pad(b));
                    assert_eq!(cmp_inline(&ba, la, &bb, lb), a.cmp(b), "{N}: {a:?} {b:?}");
                }
            }
        }
        check::<14>();
        check::<22>();
    }
}
