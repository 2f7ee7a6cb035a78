// Types of ibexdb/svelte (www/lib/svelte.js): Svelte stores over live queries and sync status.
// They need nothing from svelte's types: a store here is the Svelte store contract itself, which
// svelte/store's `Readable<T>` accepts (`$store`, `get`, `derived`, `fromStore`).
import type { Database, IbexError, Item, Key, Row, SyncStatus, TypedQuery } from './ibexdb.js';

/** The Svelte store contract: `run` is called at once with the current value, then at every change. */
export interface Readable<T> {
  subscribe(this: void, run: (value: T) => void, invalidate?: () => void): () => void;
}

/** A Svelte store of a value (a `writable`, a `derived`, …): the contract's subscribe alone. */
export interface StoreOf<T> {
  subscribe(this: void, run: (value: T) => void, invalidate?: () => void): (() => void) | { unsubscribe(): void };
}

/**
 * Which database a store reads: a Database, null or undefined while it opens (the store is
 * loading), a promise of one (`open()`'s; its rejection is the store's error) or a store of one.
 */
export type DatabaseSource = Database | null | undefined | PromiseLike<Database> | StoreOf<Database | null | undefined>;

/** A live query's state: `loading` until the first results, `error` when it was refused. */
export interface LiveState<T = Item> {
  readonly rows: Row<T>[];
  readonly loading: boolean;
  readonly error: IbexError | Error | null;
}

/** One item's state: `value` undefined while loading and when there is no such item. */
export interface ItemState<T = Item> {
  readonly value: T | undefined;
  readonly loading: boolean;
  readonly error: IbexError | Error | null;
}

/**
 * A store of a live query's latest rows; the query runs while the store has subscribers (one for
 * all of them). The query may be a store of one (compared by content); null for none.
 * `live<Task>(db, {collection: 'tasks', where: {done: false}})` types `where`, `sort` and the rows.
 */
export declare function live<T = Item>(db: DatabaseSource, query: TypedQuery<T> | null | undefined | StoreOf<TypedQuery<T> | null | undefined>): Readable<LiveState<T>>;

/** A store of one item (`collection/id`) kept current, by a live query of that id alone (`where: {$id: id}`). */
export declare function item<T = Item>(db: DatabaseSource, key: Key | null | undefined): Readable<ItemState<T>>;

/** A store of where sync stands; null before it is known (and while there is no database). */
export declare function syncStatus(db: DatabaseSource): Readable<SyncStatus | null>;
