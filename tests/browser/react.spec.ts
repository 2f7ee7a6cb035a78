// ibexdb/react (www/lib/react.js) with the real React from npm: React and react-dom are built
// into ES modules (support/react/vendor.ts, development mode), ibexdb and ibexdb/react load
// unbundled from www/lib/ through the test page's import map (support/react/index.html).
// StrictMode double mounts, an unmount while the first results are pending, stable snapshots
// (no render loop), and server rendering in Node that touches no Worker, OPFS or database.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { test, expect, uniqueName } from './ibexdb.fixtures';
import type { Page } from '@playwright/test';
import { buildReactVendor } from './support/react/vendor';

test.beforeAll(async () => {
  await buildReactVendor();
});

async function gotoReactPage(page: Page) {
  await page.goto('/tests/browser/support/react/index.html');
  await page.waitForSelector('body[data-ready="1"]', { state: 'attached', timeout: 20_000 });
}

test('StrictMode: one live query per store after the double mount, rows and items follow writes, none left after unmount', async ({ page, watched }) => {
  void watched;
  await gotoReactPage(page);
  const out = await page.evaluate(async (name) => {
    const { React, ReactDOM, ibexdb, hooks, countLive, h } = (window as any).t;
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const until = async (what: string, f: () => boolean) => {
      for (let i = 0; i < 500 && !f(); i++) await sleep(10);
      if (!f()) throw new Error(`timed out waiting for ${what}: ${document.getElementById('root')!.innerHTML}`);
    };
    const db = await ibexdb.open(name, { storage: 'memory' });
    await db.put('tasks/1', { title: 'one', done: false, n: 1 });
    await db.put('tasks/9', { title: 'finished', done: true, n: 9 });
    const counts = countLive(db);
    let renders = 0;
    let rerender: (n: number) => void = () => {};
    function List() {
      renders++;
      const [tick, setTick] = React.useState(0);
      rerender = setTick;
      // A new query literal every render: compared by content, it must not resubscribe.
      const live = hooks.useLive({ collection: 'tasks', where: { done: false }, sort: ['n'] });
      const item = hooks.useItem('tasks/1');
      const missing = hooks.useItem('tasks/none');
      const status = hooks.useSyncStatus();
      return h(
        'div',
        { 'data-tick': tick },
        h('ul', null, live.rows.map((r: any) => h('li', { key: r.id }, r.value.title))),
        h('p', { id: 'item' }, item.loading ? 'loading' : (item.value?.title ?? '-')),
        h('p', { id: 'missing' }, missing.loading ? 'loading' : String(missing.value)),
        h('p', { id: 'sync' }, status?.state ?? 'unknown'),
      );
    }
    const text = (id: string) => document.getElementById(id)?.textContent;
    const titles = () => [...document.querySelectorAll('li')].map((li) => li.textContent);
    const root = ReactDOM.createRoot(document.getElementById('root'));
    root.render(h(React.StrictMode, null, h(hooks.IbexProvider, { db }, h(List))));
    await until('first rows', () => titles().length === 1 && text('item') === 'one' && text('sync') === 'off' && text('missing') === 'undefined');
    await until('no pending live query', () => counts.pending === 0);
    const mounted = { ...counts, registered: counts.registered };

    await db.put('tasks/2', { title: 'two', done: false, n: 2 });
    await until('the new row', () => titles().join() === 'one,two');
    await db.update('tasks/1', { title: 'ONE' });
    await until('the changed item', () => text('item') === 'ONE' && titles().join() === 'ONE,two');
    await db.update('tasks/2', { done: true });
    await until('the row that left the query', () => titles().join() === 'ONE');
    // Sync's status follows: a server that is not there makes it offline.
    db.sync('ws://127.0.0.1:9').catch(() => {});
    await until('sync offline', () => text('sync') === 'offline');
    await db.sync(null);
    await until('sync off', () => text('sync') === 'off');

    // Stable snapshots: nothing renders while nothing changes.
    await sleep(100);
    const rendersIdle = renders;
    await sleep(400);
    const rendersAfterIdle = renders;
    // A re-render with an equal query literal keeps the subscription.
    const callsBefore = counts.calls;
    rerender(1);
    await until('re-render', () => document.querySelector('[data-tick="1"]') !== null);
    await sleep(100);
    const callsAfterRerender = counts.calls;

    root.unmount();
    await until('closed', () => counts.pending === 0 && counts.opened === counts.closed);
    await sleep(100);
    const unmounted = { ...counts, registered: counts.registered };
    await db.close();
    return { mounted, unmounted, rendersIdle, rendersAfterIdle, callsBefore, callsAfterRerender };
  }, uniqueName('react-strict'));
  console.log(JSON.stringify(out));
  // StrictMode subscribed twice per store (useLive's, and each useItem's live query of its id);
  // the first subscription of each was closed: three open, three registered with the worker.
  expect(out.mounted.calls).toBeGreaterThanOrEqual(3);
  expect(out.mounted.opened - out.mounted.closed).toBe(3);
  expect(out.mounted.registered).toBe(3);
  expect(out.rendersAfterIdle).toBe(out.rendersIdle);
  expect(out.callsAfterRerender).toBe(out.callsBefore);
  expect(out.unmounted.registered).toBe(0);
  expect(out.unmounted.opened).toBe(out.unmounted.closed);
});

test('useItem subscribes to its id alone: writes to other items of the collection reach neither its live query nor its render', async ({ page, watched }) => {
  void watched;
  await gotoReactPage(page);
  const out = await page.evaluate(async (name) => {
    const { React, ReactDOM, ibexdb, hooks, h } = (window as any).t;
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const db = await ibexdb.open(name, { storage: 'memory' });
    await db.transaction((tx: any) => {
      for (let i = 0; i < 100; i++) tx.put(`tasks/${i}`, { title: `task ${i}` });
    });
    // Every live query the hook starts, and every change reported to it.
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
    function Item() {
      renders++;
      const item = hooks.useItem('tasks/7');
      return h('p', { id: 'item' }, item.loading ? 'loading' : (item.value?.title ?? '-'));
    }
    const text = () => document.getElementById('item')?.textContent;
    const root = ReactDOM.createRoot(document.getElementById('root'));
    root.render(h(hooks.IbexProvider, { db }, h(Item)));
    for (let i = 0; i < 300 && text() !== 'task 7'; i++) await sleep(10);
    await sleep(50);
    const before = { renders, reports };
    for (let i = 0; i < 30; i++) await db.update(`tasks/${(i * 3) % 100 === 7 ? 8 : (i * 3) % 100}`, { title: `other ${i}` });
    await db.put('tasks/70', { title: 'seventy' });
    await db.delete('tasks/6');
    await sleep(200);
    const afterOthers = { renders, reports };
    await db.update('tasks/7', { title: 'seven' });
    for (let i = 0; i < 300 && text() !== 'seven'; i++) await sleep(10);
    const afterOwn = { renders, reports };
    root.unmount();
    await db.close();
    return { queries, before, afterOthers, afterOwn, shown: text() ?? 'unmounted' };
  }, uniqueName('react-item'));
  expect(out.queries).toEqual(['{"collection":"tasks","where":{"$id":"7"}}']);
  expect(out.afterOthers).toEqual(out.before);
  expect(out.afterOwn.reports).toBe(out.before.reports + 1);
  expect(out.afterOwn.renders).toBe(out.before.renders + 1);
});

test('unmount while the first results are pending: the live query is closed when it arrives, nothing renders after', async ({ page, watched }) => {
  void watched;
  await gotoReactPage(page);
  const out = await page.evaluate(async (name) => {
    const { React, ReactDOM, ibexdb, hooks, countLive, h } = (window as any).t;
    const { flushSync } = await import('react-dom/client' as string);
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const db = await ibexdb.open(name, { storage: 'memory' });
    await db.transaction((tx: any) => {
      for (let i = 0; i < 5000; i++) tx.put(`tasks/${i}`, { title: `task ${i}`, n: i });
    });
    const counts = countLive(db);
    let renders = 0;
    let rendersWithRows = 0;
    function List() {
      renders++;
      const live = hooks.useLive({ collection: 'tasks', sort: ['n'] });
      if (live.rows.length) rendersWithRows++;
      return h('p', null, live.loading ? 'loading' : `${live.rows.length} rows`);
    }
    const root = ReactDOM.createRoot(document.getElementById('root'));
    flushSync(() => root.render(h(React.StrictMode, null, h(hooks.IbexProvider, { db }, h(List)))));
    for (let i = 0; i < 100 && counts.calls === 0; i++) await new Promise((r) => setTimeout(r, 0));
    const atUnmount = { ...counts, registered: counts.registered };
    const rendersAtUnmount = renders;
    root.unmount();
    for (let i = 0; i < 500 && counts.pending > 0; i++) await sleep(10);
    await sleep(200);
    const after = { ...counts, registered: counts.registered };
    await db.close();
    return { atUnmount, after, rendersAtUnmount, renders, rendersWithRows };
  }, uniqueName('react-pending'));
  console.log(JSON.stringify(out));
  expect(out.atUnmount.calls).toBeGreaterThanOrEqual(1);
  expect(out.atUnmount.opened).toBe(0); // still pending when unmounted
  expect(out.after.pending).toBe(0);
  expect(out.after.opened).toBe(out.atUnmount.calls); // every live query arrived ...
  expect(out.after.closed).toBe(out.after.opened); // ... and was closed at once
  expect(out.after.registered).toBe(0);
  expect(out.renders).toBe(out.rendersAtUnmount);
  expect(out.rendersWithRows).toBe(0);
});

test('a refused query is the hook state\'s typed error; no database means loading', async ({ page, watched }) => {
  void watched;
  await gotoReactPage(page);
  const out = await page.evaluate(async (name) => {
    const { React, ReactDOM, ibexdb, hooks, h } = (window as any).t;
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    const db = await ibexdb.open(name, { storage: 'memory' });
    const seen: Record<string, string> = {};
    function Probe() {
      const bad = hooks.useLive({ collection: 'tasks', where: { n: { between: [1, 2] } } });
      const notAQuery = hooks.useLive({ collection: 42 });
      const badKey = hooks.useItem('no-slash');
      const noDb = hooks.useLive({ collection: 'tasks' }, { db: null });
      seen.bad = bad.error ? `${bad.error.name}` : bad.loading ? 'loading' : 'rows';
      seen.notAQuery = notAQuery.error ? `${notAQuery.error.name}: ${notAQuery.error.message}` : 'none';
      seen.badKey = `${badKey.loading} ${badKey.value} ${badKey.error?.name} [${badKey.error?.argument}]`;
      seen.noDb = `${noDb.loading} ${noDb.rows.length}`;
      return null;
    }
    const root = ReactDOM.createRoot(document.getElementById('root'));
    root.render(h(React.StrictMode, null, h(hooks.IbexProvider, { db }, h(Probe))));
    for (let i = 0; i < 300 && (seen.bad === 'loading' || seen.notAQuery === 'none' || !seen.bad); i++) await sleep(10);
    root.unmount();
    await db.close();
    return seen;
  }, uniqueName('react-errors'));
  expect(out.bad).toBe('QueryError');
  expect(out.notAQuery).toMatch(/^QueryError: live\(query\): query.collection must be a collection name/);
  expect(out.badKey).toBe('false undefined InvalidKeyError [key]');
  expect(out.noDb).toBe('true 0');
});

function serverRender() {
  const script = path.join(import.meta.dirname, 'support/react/ssr.mjs');
  return JSON.parse(execFileSync(process.execPath, [script], { encoding: 'utf8' }).trim().split('\n').pop()!);
}

test('server rendering with react-dom/server in Node: the loading state, no Worker, OPFS, IndexedDB or database call', () => {
  const out = serverRender();
  const loading = '<p>live true 0 null; item true undefined; sync unknown</p>';
  expect(out).toMatchObject({ withDb: loading, withoutDb: loading, touched: [] });
  expect(out.board).toBe('<section id="board"><p id="state">loading</p><ul></ul><p id="sync">unknown</p></section>');
});

test('the server HTML hydrates without a mismatch, then shows the rows and the sync status', async ({ page, watched }) => {
  void watched;
  const { board } = serverRender();
  await gotoReactPage(page);
  const out = await page.evaluate(
    async ([name, html]) => {
      const { React, ReactDOM, ibexdb, hooks, countLive, h } = (window as any).t;
      const { Board } = await import('./board.js' as string);
      const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
      const db = await ibexdb.open(name, { storage: 'memory' });
      await db.put('tasks/1', { title: 'b' });
      await db.put('tasks/2', { title: 'a' });
      const counts = countLive(db);
      const el = document.getElementById('root')!;
      el.innerHTML = html;
      const recoverable: string[] = [];
      const root = ReactDOM.hydrateRoot(el, h(React.StrictMode, null, h(hooks.IbexProvider, { db }, h(Board))), {
        onRecoverableError: (e: Error) => recoverable.push(String(e)),
      });
      const text = (id: string) => document.getElementById(id)?.textContent;
      for (let i = 0; i < 300 && text('state') !== '2 tasks'; i++) await sleep(10);
      const shown = { state: text('state'), items: [...el.querySelectorAll('li')].map((li) => li.textContent), sync: text('sync') };
      root.unmount();
      for (let i = 0; i < 300 && counts.pending > 0; i++) await sleep(10);
      const registered = counts.registered;
      await db.close();
      return { shown, recoverable, registered };
    },
    [uniqueName('react-hydrate'), board] as const,
  );
  expect(out).toEqual({ shown: { state: '2 tasks', items: ['a', 'b'], sync: 'off' }, recoverable: [], registered: 0 });
});
