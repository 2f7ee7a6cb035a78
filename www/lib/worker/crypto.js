// Seal signatures with WebCrypto on sync's critical path and in verify(). The engine's P-384 in
// wasm costs about 2 ms to sign and 3–4 ms to verify a seal here; the browser's ECDSA P-384
// (SHA-384, signatures r ‖ s: the core's format) well under 1 ms. So sync:
//
// - seals local commits before a push with `sign`: the engine gives the message
//   (`sealRequest`), WebCrypto signs it with the repository's key (imported once as a JWK from
//   the identity secret and the uncompressed public point), the engine stores the seal
//   (`sealWith`; not re-checked: the server and every receiver verify it, and `verify()`
//   re-proves it);
// - verifies the seals of a received message with `verifyAll` (the engine lists them:
//   `syncSealChecks`); only when every one verifies does the engine receive it as vouched
//   (`syncHandle(bytes, true)`, skipping just those signature checks). Otherwise the engine
//   verifies itself and reports the error.
//
// `verify()` (./verify.js) checks every seal of the log with `verifyBeside`: on a helper thread
// (./verify-thread.js; Chromium runs WebCrypto's ECDSA on the calling thread) while the engine
// runs every other check here, or on this thread where no helper can start. The runtime's worker
// asks its page to start the helper and hand it a MessagePort (`askPage`, `helperPort`): a worker
// started inside a worker sometimes never starts in Firefox, and this thread would wait frozen.
// Without `askPage` (a worker whose page does not answer such asks) the helper is started from here;
// the benchmark's worker asks its page as the runtime's does (www/bench/page/engine-worker.js).
//
// Every other path (maintenance seals, exports, `receive`) keeps the engine's own crypto.
// Without WebCrypto (no `crypto.subtle`, e.g. an insecure context) `available()` is false and
// sync and verify() use the engine for everything.

import { toBase64url } from '../codec.js';

/** @typedef {import('../engine.js').EngineHandle} EngineHandle */
/** A seal's signature to check: `[authorKey (49 bytes, compressed), message, signature (96 bytes, r ‖ s)]`. @typedef {[Uint8Array, Uint8Array, Uint8Array]} SealCheck */

const ECDSA = { name: 'ECDSA', namedCurve: 'P-384' };
const SIGN = { name: 'ECDSA', hash: 'SHA-384' };
/** Imported verifying keys kept (authors seen by this worker); the cache is cleared past it. */
const MAX_KEYS = 1024;

/** @param {Uint8Array} b */
function hex(b) {
  let s = '';
  for (const x of b) s += x.toString(16).padStart(2, '0');
  return s;
}

/** The helper thread as this worker reaches it: a MessagePort from the page, or a Worker of its own. @typedef {MessagePort | Worker} Helper */

export class HostCrypto {
  /** @param {() => void} [askPage] ask the page for a port to a helper thread (answered by `helperPort`) */
  constructor(askPage) {
    this._askPage = askPage;
    /** @type {Promise<Helper | null> | null} the page's answer, while asked */
    this._portAnswer = null;
    /** @type {(helper: Helper | null) => void} resolves `_portAnswer` */
    this._awaitPort = () => {};
    /** @type {Map<string, Promise<CryptoKey>>} author (compressed, hex) -> its verifying key */
    this._verifying = new Map();
    /** @type {Map<string, Uint8Array>} author (compressed, hex) -> its uncompressed key (for the helper thread) */
    this._raw = new Map();
    /** @type {Helper | null | undefined} the helper thread (./verify-thread.js); null: none can run here */
    this._helper = undefined;
    /** @type {Map<number, (ok: boolean | null) => void>} requests to the helper thread awaiting its answer */
    this._asked = new Map();
    this._nextAsk = 0;
    /** @type {{secret: string, key: Promise<CryptoKey>} | null} the signing key and whose it is */
    this._signing = null;
  }

  /** Whether WebCrypto can do the work here. */
  static available() {
    return typeof crypto !== 'undefined' && !!crypto.subtle;
  }

  /**
   * The repository's signing key, imported once per identity.
   * @param {EngineHandle} engine
   * @returns {Promise<CryptoKey> | null} null in trusted mode
   */
  _signingKey(engine) {
    const tag = engine.publicKey;
    if (!tag) return null;
    if (this._signing?.secret !== tag) {
      const secret = engine.identitySecret();
      if (!secret) return null;
      const point = engine.uncompressedKey(hexBytes(tag));
      const jwk = { kty: 'EC', crv: 'P-384', d: toBase64url(secret), x: toBase64url(point.subarray(1, 49)), y: toBase64url(point.subarray(49, 97)), ext: false };
      secret.fill(0);
      const key = crypto.subtle.importKey('jwk', jwk, ECDSA, false, ['sign']);
      key.catch(() => {
        if (this._signing?.key === key) this._signing = null;
      });
      this._signing = { secret: tag, key };
    }
    return this._signing.key;
  }

  /**
   * @param {Promise<CryptoKey>} key
   * @param {Uint8Array} message
   * @returns {Promise<Uint8Array>}
   */
  async _sign(key, message) {
    return new Uint8Array(await crypto.subtle.sign(SIGN, await key, /** @type {Uint8Array<ArrayBuffer>} */ (message)));
  }

  /**
   * Seal the engine's unsealed local commits with a WebCrypto signature (no-op when nothing
   * waits for a seal). Returns false when it could not (trusted mode, WebCrypto failed): the
   * engine then seals by itself when it pushes.
   * @param {EngineHandle} engine
   * @returns {Promise<boolean>}
   */
  async seal(engine) {
    const req = engine.sealRequest();
    if (!req) return true;
    const key = this._signingKey(engine);
    if (!key) return false;
    const generation = engine.generation;
    let sig;
    try {
      sig = await this._sign(key, req.message);
    } catch {
      return false;
    }
    // The work chain is held while signing, but the engine may have been reopened (a panic).
    if (engine.generation !== generation || engine.dead) return false;
    const again = engine.sealRequest();
    if (!again || !sameBytes(again.message, req.message)) return false;
    engine.sealWith(req.count, sig);
    return true;
  }

  /**
   * Verify seal signatures (`EngineHandle.syncSealChecks`): true only if every one verifies.
   * @param {EngineHandle} engine
   * @param {SealCheck[]} checks
   * @returns {Promise<boolean>}
   */
  async verifyAll(engine, checks) {
    try {
      const results = await Promise.all(
        checks.map(async ([author, message, signature]) => {
          const key = await this._verifyingKey(engine, author);
          return crypto.subtle.verify(SIGN, key, /** @type {Uint8Array<ArrayBuffer>} */ (signature), /** @type {Uint8Array<ArrayBuffer>} */ (message));
        }),
      );
      return results.every(Boolean);
    } catch {
      return false;
    }
  }

  /**
   * Verify seal signatures on the helper thread (./verify-thread.js), starting now, so the
   * caller can run the engine meanwhile (WebCrypto's ECDSA runs on the calling thread).
   * Where no helper thread can run (or it failed), they are verified here instead. True only if
   * every one verifies; never rejects.
   * @param {EngineHandle} engine
   * @param {SealCheck[]} checks
   * @returns {Promise<boolean>}
   */
  verifyBeside(engine, checks) {
    const helper = this._helper;
    if (!helper) return this.verifyAll(engine, checks);
    let raw;
    try {
      raw = checks.map(([author, message, signature]) => [this._rawKey(engine, author), message, signature]);
    } catch {
      return Promise.resolve(false);
    }
    const id = ++this._nextAsk;
    /** @type {Promise<boolean | null>} */
    const answer = new Promise((resolve) => this._asked.set(id, resolve));
    helper.postMessage({ id, checks: raw });
    return answer.then((ok) => (ok === null ? this.verifyAll(engine, checks) : ok));
  }

  /**
   * The helper thread, started on first use (asked of the page, which answers with a port or
   * null); null where none can run. Await it before `verifyBeside`.
   * @returns {Promise<Helper | null>}
   */
  helperReady() {
    if (this._helper !== undefined) return Promise.resolve(this._helper);
    if (!this._askPage) return Promise.resolve(this._startHelper());
    if (!this._portAnswer) {
      this._portAnswer = new Promise((resolve) => (this._awaitPort = resolve));
      this._askPage();
    }
    return this._portAnswer;
  }

  /**
   * The page's answer to `askPage`: a port to the helper thread it started, or null.
   * @param {MessagePort | null} port
   */
  helperPort(port) {
    if (port) {
      port.onmessage = (ev) => this._answer(ev.data.id, ev.data.ok === true);
      port.onmessageerror = () => this.helperFailed();
    }
    this._helper = port;
    this._portAnswer = null;
    this._awaitPort(port);
  }

  /** The helper failed (its script did not load, or it broke): verify on this thread from now on. */
  helperFailed() {
    const helper = this._helper;
    if (helper instanceof MessagePort) helper.close();
    else helper?.terminate();
    this._helper = null;
    this._portAnswer = null;
    this._awaitPort(null);
    for (const id of [...this._asked.keys()]) this._answer(id, null);
  }

  /** @returns {Worker | null} a helper thread started from this worker; null where none can run */
  _startHelper() {
    this._helper = null;
    if (typeof Worker !== 'function') return null;
    try {
      const w = new Worker(new URL('./verify-thread.js', import.meta.url), { type: 'module', name: 'ibexdb:verify' });
      w.onmessage = (ev) => this._answer(ev.data.id, ev.data.ok === true);
      // Not loadable here (CSP, another origin) or broken: verify on this thread from now on.
      w.onerror = () => this.helperFailed();
      w.onmessageerror = () => this.helperFailed();
      this._helper = w;
    } catch {
      this._helper = null;
    }
    return /** @type {Worker | null} */ (this._helper);
  }

  /** @param {number} id @param {boolean | null} ok null: the helper failed */
  _answer(id, ok) {
    const resolve = this._asked.get(id);
    this._asked.delete(id);
    resolve?.(ok);
  }

  /**
   * The uncompressed form of an author's key (what the helper thread imports), cached.
   * @param {EngineHandle} engine @param {Uint8Array} author
   */
  _rawKey(engine, author) {
    const id = hex(author);
    let raw = this._raw.get(id);
    if (!raw) {
      if (this._raw.size >= MAX_KEYS) this._raw.clear();
      raw = engine.uncompressedKey(author);
      this._raw.set(id, raw);
    }
    return raw;
  }

  /**
   * @param {EngineHandle} engine
   * @param {Uint8Array} author a compressed public key
   * @returns {Promise<CryptoKey>}
   */
  _verifyingKey(engine, author) {
    const id = hex(author);
    let key = this._verifying.get(id);
    if (!key) {
      if (this._verifying.size >= MAX_KEYS) this._verifying.clear();
      const raw = engine.uncompressedKey(author);
      key = crypto.subtle.importKey('raw', /** @type {Uint8Array<ArrayBuffer>} */ (raw), ECDSA, false, ['verify']);
      key.catch(() => this._verifying.delete(id));
      this._verifying.set(id, key);
    }
    return key;
  }
}

/** @param {string} h */
function hexBytes(h) {
  const out = new Uint8Array(h.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(h.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/** @param {Uint8Array} a @param {Uint8Array} b */
function sameBytes(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
