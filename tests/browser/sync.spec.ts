// Two browsers (separate contexts: separate OPFS) sync through the real ibexdb-server binary on
// 127.0.0.1: a write in one reaches the other's live query; the end-to-end latency (write
// call on page A to the row appearing in page B's live query) is measured and printed.
// The server binary is target/release/ibexdb-server (`make test` builds it first) or
// $IBEXDB_SERVER.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { test, expect, gotoPlayground, uniqueName, watch } from './ibexdb.fixtures';

const SERVER = process.env.IBEXDB_SERVER ?? path.resolve('target/release/ibexdb-server');

async function startServer(): Promise<{ url: string; proc: ChildProcess; dir: string }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'ibexdb-sync-'));
  const proc = spawn(SERVER, ['--data', dir, '--listen', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve, reject) => {
    proc.once('error', reject);
    proc.once('exit', (code) => reject(new Error(`ibexdb-server exited with ${code} (built? ${SERVER})`)));
    createInterface({ input: proc.stdout! }).once('line', resolve);
  });
  const m = /listening on (\S+)/.exec(line);
  if (!m) throw new Error(`unexpected server output: ${line}`);
  return { url: `ws://${m[1]}`, proc, dir };
}

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

    // A writes before B exists on the server; B opens with sync and a live query.
    await page.evaluate(
      async ([name, url]) => {
        const w = window as any;
        w.db = await w.ibexdb.open(name, { sync: url });
        await w.db.put('items/first', { from: 'A', n: 0 });
      },
      [name, server.url],
    );
    await pageB.evaluate(
      async ([name, url]) => {
        const w = window as any;
        w.db = await w.ibexdb.open(name, { sync: url });
        w.seen = {};
        w.lq = await w.db.live({ collection: 'items' }, (rows: any[]) => {
          const now = performance.timeOrigin + performance.now();
          for (const r of rows) if (!(r.id in w.seen)) w.seen[r.id] = now;
        });
      },
      [name, server.url],
    );
    await pageB.waitForFunction(() => 'first' in (window as any).seen, null, { timeout: 15_000 });
    expect(await pageB.evaluate(() => (window as any).db.get('items/first'))).toEqual({ from: 'A', n: 0 });

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
    await expect.poll(() => page.evaluate(() => (window as any).db.get('items/fromB')), { timeout: 15_000 }).toEqual({ from: 'B', n: 99 });
    const keysA = await page.evaluate(() => (window as any).db.keys('items'));
    await expect.poll(() => pageB.evaluate(() => (window as any).db.keys('items'))).toEqual(keysA);
    expect(keysA.length).toBe(N + 2);

    const st = await pageB.evaluate(() => (window as any).db.syncStatus());
    expect(st.state).toBe('connected');
    expect(st.cursor).toBe(N + 2);
    expect(st.lastError).toBeNull();
    const stA = await page.evaluate(() => (window as any).db.syncStatus());
    expect(stA.acked).toBe(N + 1);

    // Both repositories still verify (every signature, every hash).
    expect((await page.evaluate(() => (window as any).db.verify())).commits).toBe(N + 2);
    expect((await pageB.evaluate(() => (window as any).db.verify())).commits).toBe(N + 2);
    expect(wB.problems).toEqual([]);
    await page.evaluate(() => (window as any).db.close());
    await pageB.evaluate(() => (window as any).db.close());
  } finally {
    await ctxB.close();
    server.proc.kill('SIGKILL');
    rmSync(server.dir, { recursive: true, force: true });
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
    for (const p of [page, pageB]) {
      await p.evaluate(
        async ([name, url]) => {
          const w = window as any;
          w.db = await w.ibexdb.open(name, { sync: url });
        },
        [name, server.url],
      );
    }
    await page.evaluate(() => (window as any).db.put('items/one', { n: 1 }));
    await expect.poll(() => pageB.evaluate(() => (window as any).db.get('items/one')), { timeout: 15_000 }).toEqual({ n: 1 });

    // Kill the server; restart it on the same data directory and port.
    const port = new URL(server.url).port;
    server.proc.kill('SIGKILL');
    await new Promise((r) => server.proc.once('exit', r));
    await expect.poll(() => page.evaluate(async () => (await (window as any).db.syncStatus()).state)).not.toBe('connected');
    await page.evaluate(() => (window as any).db.put('items/offline', { n: 2 }));
    const proc = spawn(SERVER, ['--data', server.dir, '--listen', `127.0.0.1:${port}`], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve) => createInterface({ input: proc.stdout! }).once('line', () => resolve()));
    server = { ...server, proc };
    await expect.poll(() => pageB.evaluate(() => (window as any).db.get('items/offline')), { timeout: 30_000 }).toEqual({ n: 2 });
    const st = await page.evaluate(() => (window as any).db.syncStatus());
    expect(st.state).toBe('connected');
    expect(st.connects).toBeGreaterThan(1);
    await page.evaluate(() => (window as any).db.close());
    await pageB.evaluate(() => (window as any).db.close());
  } finally {
    await ctxB.close();
    server.proc.kill('SIGKILL');
    rmSync(server.dir, { recursive: true, force: true });
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
    for (const p of [page, pageB]) {
      await p.evaluate(
        async ([name, url]) => {
          const w = window as any;
          w.db = await w.ibexdb.open(name, { sync: url });
        },
        [name, server.url],
      );
    }
    await page.evaluate(() => (window as any).db.put('items/before', { n: 1 }));
    await expect.poll(() => pageB.evaluate(() => (window as any).db.get('items/before')), { timeout: 15_000 }).toEqual({ n: 1 });
    const panic = await page.evaluate(() => (window as any).db._debugPanic('boom').catch((e: any) => e.name));
    expect(panic).toBe('PanicError');
    await page.evaluate(() => (window as any).db.put('items/after', { n: 2 }));
    await expect.poll(() => pageB.evaluate(() => (window as any).db.get('items/after')), { timeout: 15_000 }).toEqual({ n: 2 });
    await pageB.evaluate(() => (window as any).db.put('items/back', { n: 3 }));
    await expect.poll(() => page.evaluate(() => (window as any).db.get('items/back')), { timeout: 15_000 }).toEqual({ n: 3 });
    expect((await page.evaluate(() => (window as any).db.syncStatus())).state).toBe('connected');
    await page.evaluate(() => (window as any).db.close());
    await pageB.evaluate(() => (window as any).db.close());
  } finally {
    await ctxB.close();
    server.proc.kill('SIGKILL');
    rmSync(server.dir, { recursive: true, force: true });
  }
});
