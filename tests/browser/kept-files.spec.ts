// Review regression probes that held: kept bytes/handles across a panic's recover(), and an OPFS
// removal refused while the repository is open elsewhere (the identity handle parked meanwhile).
import { test, expect, gotoPlayground, uniqueName, WEBKIT_CANNOT } from './ibexdb.fixtures';
import { installRunWorker } from './support/workers';

for (const storage of ['indexeddb', 'opfs'] as const) {
  test(`${storage}: recover() after a panic and a reopen from kept files see only what was flushed`, async ({ page, watched, browserName }) => {
    void watched;
    test.skip(browserName === 'webkit' && storage === 'opfs', WEBKIT_CANNOT.opfs);
    const name = uniqueName(`kept-recover-${storage}`);
    await gotoPlayground(page);
    await installRunWorker(page);
    const out = await page.evaluate(async ({ name, storage }) => {
      const w = (window as any).__runWorker(`
        const o = { storage: ${JSON.stringify(storage)} };
        const r = {};
        try {
          let eng = await E.openEngine(${JSON.stringify(name)}, o);
          for (let i = 0; i < 50; i++) eng.put('items/' + i, { i });
          eng.flush();
          await eng.durable();
          for (let i = 50; i < 60; i++) eng.put('items/' + i, { i }); // never flushed
          try { eng.panicForTest('review'); } catch (e) { r.panic = String(e?.name); }
          await eng.recover();
          r.afterRecover = eng.count('items');
          eng.put('items/after', { ok: 1 });
          eng.flush();
          await eng.close();
          eng = await E.openEngine(${JSON.stringify(name)}, o);
          r.reopened = [eng.count('items'), eng.get('items/55') ?? null, eng.get('items/after') ?? null];
          r.verify = JSON.parse(eng.verifyJson()).commits;
          await eng.close();
          postMessage({ done: r });
        } catch (e) { postMessage({ error: String(e?.name) + ': ' + String(e?.message) }); }`, async () => null);
      try {
        return await w.done;
      } finally {
        w.worker.terminate();
      }
    }, { name, storage });
    expect(out).toEqual({ panic: 'PanicError', afterRecover: 50, reopened: [51, null, { ok: 1 }], verify: 51 });
  });
}

test('opfs: a removal while another worker has the repository open is refused; the open engine goes on, and reopens', async ({ page, watched, browserName }) => {
  void watched;
  test.skip(browserName === 'webkit', WEBKIT_CANNOT.opfs);
  const name = uniqueName('opfs-remove-open');
  await gotoPlayground(page);
  await installRunWorker(page);
  const out = await page.evaluate(async (name) => {
    const run = (window as any).__runWorker;
    const w = run(`
      const o = { storage: 'opfs' };
      const r = {};
      try {
        let eng = await E.openEngine(${JSON.stringify(name)}, o);
        r.parkedWhileOpen = P.keptFiles(${JSON.stringify(name)});
        const pk = eng.publicKey;
        eng.put('items/a', { a: 1 });
        eng.flush();
        r.removal = await next(postMessage({ stage: 'open' }));
        r.parkedAfterAsk = P.keptFiles(${JSON.stringify(name)});
        eng.put('items/b', { b: 1 });
        eng.flush();
        await eng.close();
        eng = await E.openEngine(${JSON.stringify(name)}, o);
        r.reopened = eng.count('items');
        r.sameIdentity = String(eng.publicKey) === String(pk) && pk != null;
        r.verify = JSON.parse(eng.verifyJson()).commits;
        await eng.close();
        postMessage({ done: r });
      } catch (e) { postMessage({ error: String(e?.name) + ': ' + String(e?.message) }); }`, async () => {
      const other = run(`
        try { await S.removeRepository(${JSON.stringify(name)}); postMessage({ done: 'removed' }); }
        catch (e) { postMessage({ done: String(e?.name) }); }`, async () => null);
      try {
        return await other.done;
      } finally {
        other.worker.terminate();
      }
    });
    try {
      return await w.done;
    } finally {
      w.worker.terminate();
    }
  }, name);
  expect(out).toEqual({ parkedWhileOpen: ['identity'], removal: 'NoModificationAllowedError', parkedAfterAsk: [], reopened: 2, sameIdentity: true, verify: 2 });
});

test('indexeddb: a worker keeps at most KEPT_REPOSITORIES closed repositories, the least recently closed going first', async ({ page, watched }) => {
  void watched;
  const base = uniqueName('kept-bound');
  await gotoPlayground(page);
  await installRunWorker(page);
  const out = await page.evaluate(async (base) => {
    const w = (window as any).__runWorker(`
      const o = { storage: 'indexeddb' };
      try {
        const names = [];
        for (let i = 0; i < I.KEPT_REPOSITORIES + 2; i++) {
          const name = ${JSON.stringify(base)} + '-' + i;
          names.push(name);
          const eng = await E.openEngine(name, o);
          eng.put('items/x', { i });
          await eng.close();
        }
        // Reopening the oldest kept one makes it the most recently closed.
        const eng = await E.openEngine(names[2], o);
        await eng.close();
        postMessage({ done: { bound: I.KEPT_REPOSITORIES, kept: names.map((n) => I.keptFiles(n).length > 0) } });
      } catch (e) { postMessage({ error: String(e?.name) + ': ' + String(e?.message) }); }`, async () => null);
    try {
      return await w.done;
    } finally {
      w.worker.terminate();
    }
  }, base);
  expect(out.bound).toBe(8);
  expect(out.kept).toEqual([false, false, true, true, true, true, true, true, true, true]);
});
