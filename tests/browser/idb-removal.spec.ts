// Review findings (fixed) on backends/indexeddb.js's versionchange handling (another context deleting the
// repository's database): the worker that let its connection go must still be able to open the
// repository afterwards.
import { test, expect, gotoPlayground, uniqueName } from './ibexdb.fixtures';
import { installRunWorker } from './support/workers';

test('indexeddb: a worker whose open repository was removed by another context can open it again after its close', async ({ page, watched }) => {
  void watched;
  // Found in review, fixed: the versionchange handler closes the connection and forget()s the Repo while its files
  // are still open here (the removal succeeds: IndexedDB, unlike OPFS, does not refuse it). When
  // the engine then closes without a flush (nothing written since), sinkFor().close() sees
  // r.open === 0 and no failure, and puts the forgotten Repo — its connection closed — back into
  // `repos` ("repos.delete(name); repos.set(name, r)"). Every later openFiles of the repository in
  // this worker then throws "InvalidStateError: The database connection is closing" (mapped to
  // StorageUnavailableError), for the worker's lifetime. The same re-insertion follows an open
  // that loses the race with a removal (its catch gives the count back through sink.close()).
  const name = uniqueName('idb-removed-open');
  await gotoPlayground(page);
  await installRunWorker(page);
  const out = await page.evaluate(async (name) => {
    const run = (window as any).__runWorker;
    const w = run(`
      const name = ${JSON.stringify(name)};
      const o = { storage: 'indexeddb' };
      const r = {};
      try {
        let eng = await E.openEngine(name, o);
        eng.put('items/a', { a: 1 });
        await eng.close(); // flushed, snapshot written: the next session's close writes nothing
        eng = await E.openEngine(name, o);
        r.before = eng.count('items');
        await next(postMessage({ stage: 'open' })); // another context removes the repository
        try { await eng.close(); } catch (e) { r.closeError = String(e?.name); }
        for (const attempt of ['first', 'second']) {
          try {
            eng = await E.openEngine(name, o);
            r[attempt] = eng.count('items');
            await eng.close();
          } catch (e) { r[attempt] = String(e?.name) + ': ' + String(e?.message); }
        }
        postMessage({ done: r });
      } catch (e) { postMessage({ error: String(e?.name) + ': ' + String(e?.message) }); }`, async () => {
      const other = run(`
        await I.indexedDbBackend.removeRepository(${JSON.stringify(name)});
        postMessage({ done: (await indexedDB.databases()).map((d) => d.name) });`, async () => null);
      try {
        (window as any).__dbsAfterRemoval = await other.done;
      } finally {
        other.worker.terminate();
      }
      return 'go';
    });
    try {
      return { ...(await w.done), removed: !(window as any).__dbsAfterRemoval.includes('ibexdb/' + name) };
    } finally {
      w.worker.terminate();
    }
  }, name);
  expect(out.before).toBe(1);
  expect(out.removed).toBe(true);
  // Removed: an empty repository, as a fresh worker would open it.
  expect({ first: out.first, second: out.second }).toEqual({ first: 0, second: 0 });
});
