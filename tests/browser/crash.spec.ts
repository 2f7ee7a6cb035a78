// Kill the browser process (SIGKILL) during a stream of durable writes; relaunch on the same
// profile: every acknowledged write is there and verify() passes. With each storage backend that
// keeps data: OPFS (sync access handles) and IndexedDB (storage.spec.ts has the rest of it).
import { type BrowserContext } from '@playwright/test';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test, expect, gotoPlayground, launchProfile, uniqueName, watch, WEBKIT_CANNOT } from './ibexdb.fixtures';

/**
 * The browser's main process on profile `dir` (not a renderer, GPU or utility process):
 * Chromium's is launched with `--user-data-dir=<dir>`; Firefox's with `--profile <dir>` (its own
 * binary, not the node launcher scripts/firefox-bidi.mjs that starts it with the same arguments).
 */
function browserPid(dir: string): number {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let cmd: string;
    try {
      cmd = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    const args = cmd.split('\0');
    if (args.includes(`--user-data-dir=${dir}`) && !args.some((a) => a.startsWith('--type='))) return Number(entry);
    const profile = args.indexOf('--profile');
    if (profile > 0 && args[profile + 1] === dir && /firefox[^/]*$/.test(args[0])) return Number(entry);
  }
  throw new Error(`no browser process found for ${dir}`);
}

for (const storage of ['opfs', 'indexeddb'] as const) test(`acknowledged durable writes survive a browser kill (storage: ${storage})`, async ({ baseURL, playwright, browserName, launchOptions, channel }) => {
  test.skip(browserName === 'webkit', WEBKIT_CANNOT.relaunch);
  const dir = mkdtempSync(path.join(tmpdir(), 'ibexdb-crash-'));
  const name = uniqueName('crash');
  const launch = () => launchProfile({ playwright, browserName, launchOptions, channel }, dir, baseURL);
  let ctx: BrowserContext | null = null;
  try {
    ctx = await launch();
    const page = ctx.pages()[0] ?? (await ctx.newPage());
    const w = watch(page);
    const acked = new Set<string>();
    let resolveEnough: () => void = () => {};
    const enough = new Promise<void>((r) => (resolveEnough = r));
    page.on('console', (m) => {
      const t = m.text();
      if (!t.startsWith('ack ')) return;
      for (const k of t.slice(4).split(',')) acked.add(k);
      if (acked.size >= 400) resolveEnough();
    });
    await gotoPlayground(page);
    // Single writes and groups of 5 in one tick (one group commit), acknowledged when durable.
    void page.evaluate(async ([name, storage]) => {
      const db = await (window as any).ibexdb.open(name, { durability: 'flush', storage });
      if (db.storage !== storage) throw new Error(`storage ${db.storage}, not ${storage}`);
      for (let i = 0; ; i++) {
        if (i % 2 === 0) {
          await db.put(`items/s${i}`, { i, text: 'x'.repeat(i % 300) });
          console.log(`ack s${i}`);
        } else {
          const keys = [0, 1, 2, 3, 4].map((j) => `items/g${i}-${j}`);
          await Promise.all(keys.map((k) => db.put(k, { i })));
          console.log(`ack ${keys.map((k) => k.slice(6)).join(',')}`);
        }
      }
    }, [name, storage] as const).catch(() => {});
    await enough;
    expect(w.problems, w.log.join('\n')).toEqual([]);
    process.kill(browserPid(dir), 'SIGKILL');
    await ctx.close().catch(() => {});
    ctx = null;
    const killedAfter = acked.size;

    ctx = await launch();
    const page2 = ctx.pages()[0] ?? (await ctx.newPage());
    const w2 = watch(page2);
    await gotoPlayground(page2);
    const keys = [...acked].map((k) => `items/${k}`);
    const out = await page2.evaluate(async ([name, keys, storage]) => {
      const db = await (window as any).ibexdb.open(name as string, { storage });
      const got = await db.getMany(keys);
      const missing = (keys as string[]).filter((_, i) => got[i] === undefined);
      const verify = await db.verify();
      const count = await db.count('items');
      await db.close();
      return { missing, verify, count };
    }, [name, keys, storage] as const);
    expect(w2.problems, w2.log.join('\n')).toEqual([]);
    expect(out.missing).toEqual([]);
    expect(out.count).toBeGreaterThanOrEqual(killedAfter);
    expect(out.verify.items).toBe(out.count);
  } finally {
    await ctx?.close().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
});

test('acknowledged durable writes survive a killed web process (WebKitGTK; storage: indexeddb)', async ({ context, page, browserName }) => {
  test.skip(browserName !== 'webkit', 'WebKitGTK only: there the browser cannot be relaunched on a profile (the test above), so its web process (the page and its workers) is killed instead; Chromium and Firefox run the browser kill above');
  const name = uniqueName('crash-web');
  await gotoPlayground(page);
  // The stream of durable writes runs on in the page; this evaluate returns once it has started.
  const storage = await page.evaluate(async (name) => {
    const w = window as any;
    w.acked = [];
    const db = await w.ibexdb.open(name, { durability: 'flush' });
    void (async () => {
      for (let i = 0; ; i++) {
        if (i % 2 === 0) {
          await db.put(`items/s${i}`, { i, text: 'x'.repeat(i % 300) });
          w.acked.push(`s${i}`);
        } else {
          const keys = [0, 1, 2, 3, 4].map((j) => `items/g${i}-${j}`);
          await Promise.all(keys.map((k) => db.put(k, { i })));
          w.acked.push(...keys.map((k) => k.slice(6)));
        }
      }
    })();
    return db.storage;
  }, name);
  expect(storage).toBe('indexeddb');
  await expect.poll(() => page.evaluate(() => (window as any).acked.length), { timeout: 60_000 }).toBeGreaterThanOrEqual(400);
  const acked: string[] = await page.evaluate(() => [...(window as any).acked]);
  expect(await (page as any).killWebProcesses()).toBeGreaterThan(0);
  // A new tab, as its user opens after the crash: a new web process; the network process kept
  // the IndexedDB store (and the dead process's Web Lock is gone with it). WebKitWebDriver ends
  // a session whose page crashed: the tab is a window of a new session on the same browser.
  const page2 = await context.newPage();
  await gotoPlayground(page2);
  const keys = acked.map((k) => `items/${k}`);
  const out = await page2.evaluate(async ([name, keys]) => {
    const db = await (window as any).ibexdb.open(name as string);
    const got = await db.getMany(keys);
    const missing = (keys as string[]).filter((_, i) => got[i] === undefined);
    const r = { storage: db.storage, missing, verify: await db.verify(), count: await db.count('items') };
    await db.close();
    return r;
  }, [name, keys] as const);
  expect(out.storage).toBe('indexeddb');
  expect(out.missing).toEqual([]);
  expect(out.count).toBeGreaterThanOrEqual(acked.length);
  expect(out.verify.items).toBe(out.count);
});
