//! Hashing large inputs (commit ids, log frame and snapshot checksums) in pieces.
//!
//! Why pieces: in the browser, V8 runs a wasm function in its baseline tier (Liftoff) at first
//! and moves it to its optimizing tier (TurboFan) for later calls once it has run enough; there
//! is no on-stack replacement, so a single call that hashes a 10 MiB commit runs in baseline
//! code to its end. Measured on the first one-transaction load of 100,000 items in a fresh
//! worker: the SHA-256 of its commit alone was ~20% of the load, all of it in baseline code. Fed
//! in 16 KiB pieces, the compression function is called often enough to be optimized early in
//! the first large input. Natively the pieces cost nothing measurable.

use sha2::{Digest, Sha256};

/// Bytes per call into a hash function (a multiple of SHA-256's 64-byte block).
const PIECE: usize = 16 << 10;

/// SHA-256 of `bytes`.
pub(crate) fn sha256(bytes: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    for piece in bytes.chunks(PIECE) {
        h.update(piece);
    }
    h.finalize().into()
}

/// The checksum of a snapshot's blocks, commit-table segments and meta section: the low 32
/// bits of XXH3-64 (docs/design.md §8, *Checksums*). Not CRC-32 there: a first aggregate after
/// an open checks every block it scans (~70 MB for the DBX rows), and in wasm, which has no
/// carry-less multiply, CRC-32 runs at ~2 GB/s against XXH3's ~12 GB/s (measured in V8 on
/// this machine: 64 MiB in 4 KiB blocks, 25–35 ms against 5 ms). The log's frames keep CRC-32.
pub(crate) fn block_sum(bytes: &[u8]) -> u32 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for piece in bytes.chunks(PIECE) {
        h.update(piece);
    }
    h.digest() as u32
}

/// CRC-32 (IEEE) of `bytes`.
pub(crate) fn crc32(bytes: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    crc32_update(&mut h, bytes);
    h.finalize()
}

/// Add `bytes` to a running CRC-32.
pub(crate) fn crc32_update(h: &mut crc32fast::Hasher, bytes: &[u8]) {
    for piece in bytes.chunks(PIECE) {
        h.update(piece);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_hash_like_the_whole() {
        let bytes: Vec<u8> = (0..3 * PIECE + 77).map(|i| (i * 31 % 251) as u8).collect();
        let whole: [u8; 32] = Sha256::digest(&bytes).into();
        assert_eq!(sha256(&bytes), whole);
        assert_eq!(crc32(&bytes), crc32fast::hash(&bytes));
        assert_eq!(sha256(b""), <[u8; 32]>::from(Sha256::digest(b"")));
    }
}
