// ibexdb/svelte: Svelte stores over a database's live queries and sync status. Types: svelte.d.ts.
//
//   live(db, query)     a store of {rows, loading, error}: a live query's latest rows
//   item(db, key)       a store of {value, loading, error}: one item, kept current
//   syncStatus(db)      a store of the latest SyncStatus (null before it is known)
//
// They follow the Svelte store contract (`subscribe(run)` calls `run` at once with the current
// value and returns the unsubscriber), so `$tasks` works in Svelte 4 and 5 components (3 has the same contract), legacy
// or runes mode (`const tasks = $derived(live(db, {…}))` re-subscribes when the query's inputs
// change; `fromStore(store).current` from svelte/store reads one as state). `db` may be a
// Database, null or undefined (still opening: loading), a promise of one (what `open()` returns:
// its rejection is the store's error) or a store of one; `query` a query or a store of one,
// compared by content (a new object with the same content is the same query).
//
// A store runs its live query while it has subscribers, one for all of them: it starts a
// microtask after its first subscriber arrives and is closed a microtask after the last one
// leaves (closed when it arrives if that is while it is pending; nothing is set after). A
// subscribe-read-unsubscribe in one go (`get(store)`, and a server render with svelte/server,
// which unsubscribes before it returns) therefore never calls the database: it reads the loading
// state, and nothing touches a Worker, OPFS or IndexedDB. Unsubscribed, a store is back to that
// state; subscribed again, it starts again.
//
// This module imports neither svelte nor the engine (only the error classes): the store
// contract is plain JavaScript.

import { describe } from './args.js';
import { InvalidKeyError } from './errors.js';

/** @typedef {import('./ibexdb.js').Database} Database */
/** @typedef {import('./ibexdb.js').Row} Row */
/** @typedef {import('./ibexdb.js').SyncStatus} SyncStatus */
/** @typedef {{rows: Row[], loading: boolean, error: Error | null}} LiveState */
/** @typedef {{value: any, loading: boolean, error: Error | null}} ItemState */
/** @template T @typedef {{subscribe(run: (value: T) => void, invalidate?: () => void): (() => void) | {unsubscribe(): void}}} Readable */

/** @type {LiveState} */
const LOADING = Object.freeze({ rows: [], loading: true, error: null });
/** @type {LiveState} */
const IDLE = Object.freeze({ rows: [], loading: false, error: null });
/** @type {ItemState} */
const ITEM_LOADING = Object.freeze({ value: undefined, loading: true, error: null });
/** @type {ItemState} */
const ITEM_IDLE = Object.freeze({ value: undefined, loading: false, error: null });

/** @param {unknown} e */
const asError = (e) => (e instanceof Error ? e : new Error(String(e)));

/**
 * A query's identity: its JSON, sets as sorted arrays.
 * @param {unknown} q
 */
function queryKey(q) {
  return q ? JSON.stringify(q, (_k, v) => (v instanceof Set ? { $set: [...v].sort() } : v)) : '';
}

/** @param {any} x @returns {x is Readable<any>} */
const isStore = (x) => !!x && typeof x.subscribe === 'function';

/**
 * Follow a value, a promise of one or a store of one: `onValue` with each value (null while a
 * promise is pending), `onError` when the promise rejects. Returns the stop.
 * @param {any} src
 * @param {(v: any) => void} onValue
 * @param {(e: Error) => void} onError
 * @returns {() => void}
 */
function follow(src, onValue, onError) {
  if (isStore(src)) {
    const off = src.subscribe((v) => onValue(v ?? null));
    return typeof off === 'function' ? off : () => off.unsubscribe();
  }
  if (src && typeof src.then === 'function') {
    let on = true;
    onValue(null);
    src.then(
      (/** @type {any} */ v) => on && onValue(v ?? null),
      (/** @type {unknown} */ e) => on && onError(asError(e)),
    );
    return () => {
      on = false;
    };
  }
  onValue(src ?? null);
  return () => {};
}

/**
 * A store shared by its subscribers: `begin(set)` runs from a microtask after the first one
 * arrives while any remain, and its stop a microtask after the last one left; `set` is ignored
 * once stopped, and the state is back to `initial`.
 * @template T
 */
class Shared {
  /**
   * @param {T} initial
   * @param {(set: (s: T) => void, get: () => T) => () => void} begin
   */
  constructor(initial, begin) {
    this.initial = initial;
    this.state = initial;
    this.begin = begin;
    /** @type {Set<{run: (value: T) => void}>} */
    this.subscribers = new Set();
    /** @type {(() => void) | null} */
    this.stop = null;
    this.scheduled = false;
  }

  /**
   * @param {(value: T) => void} run
   * @param {() => void} [_invalidate]
   * @returns {() => void}
   */
  subscribe = (run, _invalidate) => {
    const entry = { run }; // one entry per call: the same function may subscribe twice
    this.subscribers.add(entry);
    run(this.state);
    this._schedule();
    return () => {
      if (this.subscribers.delete(entry)) this._schedule();
    };
  };

  _schedule() {
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      if (this.subscribers.size > 0 && !this.stop) {
        let active = true;
        const stop = this.begin(
          (s) => active && this._set(s),
          () => this.state,
        );
        this.stop = () => {
          active = false;
          stop();
        };
      } else if (this.subscribers.size === 0 && this.stop) {
        const stop = this.stop;
        this.stop = null;
        stop();
        this.state = this.initial;
      }
    });
  }

  /** @param {T} s */
  _set(s) {
    if (s === this.state) return;
    this.state = s;
    for (const entry of [...this.subscribers]) if (this.subscribers.has(entry)) entry.run(s);
  }
}

/**
 * A store of a live query's latest rows: `{rows, loading, error}`. `loading` until the first
 * results (and while the database is opening, or a new query is starting: the rows shown are
 * the previous ones); `error` when the query or the database's opening was refused.
 * @param {any} db a Database, null, a promise of one, or a store of one
 * @param {any} query a query, null for none, or a store of one
 * @returns {Readable<LiveState>}
 */
export function live(db, query) {
  return new Shared(query === null || query === undefined ? IDLE : LOADING, (set, get) => {
    /** @type {Database | null} */
    let database = null;
    /** @type {Error | null} */
    let dbError = null;
    /** @type {any} */
    let q = null;
    let key = '';
    let ready = false;
    let generation = 0;
    /** @type {{close(): void} | null} */
    let handle = null;
    const restart = () => {
      if (!ready) return;
      const gen = ++generation;
      handle?.close();
      handle = null;
      if (dbError) return set({ rows: get().rows, loading: false, error: dbError });
      if (!q) return set(IDLE);
      const s = get();
      if (!s.loading || s.error) set(s.rows.length ? { rows: s.rows, loading: true, error: null } : LOADING);
      if (!database) return; // opening: loading until it is there
      /** @type {Promise<{close(): void}>} */
      let p;
      try {
        p = database.live(q, (/** @type {Row[]} */ rows) => {
          if (gen === generation) set({ rows, loading: false, error: null });
        });
      } catch (e) {
        p = Promise.reject(e);
      }
      p.then(
        (lq) => {
          if (gen === generation) handle = lq;
          else lq.close(); // stopped (or restarted) while it was pending
        },
        (e) => {
          if (gen === generation) set({ rows: get().rows, loading: false, error: asError(e) });
        },
      );
    };
    const offDb = follow(
      db,
      (v) => {
        if (v === database && !dbError) return;
        database = v;
        dbError = null;
        restart();
      },
      (e) => {
        dbError = e;
        restart();
      },
    );
    const offQuery = follow(
      query,
      (v) => {
        const k = queryKey(v);
        if (k === key && ready) return;
        key = k;
        q = v;
        restart();
      },
      () => {},
    );
    ready = true;
    restart();
    return () => {
      generation++;
      offDb();
      offQuery();
      handle?.close();
      handle = null;
    };
  });
}

/** A store that never changes. @template T @param {T} value @returns {Readable<T>} */
function constant(value) {
  return {
    subscribe(run) {
      run(value);
      return () => {};
    },
  };
}

/**
 * A store of one item (`collection/id`) kept current: `{value, loading, error}` (value undefined
 * when there is no such item). It reads a live query of that one id (`where: {$id: id}`): a write
 * to another item of the collection neither reaches it nor changes its value. A key that is not
 * one is an InvalidKeyError in `error` (null or '' for none).
 * @param {any} db a Database, null, a promise of one, or a store of one
 * @param {unknown} key
 * @returns {Readable<ItemState>}
 */
export function item(db, key) {
  if (key === null || key === undefined || key === '') return constant(ITEM_IDLE);
  const slash = typeof key === 'string' ? key.indexOf('/') : -1;
  if (slash <= 0) {
    return constant(
      Object.freeze({
        value: undefined,
        loading: false,
        error: new InvalidKeyError(`item(db, key): key must be a string "collection/id", got ${describe(key)}`, { key: describe(key), argument: 'key' }),
      }),
    );
  }
  const k = /** @type {string} */ (key);
  const rows = live(db, { collection: k.slice(0, slash), where: { $id: k.slice(slash + 1) } });
  return new Shared(ITEM_LOADING, (set) => {
    let snapshot = ITEM_LOADING;
    const off = rows.subscribe((s) => {
      const value = s.rows[0]?.value;
      if (value === snapshot.value && s.loading === snapshot.loading && s.error === snapshot.error) return;
      snapshot = s.loading && !s.error ? ITEM_LOADING : { value, loading: s.loading, error: s.error };
      set(snapshot);
    });
    return typeof off === 'function' ? off : () => off.unsubscribe();
  });
}

/**
 * A store of where sync stands (`db.syncStatus()`, then every change `db.onSyncStatus` tells);
 * null before it is known and while there is no database.
 * @param {any} db a Database, null, a promise of one, or a store of one
 * @returns {Readable<SyncStatus | null>}
 */
export function syncStatus(db) {
  return new Shared(/** @type {SyncStatus | null} */ (null), (set) => {
    /** @type {(() => void) | null} */
    let off = null;
    /** @type {Database | null} */
    let current = null;
    const stopDb = follow(
      db,
      (d) => {
        if (d === current) return;
        off?.();
        off = null;
        current = d;
        set(null);
        if (!d) return;
        let heard = false;
        const mine = d.onSyncStatus((/** @type {SyncStatus} */ st) => {
          heard = true;
          if (current === d) set(st);
        });
        off = mine;
        // The status now (onSyncStatus tells only changes); a change heard meanwhile is newer.
        d.syncStatus().then(
          (/** @type {SyncStatus} */ st) => {
            if (current === d && off === mine && !heard) set(st);
          },
          () => {},
        );
      },
      () => {
        off?.();
        off = null;
        current = null;
        set(null);
      },
    );
    return () => {
      stopDb();
      off?.();
      off = null;
      current = null;
    };
  });
}
