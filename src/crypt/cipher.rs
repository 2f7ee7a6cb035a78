//! The primitives of end-to-end encryption (docs/design.md §6.8): AES-256-GCM for content and
//! for wrapped keys, and the key that wraps an epoch key for one member: static-static ECDH on
//! P-384 between the wrapping owner and the member, through HKDF-SHA-384 with a random salt.

use crate::commit::{Identity, PublicKey};
use crate::error::{DecryptErrorKind, Error, Result};
#[cfg(target_arch = "wasm32")]
use aes_gcm::aead::AeadInPlace;
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use hkdf::Hkdf;
use sha2::Sha384;

/// Length of an epoch (content) key and of a key-wrapping key.
pub const KEY_LEN: usize = 32;
/// Length of an AES-GCM nonce.
pub const NONCE_LEN: usize = 12;
/// Length of an AES-GCM tag.
pub const TAG_LEN: usize = 16;
/// Length of the HKDF salt of a wrapped key.
pub const SALT_LEN: usize = 16;
/// Length of a wrapped key: salt, nonce, the sealed key and its tag.
pub const WRAPPED_LEN: usize = SALT_LEN + NONCE_LEN + KEY_LEN + TAG_LEN;

pub(crate) fn derr(kind: DecryptErrorKind, detail: impl Into<String>) -> Error {
    Error::Decrypt {
        kind,
        detail: detail.into(),
    }
}

/// An epoch key with its expanded AES key schedule (made once per epoch, not per commit):
/// `ring`'s natively, `aes-gcm`'s on wasm32 (the same AES-256-GCM: either opens the other's).
#[derive(Clone)]
pub struct EpochKey {
    pub key: [u8; KEY_LEN],
    #[cfg(not(target_arch = "wasm32"))]
    aead: ring::aead::LessSafeKey,
    #[cfg(target_arch = "wasm32")]
    aead: Aes256Gcm,
}

impl EpochKey {
    pub fn new(key: [u8; KEY_LEN]) -> EpochKey {
        EpochKey {
            key,
            #[cfg(not(target_arch = "wasm32"))]
            aead: ring::aead::LessSafeKey::new(
                ring::aead::UnboundKey::new(&ring::aead::AES_256_GCM, &key)
                    .expect("a 32-byte key is an AES-256 key"),
            ),
            #[cfg(target_arch = "wasm32")]
            aead: Aes256Gcm::new(&key.into()),
        }
    }

    /// [`seal`] of `buf` in place under this key; returns the tag (to append).
    pub fn seal_in_place(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        buf: &mut [u8],
    ) -> [u8; TAG_LEN] {
        #[cfg(not(target_arch = "wasm32"))]
        {
            let n = ring::aead::Nonce::assume_unique_for_key(*nonce);
            let tag = self
                .aead
                .seal_in_place_separate_tag(n, ring::aead::Aad::from(aad), buf)
                .expect("AES-GCM encrypts any message below 64 GiB");
            tag.as_ref().try_into().unwrap()
        }
        #[cfg(target_arch = "wasm32")]
        {
            let tag = self
                .aead
                .encrypt_in_place_detached(Nonce::from_slice(nonce), aad, buf)
                .expect("AES-GCM encrypts any message below 64 GiB");
            tag.into()
        }
    }

    /// [`open`] in place of `buf` = ciphertext ‖ tag under this key: the plaintext (a prefix
    /// of `buf`), `None` when it does not authenticate (`buf` then holds anything).
    pub fn open_in_place<'b>(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        buf: &'b mut [u8],
    ) -> Option<&'b mut [u8]> {
        #[cfg(not(target_arch = "wasm32"))]
        {
            let n = ring::aead::Nonce::assume_unique_for_key(*nonce);
            self.aead
                .open_in_place(n, ring::aead::Aad::from(aad), buf)
                .ok()
        }
        #[cfg(target_arch = "wasm32")]
        {
            let at = buf.len().checked_sub(TAG_LEN)?;
            let (msg, tag) = buf.split_at_mut(at);
            self.aead
                .decrypt_in_place_detached(
                    Nonce::from_slice(nonce),
                    aad,
                    msg,
                    aes_gcm::Tag::from_slice(tag),
                )
                .ok()?;
            Some(msg)
        }
    }

    /// [`open`] under this key.
    pub fn open(&self, nonce: &[u8; NONCE_LEN], aad: &[u8], ct: &[u8]) -> Option<Vec<u8>> {
        let mut buf = ct.to_vec();
        let n = self.open_in_place(nonce, aad, &mut buf)?.len();
        buf.truncate(n);
        Some(buf)
    }
}

/// AES-256-GCM of `plain` under `key` and `nonce`, authenticating `aad`: ciphertext ‖ tag.
pub fn seal(key: &[u8; KEY_LEN], nonce: &[u8; NONCE_LEN], aad: &[u8], plain: &[u8]) -> Vec<u8> {
    let c = Aes256Gcm::new(key.into());
    c.encrypt(Nonce::from_slice(nonce), Payload { msg: plain, aad })
        .expect("AES-GCM encrypts any message below 64 GiB")
}

/// The inverse of [`seal`]; `None` when the tag does not authenticate.
pub fn open(
    key: &[u8; KEY_LEN],
    nonce: &[u8; NONCE_LEN],
    aad: &[u8],
    ct: &[u8],
) -> Option<Vec<u8>> {
    let c = Aes256Gcm::new(key.into());
    c.decrypt(Nonce::from_slice(nonce), Payload { msg: ct, aad })
        .ok()
}

thread_local! {
    /// Key agreements (ECDH scalar multiplications) this thread has made: what a flood of
    /// forged wraps must not cost (`testing::key_agreements`).
    static KEY_AGREEMENTS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Key agreements made on this thread so far.
#[cfg(feature = "testing")]
pub fn key_agreements() -> u64 {
    KEY_AGREEMENTS.with(std::cell::Cell::get)
}

/// The key-wrapping key between `me` and `other` (either side computes the same one):
/// HKDF-SHA-384 (salt, the x coordinate of ECDH(me, other), `info`).
fn kek(me: &Identity, other: &PublicKey, salt: &[u8], info: &[u8]) -> Result<[u8; KEY_LEN]> {
    KEY_AGREEMENTS.with(|n| n.set(n.get() + 1));
    let pk = p384::PublicKey::from_sec1_bytes(&other.0).map_err(|_| {
        derr(
            DecryptErrorKind::Malformed,
            "a member key is not a P-384 point",
        )
    })?;
    let secret = me.secret_bytes();
    let scalar: Option<p384::NonZeroScalar> = p384::NonZeroScalar::from_repr(secret.into()).into();
    let scalar = scalar.ok_or_else(|| derr(DecryptErrorKind::Malformed, "bad identity"))?;
    let shared = p384::ecdh::diffie_hellman(scalar, pk.as_affine());
    let hk = Hkdf::<Sha384>::new(Some(salt), shared.raw_secret_bytes());
    let mut out = [0u8; KEY_LEN];
    hk.expand(info, &mut out)
        .expect("32 bytes is a valid HKDF-SHA-384 length");
    Ok(out)
}

/// What a wrapped key is bound to: the repository, the epoch, the wrapping owner and the member.
pub fn wrap_info(repo: &str, epoch: u32, from: &PublicKey, to: &PublicKey) -> Vec<u8> {
    let mut m = b"ibexdb-epoch-wrap/1".to_vec();
    m.extend_from_slice(&(repo.len() as u32).to_be_bytes());
    m.extend_from_slice(repo.as_bytes());
    m.extend_from_slice(&epoch.to_be_bytes());
    m.extend_from_slice(&from.0);
    m.extend_from_slice(&to.0);
    m
}

/// Wrap `key` from `me` to `to`: salt ‖ nonce ‖ AES-GCM(kek, key), `random` filling the salt
/// and the nonce.
pub fn wrap(
    me: &Identity,
    to: &PublicKey,
    info: &[u8],
    key: &[u8; KEY_LEN],
    random: &mut dyn FnMut(&mut [u8]),
) -> Result<Vec<u8>> {
    let mut head = [0u8; SALT_LEN + NONCE_LEN];
    random(&mut head);
    let kek = kek(me, to, &head[..SALT_LEN], info)?;
    let nonce: [u8; NONCE_LEN] = head[SALT_LEN..].try_into().unwrap();
    let mut out = head.to_vec();
    out.extend_from_slice(&seal(&kek, &nonce, info, key));
    Ok(out)
}

/// Unwrap what `from` wrapped to `me` ([`wrap`]): `DecryptError` `unwrap` when it does not open
/// (not wrapped to this key, or not by `from`), `malformed` when it has the wrong length.
pub fn unwrap(me: &Identity, from: &PublicKey, info: &[u8], w: &[u8]) -> Result<[u8; KEY_LEN]> {
    if w.len() != WRAPPED_LEN {
        return Err(derr(
            DecryptErrorKind::Malformed,
            format!("a wrapped key is {WRAPPED_LEN} bytes, not {}", w.len()),
        ));
    }
    let kek = kek(me, from, &w[..SALT_LEN], info)?;
    let nonce: [u8; NONCE_LEN] = w[SALT_LEN..SALT_LEN + NONCE_LEN].try_into().unwrap();
    let key = open(&kek, &nonce, info, &w[SALT_LEN + NONCE_LEN..]).ok_or_else(|| {
        derr(
            DecryptErrorKind::Unwrap,
            "the wrapped epoch key does not open with this identity",
        )
    })?;
    Ok(key.try_into().unwrap())
}

/// Room for the additional data of a sealed blob with a repository name of at most
/// `MAX_REPO_NAME` bytes (every name `Repo::open` accepts), on the stack: no allocation per
/// seal or open.
const AAD_ROOM: usize = 12 + 4 + crate::key::MAX_REPO_NAME + 49 + 8 + 4 + super::KID_LEN;

/// The additional data of a sealed blob, built in place (a longer name spills to the heap).
pub(super) struct Aad {
    buf: [u8; AAD_ROOM],
    len: usize,
    spill: Vec<u8>,
}

impl Aad {
    pub(super) fn new() -> Aad {
        Aad {
            buf: [0; AAD_ROOM],
            len: 0,
            spill: Vec::new(),
        }
    }

    pub(super) fn extend_from_slice(&mut self, b: &[u8]) {
        if self.spill.is_empty() && self.len + b.len() <= AAD_ROOM {
            self.buf[self.len..self.len + b.len()].copy_from_slice(b);
            self.len += b.len();
        } else {
            if self.spill.is_empty() {
                self.spill.extend_from_slice(&self.buf[..self.len]);
            }
            self.spill.extend_from_slice(b);
        }
    }
}

impl std::ops::Deref for Aad {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        if self.spill.is_empty() {
            &self.buf[..self.len]
        } else {
            &self.spill
        }
    }
}
