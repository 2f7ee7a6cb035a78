// Data survives a page reload and a browser restart on the same profile.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test, expect, gotoPlayground, launchProfile, uniqueName, watch, WEBKIT_CANNOT } from './ibexdb.fixtures';

test('write, reload the page, read back', async ({ page, watched }) => {
  void watched;
  const name = uniqueName('reload');
  await gotoPlayground(page);
  await page.evaluate(async (name) => {
    const db = await (window as any).ibexdb.open(name);
    await db.transaction((tx: any) => {
      for (let i = 0; i < 100; i++) tx.put(`items/${i}`, { i, tags: new Set([`t${i}`]) });
    });
    await db.put('items/last', { done: true }); // durability 'flush': on disk when this resolves
  }, name);
  await page.reload();
  await page.waitForSelector('body[data-ready="1"]');
  const out = await page.evaluate(async (name) => {
    const db = await (window as any).ibexdb.open(name);
    const r = { count: await db.count('items'), last: await db.get('items/last'), tag: [...(await db.get('items/42')).tags] };
    await db.close();
    return r;
  }, name);
  expect(out).toEqual({ count: 101, last: { done: true }, tag: ['t42'] });
});

for (const storage of ['opfs', 'indexeddb'] as const) test(`close the browser, relaunch on the same profile, read back (storage: ${storage})`, async ({ baseURL, playwright, browserName, launchOptions, channel }) => {
  test.skip(browserName === 'webkit', WEBKIT_CANNOT.relaunch);
  const dir = mkdtempSync(path.join(tmpdir(), 'ibexdb-profile-'));
  const name = uniqueName('restart');
  const launch = () => launchProfile({ playwright, browserName, launchOptions, channel }, dir, baseURL);
  try {
    let ctx = await launch();
    let page = ctx.pages()[0] ?? (await ctx.newPage());
    let w = watch(page);
    await gotoPlayground(page);
    const identity = await page.evaluate(async ([name, storage]) => {
      const db = await (window as any).ibexdb.open(name, { storage });
      for (let i = 0; i < 20; i++) await db.put(`items/${i}`, { i });
      await db.close();
      return db.storage === storage ? db.publicKey : `storage ${db.storage}`;
    }, [name, storage] as const);
    expect(w.problems, w.log.join('\n')).toEqual([]);
    await ctx.close();

    ctx = await launch();
    page = ctx.pages()[0] ?? (await ctx.newPage());
    w = watch(page);
    await gotoPlayground(page);
    const out = await page.evaluate(async ([name, storage]) => {
      const db = await (window as any).ibexdb.open(name, { storage });
      const r = { count: await db.count('items'), nineteen: await db.get('items/19'), identity: db.publicKey, verify: await db.verify() };
      await db.close();
      return r;
    }, [name, storage] as const);
    expect(w.problems, w.log.join('\n')).toEqual([]);
    await ctx.close();
    expect(out.count).toBe(20);
    expect(out.nineteen).toEqual({ i: 19 });
    expect(out.identity).toBe(identity); // the key pair is kept with the repository's files
    expect(out.verify.commits).toBe(20);
    expect(out.verify.unsealed).toBe(0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a worker that opens a repository again reuses its file handles, and notices the files were removed meanwhile', async ({ page, watched, browserName }) => {
  test.skip(browserName === 'webkit', WEBKIT_CANNOT.opfs);
  void watched;
  const name = uniqueName('reopen');
  await gotoPlayground(page);
  const out = await page.evaluate(async (name) => {
    // engine.js in a worker of its own, opening the same repository several times: the second
    // open acquires only the sync access handles (storage.js keeps the file handles); after the
    // directory is removed behind storage.js's back, the next open re-resolves and creates it.
    const src = `
      import { openEngine } from '${location.origin}/www/lib/engine.js';
      const name = ${JSON.stringify(name)};
      const r = {};
      let eng = await openEngine(name);
      eng.put('items/a', { n: 1 });
      eng.flush();
      await eng.close();
      eng = await openEngine(name);
      r.reopened = eng.get('items/a');
      eng.put('items/b', { n: 2 });
      eng.flush();
      await eng.close();
      const top = await (await navigator.storage.getDirectory()).getDirectoryHandle('ibexdb');
      await top.removeEntry(name, { recursive: true });
      eng = await openEngine(name);
      r.afterRemoval = [eng.get('items/a') ?? null, eng.get('items/b') ?? null];
      eng.put('items/c', { n: 3 });
      eng.flush();
      await eng.close();
      eng = await openEngine(name);
      r.recreated = [eng.get('items/a') ?? null, eng.get('items/c') ?? null];
      await eng.close();
      postMessage(r);`;
    const w = new Worker(URL.createObjectURL(new Blob([src], { type: 'text/javascript' })), { type: 'module' });
    try {
      return await new Promise((resolve, reject) => {
        w.onmessage = (ev) => resolve(ev.data);
        w.onerror = (ev) => reject(new Error(ev.message));
      });
    } finally {
      w.terminate();
    }
  }, name);
  expect(out).toEqual({ reopened: { n: 1 }, afterRemoval: [null, null], recreated: [null, { n: 3 }] });
});
