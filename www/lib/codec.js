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
// booleans, null and Sets of strings are accepted. `undefined` object properties are skipped,
// as in JSON. The object form `{"$set": [...]}` (a lone "$set" key holding an array) is
// reserved: it reads back as a Set.

import { InvalidValueError } from './errors.js';

const MAX_DEPTH = 32;
const objectProto = Object.prototype;

/**
 * Check `v` and report whether it holds a Set somewhere (so a replacer is needed).
 * @param {unknown} v
 * @param {string} path
 * @param {number} depth
 * @returns {boolean}
 */
function check(v, path, depth) {
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return false;
    case 'number':
      if (!Number.isFinite(v)) throw new InvalidValueError(`invalid value at ${path}: numbers must be finite, got ${v}`, { path });
      return false;
    case 'object': {
      if (v === null) return false;
      if (depth > MAX_DEPTH) throw new InvalidValueError(`invalid value at ${path}: nesting deeper than ${MAX_DEPTH} (or a cycle)`, { path });
      if (Array.isArray(v)) {
        let sets = false;
        for (let i = 0; i < v.length; i++) {
          const x = v[i];
          if (x === undefined) throw new InvalidValueError(`invalid value at ${path}[${i}]: undefined in an array`, { path: `${path}[${i}]` });
          if (check(x, `${path}[${i}]`, depth + 1)) sets = true;
        }
        return sets;
      }
      if (v instanceof Set) {
        for (const e of v) {
          if (typeof e !== 'string') throw new InvalidValueError(`invalid value at ${path}: set elements must be strings, got ${typeof e}`, { path });
        }
        return true;
      }
      const proto = Object.getPrototypeOf(v);
      if (proto !== objectProto && proto !== null) {
        const what = /** @type {any} */ (v).constructor?.name ?? 'object';
        throw new InvalidValueError(`invalid value at ${path}: a ${what} cannot be stored (use plain objects, arrays and Sets of strings)`, { path });
      }
      let sets = false;
      for (const k in v) {
        const x = /** @type {any} */ (v)[k];
        if (x === undefined) continue;
        if (check(x, path ? `${path}.${k}` : k, depth + 1)) sets = true;
      }
      return sets;
    }
    default:
      throw new InvalidValueError(`invalid value at ${path}: a ${typeof v} cannot be stored`, { path });
  }
}

/** @param {string} _k @param {unknown} x */
function setReplacer(_k, x) {
  return x instanceof Set ? { $set: Array.from(x) } : x;
}

/**
 * Encode a value as JSON text for the engine.
 * @param {unknown} v
 * @param {string} [path] where the value is (for error messages)
 * @returns {string}
 */
export function encode(v, path = '') {
  if (v === undefined) throw new InvalidValueError(`invalid value at ${path || 'top level'}: undefined`, { path });
  return check(v, path, 0) ? JSON.stringify(v, setReplacer) : JSON.stringify(v);
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
 * Encode an object (an item, or fields to update).
 * @param {unknown} v
 * @param {string} what
 */
export function encodeObject(v, what) {
  checkItemShape(v, what);
  return encode(v, '');
}

/**
 * Turn `{"$set": [...]}` objects back into Sets, in place where possible.
 * @param {any} v
 * @returns {any}
 */
export function revive(v) {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const x = v[i];
      if (x !== null && typeof x === 'object') v[i] = revive(x);
    }
    return v;
  }
  let n = 0;
  for (const k in v) {
    n++;
    const x = v[k];
    if (x !== null && typeof x === 'object') v[k] = revive(x);
  }
  if (n === 1 && Array.isArray(v.$set)) return new Set(v.$set);
  return v;
}

/**
 * Decode JSON text from the engine (undefined stays undefined).
 * @param {string | undefined | null} text
 * @returns {any}
 */
export function decode(text) {
  if (text === undefined || text === null) return undefined;
  const v = JSON.parse(text);
  return text.includes('"$set"') ? revive(v) : v;
}

/**
 * Decode `[[id, value], ...]` into `[{id, value}, ...]`.
 * @param {string} text
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
 * @param {string} text
 * @returns {any[]}
 */
export function decodeMany(text) {
  const raw = decode(text);
  for (let i = 0; i < raw.length; i++) if (raw[i] === null) raw[i] = undefined;
  return raw;
}
