// Attachments (docs/design.md §6.7) in a real browser on real OPFS: round trips of 0 B, 1 B,
// 5 MB and 200 MB (bytes compared in the page, streamed, never held twice), one file per
// content (the OPFS directory listed from the page), reclaim at open of what no item refers to
// (never a file an item still refers to), reopen, a worker killed mid-write (whole or none),
// a full quota (nothing half-written) and bad arguments (typed errors naming the argument).
import { test, expect, gotoPlayground, uniqueName } from './ibexdb.fixtures';
import { installRunWorker } from './support/workers';

test.beforeEach(async ({ page, watched }) => {
  void watched;
  await gotoPlayground(page);
});

// Helpers defined in the page (as text: page.evaluate takes no closures from here).
const HELPERS = `
  window.__att = {
    // The repository's attachments directory as the page sees it: file names and sizes.
    async files(name) {
      try {
        const root = await navigator.storage.getDirectory();
        const dir = await (await (await root.getDirectoryHandle('ibexdb')).getDirectoryHandle(name)).getDirectoryHandle('attachments');
        const out = {};
        // A file being written is locked (its sync access handle): -1.
        for await (const [n, h] of dir.entries()) out[n] = await h.getFile().then((f) => f.size, () => -1);
        return out;
      } catch (e) {
        if (e.name === 'NotFoundError') return {};
        throw e;
      }
    },
    async removeFile(name, file) {
      const root = await navigator.storage.getDirectory();
      const dir = await (await (await root.getDirectoryHandle('ibexdb')).getDirectoryHandle(name)).getDirectoryHandle('attachments');
      await dir.removeEntry(file);
    },
    // Byte i of a test file of seed s.
    byteAt(i, s) { return ((i * 2654435761 + s * 40503) >>> 13) & 255; },
    bytes(n, s) { const b = new Uint8Array(n); for (let i = 0; i < n; i++) b[i] = this.byteAt(i, s); return b; },
    // A stream of n such bytes in chunks of 'chunk' (made as it is read).
    stream(n, s, chunk = 1 << 20) {
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
    // Whether a Blob holds exactly those bytes, read as a stream (one chunk at a time).
    async same(blob, n, s) {
      if (blob.size !== n) return 'size ' + blob.size + ' != ' + n;
      const r = blob.stream().getReader();
      let at = 0;
      for (;;) {
        const { done, value } = await r.read();
        if (done) break;
        for (let i = 0; i < value.length; i++) if (value[i] !== this.byteAt(at + i, s)) return 'byte ' + (at + i) + ' differs';
        at += value.length;
      }
      return at === n ? 'same' : 'short: ' + at;
    },
    async sha256(buf) {
      return [...new Uint8Array(await crypto.subtle.digest('SHA-256', buf))].map((b) => b.toString(16).padStart(2, '0')).join('');
    },
  };
`;

test('attach and read back 0 B, 1 B and 5 MB from a Blob, an ArrayBuffer, a Uint8Array and a stream; the hash is the SHA-256', async ({ page }) => {
  await page.evaluate(HELPERS);
  const out = await page.evaluate(async (name) => {
    const { open } = (window as any).ibexdb;
    const A = (window as any).__att;
    const db = await open(name);
    await db.put('tasks/1', { title: 'with files' });
    const cases: [string, number, number, (b: Uint8Array) => unknown][] = [
      ['empty.bin', 0, 1, (b) => new Blob([b])],
      ['one.bin', 1, 2, (b) => b.buffer],
      ['five.bin', 5_000_000, 3, (b) => b],
      ['five-stream.bin', 5_000_000, 4, () => A.stream(5_000_000, 4, 300_000)],
    ];
    const results: any[] = [];
    for (const [file, n, seed, make] of cases) {
      const bytes = A.bytes(n, seed);
      const want = await A.sha256(bytes);
      const d = await db.attach('tasks/1', file, make(bytes), { type: 'application/x-test' });
      const blob = await db.attachment('tasks/1', file);
      results.push({ file, d, want, type: blob.type, same: await A.same(blob, n, seed), readHash: await A.sha256(await blob.arrayBuffer()) });
    }
    const list = await db.attachments('tasks/1');
    await db.detach('tasks/1', 'one.bin');
    const history = (await db.history('tasks/1')).map((h: any) => h.op);
    const item = await db.get('tasks/1');
    const files = await A.files(name);
    const info = (await db.storageInfo()).repository;
    await db.close();
    return { results, list, history, item, files, info };
  }, uniqueName('att-small'));
  for (const r of out.results) {
    expect(r.d.hash, r.file).toBe(r.want);
    expect(r.readHash, r.file).toBe(r.want);
    expect(r.same, r.file).toBe('same');
    expect(r.type).toBe('application/x-test');
    expect(r.d.name).toBe(r.file);
  }
  expect(out.list.map((a: any) => a.name)).toEqual(['empty.bin', 'five-stream.bin', 'five.bin', 'one.bin']);
  // Attachments are not fields of the item; the history shows them apart.
  expect(out.item).toEqual({ title: 'with files' });
  expect(out.history).toHaveLength(6);
  expect(out.history[3]).toEqual({ type: 'patch', fields: {}, attachments: { 'five.bin': { attach: { hash: out.results[2].want, size: 5_000_000, type: 'application/x-test' } } } });
  expect(out.history[5]).toEqual({ type: 'patch', fields: {}, attachments: { 'one.bin': { detach: true } } });
  // Four distinct contents, four files, named by their hashes; nothing temporary left.
  expect(Object.keys(out.files).sort()).toEqual(out.results.map((r: any) => r.want).sort());
  expect(out.info.attachmentBytes).toBe(0 + 1 + 5_000_000 * 2);
  expect(out.info.totalBytes).toBeGreaterThan(out.info.attachmentBytes);
});

test('a 200 MB stream round-trips without the page or the engine holding it whole, and reopens', async ({ page }) => {
  test.setTimeout(240_000);
  await page.evaluate(HELPERS);
  const n = 200_000_000;
  const out = await page.evaluate(async ({ name, n }) => {
    const { open } = (window as any).ibexdb;
    const A = (window as any).__att;
    let db = await open(name);
    await db.put('videos/1', { title: 'big' });
    const t0 = performance.now();
    const d = await db.attach('videos/1', 'video.bin', A.stream(n, 9), { type: 'video/x-test' });
    const writeMs = performance.now() - t0;
    await db.close();
    db = await open(name);
    const t1 = performance.now();
    const same = await A.same(await db.attachment('videos/1', 'video.bin'), n, 9);
    const readMs = performance.now() - t1;
    const files = await A.files(name);
    const info = (await db.storageInfo()).repository;
    await db.close();
    return { d, same, files, writeMs, readMs, info };
  }, { name: uniqueName('att-200mb'), n });
  expect(out.d.size).toBe(n);
  expect(out.same).toBe('same');
  expect(out.files).toEqual({ [out.d.hash]: n });
  expect(out.info.attachmentBytes).toBe(n);
  console.log(`200 MB attach: write ${out.writeMs.toFixed(0)} ms, streamed read+compare ${out.readMs.toFixed(0)} ms`);
});

test('a 200 MB attachment grows wasm memory by less than 4 MiB (1 MiB chunks, hashed in place)', async ({ page }) => {
  test.setTimeout(240_000);
  await installRunWorker(page);
  const out = await page.evaluate(async (name) => {
    const body = `
      const A = await import(location.origin + '/www/lib/attachments.js');
      const eng = await E.openEngine(${JSON.stringify(name)}, { trusted: true });
      eng.putJson('videos/1', '{"t":1}');
      eng.flush();
      const store = await A.openAttachments(eng.name, eng, { create: true });
      const before = eng.memoryBytes;
      const n = 200000000;
      let at = 0;
      const chunk = new Uint8Array(1 << 20);
      const stream = new ReadableStream({
        pull(c) {
          if (at >= n) { c.close(); return; }
          const len = Math.min(chunk.length, n - at);
          const b = new Uint8Array(len);
          b.fill(at & 255);
          at += len;
          c.enqueue(b);
        },
      });
      const w = await store.write(stream, eng);
      eng.attach('videos/1', 'v', w.hash, w.size, 'video/x');
      eng.flush();
      const after = eng.memoryBytes;
      await eng.close();
      postMessage({ done: { before, after, size: w.size } });
    `;
    return (window as any).__runWorker(body, () => undefined).done;
  }, uniqueName('att-memory'));
  expect(out.size).toBe(200_000_000);
  console.log(`wasm memory: ${out.before} -> ${out.after} bytes over a 200 MB attachment`);
  expect(out.after - out.before).toBeLessThan(4 << 20);
});

test('identical bytes are stored once; at reopen a file no item refers to is reclaimed and a referenced one never is', async ({ page }) => {
  await page.evaluate(HELPERS);
  const out = await page.evaluate(async (name) => {
    const { open } = (window as any).ibexdb;
    const A = (window as any).__att;
    let db = await open(name);
    await db.put('tasks/1', { t: 1 });
    await db.put('tasks/2', { t: 2 });
    const shared = A.bytes(100_000, 1);
    const a1 = await db.attach('tasks/1', 'photo.jpg', new Blob([shared]), { type: 'image/jpeg' });
    const a2 = await db.attach('tasks/2', 'photo.jpg', shared);
    const b = await db.attach('tasks/2', 'scan.pdf', A.bytes(50_000, 2));
    const afterAttach = await A.files(name);
    // tasks/1 detaches the shared photo (tasks/2 still refers to it); tasks/2 detaches its scan.
    const det1 = await db.detach('tasks/1', 'photo.jpg');
    const det2 = await db.detach('tasks/2', 'scan.pdf');
    const detMissing = await db.detach('tasks/2', 'nothing');
    const beforeReopen = await A.files(name);
    await db.close();
    db = await open(name);
    const afterReopen = await A.files(name);
    const stillReads = await A.same(await db.attachment('tasks/2', 'photo.jpg'), 100_000, 1);
    const gone = await db.attachment('tasks/2', 'scan.pdf').then(() => 'read', (e: any) => [e.name, e.key, e.attachment]);
    // A deleted item's attachments go at the next open too.
    await db.delete('tasks/2');
    await db.close();
    db = await open(name);
    const afterDelete = await A.files(name);
    await db.close();
    return { a1, a2, b, afterAttach, det1, det2, detMissing, beforeReopen, afterReopen, stillReads, gone, afterDelete };
  }, uniqueName('att-dedup'));
  expect(out.a1.hash).toBe(out.a2.hash);
  expect(Object.keys(out.afterAttach).sort()).toEqual([out.a1.hash, out.b.hash].sort());
  expect([out.det1, out.det2, out.detMissing]).toEqual([true, true, false]);
  // Nothing is removed while open.
  expect(Object.keys(out.beforeReopen).length).toBe(2);
  expect(out.afterReopen).toEqual({ [out.a1.hash]: 100_000 });
  expect(out.stillReads).toBe('same');
  expect(out.gone).toEqual(['AttachmentNotFoundError', 'tasks/2', 'scan.pdf']);
  expect(out.afterDelete).toEqual({});
});

test('a worker killed while an attachment streams leaves none of it: no commit, no visible file, the temporary removed at the next open', async ({ page, context }) => {
  await page.evaluate(HELPERS);
  const name = uniqueName('att-kill');
  await page.evaluate(async (name) => {
    const { open } = (window as any).ibexdb;
    const A = (window as any).__att;
    const db = await open(name);
    await db.put('tasks/1', { t: 1 });
    await db.attach('tasks/1', 'whole.bin', A.bytes(3_000_000, 5));
    // 8 MB, then a stream that never ends: the write is under way when the page goes.
    let sent = 0;
    const endless = new ReadableStream({
      pull(c) {
        if (sent >= 8 << 20) return new Promise(() => {});
        sent += 1 << 20;
        c.enqueue(A.bytes(1 << 20, 6));
        return undefined;
      },
    });
    (window as any).__pending = db.attach('tasks/1', 'cut.bin', endless);
  }, name);
  // Wait until the temporary file holds some of it.
  await expect
    .poll(async () => page.evaluate(async (name) => {
      const files = await (window as any).__att.files(name);
      return Object.keys(files).some((n) => n.startsWith('tmp-'));
    }, name), { timeout: 30_000 })
    .toBe(true);
  // Some megabytes in (the stream gives 8 MB, then waits forever).
  await page.waitForTimeout(1000);
  await page.close();
  const page2 = await context.newPage();
  await gotoPlayground(page2);
  await page2.evaluate(HELPERS);
  const out = await page2.evaluate(async (name) => {
    const { open } = (window as any).ibexdb;
    const A = (window as any).__att;
    const db = await open(name);
    const list = await db.attachments('tasks/1');
    const files = await A.files(name);
    const whole = await A.same(await db.attachment('tasks/1', 'whole.bin'), 3_000_000, 5);
    const report = await db.verify();
    await db.close();
    return { list: list.map((a: any) => a.name), files, whole, commits: report.commits };
  }, name);
  expect(out.list).toEqual(['whole.bin']);
  expect(Object.keys(out.files)).toHaveLength(1);
  expect(Object.keys(out.files)[0]).toMatch(/^[0-9a-f]{64}$/);
  expect(out.whole).toBe('same');
  expect(out.commits).toBe(2);
});

test('at the quota an attach is QuotaExceededError with nothing written; smaller ones still fit', async ({ page }) => {
  await page.evaluate(HELPERS);
  const out = await page.evaluate(async (name) => {
    const { open } = (window as any).ibexdb;
    const A = (window as any).__att;
    const db = await open(name, { quotaBytes: 256 * 1024 });
    await db.put('tasks/1', { t: 1 });
    const before = (await db.storageInfo()).repository;
    const big = await db.attach('tasks/1', 'big.bin', A.stream(2_000_000, 7)).then(() => 'ok', (e: any) => e.name);
    const after = (await db.storageInfo()).repository;
    const list = await db.attachments('tasks/1');
    const files = await A.files(name);
    const small = await db.attach('tasks/1', 'small.bin', A.bytes(10_000, 8)).then((d: any) => d.size, (e: any) => e.name);
    // Room used by attachments counts against the limit: many small ones run out too.
    let fitted = 0;
    let last = null;
    for (let i = 0; i < 100; i++) {
      last = await db.attach('tasks/1', `s${i}`, A.bytes(20_000, 100 + i)).then(() => null, (e: any) => e.name);
      if (last) break;
      fitted++;
    }
    await db.close();
    return { big, before, after, list, files, small, fitted, last };
  }, uniqueName('att-quota'));
  expect(out.big).toBe('QuotaExceededError');
  expect(out.after.commits).toBe(out.before.commits);
  expect(out.after.attachmentBytes).toBe(0);
  expect(out.list).toEqual([]);
  expect(out.files).toEqual({});
  expect(out.small).toBe(10_000);
  expect(out.last).toBe('QuotaExceededError');
  expect(out.fitted).toBeGreaterThan(3);
  expect(out.fitted).toBeLessThan(13);
});

test('bad arguments are typed errors naming the argument; missing names, items and bytes are typed too', async ({ page }) => {
  await page.evaluate(HELPERS);
  const out = await page.evaluate(async (name) => {
    const { open } = (window as any).ibexdb;
    const A = (window as any).__att;
    const db = await open(name);
    await db.put('tasks/1', { t: 1 });
    const err = (p: Promise<unknown>) => p.then(() => 'ok', (e: any) => ({ name: e.name, argument: e.argument, key: e.key, attachment: e.attachment, hash: e.hash }));
    const r: Record<string, any> = {
      key: await err(db.attach(42, 'f', new Blob([]))),
      name: await err(db.attach('tasks/1', 7, new Blob([]))),
      data: await err(db.attach('tasks/1', 'f', 'not bytes')),
      dataArray: await err(db.attach('tasks/1', 'f', [1, 2, 3])),
      options: await err(db.attach('tasks/1', 'f', new Blob([]), 'text/plain')),
      type: await err(db.attach('tasks/1', 'f', new Blob([]), { type: 5 })),
      emptyName: await err(db.attach('tasks/1', '', new Blob([]))),
      streamOfStrings: await err(db.attach('tasks/1', 'f', new ReadableStream({ start(c) { c.enqueue('text'); c.close(); } }))),
      noItem: await err(db.attach('tasks/none', 'f', new Blob([new Uint8Array(3)]))),
      missing: await err(db.attachment('tasks/1', 'nothing')),
      attachmentKey: await err(db.attachment(null, 'x')),
      detachName: await err(db.detach('tasks/1', {})),
    };
    // The record without the bytes (as on a peer that received the commit by sync).
    const d = await db.attach('tasks/1', 'here.bin', A.bytes(1000, 3));
    await A.removeFile(name, d.hash);
    r.unavailable = await err(db.attachment('tasks/1', 'here.bin'));
    const files = await A.files(name);
    const list = await db.attachments('tasks/1');
    await db.close();
    return { r, files, list: list.map((a: any) => a.name) };
  }, uniqueName('att-args'));
  const r = out.r;
  expect(r.key).toMatchObject({ name: 'InvalidKeyError', argument: 'key' });
  expect(r.name).toMatchObject({ name: 'InvalidValueError', argument: 'name' });
  expect(r.data).toMatchObject({ name: 'InvalidValueError', argument: 'data' });
  expect(r.dataArray).toMatchObject({ name: 'InvalidValueError', argument: 'data' });
  expect(r.options).toMatchObject({ name: 'InvalidValueError', argument: 'options' });
  expect(r.type).toMatchObject({ name: 'InvalidValueError', argument: 'options.type' });
  expect(r.emptyName).toMatchObject({ name: 'InvalidValueError' });
  expect(r.streamOfStrings).toMatchObject({ name: 'InvalidValueError', argument: 'data' });
  expect(r.noItem).toMatchObject({ name: 'NotFoundError', key: 'tasks/none' });
  expect(r.missing).toMatchObject({ name: 'AttachmentNotFoundError', key: 'tasks/1', attachment: 'nothing' });
  expect(r.attachmentKey).toMatchObject({ name: 'InvalidKeyError', argument: 'key' });
  expect(r.detachName).toMatchObject({ name: 'InvalidValueError', argument: 'name' });
  expect(r.unavailable).toMatchObject({ name: 'AttachmentUnavailableError', key: 'tasks/1', attachment: 'here.bin' });
  // Failed attaches left no file (the one removed by hand aside) and no record.
  expect(out.files).toEqual({});
  expect(out.list).toEqual(['here.bin']);
});

test('a tab that is not the owner attaches through the owner (a stream too), and the owner reads it', async ({ page, context }) => {
  const name = uniqueName('att-tabs');
  await page.evaluate(HELPERS);
  await page.evaluate(async (name) => {
    const db = await (window as any).ibexdb.open(name);
    await db.put('tasks/1', { t: 1 });
    (window as any).__db = db;
  }, name);
  const page2 = await context.newPage();
  await gotoPlayground(page2);
  await page2.evaluate(HELPERS);
  const sent = await page2.evaluate(async (name) => {
    const A = (window as any).__att;
    const db = await (window as any).ibexdb.open(name);
    const role = db.role;
    const s = await db.attach('tasks/1', 'from-stream', A.stream(3_000_000, 11, 100_000));
    const b = await db.attach('tasks/1', 'from-blob', new Blob([A.bytes(1000, 12)]));
    const back = await A.same(await db.attachment('tasks/1', 'from-stream'), 3_000_000, 11);
    await db.close();
    return { role, s, b, back };
  }, name);
  const read = await page.evaluate(async () => {
    const A = (window as any).__att;
    const db = (window as any).__db;
    const r = { stream: await A.same(await db.attachment('tasks/1', 'from-stream'), 3_000_000, 11), blob: await A.same(await db.attachment('tasks/1', 'from-blob'), 1000, 12) };
    await db.close();
    return r;
  });
  expect(sent.role).toBe('client');
  expect(sent.s.size).toBe(3_000_000);
  expect(sent.back).toBe('same');
  expect(read).toEqual({ stream: 'same', blob: 'same' });
});
