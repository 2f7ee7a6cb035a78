//! Minimal binary codec: LEB128 varints, fixed-width little-endian integers and length-prefixed
//! bytes. Readers reject non-minimal varints so that every value has exactly one encoding.

use crate::error::{Error, Result};

/// Append-only byte writer.
#[derive(Default, Debug, Clone)]
pub struct Writer {
    pub buf: Vec<u8>,
}

impl Writer {
    pub fn new() -> Self {
        Writer { buf: Vec::new() }
    }
    pub fn with_capacity(n: usize) -> Self {
        Writer {
            buf: Vec::with_capacity(n),
        }
    }
    #[inline]
    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }
    #[inline]
    pub fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    #[inline]
    pub fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    #[inline]
    pub fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }
    #[inline]
    pub fn bytes(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }
    /// Length-prefixed bytes.
    #[inline]
    pub fn lp(&mut self, b: &[u8]) {
        self.varint(b.len() as u64);
        self.buf.extend_from_slice(b);
    }
    pub fn into_inner(self) -> Vec<u8> {
        self.buf
    }
}

/// A cursor over bytes being decoded. `what` names the structure for error messages.
#[derive(Clone)]
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8], what: &'static str) -> Self {
        Reader { data, pos: 0, what }
    }
    pub fn pos(&self) -> usize {
        self.pos
    }
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }
    pub fn is_empty(&self) -> bool {
        self.pos == self.data.len()
    }
    /// The next byte, not consumed.
    #[inline]
    pub fn peek(&self) -> Option<u8> {
        self.data.get(self.pos).copied()
    }
    #[cold]
    #[inline(never)]
    pub fn err(&self, reason: impl Into<String>) -> Error {
        let reason: String = reason.into();
        Error::decode(self.what, format!("{reason} at byte {}", self.pos))
    }
    /// The error of a read past the end (out of line: the readers below stay small enough to
    /// inline into the decoders' loops).
    #[cold]
    #[inline(never)]
    fn short(&self, n: usize) -> Error {
        self.err(format!("need {n} bytes, have {}", self.remaining()))
    }
    /// Fail unless every byte was consumed.
    pub fn finish(&self) -> Result<()> {
        if self.is_empty() {
            Ok(())
        } else {
            Err(self.err(format!("{} trailing bytes", self.remaining())))
        }
    }
    #[inline]
    pub fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        match self.data.get(self.pos..).and_then(|rest| rest.get(..n)) {
            Some(s) => {
                self.pos += n;
                Ok(s)
            }
            None => Err(self.short(n)),
        }
    }
    #[inline]
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }
    #[inline]
    pub fn u8(&mut self) -> Result<u8> {
        match self.data.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => Err(self.short(1)),
        }
    }
    #[inline]
    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    #[inline]
    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    #[inline]
    pub fn varint(&mut self) -> Result<u64> {
        // Fast path: most varints (counts, lengths, table indices) are one byte.
        if let Some(&b) = self.data.get(self.pos) {
            if b < 0x80 {
                self.pos += 1;
                return Ok(u64::from(b));
            }
        }
        self.varint_slow()
    }

    #[inline(never)]
    fn varint_slow(&mut self) -> Result<u64> {
        let mut v: u64 = 0;
        let mut shift = 0u32;
        loop {
            let b = self.u8()?;
            if shift == 63 && b > 1 {
                return Err(self.err("varint overflows u64"));
            }
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                if b == 0 && shift > 0 {
                    return Err(self.err("non-minimal varint"));
                }
                return Ok(v);
            }
            shift += 7;
            if shift > 63 {
                return Err(self.err("varint too long"));
            }
        }
    }
    /// A varint used as a count or length, bounded by `max` and by the bytes left
    /// (each element needs at least `min_elem` bytes), so hostile input cannot make us
    /// allocate more than the input justifies.
    #[inline]
    pub fn count(&mut self, min_elem: usize, max: usize) -> Result<usize> {
        let n = self.varint()?;
        if n <= max as u64 && (n as usize).saturating_mul(min_elem) <= self.remaining() {
            Ok(n as usize)
        } else {
            Err(self.count_err(n, max))
        }
    }
    #[cold]
    #[inline(never)]
    fn count_err(&self, n: u64, max: usize) -> Error {
        if n > max as u64 {
            self.err(format!("count {n} exceeds limit {max}"))
        } else {
            self.err(format!("count {n} exceeds the remaining input"))
        }
    }
    /// Length-prefixed bytes.
    #[inline]
    pub fn lp(&mut self) -> Result<&'a [u8]> {
        let n = self.count(1, usize::MAX)?;
        self.take(n)
    }
    #[inline]
    pub fn str(&mut self) -> Result<&'a str> {
        let b = self.lp()?;
        match utf8(b) {
            Some(s) => Ok(s),
            None => Err(self.err("invalid UTF-8")),
        }
    }
}

/// `b` as a string if it is valid UTF-8. Most strings here are ASCII (ids, field names, set
/// elements, JSON text from the page): eight bytes at a time answer them without the general
/// validator, which costs a call per short string and runs at ~0.5 GB/s in wasm.
#[inline]
pub fn utf8(b: &[u8]) -> Option<&str> {
    let mut words = b.chunks_exact(8);
    let ascii = words
        .by_ref()
        .all(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")) & 0x8080_8080_8080_8080 == 0)
        && words.remainder().iter().all(|&c| c < 0x80);
    if ascii {
        // SAFETY: every byte is below 0x80, so `b` is ASCII, which is valid UTF-8.
        Some(unsafe { std::str::from_utf8_unchecked(b) })
    } else {
        std::str::from_utf8(b).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_checked_for_utf8() {
        for s in [
            "",
            "a",
            "abcdefgh",
            "abcdefghi",
            "Item 123456789",
            "é",
            "abcdefgé",
            "日本語のテキスト",
        ] {
            assert_eq!(utf8(s.as_bytes()), Some(s));
        }
        for b in [
            &b"\xff"[..],
            b"abcdefgh\xc3",
            b"\xc3\x28",
            b"abcdefg\x80abc",
            b"\xed\xa0\x80",
        ] {
            assert_eq!(utf8(b), None, "{b:?}");
        }
    }

    #[test]
    fn varint_round_trip_and_minimality() {
        for v in [0u64, 1, 127, 128, 300, 1 << 35, u64::MAX] {
            let mut w = Writer::new();
            w.varint(v);
            let mut r = Reader::new(&w.buf, "t");
            assert_eq!(r.varint().unwrap(), v);
            r.finish().unwrap();
        }
        assert!(Reader::new(&[0x80, 0x00], "t").varint().is_err());
        assert!(Reader::new(&[0xff; 11], "t").varint().is_err());
    }
}
