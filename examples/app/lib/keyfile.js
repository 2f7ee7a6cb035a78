// This device's key pair as a passphrase-protected code (and file), to carry an identity to
// another device. The secret is what `db.exportIdentity()` returns; it is encrypted with
// AES-256-GCM under a key derived from the passphrase with PBKDF2-SHA-256 (600,000 iterations,
// a random 16-byte salt), with a random 12-byte nonce. The code:
//
//   ibexkey1.<salt>.<iv>.<ciphertext+tag>      (base64url, no padding)
//
// The format tag is authenticated as additional data; a wrong passphrase (or a changed code)
// fails GCM's tag check, and nothing is learned about the secret.

const FORMAT = 'ibexkey1';
const ITERATIONS = 600_000;
const enc = new TextEncoder();

/** @param {Uint8Array} bytes */
const b64url = (bytes) => btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');

/** @param {string} text @returns {Uint8Array<ArrayBuffer>} */
function unb64url(text) {
  const s = atob(text.replace(/-/g, '+').replace(/_/g, '/'));
  return Uint8Array.from(s, (c) => c.charCodeAt(0));
}

/** @param {string} passphrase @param {Uint8Array<ArrayBuffer>} salt */
async function deriveKey(passphrase, salt) {
  const base = await crypto.subtle.importKey('raw', enc.encode(passphrase.normalize('NFC')), 'PBKDF2', false, ['deriveKey']);
  return crypto.subtle.deriveKey({ name: 'PBKDF2', hash: 'SHA-256', salt, iterations: ITERATIONS }, base, { name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt']);
}

export class KeyCodeError extends Error {
  name = 'KeyCodeError';
}

/** Characters of each base64url part of a whole code: salt (16 bytes), iv (12), ciphertext. */
const SALT_CHARS = 22;
const IV_CHARS = 16;
/** db.exportIdentity() is "ibexdb-identity-v1:" and 96 hex digits (115 bytes), + 16 bytes of GCM tag. */
const CIPHERTEXT_CHARS = Math.ceil(((19 + 96 + 16) * 4) / 3);
const B64URL = /^[A-Za-z0-9_-]*$/;
const CUT = 'Copy the whole code (or use the key file) and try again.';

/**
 * The three binary parts of a code, or a KeyCodeError that says what is wrong with it: not a
 * key code at all, cut short (a part missing or shorter than it is), or damaged.
 * @param {string} code
 * @returns {Uint8Array<ArrayBuffer>[]}
 */
function parseCode(code) {
  const text = code.replace(/\s+/g, '');
  if (!text.startsWith(`${FORMAT}.`)) {
    throw new KeyCodeError(text ? 'This is not a key code from this app (a key code starts with "ibexkey1.").' : 'Paste the key code, or choose the key file.');
  }
  const parts = text.split('.').slice(1);
  if (parts.some((p) => !B64URL.test(p)) || parts.length > 3) {
    throw new KeyCodeError(`The key code is damaged: it holds characters or parts a key code does not have. ${CUT}`);
  }
  const [salt = '', iv = '', ct = ''] = parts;
  if (parts.length < 3 || salt.length < SALT_CHARS || iv.length < IV_CHARS || ct.length < CIPHERTEXT_CHARS) {
    const have = text.length;
    const whole = FORMAT.length + 3 + SALT_CHARS + IV_CHARS + CIPHERTEXT_CHARS;
    throw new KeyCodeError(`The key code is cut short: it has ${have} of its ${whole} characters. ${CUT}`);
  }
  if (salt.length !== SALT_CHARS || iv.length !== IV_CHARS) throw new KeyCodeError(`The key code is damaged: a part has the wrong length. ${CUT}`);
  try {
    return [salt, iv, ct].map(unb64url);
  } catch {
    throw new KeyCodeError(`The key code is damaged (it is not valid base64url). ${CUT}`);
  }
}

/**
 * Encrypt an exported identity under a passphrase.
 * @param {string} identity from db.exportIdentity()
 * @param {string} passphrase
 * @returns {Promise<string>} the code
 */
export async function protectIdentity(identity, passphrase) {
  if (passphrase.length < 8) throw new KeyCodeError('Use a passphrase of at least 8 characters.');
  const salt = crypto.getRandomValues(new Uint8Array(16));
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const key = await deriveKey(passphrase, salt);
  const ct = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv, additionalData: enc.encode(FORMAT) }, key, enc.encode(identity)));
  return [FORMAT, b64url(salt), b64url(iv), b64url(ct)].join('.');
}

/**
 * Decrypt a code (or the text of a key file) with its passphrase.
 * @param {string} code
 * @param {string} passphrase
 * @returns {Promise<string>} the identity, for open(name, {identity})
 */
export async function unlockIdentity(code, passphrase) {
  const [salt, iv, ct] = parseCode(code);
  const key = await deriveKey(passphrase, salt);
  let plain;
  try {
    plain = await crypto.subtle.decrypt({ name: 'AES-GCM', iv, additionalData: enc.encode(FORMAT) }, key, ct);
  } catch {
    throw new KeyCodeError('Wrong passphrase: the key could not be unlocked. Check the passphrase (or that the code was copied whole) and try again.');
  }
  return new TextDecoder().decode(plain);
}
