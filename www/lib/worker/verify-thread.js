// A helper worker that verifies seal signatures with WebCrypto on a thread of its own, for
// verify() (./verify.js through ./crypto.js), started by the page (ibexdb.js, loader.js). Chromium runs WebCrypto's ECDSA on the calling
// thread (~0.4–0.7 ms per P-384 verification), so verifying 500 seals in the database worker
// would add to the engine's replay instead of running beside it.
//
// Message in:  {id, checks: [[rawKey (97 bytes, 04 ‖ x ‖ y), message, signature (96 bytes, r ‖ s)], ...]}
// Message out: {id, ok} — ok only if every signature verifies (ECDSA P-384, SHA-384).

const ECDSA = { name: 'ECDSA', namedCurve: 'P-384' };
const SIGN = { name: 'ECDSA', hash: 'SHA-384' };
/** Imported keys kept; the cache is cleared past it. */
const MAX_KEYS = 1024;

/** @type {Map<string, Promise<CryptoKey>>} raw key (as text) -> its verifying key */
const keys = new Map();

/** @param {Uint8Array<ArrayBuffer>} raw */
function verifyingKey(raw) {
  const id = String.fromCharCode(...raw);
  let key = keys.get(id);
  if (!key) {
    if (keys.size >= MAX_KEYS) keys.clear();
    key = crypto.subtle.importKey('raw', raw, ECDSA, false, ['verify']);
    key.catch(() => keys.delete(id));
    keys.set(id, key);
  }
  return key;
}

/**
 * @param {[Uint8Array<ArrayBuffer>, Uint8Array<ArrayBuffer>, Uint8Array<ArrayBuffer>][]} checks
 * @returns {Promise<boolean>}
 */
async function verifyAll(checks) {
  try {
    const results = await Promise.all(checks.map(async ([raw, message, signature]) => crypto.subtle.verify(SIGN, await verifyingKey(raw), signature, message)));
    return results.every(Boolean);
  } catch {
    return false;
  }
}

/** @param {{id: number, checks: any}} ask @param {{postMessage: (m: unknown) => void}} to */
async function answer({ id, checks }, to) {
  to.postMessage({ id, ok: await verifyAll(checks) });
}

// Started by the page (ibexdb.js), it gets `{port}`: the database worker's requests come through
// that port. Started by a worker (the benchmark's), the requests come to this worker itself.
self.onmessage = (ev) => {
  const port = ev.data?.port;
  if (port instanceof MessagePort) port.onmessage = (e) => void answer(e.data, port);
  else void answer(ev.data, self);
};
