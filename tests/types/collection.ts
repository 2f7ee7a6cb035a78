// Type tests of typed collection handles, `db.collection<T>(name)` (`make tsc`: tsc --noEmit -p
// tests/types). Never run. Every `@ts-expect-error` line must be an error: tsc fails on an
// expectation that is not, so these lines prove misuse does not type-check.
import { open, type Collection, type Row, type LiveQuery, type FieldPath } from '../../www/ibexdb.js';

/** An interface (no index signature) works as an item type. */
interface Task {
  title: string;
  done: boolean;
  priority: number;
  tags?: Set<string>;
  meta?: { owner: string; estimate?: number };
  notes?: string[];
}

export async function proper(): Promise<void> {
  const db = await open('typed');
  const tasks: Collection<Task> = db.collection<Task>('tasks');
  await tasks.put('1', { title: 'Buy milk', done: false, priority: 2, tags: new Set(['home']), meta: { owner: 'ann' } });
  await tasks.update('1', { done: true });
  const t = await tasks.get('1');
  const title: string | undefined = t?.title;
  const many: (Task | undefined)[] = await tasks.getMany(['1', '2']);
  const rows: Row<Task>[] = await tasks.query({
    where: { done: false, priority: { gte: 1 }, 'meta.owner': 'ann', tags: { contains: 'home' }, title: { prefix: 'Buy' }, or: [{ priority: 3 }, { 'meta.estimate': { lt: 5 } }] },
    sort: ['priority', { field: 'meta.owner', desc: true }],
    limit: 10,
  });
  const firstTitle: string | undefined = rows[0]?.value.title;
  const live: LiveQuery<Task> = await tasks.live({ where: { done: false } }, (results, change) => {
    const p: number | undefined = results[0]?.value.priority;
    void p;
    void change?.added[0]?.value.done;
  });
  const open_: number = await tasks.count({ done: false });
  const ids: string[] = await tasks.keys();
  const key: string = tasks.key('1');
  const path: FieldPath<Task> = 'meta.estimate';
  await tasks.delete('1');
  live.close();
  void [title, many, firstTitle, open_, ids, key, path];

  // Untyped handles take any item and any where.
  const any = db.collection('anything');
  await any.put('x', { whatever: [1, 'two'] });
  await any.query({ where: { 'deep.path': { gt: 3 } }, sort: [{ field: 'x' }] });
}

export async function misuse(): Promise<void> {
  const db = await open('typed');
  const tasks = db.collection<Task>('tasks');
  // @ts-expect-error a field of the wrong type in put
  await tasks.put('1', { title: 'x', done: 'no', priority: 1 });
  // @ts-expect-error a required field missing in put
  await tasks.put('1', { title: 'x', done: false });
  // @ts-expect-error a field the type does not have
  await tasks.put('1', { title: 'x', done: false, priority: 1, colour: 'red' });
  // @ts-expect-error update with a field of the wrong type
  await tasks.update('1', { priority: '3' });
  // @ts-expect-error an id must be a string
  await tasks.get(1);
  // @ts-expect-error an unknown field in where
  await tasks.query({ where: { titel: 'x' } });
  // @ts-expect-error an unknown nested path in where
  await tasks.query({ where: { 'meta.ownr': 'ann' } });
  // @ts-expect-error a condition of the wrong type
  await tasks.query({ where: { priority: { gte: 'high' } } });
  // @ts-expect-error prefix only applies to string fields
  await tasks.query({ where: { priority: { prefix: '1' } } });
  // @ts-expect-error an unknown field inside or
  await tasks.count({ or: [{ done: true }, { nope: 1 }] });
  // @ts-expect-error sort by an unknown field
  await tasks.query({ sort: ['due'] });
  // @ts-expect-error the collection is the handle's
  await tasks.query({ collection: 'other' });
  // @ts-expect-error select is not part of a handle's query (rows are whole items)
  await tasks.query({ select: ['title'] });
  const t = await tasks.get('1');
  // @ts-expect-error get may find nothing: the result is possibly undefined
  void t.title;
  // @ts-expect-error a value read back has the field's type
  const n: number = (await tasks.query())[0]!.value.title;
  // @ts-expect-error count is a number
  const s: string = await tasks.count();
  // @ts-expect-error an item type with a field that cannot be stored (a Date)
  db.collection<{ at: Date }>('events');
  void [n, s];
}
