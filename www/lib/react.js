// ibexdb/react: React hooks over a database's live queries and sync status, built on
// `useSyncExternalStore` (React 18+). Types: react.d.ts.
//
//   <IbexProvider db={db}>            the database the hooks use (null while it opens, and on a server)
//   useLive(query)                    {rows, loading, error}: a live query's latest rows
//   useItem(key)                      {value, loading, error}: one item, kept current
//   useSyncStatus()                   the latest SyncStatus, or null before it is known
//
// Each hook's store subscribes when React subscribes (in an effect, never during render) and
// closes its live query when React unsubscribes: StrictMode's mount/unmount/mount leaves one
// subscription, an unmount before the first results closes the query when it arrives and
// nothing is rendered after it. A snapshot is one object, replaced only when the rows change.
// On a server (react-dom/server) the hooks render the loading state (getServerSnapshot) and
// never call the database, so nothing touches a Worker, OPFS or IndexedDB.
//
// This module imports only `react` and the error classes: importing it never loads the engine.

import { createContext, createElement, useContext, useMemo, useSyncExternalStore } from 'react';
import { describe } from './args.js';
import { InvalidKeyError } from './errors.js';

/** @typedef {import('./ibexdb.js').Database} Database */
/** @typedef {import('./ibexdb.js').Row} Row */
/** @typedef {import('./ibexdb.js').SyncStatus} SyncStatus */
/** @typedef {{rows: Row[], loading: boolean, error: Error | null}} LiveState */
/** @typedef {{value: any, loading: boolean, error: Error | null}} ItemState */

/** The state before the first results (also what a server renders). One object: snapshots compare by identity. */
/** @type {LiveState} */
const LOADING = Object.freeze({ rows: [], loading: true, error: null });
/** The state of a hook with no query (or no key). */
/** @type {LiveState} */
const IDLE = Object.freeze({ rows: [], loading: false, error: null });
/** @type {ItemState} */
const ITEM_LOADING = Object.freeze({ value: undefined, loading: true, error: null });
/** @type {ItemState} */
const ITEM_IDLE = Object.freeze({ value: undefined, loading: false, error: null });

/** @type {import('react').Context<Database | null>} */
const DbContext = createContext(/** @type {Database | null} */ (null));

/**
 * Provide the database to the hooks below. `db` may be null (still opening, or on a server):
 * the hooks then show their loading state.
 * @param {{db: Database | null | undefined, children?: import('react').ReactNode}} props
 */
export function IbexProvider({ db, children }) {
  return createElement(DbContext.Provider, { value: db ?? null }, children);
}

/** The provider's database (null when there is none yet). */
export function useDatabase() {
  return useContext(DbContext);
}

/**
 * `options.db` when given (even null), else the provider's.
 * @param {{db?: Database | null} | undefined} options
 */
function useDb(options) {
  const fromContext = useContext(DbContext);
  return options && 'db' in options ? (options.db ?? null) : fromContext;
}

/**
 * A query's identity: its JSON, sets as sorted arrays (a new object literal each render is the
 * same query).
 * @param {unknown} q
 */
function queryKey(q) {
  return JSON.stringify(q, (_k, v) => (v instanceof Set ? { $set: [...v].sort() } : v));
}

/**
 * One live query, started while React has subscribers and closed when the last one leaves.
 * `state` is replaced, never mutated; listeners are called only while subscribed.
 */
class LiveStore {
  /**
   * @param {Database | null} db
   * @param {import('./ibexdb.js').Query | null} query
   */
  constructor(db, query) {
    this.db = db;
    this.query = query;
    /** @type {LiveState} */
    this.state = query ? LOADING : IDLE; // no database yet (opening, or a server): loading
    /** @type {Set<() => void>} */
    this.listeners = new Set();
    /** @type {{close(): void} | null} */
    this.live = null;
    /** Bumped at every start and stop: a late answer of an earlier start is ignored. */
    this.generation = 0;
  }

  /** @param {() => void} listener */
  subscribe = (listener) => {
    this.listeners.add(listener);
    if (this.listeners.size === 1) this._start();
    return () => {
      if (!this.listeners.delete(listener)) return;
      if (this.listeners.size === 0) this._stop();
    };
  };

  getSnapshot = () => this.state;

  _start() {
    const gen = ++this.generation;
    const { db, query } = this;
    if (!db || !query) return;
    /** @type {Promise<{close(): void}>} */
    let p;
    try {
      p = db.live(query, (rows) => {
        if (gen === this.generation) this._set({ rows, loading: false, error: null });
      });
    } catch (e) {
      p = Promise.reject(e);
    }
    p.then(
      (lq) => {
        if (gen === this.generation) this.live = lq;
        else lq.close(); // unsubscribed while it was pending
      },
      (e) => {
        if (gen === this.generation) this._set({ rows: this.state.rows, loading: false, error: e instanceof Error ? e : new Error(String(e)) });
      },
    );
  }

  _stop() {
    this.generation++;
    if (this.live) {
      this.live.close();
      this.live = null;
    }
  }

  /** @param {LiveState} s */
  _set(s) {
    this.state = s;
    for (const l of [...this.listeners]) l();
  }
}

/** `getServerSnapshot`: a server renders the loading state and subscribes to nothing. */
const serverLive = () => LOADING;
const serverItem = () => ITEM_LOADING;
const serverStatus = () => null;

/**
 * A live query's latest rows: `{rows, loading, error}`, re-rendered at every change. The query
 * may be a new object each render (it is compared by content); null for none.
 * @param {import('./ibexdb.js').Query | null | undefined} query
 * @param {{db?: Database | null}} [options]
 * @returns {LiveState}
 */
export function useLive(query, options) {
  const db = useDb(options);
  const key = query ? queryKey(query) : '';
  // eslint-disable-next-line react-hooks/exhaustive-deps -- the query is compared by its key
  const store = useMemo(() => new LiveStore(db, query ?? null), [db, key]);
  return useSyncExternalStore(store.subscribe, store.getSnapshot, serverLive);
}

/**
 * One item (`collection/id`), kept current: `{value, loading, error}` (value undefined when
 * there is no such item). It subscribes to a live query of that id alone (`where: {$id: id}`):
 * a write to another item of the collection does not reach it, nor re-render it.
 * @param {string | null | undefined} key
 * @param {{db?: Database | null}} [options]
 * @returns {ItemState}
 */
export function useItem(key, options) {
  const db = useDb(options);
  const view = useMemo(() => {
    const slash = typeof key === 'string' ? key.indexOf('/') : -1;
    if (key === null || key === undefined || key === '') return { subscribe: () => () => {}, getSnapshot: () => ITEM_IDLE };
    if (slash <= 0) {
      // Not a key: the error the database's get() gives such an argument, in the state.
      /** @type {ItemState} */
      const refused = Object.freeze({
        value: undefined,
        loading: false,
        error: new InvalidKeyError(`useItem(key): key must be a string "collection/id", got ${describe(key)}`, { key: describe(key), argument: 'key' }),
      });
      return { subscribe: () => () => {}, getSnapshot: () => refused };
    }
    if (!db) return { subscribe: () => () => {}, getSnapshot: () => ITEM_LOADING };
    const id = /** @type {string} */ (key).slice(slash + 1);
    // Its own live query of that id (a store per hook: nothing to keep per key once unmounted).
    const store = new LiveStore(db, { collection: /** @type {string} */ (key).slice(0, slash), where: { $id: id } });
    /** @type {LiveState | null} */
    let seen = null;
    /** @type {ItemState} */
    let snapshot = ITEM_LOADING;
    return {
      subscribe: store.subscribe,
      // Derived from the item's live rows; the same object until its row changes.
      getSnapshot: () => {
        const s = store.getSnapshot();
        if (s === seen) return snapshot;
        seen = s;
        const value = s.rows[0]?.value;
        if (value !== snapshot.value || s.loading !== snapshot.loading || s.error !== snapshot.error) {
          snapshot = s.loading && !s.error ? ITEM_LOADING : { value, loading: s.loading, error: s.error };
        }
        return snapshot;
      },
    };
  }, [db, key]);
  return useSyncExternalStore(view.subscribe, view.getSnapshot, serverItem);
}

/** The sync-status stores, one per database. @type {WeakMap<Database, {subscribe: (l: () => void) => () => void, getSnapshot: () => SyncStatus | null}>} */
const statuses = new WeakMap();

/** @param {Database} db */
function statusStore(db) {
  let store = statuses.get(db);
  if (store) return store;
  /** @type {SyncStatus | null} */
  let status = null;
  /** @type {Set<() => void>} */
  const listeners = new Set();
  /** @type {(() => void) | null} */
  let off = null;
  let heard = false;
  /** @param {SyncStatus} st */
  const set = (st) => {
    status = st;
    for (const l of [...listeners]) l();
  };
  store = {
    subscribe: (listener) => {
      listeners.add(listener);
      if (listeners.size === 1) {
        heard = false;
        off = db.onSyncStatus((st) => {
          heard = true;
          set(st);
        });
        // The status now (onSyncStatus tells only changes); a change heard meanwhile is newer.
        db.syncStatus().then(
          (st) => {
            if (!heard && off) set(st);
          },
          () => {},
        );
      }
      return () => {
        if (!listeners.delete(listener) || listeners.size > 0) return;
        off?.();
        off = null;
      };
    },
    getSnapshot: () => status,
  };
  statuses.set(db, store);
  return store;
}

const noStatus = { subscribe: () => () => {}, getSnapshot: () => null };

/**
 * Where sync stands (`db.syncStatus()`), re-rendered at every change; null before it is known.
 * @param {{db?: Database | null}} [options]
 * @returns {SyncStatus | null}
 */
export function useSyncStatus(options) {
  const db = useDb(options);
  const store = db ? statusStore(db) : noStatus;
  return useSyncExternalStore(store.subscribe, store.getSnapshot, serverStatus);
}
