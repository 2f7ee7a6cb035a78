// Two tabs on one repository: one owns the OPFS files, the other reaches it over
// BroadcastChannel; live queries follow writes from either tab; when the owner tab closes the
// other takes over without losing an acknowledged write.
import { test, expect, gotoPlayground, uniqueName, watch } from './ibexdb.fixtures';

test('two tabs share a repository; the survivor takes over', async ({ context, page, watched }) => {
  void watched;
  const name = uniqueName('tabs');
  await gotoPlayground(page);
  const pageB = await context.newPage();
  const wB = watch(pageB, 'tab B');
  await gotoPlayground(pageB);

  const roleA = await page.evaluate(async (name) => {
    const w = window as any;
    w.db = await w.ibexdb.open(name);
    await w.db.put('items/a1', { from: 'A', n: 1 });
    return w.db.role;
  }, name);
  const roleB = await pageB.evaluate(async (name) => {
    const w = window as any;
    w.db = await w.ibexdb.open(name);
    w.lq = await w.db.live({ collection: 'items', sort: [{ field: 'n' }] });
    await w.db.put('items/b1', { from: 'B', n: 2 });
    // A transaction's bytes reach the owner tab's worker over BroadcastChannel.
    await w.db.transaction((tx: any) => tx.put('items/bt', { from: 'B', n: 2.5, tags: new Set(['t']) }));
    return w.db.role;
  }, name);
  expect([roleA, roleB]).toEqual(['owner', 'client']);

  // B's live query follows A's writes; A reads B's writes.
  await page.evaluate(() => (window as any).db.put('items/a2', { from: 'A', n: 3 }));
  await expect.poll(() => pageB.evaluate(() => (window as any).lq.results.map((r: any) => r.id))).toEqual(['a1', 'b1', 'bt', 'a2']);
  expect(await page.evaluate(() => (window as any).db.get('items/b1'))).toEqual({ from: 'B', n: 2 });
  expect(await page.evaluate(async () => [...(await (window as any).db.get('items/bt')).tags])).toEqual(['t']);

  // A burst of acknowledged writes from both tabs, then the owner tab goes away.
  await Promise.all([
    page.evaluate(async () => {
      const db = (window as any).db;
      await Promise.all(Array.from({ length: 50 }, (_, i) => db.put(`items/burstA${i}`, { n: 100 + i })));
    }),
    pageB.evaluate(async () => {
      const db = (window as any).db;
      await Promise.all(Array.from({ length: 50 }, (_, i) => db.put(`items/burstB${i}`, { n: 200 + i })));
    }),
  ]);
  await page.close();

  const out = await pageB.evaluate(async () => {
    const w = window as any;
    await w.db.put('items/b2', { from: 'B', n: 1000 }); // served by B itself once it has taken over
    return {
      role: w.db.role,
      count: await w.db.count('items'),
      a2: await w.db.get('items/a2'),
      burstA49: await w.db.get('items/burstA49'),
      live: w.lq.results.length,
      verify: (await w.db.verify()).items,
    };
  });
  expect(out).toEqual({ role: 'owner', count: 105, a2: { from: 'A', n: 3 }, burstA49: { n: 149 }, live: 105, verify: 105 });

  // A third tab joins the new owner.
  const pageC = await context.newPage();
  const wC = watch(pageC, 'tab C');
  await gotoPlayground(pageC);
  const c = await pageC.evaluate(async (name) => {
    const db = await (window as any).ibexdb.open(name);
    const r = { role: db.role, b2: await db.get('items/b2') };
    await db.close();
    return r;
  }, name);
  expect(c).toEqual({ role: 'client', b2: { from: 'B', n: 1000 } });
  await pageB.evaluate(() => (window as any).db.close());
  expect(wB.problems, wB.log.join('\n')).toEqual([]);
  expect(wC.problems, wC.log.join('\n')).toEqual([]);
});
