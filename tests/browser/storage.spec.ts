// The storage backends (issue 28 §2, §3; docs/design.md §11.5) in Chromium: the IndexedDB backend
// forced with `storage: 'indexeddb'` (open, write, reload and read back, two tabs, a typed quota
// error), 'auto' falling back to IndexedDB where workers have no `createSyncAccessHandle`, and
// memory storage. The crash test (crash.spec.ts) and the browser restart (persistence.spec.ts)
// run against IndexedDB too.
import { chromium, type Page } from '@playwright/test';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CHROMIUM_ARGS } from '../../playwright.config';
import { test, expect, gotoPlayground, uniqueName, watch, WEBKIT_CANNOT } from './ibexdb.fixtures';
import { installRunWorker } from './support/workers';

/** The IndexedDB databases of the page's origin. */
const idbNames = (page: Page) => page.evaluate(async () => (await indexedDB.databases()).map((d) => d.name));
/** Whether OPFS holds a directory for repository `name`. */
const inOpfs = (page: Page, name: string) =>
  page.evaluate(async (name) => {
    try {
      const top = await (await navigator.storage.getDirectory()).getDirectoryHandle('ibexdb');
      await top.getDirectoryHandle(name);
      return true;
    } catch {
      return false;
    }
  }, name);

test('storage: indexeddb: open, write, reload, read back; the files are in IndexedDB, not OPFS', async ({ page, watched }) => {
  void watched;
  const name = uniqueName('idb');
  await gotoPlayground(page);
  const first = await page.evaluate(async (name) => {
    const db = await (window as any).ibexdb.open(name, { storage: 'indexeddb' });
    await db.transaction((tx: any) => {
      for (let i = 0; i < 100; i++) tx.put(`items/${i}`, { i, tags: new Set([`t${i}`]), text: 'x'.repeat(i * 10) });
    });
    // More than one 64 KiB chunk of log, written by many durable writes.
    for (let i = 100; i < 400; i++) await db.put(`items/${i}`, { i, text: 'y'.repeat(300) });
    await db.put('items/last', { done: true }); // acknowledged once its transaction completed
    return { storage: db.storage, publicKey: db.publicKey };
  }, name);
  expect(first.storage).toBe('indexeddb');
  await page.reload();
  await page.waitForSelector('body[data-ready="1"]');
  const out = await page.evaluate(async (name) => {
    const db = await (window as any).ibexdb.open(name, { storage: 'indexeddb' });
    const info = await db.storageInfo();
    const r = {
      storage: db.storage,
      publicKey: db.publicKey,
      count: await db.count('items'),
      last: await db.get('items/last'),
      tag: [...(await db.get('items/42')).tags],
      verify: await db.verify(),
      logBytes: info.repository.logBytes,
    };
    await db.close();
    return r;
  }, name);
  expect(out.storage).toBe('indexeddb');
  expect(out.publicKey).toBe(first.publicKey); // the identity file is in IndexedDB too
  expect(out.count).toBe(401);
  expect(out.last).toEqual({ done: true });
  expect(out.tag).toEqual(['t42']);
  expect(out.verify.items).toBe(401);
  expect(out.logBytes).toBeGreaterThan(65536);
  expect(await idbNames(page)).toContain(`ibexdb/${name}`);
  expect(await inOpfs(page, name)).toBe(false);
  // Reopened after close (a snapshot was written): the same again, from the snapshot.
  const again = await page.evaluate(async (name) => {
    const db = await (window as any).ibexdb.open(name, { storage: 'indexeddb' });
    const r = { count: await db.count('items'), i399: await db.get('items/399') };
    await db.close();
    return r;
  }, name);
  expect(again).toEqual({ count: 401, i399: { i: 399, text: 'y'.repeat(300) } });
});

test('storage: indexeddb: a torn tail in the stored log is cut at open, as on OPFS', async ({ page, watched }) => {
  void watched;
  const name = uniqueName('idb-torn');
  await gotoPlayground(page);
  const out = await page.evaluate(async (name) => {
    const w = window as any;
    let db = await w.ibexdb.open(name, { storage: 'indexeddb', trusted: true });
    for (let i = 0; i < 20; i++) await db.put(`items/${i}`, { i });
    await db.close();
    // Half a frame after the last one, straight into the stored log: its size record and the
    // chunk it ends in (the layout of backends/indexeddb.js).
    const idb: IDBDatabase = await new Promise((res, rej) => {
      const r = indexedDB.open(`ibexdb/${name}`);
      r.onsuccess = () => res(r.result);
      r.onerror = () => rej(r.error);
    });
    const tx = idb.transaction('files', 'readwrite');
    const store = tx.objectStore('files');
    const size: number = await new Promise((res) => (store.get(['log', -1]).onsuccess = (e: any) => res(e.target.result)));
    const CHUNK = 65536;
    const i = Math.floor(size / CHUNK);
    const chunk: Uint8Array = await new Promise((res) => (store.get(['log', i]).onsuccess = (e: any) => res(e.target.result ?? new Uint8Array(0))));
    const torn = new Uint8Array(size - i * CHUNK + 11);
    torn.set(chunk.subarray(0, size - i * CHUNK));
    torn.set([40, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7], size - i * CHUNK); // a length that promises more than there is
    store.put(torn, ['log', i]);
    store.put(size + 11, ['log', -1]);
    // Count the repository's generation, as a write from another context does: else the worker
    // that closed it opens it again from the bytes it kept (backends/indexeddb.js) and never
    // reads the torn log.
    const gen = store.get('generation');
    gen.onsuccess = () => store.put((gen.result ?? 0) + 1, 'generation');
    await new Promise((res) => (tx.oncomplete = res));
    idb.close();
    db = await w.ibexdb.open(name, { storage: 'indexeddb', trusted: true });
    const r: any = { count: await db.count('items'), logBytes: (await db.storageInfo()).repository.logBytes, size };
    await db.put('items/after', { ok: true });
    await db.close();
    db = await w.ibexdb.open(name, { storage: 'indexeddb', trusted: true });
    r.after = await db.get('items/after');
    r.count2 = await db.count('items');
    r.verified = (await db.verify()).items;
    await db.close();
    return r;
  }, name);
  expect(out.count).toBe(20);
  expect(out.logBytes).toBe(out.size); // the torn bytes were cut
  expect(out.after).toEqual({ ok: true });
  expect(out.count2).toBe(21);
  expect(out.verified).toBe(21);
});

test('storage: indexeddb: two tabs share the repository, the survivor takes over', async ({ context, page, watched, browserName }) => {
  void watched;
  const name = uniqueName('idb-tabs');
  await gotoPlayground(page);
  const pageB = await context.newPage();
  const wB = watch(pageB, 'tab B');
  await gotoPlayground(pageB);
  const a = await page.evaluate(async (name) => {
    const w = window as any;
    w.db = await w.ibexdb.open(name, { storage: 'indexeddb' });
    await w.db.put('items/a1', { n: 1 });
    return { role: w.db.role, storage: w.db.storage };
  }, name);
  const b = await pageB.evaluate(async (name) => {
    const w = window as any;
    w.db = await w.ibexdb.open(name); // 'auto' joins the owner's storage
    await Promise.all(Array.from({ length: 30 }, (_, i) => w.db.put(`items/b${i}`, { n: 100 + i })));
    return { role: w.db.role, storage: w.db.storage, a1: await w.db.get('items/a1') };
  }, name);
  expect(a).toEqual({ role: 'owner', storage: 'indexeddb' });
  expect(b).toEqual({ role: 'client', storage: 'indexeddb', a1: { n: 1 } });
  // A tab that insists on another storage is told, with a typed error.
  const mismatch = await pageB.evaluate(async (name) => {
    try {
      await (window as any).ibexdb.open(name, { storage: 'opfs' });
      return null;
    } catch (e: any) {
      return { name: e.name, kind: e.kind };
    }
  }, name);
  // WebKitGTK has no OPFS at all: that is what the refusal names first.
  expect(mismatch).toEqual({ name: 'StorageUnavailableError', kind: browserName === 'webkit' ? 'opfs' : 'storage-mismatch' });
  await page.close();
  const out = await pageB.evaluate(async () => {
    const w = window as any;
    await w.db.put('items/b-last', { n: 1000 });
    const r = { role: w.db.role, count: await w.db.count('items'), verify: (await w.db.verify()).items };
    await w.db.close();
    return r;
  });
  expect(out).toEqual({ role: 'owner', count: 32, verify: 32 });
  expect(wB.problems, wB.log.join('\n')).toEqual([]);
});

test('storage: indexeddb: out of the origin quota, writes fail with QuotaExceededError and nothing acknowledged is lost', async ({ page, watched, browserName }) => {
  test.skip(browserName !== 'chromium', "sets the origin's quota through Chromium's CDP (Storage.overrideQuotaForOrigin); Firefox and WebKit have no per-origin quota a test can set (quota.spec.ts runs the engine's byte limit in every browser)");
  void watched;
  const name = uniqueName('idb-quota');
  await gotoPlayground(page);
  const origin = new URL(page.url()).origin;
  const cdp = await page.context().newCDPSession(page);
  // The origin's quota, as the browser enforces it for IndexedDB (and OPFS).
  await cdp.send('Storage.overrideQuotaForOrigin', { origin, quotaSize: 3 * 1024 * 1024 });
  try {
    const out = await page.evaluate(async (name) => {
      const db = await (window as any).ibexdb.open(name, { storage: 'indexeddb', trusted: true });
      const acked: string[] = [];
      let error: any = null;
      for (let i = 0; i < 400 && !error; i++) {
        try {
          // Random text: Chromium compresses what IndexedDB stores, so repeated bytes would not fill it.
          const text = Array.from(crypto.getRandomValues(new Uint32Array(2500)), (n) => n.toString(36)).join('');
          await db.put(`items/${i}`, { text });
          acked.push(`items/${i}`);
        } catch (e: any) {
          error = { name: e.name, message: e.message, isStorageError: e instanceof (window as any).ibexdb.StorageError };
        }
      }
      // The database goes on after the failure: reads work, from what is durable.
      const count = await db.count('items');
      await db.close().catch(() => {});
      return { acked: acked.length, error, count };
    }, name);
    expect(out.error?.name, JSON.stringify(out.error)).toBe('QuotaExceededError');
    expect(out.error.isStorageError).toBe(true);
    expect(out.acked).toBeGreaterThan(10);
    expect(out.count).toBe(out.acked);
  } finally {
    await cdp.send('Storage.overrideQuotaForOrigin', { origin }).catch(() => {});
  }
  // With room again, everything acknowledged is there.
  const count = await page.evaluate(async (name) => {
    const db = await (window as any).ibexdb.open(name, { storage: 'indexeddb', trusted: true });
    const n = await db.count('items');
    await db.close();
    return n;
  }, name);
  expect(count).toBeGreaterThan(10);
});

test("storage: 'auto' falls back to IndexedDB where workers have no createSyncAccessHandle", async ({ page, watched, browserName }) => {
  void watched;
  // WebKitGTK is such a browser (its createSyncAccessHandle and OPFS root fail): nothing to delete.
  const route = browserName !== 'webkit';
  // Browsers without sync access handles (WebKitGTK, older Safari): delete the method before the
  // worker runs (an init script of the page does not reach workers, so the worker's module is
  // served with the deletion in front of it).
  if (route) await page.route('**/www/lib/worker.js', async (route) => {
    // The served response (its COOP/COEP headers: a worker of an isolated page needs them), with
    // the deletion in front. Same URL: the module's relative imports resolve as before.
    const response = await route.fetch();
    await route.fulfill({ response, body: `delete FileSystemFileHandle.prototype.createSyncAccessHandle;\n${await response.text()}` });
  });
  const name = uniqueName('auto');
  await gotoPlayground(page);
  const out = await page.evaluate(async (name) => {
    const db = await (window as any).ibexdb.open(name);
    await db.put('items/1', { n: 1 });
    const r = { storage: db.storage, n: await db.get('items/1') };
    await db.close();
    const forced = await (window as any).ibexdb.open(name, { storage: 'opfs' }).then(
      () => null,
      (e: any) => ({ name: e.name, kind: e.kind }),
    );
    return { ...r, forced };
  }, name);
  expect(out.storage).toBe('indexeddb');
  expect(out.n).toEqual({ n: 1 });
  // Without the method: 'no-opfs'; WebKitGTK has it, and its OPFS root fails: 'opfs' (its error named).
  expect(out.forced).toEqual({ name: 'StorageUnavailableError', kind: route ? 'no-opfs' : 'opfs' });
  expect(await idbNames(page)).toContain(`ibexdb/${name}`);
  if (route) await page.unroute('**/www/lib/worker.js');
});

test("storage: 'auto' is OPFS where sync access handles work", async ({ page, watched, browserName }) => {
  test.skip(browserName === 'webkit', WEBKIT_CANNOT.opfs);
  void watched;
  const name = uniqueName('auto-opfs');
  await gotoPlayground(page);
  const storage = await page.evaluate(async (name) => {
    const db = await (window as any).ibexdb.open(name);
    await db.put('items/1', { n: 1 });
    await db.close();
    return db.storage;
  }, name);
  expect(storage).toBe('opfs');
  expect(await inOpfs(page, name)).toBe(true);
});

test('storage: memory keeps nothing after close, and tabs do not share it', async ({ context, page, watched }) => {
  void watched;
  const name = uniqueName('mem');
  await gotoPlayground(page);
  const pageB = await context.newPage();
  const wB = watch(pageB, 'tab B');
  await gotoPlayground(pageB);
  const a = await page.evaluate(async (name) => {
    const w = window as any;
    w.db = await w.ibexdb.open(name, { storage: 'memory' });
    for (let i = 0; i < 50; i++) await w.db.put(`items/${i}`, { i });
    return { storage: w.db.storage, role: w.db.role, count: await w.db.count('items'), q: (await w.db.query({ collection: 'items', where: { i: { gte: 48 } } })).length };
  }, name);
  expect(a).toEqual({ storage: 'memory', role: 'owner', count: 50, q: 2 });
  const b = await pageB.evaluate(async (name) => {
    const db = await (window as any).ibexdb.open(name, { storage: 'memory' });
    const r = { role: db.role, count: await db.count('items') };
    await db.close();
    return r;
  }, name);
  expect(b).toEqual({ role: 'owner', count: 0 });
  const after = await page.evaluate(async (name) => {
    const w = window as any;
    await w.db.close();
    const db = await w.ibexdb.open(name, { storage: 'memory' });
    const n = await db.count('items');
    await db.close();
    return n;
  }, name);
  expect(after).toBe(0);
  expect(await inOpfs(page, name)).toBe(false);
  expect(await idbNames(page)).not.toContain(`ibexdb/${name}`);
  expect(wB.problems, wB.log.join('\n')).toEqual([]);
});

test('storage: an unknown value is an InvalidValueError naming options.storage', async ({ page, watched }) => {
  void watched;
  await gotoPlayground(page);
  const err = await page.evaluate(async () =>
    (window as any).ibexdb.open('x', { storage: 'disk' }).then(
      () => null,
      (e: any) => ({ name: e.name, path: e.path, message: e.message }),
    ),
  );
  expect(err?.name).toBe('InvalidValueError');
  expect(err?.path).toBe('options.storage');
  expect(err?.message).toMatch(/'auto', 'opfs', 'indexeddb' or 'memory'/);
});

test("storage: memory works where the browser keeps no site data (OPFS and IndexedDB refused)", async ({ baseURL, browserName }) => {
  test.skip(browserName !== 'chromium', 'launches Chromium with site data blocked through its profile (its own flags, as environments.spec.ts)');
  // Cookies and site data blocked for every site, as environments.spec.ts does it: the default
  // storage fails with a StorageUnavailableError that says so; 'memory' opens and works.
  const profile = mkdtempSync(path.join(tmpdir(), 'ibexdb-profile-'));
  mkdirSync(path.join(profile, 'Default'));
  writeFileSync(path.join(profile, 'Default/Preferences'), JSON.stringify({ profile: { default_content_setting_values: { cookies: 2 } } }));
  const context = await chromium.launchPersistentContext(profile, { executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS, headless: true, baseURL });
  try {
    const page = context.pages()[0] ?? (await context.newPage());
    const w = watch(page);
    await gotoPlayground(page);
    const out = await page.evaluate(async (name) => {
      const { open } = (window as any).ibexdb;
      const refused = await open(name).then(
        () => null,
        (e: any) => ({ name: e.name, kind: e.kind }),
      );
      const idb = await open(name, { storage: 'indexeddb' }).then(
        () => null,
        (e: any) => ({ name: e.name, kind: e.kind }),
      );
      const db = await open(name, { storage: 'memory' });
      await db.put('items/1', { n: 1 });
      const r = { refused, idb, storage: db.storage, item: await db.get('items/1'), verify: (await db.verify()).items };
      await db.close();
      return r;
    }, uniqueName('private'));
    expect(out.refused).toEqual({ name: 'StorageUnavailableError', kind: 'storage-denied' });
    expect(out.idb).toEqual({ name: 'StorageUnavailableError', kind: 'storage-denied' });
    expect(out).toMatchObject({ storage: 'memory', item: { n: 1 }, verify: 1 });
    expect(w.problems, w.log.join('\n')).toEqual([]);
  } finally {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  }
});

test('storage: indexeddb: a reopen in the same worker takes the bytes it kept, unless another context wrote since', async ({ page, watched }) => {
  void watched;
  const name = uniqueName('idb-keep');
  await gotoPlayground(page);
  await installRunWorker(page);
  const out = await page.evaluate(async (name) => {
    const run = (window as any).__runWorker;
    const keeper = run(`
      const name = ${JSON.stringify(name)};
      const o = { storage: 'indexeddb' };
      const r = {};
      try {
        let eng = await E.openEngine(name, o);
        for (let i = 0; i < 300; i++) eng.put('items/' + i, { i, text: 'x'.repeat(500) });
        eng.flush();
        await eng.close();
        r.keptAfterClose = I.keptFiles(name);
        eng = await E.openEngine(name, o);
        r.keptWhileOpen = I.keptFiles(name);
        r.reopened = eng.count('items');
        eng.put('items/kept', { by: 'keeper' });
        eng.flush();
        await eng.close();
        await next(postMessage({ stage: 'kept' })); // another worker writes to the repository
        eng = await E.openEngine(name, o);
        r.afterOtherWrote = [eng.count('items'), eng.get('items/kept') ?? null, eng.get('items/other') ?? null];
        r.verify = JSON.parse(eng.verifyJson()).commits;
        await eng.close();
        await next(postMessage({ stage: 'closed' })); // the page removes the repository
        eng = await E.openEngine(name, o);
        r.afterRemoval = eng.count('items');
        await eng.close();
        postMessage({ done: r });
      } catch (e) { postMessage({ error: String(e?.name) + ': ' + String(e?.message) }); }`, async (m: any) => {
      if (m.stage === 'kept') {
        const other = run(`
          const eng = await E.openEngine(${JSON.stringify(name)}, { storage: 'indexeddb' });
          eng.put('items/other', { by: 'other' });
          eng.flush();
          await eng.close();
          postMessage({ done: true });`, async () => null);
        await other.done;
        other.worker.terminate();
      } else {
        await (await import(`${location.origin}/www/lib/storage.js`)).BACKENDS.indexeddb.removeRepository(name);
      }
      return 'go';
    });
    try {
      return await keeper.done;
    } finally {
      keeper.worker.terminate();
    }
  }, name);
  expect(out).toEqual({
    keptAfterClose: ['identity', 'log', 'snapshot'],
    keptWhileOpen: ['identity'], // read at the open, then kept again
    reopened: 300,
    afterOtherWrote: [302, { by: 'keeper' }, { by: 'other' }],
    verify: 302, // every put a commit, all signed and checked
    afterRemoval: 0,
  });
});
