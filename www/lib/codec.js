// Values between JS and the engine travel as JSON text, with a JS `Set` (of strings) written
// as `{"$set": [...]}` — the core's JSON form of its set type. (A transaction's writes travel
// as bytes instead: txn.js, which checks values with `checkObject` here.)
//
// Why JSON text: measured in Chromium on the benchmark's item shape, JSON.stringify on the page
// plus a one-pass serde parse in wasm beats walking the JS object from Rust with js_sys (every
// property read crosses the boundary), and a string is the cheapest thing to postMessage.
//
// `encode` validates first (JSON.stringify would silently turn NaN into null, drop a Map's
// contents, or turn a Date into a string): only plain objects, arrays, strings, finite numbers,
// booleans, null, Sets of strings and bytes are accepted. `undefined` object properties are
// skipped, as in JSON. The object form `{"$set": [...]}` (a lone "$set" key holding an array) is
// reserved: it reads back as a Set; so is a lone "$bytes" key (refused).
//
// Bytes (docs/design.md §2.2): a `Uint8Array` (a Node `Buffer` is one) or an `ArrayBuffer`;
// they read back as `Uint8Array`. Other views (`Int16Array`, `DataView`, ...) are refused
// rather than read back as another type: pass `new Uint8Array(v.buffer, v.byteOffset,
// v.byteLength)`. Neither detached buffers nor views of a SharedArrayBuffer (another thread may
// change it while it is copied) are accepted. Item writes holding bytes go as a transaction's
// bytes (txn.js: `encodeObject` says so by returning undefined); results carry them beside the
// text (`EngineText`: `{"$bytes": i}` in the JSON, `bytes[i]` the Uint8Array, transferred
// from the worker; a string of 16 KiB or more of UTF-8 crosses the same way, as
// `{"$bytes": -1 - i}` and its UTF-8, decoded here without a JSON parse of it). Only where a value is a query operand or a schema default, which are JSON
// text, are bytes written as base64 (`{"$bytes": "<base64>"}`, the core's JSON form): those
// are short.

import { InvalidValueError, TooLargeError } from './errors.js';

const MAX_DEPTH = 32;
const utf8 = new TextDecoder();
/** The largest item (src/value/mod.rs MAX_ITEM_BYTES): bytes longer than this cannot be stored. */
export const MAX_ITEM_BYTES = 16 << 20;
const objectProto = Object.prototype;
/** `check` found a Set. */
const HAS_SET = 1;
/** `check` found bytes. */
const HAS_BYTES = 2;

/**
 * A result from the engine: JSON text, or JSON text whose `{"$bytes": i}` objects stand for
 * `bytes[i]` (what the engine took out of wasm memory for it; the worker transfers them).
 * @typedef {string | {json: string, bytes: Uint8Array[]}} EngineText
 */

/**
 * The bytes of a value that can be stored as bytes, or null when `v` is not bytes; throws the
 * InvalidValueError (or TooLargeError) for bytes that cannot be.
 * @param {object} v
 * @param {string} path
 * @returns {Uint8Array | null}
 */
export function bytesOf(v, path) {
  /** @type {ArrayBufferLike} */
  let buf;
  if (v instanceof Uint8Array) buf = v.buffer;
  else if (v instanceof ArrayBuffer) buf = v;
  else if (ArrayBuffer.isView(v)) {
    const what = /** @type {any} */ (v).constructor?.name ?? 'view';
    throw new InvalidValueError(`invalid value at ${path}: a ${what} cannot be stored (bytes are a Uint8Array or an ArrayBuffer: pass new Uint8Array(v.buffer, v.byteOffset, v.byteLength))`, { path });
  } else if (typeof SharedArrayBuffer !== 'undefined' && v instanceof SharedArrayBuffer) {
    buf = v;
  } else return null;
  if (typeof SharedArrayBuffer !== 'undefined' && buf instanceof SharedArrayBuffer) {
    throw new InvalidValueError(`invalid value at ${path}: bytes in a SharedArrayBuffer cannot be stored (another thread may change them while they are copied): copy them first, new Uint8Array(v)`, { path });
  }
  if (isDetached(buf)) {
    throw new InvalidValueError(`invalid value at ${path}: the bytes' ArrayBuffer is detached (it was transferred)`, { path });
  }
  const bytes = v instanceof Uint8Array ? v : new Uint8Array(/** @type {ArrayBuffer} */ (v));
  if (bytes.length > MAX_ITEM_BYTES) {
    throw new TooLargeError(`invalid value at ${path}: ${bytes.length} bytes, more than an item may hold (${MAX_ITEM_BYTES})`, { path, size: bytes.length, limit: MAX_ITEM_BYTES });
  }
  return bytes;
}

/** Whether `v` is an object whose only key (with a value) is `$bytes` (a reserved form). @param {object} v */
function isLoneBytes(v) {
  if (!Object.hasOwn(v, '$bytes')) return false;
  for (const k in v) if (k !== '$bytes' && /** @type {any} */ (v)[k] !== undefined) return false;
  return true;
}

/**
 * Check `v` and report whether it holds a Set (HAS_SET: a replacer is needed) or bytes
 * (HAS_BYTES) somewhere.
 * @param {unknown} v
 * @param {string} path
 * @param {number} depth
 * @returns {number}
 */
function check(v, path, depth) {
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return 0;
    case 'number':
      if (!Number.isFinite(v)) throw new InvalidValueError(`invalid value at ${path}: numbers must be finite, got ${v}`, { path });
      return 0;
    case 'object': {
      if (v === null) return 0;
      if (depth > MAX_DEPTH) throw new InvalidValueError(`invalid value at ${path}: nesting deeper than ${MAX_DEPTH} (or a cycle)`, { path });
      if (Array.isArray(v)) {
        let found = 0;
        for (let i = 0; i < v.length; i++) {
          const x = v[i];
          if (x === undefined) throw new InvalidValueError(`invalid value at ${path}[${i}]: undefined in an array`, { path: `${path}[${i}]` });
          found |= check(x, `${path}[${i}]`, depth + 1);
        }
        return found;
      }
      if (v instanceof Set) {
        for (const e of v) {
          if (typeof e !== 'string') throw new InvalidValueError(`invalid value at ${path}: set elements must be strings, got ${describeElement(e)}`, { path });
        }
        return HAS_SET;
      }
      const proto = Object.getPrototypeOf(v);
      if (proto !== objectProto && proto !== null) {
        if (bytesOf(v, path)) return HAS_BYTES;
        const what = /** @type {any} */ (v).constructor?.name ?? 'object';
        throw new InvalidValueError(`invalid value at ${path}: a ${what} cannot be stored (use plain objects, arrays, Sets of strings and Uint8Arrays)`, { path });
      }
      if (isLoneBytes(v)) {
        throw new InvalidValueError(`invalid value at ${path || 'top level'}: an object whose only key is "$bytes" is reserved (it is how bytes are written): store bytes as a Uint8Array`, { path });
      }
      let found = 0;
      for (const k in v) {
        const x = /** @type {any} */ (v)[k];
        if (x === undefined) continue;
        found |= check(x, path ? `${path}.${k}` : k, depth + 1);
      }
      return found;
    }
    default:
      throw new InvalidValueError(`invalid value at ${path}: a ${typeof v} cannot be stored`, { path });
  }
}

/** What a set element that is not a string is, for messages. @param {unknown} e */
function describeElement(e) {
  if (e !== null && typeof e === 'object' && (e instanceof ArrayBuffer || ArrayBuffer.isView(e))) return 'bytes (sets hold strings only)';
  return typeof e;
}

/** @param {string} _k @param {unknown} x */
function setReplacer(_k, x) {
  return x instanceof Set ? { $set: Array.from(x) } : x;
}

/** @param {string} k @param {unknown} x */
function bytesReplacer(k, x) {
  if (x instanceof Set) return { $set: Array.from(x) };
  if (x instanceof Uint8Array || x instanceof ArrayBuffer) {
    if (isDetached(x instanceof Uint8Array ? x.buffer : x)) {
      throw new InvalidValueError(`invalid value at ${k || 'the argument'}: the bytes' ArrayBuffer is detached (it was transferred)`, { path: k });
    }
    return { $bytes: toBase64(x instanceof Uint8Array ? x : new Uint8Array(x)) };
  }
  return x;
}

/**
 * Whether `buf` was transferred: `ArrayBuffer.prototype.detached` where the engine has it
 * (Chromium 114+, Node 22+), else whether a view on it can be made (Node 20 has no `detached`;
 * a Uint8Array on a detached buffer reads as empty, and would be stored as no bytes).
 * @param {ArrayBufferLike} buf
 */
export function isDetached(buf) {
  const d = /** @type {any} */ (buf).detached;
  if (typeof d === 'boolean') return d;
  try {
    new Uint8Array(buf, 0, 0);
    return false;
  } catch {
    return true;
  }
}

/** Standard base64 of `b` (query operands and schema defaults only). @param {Uint8Array} b */
export function toBase64(b) {
  let s = '';
  for (let i = 0; i < b.length; i += 0x8000) s += String.fromCharCode.apply(null, /** @type {any} */ (b.subarray(i, i + 0x8000)));
  return btoa(s);
}

/** URL-safe base64 of `b` without padding (invite links, wrapped identities, JWK fields). @param {Uint8Array} b */
export function toBase64url(b) {
  return toBase64(b).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/**
 * The bytes of URL-safe base64 `text` (padding optional); throws atob's error on a character
 * outside the alphabet.
 * @param {string} text @returns {Uint8Array<ArrayBuffer>}
 */
export function fromBase64url(text) {
  return Uint8Array.from(atob(text.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
}

/**
 * Encode a value as JSON text for the engine.
 * @param {unknown} v
 * @param {string} [path] where the value is (for error messages)
 * @returns {string}
 */
export function encode(v, path = '') {
  if (v === undefined) throw new InvalidValueError(`invalid value at ${path || 'top level'}: undefined`, { path });
  const found = check(v, path, 0);
  if (found & HAS_BYTES) return JSON.stringify(v, bytesReplacer);
  return found ? JSON.stringify(v, setReplacer) : JSON.stringify(v);
}

/**
 * Check an object (an item, or fields to update): InvalidValueError naming the path of the
 * first thing in it that cannot be stored.
 * @param {unknown} v
 * @param {string} what
 */
export function checkObject(v, what) {
  checkItemShape(v, what);
  check(v, '', 0);
}

/** @param {unknown} v @param {string} what */
function checkItemShape(v, what) {
  if (v === null || typeof v !== 'object' || Array.isArray(v) || v instanceof Set) {
    throw new InvalidValueError(`invalid value at ${what}: an item must be a plain object`, { path: what });
  }
}

/**
 * Encode an object (an item, or fields to update) as JSON text; undefined when it holds bytes
 * (then the caller writes it with a TxnBuilder: bytes travel as bytes).
 * @param {unknown} v
 * @param {string} what
 * @returns {string | undefined}
 */
export function encodeObject(v, what) {
  checkItemShape(v, what);
  const found = check(v, '', 0);
  if (found & HAS_BYTES) return undefined;
  return found ? JSON.stringify(v, setReplacer) : JSON.stringify(v);
}

/**
 * Turn `{"$set": [...]}` objects back into Sets, `{"$bytes": i}` into `bytes[i]`, and
 * `{"$bytes": -1 - i}` into the string whose UTF-8 is `bytes[i]`, in place where possible.
 * @param {any} v
 * @param {Uint8Array[]} [bytes]
 * @returns {any}
 */
export function revive(v, bytes) {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const x = v[i];
      if (x !== null && typeof x === 'object') v[i] = revive(x, bytes);
    }
    return v;
  }
  let n = 0;
  for (const k in v) {
    n++;
    const x = v[k];
    if (x !== null && typeof x === 'object') v[k] = revive(x, bytes);
  }
  if (n === 1) {
    if (Array.isArray(v.$set)) return new Set(v.$set);
    if (bytes && typeof v.$bytes === 'number') {
      const i = v.$bytes;
      // A long string crossed as its UTF-8 (src/value/json.rs `TEXT_SINK_MIN`): -1 - index.
      return i >= 0 ? bytes[i] : utf8.decode(bytes[-1 - i]);
    }
  }
  return v;
}

/**
 * Decode a result from the engine (undefined stays undefined).
 * @param {EngineText | undefined | null} text
 * @returns {any}
 */
export function decode(text) {
  if (text === undefined || text === null) return undefined;
  if (typeof text !== 'string') return revive(JSON.parse(text.json), text.bytes);
  const v = JSON.parse(text);
  return text.includes('"$set"') ? revive(v) : v;
}

/**
 * The ArrayBuffers of the bytes in the engine results of `msg` (a message the worker posts:
 * results, live changes and resets), to transfer with it. A walk of its arrays and objects,
 * a few levels deep; texts are not read.
 * @param {unknown} msg
 * @returns {ArrayBuffer[]}
 */
export function transferables(msg) {
  /** @type {Set<ArrayBuffer>} */
  const out = new Set();
  walkTransferables(msg, out, 0);
  return out.size === 0 ? [] : [...out];
}

/** @param {unknown} v @param {Set<ArrayBuffer>} out @param {number} depth */
function walkTransferables(v, out, depth) {
  if (v === null || typeof v !== 'object' || depth > 5) return;
  if (Array.isArray(v)) {
    for (const x of v) if (x !== null && typeof x === 'object') walkTransferables(x, out, depth + 1);
    return;
  }
  const m = /** @type {any} */ (v);
  if (typeof m.json === 'string' && Array.isArray(m.bytes)) {
    for (const b of m.bytes) if (b instanceof Uint8Array && b.buffer instanceof ArrayBuffer) out.add(b.buffer);
    return;
  }
  if (Object.getPrototypeOf(m) !== objectProto) return;
  for (const k in m) {
    const x = m[k];
    if (x !== null && typeof x === 'object') walkTransferables(x, out, depth + 1);
  }
}

/**
 * Decode `[[id, value], ...]` into `[{id, value}, ...]`.
 * @param {EngineText} text
 * @returns {{id: string, value: any}[]}
 */
export function decodeRows(text) {
  const raw = decode(text);
  const out = new Array(raw.length);
  for (let i = 0; i < raw.length; i++) out[i] = { id: raw[i][0], value: raw[i][1] };
  return out;
}

/**
 * Decode a page: `{"rows": [[id, value], ...], "cursor": text | null}` -> `{rows, cursor}`.
 * @param {string} text
 * @returns {{rows: {id: string, value: any}[], cursor: string | null}}
 */
export function decodePage(text) {
  const raw = decode(text);
  const rows = new Array(raw.rows.length);
  for (let i = 0; i < raw.rows.length; i++) rows[i] = { id: raw.rows[i][0], value: raw.rows[i][1] };
  return { rows, cursor: raw.cursor ?? null };
}

/**
 * Decode a list of values where null means missing (getMany).
 * @param {EngineText} text
 * @returns {any[]}
 */
export function decodeMany(text) {
  const raw = decode(text);
  for (let i = 0; i < raw.length; i++) if (raw[i] === null) raw[i] = undefined;
  return raw;
}
