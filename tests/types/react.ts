// Type tests of ibexdb/react (www/lib/react.d.ts) (`make tsc`). Never run.
import { createElement } from 'react';
import type { Database, SyncStatus } from '../../www/ibexdb.js';
import { IbexProvider, useItem, useLive, useSyncStatus, useDatabase, type LiveState } from '../../www/lib/react.js';

interface Task {
  title: string;
  done: boolean;
  priority: number;
}

export function Board({ db }: { db: Database | null }) {
  return createElement(IbexProvider, { db }, createElement(List));
}

function List() {
  const { rows, loading, error } = useLive<Task>({ collection: 'tasks', where: { done: false }, sort: [{ field: 'priority', desc: true }] });
  const titles: string[] = rows.map((r) => r.value.title);
  const untyped: LiveState = useLive({ collection: 'notes', where: { 'any.path': { gt: 1 } } });
  const none = useLive(null);
  const item = useItem<Task>('tasks/1');
  const p: number | undefined = item.value?.priority;
  const status: SyncStatus | null = useSyncStatus();
  const db: Database | null = useDatabase();
  const other = useLive<Task>({ collection: 'tasks' }, { db });
  // @ts-expect-error an unknown field in a typed where
  useLive<Task>({ collection: 'tasks', where: { titel: 'x' } });
  // @ts-expect-error a condition of the wrong type
  useLive<Task>({ collection: 'tasks', where: { done: 'yes' } });
  // @ts-expect-error a query needs its collection
  useLive<Task>({ where: { done: true } });
  // @ts-expect-error an item may be missing
  void item.value.title;
  // @ts-expect-error rows are read-only state
  useLive<Task>({ collection: 'tasks' }).loading = false;
  void [titles, untyped, none, p, status, loading, error, other];
  return null;
}
