// This device's key pair as a passphrase-protected code (and file), to carry an identity to
// another device. The code is the library's wrapped identity, `db.exportIdentity({passphrase})`
// (PBKDF2-SHA-256, 600,000 iterations, AES-256-GCM; docs/design.md §11.5.2):
//
//   ibexdb-wrapped-identity-v1:<128 base64url characters>
//
// and it is imported with `open(board, {identity: code, passphrase})`. This file reads a pasted
// code (or a key file) and says what is wrong with one that is cut short or not a key code.
//
// Codes this app exported before the library wrapped identities (`ibexkey1.<salt>.<iv>.<ct>`:
// the exported identity's text, encrypted the same way with the format tag as additional data)
// still import: unlockLegacy decrypts them here.

import { PassphraseError } from 'ibexdb';

export const WRAPPED = 'ibexdb-wrapped-identity-v1:';
const WRAPPED_CHARS = WRAPPED.length + 128;
const LEGACY = 'ibexkey1';
const ITERATIONS = 600_000;
const enc = new TextEncoder();
const B64URL = /^[A-Za-z0-9_-]*$/;
const CUT = 'Copy the whole code (or use the key file) and try again.';
export const WRONG_PASSPHRASE = 'Wrong passphrase: the key could not be unlocked. Check the passphrase (or that the code was copied whole) and try again.';

export class KeyCodeError extends Error {
  name = 'KeyCodeError';
}

/** @param {string} text @returns {Uint8Array<ArrayBuffer>} */
function unb64url(text) {
  const s = atob(text.replace(/-/g, '+').replace(/_/g, '/'));
  return Uint8Array.from(s, (c) => c.charCodeAt(0));
}

/** The passphrase rule of this app (the library takes any non-empty one). @param {string} passphrase */
export function checkNewPassphrase(passphrase) {
  if (passphrase.length < 8) throw new KeyCodeError('Use a passphrase of at least 8 characters.');
}

/**
 * A pasted code (or a key file's text), without whitespace, or a KeyCodeError that says what is
 * wrong with it: not a key code at all, cut short, or damaged.
 * @param {string} code
 * @returns {{wrapped: string} | {legacy: Uint8Array<ArrayBuffer>[]}}
 */
export function readCode(code) {
  const text = code.replace(/\s+/g, '');
  if (text.startsWith(`${LEGACY}.`)) return { legacy: parseLegacy(text) };
  if (text && WRAPPED.startsWith(text)) throw new KeyCodeError(`The key code is cut short: it has ${text.length} of its ${WRAPPED_CHARS} characters. ${CUT}`);
  if (!text.startsWith(WRAPPED)) {
    throw new KeyCodeError(text ? `This is not a key code from this app (a key code starts with "${WRAPPED}").` : 'Paste the key code, or choose the key file.');
  }
  if (!B64URL.test(text.slice(WRAPPED.length))) throw new KeyCodeError(`The key code is damaged: it holds characters a key code does not have. ${CUT}`);
  if (text.length < WRAPPED_CHARS) throw new KeyCodeError(`The key code is cut short: it has ${text.length} of its ${WRAPPED_CHARS} characters. ${CUT}`);
  if (text.length > WRAPPED_CHARS) throw new KeyCodeError(`The key code is damaged: it has ${text.length} characters, not ${WRAPPED_CHARS}. ${CUT}`);
  return { wrapped: text };
}

/**
 * The three binary parts of a legacy code (ibexkey1.), or a KeyCodeError.
 * @param {string} text
 */
function parseLegacy(text) {
  const SALT_CHARS = 22;
  const IV_CHARS = 16;
  // The exported identity's text ("ibexdb-identity-v1:" + 96 hex digits) + 16 bytes of GCM tag.
  const CT_CHARS = Math.ceil(((19 + 96 + 16) * 4) / 3);
  const parts = text.split('.').slice(1);
  if (parts.some((p) => !B64URL.test(p)) || parts.length > 3) {
    throw new KeyCodeError(`The key code is damaged: it holds characters or parts a key code does not have. ${CUT}`);
  }
  const [salt = '', iv = '', ct = ''] = parts;
  if (parts.length < 3 || salt.length < SALT_CHARS || iv.length < IV_CHARS || ct.length < CT_CHARS) {
    const whole = LEGACY.length + 3 + SALT_CHARS + IV_CHARS + CT_CHARS;
    throw new KeyCodeError(`The key code is cut short: it has ${text.length} of its ${whole} characters. ${CUT}`);
  }
  if (salt.length !== SALT_CHARS || iv.length !== IV_CHARS) throw new KeyCodeError(`The key code is damaged: a part has the wrong length. ${CUT}`);
  try {
    return [salt, iv, ct].map(unb64url);
  } catch {
    throw new KeyCodeError(`The key code is damaged (it is not valid base64url). ${CUT}`);
  }
}

/**
 * Decrypt a legacy code's parts with its passphrase.
 * @param {Uint8Array<ArrayBuffer>[]} parts from readCode
 * @param {string} passphrase
 * @returns {Promise<string>} the identity in the clear, for open(name, {identity})
 */
export async function unlockLegacy([salt, iv, ct], passphrase) {
  const base = await crypto.subtle.importKey('raw', enc.encode(passphrase.normalize('NFC')), 'PBKDF2', false, ['deriveKey']);
  const key = await crypto.subtle.deriveKey({ name: 'PBKDF2', hash: 'SHA-256', salt, iterations: ITERATIONS }, base, { name: 'AES-GCM', length: 256 }, false, ['decrypt']);
  try {
    return new TextDecoder().decode(await crypto.subtle.decrypt({ name: 'AES-GCM', iv, additionalData: enc.encode(LEGACY) }, key, ct));
  } catch {
    throw new PassphraseError(WRONG_PASSPHRASE, { kind: 'wrong-passphrase' });
  }
}
