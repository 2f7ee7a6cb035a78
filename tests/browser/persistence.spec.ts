// Data survives a page reload and a browser restart on the same profile.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test, expect, gotoPlayground, launchProfile, uniqueName, watch, WEBKIT_CANNOT } from './ibexdb.fixtures';
import { installRunWorker } from './support/workers';

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

test('a worker keeps a closed repository\'s file handles for its next open, and gives them up to a removal from another context', async ({ page, watched, browserName }) => {
  test.skip(browserName === 'webkit', WEBKIT_CANNOT.opfs);
  void watched;
  const name = uniqueName('reopen');
  await gotoPlayground(page);
  await installRunWorker(page);
  const out = await page.evaluate(async (name) => {
    const { removeRepository } = await import(`${location.origin}/www/lib/storage.js`);
    const body = `
      const name = ${JSON.stringify(name)};
      const r = {};
      try {
        let eng = await E.openEngine(name);
        eng.put('items/a', { n: 1 });
        eng.flush();
        await eng.close();
        r.keptAfterClose = P.keptFiles(name);
        eng = await E.openEngine(name);
        r.keptWhileOpen = P.keptFiles(name);
        r.reopened = eng.get('items/a');
        eng.put('items/b', { n: 2 });
        eng.flush();
        await eng.close();
        // Kept handles lock the files: removing them behind storage.js's back is refused.
        const top = await (await navigator.storage.getDirectory()).getDirectoryHandle('ibexdb');
        r.rawRemove = await top.removeEntry(name, { recursive: true }).then(() => 'removed', (e) => e.name);
        await next(postMessage({ stage: 'kept' })); // the page removes the repository
        r.keptAfterRemoval = P.keptFiles(name);
        eng = await E.openEngine(name);
        r.afterRemoval = [eng.get('items/a') ?? null, eng.get('items/b') ?? null];
        eng.put('items/c', { n: 3 });
        eng.flush();
        await eng.close();
        eng = await E.openEngine(name);
        r.recreated = [eng.get('items/a') ?? null, eng.get('items/c') ?? null];
        await eng.close();
        postMessage({ done: r });
      } catch (e) { postMessage({ error: String(e?.name) + ': ' + String(e?.message) }); }`;
    const run = (window as any).__runWorker(body, async () => {
      await removeRepository(name); // asks the worker for its handles (opfs-pool.js), then removes
      return 'go';
    });
    try {
      return await run.done;
    } finally {
      run.worker.terminate();
    }
  }, name);
  expect(out).toEqual({
    keptAfterClose: ['identity', 'log', 'snapshot'],
    keptWhileOpen: ['identity'], // read at the open, then kept again
    reopened: { n: 1 },
    rawRemove: 'NoModificationAllowedError',
    keptAfterRemoval: [],
    afterRemoval: [null, null],
    recreated: [null, { n: 3 }],
  });
});

test('another worker opens a repository whose handles a live worker keeps: they are given up when asked', async ({ page, watched, browserName }) => {
  test.skip(browserName === 'webkit', WEBKIT_CANNOT.opfs);
  void watched;
  const name = uniqueName('handover');
  await gotoPlayground(page);
  await installRunWorker(page);
  const out = await page.evaluate(async (name) => {
    const keeper = (window as any).__runWorker(`
      const name = ${JSON.stringify(name)};
      const eng = await E.openEngine(name);
      eng.put('items/a', { n: 1 });
      eng.flush();
      await eng.close();
      const kept = P.keptFiles(name);
      await next(postMessage({ kept })); // the page starts the second worker, then asks again
      postMessage({ done: { kept, keptAfterOtherOpen: P.keptFiles(name) } });`, async () => {
      const t0 = performance.now();
      const other = (window as any).__runWorker(`
        const eng = await E.openEngine(${JSON.stringify(name)});
        const a = eng.get('items/a');
        await eng.close();
        postMessage({ done: a });`, async () => null);
      try {
        (window as any).__otherRead = await other.done;
        (window as any).__otherMs = performance.now() - t0;
      } finally {
        other.worker.terminate();
      }
      return 'go';
    });
    try {
      const r = await keeper.done;
      return { ...r, otherRead: (window as any).__otherRead, otherMs: (window as any).__otherMs };
    } finally {
      keeper.worker.terminate();
    }
  }, name);
  console.log(`another worker opened the kept repository in ${out.otherMs.toFixed(1)} ms`);
  expect({ ...out, otherMs: undefined }).toEqual({ kept: ['identity', 'log', 'snapshot'], keptAfterOtherOpen: [], otherRead: { n: 1 }, otherMs: undefined });
});
