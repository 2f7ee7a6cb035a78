//! Commit ids (SHA-256 of a commit's bytes) and stamps, the merge order of writes
//! (docs/design.md §4.2).

use super::crypto::{from_hex, hex};
use crate::codec::{Reader, Writer};
use crate::error::Result;

/// SHA-256 of a commit's encoding.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct CommitId(pub [u8; 32]);

impl std::fmt::Debug for CommitId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CommitId({})", &self.to_hex()[..12])
    }
}

impl CommitId {
    pub fn of(bytes: &[u8]) -> CommitId {
        CommitId(crate::hashing::sha256(bytes))
    }
    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }
    pub fn from_hex(s: &str) -> Option<CommitId> {
        from_hex(s)?.try_into().ok().map(CommitId)
    }
    pub(crate) fn tag(&self) -> u64 {
        u64::from_be_bytes(self.0[..8].try_into().unwrap())
    }
}

/// The position of a write in the merge order: (hybrid logical clock, author tag, commit tag).
/// Every commit has a unique stamp; a later stamp wins.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct Stamp {
    pub hlc: u64,
    pub author: u64,
    pub commit: u64,
}

impl Stamp {
    pub const ZERO: Stamp = Stamp {
        hlc: 0,
        author: 0,
        commit: 0,
    };
    pub fn encode(&self, w: &mut Writer) {
        w.u64(self.hlc);
        w.u64(self.author);
        w.u64(self.commit);
    }
    pub fn decode(r: &mut Reader<'_>) -> Result<Stamp> {
        Ok(Stamp {
            hlc: r.u64()?,
            author: r.u64()?,
            commit: r.u64()?,
        })
    }
}
