// db.settle() (www/lib/ibexdb.js): the background work the worker's timers would do later (the seal
// of unsealed local commits, the relaxed flush, a due snapshot) done now, nothing left pending.
// The benchmark's [page] write rows call it at the end of each engine's turn, so that ibexdb's
// deferred work is paid inside its own turn (www/bench/page/page-ops.js).
import { test, expect, gotoPlayground, uniqueName } from './ibexdb.fixtures';

test.beforeEach(async ({ page, watched }) => {
  void watched;
  await gotoPlayground(page);
});

test('settle() seals the unsealed commits at once, flushes relaxed writes, and leaves no timer work behind', async ({ page }) => {
  const out = await page.evaluate(async (name) => {
    const { open } = (window as any).ibexdb;
    const signed = await open(name, { durability: 'flush' });
    for (let i = 0; i < 3; i++) await signed.put(`items/${i}`, { i });
    // Within the seal delay (100 ms): the commits wait for the timer.
    const before = (await signed.verify()).unsealed;
    await signed.settle();
    const after = await signed.verify();
    // Nothing was left for the timer: after its delay, still sealed once, nothing new.
    await new Promise((r) => setTimeout(r, 250));
    const later = await signed.verify();
    await signed.close();
    const relaxed = await open(`${name}-relaxed`, { durability: 'relaxed' });
    await relaxed.put('items/r', { r: 1 });
    await relaxed.settle();
    const relaxedInfo = await relaxed.verify();
    await relaxed.close();
    return { before, after: { unsealed: after.unsealed, seals: after.seals }, later: { unsealed: later.unsealed, seals: later.seals }, relaxed: { unsealed: relaxedInfo.unsealed, commits: relaxedInfo.commits } };
  }, uniqueName('settle'));
  expect(out.before).toBe(3);
  expect(out.after.unsealed).toBe(0);
  expect(out.after.seals).toBeGreaterThanOrEqual(1);
  expect(out.later).toEqual(out.after);
  expect(out.relaxed).toEqual({ unsealed: 0, commits: 1 });
});
