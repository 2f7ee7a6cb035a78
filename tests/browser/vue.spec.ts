// ibexdb/vue (www/lib/vue.js) with the real Vue from npm, unbundled: the page's import map maps
// `vue` to Vue's ES module browser build and `ibexdb/vue` to www/lib/vue.js
// (support/vue/index.html). Rows, items and sync status follow writes; a reactive query
// re-subscribes and closes the old one; an unmount (also while the first results are pending)
// leaves no live query; server rendering in Node touches no Worker, OPFS or database.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { test, expect, uniqueName } from './ibexdb.fixtures';
import type { Page } from '@playwright/test';

async function gotoVuePage(page: Page) {
  await page.goto('/tests/browser/support/vue/index.html');
  await page.waitForSelector('body[data-ready="1"]', { state: 'attached', timeout: 20_000 });
}

test('composables follow writes; a reactive query re-subscribes once and closes the old; nothing left after unmount', async ({ page, watched }) => {
  void watched;
  await gotoVuePage(page);
  const out = await page.evaluate(async (name) => {
    const { Vue, ibexdb, composables: c, countLive } = (window as any).t;
    const { createApp, defineComponent, h, ref, nextTick } = Vue;
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const until = async (what: string, f: () => boolean) => {
      for (let i = 0; i < 500 && !f(); i++) await sleep(10);
      if (!f()) throw new Error(`timed out waiting for ${what}: ${document.getElementById('root')!.innerHTML}`);
    };
    const db = await ibexdb.open(name, { storage: 'memory' });
    await db.put('tasks/1', { title: 'one', done: false, n: 1 });
    await db.put('tasks/9', { title: 'finished', done: true, n: 9 });
    const counts = countLive(db);
    const done = ref(false);
    let renders = 0;
    const List = defineComponent({
      setup() {
        // A getter: a new object each run, compared by content.
        const live = c.useLive(() => ({ collection: 'tasks', where: { done: done.value }, sort: ['n'] }));
        const item = c.useItem('tasks/1');
        const missing = c.useItem('tasks/none');
        const status = c.useSyncStatus();
        return () => {
          renders++;
          return h('div', null, [
            h('ul', null, live.rows.value.map((r: any) => h('li', { key: r.id }, r.value.title))),
            h('p', { id: 'item' }, item.loading.value ? 'loading' : (item.value.value?.title ?? '-')),
            h('p', { id: 'missing' }, missing.loading.value ? 'loading' : String(missing.value.value)),
            h('p', { id: 'sync' }, status.value?.state ?? 'unknown'),
          ]);
        };
      },
    });
    const App = defineComponent({
      setup() {
        c.provideDatabase(db);
        return () => h(List);
      },
    });
    const text = (id: string) => document.getElementById(id)?.textContent;
    const titles = () => [...document.querySelectorAll('li')].map((li) => li.textContent);
    const app = createApp(App);
    app.mount('#root');
    await until('first rows', () => titles().join() === 'one' && text('item') === 'one' && text('sync') === 'off' && text('missing') === 'undefined');
    await until('no pending live query', () => counts.pending === 0);
    const mounted = { ...counts, registered: counts.registered };

    await db.put('tasks/2', { title: 'two', done: false, n: 2 });
    await until('the new row', () => titles().join() === 'one,two');
    await db.update('tasks/1', { title: 'ONE' });
    await until('the changed item', () => text('item') === 'ONE' && titles().join() === 'ONE,two');
    db.sync('ws://127.0.0.1:9').catch(() => {});
    await until('sync offline', () => text('sync') === 'offline');
    await db.sync(null);
    await until('sync off', () => text('sync') === 'off');

    // The query's reactive source changes: one new live query, the old one closed.
    const callsBefore = counts.calls;
    done.value = true;
    await until('the done rows', () => titles().join() === 'finished');
    await until('settled', () => counts.pending === 0);
    const switched = { calls: counts.calls - callsBefore, registered: counts.registered };
    // Nothing renders while nothing changes.
    await sleep(100);
    const rendersIdle = renders;
    await sleep(300);
    const rendersAfterIdle = renders;
    await nextTick();

    app.unmount();
    await until('closed', () => counts.pending === 0 && counts.opened === counts.closed);
    await sleep(100);
    const unmounted = { ...counts, registered: counts.registered };
    await db.close();
    return { mounted, switched, unmounted, rendersIdle, rendersAfterIdle };
  }, uniqueName('vue-live'));
  console.log(JSON.stringify(out));
  // useLive's query and the collection query of each of the two useItem.
  expect(out.mounted.calls).toBe(3);
  expect(out.mounted.registered).toBe(3);
  expect(out.switched).toEqual({ calls: 1, registered: 3 });
  expect(out.rendersAfterIdle).toBe(out.rendersIdle);
  expect(out.unmounted.registered).toBe(0);
  expect(out.unmounted.opened).toBe(out.unmounted.closed);
});

test('Vue: useItem subscribes to its id alone: writes to other items are not reported to it, its own are', async ({ page, watched }) => {
  void watched;
  await gotoVuePage(page);
  const out = await page.evaluate(async (name) => {
    const { Vue, ibexdb, composables: c } = (window as any).t;
    const { createApp, defineComponent, h } = Vue;
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const db = await ibexdb.open(name, { storage: 'memory' });
    await db.transaction((tx: any) => {
      for (let i = 0; i < 100; i++) tx.put(`tasks/${i}`, { title: `task ${i}` });
    });
    const queries: string[] = [];
    let reports = 0;
    const live = db.live.bind(db);
    db.live = (q: any, onChange: any) => {
      queries.push(JSON.stringify(q));
      return live(q, (rows: any, change: any) => {
        reports++;
        onChange?.(rows, change);
      });
    };
    let renders = 0;
    const Item = defineComponent({
      setup() {
        const item = c.useItem('tasks/7');
        return () => {
          renders++;
          return h('p', { id: 'item' }, item.loading.value ? 'loading' : (item.value.value?.title ?? '-'));
        };
      },
    });
    const App = defineComponent({
      setup() {
        c.provideDatabase(db);
        return () => h(Item);
      },
    });
    const text = () => document.getElementById('item')?.textContent;
    const app = createApp(App);
    app.mount('#root');
    for (let i = 0; i < 300 && text() !== 'task 7'; i++) await sleep(10);
    await sleep(50);
    const before = { renders, reports };
    for (let i = 0; i < 30; i++) await db.update(`tasks/${i === 7 ? 8 : i}`, { title: `other ${i}` });
    await db.delete('tasks/6');
    await sleep(200);
    const afterOthers = { renders, reports };
    await db.update('tasks/7', { title: 'seven' });
    for (let i = 0; i < 300 && text() !== 'seven'; i++) await sleep(10);
    const afterOwn = { renders, reports };
    app.unmount();
    await db.close();
    return { queries, before, afterOthers, afterOwn };
  }, uniqueName('vue-item'));
  expect(out.queries).toEqual(['{"collection":"tasks","where":{"$id":"7"}}']);
  expect(out.afterOthers).toEqual(out.before);
  expect(out.afterOwn.reports).toBe(out.before.reports + 1);
  expect(out.afterOwn.renders).toBe(out.before.renders + 1);
});

test('Vue: unmount while the first results are pending: the live query is closed when it arrives, nothing assigned after', async ({ page, watched }) => {
  void watched;
  await gotoVuePage(page);
  const out = await page.evaluate(async (name) => {
    const { Vue, ibexdb, composables: c, countLive } = (window as any).t;
    const { createApp, defineComponent, h } = Vue;
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const db = await ibexdb.open(name, { storage: 'memory' });
    await db.transaction((tx: any) => {
      for (let i = 0; i < 5000; i++) tx.put(`tasks/${i}`, { title: `task ${i}`, n: i });
    });
    const counts = countLive(db);
    let renders = 0;
    let rendersWithRows = 0;
    const List = defineComponent({
      setup() {
        const live = c.useLive({ collection: 'tasks', sort: ['n'] }, { db });
        return () => {
          renders++;
          if (live.rows.value.length) rendersWithRows++;
          return h('p', null, live.loading.value ? 'loading' : `${live.rows.value.length} rows`);
        };
      },
    });
    const app = createApp(List);
    app.mount('#root'); // mounted synchronously: the live query is asked for now
    const atUnmount = { ...counts, registered: counts.registered };
    const rendersAtUnmount = renders;
    app.unmount();
    for (let i = 0; i < 500 && counts.pending > 0; i++) await sleep(10);
    await sleep(200);
    const after = { ...counts, registered: counts.registered };
    await db.close();
    return { atUnmount, after, rendersAtUnmount, renders, rendersWithRows };
  }, uniqueName('vue-pending'));
  console.log(JSON.stringify(out));
  expect(out.atUnmount).toMatchObject({ calls: 1, opened: 0, pending: 1 });
  expect(out.after).toMatchObject({ calls: 1, opened: 1, closed: 1, pending: 0, registered: 0 });
  expect(out.renders).toBe(out.rendersAtUnmount);
  expect(out.rendersWithRows).toBe(0);
});

test('Vue: a refused query and a bad key are typed errors in the refs; no database means loading', async ({ page, watched }) => {
  void watched;
  await gotoVuePage(page);
  const out = await page.evaluate(async (name) => {
    const { Vue, ibexdb, composables: c } = (window as any).t;
    const { createApp, defineComponent, h } = Vue;
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const db = await ibexdb.open(name, { storage: 'memory' });
    const seen: Record<string, string> = {};
    const Probe = defineComponent({
      setup() {
        // (A component's own provide is for its descendants: the database is passed here.)
        const bad = c.useLive({ collection: 'tasks', where: { n: { between: [1, 2] } } }, { db });
        const badKey = c.useItem('no-slash', { db });
        const noDb = c.useLive({ collection: 'tasks' }, { db: null });
        return () => {
          seen.bad = bad.error.value ? bad.error.value.name : bad.loading.value ? 'loading' : 'rows';
          seen.badKey = `${badKey.loading.value} ${badKey.value.value} ${badKey.error.value?.name} [${badKey.error.value?.argument}]`;
          seen.noDb = `${noDb.loading.value} ${noDb.rows.value.length}`;
          return h('p', null, seen.bad);
        };
      },
    });
    const app = createApp(Probe);
    app.mount('#root');
    for (let i = 0; i < 300 && seen.bad !== 'QueryError'; i++) await sleep(10);
    app.unmount();
    await db.close();
    return seen;
  }, uniqueName('vue-errors'));
  expect(out).toEqual({ bad: 'QueryError', badKey: 'false undefined InvalidKeyError [key]', noDb: 'true 0' });
});

test('Vue server rendering in Node (vue/server-renderer): the loading state, no Worker, OPFS, IndexedDB or database call', () => {
  const script = path.join(import.meta.dirname, 'support/vue/ssr.mjs');
  const out = JSON.parse(execFileSync(process.execPath, [script], { encoding: 'utf8' }).trim().split('\n').pop()!);
  const loading = '<p>live true 0 null; item true undefined; sync unknown</p>';
  expect(out).toEqual({ withDb: loading, withoutDb: loading, touched: [] });
});
