// Scale-out sync in the browser (docs/design.md §12.5): a PostgreSQL of this spec's own and two
// ibexdb-server nodes on it (real binaries, real WebSockets on 127.0.0.1). Each browser context
// is a device with its own key and OPFS, and syncs with a list of URLs: its own node first.
// Skipped only when PostgreSQL's binaries are absent (`make setup` installs Debian's).
import type { BrowserContext, Page } from '@playwright/test';
import { test, expect, gotoPlayground, uniqueName, watch } from './ibexdb.fixtures';
import { pgBinDir, startNode, startPostgres, type Node, type Postgres } from './support/cluster';

const PG_BIN = pgBinDir();
// Skipped only where PostgreSQL is not installed: `make setup` (run by `make test` and CI)
// installs Debian's postgresql, so in CI this spec always runs; a developer running Playwright
// alone without it gets this reason instead of a failure unrelated to the code under test.
test.skip(!PG_BIN, 'PostgreSQL binaries not found (run `make setup`, or set IBEXDB_PG_BIN): the cluster spec needs initdb and pg_ctl');

let pg: Postgres;
let nodes: Node[] = [];

test.beforeAll(async () => {
  pg = await startPostgres(PG_BIN!);
});

test.beforeEach(async () => {
  nodes = [await startNode(pg.url), await startNode(pg.url)];
});

test.afterEach(() => {
  for (const n of nodes) n.kill();
});

test.afterAll(() => {
  pg?.stop();
});

/** Open `name` on `page` as `window.db`, syncing with `urls`; a live query records items in `window.seen`. */
async function openOn(page: Page, name: string, urls: string[]) {
  await page.evaluate(
    async ([name, urls]) => {
      const w = window as any;
      w.db = await w.ibexdb.open(name, { sync: urls });
      w.seen = new Set();
      w.lq = await w.db.live({ collection: 'items' }, (rows: any[]) => {
        for (const r of rows) w.seen.add(r.id);
      });
    },
    [name, urls] as const,
  );
}

const put = (page: Page, id: string) => page.evaluate((id) => (window as any).db.put(`items/${id}`, { id }), id);
const syncNow = (page: Page) => page.evaluate(() => (window as any).db.sync());
const status = (page: Page) => page.evaluate(() => (window as any).db.syncStatus());
const seen = (page: Page, id: string) => page.evaluate((id) => (window as any).seen.has(id), id);
const keys = (page: Page) => page.evaluate(() => (window as any).db.keys('items'));

/** A (the owner, on node 1) and B (granted `writer`, on node 2), both synced. */
async function ownerAndWriter(page: Page, ctxB: BrowserContext, name: string): Promise<Page> {
  const [n1, n2] = nodes;
  const pageB = await ctxB.newPage();
  watch(pageB, 'browser B');
  await gotoPlayground(page);
  await gotoPlayground(pageB);
  await openOn(page, name, [n1.url, n2.url]);
  await put(page, 'founding');
  await syncNow(page);
  await openOn(pageB, name, [n2.url, n1.url]);
  await page.evaluate((k) => (window as any).db.grant(k, 'writer'), await pageB.evaluate(() => (window as any).db.publicKey));
  await syncNow(page);
  await syncNow(pageB);
  expect((await status(page)).url).toBe(n1.url);
  expect((await status(pageB)).url).toBe(n2.url);
  expect((await status(pageB)).rights).toEqual({ read: true, write: true, administer: false });
  return pageB;
}

test('two contexts on two nodes see each other’s writes in their live queries', async ({ browser, page, watched }) => {
  void watched;
  const ctxB = await browser.newContext();
  try {
    const pageB = await ownerAndWriter(page, ctxB, uniqueName('cluster'));
    await put(page, 'fromA');
    await expect.poll(() => seen(pageB, 'fromA'), { timeout: 15_000 }).toBe(true);
    await put(pageB, 'fromB');
    await expect.poll(() => seen(page, 'fromB'), { timeout: 15_000 }).toBe(true);
    await syncNow(page);
    await syncNow(pageB);
    // Founding put, grant, two puts: each stored once, at the same sequences through either node.
    for (const p of [page, pageB]) {
      const st = await status(p);
      expect([st.state, st.cursor, st.pending]).toEqual(['synced', 4, 0]);
    }
    expect(await keys(pageB)).toEqual(await keys(page));
  } finally {
    await ctxB.close();
  }
});

test('a context whose node is SIGKILLed carries on with the next URL of its list, losing nothing', async ({ browser, page, watched }) => {
  void watched;
  const ctxB = await browser.newContext();
  try {
    const pageB = await ownerAndWriter(page, ctxB, uniqueName('failover'));
    for (let i = 0; i < 10; i++) await put(page, `acked${i}`);
    await syncNow(page);
    const before = await status(page);
    // Writes in flight while node 1 dies, and more after it.
    const inFlight = Promise.all(Array.from({ length: 5 }, (_, i) => put(page, `racing${i}`)));
    nodes[0].kill();
    await inFlight;
    for (let i = 0; i < 5; i++) await put(page, `after${i}`);
    await syncNow(page);
    const after = await status(page);
    expect(after.url).toBe(nodes[1].url);
    expect(after.connects).toBeGreaterThan(before.connects);
    const ids = [...Array.from({ length: 10 }, (_, i) => `acked${i}`), ...Array.from({ length: 5 }, (_, i) => `racing${i}`), ...Array.from({ length: 5 }, (_, i) => `after${i}`)];
    await expect.poll(() => pageB.evaluate((ids) => ids.filter((id) => !(window as any).seen.has(id)), ids), { timeout: 30_000 }).toEqual([]);
    await syncNow(pageB);
    // Founding put, grant, 20 puts: every commit stored once (a duplicate would take a sequence).
    for (const p of [page, pageB]) {
      const st = await status(p);
      expect([st.state, st.cursor, st.pending]).toEqual(['synced', 22, 0]);
    }
    expect(await keys(pageB)).toEqual(await keys(page));
  } finally {
    await ctxB.close();
  }
});
