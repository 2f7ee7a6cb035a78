// Collection handles: `db.collection('tasks')` is the database seen through one collection, with
// ids instead of keys (`tasks.get('1')` is `db.get('tasks/1')`). At runtime it only builds keys
// and queries and calls the database, so every argument is checked, and refused with the same
// typed errors, as by the database's own methods. Its point is the types (ibexdb.d.ts,
// `Collection<T>`): `db.collection<Task>('tasks')` types get, put, update, query, live and count
// by the app's item type, field paths in `where` and `sort` included.

import { argQuery, describe, isPlainObject } from './args.js';
import { InvalidKeyError, QueryError } from './errors.js';

/** @typedef {import('./ibexdb.js').Item} Item */
/** @typedef {import('./ibexdb.js').Query} Query */
/** @typedef {import('./ibexdb.js').Where} Where */

/**
 * What a collection handle needs of the database (ibexdb.js's Database, or ibexdb/node's).
 * @typedef {object} CollectionDb
 * @property {(key: string) => Promise<any>} get
 * @property {(keys: string[]) => Promise<any[]>} getMany
 * @property {(key: string, value: Item) => Promise<void>} put
 * @property {(key: string, fields: Item) => Promise<void>} update
 * @property {(key: string) => Promise<void>} delete
 * @property {(q: Query) => Promise<any[]>} query
 * @property {(q: Query, onChange?: (rows: any[], change: any) => void) => Promise<any>} live
 * @property {(q: Query) => Promise<{rows: any[], cursor: string | null}>} page
 * @property {(collection: string, where?: Where) => Promise<number>} count
 * @property {(collection: string) => Promise<string[]>} keys
 */

/** A collection name: what the engine accepts in a key (`[A-Za-z0-9_-]{1,64}`). */
const COLLECTION = /^[A-Za-z0-9_-]{1,64}$/;

/** The query fields a handle fills in itself. */
const OWN_FIELDS = ['collection'];

export class Collection {
  /**
   * @param {CollectionDb} db
   * @param {unknown} name
   */
  constructor(db, name) {
    if (typeof name !== 'string' || !COLLECTION.test(name)) {
      throw new InvalidKeyError(`collection(name): name must be a collection name (1-64 of [A-Za-z0-9_-]), got ${describe(name)}`, {
        key: typeof name === 'string' ? name : describe(name),
        argument: 'name',
      });
    }
    /** @readonly */
    this.db = db;
    /** @readonly */
    this.name = name;
  }

  /**
   * The key `name/id` of an id (InvalidKeyError for an id that is not a non-empty string).
   * @param {unknown} id
   * @param {string} [method]
   * @returns {string}
   */
  key(id, method = 'key') {
    if (typeof id !== 'string' || id === '') {
      throw new InvalidKeyError(`${method}(id): id must be a non-empty string (the part of the key after "${this.name}/"), got ${describe(id)}`, {
        key: describe(id),
        argument: 'id',
      });
    }
    return `${this.name}/${id}`;
  }

  /**
   * `fn(key)` for the id's key; a refused id is a rejected promise, as the database's methods give.
   * @template R
   * @param {string} method
   * @param {unknown} id
   * @param {(key: string) => Promise<R>} fn
   * @returns {Promise<R>}
   */
  _withKey(method, id, fn) {
    let key;
    try {
      key = this.key(id, method);
    } catch (e) {
      return Promise.reject(e);
    }
    return fn(key);
  }

  /** @param {string} id */
  get(id) {
    return this._withKey('get', id, (k) => this.db.get(k));
  }

  /** @param {string[]} ids */
  getMany(ids) {
    /** @type {string[]} */
    const keys = [];
    try {
      // All inside the try: a Proxy's traps may throw too (its prototype, `length`, elements).
      if (!Array.isArray(ids)) throw new InvalidKeyError(`getMany(ids): ids must be an array of ids, got ${describe(ids)}`, { key: describe(ids), argument: 'ids' });
      for (let i = 0; i < ids.length; i++) keys.push(this.key(ids[i], 'getMany'));
    } catch (e) {
      return Promise.reject(e);
    }
    return this.db.getMany(keys);
  }

  /** @param {string} id @param {Item} value */
  put(id, value) {
    return this._withKey('put', id, (k) => this.db.put(k, value));
  }

  /** @param {string} id @param {Item} fields */
  update(id, fields) {
    return this._withKey('update', id, (k) => this.db.update(k, fields));
  }

  /** @param {string} id */
  delete(id) {
    return this._withKey('delete', id, (k) => this.db.delete(k));
  }

  /**
   * The full query of a handle's query (`{where?, sort?, limit?, offset?}`): its collection added.
   * @param {string} method
   * @param {unknown} q
   * @returns {Query}
   */
  toQuery(method, q = {}) {
    if (!isPlainObject(q)) argQuery(method, q); // throws the database's QueryError for a non-object
    for (const f of OWN_FIELDS) {
      if (q[f] !== undefined && q[f] !== this.name) {
        throw new QueryError(`${method}(query): query.${f} is the handle's ("${this.name}"), got ${describe(q[f])}`, { argument: `query.${f}` });
      }
    }
    return /** @type {Query} */ ({ ...q, collection: this.name });
  }

  /** @param {unknown} [q] */
  query(q) {
    try {
      return this.db.query(this.toQuery('query', q));
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** A page and the cursor after it (`db.page`). @param {unknown} [q] */
  page(q) {
    try {
      return this.db.page(this.toQuery('page', q));
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** @param {unknown} [q] @param {(rows: any[], change: any) => void} [onChange] */
  live(q, onChange) {
    try {
      return this.db.live(this.toQuery('live', q), onChange);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** @param {Where} [where] */
  count(where) {
    return this.db.count(this.name, where);
  }

  /** Ids of the collection's items, in order (`db.keys(name)`). */
  keys() {
    return this.db.keys(this.name);
  }
}
