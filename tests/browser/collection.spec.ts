// Collection handles, `db.collection(name)` (www/lib/collection.js), in Chromium: what a handle
// does is what the database does with the key `name/id` and the query's collection filled in;
// its wrong arguments are refused with the same typed errors as the database's, nothing written.
import { test, expect, gotoPlayground, uniqueName } from './ibexdb.fixtures';

test.beforeEach(async ({ page, watched }) => {
  void watched;
  await gotoPlayground(page);
});

test('a collection handle: get, put, update, delete, getMany, query, live, count, keys by id', async ({ page }) => {
  const out = await page.evaluate(async (name) => {
    const { open } = (window as any).ibexdb;
    const db = await open(name);
    const tasks = db.collection('tasks');
    await tasks.put('1', { title: 'Buy milk', done: false, priority: 2, tags: new Set(['home']), meta: { owner: 'ann' } });
    await tasks.put('2', { title: 'Write report', done: false, priority: 1, meta: { owner: 'bob' } });
    await db.put('other/1', { title: 'not a task', done: false });
    const seen: any[] = [];
    const live = await tasks.live({ where: { done: false }, sort: ['priority'] }, (rows: any[]) => seen.push(rows.map((r) => r.id)));
    await tasks.update('2', { done: true });
    await tasks.put('3', { title: 'Call Ann', done: false, priority: 0 });
    for (let i = 0; i < 200 && seen.length < 3; i++) await new Promise((r) => setTimeout(r, 10));
    const out = {
      key: tasks.key('1'),
      name: tasks.name,
      get: await tasks.get('1'),
      viaDb: await db.get('tasks/1'),
      many: await tasks.getMany(['1', 'nope', '3']),
      query: (await tasks.query({ where: { 'meta.owner': 'ann', tags: { contains: 'home' } } })).map((r: any) => r.id),
      all: (await tasks.query()).map((r: any) => r.id),
      sorted: (await tasks.query({ sort: [{ field: 'priority', desc: true }], limit: 2 })).map((r: any) => r.id),
      count: await tasks.count(),
      open: await tasks.count({ done: false }),
      keys: await tasks.keys(),
      live: live.results.map((r: any) => r.id),
      seen,
    };
    live.close();
    await tasks.delete('3');
    const afterDelete = { get: await tasks.get('3'), count: await tasks.count(), other: await db.count('other') };
    await db.close();
    return { ...out, afterDelete, tagsIsSet: out.get.tags instanceof Set };
  }, uniqueName('collection'));
  expect(out).toMatchObject({
    key: 'tasks/1',
    name: 'tasks',
    get: { title: 'Buy milk', done: false, priority: 2, meta: { owner: 'ann' } },
    many: [{ title: 'Buy milk' }, undefined, { title: 'Call Ann' }],
    query: ['1'],
    all: ['1', '2', '3'],
    sorted: ['1', '2'],
    count: 3,
    open: 2,
    keys: ['1', '2', '3'],
    live: ['3', '1'],
    seen: [['2', '1'], ['1'], ['3', '1']],
    afterDelete: { get: undefined, count: 2, other: 1 },
    tagsIsSet: true,
  });
  expect(out.viaDb).toEqual(out.get);
});

test('a collection handle refuses wrong arguments with the typed errors of the database, writing nothing', async ({ page }) => {
  const out = await page.evaluate(async (name) => {
    const { open } = (window as any).ibexdb;
    const db = await open(name);
    const tasks = db.collection('tasks');
    const err = async (f: () => unknown) => {
      try {
        await f();
        return 'no error';
      } catch (e: any) {
        return `${e.name}${e.argument ? ` [${e.argument}]` : ''}: ${e.message}`;
      }
    };
    const sync = (f: () => unknown) => {
      try {
        f();
        return 'no error';
      } catch (e: any) {
        return `${e.name}${e.argument ? ` [${e.argument}]` : ''}: ${e.message}`;
      }
    };
    // A method with a bad argument rejects (never throws): `.catch` sees it.
    const pending = tasks.get(42);
    const rejects = pending instanceof Promise;
    pending.catch(() => {});
    const out = {
      rejects,
      badName: sync(() => db.collection('no/slash')),
      nameType: sync(() => db.collection(7)),
      getId: await err(() => tasks.get(42)),
      emptyId: await err(() => tasks.put('', { a: 1 })),
      putValue: await err(() => tasks.put('1', 'text')),
      putBadValue: await err(() => tasks.put('1', { at: new Date(0) })),
      updateMissing: await err(() => tasks.update('nope', { a: 1 })),
      manyIds: await err(() => tasks.getMany('1')),
      manyId: await err(() => tasks.getMany(['1', 2])),
      queryType: await err(() => tasks.query('all')),
      queryCollection: await err(() => tasks.query({ collection: 'other' })),
      badWhere: await err(() => tasks.query({ where: { n: { between: 1 } } })),
      countWhere: await err(() => tasks.count('done')),
      liveCallback: await err(() => tasks.live({}, 'cb')),
      count: await tasks.count(),
    };
    await db.close();
    return out;
  }, uniqueName('collection-bad'));
  expect(out.rejects).toBe(true);
  expect(out.badName).toMatch(/^InvalidKeyError \[name\]: collection\(name\): name must be a collection name/);
  expect(out.nameType).toMatch(/^InvalidKeyError \[name\]: .*got a number \(7\)/);
  expect(out.getId).toBe('InvalidKeyError [id]: get(id): id must be a non-empty string (the part of the key after "tasks/"), got a number (42)');
  expect(out.emptyId).toMatch(/^InvalidKeyError \[id\]: put\(id\)/);
  expect(out.putValue).toMatch(/^InvalidValueError \[value\]: put\(value\)/);
  expect(out.putBadValue).toMatch(/^InvalidValueError/);
  expect(out.updateMissing).toMatch(/^NotFoundError/);
  expect(out.manyIds).toMatch(/^InvalidKeyError \[ids\]/);
  expect(out.manyId).toMatch(/^InvalidKeyError \[id\]: getMany\(id\)/);
  expect(out.queryType).toMatch(/^QueryError \[query\]: query\(query\): query must be a query object/);
  expect(out.queryCollection).toMatch(/^QueryError \[query.collection\]/);
  expect(out.badWhere).toMatch(/^QueryError/);
  expect(out.countWhere).toMatch(/^QueryError \[where\]/);
  expect(out.liveCallback).toMatch(/^InvalidValueError \[onChange\]/);
  expect(out.count).toBe(0);
});
