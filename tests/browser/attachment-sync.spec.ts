// Attachment bytes through the real ibexdb-server on 127.0.0.1 (protocol v5, docs/design.md
// §12.2 *Attachment bytes*, §6.7): two browser contexts are two devices with their own OPFS and
// keys. A attaches offline, then syncs: the commits first, then the bytes. B, granted reading,
// receives the records and reads the bytes after fetching them lazily (compared byte for byte);
// a file tampered with on the server's disk is refused by B (SignatureError, nothing stored);
// revoked, B's fetch is refused (PermissionError).
// The server binary is target/release/ibexdb-server or $IBEXDB_SERVER.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { Page } from '@playwright/test';
import { test, expect, gotoPlayground, uniqueName, watch } from './ibexdb.fixtures';

const SERVER = process.env.IBEXDB_SERVER ?? path.resolve('target/release/ibexdb-server');

async function startServer(): Promise<{ url: string; proc: ChildProcess; dir: string }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'ibexdb-attsync-'));
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

// In the page: deterministic bytes, and whether a Blob holds exactly them (read as a stream).
const HELPERS = `
  window.__att = {
    byteAt(i, s) { return ((i * 2654435761 + s * 40503) >>> 13) & 255; },
    bytes(n, s) { const b = new Uint8Array(n); for (let i = 0; i < n; i++) b[i] = this.byteAt(i, s); return b; },
    async same(blob, n, s) {
      if (blob.size !== n) return 'size ' + blob.size + ' != ' + n;
      const r = blob.stream().getReader();
      let at = 0;
      for (;;) {
        const { done, value } = await r.read();
        if (done) return at === n ? true : 'short: ' + at;
        for (let i = 0; i < value.length; i++, at++) if (value[i] !== this.byteAt(at, s)) return 'byte ' + at + ' differs';
      }
    },
  };
`;

async function open(page: Page, name: string, url: string | null) {
  await page.evaluate(HELPERS);
  await page.evaluate(
    async ([name, url]) => {
      const w = window as any;
      w.db = await w.ibexdb.open(name, url ? { sync: url } : {});
    },
    [name, url],
  );
}

/** `db.attachment(key, name)` on `page`: true if the bytes are those of (n, seed), else the error. */
const read = (page: Page, name: string, n: number, seed: number) =>
  page.evaluate(
    async ([name, n, seed]) => {
      const w = window as any;
      try {
        const blob = await w.db.attachment('tasks/t', name);
        return { same: await w.__att.same(blob, n, seed) };
      } catch (e: any) {
        return { error: e.name, kind: e.kind ?? null, isClass: e instanceof w.ibexdb[e.name] };
      }
    },
    [name, n, seed] as const,
  );

test('two devices: one attaches offline, the other fetches the bytes lazily; tampered bytes and a revoked reader are refused', async ({ browser, page, watched }) => {
  void watched;
  const server = await startServer();
  const ctxB = await browser.newContext();
  try {
    const pageB = await ctxB.newPage();
    const wB = watch(pageB, 'browser B');
    const name = uniqueName('attsync');
    await gotoPlayground(page);
    await gotoPlayground(pageB);
    // A, offline: an item with three files (12 MB, 100 KB, 50 KB) and an empty one.
    await open(page, name, null);
    const sizes: Record<string, [number, number]> = { photo: [12_000_000, 1], doc2: [100_000, 2], doc3: [50_000, 3], empty: [0, 4] };
    const hashes: Record<string, string> = await page.evaluate(async (sizes) => {
      const w = window as any;
      await w.db.put('tasks/t', { title: 'offline' });
      const out: Record<string, string> = {};
      for (const [n, [size, seed]] of Object.entries(sizes)) out[n] = (await w.db.attach('tasks/t', n, w.__att.bytes(size, seed), { type: 'application/octet-stream' })).hash;
      return out;
    }, sizes);
    const onServer = (h: string) => path.join(server.dir, `${name}.attachments`, h);
    expect(existsSync(onServer(hashes.photo))).toBe(false);

    // A syncs: the commits, then the bytes.
    await page.evaluate((url) => (window as any).db.sync(url), server.url);
    await expect.poll(() => Object.values(hashes).every((h) => existsSync(onServer(h))), { timeout: 30_000 }).toBe(true);
    expect(readFileSync(onServer(hashes.doc3)).length).toBe(50_000);

    // B joins; A grants it reading.
    await open(pageB, name, server.url);
    const keyB = await pageB.evaluate(() => (window as any).db.publicKey);
    await page.evaluate((k) => (window as any).db.grant(k, 'reader'), keyB);
    await page.evaluate(() => (window as any).db.sync());
    await pageB.evaluate(() => (window as any).db.sync());
    await expect.poll(() => pageB.evaluate(() => (window as any).db.attachments('tasks/t').then((l: any[]) => l.map((a) => a.name))), { timeout: 15_000 }).toEqual(['doc2', 'doc3', 'empty', 'photo']);

    // Lazily fetched on first read, verified, stored: byte for byte.
    const t0 = Date.now();
    expect(await read(pageB, 'photo', ...sizes.photo)).toEqual({ same: true });
    const fetchMs = Date.now() - t0;
    expect(await read(pageB, 'empty', ...sizes.empty)).toEqual({ same: true });
    expect(await read(pageB, 'photo', ...sizes.photo)).toEqual({ same: true });

    // A file tampered with on the server's disk (same size): refused, nothing stored.
    const doc3 = readFileSync(onServer(hashes.doc3));
    doc3[12_345] ^= 1;
    writeFileSync(onServer(hashes.doc3), doc3);
    expect(await read(pageB, 'doc3', ...sizes.doc3)).toEqual({ error: 'SignatureError', kind: 'tampered', isClass: true });
    const files = await pageB.evaluate(async (name) => {
      const root = await navigator.storage.getDirectory();
      const dir = await (await (await root.getDirectoryHandle('ibexdb')).getDirectoryHandle(name)).getDirectoryHandle('attachments');
      const out: string[] = [];
      for await (const [n] of (dir as any).entries()) out.push(n);
      return out.sort();
    }, name);
    expect(files).toEqual([hashes.empty, hashes.photo].sort());

    // Revoked: the server refuses B's fetch of the file it never read.
    await page.evaluate((k) => (window as any).db.revoke(k), keyB);
    await page.evaluate(() => (window as any).db.sync());
    await expect
      .poll(async () => (await read(pageB, 'doc2', ...sizes.doc2)).error, { timeout: 30_000, intervals: [500] })
      .toBe('PermissionError');
    expect(await read(pageB, 'doc2', ...sizes.doc2)).toEqual({ error: 'PermissionError', kind: 'cannot-read', isClass: true });
    // What B had fetched stays readable offline.
    await pageB.evaluate(() => (window as any).db.sync(null));
    expect(await read(pageB, 'photo', ...sizes.photo)).toEqual({ same: true });
    expect(await read(pageB, 'doc2', ...sizes.doc2)).toEqual({ error: 'AttachmentUnavailableError', kind: null, isClass: true });
    console.log(`attachment-sync: 12 MB fetched lazily in ${fetchMs} ms`);
    expect(wB.problems).toEqual([]);
    await page.evaluate(() => (window as any).db.close());
    await pageB.evaluate(() => (window as any).db.close());
  } finally {
    await ctxB.close();
    server.proc.kill('SIGKILL');
    rmSync(server.dir, { recursive: true, force: true });
  }
});

test('a device on IndexedDB fetches attachment bytes lazily and refuses tampered ones', async ({ browser, page, watched }) => {
  void watched;
  const server = await startServer();
  const ctxB = await browser.newContext();
  try {
    const pageB = await ctxB.newPage();
    const name = uniqueName('attsync-idb');
    await gotoPlayground(page);
    await gotoPlayground(pageB);
    await open(page, name, null);
    const hashes: Record<string, string> = await page.evaluate(async () => {
      const w = window as any;
      await w.db.setPublic({ read: true, write: false });
      await w.db.put('tasks/t', { title: 'offline' });
      return {
        photo: (await w.db.attach('tasks/t', 'photo', w.__att.bytes(3_000_000, 5))).hash,
        doc: (await w.db.attach('tasks/t', 'doc', w.__att.bytes(70_000, 6))).hash,
      };
    });
    await page.evaluate((url) => (window as any).db.sync(url), server.url);
    const onServer = (h: string) => path.join(server.dir, `${name}.attachments`, h);
    await expect.poll(() => existsSync(onServer(hashes.photo)) && existsSync(onServer(hashes.doc)), { timeout: 30_000 }).toBe(true);
    await pageB.evaluate(HELPERS);
    await pageB.evaluate(
      async ([name, url]) => {
        const w = window as any;
        w.db = await w.ibexdb.open(name, { sync: url, storage: 'indexeddb' });
      },
      [name, server.url],
    );
    await pageB.evaluate(() => (window as any).db.sync());
    await expect.poll(() => pageB.evaluate(() => (window as any).db.attachments('tasks/t').then((l: any[]) => l.length)), { timeout: 15_000 }).toBe(2);
    expect(await read(pageB, 'photo', 3_000_000, 5)).toEqual({ same: true });
    const doc = readFileSync(onServer(hashes.doc));
    doc[7] ^= 1;
    writeFileSync(onServer(hashes.doc), doc);
    expect(await read(pageB, 'doc', 70_000, 6)).toEqual({ error: 'SignatureError', kind: 'tampered', isClass: true });
    await pageB.evaluate(() => (window as any).db.sync(null));
    expect(await read(pageB, 'photo', 3_000_000, 5)).toEqual({ same: true });
    expect(await read(pageB, 'doc', 70_000, 6)).toEqual({ error: 'AttachmentUnavailableError', kind: null, isClass: true });
    await page.evaluate(() => (window as any).db.close());
    await pageB.evaluate(() => (window as any).db.close());
  } finally {
    await ctxB.close();
    server.proc.kill('SIGKILL');
    rmSync(server.dir, { recursive: true, force: true });
  }
});
