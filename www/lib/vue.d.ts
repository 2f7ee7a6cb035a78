// Types of ibexdb/vue (www/lib/vue.js): Vue 3 composables over live queries and sync status.
import type { ComputedRef, InjectionKey, MaybeRefOrGetter, Ref, ShallowRef } from 'vue';
import type { Database, IbexError, Item, Key, Row, SyncStatus, TypedQuery } from './ibexdb.js';

/** Which database a composable uses: `db` when given (even null), else the provided one. */
export interface ComposableOptions {
  db?: MaybeRefOrGetter<Database | null | undefined>;
}

/** A live query's state as refs: `loading` until the first results, `error` when it was refused. */
export interface LiveRefs<T = Item> {
  readonly rows: Readonly<ShallowRef<Row<T>[]>>;
  readonly loading: Readonly<Ref<boolean>>;
  readonly error: Readonly<ShallowRef<IbexError | Error | null>>;
}

/** One item's state as refs: `value` undefined while loading and when there is no such item. */
export interface ItemRefs<T = Item> {
  readonly value: ComputedRef<T | undefined>;
  readonly loading: Readonly<Ref<boolean>>;
  readonly error: ComputedRef<IbexError | Error | null>;
}

/** Provide the database to the composables of this component's descendants (in setup); null while it opens. */
export declare function provideDatabase(db: MaybeRefOrGetter<Database | null | undefined>): void;

/** The key the database is provided under: `app.provide(databaseKey, db)` provides it app-wide. */
export declare const databaseKey: InjectionKey<MaybeRefOrGetter<Database | null | undefined>>;

/** The provided database, or null. */
export declare function useDatabase(options?: ComposableOptions): ComputedRef<Database | null>;

/**
 * A live query's latest rows. The query may be a value, a ref or a getter (re-subscribed when
 * it changes by content); null for none. Starts when the component mounts (never on a server).
 */
export declare function useLive<T = Item>(query: MaybeRefOrGetter<TypedQuery<T> | null | undefined>, options?: ComposableOptions): LiveRefs<T>;

/** One item (`collection/id`) kept current; reads a live query of that id alone (`where: {$id: id}`). */
export declare function useItem<T = Item>(key: MaybeRefOrGetter<Key | null | undefined>, options?: ComposableOptions): ItemRefs<T>;

/** Where sync stands; null before it is known (and on a server). */
export declare function useSyncStatus(options?: ComposableOptions): Readonly<ShallowRef<SyncStatus | null>>;
