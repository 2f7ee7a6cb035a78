// Every error class crosses the worker boundary with its stable `name` and is an instance of
// the class exported by www/ibexdb.js.
import { test, expect, gotoPlayground, uniqueName } from './ibexdb.fixtures';

test.beforeEach(async ({ page, watched }) => {
  void watched;
  await gotoPlayground(page);
});

/** Runs in the page: `catchName(promise)` -> the error's name (checked against its class). */
const HELPERS = `
  window.catchName = async (p) => {
    try { await p; } catch (e) {
      const cls = window.ibexdb[e.name];
      if (typeof cls !== 'function' || !(e instanceof cls) || !(e instanceof window.ibexdb.IbexError)) {
        return 'not an instance of its class: ' + e.name + ': ' + e.message;
      }
      return e.name;
    }
    return 'no error';
  };
  // The repository's files, wherever the default backend keeps them: its OPFS directory, or (where
  // there is no OPFS: WebKitGTK) its IndexedDB database, whose layout is backends/indexeddb.js's
  // (a file's size under [file, -1], its bytes in 64 KiB chunks under [file, i]; a write counts
  // the repository's generation, so that a worker keeping the closed files' bytes loads them again).
  const idb = (name) => new Promise((res, rej) => { const r = indexedDB.open('ibexdb/' + name); r.onsuccess = () => res(r.result); r.onerror = () => rej(r.error); });
  const done = (r) => new Promise((res, rej) => { r.onsuccess = () => res(r.result); r.onerror = () => rej(r.error); });
  const range = (file) => IDBKeyRange.bound([file, 0], [file, Infinity]);
  const idbChange = async (name, f) => {
    const db = await idb(name);
    const tx = db.transaction('files', 'readwrite');
    const store = tx.objectStore('files');
    f(store);
    const g = store.get('generation');
    g.onsuccess = () => store.put((g.result ?? 0) + 1, 'generation');
    await new Promise((res, rej) => { tx.oncomplete = res; tx.onerror = () => rej(tx.error); });
    db.close();
  };
  window.opfsDir = async (name) => {
    const inOpfs = await navigator.storage.getDirectory().then((root) => root.getDirectoryHandle('ibexdb')).then((d) => d.getDirectoryHandle(name), () => null);
    if (inOpfs) return inOpfs;
    return { idb: name, removeEntry: (file) => idbChange(name, (s) => { s.delete(range(file)); s.delete([file, -1]); }) };
  };
  window.readFile = async (dir, file) => {
    if (!dir.idb) return new Uint8Array(await (await (await dir.getFileHandle(file)).getFile()).arrayBuffer());
    const db = await idb(dir.idb);
    const store = db.transaction('files').objectStore('files');
    const [size, chunks] = await Promise.all([done(store.get([file, -1])), done(store.getAll(range(file)))]);
    db.close();
    const out = new Uint8Array(size);
    chunks.forEach((c, i) => out.set(new Uint8Array(c.buffer ?? c, c.byteOffset ?? 0, Math.min(c.byteLength, size - i * 65536)), i * 65536));
    return out;
  };
  window.writeFile = async (dir, file, bytes) => {
    if (dir.idb) {
      return idbChange(dir.idb, (s) => {
        s.delete(range(file));
        for (let i = 0; i * 65536 < bytes.length; i++) s.put(bytes.slice(i * 65536, (i + 1) * 65536), [file, i]);
        s.put(bytes.length, [file, -1]);
      });
    }
    const w = await (await dir.getFileHandle(file)).createWritable({ keepExistingData: false });
    await w.write(bytes);
    await w.close();
  };
  window.crc32 = (bytes) => {
    let c, crc = 0xffffffff;
    for (const b of bytes) {
      c = (crc ^ b) & 0xff;
      for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xedb88320 : c >>> 1;
      crc = (crc >>> 8) ^ c;
    }
    return (crc ^ 0xffffffff) >>> 0;
  };
`;

test('write, key, value, schema, query and closed errors', async ({ page }) => {
  await page.evaluate(HELPERS);
  const out = await page.evaluate(async (name) => {
    const w = window as any;
    const { open } = w.ibexdb;
    const db = await open(name, { schemas: { people: { fields: { name: { type: 'string', required: true } } } } });
    const r: Record<string, string> = {};
    r.schema = await w.catchName(db.put('people/1', { age: 3 }));
    r.schemaField = await db.put('people/1', { name: 5 }).catch((e: any) => e.field);
    r.invalidSchema = await w.catchName(db.defineSchema('things', { fields: { a: { type: 'nope' } } }));
    r.notFound = await w.catchName(db.update('people/none', { name: 'x' }));
    r.invalidKey = await w.catchName(db.get('no-slash'));
    r.invalidKeyPut = await w.catchName(db.put('bad collection/1', { a: 1 }));
    r.invalidRepo = await w.catchName(open('../escape'));
    r.nan = await w.catchName(db.put('x/1', { n: NaN }));
    r.date = await w.catchName(db.put('x/1', { d: new Date() }));
    r.dotted = await w.catchName(db.put('x/1', { 'a.b': 1 }));
    r.setOfNumbers = await w.catchName(db.put('x/1', { s: new Set([1]) }));
    r.tooLarge = await w.catchName(db.put('x/big', { s: 'x'.repeat(17 << 20) }));
    r.query = await w.catchName(db.query({ collection: 'x', where: { a: { frobnicate: 1 } } }));
    r.decode = await w.catchName(db.receive(new Uint8Array([1, 2, 3])));
    await db.close();
    r.closed = await w.catchName(db.get('x/1'));
    return r;
  }, uniqueName('errors'));
  expect(out).toEqual({
    schema: 'SchemaError',
    schemaField: 'name',
    invalidSchema: 'InvalidSchemaError',
    notFound: 'NotFoundError',
    invalidKey: 'InvalidKeyError',
    invalidKeyPut: 'InvalidKeyError',
    invalidRepo: 'InvalidKeyError',
    nan: 'InvalidValueError',
    date: 'InvalidValueError',
    dotted: 'InvalidValueError',
    setOfNumbers: 'InvalidValueError',
    tooLarge: 'TooLargeError',
    query: 'QueryError',
    decode: 'DecodeError',
    closed: 'ClosedError',
  });
});

test('QuotaExceededError from the engine byte limit; the failed write is not kept', async ({ page }) => {
  await page.evaluate(HELPERS);
  const out = await page.evaluate(async (name) => {
    const w = window as any;
    const db = await w.ibexdb.open(name, { quotaBytes: 4096 });
    let i = 0;
    let err: any = null;
    for (; i < 1000 && !err; i++) {
      await db.put(`items/${i}`, { text: 'x'.repeat(200) }).catch((e: any) => (err = e));
    }
    const failedKey = `items/${i - 1}`;
    const res = {
      name: err?.name,
      isClass: err instanceof w.ibexdb.QuotaExceededError && err instanceof w.ibexdb.StorageError,
      written: i - 1,
      failedVisible: (await db.get(failedKey)) !== undefined,
      firstStillThere: (await db.get('items/0')) !== undefined,
    };
    await db.close().catch(() => {});
    return res;
  }, uniqueName('quota'));
  expect(out.name).toBe('QuotaExceededError');
  expect(out.isClass).toBe(true);
  expect(out.written).toBeGreaterThan(3);
  expect(out.failedVisible).toBe(false);
  expect(out.firstStillThere).toBe(true);
});

test("StorageUnavailableError when OPFS is missing and storage: 'opfs' asks for it", async ({ page }) => {
  await page.evaluate(HELPERS);
  const out = await page.evaluate(async (name) => {
    const w = window as any;
    delete (StorageManager.prototype as any).getDirectory;
    // 'auto' (the default) would use IndexedDB here (storage.spec.ts); 'opfs' insists.
    return w.catchName(w.ibexdb.open(name, { storage: 'opfs' }));
  }, uniqueName('unavail'));
  expect(out).toBe('StorageUnavailableError');
});

test('CorruptError on mid-log damage; repair mode opens anyway', async ({ page }) => {
  await page.evaluate(HELPERS);
  const out = await page.evaluate(async (name) => {
    const w = window as any;
    const db = await w.ibexdb.open(name);
    for (let i = 0; i < 3; i++) await db.put(`items/${i}`, { text: `item ${i}` });
    await db.close();
    const dir = await w.opfsDir(name);
    await dir.removeEntry('snapshot');
    const log = await w.readFile(dir, 'log');
    log[16 + 9 + 4] ^= 0xff; // inside the first frame's payload
    await w.writeFile(dir, 'log', log);
    const res: any = {};
    res.open = await w.catchName(w.ibexdb.open(name));
    const err = await w.ibexdb.open(name).catch((e: any) => e);
    res.offset = err.offset;
    const repaired = await w.ibexdb.open(name, { recovery: 'repair' });
    res.after = (await repaired.getMany(['items/0', 'items/1', 'items/2'])).map((x: any) => x ?? null);
    await repaired.close();
    return res;
  }, uniqueName('corrupt'));
  expect(out.open).toBe('CorruptError');
  expect(out.offset).toBe(16);
  // The later commits descend from the damaged one: they wait for it (a peer may resend it).
  expect(out.after).toEqual([null, null, null]);
});

test('SignatureError for unsigned commits; a damaged snapshot block: reads answered from the log, VerifyError', async ({ page }) => {
  await page.evaluate(HELPERS);
  const out = await page.evaluate(async ([a, b, c]) => {
    const w = window as any;
    const trusted = await w.ibexdb.open(a, { trusted: true });
    await trusted.put('notes/1', { t: 1 });
    const bundle = await trusted.exportCommits();
    await trusted.close();
    const signed = await w.ibexdb.open(b);
    const res: any = {};
    res.signature = await w.catchName(signed.receive(bundle));
    res.kind = await signed.receive(bundle).catch((e: any) => e.kind);
    await signed.close();

    const db = await w.ibexdb.open(c);
    await db.put('notes/1', { text: 'hello' });
    await db.close(); // writes a snapshot
    const dir = await w.opfsDir(c);
    const snap = await w.readFile(dir, 'snapshot');
    const needle = new TextEncoder().encode('hello');
    let at = -1;
    for (let i = 0; i + needle.length <= snap.length && at < 0; i++) {
      if (needle.every((x: number, j: number) => snap[i + j] === x)) at = i;
    }
    // Damage the item's block (its CRC no longer checks): open reads only the meta section,
    // the read that needs the block finds the damage and rebuilds the state from the log.
    snap[at] = 'j'.charCodeAt(0);
    await w.writeFile(dir, 'snapshot', snap);
    const again = await w.ibexdb.open(c);
    res.tampered = (await again.get('notes/1')).text;
    res.verify = await w.catchName(again.verify());
    await again.close();
    return res;
  }, [uniqueName('trusted'), uniqueName('signed'), uniqueName('tamper')]);
  expect(out.signature).toBe('SignatureError');
  expect(out.kind).toBe('unsigned');
  expect(out.tampered).toBe('hello');
  expect(out.verify).toBe('VerifyError');
});

test('verify(): seal signatures by WebCrypto; a tampered seal is still a SignatureError', async ({ page }) => {
  await page.evaluate(HELPERS);
  const out = await page.evaluate(async (name) => {
    const w = window as any;
    for (let i = 0; i < 2; i++) {
      const db = await w.ibexdb.open(name);
      await db.put(`notes/${i}`, { text: `note ${i}` });
      await db.close(); // seals
    }
    const db = await w.ibexdb.open(name);
    const res: any = { good: await db.verify() };
    await db.close();
    // Flip a bit in the first seal's signature (the payload's last 96 bytes); fix the frame's CRC.
    const dir = await w.opfsDir(name);
    const log = await w.readFile(dir, 'log');
    const view = new DataView(log.buffer);
    let at = 16;
    while (log[at + 8] !== 2) at += 9 + view.getUint32(at, true);
    const end = at + 9 + view.getUint32(at, true);
    log[end - 10] ^= 1;
    const covered = new Uint8Array([...log.subarray(at, at + 4), ...log.subarray(at + 8, end)]);
    view.setUint32(at + 4, w.crc32(covered), true);
    await w.writeFile(dir, 'log', log);
    const tampered = await w.ibexdb.open(name);
    res.name = await w.catchName(tampered.verify());
    const err = await tampered.verify().catch((e: any) => e);
    res.kind = err.kind;
    res.message = err.message;
    await tampered.close();
    return res;
  }, uniqueName('sigs'));
  expect(out.good.signatureEngine).toBe('webcrypto');
  expect(out.good.seals).toBe(2);
  expect(out.good.signaturesVerified).toBe(2);
  expect(out.good.signaturesVouched).toBeUndefined();
  // The engine's own verify() reports it, as without WebCrypto.
  expect(out.name).toBe('SignatureError');
  expect(out.kind).toBe('bad-signature');
  expect(out.message).toContain('does not verify');
});

test('PanicError: the worker survives, reopens from OPFS, and the rest of the batch runs', async ({ page }) => {
  await page.evaluate(HELPERS);
  const out = await page.evaluate(async (name) => {
    const w = window as any;
    const db = await w.ibexdb.open(name);
    await db.put('items/before', { n: 1 });
    const lq = await db.live({ collection: 'items' });
    // Same tick: one batch holding a write, the panic, and another write.
    const p1 = db.put('items/a', { n: 2 });
    const p2 = w.catchName(db._debugPanic('boom'));
    const p3 = db.put('items/b', { n: 3 });
    const [, panic] = await Promise.all([p1, p2, p3]);
    const msg = await db._debugPanic('second').catch((e: any) => e.message);
    const res = {
      panic,
      msg,
      items: await db.getMany(['items/before', 'items/a', 'items/b']),
      live: lq.results.map((r: any) => r.id),
      verify: (await db.verify()).commits,
    };
    await db.put('items/c', { n: 4 });
    res.live = lq.results.map((r: any) => r.id);
    await db.close();
    return res;
  }, uniqueName('panic'));
  expect(out.panic).toBe('PanicError');
  expect(out.msg).toContain('second');
  expect(out.items).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
  expect(out.verify).toBe(3);
  expect(out.live).toEqual(['a', 'b', 'before', 'c']);
});
