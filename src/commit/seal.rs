//! Seals: one signature by one author over a batch of commit ids of one repository
//! (docs/design.md §5.1). The repository's name is inside the signed bytes, so a history
//! copied into another repository does not verify there.

use super::crypto::{Identity, PublicKey, Signature, PUBLIC_KEY_LEN, SIGNATURE_LEN};
use super::id::CommitId;
use crate::codec::{Reader, Writer};
use crate::error::{Error, Result, SignatureErrorKind};

/// Seal format version. Version 2 binds the seal to its repository's name; version 1 (no
/// name) is no longer read.
pub const SEAL_VERSION: u8 = 2;
/// Most commit ids one seal covers.
pub const MAX_SEAL_IDS: usize = 1 << 16;
const SEAL_DOMAIN: &[u8] = b"ibexdb-seal-v2";

/// The shortest encoded seal: version, a one-byte repository name with its length, the
/// author, a count of one, one id and the signature. Decoders bound counts of seals by it.
pub const SEAL_MIN_BYTES: usize = 1 + 2 + PUBLIC_KEY_LEN + 1 + 32 + SIGNATURE_LEN;

/// One signature by `author` over a batch of commit ids.
#[derive(Debug, Clone, PartialEq)]
pub struct Seal {
    /// The repository the sealed commits belong to.
    pub repo: String,
    pub author: PublicKey,
    /// Strictly ascending.
    pub ids: Vec<CommitId>,
    pub signature: Signature,
}

impl Seal {
    /// See [`SEAL_MIN_BYTES`].
    pub const MIN_BYTES: usize = SEAL_MIN_BYTES;

    /// The bytes that are signed: domain tag, repository, author, count, ids.
    pub fn message(repo: &str, author: &PublicKey, ids: &[CommitId]) -> Vec<u8> {
        let mut w = Writer::with_capacity(
            SEAL_DOMAIN.len() + repo.len() + 1 + PUBLIC_KEY_LEN + 4 + ids.len() * 32,
        );
        w.bytes(SEAL_DOMAIN);
        w.lp(repo.as_bytes());
        w.bytes(&author.0);
        w.varint(ids.len() as u64);
        for id in ids {
            w.bytes(&id.0);
        }
        w.into_inner()
    }

    /// Sign a batch of commit ids of repository `repo` (sorted and deduplicated here).
    pub fn create(identity: &Identity, repo: &str, ids: &[CommitId]) -> Seal {
        let mut ids = ids.to_vec();
        ids.sort();
        ids.dedup();
        let author = identity.public();
        let signature = identity.sign(&Seal::message(repo, &author, &ids));
        Seal {
            repo: repo.to_string(),
            author,
            ids,
            signature,
        }
    }

    /// Check the signature. A signature made by another key is reported as `WrongKey`.
    pub fn verify(&self) -> Result<()> {
        // `PublicKey::verify` parses the key first and reports a key that is not a curve point
        // as `Malformed`; parsing it here too would decompress the point twice.
        self.author
            .verify(
                &Seal::message(&self.repo, &self.author, &self.ids),
                &self.signature,
            )
            .map_err(|e| match e {
                Error::Signature {
                    kind: SignatureErrorKind::BadSignature,
                    ..
                } => Error::sig(
                    SignatureErrorKind::BadSignature,
                    format!(
                        "seal over {} commits does not verify under author {}",
                        self.ids.len(),
                        &self.author.to_hex()[..16]
                    ),
                ),
                e => e,
            })
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer::with_capacity(
            2 + self.repo.len() + PUBLIC_KEY_LEN + 4 + self.ids.len() * 32 + SIGNATURE_LEN,
        );
        w.u8(SEAL_VERSION);
        w.lp(self.repo.as_bytes());
        w.bytes(&self.author.0);
        w.varint(self.ids.len() as u64);
        for id in &self.ids {
            w.bytes(&id.0);
        }
        w.bytes(&self.signature.0);
        w.into_inner()
    }

    pub fn decode(bytes: &[u8]) -> Result<Seal> {
        let mut r = Reader::new(bytes, "seal");
        let v = r.u8()?;
        if v != SEAL_VERSION {
            return Err(r.err(format!(
                "unsupported seal version {v} (this version reads {SEAL_VERSION}: seals bound to their repository)"
            )));
        }
        let repo = r.str()?.to_string();
        crate::key::check_repo_name(&repo).map_err(|_| r.err("bad repository name"))?;
        let author = PublicKey(r.array()?);
        let n = r.count(32, MAX_SEAL_IDS)?;
        if n == 0 {
            return Err(r.err("seal covers no commits"));
        }
        let mut ids = Vec::with_capacity(n);
        for _ in 0..n {
            let id = CommitId(r.array()?);
            if ids.last().is_some_and(|l| *l >= id) {
                return Err(r.err("seal ids not strictly ascending"));
            }
            ids.push(id);
        }
        let signature = Signature(r.array()?);
        r.finish()?;
        Ok(Seal {
            repo,
            author,
            ids,
            signature,
        })
    }
}
