// Review probe: close() of a panicked (dead) engine releases its files without waiting for the
// IndexedDB flushes it queued before the panic (engine.js close(): the `_dead` branch skips
// durable()); ownership.js then frees the repository lock, so the next owner may read before
// those transactions land, and they land on top of what it reads and writes.
import { test, expect, gotoPlayground, uniqueName } from './ibexdb.fixtures';
import { installRunWorker } from './support/workers';

test('indexeddb: a panicked engine\'s close waits for the flushes it queued before the next owner opens', async ({ page, watched }) => {
  void watched;
  // Found in review, fixed (low): EngineHandle.close() of a dead engine takes the `else` branch, _release() without
  // `await this.durable()`: the IndexedDB transactions queued before the panic are still to come
  // when close() resolves (the generation read right after the close is that of none of them),
  // and ownership.js's close() frees the repository lock at that point. The next owner (another
  // tab) can read before they land, and they land afterwards under it (their generation collides
  // with the next owner's own count, since both count from what they read). The same-worker
  // reopen is safe (openFiles settles first); another context's is not.
  const name = uniqueName('idb-dead-close');
  await gotoPlayground(page);
  await installRunWorker(page);
  const out = await page.evaluate(async (name) => {
    const run = (window as any).__runWorker;
    const genNow = `async () => {
        const db = await new Promise((res, rej) => { const q = indexedDB.open('ibexdb/' + ${JSON.stringify(name)}); q.onsuccess = () => res(q.result); q.onerror = () => rej(q.error); });
        const g = await new Promise((res) => { const q = db.transaction('files').objectStore('files').get('generation'); q.onsuccess = () => res(q.result); });
        db.close();
        return g;
      }`;
    const a = run(`
      const name = ${JSON.stringify(name)};
      const genNow = ${genNow};
      const r = {};
      try {
        const eng = await E.openEngine(name, { storage: 'indexeddb' });
        const big = 'x'.repeat(4000);
        for (let i = 0; i < 500; i++) eng.put('items/' + i, { i, big });
        eng.flush(); // a transaction of ~2 MB, in flight
        for (let i = 500; i < 1000; i++) eng.put('items/' + i, { i, big });
        eng.flush(); // queued behind it
        try { eng.panicForTest('review'); } catch (e) { r.panic = String(e?.name); }
        await eng.close(); // dead: releases the files at once
        r.genAtClose = await genNow();
        await I.indexedDbBackend.durable(name);
        r.genLater = await genNow(); // the closed session's flushes, all landed
        r.nextOwnerSaw = await next(postMessage({ stage: 'closed' })); // another worker opens it now
        postMessage({ done: r });
      } catch (e) { postMessage({ error: String(e?.name) + ': ' + String(e?.message) }); }`, async () => {
      b.worker.postMessage('go');
      return await b.done;
    });
    // The next owner, its wasm loaded already: opens as soon as it is told, counts, closes.
    const b = run(`
      const go = next();
      await E.preloadWasm();
      await go;
      const eng = await E.openEngine(${JSON.stringify(name)}, { storage: 'indexeddb' });
      const n = eng.count('items');
      await eng.close();
      postMessage({ done: n });`, async () => null);
    try {
      const r = await a.done;
      const c = run(`
        const eng = await E.openEngine(${JSON.stringify(name)}, { storage: 'indexeddb' });
        const n = eng.count('items');
        await eng.close();
        postMessage({ done: n });`, async () => null);
      r.readerLaterSaw = await c.done;
      c.worker.terminate();
      return r;
    } finally {
      a.worker.terminate();
      b.worker.terminate();
    }
  }, name);
  expect(out.panic).toBe('PanicError');
  // What the next owner would read right after the close is what IndexedDB holds once the
  // closed session's flushes are all done.
  expect(out.genAtClose).toBe(out.genLater);
  // (With this timing the next owner, opened after them, sees them all: the probe shows the
  // window, not a lost write; the log's whole-chunk rewrites heal a late transaction's chunks.)
  expect(out.nextOwnerSaw).toBe(1000);
  expect(out.readerLaterSaw).toBe(1000);
});
