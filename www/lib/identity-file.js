// The repository's identity file in OPFS (`identity`, docs/design.md §11.5): the 48-byte P-384
// secret that signs its commits, then its 49-byte compressed public key, so that an open need
// not derive it (a scalar multiplication, ~3 ms in wasm; the engine checks the two agree before
// its first write). A file of the secret alone (before 2026-11-25), a new identity, or one given
// in `options.identity` is written back with both. Exported identities (`exportIdentity()`, the
// `identity` option) are IDENTITY_PREFIX + 96 hex digits of the secret.

import { InvalidValueError } from './errors.js';

/** An exported identity: this prefix + 96 hex digits (the 48-byte secret). */
export const IDENTITY_PREFIX = 'ibexdb-identity-v1:';

const SECRET_BYTES = 48;
const PUBLIC_BYTES = 49;

/**
 * Read (or make, or replace) the identity in the file.
 * @param {any} idh the file's sync access handle
 * @param {string | undefined} given an exported identity (`options.identity`)
 * @param {import('./wasm-instance.js').Glue} glue the wasm glue (`Engine.newIdentity`, `Engine.publicKeyOf`)
 * @returns {{secret: Uint8Array, publicKey: Uint8Array}}
 */
export function identityFile(idh, given, glue) {
  const size = idh.getSize();
  /** @type {Uint8Array | null} */
  let stored = null;
  /** @type {Uint8Array | null} */
  let storedPublic = null;
  if (size === SECRET_BYTES || size === SECRET_BYTES + PUBLIC_BYTES) {
    stored = new Uint8Array(SECRET_BYTES);
    idh.read(stored, { at: 0 });
    if (size === SECRET_BYTES + PUBLIC_BYTES) {
      storedPublic = new Uint8Array(PUBLIC_BYTES);
      idh.read(storedPublic, { at: SECRET_BYTES });
    }
  }
  /** @type {Uint8Array} */
  let secret;
  /** @type {Uint8Array | null} */
  let publicKey = null;
  if (given !== undefined) secret = parseIdentity(given);
  else if (stored) secret = stored;
  else {
    // A new identity, self-tested in the core before it is stored (its public key derived twice
    // by two computations, decompressed, a test signature verified: docs/design.md §11.5).
    const both = glue.Engine.newIdentity(crypto.getRandomValues(new Uint8Array(SECRET_BYTES)));
    secret = both.slice(0, SECRET_BYTES);
    publicKey = both.slice(SECRET_BYTES);
  }
  const same = stored !== null && stored.every((b, i) => b === secret[i]);
  if (same && storedPublic) return { secret, publicKey: storedPublic };
  // Derives the public key, self-tested; throws SignatureError for a secret out of range (or one
  // whose derivations keep disagreeing).
  publicKey ??= fromHex(glue.Engine.publicKeyOf(secret));
  // Overwrite in place, then trim: never a moment where the file lacks the secret, so a crash
  // here cannot make the next open mint a new identity.
  const both = new Uint8Array(SECRET_BYTES + PUBLIC_BYTES);
  both.set(secret, 0);
  both.set(publicKey, SECRET_BYTES);
  idh.write(both, { at: 0 });
  idh.truncate(both.length);
  idh.flush();
  return { secret, publicKey };
}

/** @param {string} hex @returns {Uint8Array} */
function fromHex(hex) {
  const out = new Uint8Array(hex.length >> 1);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/**
 * The secret of an exported identity (InvalidValueError naming `options.identity` otherwise).
 * @param {unknown} text
 * @returns {Uint8Array}
 */
export function parseIdentity(text) {
  if (typeof text !== 'string' || !text.startsWith(IDENTITY_PREFIX) || !/^[0-9a-f]{96}$/i.test(text.slice(IDENTITY_PREFIX.length))) {
    throw new InvalidValueError(`options.identity must be a string from exportIdentity() ("${IDENTITY_PREFIX}" + 96 hex digits)`, { path: 'options.identity', argument: 'options.identity' });
  }
  return fromHex(text.slice(IDENTITY_PREFIX.length));
}

/** The exported form of a secret. @param {Uint8Array} secret */
export function formatIdentity(secret) {
  return IDENTITY_PREFIX + Array.from(secret, (b) => b.toString(16).padStart(2, '0')).join('');
}
