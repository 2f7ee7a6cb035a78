// End-to-end encrypted repositories (docs/design.md §6.8) in the browser: two devices (separate
// contexts: separate OPFS, separate keys) open `{ encrypted: true }` and sync through the real
// ibexdb-server; the owner grants the other device (wrapping the epoch key to it), each reads
// the other's values, queries and live queries run over the decrypted state, and no byte of the
// server's data directory holds a value. The server binary is target/release/ibexdb-server or
// $IBEXDB_SERVER.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { test, expect, gotoPlayground, uniqueName } from './ibexdb.fixtures';
import { startSyncServer } from './support/shipping';

function filesUnder(dir: string): Buffer[] {
  const out: Buffer[] = [];
  for (const e of readdirSync(dir)) {
    const p = path.join(dir, e);
    if (statSync(p).isDirectory()) out.push(...filesUnder(p));
    else out.push(readFileSync(p));
  }
  return out;
}

test('encrypted repositories: two devices sync sealed values through the server, which holds no plaintext', async ({ browser, page }) => {
  test.setTimeout(120_000);
  const server = await startSyncServer();
  const ctx = await browser.newContext();
  try {
    const name = uniqueName('sealed');
    const other = await ctx.newPage();
    await gotoPlayground(page);
    await gotoPlayground(other);
    // The second device's key (its identity is per repository name).
    const bKey = await other.evaluate(async (name) => {
      const db = await (window as any).ibexdb.open(name, { encrypted: true });
      const k = db.publicKey;
      await db.close();
      return k;
    }, name);
    const a = await page.evaluate(
      async ([name, url, bKey]) => {
        const db = await (window as any).ibexdb.open(name, { encrypted: true, sync: url });
        (window as any).db = db;
        await db.put('notes/a1', { title: 'sealed-alpha-zq', n: 1 });
        await db.put('notes/a2', { title: 'sealed-bravo-zq', n: 2 });
        await db.grant(bKey, 'writer');
        await db.sync();
        const rows = await db.query({ collection: 'notes', where: { n: { gte: 2 } } });
        const hist = await db.history('notes/a1');
        return { rows: rows.map((r: any) => r.title ?? r.value?.title ?? r[1]?.title), hist: hist.length };
      },
      [name, server.url, bKey],
    );
    expect(a.rows).toEqual(['sealed-bravo-zq']);
    expect(a.hist).toBe(1);
    const b = await other.evaluate(
      async ([name, url]) => {
        const db = await (window as any).ibexdb.open(name, { encrypted: true, sync: url });
        const deadline = Date.now() + 20_000;
        let got = await db.get('notes/a2');
        while (!got && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 100));
          got = await db.get('notes/a2');
        }
        await db.put('notes/b1', { title: 'sealed-charlie-zq', n: 3 });
        await db.sync();
        const all = await db.query({ collection: 'notes', where: { n: { gte: 1 } } });
        await db.close();
        return { got, count: all.length };
      },
      [name, server.url],
    );
    expect(b.got).toMatchObject({ title: 'sealed-bravo-zq', n: 2 });
    expect(b.count).toBe(3);
    const back = await page.evaluate(async () => {
      const db = (window as any).db;
      const deadline = Date.now() + 20_000;
      let got = await db.get('notes/b1');
      while (!got && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
        got = await db.get('notes/b1');
      }
      const v = await db.verify();
      await db.close();
      return { got, ok: !!v };
    });
    expect(back.got).toMatchObject({ title: 'sealed-charlie-zq' });
    expect(back.ok).toBe(true);
    await server.terminate();
    const files = filesUnder(server.dir);
    expect(files.length).toBeGreaterThan(0);
    for (const v of ['sealed-alpha-zq', 'sealed-bravo-zq', 'sealed-charlie-zq', 'notes', 'title']) {
      expect(files.some((f) => f.includes(v)), `${v} on the server`).toBe(false);
    }
  } finally {
    await ctx.close();
    await server.stop();
  }
});
