// Type tests of ibexdb/svelte (www/lib/svelte.d.ts) (`make tsc`). Never run. Its stores are
// svelte/store's Readable: get, derived and fromStore take them.
import { derived, fromStore, get, writable, type Readable as SvelteReadable } from 'svelte/store';
import type { Database, SyncStatus } from '../../www/ibexdb.js';
import { item, live, syncStatus, type ItemState, type LiveState } from '../../www/lib/svelte.js';

interface Task {
  title: string;
  done: boolean;
  priority: number;
}

export function board(db: Database, opening: Promise<Database>) {
  const tasks = live<Task>(db, { collection: 'tasks', where: { done: false }, sort: [{ field: 'priority', desc: true }] });
  const titles: string[] = get(tasks).rows.map((r) => r.value.title);
  const asSvelte: SvelteReadable<LiveState<Task>> = tasks;
  const count = derived(tasks, ($t) => $t.rows.length);
  const n: number = get(count);
  const state: { readonly current: LiveState<Task> } = fromStore(tasks);
  // A database still opening: a promise of it, a store of it, or null.
  const fromPromise = live<Task>(opening, { collection: 'tasks' });
  const dbStore = writable<Database | null>(null);
  const fromStore_ = live(dbStore, { collection: 'notes', where: { 'any.path': { gt: 1 } } });
  const none = live(null, null);
  // A query that changes: a store of one.
  const search = writable('');
  const found = live<Task>(db, derived(search, ($s) => ({ collection: 'tasks', where: { title: { match: $s } } })));
  const one: SvelteReadable<ItemState<Task>> = item<Task>(db, 'tasks/1');
  const p: number | undefined = get(one).value?.priority;
  const status: SyncStatus | null = get(syncStatus(opening));
  const unsubscribe: () => void = tasks.subscribe(() => {});
  unsubscribe();
  // @ts-expect-error an unknown field in a typed where
  live<Task>(db, { collection: 'tasks', where: { titel: 'x' } });
  // @ts-expect-error a condition of the wrong type
  live<Task>(db, { collection: 'tasks', where: { done: 'yes' } });
  // @ts-expect-error rows are read-only state
  get(tasks).rows = [];
  // @ts-expect-error an item may be missing
  void get(one).value.title;
  // @ts-expect-error a key is a string
  item(db, 7);
  // @ts-expect-error not a database
  live(42, { collection: 'tasks' });
  return { titles, asSvelte, n, state, fromPromise, fromStore_, none, found, p, status };
}
