// Types of ibexdb/react (www/lib/react.js): React hooks over live queries and sync status.
// Needs React 18+ and its types (@types/react).
import type { ReactElement, ReactNode } from 'react';
import type { Database, IbexError, Item, Key, Row, SyncStatus, TypedQuery } from './ibexdb.js';

/** Which database a hook uses: `db` when given (even null), else the provider's. */
export interface HookOptions {
  db?: Database | null;
}

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

/** The database the hooks below use; null while it opens, and on a server (the hooks then show loading). */
export declare function IbexProvider(props: { db: Database | null | undefined; children?: ReactNode }): ReactElement;

/** The provider's database, or null. */
export declare function useDatabase(): Database | null;

/**
 * A live query's latest rows, re-rendered at every change. The query is compared by content (a
 * new literal each render is fine); null or undefined for none. `useLive<Task>({collection:
 * 'tasks', where: {done: false}})` types `where`, `sort` and the rows by the item type.
 */
export declare function useLive<T = Item>(query: TypedQuery<T> | null | undefined, options?: HookOptions): LiveState<T>;

/**
 * One item (`collection/id`) kept current, by a live query of that id alone (`where: {$id: id}`):
 * a write to another item of the collection neither reaches it nor re-renders it.
 */
export declare function useItem<T = Item>(key: Key | null | undefined, options?: HookOptions): ItemState<T>;

/** Where sync stands, re-rendered at every change; null before it is known (and on a server). */
export declare function useSyncStatus(options?: HookOptions): SyncStatus | null;
