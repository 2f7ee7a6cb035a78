// What opening and verify() do about browser differences (issue 28): open() never waits for the
// browser's answer to navigator.storage.persist() (Firefox answers only when the user answers its
// prompt, headless never), and verify()'s helper thread is started by the page, not inside the
// database worker (a worker started inside a worker sometimes never starts in Firefox).
// Runs in every browser project.
import { test, expect, gotoPlayground, uniqueName } from './ibexdb.fixtures';

test.beforeEach(async ({ watched }) => {
  void watched;
});

test('open() returns while persist() is unanswered; db.persisted, db.persist() and options.persist', async ({ page }) => {
  // Firefox's behaviour, in any browser: persist() waits for a prompt nobody answers.
  await page.addInitScript(() => {
    const w = window as any;
    w.persistAsks = 0;
    w.persistAnswer = null; // null: never answered
    const storage = navigator.storage as any;
    if (!storage) return; // about:blank in Firefox has none
    storage.persisted = async () => w.persistAnswer === true;
    storage.persist = () => {
      w.persistAsks++;
      return w.persistAnswer === null ? new Promise(() => {}) : Promise.resolve(w.persistAnswer);
    };
  });
  await gotoPlayground(page);
  const out = await page.evaluate(async (name) => {
    const w = window as any;
    const timeout = (ms: number) => new Promise((_, reject) => setTimeout(() => reject(new Error(`open() took over ${ms} ms`)), ms));
    const db = await Promise.race([w.ibexdb.open(name), timeout(20_000)]);
    const r: any = { persisted: db.persisted, asksAfterOpen: w.persistAsks };
    await db.put('items/1', { ok: true });
    r.read = await db.get('items/1');
    r.info = (await db.storageInfo()).persisted;
    await db.close();
    // options.persist false: nothing asked; the app asks itself.
    const quiet = await Promise.race([w.ibexdb.open(name, { persist: false }), timeout(20_000)]);
    r.asksQuiet = w.persistAsks;
    w.persistAnswer = false;
    r.refused = await quiet.persist();
    w.persistAnswer = true;
    r.granted = await quiet.persist();
    r.persistedAfter = quiet.persisted;
    r.asksAfter = w.persistAsks;
    await quiet.close();
    // Already persistent: open() reads it and asks nothing.
    const again = await w.ibexdb.open(name);
    r.persistedOnOpen = again.persisted;
    r.asksLast = w.persistAsks;
    await again.close();
    return r;
  }, uniqueName('persist'));
  expect(out).toEqual({
    persisted: false,
    asksAfterOpen: 1,
    read: { ok: true },
    info: false,
    asksQuiet: 1,
    refused: false,
    granted: true,
    persistedAfter: true,
    asksAfter: 3,
    persistedOnOpen: true,
    asksLast: 3,
  });
});

test("open() as the browser has it: persist() not awaited; db.persisted is the browser's answer", async ({ page, browserName }) => {
  await gotoPlayground(page);
  const out = await page.evaluate(async (name) => {
    const { open } = (window as any).ibexdb;
    const db = await open(name);
    const r = { persisted: db.persisted, browser: await navigator.storage.persisted() };
    await db.close();
    return r;
  }, uniqueName('persist-real'));
  expect(typeof out.persisted, browserName).toBe('boolean');
  expect(out.persisted).toBe(out.browser);
});

test("verify()'s helper thread is started by the page and reached through a port; without it, verify() still uses WebCrypto", async ({ page }) => {
  // Record every worker the page starts (the database worker cannot be watched this way: its
  // own `new Worker` would not be recorded, and must not be needed).
  await page.addInitScript(() => {
    const w = window as any;
    w.started = [];
    w.refuseVerifyThread = false;
    const Native = Worker;
    w.Worker = class extends Native {
      constructor(url: string | URL, options?: WorkerOptions) {
        if (w.refuseVerifyThread && options?.name === 'ibexdb:verify') throw new Error('no helper thread here');
        super(url, options);
        w.started.push(options?.name ?? String(url));
      }
    };
  });
  await gotoPlayground(page);
  const out = await page.evaluate(async (name) => {
    const w = window as any;
    const write = async () => {
      const db = await w.ibexdb.open(name);
      await db.put(`notes/${Math.random()}`, { text: 'x' });
      await db.close(); // seals
    };
    await write();
    await write();
    const db = await w.ibexdb.open(name);
    const before = [...w.started];
    const first = await db.verify();
    const second = await db.verify();
    const r: any = { before, after: [...w.started], first: [first.signatureEngine, first.seals], second: [second.signatureEngine, second.seals] };
    await db.close();
    // No helper thread can start: the database worker verifies the signatures itself.
    w.refuseVerifyThread = true;
    const alone = await w.ibexdb.open(name);
    const report = await alone.verify();
    r.alone = [report.signatureEngine, report.seals];
    await alone.close();
    return r;
  }, uniqueName('verify-thread'));
  expect(out.before.filter((n: string) => n === 'ibexdb:verify')).toEqual([]);
  // One helper for the open database, started on its first verify() and kept.
  expect(out.after.filter((n: string) => n === 'ibexdb:verify')).toEqual(['ibexdb:verify']);
  expect(out.first).toEqual(['webcrypto', 2]);
  expect(out.second).toEqual(['webcrypto', 2]);
  expect(out.alone).toEqual(['webcrypto', 2]);
});

test("open() sends 'open' at once and the compiled wasm after it; a page that cannot compile the wasm still opens (its worker compiles it)", async ({ page }) => {
  // What the page sends its database worker, and when its compile of the wasm ended. With
  // sessionStorage.compileFails set, the page's compile is refused (the worker's is not: a
  // worker has its own WebAssembly), so the page sends `{type: 'wasm', module: null}`: early,
  // often before the worker's open has got as far as waiting for it.
  await page.addInitScript(() => {
    const w = window as any;
    w.sent = [];
    w.compiledAt = null;
    let fails = false;
    try {
      fails = sessionStorage.getItem('compileFails') === '1';
    } catch {
      // about:blank in Firefox has no sessionStorage ("The operation is insecure")
    }
    const post = Worker.prototype.postMessage;
    Worker.prototype.postMessage = function (this: Worker, m: any, ...rest: any[]) {
      if (m?.type === 'open') w.sent.push({ type: 'open', wasm: m.wasm, at: performance.now() });
      if (m?.type === 'wasm') w.sent.push({ type: 'wasm', module: m.module instanceof WebAssembly.Module ? 'module' : m.module, at: performance.now() });
      return (post as any).call(this, m, ...rest);
    };
    for (const f of ['compileStreaming', 'compile']) {
      const native = (WebAssembly as any)[f];
      if (typeof native !== 'function') continue;
      (WebAssembly as any)[f] = async function (this: unknown, ...a: unknown[]) {
        if (fails) throw new WebAssembly.CompileError('refused by the test');
        const m = await native.apply(this, a);
        w.compiledAt ??= performance.now();
        return m;
      };
    }
  });
  const run = (name: string) =>
    page.evaluate(async (name) => {
      const w = window as any;
      const db = await w.ibexdb.open(name);
      await db.put('notes/1', { text: 'x' });
      const read = await db.get('notes/1');
      await db.close();
      return { sent: w.sent.map((s: any) => ({ ...s, at: undefined })), openBeforeCompiled: w.compiledAt === null || w.sent[0].at <= w.compiledAt, read };
    }, name);
  await gotoPlayground(page);
  const normal = await run(uniqueName('open-order'));
  expect(normal.sent).toEqual([{ type: 'open', wasm: 'follows' }, { type: 'wasm', module: 'module' }]);
  expect(normal.openBeforeCompiled).toBe(true);
  expect(normal.read).toEqual({ text: 'x' });
  await page.evaluate(() => sessionStorage.setItem('compileFails', '1'));
  await gotoPlayground(page); // a new page load: the page compiles (and is refused) again
  const refused = await run(uniqueName('open-nowasm'));
  expect(refused.sent).toEqual([{ type: 'open', wasm: 'follows' }, { type: 'wasm', module: null }]);
  expect(refused.read).toEqual({ text: 'x' });
  await page.evaluate(() => sessionStorage.removeItem('compileFails'));
});
