// Search and paging through the public API in Chromium (docs/query-language.md §2 `$id`, §8
// keyset paging, §9 full-text search): what the page gets back, the plans, the live queries, and
// the typed errors for bad cursors and oversized searches.
import { test, expect, gotoPlayground, uniqueName } from './ibexdb.fixtures';

test.beforeEach(async ({ page, watched }) => {
  void watched;
  await gotoPlayground(page);
});

test('$id: lookups by id, explain says key, a live query of one id hears nothing of the others', async ({ page }) => {
  const out = await page.evaluate(async (name) => {
    const { open } = (window as any).ibexdb;
    const db = await open(name);
    await db.transaction((tx: any) => {
      for (let i = 0; i < 50; i++) tx.put(`tasks/t${String(i).padStart(2, '0')}`, { title: `task ${i}`, n: i % 5 });
    });
    const ids = (rows: any[]) => rows.map((r) => r.id);
    const changes: any[] = [];
    const live = await db.live({ collection: 'tasks', where: { $id: 't07' } }, (_rows: any[], change: any) => changes.push(change));
    for (let i = 0; i < 20; i++) await db.update(`tasks/t${String(20 + i)}`, { n: 100 + i });
    await db.put('tasks/t070', { title: 'new' });
    // Changes would have arrived by now (each write above is a worker batch of its own).
    await new Promise((r) => setTimeout(r, 150));
    const quiet = changes.length;
    await db.update('tasks/t07', { title: 'seven' });
    for (let i = 0; i < 200 && changes.length === quiet; i++) await new Promise((r) => setTimeout(r, 10));
    const c = db.collection('tasks');
    const out = {
      one: ids(await db.query({ collection: 'tasks', where: { $id: 't03' } })),
      many: ids(await db.query({ collection: 'tasks', where: { $id: { in: ['t09', 't01', 'zz'] } } })),
      prefix: ids(await db.query({ collection: 'tasks', where: { $id: { prefix: 't1' }, n: { gte: 3 } } })),
      typed: ids(await c.query({ where: { $id: { eq: 't04' } } })),
      plan: await db.explain({ collection: 'tasks', where: { $id: { in: ['t01', 't02'] } } }),
      quiet,
      after: changes.length,
      liveRows: live.results.map((r: any) => r.value.title),
      nested: await db.query({ collection: 'tasks', where: { or: [{ $id: 't01' }] } }).catch((e: any) => `${e.name}: ${e.message}`),
      inCount: await db.count('tasks', { $id: 't01' }).catch((e: any) => `${e.name}: ${e.message}`),
    };
    live.close();
    await db.close();
    return out;
  }, uniqueName('search-id'));
  expect(out.one).toEqual(['t03']);
  expect(out.many).toEqual(['t01', 't09']);
  expect(out.prefix).toEqual(['t13', 't14', 't18', 't19']);
  expect(out.typed).toEqual(['t04']);
  expect(out.plan).toMatchObject({ access: 'key', op: 'in', estimatedRows: 2 });
  // The first rows (change null), then nothing for 21 writes to other items, then its own.
  expect(out.quiet).toBe(1);
  expect(out.after).toBe(2);
  expect(out.liveRows).toEqual(['seven']);
  expect(out.nested).toMatch(/^QueryError: .*\$id is allowed only at the top level/);
  expect(out.inCount).toMatch(/^QueryError: .*\$id is allowed only/);
});

test('keyset paging: page() cursors walk a sorted query once under concurrent inserts; bad cursors are QueryErrors', async ({ page }) => {
  const out = await page.evaluate(async (name) => {
    const { open } = (window as any).ibexdb;
    const db = await open(name, { schemas: { items: { indexes: ['n'] } } });
    await db.transaction((tx: any) => {
      for (let i = 0; i < 200; i++) tx.put(`items/i${String(i).padStart(3, '0')}`, { n: i % 10 });
    });
    const q = { collection: 'items', sort: [{ field: 'n', desc: true }], limit: 15 };
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    let inserted = 0;
    for (;;) {
      const p: any = await db.page(cursor ? { ...q, after: cursor } : q);
      pages++;
      for (const r of p.rows) seen.push(r.id);
      if (p.rows.length < q.limit) break;
      cursor = p.cursor;
      // Inserts on both sides of the cursor between pages: they never shift the walk.
      await db.put(`items/x${pages}`, { n: pages % 10 });
      await db.put(`items/a${pages}`, { n: 9 });
      inserted += 2;
    }
    const original = seen.filter((id) => id.startsWith('i'));
    const err = (p: Promise<unknown>) => p.then(() => 'ok', (e: any) => `${e.name}: ${e.message}`);
    const first: any = await db.page(q);
    const c = db.collection('items');
    const typedPage: any = await c.page({ sort: [{ field: 'n', desc: true }], limit: 15, after: first.cursor });
    const expectedFirst = (await db.query({ ...q, limit: 16 }))[15].id;
    const liveRows: string[][] = [];
    const live = await db.live({ ...q, limit: 3, after: first.cursor }, (rows: any[]) => liveRows.push(rows.map((r) => r.id)));
    const head = live.results.map((r: any) => r.id);
    await db.delete(`items/${head[0]}`);
    for (let i = 0; i < 200 && liveRows.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
    const out = {
      pages,
      inserted,
      originalCount: original.length,
      distinct: new Set(original).size,
      ordered: original.every((id, i) => i === 0 || Number(original[i - 1].slice(1)) % 10 >= Number(id.slice(1)) % 10),
      noCursor: (await db.page({ collection: 'items' })).cursor,
      typedFirst: typedPage.rows[0].id,
      expectedFirst,
      head,
      liveAfterDelete: liveRows[liveRows.length - 1],
      foreign: await err(db.query({ collection: 'items', sort: ['n'], after: first.cursor })),
      otherCollection: await err(db.query({ collection: 'other', sort: [{ field: 'n', desc: true }], after: first.cursor })),
      garbage: await err(db.query({ ...q, after: 'not a cursor!' })),
      notString: await err(db.query({ ...q, after: 42 })),
      withOffset: await err(db.query({ ...q, offset: 3, after: first.cursor })),
    };
    live.close();
    await db.close();
    return out;
  }, uniqueName('search-page'));
  expect(out.originalCount).toBe(200);
  expect(out.distinct).toBe(200);
  expect(out.ordered).toBe(true);
  expect(out.noCursor).toBeNull();
  expect(out.typedFirst).toBe(out.expectedFirst);
  expect(out.liveAfterDelete).toEqual(out.head.slice(1).concat(out.liveAfterDelete.slice(2)));
  expect(out.liveAfterDelete).toHaveLength(3);
  expect(out.foreign).toMatch(/^QueryError: .*the cursor belongs to another query/);
  expect(out.otherCollection).toMatch(/^QueryError: .*the cursor belongs to another query/);
  expect(out.garbage).toMatch(/^QueryError: .*malformed cursor/);
  expect(out.notString).toMatch(/^QueryError: .*after must be a cursor string/);
  expect(out.withOffset).toMatch(/^QueryError: .*after and offset cannot be combined/);
});

test('full-text search: a text index ranks folded matches, live searches follow writes, a 1 MB search is a QueryError', async ({ page }) => {
  const out = await page.evaluate(async (name) => {
    const { open } = (window as any).ibexdb;
    const db = await open(name, { schemas: { notes: { indexes: [{ field: 'title', kind: 'text' }, 'n'] } } });
    await db.put('notes/a', { title: 'Buy milk', n: 1 });
    await db.put('notes/b', { title: 'buy MILK, milk and more milk', n: 2 });
    await db.put('notes/c', { title: 'Crème brûlée for Milan', n: 3 });
    await db.put('notes/d', { title: 'buy bread', n: 4 });
    const ids = (rows: any[]) => rows.map((r) => r.id);
    const seen: string[][] = [];
    const live = await db.live({ collection: 'notes', where: { title: { match: 'buy mil' } }, sort: ['n'] }, (rows: any[]) => seen.push(ids(rows)));
    await db.put('notes/e', { title: 'BUY MILD cheese', n: 0 });
    await db.update('notes/a', { title: 'sell milk' });
    for (let i = 0; i < 200 && seen.length < 3; i++) await new Promise((r) => setTimeout(r, 10));
    const err = (p: Promise<unknown>) => p.then(() => 'ok', (e: any) => `${e.name}: ${e.message}`);
    const out = {
      ranked: ids(await db.query({ collection: 'notes', where: { title: { match: 'buy mil' } } })),
      folded: ids(await db.query({ collection: 'notes', where: { title: { match: 'CREME brulee' } } })),
      prefix: ids(await db.query({ collection: 'notes', where: { title: { match: 'mi' } }, sort: ['n'] })),
      withOther: ids(await db.query({ collection: 'notes', where: { title: { match: 'buy' }, n: { gte: 2 } }, sort: ['n'] })),
      plan: await db.explain({ collection: 'notes', where: { title: { match: 'buy' } }, limit: 2 }),
      live: seen,
      huge: await err(db.query({ collection: 'notes', where: { title: { match: 'x'.repeat(1 << 20) } } })),
      hugeLive: await err(db.live({ collection: 'notes', where: { title: { match: 'x'.repeat(1 << 20) } } })),
      notString: await err(db.query({ collection: 'notes', where: { title: { match: 7 } } })),
      badKind: await err(db.defineSchema('x', { indexes: [{ field: 'title', kind: 'fuzzy' }] })),
      count: await db.count('notes'),
    };
    live.close();
    await db.close();
    return out;
  }, uniqueName('search-text'));
  // e matches the prefix by a rarer word (mild: higher idf) in a shorter title: BM25 puts it
  // before b, whose milk occurs three times but in two of the five titles.
  expect(out.ranked).toEqual(['e', 'b']);
  expect(out.folded).toEqual(['c']);
  expect(out.prefix).toEqual(['e', 'a', 'b', 'c']);
  expect(out.withOther).toEqual(['b', 'd']);
  expect(out.plan).toMatchObject({ access: 'index', index: 'title', op: 'match', sort: 'rank', estimatedRows: 3 });
  expect(out.live).toEqual([['a', 'b'], ['e', 'a', 'b'], ['e', 'b']]);
  expect(out.huge).toMatch(/^QueryError: .*"match" on field "title": a search string of 1048576 bytes is longer than the 1024 bytes/);
  expect(out.hugeLive).toMatch(/^QueryError: .*1048576 bytes/);
  expect(out.notString).toMatch(/^QueryError: .*needs a string operand/);
  expect(out.badKind).toMatch(/^InvalidSchemaError: .*unknown index kind "fuzzy"/);
  expect(out.count).toBe(5);
});
