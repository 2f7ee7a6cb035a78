// ibexdb/svelte (www/lib/svelte.js) with the real Svelte from npm: the test components
// (support/svelte/*.svelte) are compiled by svelte/compiler and bundled with Svelte's runtime at
// test time (support/svelte/build.ts); ibexdb and ibexdb/svelte load unbundled from www/lib/
// through the page's import map. Runes mode ($store, $derived, fromStore), legacy mode
// (Svelte 4 syntax, `$:`, createClassComponent), and Svelte 4 itself (its compiler and runtime,
// the devDependency `svelte4`); rows, items and sync status follow writes; a
// changed query re-subscribes and closes the old; one live query for two subscribers of a store;
// an unmount while the first results are pending leaves nothing; a database still opening;
// typed errors in the state; server rendering in Node touches no Worker, OPFS or database.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { test, expect, uniqueName } from './ibexdb.fixtures';
import type { Page } from '@playwright/test';
import { buildSveltePage } from './support/svelte/build';

test.beforeAll(async () => {
  await buildSveltePage();
});

async function gotoSveltePage(page: Page) {
  await page.goto('/tests/browser/support/svelte/index.html');
  await page.waitForSelector('body[data-ready="1"][data-ready4="1"]', { state: 'attached', timeout: 20_000 });
}

test('Svelte runes: $store rows, items and sync status follow writes; a $derived query re-subscribes once and closes the old; nothing left after unmount', async ({ page, watched }) => {
  void watched;
  await gotoSveltePage(page);
  const out = await page.evaluate(async (name) => {
    const { Svelte, ibexdb, countLive, components } = (window as any).t;
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const until = async (what: string, f: () => boolean) => {
      for (let i = 0; i < 500 && !f(); i++) await sleep(10);
      if (!f()) throw new Error(`timed out waiting for ${what}: ${document.getElementById('root')!.innerHTML}`);
    };
    const db = await ibexdb.open(name, { storage: 'memory' });
    await db.put('tasks/1', { title: 'one', done: false, n: 1 });
    await db.put('tasks/9', { title: 'finished', done: true, n: 9 });
    const counts = countLive(db);
    const text = (id: string) => document.getElementById(id)?.textContent;
    const titles = () => [...document.querySelectorAll('#root li')].map((li) => li.textContent);
    const control: any = {};
    const app = Svelte.mount(components.Board, { target: document.getElementById('root'), props: { db, control } });
    await until('first rows', () => titles().join() === 'one' && text('item') === 'one' && text('sync') === 'off' && text('missing') === 'undefined');
    await until('no pending live query', () => counts.pending === 0);
    const mounted = { ...counts, registered: counts.registered };

    await db.put('tasks/2', { title: 'two', done: false, n: 2 });
    await until('the new row', () => titles().join() === 'one,two');
    await db.update('tasks/1', { title: 'ONE' });
    await until('the changed item', () => text('item') === 'ONE' && titles().join() === 'ONE,two');
    await db.delete('tasks/1');
    await until('the deleted item', () => text('item') === '-' && titles().join() === 'two');
    db.sync('ws://127.0.0.1:9').catch(() => {});
    await until('sync offline', () => text('sync') === 'offline');
    await db.sync(null);
    await until('sync off', () => text('sync') === 'off');

    // The query's input changes: $derived makes a new store; one new live query, the old closed.
    const callsBefore = counts.calls;
    control.setDone(true);
    await until('the done rows', () => titles().join() === 'finished');
    await until('settled', () => counts.pending === 0 && counts.opened - counts.closed === 3);
    const switched = { calls: counts.calls - callsBefore, registered: counts.registered };

    await Svelte.unmount(app);
    await until('closed', () => counts.pending === 0 && counts.opened === counts.closed);
    await sleep(100);
    const unmounted = { ...counts, registered: counts.registered };
    await db.close();
    return { mounted, switched, unmounted };
  }, uniqueName('svelte-live'));
  console.log(JSON.stringify(out));
  // The live query and the item query of each of the two item stores.
  expect(out.mounted).toMatchObject({ calls: 3, opened: 3, closed: 0, registered: 3 });
  expect(out.switched).toEqual({ calls: 1, registered: 3 });
  expect(out.unmounted.registered).toBe(0);
  expect(out.unmounted.opened).toBe(out.unmounted.closed);
});

test('Svelte legacy mode (Svelte 4 syntax) and fromStore: a `$:` store follows its prop; writes reach both; $set re-subscribes', async ({ page, watched }) => {
  void watched;
  await gotoSveltePage(page);
  const out = await page.evaluate(async (name) => {
    const { Svelte, createClassComponent, ibexdb, countLive, components } = (window as any).t;
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const until = async (what: string, f: () => boolean) => {
      for (let i = 0; i < 500 && !f(); i++) await sleep(10);
      if (!f()) throw new Error(`timed out waiting for ${what}: ${document.body.innerHTML}`);
    };
    const db = await ibexdb.open(name, { storage: 'memory' });
    await db.put('tasks/1', { title: 'buy milk', n: 1 });
    await db.put('tasks/2', { title: 'buy bread', n: 2 });
    const counts = countLive(db);
    const text = (id: string) => document.getElementById(id)?.textContent;
    // The Svelte 4 component API (new Component({target, props}), $set, $destroy) over a legacy-mode component.
    const legacy = createClassComponent({ component: components.Legacy, target: document.getElementById('root'), props: { db, search: 'milk' } });
    const runes = Svelte.mount(components.Runes, { target: document.getElementById('root2'), props: { db } });
    await until('first rows', () => text('legacy-found') === 'buy milk' && text('legacy-item') === 'buy milk' && text('runes') === 'buy milk,buy bread');
    await db.put('tasks/3', { title: 'buy milk again', n: 3 });
    await until('the new row in both', () => text('legacy-found') === 'buy milk,buy milk again' && text('runes') === 'buy milk,buy bread,buy milk again');
    legacy.$set({ search: 'bread' });
    await until('the new search', () => text('legacy-found') === 'buy bread');
    legacy.$set({ search: '' });
    await until('no query', () => text('legacy-found') === '-');
    await until('settled', () => counts.pending === 0);
    const searched = { ...counts, registered: counts.registered };
    legacy.$destroy();
    await Svelte.unmount(runes);
    await until('closed', () => counts.opened === counts.closed);
    const after = { ...counts, registered: counts.registered };
    await db.close();
    return { searched, after };
  }, uniqueName('svelte-legacy'));
  console.log(JSON.stringify(out));
  // milk, the item, fromStore's, bread; the empty search asks for none. Left open: the item and fromStore's.
  expect(out.searched).toMatchObject({ calls: 4, pending: 0, registered: 2 });
  expect(out.after).toMatchObject({ calls: 4, registered: 0 });
  expect(out.after.opened).toBe(out.after.closed);
});

test('Svelte 4 (its own compiler and runtime): `$store` in a component follows writes; $set re-subscribes; $destroy closes every live query', async ({ page, watched }) => {
  void watched;
  await gotoSveltePage(page);
  const out = await page.evaluate(async (name) => {
    const { ibexdb, countLive } = (window as any).t;
    const { Legacy } = (window as any).t4;
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const until = async (what: string, f: () => boolean) => {
      for (let i = 0; i < 500 && !f(); i++) await sleep(10);
      if (!f()) throw new Error(`timed out waiting for ${what}: ${document.body.innerHTML}`);
    };
    const text = (id: string) => document.getElementById(id)?.textContent;
    const db = await ibexdb.open(name, { storage: 'memory' });
    await db.put('tasks/1', { title: 'buy milk', n: 1 });
    await db.put('tasks/2', { title: 'buy bread', n: 2 });
    const counts = countLive(db);
    const versions = [...(window as any).__svelte.v].sort();
    const app = new Legacy({ target: document.getElementById('root'), props: { db, search: 'milk' } });
    await until('first rows', () => text('legacy-found') === 'buy milk' && text('legacy-item') === 'buy milk');
    await db.update('tasks/1', { title: 'buy oat milk' });
    await until('the update', () => text('legacy-found') === 'buy oat milk' && text('legacy-item') === 'buy oat milk');
    app.$set({ search: 'bread' });
    await until('the new search', () => text('legacy-found') === 'buy bread');
    await until('settled', () => counts.pending === 0);
    const searched = { ...counts, registered: counts.registered };
    app.$destroy();
    await until('closed', () => counts.opened === counts.closed);
    const after = { ...counts, registered: counts.registered };
    await db.close();
    return { versions, searched, after };
  }, uniqueName('svelte4'));
  expect(out.versions).toEqual(['4', '5']);
  // milk, the item, bread; the milk query closed when the search changed.
  expect(out.searched).toMatchObject({ calls: 3, opened: 3, closed: 1, registered: 2 });
  expect(out.after).toMatchObject({ calls: 3, registered: 0 });
});

test('Svelte: two subscribers of one store share one live query, closed when the last leaves; an item store hears its own id alone', async ({ page, watched }) => {
  void watched;
  await gotoSveltePage(page);
  const out = await page.evaluate(async (name) => {
    const { Svelte, ibexdb, stores, countLive, components } = (window as any).t;
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const until = async (what: string, f: () => boolean) => {
      for (let i = 0; i < 500 && !f(); i++) await sleep(10);
      if (!f()) throw new Error(`timed out waiting for ${what}: ${document.body.innerHTML}`);
    };
    const db = await ibexdb.open(name, { storage: 'memory' });
    await db.transaction((tx: any) => {
      for (let i = 0; i < 100; i++) tx.put(`tasks/${i}`, { title: `task ${i}` });
    });
    const counts = countLive(db);
    const text = (id: string) => document.getElementById(id)?.textContent;
    const shared = stores.live(db, { collection: 'tasks' });
    const a = Svelte.mount(components.Count, { target: document.getElementById('root'), props: { store: shared, id: 'a' } });
    const b = Svelte.mount(components.Count, { target: document.getElementById('root2'), props: { store: shared, id: 'b' } });
    await until('both', () => text('a') === '100 rows' && text('b') === '100 rows');
    await db.put('tasks/100', { title: 'new' });
    await until('both follow', () => text('a') === '101 rows' && text('b') === '101 rows');
    const both = { ...counts, registered: counts.registered };
    await Svelte.unmount(a);
    await db.put('tasks/101', { title: 'newer' });
    await until('b follows alone', () => text('b') === '102 rows');
    await sleep(50);
    const one = { ...counts, registered: counts.registered };
    await Svelte.unmount(b);
    await until('closed', () => counts.opened === counts.closed);
    const none = { ...counts, registered: counts.registered };

    // An item store: reports for its id alone (a spy on what the engine reports to the page).
    const reports: string[] = [];
    const values: string[] = [];
    const live = db.live.bind(db);
    db.live = (q: any, onChange: any) => live(q, (rows: any, change: any) => (reports.push(JSON.stringify(q)), onChange?.(rows, change)));
    const seven = stores.item(db, 'tasks/7');
    const off = seven.subscribe((s: any) => values.push(s.loading ? 'loading' : String(s.value?.title)));
    await until('the item', () => values.at(-1) === 'task 7');
    const before = { reports: reports.length, values: values.length };
    for (let i = 0; i < 30; i++) await db.update(`tasks/${i === 7 ? 8 : i}`, { title: `other ${i}` });
    await db.delete('tasks/6');
    await sleep(200);
    const afterOthers = { reports: reports.length, values: values.length };
    await db.update('tasks/7', { title: 'seven' });
    await until('its own write', () => values.at(-1) === 'seven');
    off();
    await db.close();
    return { both, one, none, reports: [...new Set(reports)], before, afterOthers, values };
  }, uniqueName('svelte-shared'));
  console.log(JSON.stringify(out));
  expect(out.both).toMatchObject({ calls: 1, opened: 1, closed: 0, registered: 1 });
  expect(out.one).toMatchObject({ calls: 1, opened: 1, closed: 0, registered: 1 });
  expect(out.none).toMatchObject({ calls: 1, opened: 1, closed: 1, registered: 0 });
  expect(out.reports).toEqual(['{"collection":"tasks","where":{"$id":"7"}}']);
  expect(out.afterOthers).toEqual(out.before);
  expect(out.values).toEqual(['loading', 'task 7', 'seven']);
});

test('Svelte: unmount while the first results are pending: the live query is closed when it arrives, nothing set after; a subscribe-unsubscribe in one go asks for nothing', async ({ page, watched }) => {
  void watched;
  await gotoSveltePage(page);
  const out = await page.evaluate(async (name) => {
    const { Svelte, store, ibexdb, stores, countLive, components } = (window as any).t;
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const db = await ibexdb.open(name, { storage: 'memory' });
    await db.transaction((tx: any) => {
      for (let i = 0; i < 5000; i++) tx.put(`tasks/${i}`, { title: `task ${i}`, n: i });
    });
    const counts = countLive(db);
    // svelte/store's get(): subscribes and unsubscribes at once: the loading state, no query.
    const got = store.get(stores.live(db, { collection: 'tasks' }));
    await sleep(50);
    const afterGet = { ...counts };
    const inner = stores.live(db, { collection: 'tasks', sort: ['n'] });
    const seen: string[] = [];
    // What the component receives, recorded (a store passing the inner store's values on).
    const recorded = { subscribe: (run: any) => inner.subscribe((s: any) => (seen.push(s.loading ? 'loading' : `${s.rows.length}`), run(s))) };
    const app = Svelte.mount(components.Count, { target: document.getElementById('root'), props: { store: recorded, id: 'pending' } });
    for (let i = 0; i < 100 && counts.calls === 0; i++) await Promise.resolve(); // the query starts a microtask after mounting
    const atUnmount = { ...counts, registered: counts.registered };
    await Svelte.unmount(app);
    for (let i = 0; i < 500 && counts.pending > 0; i++) await sleep(10);
    await sleep(200);
    const after = { ...counts, registered: counts.registered };
    await db.close();
    return { got, afterGet, atUnmount, after, seen };
  }, uniqueName('svelte-pending'));
  console.log(JSON.stringify(out));
  expect(out.got).toEqual({ rows: [], loading: true, error: null });
  expect(out.afterGet).toMatchObject({ calls: 0 });
  expect(out.atUnmount).toMatchObject({ calls: 1, opened: 0, pending: 1 });
  expect(out.after).toMatchObject({ calls: 1, opened: 1, closed: 1, pending: 0, registered: 0 });
  expect(out.seen).toEqual(['loading']);
});

test('Svelte: a database still opening (a promise, a store set later) is loading, then rows; errors are typed in the state', async ({ page, watched }) => {
  void watched;
  await gotoSveltePage(page);
  const out = await page.evaluate(async (name) => {
    const { Svelte, store, ibexdb, stores, components } = (window as any).t;
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const until = async (what: string, f: () => boolean) => {
      for (let i = 0; i < 500 && !f(); i++) await sleep(10);
      if (!f()) throw new Error(`timed out waiting for ${what}: ${document.body.innerHTML}`);
    };
    const text = (id: string) => document.getElementById(id)?.textContent;
    // A promise of the database: what open() returns, passed before it resolves.
    let resolveOpen: (db: any) => void = () => {};
    const opening = new Promise((r) => (resolveOpen = r));
    const dbStore = store.writable(null);
    const a = Svelte.mount(components.Count, { target: document.getElementById('root'), props: { store: stores.live(opening, { collection: 'tasks' }), id: 'promise' } });
    const b = Svelte.mount(components.Count, { target: document.getElementById('root2'), props: { store: stores.live(dbStore, { collection: 'tasks' }), id: 'store' } });
    await sleep(100);
    const whileOpening = [text('promise'), text('store')];
    const db = await ibexdb.open(name, { storage: 'memory' });
    await db.put('tasks/1', { title: 'one' });
    resolveOpen(db);
    await until('the promise resolved', () => text('promise') === '1 rows');
    const storeStill = text('store');
    dbStore.set(db);
    await until('the store set', () => text('store') === '1 rows');
    await Svelte.unmount(a);
    await Svelte.unmount(b);

    // A refused query, a key that is not one, no database, and a database whose opening was refused.
    const seen: Record<string, string> = {};
    const refused = ibexdb.open('', { storage: 'memory' });
    refused.catch(() => {});
    const probe = Svelte.mount(components.Probe, { target: document.getElementById('root'), props: { db, refused, seen } });
    await until('the errors', () => seen.bad === 'QueryError' && seen.failed !== 'none');
    await Svelte.unmount(probe);
    await db.close();
    return { whileOpening, storeStill, seen };
  }, uniqueName('svelte-opening'));
  expect(out.whileOpening).toEqual(['loading', 'loading']);
  expect(out.storeStill).toBe('loading');
  expect(out.seen).toEqual({ bad: 'QueryError', badKey: 'false undefined InvalidKeyError [key]', noDb: 'true 0', failed: 'InvalidKeyError false' });
});

test('Svelte: a query given as a store is compared by content: the same content keeps the live query, another replaces it (the old closed)', async ({ page, watched }) => {
  void watched;
  await gotoSveltePage(page);
  const out = await page.evaluate(async (name) => {
    const { Svelte, store, ibexdb, stores, countLive, components } = (window as any).t;
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const until = async (what: string, f: () => boolean) => {
      for (let i = 0; i < 500 && !f(); i++) await sleep(10);
      if (!f()) throw new Error(`timed out waiting for ${what}: ${document.body.innerHTML}`);
    };
    const text = (id: string) => document.getElementById(id)?.textContent;
    const db = await ibexdb.open(name, { storage: 'memory' });
    await db.put('tasks/1', { title: 'one', done: false });
    await db.put('tasks/2', { title: 'two', done: true });
    await db.put('tasks/3', { title: 'three', done: true });
    const counts = countLive(db);
    const query = store.writable({ collection: 'tasks', where: { done: false } });
    const app = Svelte.mount(components.Count, { target: document.getElementById('root'), props: { store: stores.live(db, query), id: 'q' } });
    await until('first rows', () => text('q') === '1 rows' && counts.pending === 0);
    const first = { ...counts };
    query.set({ collection: 'tasks', where: { done: false } }); // a new object, the same query
    await sleep(100);
    const same = { ...counts };
    query.set({ collection: 'tasks', where: { done: true } });
    await until('the other rows', () => text('q') === '2 rows' && counts.pending === 0);
    const other = { ...counts, registered: counts.registered };
    query.set(null);
    await until('no query', () => text('q') === '0 rows' && counts.opened === counts.closed);
    await Svelte.unmount(app);
    await db.close();
    return { first, same, other };
  }, uniqueName('svelte-query-store'));
  expect(out.first).toMatchObject({ calls: 1, opened: 1, closed: 0 });
  expect(out.same).toMatchObject({ calls: 1, opened: 1, closed: 0 });
  expect(out.other).toMatchObject({ calls: 2, opened: 2, closed: 1, registered: 1 });
});

test('Svelte server rendering in Node (svelte/server): the loading state, no Worker, OPFS, IndexedDB or database call', () => {
  const script = path.join(import.meta.dirname, 'support/svelte/ssr.mjs');
  const out = JSON.parse(execFileSync(process.execPath, [script], { encoding: 'utf8' }).trim().split('\n').pop()!);
  const loading =
    '<ul></ul> <p id="item">loading</p> <p id="missing">loading</p> <p id="sync">unknown</p>' +
    '<p id="legacy-found">loading</p> <p id="legacy-item">loading</p><p id="runes">loading</p><p id="c">loading</p>';
  expect(out).toEqual({ withDb: loading, withPromise: loading, withoutDb: loading, get: { rows: [], loading: true, error: null }, touched: [] });
});
