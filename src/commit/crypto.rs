//! Identities and signatures: ECDSA P-384 (`p384` + `ecdsa` crates). Nonces are derived
//! deterministically (RFC 6979), so signing needs no random source and a weak RNG can never leak
//! the key through a repeated nonce.

use crate::error::{Error, Result, SignatureErrorKind};
use p384::ecdsa::signature::{Signer, Verifier};
use p384::ecdsa::{Signature as EcdsaSignature, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

/// Length of a compressed SEC1 P-384 public key.
pub const PUBLIC_KEY_LEN: usize = 49;
/// Length of an uncompressed SEC1 P-384 public key (`04 ‖ x ‖ y`).
pub const UNCOMPRESSED_KEY_LEN: usize = 97;
/// Length of a fixed-size (r ‖ s) P-384 signature.
pub const SIGNATURE_LEN: usize = 96;
/// Length of a P-384 secret scalar.
pub const SECRET_KEY_LEN: usize = 48;
/// How many candidates [`Identity::generate`] tries (and how many times
/// [`Identity::from_secret_bytes_checked`] derives) before giving up with a `SignatureError`.
pub const DERIVE_ATTEMPTS: u32 = 4;

/// A compressed SEC1 public key (49 bytes).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PublicKey(pub [u8; PUBLIC_KEY_LEN]);

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey({})", &hex(&self.0)[..16])
    }
}

impl PublicKey {
    /// Parse and check that the bytes are a point on the curve.
    pub fn from_bytes(b: &[u8]) -> Result<PublicKey> {
        let arr: [u8; PUBLIC_KEY_LEN] = b.try_into().map_err(|_| {
            Error::sig(
                SignatureErrorKind::Malformed,
                format!("public key must be {PUBLIC_KEY_LEN} bytes, got {}", b.len()),
            )
        })?;
        let pk = PublicKey(arr);
        pk.verifying_key()?;
        Ok(pk)
    }

    fn verifying_key(&self) -> Result<VerifyingKey> {
        VerifyingKey::from_sec1_bytes(&self.0).map_err(|_| {
            Error::sig(
                SignatureErrorKind::Malformed,
                "public key is not a P-384 point",
            )
        })
    }

    /// Verify `sig` over `msg` with this key.
    pub fn verify(&self, msg: &[u8], sig: &Signature) -> Result<()> {
        let vk = self.verifying_key()?;
        let s = EcdsaSignature::from_slice(&sig.0).map_err(|_| {
            Error::sig(
                SignatureErrorKind::Malformed,
                "signature scalars out of range",
            )
        })?;
        vk.verify(msg, &s).map_err(|_| {
            Error::sig(
                SignatureErrorKind::BadSignature,
                "signature does not verify",
            )
        })
    }

    /// The uncompressed SEC1 form (`04 ‖ x ‖ y`, 97 bytes): what a host's crypto API imports
    /// (WebCrypto's `raw` key format, or `x` and `y` of a JWK) to verify or sign with this key
    /// itself. Decompressing costs a square root mod p: hosts keep the result per key.
    pub fn uncompressed(&self) -> Result<[u8; UNCOMPRESSED_KEY_LEN]> {
        let point = self.verifying_key()?.to_sec1_point(false);
        let mut out = [0u8; UNCOMPRESSED_KEY_LEN];
        out.copy_from_slice(point.as_bytes());
        Ok(out)
    }

    /// A 64-bit tag used as the author tie-breaker in stamps.
    pub fn tag(&self) -> u64 {
        let h = Sha256::digest(self.0);
        u64::from_be_bytes(h[..8].try_into().unwrap())
    }

    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }
}

/// A 96-byte signature (r ‖ s).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Signature(pub [u8; SIGNATURE_LEN]);

impl std::fmt::Debug for Signature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Signature({}…)", &hex(&self.0)[..16])
    }
}

/// A key pair that signs commits.
///
/// Deriving the public key from the secret is a scalar multiplication (~3 ms in wasm, most of
/// an engine's open). An identity stored with its public key is opened without it
/// ([`Identity::from_parts`]); the signing key is derived on first use, and
/// [`Identity::check`] (which the repository calls before its first write) proves the stored
/// public key is the secret's.
#[derive(Clone)]
pub struct Identity {
    secret: p384::NonZeroScalar,
    public: PublicKey,
    /// Derived on first use.
    key: std::sync::OnceLock<SigningKey>,
    /// Whether `public` was derived here, or checked against the secret.
    checked: std::sync::OnceLock<bool>,
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Identity({:?})", self.public)
    }
}

impl Identity {
    /// Derive a key pair from 48 bytes of entropy. The caller supplies the entropy (the browser's
    /// `crypto.getRandomValues`, the OS RNG natively) so the core needs no random source of its
    /// own. Entropy that is not a valid scalar is re-hashed until it is.
    pub fn from_entropy(entropy: &[u8; SECRET_KEY_LEN]) -> Identity {
        let mut candidate = *entropy;
        loop {
            if let Ok(id) = Identity::from_secret_bytes(&candidate) {
                return id;
            }
            let h1 = Sha256::digest(candidate);
            let h2 = Sha256::digest(h1);
            candidate[..32].copy_from_slice(&h1);
            candidate[32..].copy_from_slice(&h2[..16]);
        }
    }

    /// A new identity for storing: [`Identity::from_entropy`], then [`Identity::self_test`].
    /// A candidate that fails the test (a host computing P-384 wrong: JavaScriptCore's wasm tiers
    /// did, docs/design.md §15.1a) is dropped and the next is derived from the entropy re-hashed,
    /// [`DERIVE_ATTEMPTS`] candidates at most; then a `SignatureError` (`malformed`), and nothing
    /// was stored.
    pub fn generate(entropy: &[u8; SECRET_KEY_LEN]) -> Result<Identity> {
        Identity::generate_with(entropy, public_of)
    }

    /// [`Identity::generate`] with the first derivation of the public key given (tests give one
    /// that computes wrong, as a faulty host does).
    fn generate_with(
        entropy: &[u8; SECRET_KEY_LEN],
        derive: impl Fn(&SigningKey) -> PublicKey,
    ) -> Result<Identity> {
        let mut seed = *entropy;
        let mut last = None;
        for attempt in 0..DERIVE_ATTEMPTS {
            let secret = Identity::from_entropy(&seed).secret;
            let key = SigningKey::from(secret);
            let id = Identity {
                secret,
                public: derive(&key),
                key: std::sync::OnceLock::from(key),
                checked: std::sync::OnceLock::from(true),
            };
            match id.self_test() {
                Ok(()) => return Ok(id),
                Err(e) => last = Some(e),
            }
            let mut h = Sha256::new();
            h.update(b"ibexdb identity retry");
            h.update([attempt as u8]);
            h.update(seed);
            let h1 = h.finalize();
            let h2 = Sha256::digest(h1);
            seed[..32].copy_from_slice(&h1);
            seed[32..].copy_from_slice(&h2[..16]);
        }
        Err(gave_up(last))
    }

    /// [`Identity::from_secret_bytes`] for a secret about to be stored (imported, or stored
    /// without its public key): the derivation is done again while [`Identity::self_test`]
    /// fails, [`DERIVE_ATTEMPTS`] times at most; then a `SignatureError` (`malformed`).
    pub fn from_secret_bytes_checked(b: &[u8]) -> Result<Identity> {
        let mut last = None;
        for _ in 0..DERIVE_ATTEMPTS {
            let id = Identity::from_secret_bytes(b)?;
            match id.self_test() {
                Ok(()) => return Ok(id),
                Err(e) => last = Some(e),
            }
        }
        Err(gave_up(last))
    }

    /// A key pair generated elsewhere (the browser's WebCrypto `generateKey`: native code, not
    /// wasm), for storing: accepted when the core's own derivation of the public key from the
    /// secret agrees with the given one — two independent implementations of P-384 agreeing,
    /// which is what [`Identity::self_test`] otherwise establishes with two derivations inside
    /// the core, at a fifth of its cost. The derivation is done again while it disagrees,
    /// [`DERIVE_ATTEMPTS`] times at most; then a `SignatureError` (`malformed`): the caller
    /// falls back to [`Identity::generate`].
    pub fn from_generated_pair(secret: &[u8], public: &[u8]) -> Result<Identity> {
        // Compared with the derived key, not decompressed: equal means on the curve.
        let given = PublicKey(public.try_into().map_err(|_| {
            Error::sig(
                SignatureErrorKind::Malformed,
                format!(
                    "public key must be {PUBLIC_KEY_LEN} bytes, got {}",
                    public.len()
                ),
            )
        })?);
        let secret = scalar(secret)?;
        for _ in 0..DERIVE_ATTEMPTS {
            let key = SigningKey::from(secret);
            if public_of(&key) == given {
                return Ok(Identity {
                    secret,
                    public: given,
                    key: std::sync::OnceLock::from(key),
                    checked: std::sync::OnceLock::from(true),
                });
            }
        }
        Err(Error::sig(
            SignatureErrorKind::Malformed,
            "the core's derivation of the public key disagrees with the generated pair",
        ))
    }

    /// What a key pair passes before it is stored: its public key derived a second time by
    /// another computation (the generic variable-base multiplication `G · k`, not the
    /// precomputed-table one [`SigningKey`] uses) agrees with it; the compressed key decompresses
    /// to a point of the curve; and a test message signed with the secret verifies under the
    /// public key. A `SignatureError` (`malformed`) otherwise.
    pub fn self_test(&self) -> Result<()> {
        use p384::elliptic_curve::group::GroupEncoding;
        let second = (p384::ProjectivePoint::GENERATOR * *self.secret).to_bytes();
        if second.as_slice() != self.public.0.as_slice() {
            return Err(Error::sig(
                SignatureErrorKind::Malformed,
                "two derivations of the public key disagree (the host computed P-384 wrong)",
            ));
        }
        self.public.uncompressed()?;
        let msg = b"ibexdb identity self-test";
        self.public.verify(msg, &self.sign(msg)).map_err(|_| {
            Error::sig(
                SignatureErrorKind::Malformed,
                "a test signature does not verify under the derived public key",
            )
        })
    }

    /// Import a secret scalar (48 bytes, big-endian), deriving its public key.
    pub fn from_secret_bytes(b: &[u8]) -> Result<Identity> {
        let secret = scalar(b)?;
        let key = SigningKey::from(secret);
        let public = public_of(&key);
        Ok(Identity {
            secret,
            public,
            key: std::sync::OnceLock::from(key),
            checked: std::sync::OnceLock::from(true),
        })
    }

    /// Import a secret scalar with the public key stored beside it, without deriving it: call
    /// [`Identity::check`] before anything is signed or written as this identity.
    pub fn from_parts(secret: &[u8], public: &[u8]) -> Result<Identity> {
        let secret = scalar(secret)?;
        let public = PublicKey::from_bytes(public)?;
        Ok(Identity {
            secret,
            public,
            key: std::sync::OnceLock::new(),
            checked: std::sync::OnceLock::new(),
        })
    }

    /// Whether the public key is the secret's (derived once; a `SignatureError` when not: the
    /// stored identity is damaged).
    pub fn check(&self) -> Result<()> {
        // Derived again while it disagrees, DERIVE_ATTEMPTS times at most: a host that computes
        // P-384 wrong at times (JavaScriptCore's wasm tiers, §15.1a; seen once in a fresh
        // instance after a panic) does not brand a sound identity damaged.
        let ok = *self.checked.get_or_init(|| {
            public_of(self.signing_key()) == self.public
                || (1..DERIVE_ATTEMPTS)
                    .any(|_| public_of(&SigningKey::from(self.secret)) == self.public)
        });
        if ok {
            Ok(())
        } else {
            Err(Error::sig(
                SignatureErrorKind::Malformed,
                "the stored public key is not the secret's: the identity is damaged",
            ))
        }
    }

    fn signing_key(&self) -> &SigningKey {
        self.key.get_or_init(|| SigningKey::from(self.secret))
    }

    /// Export the secret scalar (48 bytes). Keep it secret.
    pub fn secret_bytes(&self) -> [u8; SECRET_KEY_LEN] {
        let b = self.secret.to_bytes();
        let mut out = [0u8; SECRET_KEY_LEN];
        out.copy_from_slice(&b);
        out
    }

    pub fn public(&self) -> PublicKey {
        self.public
    }

    /// Sign `msg` (ECDSA P-384 with SHA-384, RFC 6979 nonces).
    pub fn sign(&self, msg: &[u8]) -> Signature {
        let s: EcdsaSignature = self.signing_key().sign(msg);
        let mut out = [0u8; SIGNATURE_LEN];
        out.copy_from_slice(&s.to_bytes());
        Signature(out)
    }
}

/// The error when no derivation passed [`Identity::self_test`].
fn gave_up(last: Option<Error>) -> Error {
    let why = last.map(|e| e.to_string()).unwrap_or_default();
    Error::sig(
        SignatureErrorKind::Malformed,
        format!("no identity passed its self-test in {DERIVE_ATTEMPTS} derivations (last: {why})"),
    )
}

/// A secret scalar from its 48 big-endian bytes.
fn scalar(b: &[u8]) -> Result<p384::NonZeroScalar> {
    let bad = || {
        Error::sig(
            SignatureErrorKind::Malformed,
            "secret key must be a 48-byte P-384 scalar in range",
        )
    };
    let bytes: &[u8; SECRET_KEY_LEN] = b.try_into().map_err(|_| bad())?;
    Option::from(p384::NonZeroScalar::from_repr((*bytes).into())).ok_or_else(bad)
}

/// The compressed public key of a signing key.
fn public_of(key: &SigningKey) -> PublicKey {
    let point = key.verifying_key().to_sec1_point(true);
    PublicKey(
        point
            .as_bytes()
            .try_into()
            .expect("compressed P-384 point is 49 bytes"),
    )
}

/// Lowercase hex.
pub fn hex(b: &[u8]) -> String {
    const H: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(b.len() * 2);
    for &x in b {
        s.push(H[(x >> 4) as usize] as char);
        s.push(H[(x & 15) as usize] as char);
    }
    s
}

/// Parse lowercase or uppercase hex.
pub fn from_hex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_identity_from_its_stored_parts_is_checked_before_use() {
        let a = Identity::from_entropy(&[7u8; 48]);
        let b = Identity::from_entropy(&[9u8; 48]);
        let same = Identity::from_parts(&a.secret_bytes(), &a.public().0).unwrap();
        assert_eq!(same.public(), a.public());
        same.check().unwrap();
        let sig = same.sign(b"x");
        a.public().verify(b"x", &sig).unwrap();
        // A public key that is not the secret's: refused by check().
        let wrong = Identity::from_parts(&a.secret_bytes(), &b.public().0).unwrap();
        assert!(matches!(wrong.check(), Err(Error::Signature { .. })));
        assert!(Identity::from_parts(&[0u8; 48], &a.public().0).is_err());
        assert!(Identity::from_parts(&a.secret_bytes(), &[2u8; 49]).is_err());
    }

    /// A derivation that computes a wrong public key (as JavaScriptCore's wasm tiers did, at
    /// times) is caught before the identity is handed out: a wrong point, or bytes that are no
    /// point of the curve; a few wrong ones are replaced by a fresh candidate, always wrong is a
    /// typed error.
    #[test]
    fn a_pair_generated_elsewhere_is_accepted_only_when_the_core_derives_the_same_key() {
        let a = Identity::from_entropy(&[7u8; SECRET_KEY_LEN]);
        let b = Identity::from_entropy(&[9u8; SECRET_KEY_LEN]);
        let ok = Identity::from_generated_pair(&a.secret_bytes(), &a.public().0).unwrap();
        assert_eq!(ok.public(), a.public());
        ok.check().unwrap();
        // Another key's public half, a point off the curve, a secret out of range: refused.
        let wrong = Identity::from_generated_pair(&a.secret_bytes(), &b.public().0);
        assert!(matches!(wrong, Err(Error::Signature { .. })), "{wrong:?}");
        let mut off = a.public().0;
        off[10] ^= 1;
        assert!(Identity::from_generated_pair(&a.secret_bytes(), &off).is_err());
        assert!(Identity::from_generated_pair(&[0xff; SECRET_KEY_LEN], &a.public().0).is_err());
        assert!(Identity::from_generated_pair(&[1; 47], &a.public().0).is_err());
    }

    #[test]
    fn a_new_identity_is_self_tested_and_a_corrupted_key_is_refused() {
        let good = Identity::generate(&[7u8; 48]).unwrap();
        assert_eq!(good.public(), Identity::from_entropy(&[7u8; 48]).public());
        good.self_test().unwrap();
        // Corrupted keys: another point (a valid key, not the secret's), a flipped bit (not a
        // point, or another point), bytes of no point at all.
        let other = Identity::from_entropy(&[9u8; 48]).public();
        let mut flipped = good.public();
        flipped.0[30] ^= 0x10;
        for bad in [other, flipped, PublicKey([2u8; 49])] {
            let id = Identity {
                public: bad,
                ..good.clone()
            };
            assert!(
                matches!(id.self_test(), Err(Error::Signature { .. })),
                "{bad:?}"
            );
        }
        // Wrong on the first two candidates: the third is taken, and it passes.
        let calls = std::cell::Cell::new(0);
        let id = Identity::generate_with(&[7u8; 48], |k| {
            calls.set(calls.get() + 1);
            let mut p = public_of(k);
            if calls.get() <= 2 {
                p.0[48] ^= 1;
            }
            p
        })
        .unwrap();
        assert_eq!(calls.get(), 3);
        id.self_test().unwrap();
        assert_ne!(id.public(), good.public());
        assert_eq!(
            Identity::from_secret_bytes(&id.secret_bytes())
                .unwrap()
                .public(),
            id.public()
        );
        // Always wrong: a SignatureError after DERIVE_ATTEMPTS candidates.
        calls.set(0);
        let err = Identity::generate_with(&[7u8; 48], |_| {
            calls.set(calls.get() + 1);
            other
        })
        .unwrap_err();
        assert_eq!(calls.get(), DERIVE_ATTEMPTS);
        assert!(matches!(err, Error::Signature { .. }), "{err}");
        assert!(err.to_string().contains("self-test"), "{err}");
        // An imported secret is derived and tested the same way.
        assert_eq!(
            Identity::from_secret_bytes_checked(&good.secret_bytes())
                .unwrap()
                .public(),
            good.public()
        );
        assert!(Identity::from_secret_bytes_checked(&[0u8; 48]).is_err());
    }

    #[test]
    fn sign_verify_round_trip_and_rejections() {
        let a = Identity::from_entropy(&[7u8; 48]);
        let b = Identity::from_entropy(&[9u8; 48]);
        let sig = a.sign(b"hello");
        a.public().verify(b"hello", &sig).unwrap();
        assert!(a.public().verify(b"hellp", &sig).is_err());
        assert!(b.public().verify(b"hello", &sig).is_err());
        let back = Identity::from_secret_bytes(&a.secret_bytes()).unwrap();
        assert_eq!(back.public(), a.public());
        assert!(PublicKey::from_bytes(&[0u8; 49]).is_err());
        assert!(Identity::from_secret_bytes(&[0u8; 48]).is_err());
        assert!(Identity::from_secret_bytes(&[0xffu8; 48]).is_err());
        // Invalid entropy still yields a key.
        let _ = Identity::from_entropy(&[0u8; 48]);
    }

    /// A host's crypto (WebCrypto) does not normalize `s`: (r, n − s) must verify like (r, s).
    #[test]
    fn signatures_with_either_s_verify() {
        const N: [u8; 48] = [
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xc7, 0x63, 0x4d, 0x81,
            0xf4, 0x37, 0x2d, 0xdf, 0x58, 0x1a, 0x0d, 0xb2, 0x48, 0xb0, 0xa7, 0x7a, 0xec, 0xec,
            0x19, 0x6a, 0xcc, 0xc5, 0x29, 0x73,
        ];
        let a = Identity::from_entropy(&[7u8; 48]);
        let sig = a.sign(b"hello");
        let mut flipped = sig;
        let mut borrow = 0i16;
        for i in (0..48).rev() {
            let d = N[i] as i16 - sig.0[48 + i] as i16 - borrow;
            flipped.0[48 + i] = d.rem_euclid(256) as u8;
            borrow = i16::from(d < 0);
        }
        assert_ne!(flipped, sig);
        a.public().verify(b"hello", &sig).unwrap();
        a.public().verify(b"hello", &flipped).unwrap();
    }

    #[test]
    fn uncompressed_key_is_the_same_point() {
        let a = Identity::from_entropy(&[7u8; 48]).public();
        let u = a.uncompressed().unwrap();
        assert_eq!(u[0], 4);
        // x is the compressed key's coordinate; y's parity is its prefix (02 even, 03 odd).
        assert_eq!(&u[1..49], &a.0[1..]);
        assert_eq!(a.0[0], 2 + (u[96] & 1));
        let back = VerifyingKey::from_sec1_bytes(&u).unwrap();
        assert_eq!(back.to_sec1_point(true).as_bytes(), &a.0[..]);
        assert!(PublicKey([2u8; 49]).uncompressed().is_err());
    }
}
