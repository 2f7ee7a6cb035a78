// Argument checks at the public boundary: the page API (ibexdb.js) checks every argument of
// every method before anything is sent to the worker, and EngineHandle (engine.js) checks the
// ones it hands to the wasm engine, so the engine never sees an argument of the wrong type (a
// number where wasm-bindgen expects a string traps inside the engine).
//
// Only types and shapes are checked here; what a string must hold (a key's rules, a query's
// grammar) is the engine's to check, with the same error classes. Each error names the
// argument: its `argument` property is the parameter's name as the types declare it (`key`,
// `keys[2]`, `collection`, `query`, `where`, `fn`, `onChange`, `publicKey`, `role`,
// `options.quotaBytes`, ...), and its message starts with the method, e.g.
// `get(key): a key must be a string "collection/id", got a number (42)`.

import { InvalidKeyError, InvalidValueError, QueryError } from './errors.js';

const objectProto = Object.prototype;

/**
 * A short description of what was passed, for messages.
 * @param {unknown} v
 * @returns {string}
 */
export function describe(v) {
  if (v === null) return 'null';
  if (v === undefined) return 'undefined';
  if (Array.isArray(v)) return 'an array';
  switch (typeof v) {
    case 'string':
      return `a string (${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)})`;
    case 'number':
    case 'bigint':
    case 'boolean':
      return `a ${typeof v} (${String(v)})`;
    case 'function':
      return 'a function';
    case 'symbol':
      return 'a symbol';
    default: {
      const proto = Object.getPrototypeOf(v);
      if (proto === objectProto || proto === null) return 'an object';
      const name = /** @type {any} */ (v).constructor?.name;
      return name ? `a ${name}` : 'an object';
    }
  }
}

/** @param {unknown} v @returns {v is Record<string, unknown>} */
export function isPlainObject(v) {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === objectProto || proto === null;
}

/**
 * @param {string} method
 * @param {string} argument
 * @param {string} what
 * @param {unknown} got
 */
const message = (method, argument, what, got) => `${method}(${argument.split(/[.[]/)[0]}): ${argument} must be ${what}, got ${describe(got)}`;

/**
 * A key `collection/id` (its rules are the engine's: InvalidKeyError names the breach).
 * @param {string} method
 * @param {unknown} key
 * @param {string} [argument]
 * @returns {asserts key is string}
 */
export function argKey(method, key, argument = 'key') {
  if (typeof key !== 'string') {
    throw new InvalidKeyError(message(method, argument, 'a string "collection/id"', key), { key: describe(key), argument });
  }
}

/**
 * An array of keys.
 * @param {string} method
 * @param {unknown} keys
 * @returns {asserts keys is string[]}
 */
export function argKeys(method, keys) {
  if (!Array.isArray(keys)) throw new InvalidKeyError(message(method, 'keys', 'an array of keys', keys), { key: describe(keys), argument: 'keys' });
  for (let i = 0; i < keys.length; i++) argKey(method, keys[i], `keys[${i}]`);
}

/**
 * A collection name (its rules are the engine's).
 * @param {string} method
 * @param {unknown} collection
 * @returns {asserts collection is string}
 */
export function argCollection(method, collection) {
  if (typeof collection !== 'string') {
    throw new InvalidKeyError(message(method, 'collection', 'a collection name (a string)', collection), { key: describe(collection), argument: 'collection' });
  }
}

/**
 * A query object `{collection, where?, sort?, ...}` (its grammar is the engine's).
 * @param {string} method
 * @param {unknown} q
 * @param {string} [argument]
 * @returns {asserts q is Record<string, unknown>}
 */
export function argQuery(method, q, argument = 'query') {
  if (!isPlainObject(q)) throw new QueryError(message(method, argument, 'a query object {collection, where?, ...}', q), { argument });
  if (typeof q.collection !== 'string') {
    throw new QueryError(message(method, `${argument}.collection`, 'a collection name (a string)', q.collection), { argument: `${argument}.collection` });
  }
}

/**
 * A `where` clause, or undefined.
 * @param {string} method
 * @param {unknown} where
 */
export function argWhere(method, where) {
  if (where !== undefined && !isPlainObject(where)) throw new QueryError(message(method, 'where', 'a where object (or absent)', where), { argument: 'where' });
}

/**
 * A function (or undefined when `optional`).
 * @param {string} method
 * @param {unknown} fn
 * @param {string} argument
 * @param {boolean} [optional]
 */
export function argFunction(method, fn, argument, optional = false) {
  if (typeof fn === 'function' || (optional && fn === undefined)) return;
  throw new InvalidValueError(message(method, argument, optional ? 'a function (or absent)' : 'a function', fn), { path: argument, argument });
}

/**
 * A plain object.
 * @param {string} method
 * @param {unknown} v
 * @param {string} argument
 * @param {string} what what it must be, e.g. 'a schema object {fields?, indexes?, ...}'
 * @returns {asserts v is Record<string, unknown>}
 */
export function argObject(method, v, argument, what) {
  if (!isPlainObject(v)) throw new InvalidValueError(message(method, argument, what, v), { path: argument, argument });
}

/**
 * A boolean.
 * @param {string} method
 * @param {unknown} v
 * @param {string} argument
 * @returns {asserts v is boolean}
 */
export function argBoolean(method, v, argument) {
  if (typeof v !== 'boolean') throw new InvalidValueError(message(method, argument, 'a boolean', v), { path: argument, argument });
}

/**
 * A public key (another device's `db.publicKey`, 98 hex digits): whether it is one is the
 * engine's to check.
 * @param {string} method
 * @param {unknown} publicKey
 * @returns {asserts publicKey is string}
 */
export function argPublicKey(method, publicKey) {
  if (typeof publicKey !== 'string') {
    throw new InvalidKeyError(message(method, 'publicKey', "a public key (a string: another device's db.publicKey)", publicKey), {
      key: describe(publicKey),
      argument: 'publicKey',
    });
  }
}

/**
 * A string argument whose content the engine checks (a role, a field name).
 * @param {string} method
 * @param {unknown} v
 * @param {string} argument
 * @param {string} what
 * @returns {asserts v is string}
 */
export function argString(method, v, argument, what) {
  if (typeof v !== 'string') throw new InvalidValueError(message(method, argument, what, v), { path: argument, argument });
}
