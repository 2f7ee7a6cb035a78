//! SHA-256 fed in pieces, for attachments hashed while they stream to their file (WebCrypto's
//! `digest` takes the whole input at once: a 500 MB file would have to sit in memory).

use sha2::{Digest, Sha256};

/// An incremental SHA-256: `update` any number of times, then `finish`.
#[derive(Clone, Default)]
pub struct Sha256Stream {
    h: Sha256,
    len: u64,
}

impl Sha256Stream {
    pub fn new() -> Sha256Stream {
        Sha256Stream::default()
    }

    /// Feed the next bytes (16 KiB per call into the compression loop: src/hashing.rs says why).
    pub fn update(&mut self, bytes: &[u8]) {
        for piece in bytes.chunks(16 << 10) {
            self.h.update(piece);
        }
        self.len += bytes.len() as u64;
    }

    /// Bytes fed so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The digest of everything fed.
    pub fn finish(self) -> [u8; 32] {
        self.h.finalize().into()
    }
}

impl std::fmt::Debug for Sha256Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Sha256Stream({} bytes)", self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_hash_as_the_whole() {
        let bytes: Vec<u8> = (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut s = Sha256Stream::new();
        for c in bytes.chunks(12_345) {
            s.update(c);
        }
        assert_eq!(s.len(), bytes.len() as u64);
        assert_eq!(s.finish(), crate::hashing::sha256(&bytes));
        assert_eq!(Sha256Stream::new().finish(), crate::hashing::sha256(b""));
    }
}
