//! Bundles (docs/design.md §12.1): a repository's whole history (every commit with its id,
//! every seal) as one byte string, for exchange without a server (`exportBundle` /
//! `receiveBundle` in the browser).
//!
//! | field   | encoding                                                   |
//! |---------|------------------------------------------------------------|
//! | magic   | `"IBEXBND1"`                                               |
//! | commits | `u32` count; each: 32-byte claimed id, `u32` length, bytes |
//! | seals   | `u32` count; each: `u32` length, seal bytes                |
//!
//! Integers are little-endian; trailing bytes are rejected. What is inside is checked by
//! `Repo::receive`, not here.

use crate::commit::CommitId;
use crate::error::{Error, Result};

/// The bundle magic.
pub const BUNDLE_MAGIC: &[u8; 8] = b"IBEXBND1";

/// Commits (claimed id, bytes) and seals, as in [`crate::Repo::export`].
pub type Bundle = (Vec<(CommitId, Vec<u8>)>, Vec<Vec<u8>>);

/// Encode commits and seals as a bundle.
pub fn encode_bundle(commits: &[(CommitId, Vec<u8>)], seals: &[Vec<u8>]) -> Vec<u8> {
    let size: usize = commits.iter().map(|c| 36 + c.1.len()).sum::<usize>()
        + seals.iter().map(|s| 4 + s.len()).sum::<usize>();
    let mut out = Vec::with_capacity(16 + size);
    out.extend_from_slice(BUNDLE_MAGIC);
    put_u32(&mut out, commits.len());
    for (id, b) in commits {
        out.extend_from_slice(&id.0);
        put_u32(&mut out, b.len());
        out.extend_from_slice(b);
    }
    put_u32(&mut out, seals.len());
    for s in seals {
        put_u32(&mut out, s.len());
        out.extend_from_slice(s);
    }
    out
}

fn put_u32(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&(n as u32).to_le_bytes());
}

/// Decode a bundle: `DecodeError` ("commit bundle") for a bad magic, a truncated body or
/// trailing bytes.
pub fn decode_bundle(b: &[u8]) -> Result<Bundle> {
    let mut r = BundleReader { b, pos: 0 };
    if r.take(8)? != BUNDLE_MAGIC {
        return Err(bad("bad magic"));
    }
    let nc = r.u32()?;
    let mut commits = Vec::with_capacity(nc.min(1 << 16));
    for _ in 0..nc {
        let id = CommitId(r.take(32)?.try_into().unwrap());
        let len = r.u32()?;
        commits.push((id, r.take(len)?.to_vec()));
    }
    let ns = r.u32()?;
    let mut seals = Vec::with_capacity(ns.min(1 << 16));
    for _ in 0..ns {
        let len = r.u32()?;
        seals.push(r.take(len)?.to_vec());
    }
    if r.pos != b.len() {
        return Err(bad("trailing bytes"));
    }
    Ok((commits, seals))
}

fn bad(reason: &str) -> Error {
    Error::Decode {
        what: "commit bundle".into(),
        reason: reason.into(),
    }
}

struct BundleReader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> BundleReader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or_else(|| bad("truncated"))?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn u32(&mut self) -> Result<usize> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()) as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundles_round_trip_and_reject_damage() {
        let commits = vec![
            (CommitId([7; 32]), vec![1, 2, 3]),
            (CommitId([9; 32]), vec![]),
        ];
        let seals = vec![vec![4, 5], vec![6]];
        let b = encode_bundle(&commits, &seals);
        assert_eq!(&b[..8], BUNDLE_MAGIC);
        assert_eq!(decode_bundle(&b).unwrap(), (commits, seals));
        let name = |r: Result<Bundle>| match r {
            Err(Error::Decode { what, reason }) => format!("{what}: {reason}"),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            name(decode_bundle(&b[..b.len() - 1])),
            "commit bundle: truncated"
        );
        let mut extra = b.clone();
        extra.push(0);
        assert_eq!(name(decode_bundle(&extra)), "commit bundle: trailing bytes");
        let mut magic = b;
        magic[0] = b'X';
        assert_eq!(name(decode_bundle(&magic)), "commit bundle: bad magic");
        assert_eq!(name(decode_bundle(b"IBEX")), "commit bundle: truncated");
    }
}
