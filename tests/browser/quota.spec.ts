// A repository out of room (`quotaBytes`, counted as the browser counts its quota: log and
// snapshot together): writes fail with QuotaExceededError and keep nothing half-done; close()
// still succeeds (the seal and the snapshot it cannot write wait for a session with room, and
// lose nothing); and the snapshot, which only saves replaying the log, gives its bytes to the
// log when the log needs them.
import { test, expect, gotoPlayground, uniqueName } from './ibexdb.fixtures';

test.beforeEach(async ({ page, watched }) => {
  void watched;
  await gotoPlayground(page);
});

test('at the quota every close succeeds, nothing acknowledged is lost, and the seals are made once there is room', async ({ page }) => {
  const out = await page.evaluate(async (name) => {
    const { open } = (window as any).ibexdb;
    const fill = async (db: any, from: number) => {
      let i = from;
      for (; i < from + 1000; i++) {
        try {
          await db.put(`items/${i}`, { text: 'x'.repeat(200) });
        } catch (e: any) {
          return { next: i, error: e.name };
        }
      }
      return { next: i, error: null };
    };
    const closed = async (db: any) => db.close().then(() => 'ok', (e: any) => `${e.name}: ${e.message}`);
    let db = await open(name, { quotaBytes: 16384 });
    const first = await fill(db, 0);
    const close1 = await closed(db);
    db = await open(name, { quotaBytes: 16384 });
    const count1 = await db.count('items');
    // Deleting frees nothing: a delete is a commit too (the history is kept), so it needs room.
    const logBefore = (await db.storageInfo()).repository.logBytes;
    let deleted = 0;
    let deleteError = null;
    for (; deleted < 50; deleted++) {
      deleteError = await db.delete(`items/${deleted}`).then(() => null, (e: any) => e.name);
      if (deleteError) break;
    }
    const logAfter = (await db.storageInfo()).repository.logBytes;
    const putAfterDeletes = await db.put('items/again', { text: 'x'.repeat(200) }).then(() => 'ok', (e: any) => e.name);
    const close2 = await closed(db);
    // More room: the seals that did not fit are made, and writes go on.
    db = await open(name, { quotaBytes: 1 << 20 });
    const count2 = await db.count('items');
    const more = await db.put('items/more', { text: 'y' }).then(() => 'ok', (e: any) => e.name);
    const close3 = await closed(db);
    db = await open(name, { quotaBytes: 1 << 20 });
    const report = await db.verify();
    await db.close();
    return { first, close1, count1, deleted, deleteError, logBefore, logAfter, putAfterDeletes, close2, count2, more, close3, unsealed: report.unsealed, commits: report.commits };
  }, uniqueName('quota-close'));
  expect(out.first.error).toBe('QuotaExceededError');
  expect(out.first.next).toBeGreaterThan(10);
  expect(out.close1).toBe('ok');
  expect(out.count1).toBe(out.first.next); // every acknowledged write, not the refused one
  expect(out.deleteError).toBe('QuotaExceededError');
  expect(out.logAfter).toBeGreaterThanOrEqual(out.logBefore);
  expect(out.putAfterDeletes).toBe('QuotaExceededError');
  expect(out.close2).toBe('ok');
  expect(out.count2).toBe(out.first.next - out.deleted);
  expect(out.more).toBe('ok');
  expect(out.close3).toBe('ok');
  expect(out.unsealed).toBe(0);
  expect(out.commits).toBe(out.first.next + out.deleted + 1);
});

test('the snapshot gives its bytes to the log at the quota', async ({ page }) => {
  const out = await page.evaluate(async (name) => {
    const { open } = (window as any).ibexdb;
    // A board with a snapshot (written at close).
    let db = await open(name);
    for (let i = 0; i < 40; i++) await db.put(`items/${i}`, { text: `item ${i} `.repeat(20) });
    await db.close();
    db = await open(name);
    const before = (await db.storageInfo()).repository;
    await db.close();
    // Reopened with a limit a little above what its files hold: more writes than the log's
    // share would allow fit, because the snapshot makes room.
    const quota = before.logBytes + before.snapshotBytes + 200;
    db = await open(name, { quotaBytes: quota });
    let written = 0;
    let error = null;
    for (let i = 100; i < 1100; i++) {
      try {
        await db.put(`items/${i}`, { text: 'z'.repeat(150) });
        written++;
      } catch (e: any) {
        error = e.name;
        break;
      }
    }
    const after = (await db.storageInfo()).repository;
    const closed = await db.close().then(() => 'ok', (e: any) => e.name);
    db = await open(name);
    const count = await db.count('items');
    await db.close(); // with room: seals what waited for it
    db = await open(name);
    const verified = await db.verify();
    await db.close();
    return { before, quota, written, error, after, closed, count, unsealed: verified.unsealed };
  }, uniqueName('quota-snapshot'));
  expect(out.before.snapshotBytes).toBeGreaterThan(1000);
  expect(out.error).toBe('QuotaExceededError');
  expect(out.after.snapshotBytes).toBe(0);
  // Each write adds well under 400 bytes: the snapshot's bytes held several of them.
  expect(out.written * 400).toBeGreaterThan(out.before.snapshotBytes);
  expect(out.after.logBytes).toBeLessThanOrEqual(out.quota);
  expect(out.closed).toBe('ok');
  expect(out.count).toBe(40 + out.written);
  expect(out.unsealed).toBe(0);
});
