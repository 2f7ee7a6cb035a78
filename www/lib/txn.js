// A transaction's writes, collected into its binary form (docs/design.md §3.3; decoded by
// src/txn_bytes.rs). Writing bytes here costs a fraction of JSON.stringify plus the engine's
// JSON parse: measured in Chromium on a 100,000-item load, the JSON text path spent ~145 ms
// before the engine saw an item (stringify, the UTF-8 copy, the serde parse).
//
// Values are checked as codec.js checks them for JSON (plain objects, arrays, strings, finite
// numbers, booleans, null, Sets of strings, bytes: a Uint8Array or an ArrayBuffer, copied in
// here as they are, no base64; `undefined` properties skipped; an object whose only key is
// "$set" holding an array is a Set, one whose only key is "$bytes" is refused). The fast path below does not track where it is in a
// value: when it meets something it cannot store it rewinds the op and lets codec.js's `check`
// walk the value again, which throws the InvalidValueError naming the path.

import { MAX_ITEM_BYTES, checkObject, isDetached } from './codec.js';
import { InvalidKeyError, InvalidValueError } from './errors.js';

/** The format's version: its first byte (src/txn_bytes.rs TXN_BYTES_VERSION). */
const VERSION = 1;
// Op kinds (§3.3; the commit format's op codes, §4.1, are other numbers). A Rust test
// (src/txn_bytes.rs) reads these constants and compares them with the decoder's.
const TXN_OP_PUT = 1;
const TXN_OP_UPDATE = 2;
const TXN_OP_DELETE = 3;
const TXN_OP_UNSET = 4;
const TXN_OP_SET_ADD = 5;
const TXN_OP_SET_REMOVE = 6;
// Value tags: the canonical value encoding's (§3.2).
const T_NULL = 0;
const T_FALSE = 1;
const T_TRUE = 2;
const T_NUMBER = 3;
const T_STRING = 4;
const T_LIST = 5;
const T_MAP = 6;
const T_SET = 7;
const T_BYTES = 8;
const MAX_DEPTH = 32;
const INITIAL_BYTES = 16 << 10;
/** A cleared builder keeps a buffer up to this size. */
const KEEP_BYTES = 1 << 20;
const objectProto = Object.prototype;
const UTF8 = new TextEncoder();
/** A surrogate not part of a pair (with the u flag, a pair is one code point and does not match). */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;
/** Thrown inside the fast path for a value it cannot store; never escapes this module. */
const UNSTORABLE = Symbol('unstorable');

/** Bytes a varint of `n` takes. @param {number} n */
function varintLen(n) {
  let len = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    len++;
  }
  return len;
}

/** Collects the ops of one transaction as bytes. */
export class TxnBuilder {
  constructor() {
    this._buf = new Uint8Array(INITIAL_BYTES);
    this._view = new DataView(this._buf.buffer);
    this._buf[0] = VERSION;
    this._pos = 1;
    this._ops = 0;
  }

  /** Replace the item at `key`. @param {string} key @param {object} value */
  put(key, value) {
    return this._withObject(TXN_OP_PUT, key, value);
  }
  /** Change some fields of an existing item. @param {string} key @param {object} fields */
  update(key, fields) {
    return this._withObject(TXN_OP_UPDATE, key, fields);
  }
  /** @param {string} key */
  delete(key) {
    return this._op(TXN_OP_DELETE, key, noBody, undefined);
  }
  /** @param {string} key @param {string} field */
  unset(key, field) {
    return this._op(TXN_OP_UNSET, key, this._str, fieldName(field, key));
  }
  /** @param {string} key @param {string} field @param {Iterable<string> | string} elems */
  setAdd(key, field, elems) {
    return this._setEdit(TXN_OP_SET_ADD, key, field, elems);
  }
  /** @param {string} key @param {string} field @param {Iterable<string> | string} elems */
  setRemove(key, field, elems) {
    return this._setEdit(TXN_OP_SET_REMOVE, key, field, elems);
  }
  /** How many ops were collected. */
  get size() {
    return this._ops;
  }
  /** How many bytes the transaction takes so far. */
  get byteLength() {
    return this._pos;
  }
  /** The transaction's bytes: a copy of exactly its length (its buffer can be transferred). */
  bytes() {
    return this._buf.slice(0, this._pos);
  }
  /** The transaction's bytes without a copy; valid until the next write to this builder. */
  view() {
    return this._buf.subarray(0, this._pos);
  }
  /** Forget the ops, to collect another transaction in the same buffer (kept up to 1 MiB). */
  clear() {
    if (this._buf.length > KEEP_BYTES) {
      this._buf = new Uint8Array(INITIAL_BYTES);
      this._view = new DataView(this._buf.buffer);
      this._buf[0] = VERSION;
    }
    this._pos = 1;
    this._ops = 0;
    return this;
  }

  // ----- writing ------------------------------------------------------------------------

  /** @param {number} op @param {string} key @param {unknown} value */
  _withObject(op, key, value) {
    try {
      return this._op(op, key, this._item, value);
    } catch (e) {
      if (e !== UNSTORABLE) throw e;
      checkObject(value, key); // throws the error that names the path
      // What check() lets through and this does not: the {$set: [...]} form holding a non-string.
      throw new InvalidValueError(`invalid value at ${key}: set elements must be strings`, { path: key });
    }
  }

  /** An item, or the fields of an update: a plain object. @param {unknown} value */
  _item(value) {
    if (!isPlainObject(value)) throw UNSTORABLE;
    this._map(/** @type {Record<string, unknown>} */ (value), 0);
  }

  /** @param {number} op @param {string} key @param {string} field @param {Iterable<string> | string | undefined} elems */
  _setEdit(op, key, field, elems) {
    const name = fieldName(field, key);
    const arr = typeof elems === 'string' ? [elems] : Array.from(elems ?? []);
    for (const e of arr) {
      if (typeof e !== 'string') throw new InvalidValueError(`invalid value at ${key}.${name}: set elements must be strings`, { path: `${key}.${name}` });
    }
    return this._op(op, key, this._setEditBody, { name, arr });
  }

  /** @param {{name: string, arr: string[]}} edit */
  _setEditBody({ name, arr }) {
    this._str(name);
    this._varint(arr.length);
    for (const e of arr) this._str(e);
  }

  /**
   * Write one op: its kind, its key, then `body.call(this, arg)`; nothing of it if any part
   * throws (a value that cannot be stored, a key with a lone surrogate), so the builder stays
   * usable. (A method and its argument, not a closure: no allocation per put.)
   * @template T
   * @param {number} op @param {unknown} key @param {(this: TxnBuilder, arg: T) => void} body @param {T} arg
   */
  _op(op, key, body, arg) {
    if (typeof key !== 'string') throw new InvalidKeyError(`a key must be a string like "collection/id", got ${typeof key}`);
    const start = this._pos;
    try {
      this._reserve(1);
      this._buf[this._pos++] = op;
      this._str(key);
      body.call(this, arg);
    } catch (e) {
      this._pos = start;
      throw e;
    }
    this._ops++;
    return this;
  }

  /** @param {unknown} v @param {number} depth */
  _value(v, depth) {
    switch (typeof v) {
      case 'string':
        this._reserve(1);
        this._buf[this._pos++] = T_STRING;
        this._str(v);
        return;
      case 'number':
        if (!Number.isFinite(v)) throw UNSTORABLE;
        this._reserve(9);
        this._buf[this._pos] = T_NUMBER;
        this._view.setFloat64(this._pos + 1, v, true);
        this._pos += 9;
        return;
      case 'boolean':
        this._reserve(1);
        this._buf[this._pos++] = v ? T_TRUE : T_FALSE;
        return;
      case 'object':
        if (v === null) {
          this._reserve(1);
          this._buf[this._pos++] = T_NULL;
        } else if (depth > MAX_DEPTH) {
          throw UNSTORABLE;
        } else if (Array.isArray(v)) {
          this._list(v, depth);
        } else if (v instanceof Set) {
          this._set(v, v.size);
        } else if (v instanceof Uint8Array || v instanceof ArrayBuffer) {
          this._bytes(v);
        } else if (isPlainObject(v)) {
          this._map(/** @type {Record<string, unknown>} */ (v), depth);
        } else {
          throw UNSTORABLE;
        }
        return;
      default:
        throw UNSTORABLE;
    }
  }

  /**
   * Bytes: `T_BYTES lp(bytes)`, copied in. What codec.js refuses (a detached buffer, a view of a
   * SharedArrayBuffer, more than an item may hold) is left to it, for the error naming the path.
   * @param {Uint8Array | ArrayBuffer} v
   */
  _bytes(v) {
    const buf = v instanceof Uint8Array ? v.buffer : v;
    if ((typeof SharedArrayBuffer !== 'undefined' && buf instanceof SharedArrayBuffer) || isDetached(buf)) throw UNSTORABLE;
    const b = v instanceof Uint8Array ? v : new Uint8Array(v);
    const n = b.length;
    if (n > MAX_ITEM_BYTES) throw UNSTORABLE;
    this._reserve(6 + n);
    this._buf[this._pos] = T_BYTES;
    this._pos = this._varintAt(this._pos + 1, n);
    this._buf.set(b, this._pos);
    this._pos += n;
  }

  /** @param {unknown[]} v @param {number} depth */
  _list(v, depth) {
    this._reserve(1);
    this._buf[this._pos++] = T_LIST;
    this._varint(v.length);
    for (let i = 0; i < v.length; i++) {
      const x = v[i];
      if (x === undefined) throw UNSTORABLE;
      this._value(x, depth + 1);
    }
  }

  /** A set value: a Set, or the array of a `{$set: [...]}` object. @param {Iterable<unknown>} elems @param {number} n */
  _set(elems, n) {
    this._reserve(1);
    this._buf[this._pos++] = T_SET;
    this._varint(n);
    for (const e of elems) {
      if (typeof e !== 'string') throw UNSTORABLE;
      this._str(e);
    }
  }

  /**
   * A map: its entry count is written after its entries (one byte reserved, widened in the
   * rare map of 128 fields or more).
   * @param {Record<string, unknown>} v @param {number} depth
   */
  _map(v, depth) {
    const lone = v.$set;
    if (Array.isArray(lone) && isLoneSet(v)) {
      this._set(lone, lone.length);
      return;
    }
    // The JSON form of bytes is reserved (codec.js names the path).
    if (v.$bytes !== undefined && isLoneBytes(v)) throw UNSTORABLE;
    this._reserve(2);
    this._buf[this._pos] = T_MAP;
    const countAt = this._pos + 1;
    this._pos += 2;
    let n = 0;
    for (const k in v) {
      const x = v[k];
      if (x === undefined) continue;
      this._str(k);
      this._value(x, depth + 1);
      n++;
    }
    if (n < 0x80) this._buf[countAt] = n;
    else this._widen(countAt, n);
  }

  /** Replace the one-byte count at `at` by the varint of `n`, moving what follows. @param {number} at @param {number} n */
  _widen(at, n) {
    const extra = varintLen(n) - 1;
    this._reserve(extra);
    this._buf.copyWithin(at + 1 + extra, at + 1, this._pos);
    this._pos += extra;
    this._varintAt(at, n);
  }

  /** `lp(utf8)`: ASCII under 128 characters (ids, field names, most values) byte by byte. @param {string} s */
  _str(s) {
    const n = s.length;
    if (n < 0x80) {
      const at = this._pos;
      if (at + 1 + n > this._buf.length) this._grow(1 + n);
      const buf = this._buf;
      let p = at + 1;
      let all = 0;
      for (let i = 0; i < n; i++) {
        const c = s.charCodeAt(i);
        all |= c;
        buf[p++] = c;
      }
      if (all < 0x80) {
        buf[at] = n;
        this._pos = p;
        return;
      }
    }
    this._strUtf8(s);
  }

  /** @param {string} s */
  _strUtf8(s) {
    if (LONE_SURROGATE.test(s)) throw new InvalidValueError('invalid value: a string holds a lone surrogate (not valid Unicode)', { path: '' });
    // Encoded after room for a 5-byte length, then moved down to follow the real length.
    this._reserve(5 + s.length * 3);
    const at = this._pos;
    const { written } = UTF8.encodeInto(s, this._buf.subarray(at + 5));
    const len = varintLen(written);
    if (len < 5) this._buf.copyWithin(at + len, at + 5, at + 5 + written);
    this._varintAt(at, written);
    this._pos = at + len + written;
  }

  /** @param {number} n */
  _varint(n) {
    this._reserve(5);
    this._pos = this._varintAt(this._pos, n);
  }

  /** Write the varint of `n` at `at`; returns the position after it. @param {number} at @param {number} n */
  _varintAt(at, n) {
    const buf = this._buf;
    while (n >= 0x80) {
      buf[at++] = (n & 0x7f) | 0x80;
      n = Math.floor(n / 128);
    }
    buf[at++] = n;
    return at;
  }

  /** Room for `n` more bytes. @param {number} n */
  _reserve(n) {
    if (this._pos + n > this._buf.length) this._grow(n);
  }

  /** @param {number} n */
  _grow(n) {
    const next = new Uint8Array(Math.max(this._buf.length * 2, this._pos + n));
    next.set(this._buf.subarray(0, this._pos));
    this._buf = next;
    this._view = new DataView(next.buffer);
  }
}

/**
 * The bytes of a one-op transaction (a put or an update holding bytes values, ibexdb.js). The
 * builder is dropped: its own buffer is returned, to be transferred (no copy of large bytes).
 * @param {(tx: TxnBuilder) => void} fn
 * @returns {Uint8Array<ArrayBuffer>}
 */
export function txnBytes(fn) {
  const tx = new TxnBuilder();
  fn(tx);
  return tx.view();
}

/** The body of an op that has none (a delete). */
function noBody() {}

/** @param {unknown} v */
function isPlainObject(v) {
  if (v === null || typeof v !== 'object' || Array.isArray(v) || v instanceof Set) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === objectProto || proto === null;
}

/** Whether `$set` is the only key of `v` with a value (the `{$set: [...]}` form of a Set). @param {Record<string, unknown>} v */
function isLoneSet(v) {
  for (const k in v) if (k !== '$set' && v[k] !== undefined) return false;
  return true;
}

/** Whether `$bytes` is the only key of `v` with a value. @param {Record<string, unknown>} v */
function isLoneBytes(v) {
  for (const k in v) if (k !== '$bytes' && v[k] !== undefined) return false;
  return true;
}

/** @param {unknown} field @param {string} key */
function fieldName(field, key) {
  if (typeof field !== 'string') throw new InvalidValueError(`invalid value at ${key}: a field name must be a string, got ${typeof field}`, { path: key });
  return field;
}
