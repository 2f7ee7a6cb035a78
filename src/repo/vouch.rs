//! `verify()` for a caller that verifies the seals' signatures itself (docs/design.md §9): a
//! browser worker lists every seal's signature check ([`Repo::seal_checks_all`]), verifies them
//! with WebCrypto (about 0.4 ms each against ~4 ms for the core's P-384 in wasm), and calls
//! [`Repo::verify_vouched`], which runs every check of `verify()` except those signatures. A
//! caller whose own check failed (or that cannot check) calls `verify()`, which verifies every
//! signature itself and reports the typed error.

use super::replay::at;
use super::verify::VerifyReport;
use super::Repo;
use crate::commit::{PublicKey, Seal, Signature};
use crate::error::Result;
use crate::store::log::FRAME_SEAL;
use crate::store::Storage;

/// One seal signature to check: ECDSA P-384 with SHA-384 by `author` over `message`;
/// `signature` is `r ‖ s` (the format WebCrypto verifies).
#[derive(Debug, Clone, PartialEq)]
pub struct SealCheck {
    pub author: PublicKey,
    pub message: Vec<u8>,
    pub signature: Signature,
}

impl SealCheck {
    /// What verifying `seal`'s signature means.
    pub fn of(seal: &Seal) -> SealCheck {
        SealCheck {
            author: seal.author,
            message: Seal::message(&seal.repo, &seal.author, &seal.ids),
            signature: seal.signature,
        }
    }

    /// Check it with the core's own P-384.
    pub fn verify(&self) -> Result<()> {
        self.author.verify(&self.message, &self.signature)
    }
}

/// The signature check of every seal in the log, and the log length the list covers (what
/// [`Repo::verify_vouched`] takes).
#[derive(Debug, Clone, PartialEq)]
pub struct SealChecks {
    /// In log order, one per seal frame.
    pub checks: Vec<SealCheck>,
    pub log_len: u64,
}

impl<S: Storage> Repo<S> {
    /// Every seal frame of the log as a signature check, read from storage as `verify()` reads
    /// it (buffered frames are issued first; any damage is `Corrupt`, as in `verify()`).
    pub fn seal_checks_all(&mut self) -> Result<SealChecks> {
        let scan = self.log.scan_all()?;
        let mut checks = Vec::new();
        let log = &self.log;
        scan.each(&|o, b| log.read_at(o, b), &mut |f| {
            if f.kind == FRAME_SEAL {
                let seal = Seal::decode(f.payload).map_err(|e| at(f.offset, e))?;
                checks.push(SealCheck::of(&seal));
            }
            Ok(true)
        })?;
        Ok(SealChecks {
            checks,
            log_len: self.log.len(),
        })
    }

    /// `verify()` for a caller that verified the signature of every seal that
    /// [`seal_checks_all`](Self::seal_checks_all) listed, `log_len` being its `log_len`: the
    /// signatures of the seal frames below that length are not verified again (the report
    /// counts them in `signatures_vouched`); seals stored since are. Every other check runs:
    /// frame checksums, commit hashes, every signed commit sealed by its author, the seals'
    /// repository, the permission rule, snapshot = replay of its prefix, state and indexes =
    /// full replay. Sound only if the log below `log_len` did not change in between: the
    /// caller holds the repository (no write, no other handle) from the listing to this call.
    pub fn verify_vouched(&mut self, log_len: u64) -> Result<VerifyReport> {
        self.verify_proving(log_len)
    }
}
