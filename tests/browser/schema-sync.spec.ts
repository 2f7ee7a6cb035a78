// Versioned schemas across devices (docs/design.md §2.4), through the real ibexdb-server binary
// (target/release/ibexdb-server or $IBEXDB_SERVER) on 127.0.0.1, in Chromium: an owner upgrades
// to version 2 with a migration while a writer on the version-1 application edits offline. When
// they meet, the writer's application turns read-only (SchemaVersionError, `db.readOnly`), its
// offline edit is kept and migrated by the owner, and both see the migrated item.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { Page } from '@playwright/test';
import { test, expect, gotoPlayground, uniqueName, watch } from './ibexdb.fixtures';

const SERVER = process.env.IBEXDB_SERVER ?? path.resolve('target/release/ibexdb-server');

async function startServer(): Promise<{ url: string; proc: ChildProcess; dir: string }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'ibexdb-schema-sync-'));
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

/** Open `name` as `window.db` at schema `version` (1 or 2), syncing with `url`. */
async function openAt(page: Page, name: string, url: string, version: 1 | 2) {
  await page.evaluate(
    async ([name, url, version]) => {
      const w = window as any;
      const v1 = { tasks: { fields: { title: { type: 'string', required: true } } } };
      const v2 = { tasks: { fields: { name: { type: 'string', required: true }, done: { type: 'boolean', required: true } }, allowOtherFields: false } };
      const migrations = { 2: { tasks: ({ title, ...rest }: any) => ({ ...rest, name: title, done: false }) } };
      w.db = await w.ibexdb.open(name, version === 1 ? { sync: url, schemas: v1, version } : { sync: url, schemas: v2, version, migrations });
    },
    [name, url, version] as const,
  );
}

const syncNow = (page: Page) => page.evaluate(() => (window as any).db.sync());
const get = (page: Page, key: string) => page.evaluate((k) => (window as any).db.get(k), key);

test('an owner upgrades while a writer on the older application edits offline: read-only, nothing lost, migrated', async ({ browser, page, watched }) => {
  void watched;
  const server = await startServer();
  const ctxB = await browser.newContext();
  try {
    const pageB = await ctxB.newPage();
    const wB = watch(pageB, 'browser B');
    const name = uniqueName('schemasync');
    await gotoPlayground(page);
    await gotoPlayground(pageB);
    // A founds the repository at version 1; B joins as a writer.
    await openAt(page, name, server.url, 1);
    await page.evaluate(() => (window as any).db.put('tasks/a1', { title: 'from A' }));
    await syncNow(page);
    await openAt(pageB, name, server.url, 1);
    const keyB = await pageB.evaluate(() => (window as any).db.publicKey);
    await pageB.evaluate(() => (window as any).db.sync().catch(() => {})); // no role yet: refused
    await page.evaluate((k) => (window as any).db.grant(k, 'writer'), keyB);
    await syncNow(page);
    await syncNow(pageB);
    expect(await get(pageB, 'tasks/a1')).toEqual({ title: 'from A' });

    // B goes offline and edits on version 1; A upgrades to version 2 meanwhile.
    await pageB.evaluate(() => (window as any).db.sync(null));
    await pageB.evaluate(() => (window as any).db.put('tasks/b1', { title: 'offline on v1' }));
    await page.evaluate(() => (window as any).db.close());
    await openAt(page, name, server.url, 2);
    expect(await page.evaluate(() => (window as any).db.schemaVersion)).toBe(2);
    expect(await get(page, 'tasks/a1')).toEqual({ name: 'from A', done: false });
    await syncNow(page);

    // They meet: B's offline edit counts (its past was version 1) and reaches A, which migrates
    // it; B's application is now older than the repository: read-only, with a typed error.
    await pageB.evaluate((url) => (window as any).db.sync(url), server.url);
    await expect.poll(() => pageB.evaluate(() => (window as any).db.readOnly?.name ?? null), { timeout: 15_000 }).toBe('SchemaVersionError');
    const refused = await pageB.evaluate(() =>
      (window as any).db.put('tasks/b2', { title: 'too late' }).then(
        () => null,
        (e: any) => ({ name: e.name, isClass: e instanceof (window as any).ibexdb.SchemaVersionError, stored: e.stored, version: e.version }),
      ),
    );
    expect(refused).toEqual({ name: 'SchemaVersionError', isClass: true, stored: 2, version: 1 });
    await expect.poll(() => get(page, 'tasks/b1'), { timeout: 15_000 }).toEqual({ name: 'offline on v1', done: false });
    await expect.poll(() => get(pageB, 'tasks/b1'), { timeout: 15_000 }).toEqual({ name: 'offline on v1', done: false });
    expect(await page.evaluate(() => (window as any).db.count('tasks'))).toBe(2);
    expect(wB.problems).toEqual([]);
    await page.evaluate(() => (window as any).db.close());
    await pageB.evaluate(() => (window as any).db.close());
  } finally {
    await ctxB.close();
    server.proc.kill('SIGKILL');
    rmSync(server.dir, { recursive: true, force: true });
  }
});
