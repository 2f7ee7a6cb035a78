// Attachments where the worker has no OPFS sync access handles (docs/design.md §6.7): on the
// IndexedDB backend (WebKitGTK's, older Safari's) each file is Blobs of 1 MiB in a database of
// its own, `ibexdb-attachments/<name>`; with `storage: 'memory'` Blobs in the worker's memory.
// Runs in Chromium, Firefox and WebKitGTK (playwright.config.ts SHARED_SPECS): round trips of 0 B,
// 1 B and 5 MB from every source type with the SHA-256 checked, one copy of identical bytes,
// reclaim at the next session of what no item refers to (never of what one does), a worker killed
// mid-write (whole or none), and a full quota.
import { test, expect, gotoPlayground, uniqueName } from './ibexdb.fixtures';

test.beforeEach(async ({ page, watched }) => {
  void watched;
  await gotoPlayground(page);
});

// Helpers defined in the page (as text: page.evaluate takes no closures from here).
const HELPERS = `
  window.__fb = {
    byteAt(i, s) { return ((i * 2654435761 + s * 40503) >>> 13) & 255; },
    bytes(n, s) { const b = new Uint8Array(n); for (let i = 0; i < n; i++) b[i] = this.byteAt(i, s); return b; },
    stream(n, s, chunk) {
      let at = 0;
      const self = this;
      return new ReadableStream({
        pull(c) {
          if (at >= n) { c.close(); return; }
          const len = Math.min(chunk, n - at);
          const b = new Uint8Array(len);
          for (let i = 0; i < len; i++) b[i] = self.byteAt(at + i, s);
          at += len;
          c.enqueue(b);
        },
      });
    },
    async same(blob, n, s) {
      if (blob.size !== n) return 'size ' + blob.size + ' != ' + n;
      const b = new Uint8Array(await blob.arrayBuffer());
      for (let i = 0; i < n; i++) if (b[i] !== this.byteAt(i, s)) return 'byte ' + i + ' differs';
      return 'same';
    },
    async sha256(buf) {
      return [...new Uint8Array(await crypto.subtle.digest('SHA-256', buf))].map((b) => b.toString(16).padStart(2, '0')).join('');
    },
    // The attachments database as the page sees it: {files: {hash: size}, loose: pieces no file names}.
    async idb(name) {
      const db = await new Promise((res, rej) => {
        const r = indexedDB.open('ibexdb-attachments/' + name, 1);
        r.onupgradeneeded = () => { r.result.createObjectStore('chunks'); r.result.createObjectStore('files'); };
        r.onsuccess = () => res(r.result);
        r.onerror = () => rej(r.error);
      });
      const get = (store, f) => new Promise((res, rej) => { const r = f(db.transaction(store).objectStore(store)); r.onsuccess = () => res(r.result); r.onerror = () => rej(r.error); });
      const keys = await get('files', (s) => s.getAllKeys());
      const recs = await get('files', (s) => s.getAll());
      const chunks = await get('chunks', (s) => s.getAllKeys());
      db.close();
      const files = {};
      keys.forEach((k, i) => { files[k] = recs[i].size; });
      const named = new Set(recs.map((r) => r.id));
      return { files, loose: chunks.filter((k) => !named.has(k[0])).length };
    },
  };
`;

for (const storage of ['indexeddb', 'memory'] as const) {
  test(`attach and read back 0 B, 1 B and 5 MB from every source; the hash is the SHA-256; identical bytes once (storage: ${storage})`, async ({ page }) => {
    await page.evaluate(HELPERS);
    const out = await page.evaluate(async ({ name, storage }) => {
      const { open } = (window as any).ibexdb;
      const F = (window as any).__fb;
      const db = await open(name, { storage });
      await db.put('tasks/1', { title: 'with files' });
      await db.put('tasks/2', { title: 'same photo' });
      const cases: [string, number, number, (b: Uint8Array) => unknown][] = [
        ['empty.bin', 0, 1, (b) => new Blob([b])],
        ['one.bin', 1, 2, (b) => b.buffer],
        ['five.bin', 5_000_000, 3, (b) => b],
        ['five-stream.bin', 5_000_000, 4, () => F.stream(5_000_000, 4, 300_000)],
      ];
      const results: any[] = [];
      for (const [file, n, seed, make] of cases) {
        const bytes = F.bytes(n, seed);
        const want = await F.sha256(bytes);
        const d = await db.attach('tasks/1', file, make(bytes), { type: 'application/x-test' });
        const blob = await db.attachment('tasks/1', file);
        results.push({ file, hash: d.hash, want, type: blob.type, same: await F.same(blob, n, seed) });
      }
      // The same bytes on another item: stored once.
      const again = await db.attach('tasks/2', 'copy.bin', F.bytes(5_000_000, 3));
      const list = (await db.attachments('tasks/1')).map((a: any) => a.name);
      const info = (await db.storageInfo()).repository;
      const stored = storage === 'indexeddb' ? await F.idb(name) : null;
      await db.close();
      return { results, again: again.hash, list, info, stored };
    }, { name: uniqueName(`att-${storage}`), storage });
    for (const r of out.results) {
      expect(r.hash, r.file).toBe(r.want);
      expect(r.same, r.file).toBe('same');
      expect(r.type, r.file).toBe('application/x-test');
    }
    expect(out.again).toBe(out.results[2].want);
    expect(out.list).toEqual(['empty.bin', 'five-stream.bin', 'five.bin', 'one.bin']);
    expect(out.info.attachmentBytes).toBe(0 + 1 + 5_000_000 * 2);
    if (out.stored) {
      expect(Object.keys(out.stored.files).sort()).toEqual(out.results.map((r: any) => r.want).sort());
      expect(out.stored.loose).toBe(0);
    }
  });
}

test('IndexedDB: at the next session a file no item refers to is reclaimed and a referenced one never is', async ({ page }) => {
  await page.evaluate(HELPERS);
  const out = await page.evaluate(async (name) => {
    const { open } = (window as any).ibexdb;
    const F = (window as any).__fb;
    let db = await open(name, { storage: 'indexeddb' });
    await db.put('tasks/1', { t: 1 });
    await db.put('tasks/2', { t: 2 });
    const shared = await db.attach('tasks/1', 'photo.jpg', F.bytes(2_500_000, 1), { type: 'image/jpeg' });
    await db.attach('tasks/2', 'photo.jpg', F.bytes(2_500_000, 1));
    const scan = await db.attach('tasks/2', 'scan.pdf', F.bytes(50_000, 2));
    await db.detach('tasks/1', 'photo.jpg');
    await db.detach('tasks/2', 'scan.pdf');
    // Nothing is removed while the repository is open.
    const held = await db.attachment('tasks/2', 'photo.jpg');
    const beforeReopen = await F.idb(name);
    await db.close();
    db = await open(name, { storage: 'indexeddb' });
    const reads = await F.same(await db.attachment('tasks/2', 'photo.jpg'), 2_500_000, 1);
    const afterReopen = await F.idb(name);
    const gone = await db.attachment('tasks/2', 'scan.pdf').then(() => 'read', (e: any) => e.name);
    await db.delete('tasks/2');
    await db.close();
    db = await open(name, { storage: 'indexeddb' });
    await db.attachments('tasks/2');
    await db.put('tasks/3', { t: 3 });
    await db.attach('tasks/3', 'new.bin', F.bytes(10, 3));
    const afterDelete = await F.idb(name);
    await db.close();
    return { shared: shared.hash, scan: scan.hash, heldSize: held.size, beforeReopen, reads, afterReopen, gone, afterDelete };
  }, uniqueName('att-idb-reclaim'));
  expect(out.heldSize).toBe(2_500_000);
  expect(Object.keys(out.beforeReopen.files).sort()).toEqual([out.shared, out.scan].sort());
  expect(out.reads).toBe('same');
  expect(out.afterReopen.files).toEqual({ [out.shared]: 2_500_000 });
  expect(out.gone).toBe('AttachmentNotFoundError');
  expect(Object.keys(out.afterDelete.files)).toHaveLength(1);
  expect(out.afterDelete.files[out.shared]).toBeUndefined();
  expect(out.afterDelete.loose).toBe(0);
});

test('IndexedDB: a worker killed while an attachment streams leaves none of it visible, and its pieces go at the next session', async ({ page, context, browserName }) => {
  test.skip(browserName === 'webkit', 'WebKit cannot transfer a ReadableStream to the worker: the page reads a stream into a Blob before it sends it (attachments-page.js), so a stream that never ends never reaches the worker to be cut');
  await page.evaluate(HELPERS);
  const name = uniqueName('att-idb-kill');
  await page.evaluate(async (name) => {
    const { open } = (window as any).ibexdb;
    const F = (window as any).__fb;
    const db = await open(name, { storage: 'indexeddb' });
    await db.put('tasks/1', { t: 1 });
    await db.attach('tasks/1', 'whole.bin', F.bytes(3_000_000, 5));
    let sent = 0;
    const endless = new ReadableStream({
      pull(c) {
        if (sent >= 4 << 20) return new Promise(() => {});
        sent += 1 << 20;
        c.enqueue(F.bytes(1 << 20, 6));
        return undefined;
      },
    });
    (window as any).__pending = db.attach('tasks/1', 'cut.bin', endless);
  }, name);
  await expect.poll(() => page.evaluate((name) => (window as any).__fb.idb(name).then((s: any) => s.loose), name), { timeout: 30_000 }).toBeGreaterThan(0);
  await page.close();
  const page2 = await context.newPage();
  await gotoPlayground(page2);
  await page2.evaluate(HELPERS);
  const out = await page2.evaluate(async (name) => {
    const { open } = (window as any).ibexdb;
    const F = (window as any).__fb;
    const db = await open(name, { storage: 'indexeddb' });
    const list = (await db.attachments('tasks/1')).map((a: any) => a.name);
    const whole = await F.same(await db.attachment('tasks/1', 'whole.bin'), 3_000_000, 5);
    const stored = await F.idb(name);
    const report = await db.verify();
    await db.close();
    return { list, whole, stored, commits: report.commits };
  }, name);
  expect(out.list).toEqual(['whole.bin']);
  expect(out.whole).toBe('same');
  expect(Object.keys(out.stored.files)).toHaveLength(1);
  expect(out.stored.loose).toBe(0);
  expect(out.commits).toBe(2);
});

for (const storage of ['indexeddb', 'memory'] as const) {
  test(`at the quota an attach is QuotaExceededError with nothing written (storage: ${storage})`, async ({ page }) => {
    await page.evaluate(HELPERS);
    const out = await page.evaluate(async ({ name, storage }) => {
      const { open } = (window as any).ibexdb;
      const F = (window as any).__fb;
      const db = await open(name, { storage, quotaBytes: 256 * 1024 });
      await db.put('tasks/1', { t: 1 });
      const big = await db.attach('tasks/1', 'big.bin', F.stream(2_000_000, 7, 1 << 16)).then(() => 'ok', (e: any) => e.name);
      const list = await db.attachments('tasks/1');
      const small = await db.attach('tasks/1', 'small.bin', F.bytes(10_000, 8)).then((d: any) => d.size, (e: any) => e.name);
      const stored = storage === 'indexeddb' ? await F.idb(name) : null;
      const info = (await db.storageInfo()).repository;
      await db.close();
      return { big, list, small, stored, bytes: info.attachmentBytes };
    }, { name: uniqueName(`att-quota-${storage}`), storage });
    expect(out.big).toBe('QuotaExceededError');
    expect(out.list).toEqual([]);
    expect(out.small).toBe(10_000);
    expect(out.bytes).toBe(10_000);
    if (out.stored) {
      expect(Object.values(out.stored.files)).toEqual([10_000]);
      expect(out.stored.loose).toBe(0);
    }
  });
}
