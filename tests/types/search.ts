// Type tests of search and paging (`make tsc`): `$id` in a where, `after` and `page()`, `match`,
// and text indexes in a schema. Never run. Every `@ts-expect-error` line must be an error.
import { open, type Page, type Row, type Schema, type Query } from '../../www/ibexdb.js';

/** A type alias (an interface has no index signature, so it types collection handles only). */
type Note = {
  title: string;
  n: number;
};

export async function proper(): Promise<void> {
  const schema: Schema = { indexes: ['n', { field: 'title', kind: 'text' }, { field: 'n', kind: 'sorted' }] };
  const db = await open('search', { schemas: { notes: schema } });
  const one: Row[] = await db.query({ collection: 'notes', where: { $id: 'a' } });
  const some = await db.query({ collection: 'notes', where: { $id: { in: ['a', 'b'] }, n: { gt: 1 } } });
  const pre = await db.query({ collection: 'notes', where: { $id: { prefix: '2026-' } } });
  const first: Page<Note> = await db.page<Note>({ collection: 'notes', sort: ['n'], limit: 20 });
  const cursor: string | null = first.cursor;
  const q: Query = { collection: 'notes', sort: ['n'], limit: 20 };
  if (cursor) await db.query({ ...q, after: cursor });
  const title: string | undefined = first.rows[0]?.value.title;
  const found = await db.query({ collection: 'notes', where: { title: { match: 'buy mil' } } });
  const notes = db.collection<Note>('notes');
  const typed: Page<Note> = await notes.page({ where: { title: { match: 'buy' }, $id: { prefix: 'x' } }, sort: ['n'], limit: 5 });
  await notes.query({ sort: ['n'], limit: 5, after: typed.cursor ?? undefined });
  await notes.live({ where: { $id: 'a' } });
  void [one, some, pre, title, found];
}

export async function misuse(): Promise<void> {
  const db = await open('search');
  const notes = db.collection<Note>('notes');
  // @ts-expect-error match takes a search string
  await notes.query({ where: { title: { match: 3 } } });
  // @ts-expect-error match applies to string fields only
  await notes.query({ where: { n: { match: 'x' } } });
  // @ts-expect-error $id takes an id string or {eq|in|prefix}
  await notes.query({ where: { $id: 5 } });
  // @ts-expect-error a cursor is a string
  await notes.query({ after: 5 });
  // @ts-expect-error an index kind is 'sorted' or 'text'
  const bad: Schema = { indexes: [{ field: 'title', kind: 'fuzzy' }] };
  // @ts-expect-error a page's cursor may be null
  const c: string = (await notes.page({ limit: 1 })).cursor;
  void [bad, c];
}
