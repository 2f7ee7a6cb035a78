// An identity wrapped under a passphrase (www/lib/identity-wrap.js, docs/design.md §11.5.2):
// `db.exportIdentity({passphrase})` on one device, `open(name, {identity, passphrase})` on another
// (another browser context: another OPFS) signs with the same key; a wrong passphrase or a changed
// byte is a PassphraseError and nothing is opened or stored; text cut short, a missing or empty
// passphrase, a passphrase of the wrong type: InvalidValueError naming the option.
import { test, expect, gotoPlayground, uniqueName } from './ibexdb.fixtures';

test.beforeEach(async ({ page, watched }) => {
  void watched;
  await gotoPlayground(page);
});

test('wrapped identity: exported, opened under a fresh name in another browser context, same key; each export freshly salted', async ({ page, browser, browserName }) => {
  const name = uniqueName('wrapA');
  const a = await page.evaluate(async (name) => {
    const { open } = (window as any).ibexdb;
    const db = await open(name);
    await db.put('notes/1', { text: 'from A' });
    let t = performance.now();
    const wrapped = await db.exportIdentity({ passphrase: 'correct horse battery staple' });
    const exportMs = performance.now() - t;
    const again = await db.exportIdentity({ passphrase: 'correct horse battery staple' });
    const clear = await db.exportIdentity();
    // NFC: the passphrase typed composed or decomposed is the same passphrase.
    const unicode = await db.exportIdentity({ passphrase: 'caf\u00e9 \u{1F600}' });
    const publicKey = db.publicKey;
    await db.close();
    return { wrapped, again, clear, unicode, publicKey, exportMs };
  }, name);
  expect(a.wrapped).toMatch(/^ibexdb-wrapped-identity-v1:[A-Za-z0-9_-]{128}$/);
  expect(a.again).not.toBe(a.wrapped);
  expect(a.clear).toMatch(/^ibexdb-identity-v1:[0-9a-f]{96}$/);
  expect(a.wrapped).not.toContain(a.clear.slice(19, 40));
  console.log(`exportIdentity({passphrase}) in ${browserName}: ${a.exportMs.toFixed(0)} ms (PBKDF2-SHA-256, 600,000 iterations)`);

  const ctx = await browser.newContext();
  try {
    const pageB = await ctx.newPage();
    await gotoPlayground(pageB);
    const b = await pageB.evaluate(async ([name, a]) => {
      const { open } = (window as any).ibexdb;
      const t = performance.now();
      const db = await open(name, { identity: a.wrapped, passphrase: 'correct horse battery staple' });
      const openMs = performance.now() - t;
      await db.put('notes/2', { text: 'from B, as A' });
      const publicKey = db.publicKey;
      const verify = (await db.verify()).commits;
      await db.close();
      // The imported identity is kept: a plain reopen signs as A.
      const again = await open(name);
      const kept = again.publicKey;
      await again.close();
      const other = uniqueName2();
      const u = await open(other, { identity: a.unicode, passphrase: 'cafe\u0301 \u{1F600}' });
      const unicodeKey = u.publicKey;
      await u.close();
      return { publicKey, verify, kept, unicodeKey, openMs };
      function uniqueName2() {
        return `wrapU-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
      }
    }, [uniqueName('wrapB'), a] as const);
    console.log(`open(name, {identity, passphrase}) in ${browserName}: ${b.openMs.toFixed(0)} ms`);
    expect(b).toMatchObject({ publicKey: a.publicKey, verify: 1, kept: a.publicKey, unicodeKey: a.publicKey });
  } finally {
    await ctx.close();
  }
});

test('wrapped identity: a wrong passphrase or a changed byte is a PassphraseError, nothing opened or stored; bad text and passphrases are InvalidValueError', async ({ page }) => {
  const [src, fresh, existing] = [uniqueName('wrapSrc'), uniqueName('wrapNone'), uniqueName('wrapKeep')];
  const out = await page.evaluate(async ([src, fresh, existing]) => {
    const { open, PassphraseError, InvalidValueError } = (window as any).ibexdb;
    const db = await open(src);
    const wrapped: string = await db.exportIdentity({ passphrase: 'correct horse' });
    const clear: string = await db.exportIdentity();
    const exportErrors: any[] = [];
    for (const opts of [{ passphrase: '' }, { passphrase: 42 }, { passphrase: null }, { passphrase: ['x'] }, {}, 'correct horse', null, { passphrase: 'p', iterations: 1 }]) {
      exportErrors.push(await db.exportIdentity(opts).then(() => 'exported', (e: any) => [e.name, e.argument, e instanceof InvalidValueError]));
    }
    await db.close();
    // Stored in OPFS (the sync-handle backend) or in IndexedDB (the backend where there are no
    // sync handles: WebKitGTK, whose automation session cannot even get the OPFS directory).
    const stored = async (name: string) => {
      const inOpfs = await navigator.storage
        .getDirectory()
        .then((d) => d.getDirectoryHandle('ibexdb'))
        .then((root) => root.getDirectoryHandle(name))
        .then(() => true, () => false);
      const inIdb = (await indexedDB.databases()).some((d) => d.name === `ibexdb/${name}`);
      return inOpfs || inIdb;
    };
    const attempt = (name: string, opts: any) => open(name, opts).then(
      async (d: any) => (await d.close(), 'opened'),
      (e: any) => ({ name: e.name, kind: e.kind, argument: e.argument, typed: e instanceof PassphraseError || e instanceof InvalidValueError }),
    );
    // One bit changed: the lowest bit of base64url character i.
    const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const at = (i: number) => wrapped.slice(0, i) + B64[B64.indexOf(wrapped[i]) ^ 1] + wrapped.slice(i + 1);
    const prefix = 'ibexdb-wrapped-identity-v1:'.length;
    const cases: Record<string, any> = {
      wrongPassphrase: { identity: wrapped, passphrase: 'correct horsе' }, // a Cyrillic е
      // Character 4 holds the iterations' byte 3 (bits 7-2): 600,000 becomes 600,004.
      flippedIterations: { identity: at(prefix + 4), passphrase: 'correct horse' },
      flippedSalt: { identity: at(prefix + 10), passphrase: 'correct horse' },
      flippedNonce: { identity: at(prefix + 35), passphrase: 'correct horse' },
      flippedSecret: { identity: at(prefix + 60), passphrase: 'correct horse' },
      flippedTag: { identity: at(wrapped.length - 3), passphrase: 'correct horse' },
      truncated: { identity: wrapped.slice(0, -1), passphrase: 'correct horse' },
      extended: { identity: `${wrapped}AAAA`, passphrase: 'correct horse' },
      notBase64: { identity: `${wrapped.slice(0, -1)}=`, passphrase: 'correct horse' },
      hugeIterations: { identity: wrapped.slice(0, prefix) + '_____' + wrapped.slice(prefix + 5), passphrase: 'correct horse' },
      noPassphrase: { identity: wrapped },
      emptyPassphrase: { identity: wrapped, passphrase: '' },
      numberPassphrase: { identity: wrapped, passphrase: 42 },
      objectPassphrase: { identity: wrapped, passphrase: { toString: () => 'correct horse' } },
      passphraseWithClear: { identity: clear, passphrase: 'correct horse' },
      passphraseAlone: { passphrase: 'correct horse' },
    };
    const results: Record<string, any> = {};
    for (const [k, opts] of Object.entries(cases)) results[k] = await attempt(fresh, opts);
    const freshStored = await stored(fresh);
    // An existing repository keeps its own identity when a wrapped one does not unlock.
    const e = await open(existing);
    const own = e.publicKey;
    await e.close();
    const refused = await attempt(existing, { identity: wrapped, passphrase: 'wrong' });
    const e2 = await open(existing);
    const after = e2.publicKey;
    await e2.close();
    return { exportErrors, results, freshStored, refused, keptOwn: own === after };
  }, [src, fresh, existing] as const);
  const iv = (argument: string) => ['InvalidValueError', argument, true];
  expect(out.exportErrors).toEqual([iv('options.passphrase'), iv('options.passphrase'), iv('options.passphrase'), iv('options.passphrase'), iv('options.passphrase'), iv('options'), iv('options'), iv('options.iterations')]);
  const pass = { name: 'PassphraseError', kind: 'wrong-passphrase', typed: true };
  const bad = (argument: string) => ({ name: 'InvalidValueError', argument, typed: true });
  expect(out.results).toEqual({
    wrongPassphrase: pass,
    flippedIterations: pass,
    flippedSalt: pass,
    flippedNonce: pass,
    flippedSecret: pass,
    flippedTag: pass,
    truncated: bad('options.identity'),
    extended: bad('options.identity'),
    notBase64: bad('options.identity'),
    hugeIterations: bad('options.identity'),
    noPassphrase: bad('options.passphrase'),
    emptyPassphrase: bad('options.passphrase'),
    numberPassphrase: bad('options.passphrase'),
    objectPassphrase: bad('options.passphrase'),
    passphraseWithClear: bad('options.passphrase'),
    passphraseAlone: bad('options.passphrase'),
  });
  expect(out.freshStored).toBe(false);
  expect(out.refused).toEqual(pass);
  expect(out.keptOwn).toBe(true);
});
