// ibexdb/vue: Vue 3 composables over a database's live queries and sync status. Types: vue.d.ts.
//
//   provideDatabase(db)        the database the composables below use (a value, ref or getter; null while it opens)
//   useLive(query)             {rows, loading, error} refs: a live query's latest rows (query: a value, ref or getter)
//   useItem(key)               {value, loading, error} refs: one item, kept current
//   useSyncStatus()            a ref of the latest SyncStatus (null before it is known)
//
// A composable starts its live query when its component is mounted, never in setup: a server
// render (vue/server-renderer) runs setup but not onMounted, so it renders the loading state and
// never calls the database (no Worker, OPFS or IndexedDB). A query is compared by content (a new
// object from a getter is the same query); when it or the database changes, the old live query
// is closed and a new one started. An unmount closes it, also while its first results are
// pending (it is closed when they arrive, and nothing is assigned after). Outside a component
// (an effectScope) a composable starts at once and stops with the scope.
//
// This module imports only `vue` and the error classes: importing it never loads the engine.

import { computed, getCurrentInstance, getCurrentScope, inject, onMounted, onScopeDispose, provide, ref, shallowRef, toValue, watch } from 'vue';
import { describe } from './args.js';
import { InvalidKeyError } from './errors.js';

/** @typedef {import('./ibexdb.js').Database} Database */
/** @typedef {import('./ibexdb.js').Row} Row */
/** @typedef {import('./ibexdb.js').SyncStatus} SyncStatus */
/** @typedef {Database | null | undefined | import('vue').Ref<Database | null | undefined> | (() => Database | null | undefined)} DbSource */
/** @typedef {{db?: DbSource}} Options */

/** @type {import('vue').InjectionKey<DbSource>} */
const DB = Symbol('ibexdb');

/**
 * Provide the database to the composables of this component's descendants (call in setup), or
 * app-wide with `app.provide` through `databaseKey`.
 * @param {DbSource} db
 */
export function provideDatabase(db) {
  provide(DB, db);
}

/** The key `provideDatabase` provides under (for `app.provide(databaseKey, db)`). */
export const databaseKey = DB;

/** @param {Options | undefined} options @returns {DbSource} */
function dbSource(options) {
  if (options && 'db' in options) return options.db;
  return getCurrentInstance() ? inject(DB, null) : null;
}

/** The provided database (a computed ref; null when there is none yet). @param {Options} [options] */
export function useDatabase(options) {
  const source = dbSource(options);
  return computed(() => toValue(source) ?? null);
}

/**
 * A query's identity: its JSON, sets as sorted arrays.
 * @param {unknown} q
 */
function queryKey(q) {
  return q ? JSON.stringify(q, (_k, v) => (v instanceof Set ? { $set: [...v].sort() } : v)) : '';
}

/**
 * Run `start` once mounted (in a component) or now (in an effect scope), and `stop` when the
 * component unmounts or the scope ends.
 * @param {() => (() => void)} start returns its stop
 */
function whileMounted(start) {
  /** @type {(() => void) | null} */
  let stop = null;
  if (getCurrentInstance()) onMounted(() => (stop = start()));
  else stop = start();
  if (getCurrentScope()) {
    onScopeDispose(() => {
      stop?.();
      stop = null;
    });
  }
}

/**
 * A live query's latest rows as refs: `{rows, loading, error}`. The query may be a value, a ref
 * or a getter (re-run when its reactive sources change); null for none.
 * @param {unknown} query
 * @param {Options} [options]
 */
export function useLive(query, options) {
  const source = dbSource(options);
  /** @type {import('vue').ShallowRef<Row[]>} */
  const rows = shallowRef([]);
  const loading = ref(!!toValue(/** @type {any} */ (query)));
  /** @type {import('vue').ShallowRef<Error | null>} */
  const error = shallowRef(null);
  whileMounted(() =>
    watch(
      [() => toValue(source) ?? null, () => queryKey(toValue(/** @type {any} */ (query)))],
      ([db], _old, onCleanup) => {
        const q = toValue(/** @type {any} */ (query));
        error.value = null;
        if (!q) {
          rows.value = [];
          loading.value = false;
          return;
        }
        loading.value = true;
        if (!db) return; // opening: loading until it is provided
        let current = true;
        /** @type {{close(): void} | null} */
        let live = null;
        /** @type {Promise<{close(): void}>} */
        let p;
        try {
          p = db.live(q, (r) => {
            if (!current) return;
            rows.value = r;
            loading.value = false;
          });
        } catch (e) {
          p = Promise.reject(e);
        }
        p.then(
          (lq) => {
            if (current) live = lq;
            else lq.close(); // stopped while it was pending
          },
          (e) => {
            if (!current) return;
            error.value = e instanceof Error ? e : new Error(String(e));
            loading.value = false;
          },
        );
        onCleanup(() => {
          current = false;
          live?.close();
          live = null;
        });
      },
      { immediate: true },
    ),
  );
  return { rows, loading, error };
}

/**
 * One item (`collection/id`) kept current, as refs `{value, loading, error}` (value undefined
 * when there is no such item). It reads a live query of that one id (`where: {$id: id}`): a
 * write to another item of the collection neither reaches it nor changes its refs.
 * @param {unknown} key a value, ref or getter
 * @param {Options} [options]
 */
export function useItem(key, options) {
  const parsed = computed(() => {
    const k = toValue(/** @type {any} */ (key));
    if (k === null || k === undefined || k === '') return null;
    const slash = typeof k === 'string' ? k.indexOf('/') : -1;
    if (slash <= 0) return { error: new InvalidKeyError(`useItem(key): key must be a string "collection/id", got ${describe(k)}`, { key: describe(k), argument: 'key' }) };
    return { collection: k.slice(0, slash), id: k.slice(slash + 1) };
  });
  const live = useLive(() => {
    const p = parsed.value;
    return p && 'collection' in p ? { collection: p.collection, where: { $id: p.id } } : null;
  }, options);
  return {
    value: computed(() => {
      const p = parsed.value;
      return p && 'id' in p ? live.rows.value[0]?.value : undefined;
    }),
    loading: live.loading,
    error: computed(() => {
      const p = parsed.value;
      return p && 'error' in p ? p.error : live.error.value;
    }),
  };
}

/**
 * Where sync stands, as a ref (null before it is known, and on a server).
 * @param {Options} [options]
 */
export function useSyncStatus(options) {
  const source = dbSource(options);
  /** @type {import('vue').ShallowRef<SyncStatus | null>} */
  const status = shallowRef(null);
  whileMounted(() =>
    watch(
      () => toValue(source) ?? null,
      (db, _old, onCleanup) => {
        status.value = null;
        if (!db) return;
        let heard = false;
        let current = true;
        const off = db.onSyncStatus((st) => {
          heard = true;
          status.value = st;
        });
        // The status now (onSyncStatus tells only changes); a change heard meanwhile is newer.
        db.syncStatus().then(
          (st) => {
            if (current && !heard) status.value = st;
          },
          () => {},
        );
        onCleanup(() => {
          current = false;
          off();
        });
      },
      { immediate: true },
    ),
  );
  return status;
}
