// An identity wrapped under a passphrase (docs/design.md §11.5.2): what
// `db.exportIdentity({passphrase})` returns and `open(name, {identity, passphrase})` takes. The
// 48-byte secret is encrypted with AES-256-GCM under a key derived from the passphrase (NFC) with
// PBKDF2-SHA-256, via WebCrypto (the page's, or Node's `globalThis.crypto`):
//
//   WRAPPED_PREFIX + base64url (no padding) of 96 bytes:
//     0..4    PBKDF2 iterations, u32 big-endian (600,000 when made here; 600,000-10,000,000 accepted)
//     4..20   salt (random)
//     20..32  GCM nonce (random)
//     32..80  the secret, encrypted
//     80..96  GCM tag
//   additional data: the prefix's ASCII bytes, then bytes 0..32
//
// A wrong passphrase and a changed byte are the same to GCM: PassphraseError. Text that is not
// this shape (cut short, not base64url, iterations out of range) is an InvalidValueError.

import { describe, isPlainObject } from './args.js';
import { fromBase64url, toBase64url } from './codec.js';
import { InvalidValueError, PassphraseError } from './errors.js';
import { IDENTITY_PREFIX, formatIdentity, parseIdentity } from './identity-file.js';

/** A wrapped identity: this prefix + 128 base64url characters (96 bytes). */
export const WRAPPED_PREFIX = 'ibexdb-wrapped-identity-v1:';
/** PBKDF2-SHA-256 iterations of an export (OWASP's 2023 figure for PBKDF2-HMAC-SHA256). */
export const ITERATIONS = 600_000;
/** The most iterations an import accepts (so a forged blob cannot make it spin for minutes). */
const MAX_ITERATIONS = 10_000_000;
const HEADER = 32;
const BYTES = 96;
const CHARS = 128;

const enc = new TextEncoder();

/** Whether `text` claims to be a wrapped identity (its prefix). @param {unknown} text */
export const isWrapped = (text) => typeof text === 'string' && text.startsWith(WRAPPED_PREFIX);

/**
 * The passphrase of `exportIdentity({passphrase})` / `open(name, {passphrase})`: a non-empty
 * string (InvalidValueError naming `argument` otherwise).
 * @param {string} call e.g. 'exportIdentity(options)'
 * @param {string} argument e.g. 'options.passphrase'
 * @param {unknown} passphrase
 * @returns {string}
 */
export function checkPassphrase(call, argument, passphrase) {
  if (typeof passphrase !== 'string' || passphrase.length === 0) {
    throw new InvalidValueError(`${call}: ${argument} must be a non-empty string, got ${describe(passphrase)}`, { path: argument, argument });
  }
  return passphrase;
}

/**
 * `exportIdentity`'s options: absent, or `{passphrase}` (InvalidValueError otherwise).
 * @param {unknown} options
 * @returns {string | undefined} the passphrase
 */
export function exportPassphrase(options) {
  if (options === undefined) return undefined;
  const call = 'exportIdentity(options)';
  if (!isPlainObject(options)) throw new InvalidValueError(`${call}: options must be an object {passphrase} (or absent), got ${describe(options)}`, { path: 'options', argument: 'options' });
  for (const k of Object.keys(options)) {
    if (k !== 'passphrase') throw new InvalidValueError(`${call}: options.${k} is not an option (only passphrase is)`, { path: `options.${k}`, argument: `options.${k}` });
  }
  return checkPassphrase(call, 'options.passphrase', /** @type {any} */ (options).passphrase);
}

/** @param {string} passphrase @param {Uint8Array<ArrayBuffer>} salt @param {number} iterations */
async function deriveKey(passphrase, salt, iterations) {
  const base = await crypto.subtle.importKey('raw', enc.encode(passphrase.normalize('NFC')), 'PBKDF2', false, ['deriveKey']);
  return crypto.subtle.deriveKey({ name: 'PBKDF2', hash: 'SHA-256', salt, iterations }, base, { name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt']);
}

/** @param {Uint8Array} header */
function aad(header) {
  const prefix = enc.encode(WRAPPED_PREFIX);
  const out = new Uint8Array(prefix.length + header.length);
  out.set(prefix, 0);
  out.set(header, prefix.length);
  return out;
}

/**
 * Wrap an exported identity (`IDENTITY_PREFIX` + hex) under a passphrase.
 * @param {string} identity
 * @param {string} passphrase
 * @returns {Promise<string>}
 */
export async function wrapIdentity(identity, passphrase) {
  const secret = /** @type {Uint8Array<ArrayBuffer>} */ (parseIdentity(identity));
  const header = new Uint8Array(HEADER);
  new DataView(header.buffer).setUint32(0, ITERATIONS);
  crypto.getRandomValues(header.subarray(4));
  const salt = header.slice(4, 20);
  const iv = header.slice(20, 32);
  const key = await deriveKey(passphrase, salt, ITERATIONS);
  const ct = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv, additionalData: aad(header) }, key, secret));
  const all = new Uint8Array(BYTES);
  all.set(header, 0);
  all.set(ct, HEADER);
  return WRAPPED_PREFIX + toBase64url(all);
}

/**
 * Unwrap a wrapped identity with its passphrase: the exported identity (`IDENTITY_PREFIX` +
 * hex), for the worker. InvalidValueError (`options.identity`) for text that is not a whole
 * wrapped identity; PassphraseError for a wrong passphrase or changed bytes.
 * @param {string} wrapped
 * @param {string} passphrase
 * @returns {Promise<string>}
 */
export async function unwrapIdentity(wrapped, passphrase) {
  const body = wrapped.slice(WRAPPED_PREFIX.length).trim();
  const malformed = (/** @type {string} */ why) => new InvalidValueError(`options.identity is not a whole wrapped identity from exportIdentity({passphrase}) (${why}): "${WRAPPED_PREFIX}" + ${CHARS} base64url characters`, { path: 'options.identity', argument: 'options.identity' });
  if (!/^[A-Za-z0-9_-]*$/.test(body)) throw malformed('it holds characters base64url does not have');
  if (body.length !== CHARS) throw malformed(`it has ${body.length} characters after the prefix`);
  const all = fromBase64url(body);
  const iterations = new DataView(all.buffer).getUint32(0);
  if (iterations < ITERATIONS || iterations > MAX_ITERATIONS) throw malformed(`${iterations} PBKDF2 iterations, outside ${ITERATIONS}-${MAX_ITERATIONS}`);
  const header = all.slice(0, HEADER);
  const key = await deriveKey(passphrase, all.slice(4, 20), iterations);
  let secret;
  try {
    secret = new Uint8Array(await crypto.subtle.decrypt({ name: 'AES-GCM', iv: all.slice(20, 32), additionalData: aad(header) }, key, all.slice(HEADER)));
  } catch {
    throw new PassphraseError('the passphrase does not unlock this identity (a wrong passphrase, or the wrapped identity was changed); nothing was opened', { kind: 'wrong-passphrase' });
  }
  return formatIdentity(secret);
}

/**
 * `open()`'s identity, unwrapped when it is wrapped: InvalidValueError for a wrapped identity
 * without `passphrase`, or a `passphrase` with an identity that is not wrapped.
 * @param {{identity?: string, passphrase?: string}} options (types checked by checkOptions)
 * @returns {Promise<string | undefined>}
 */
export async function openIdentity(options) {
  const { identity, passphrase } = options;
  if (passphrase !== undefined) checkPassphrase('open(options)', 'options.passphrase', passphrase);
  if (isWrapped(identity)) {
    if (passphrase === undefined) throw new InvalidValueError('open(options): options.identity is wrapped under a passphrase: give it as options.passphrase', { path: 'options.passphrase', argument: 'options.passphrase' });
    return unwrapIdentity(/** @type {string} */ (identity), passphrase);
  }
  if (passphrase !== undefined) {
    throw new InvalidValueError(`open(options): options.passphrase goes with a wrapped identity (options.identity from exportIdentity({passphrase}), "${WRAPPED_PREFIX}…"); options.identity is ${identity === undefined ? 'absent' : `not one (${IDENTITY_PREFIX.slice(0, -1)}?)`}`, { path: 'options.passphrase', argument: 'options.passphrase' });
  }
  return identity;
}
