// Sync through the real ibexdb-server binary on 127.0.0.1 (protocol v5: signed challenge
// handshake, permissions). Separate browser contexts have separate OPFS, i.e. separate
// devices with their own keys: the first context's first write makes its key the repository's
// owner; the others join with `db.sync()` and write once granted.
// The server binary is target/release/ibexdb-server (`make test` builds it first) or
// $IBEXDB_SERVER.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { Page } from '@playwright/test';
import { test, expect, gotoPlayground, uniqueName, watch } from './ibexdb.fixtures';

const SERVER = process.env.IBEXDB_SERVER ?? path.resolve('target/release/ibexdb-server');

interface Server {
  url: string;
  proc: ChildProcess;
  dir: string;
}

async function spawnServer(dir: string, listen: string): Promise<{ proc: ChildProcess; addr: string }> {
  const proc = spawn(SERVER, ['--data', dir, '--listen', listen], { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve, reject) => {
    proc.once('error', reject);
    proc.once('exit', (code) => reject(new Error(`ibexdb-server exited with ${code} (built? ${SERVER})`)));
    createInterface({ input: proc.stdout! }).once('line', resolve);
  });
  const m = /listening on (\S+)/.exec(line);
  if (!m) throw new Error(`unexpected server output: ${line}`);
  return { proc, addr: m[1] };
}

async function startServer(): Promise<Server> {
  const dir = mkdtempSync(path.join(tmpdir(), 'ibexdb-sync-'));
  const { proc, addr } = await spawnServer(dir, '127.0.0.1:0');
  return { url: `ws://${addr}`, proc, dir };
}

function stopServer(server: Server) {
  server.proc.kill('SIGKILL');
  rmSync(server.dir, { recursive: true, force: true });
}

/** Open `name` on `page` as `window.db`, syncing with `url` (not waiting for the server). */
async function openSynced(page: Page, name: string, url: string | null) {
  await page.evaluate(
    async ([name, url]) => {
      const w = window as any;
      w.db = await w.ibexdb.open(name, url ? { sync: url } : {});
      w.events = [];
      w.db.onSyncStatus((s: any) => w.events.push({ state: s.state, error: s.lastError?.name ?? null, kind: s.lastError?.kind ?? null }));
    },
    [name, url],
  );
}

/** A live query on `window.lq` recording when each id first appeared (`window.seen`). */
async function watchItems(page: Page) {
  await page.evaluate(async () => {
    const w = window as any;
    w.seen = {};
    w.lq = await w.db.live({ collection: 'items' }, (rows: any[]) => {
      const now = performance.timeOrigin + performance.now();
      for (const r of rows) if (!(r.id in w.seen)) w.seen[r.id] = now;
    });
  });
}

const syncNow = (page: Page) => page.evaluate(() => (window as any).db.sync());
const status = (page: Page) => page.evaluate(() => (window as any).db.syncStatus());

test('two browsers sync through the server; live query latency', async ({ browser, page, watched }) => {
  void watched;
  const server = await startServer();
  const ctxB = await browser.newContext();
  try {
    const pageB = await ctxB.newPage();
    const wB = watch(pageB, 'browser B');
    const name = uniqueName('sync');
    await gotoPlayground(page);
    await gotoPlayground(pageB);

    // A creates the repository (its first write makes it the owner) and waits for the server.
    await openSynced(page, name, server.url);
    await page.evaluate(() => (window as any).db.put('items/first', { from: 'A', n: 0 }));
    await syncNow(page);
    const members = await page.evaluate(() => (window as any).db.members());
    const keyA = await page.evaluate(() => (window as any).db.publicKey);
    // What the engine holds when it is not owned (the failure's message): its first commit lacked the founding claim, or is gone.
    const why = members.owned ? '' : JSON.stringify(await page.evaluate(async () => { const db = (window as any).db; return { first: await db.get('items/first'), status: await db.syncStatus(), events: (window as any).events }; }));
    expect(members, why).toEqual({ owned: true, public: { read: false, write: false }, members: [{ publicKey: keyA, role: 'owner' }] });

    // B joins: owners decide who may read, so A grants B first (B tells its key).
    await openSynced(pageB, name, server.url);
    const keyB = await pageB.evaluate(() => (window as any).db.publicKey);
    expect(keyB).toMatch(/^[0-9a-f]{98}$/);
    await page.evaluate((k) => (window as any).db.grant(k, 'writer'), keyB);
    await syncNow(page);
    await syncNow(pageB);
    await watchItems(pageB);
    expect(await pageB.evaluate(() => (window as any).db.get('items/first'))).toEqual({ from: 'A', n: 0 });
    const stB0 = await status(pageB);
    expect(stB0.state).toBe('synced');
    expect(stB0.rights).toEqual({ read: true, write: true, administer: false });

    // Latency: one write at a time on A, timed until it shows in B's live query.
    const N = 40;
    const lat: number[] = [];
    for (let i = 0; i < N; i++) {
      const t0 = await page.evaluate(async (i) => {
        const w = window as any;
        const t0 = performance.timeOrigin + performance.now();
        await w.db.put(`items/k${i}`, { from: 'A', n: i });
        return t0;
      }, i);
      const handle = await pageB.waitForFunction((id) => (window as any).seen[id], `k${i}`, { polling: 'raf', timeout: 15_000 });
      lat.push((await handle.jsonValue()) - t0);
    }
    lat.sort((a, b) => a - b);
    const q = (p: number) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))];
    console.log(
      `sync latency A put -> B live query, n=${N}: p50 ${q(0.5).toFixed(1)} ms, p95 ${q(0.95).toFixed(1)} ms, ` +
        `min ${lat[0].toFixed(1)} ms, max ${lat[lat.length - 1].toFixed(1)} ms`,
    );
    expect(q(0.5)).toBeLessThan(500);

    // The other way round, and both converge on the same items.
    await pageB.evaluate(() => (window as any).db.put('items/fromB', { from: 'B', n: 99 }));
    await syncNow(pageB);
    await expect.poll(() => page.evaluate(() => (window as any).db.get('items/fromB')), { timeout: 15_000 }).toEqual({ from: 'B', n: 99 });
    const keysA = await page.evaluate(() => (window as any).db.keys('items'));
    await expect.poll(() => pageB.evaluate(() => (window as any).db.keys('items'))).toEqual(keysA);
    expect(keysA.length).toBe(N + 2);

    // Commits: A's first (with the founding claim), the grant, N puts, B's put.
    const commits = N + 3;
    const st = await status(pageB);
    expect(st.state).toBe('synced');
    expect(st.cursor).toBe(commits);
    expect(st.pending).toBe(0);
    expect(st.lastError).toBeNull();
    await syncNow(page);
    const stA = await status(page);
    expect(stA.acked).toBe(N + 2);
    expect(stA.state).toBe('synced');
    const states = await page.evaluate(() => (window as any).events.map((e: any) => e.state));
    expect(states).toContain('syncing');
    expect(states).toContain('synced');

    // Both repositories still verify (every signature, every hash).
    expect((await page.evaluate(() => (window as any).db.verify())).commits).toBe(commits);
    expect((await pageB.evaluate(() => (window as any).db.verify())).commits).toBe(commits);
    expect(wB.problems).toEqual([]);
    await page.evaluate(() => (window as any).db.close());
    await pageB.evaluate(() => (window as any).db.close());
  } finally {
    await ctxB.close();
    stopServer(server);
  }
});

test('permissions: a granted writer syncs; as a reader its edits are refused with PermissionError', async ({ browser, page, watched }) => {
  void watched;
  const server = await startServer();
  const ctxB = await browser.newContext();
  try {
    const pageB = await ctxB.newPage();
    const wB = watch(pageB, 'browser B');
    const name = uniqueName('acl');
    await gotoPlayground(page);
    await gotoPlayground(pageB);
    await openSynced(page, name, server.url);
    await page.evaluate(() => (window as any).db.put('items/a1', { from: 'A' }));
    await syncNow(page);
    await watchItems(page);

    // B (no role yet) may not even read: the server refuses its session.
    await openSynced(pageB, name, server.url);
    const keyB = await pageB.evaluate(() => (window as any).db.publicKey);
    const refused = await pageB.evaluate(() =>
      (window as any).db.sync().then(
        () => null,
        (e: any) => ({ isClass: e instanceof (window as any).ibexdb.PermissionError, name: e.name, kind: e.kind }),
      ),
    );
    expect(refused).toEqual({ isClass: true, name: 'PermissionError', kind: 'cannot-read' });

    // Granted writer: B's next try (db.sync() asks again at once) is welcomed; its edits reach A's live query.
    await page.evaluate((k) => (window as any).db.grant(k, 'writer'), keyB);
    await syncNow(page);
    await syncNow(pageB);
    expect(await pageB.evaluate(() => (window as any).db.get('items/a1'))).toEqual({ from: 'A' });
    await pageB.evaluate(() => (window as any).db.put('items/b1', { from: 'B' }));
    await page.waitForFunction(() => 'b1' in (window as any).seen, null, { timeout: 15_000 });
    expect(await page.evaluate(() => (window as any).lq.results.map((r: any) => r.id))).toEqual(['a1', 'b1']);

    // B goes offline; A makes it a reader; B edits offline (its replica does not know yet).
    await pageB.evaluate(() => (window as any).db.sync(null));
    await page.evaluate((k) => (window as any).db.grant(k, 'reader'), keyB);
    await syncNow(page);
    await pageB.evaluate(() => (window as any).db.put('items/b2', { from: 'B offline' }));
    // Back online: the server refuses the push; the page gets PermissionError, as the rejection
    // of db.sync(), in the status and as a status event.
    const pushRefused = await pageB.evaluate(
      (url) =>
        (window as any).db.sync(url).then(
          () => null,
          (e: any) => ({ isClass: e instanceof (window as any).ibexdb.PermissionError, name: e.name, kind: e.kind, code: e.code }),
        ),
      server.url,
    );
    expect(pushRefused).toEqual({ isClass: true, name: 'PermissionError', kind: 'cannot-write', code: 8 });
    const stB = await status(pageB);
    expect(stB.state).toBe('error');
    expect(await pageB.evaluate(async () => (await (window as any).db.syncStatus()).lastError instanceof (window as any).ibexdb.PermissionError)).toBe(true);
    expect(await pageB.evaluate(() => (window as any).events)).toContainEqual({ state: 'error', error: 'PermissionError', kind: 'cannot-write' });
    // Not retried in a loop: no further pushes while nothing changes.
    await page.waitForTimeout(1500);
    expect((await status(pageB)).pushed).toBe(stB.pushed);
    // B's replica now knows it is a reader: a later edit is refused locally, at once.
    await expect.poll(async () => (await pageB.evaluate(() => (window as any).db.members())).members.find((m: any) => m.role === 'reader')?.publicKey).toBe(keyB);
    const local = await pageB.evaluate(() =>
      (window as any).db.put('items/b3', { from: 'B' }).then(
        () => null,
        (e: any) => ({ isClass: e instanceof (window as any).ibexdb.PermissionError, name: e.name, kind: e.kind }),
      ),
    );
    expect(local).toEqual({ isClass: true, name: 'PermissionError', kind: 'cannot-write' });

    // The owner's data is unchanged: B's refused edit never arrived.
    await page.waitForTimeout(300);
    expect(await page.evaluate(() => (window as any).db.keys('items'))).toEqual(['a1', 'b1']);
    expect(await page.evaluate(() => (window as any).lq.results.map((r: any) => r.id))).toEqual(['a1', 'b1']);
    expect((await page.evaluate(() => (window as any).db.verify())).commits).toBe(4);

    // Revoked altogether: the server closes B's session with PermissionError (cannot-read).
    await page.evaluate((k) => (window as any).db.revoke(k), keyB);
    await syncNow(page);
    await expect
      .poll(async () => pageB.evaluate(async () => {
        const s = await (window as any).db.syncStatus();
        return [s.state, s.lastError?.name, s.lastError?.kind];
      }), { timeout: 15_000 })
      .toEqual(['error', 'PermissionError', 'cannot-read']);
    expect(wB.problems).toEqual([]);
    await page.evaluate(() => (window as any).db.close());
    await pageB.evaluate(() => (window as any).db.close());
  } finally {
    await ctxB.close();
    stopServer(server);
  }
});

test('a reload resumes from the persisted cursor without downloading the history again', async ({ browser, page, watched }) => {
  void watched;
  const server = await startServer();
  const ctxB = await browser.newContext();
  try {
    const pageB = await ctxB.newPage();
    const name = uniqueName('resume');
    await gotoPlayground(page);
    await gotoPlayground(pageB);
    await openSynced(page, name, server.url);
    await page.evaluate(async () => {
      const w = window as any;
      for (let i = 0; i < 30; i++) await w.db.put(`items/h${i}`, { n: i });
    });
    await syncNow(page);

    await openSynced(pageB, name, server.url);
    await page.evaluate((k) => (window as any).db.grant(k, 'reader'), await pageB.evaluate(() => (window as any).db.publicKey));
    await syncNow(page);
    await syncNow(pageB);
    const before = await status(pageB);
    expect(before.cursor).toBe(31);
    expect(before.received).toBe(31);
    // The position is written with the repository shortly after the received commits are flushed.
    await expect.poll(async () => (await status(pageB)).saved, { timeout: 10_000 }).toEqual({ cursor: 31, pushFrom: 31 });

    // Reload: the new worker resumes from the saved cursor; the server sends nothing old.
    await pageB.reload();
    await pageB.waitForSelector('body[data-ready="1"]');
    await openSynced(pageB, name, server.url);
    await syncNow(pageB);
    const after = await status(pageB);
    expect(after.cursor).toBe(31);
    expect(after.received).toBe(0);
    expect(await pageB.evaluate(() => (window as any).db.count('items'))).toBe(30);
    // New commits still arrive, and only they.
    await page.evaluate(() => (window as any).db.put('items/new', { n: 99 }));
    await expect.poll(() => pageB.evaluate(() => (window as any).db.get('items/new')), { timeout: 15_000 }).toEqual({ n: 99 });
    expect((await status(pageB)).received).toBe(1);

    // A new tab in the same browser resumes likewise (it reads the same sync file).
    await pageB.evaluate(() => (window as any).db.close());
    const pageB2 = await ctxB.newPage();
    await gotoPlayground(pageB2);
    await openSynced(pageB2, name, server.url);
    await syncNow(pageB2);
    const third = await status(pageB2);
    expect(third.cursor).toBe(32);
    expect(third.received).toBe(0);
    await pageB2.evaluate(() => (window as any).db.close());
    await page.evaluate(() => (window as any).db.close());
  } finally {
    await ctxB.close();
    stopServer(server);
  }
});

test('a tab that takes over ownership keeps syncing without a db.sync() call', async ({ browser, context, page, watched }) => {
  void watched;
  const server = await startServer();
  const ctxB = await browser.newContext();
  try {
    const pageB = await ctxB.newPage();
    const name = uniqueName('takeover');
    await gotoPlayground(page);
    await gotoPlayground(pageB);
    // Tab 1 owns the files and syncs; tab 2 (same browser, same OPFS) opens without `sync`.
    await openSynced(page, name, server.url);
    await page.evaluate(() => (window as any).db.put('items/t1', { from: 'tab 1' }));
    const page2 = await context.newPage();
    const w2 = watch(page2, 'tab 2');
    await gotoPlayground(page2);
    await openSynced(page2, name, null);
    expect(await page2.evaluate(() => (window as any).db.role)).toBe('client');
    await watchItems(page2);

    await openSynced(pageB, name, server.url);
    await page.evaluate((k) => (window as any).db.grant(k, 'writer'), await pageB.evaluate(() => (window as any).db.publicKey));
    await syncNow(page);
    await syncNow(pageB);
    await watchItems(pageB);
    expect(Object.keys(await pageB.evaluate(() => (window as any).seen))).toEqual(['t1']);
    // Tab 2 sees sync's status through the owner.
    expect((await status(page2)).state).toBe('synced');

    // The owning tab goes away.
    await page.close();
    await expect.poll(() => page2.evaluate(() => (window as any).db.role), { timeout: 15_000 }).toBe('owner');
    // Tab 2's worker resumed sync by itself: B's edit reaches its live query, and its edit reaches B.
    await pageB.evaluate(() => (window as any).db.put('items/fromB', { from: 'B' }));
    await page2.waitForFunction(() => 'fromB' in (window as any).seen, null, { timeout: 20_000 });
    await page2.evaluate(() => (window as any).db.put('items/t2', { from: 'tab 2' }));
    await pageB.waitForFunction(() => 't2' in (window as any).seen, null, { timeout: 20_000 });
    const st = await status(page2);
    expect(st.url).toBe(new URL(server.url).href);
    expect(['syncing', 'synced']).toContain(st.state);
    expect(await page2.evaluate(() => (window as any).events.map((e: any) => e.state))).toContain('synced');
    expect(w2.problems).toEqual([]);
    await page2.evaluate(() => (window as any).db.close());
    await pageB.evaluate(() => (window as any).db.close());
  } finally {
    await ctxB.close();
    stopServer(server);
  }
});

test('sync reconnects after the server restarts and resumes', async ({ browser, page, watched }) => {
  void watched;
  let server = await startServer();
  const ctxB = await browser.newContext();
  try {
    const pageB = await ctxB.newPage();
    watch(pageB, 'browser B');
    const name = uniqueName('resync');
    await gotoPlayground(page);
    await gotoPlayground(pageB);
    await openSynced(page, name, server.url);
    await page.evaluate(() => (window as any).db.put('items/one', { n: 1 }));
    await openSynced(pageB, name, server.url);
    await page.evaluate((k) => (window as any).db.grant(k, 'reader'), await pageB.evaluate(() => (window as any).db.publicKey));
    await syncNow(page);
    await syncNow(pageB);
    await expect.poll(() => pageB.evaluate(() => (window as any).db.get('items/one')), { timeout: 15_000 }).toEqual({ n: 1 });

    // Kill the server; restart it on the same data directory and port.
    const port = new URL(server.url).port;
    server.proc.kill('SIGKILL');
    await new Promise((r) => server.proc.once('exit', r));
    await expect.poll(async () => (await status(page)).state).toBe('offline');
    await page.evaluate(() => (window as any).db.put('items/offline', { n: 2 }));
    const { proc } = await spawnServer(server.dir, `127.0.0.1:${port}`);
    server = { ...server, proc };
    await expect.poll(() => pageB.evaluate(() => (window as any).db.get('items/offline')), { timeout: 30_000 }).toEqual({ n: 2 });
    await syncNow(page);
    const st = await status(page);
    expect(st.state).toBe('synced');
    expect(st.connects).toBeGreaterThan(1);
    await page.evaluate(() => (window as any).db.close());
    await pageB.evaluate(() => (window as any).db.close());
  } finally {
    await ctxB.close();
    stopServer(server);
  }
});

test('sync resumes after an engine panic (fresh wasm instance)', async ({ browser, page }) => {
  const server = await startServer();
  const ctxB = await browser.newContext();
  try {
    const pageB = await ctxB.newPage();
    const name = uniqueName('panicsync');
    await gotoPlayground(page);
    await gotoPlayground(pageB);
    await openSynced(page, name, server.url);
    await page.evaluate(() => (window as any).db.put('items/before', { n: 1 }));
    await openSynced(pageB, name, server.url);
    await page.evaluate((k) => (window as any).db.grant(k, 'writer'), await pageB.evaluate(() => (window as any).db.publicKey));
    await syncNow(page);
    await syncNow(pageB);
    await expect.poll(() => pageB.evaluate(() => (window as any).db.get('items/before')), { timeout: 15_000 }).toEqual({ n: 1 });
    const panic = await page.evaluate(() => (window as any).db._debugPanic('boom').catch((e: any) => e.name));
    expect(panic).toBe('PanicError');
    await page.evaluate(() => (window as any).db.put('items/after', { n: 2 }));
    await expect.poll(() => pageB.evaluate(() => (window as any).db.get('items/after')), { timeout: 15_000 }).toEqual({ n: 2 });
    await syncNow(pageB);
    await pageB.evaluate(() => (window as any).db.put('items/back', { n: 3 }));
    await expect.poll(() => page.evaluate(() => (window as any).db.get('items/back')), { timeout: 15_000 }).toEqual({ n: 3 });
    await syncNow(page);
    expect((await status(page)).state).toBe('synced');
    await page.evaluate(() => (window as any).db.close());
    await pageB.evaluate(() => (window as any).db.close());
  } finally {
    await ctxB.close();
    stopServer(server);
  }
});

test('a server that never sends its Welcome is dropped after the handshake timeout and dialed again', async ({ page, watched }) => {
  void watched;
  // A TCP server that accepts connections and never answers the WebSocket upgrade.
  const { createServer } = await import('node:net');
  const sockets: import('node:net').Socket[] = [];
  const silent = createServer((s) => sockets.push(s));
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  const port = (silent.address() as import('node:net').AddressInfo).port;
  try {
    await gotoPlayground(page);
    await openSynced(page, uniqueName('silent'), `ws://127.0.0.1:${port}`);
    expect((await status(page)).state).toBe('offline');
    // HANDSHAKE_TIMEOUT_MS is 10 s: then UnavailableError, and a new connection.
    await expect
      .poll(async () => {
        const s = await status(page);
        return [s.lastError?.name, s.connects > 1];
      }, { timeout: 20_000, intervals: [500] })
      .toEqual(['UnavailableError', true]);
    // The new dial reaches the server: at once in Chromium; in Firefox seen later (it holds a
    // WebSocket to a host back while another one to it is still connecting, RFC 6455 §4.1).
    await expect.poll(() => sockets.length, { timeout: 10_000 }).toBeGreaterThan(1);
    await page.evaluate(() => (window as any).db.close());
  } finally {
    for (const s of sockets) s.destroy();
    silent.close();
  }
});

test('a pinned owner refuses a squatter: open(name, { owner }) rejects a repository founded by another key (wrong-founder), nothing applied', async ({ browser, page, watched }) => {
  void watched;
  const server = await startServer();
  const ctxS = await browser.newContext();
  try {
    const pageS = await ctxS.newPage();
    const name = uniqueName('squat');
    await gotoPlayground(page);
    await gotoPlayground(pageS);
    // The real owner's device knows its key (a local open makes it).
    const me = await page.evaluate(async (name) => {
      const db = await (window as any).ibexdb.open(name);
      const key = db.publicKey;
      await db.close();
      return key;
    }, name);
    // A squatter takes the name first, open to everyone, with bait in it.
    await openSynced(pageS, name, server.url);
    await pageS.evaluate(async () => {
      const db = (window as any).db;
      await db.setPublic({ read: true, write: true });
      await db.put('items/bait', { x: 1 });
      await db.sync();
    });
    // A malformed pin is refused before anything opens.
    const bad = await page.evaluate(async (name) => {
      try {
        await (window as any).ibexdb.open(name, { owner: 'nope' });
        return null;
      } catch (e: any) {
        return `${e.name}: ${e.message}`;
      }
    }, name);
    expect(bad).toMatch(/^InvalidValueError: .*options\.owner/);
    // Pinned to itself, the owner's client refuses the squatter's root and applies nothing.
    const got = await page.evaluate(
      async ([name, url, me]) => {
        const db = await (window as any).ibexdb.open(name, { sync: url, owner: me });
        let err = null;
        try {
          await db.sync();
        } catch (e: any) {
          err = { name: e.name, kind: e.kind };
        }
        const st = await db.syncStatus();
        const commits = (await db.storageInfo()).repository.commits;
        const bait = (await db.get('items/bait')) ?? null;
        await db.close();
        return { err, state: st.state, commits, bait };
      },
      [name, server.url, me],
    );
    expect(got).toEqual({ err: { name: 'PermissionError', kind: 'wrong-founder' }, state: 'error', commits: 0, bait: null });
  } finally {
    await ctxS.close();
    stopServer(server);
  }
});

test('a new repository told not-found at its first Hello (nothing to found it with yet) is founded by its first write, and db.sync() resolves', async ({ page, watched }) => {
  void watched;
  const server = await startServer();
  try {
    await gotoPlayground(page);
    // Sync starts while the repository is empty: the Hello cannot offer to found it.
    await openSynced(page, uniqueName('found'), server.url);
    await expect.poll(() => page.evaluate(() => (window as any).events.some((e: any) => e.kind === 'not-found')), { timeout: 10_000 }).toBe(true);
    // The first write founds it: the session is dialed again at once, and db.sync() waits for that.
    // (The race this guards, a write landing while the not-found answer is in flight, is not
    // forced here: scripts/sync-initial.mjs's trusted row hit it in 2 of 12 runs before the fix.)
    const got = await page.evaluate(async () => {
      const db = (window as any).db;
      const t0 = performance.now();
      await db.put('items/first', { n: 1 });
      await db.sync();
      const st = await db.syncStatus();
      return { state: st.state, pending: st.pending, ms: performance.now() - t0 };
    });
    expect(got.state).toBe('synced');
    expect(got.pending).toBe(0);
    expect(got.ms, 'founded at once, not at the slow retry pace').toBeLessThan(5_000);
  } finally {
    stopServer(server);
  }
});
