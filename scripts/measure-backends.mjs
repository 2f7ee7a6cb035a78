#!/usr/bin/env node
// Measures the durable-write primitives of the storage backends in Debian's Chromium (issue 28):
// in a dedicated worker, a file of SIZE_MIB MiB, then ROUNDS durable appends of 200 bytes each:
//   - IndexedDB: one readwrite transaction ({durability: 'strict'}) putting the 64 KiB chunk the
//     append lands in, timed until its `complete` event (what the IndexedDB backend does per flush);
//   - async OPFS: createWritable({keepExistingData: true}) + write at the end + close() (the only
//     way to make an appended byte durable without a sync access handle: close() commits a copy);
//   - sync-handle OPFS (reference): write + flush on a FileSystemSyncAccessHandle.
// Prints median / max ms per durable write for each. Then the same through ibexdb on each
// storage backend (pkg/ must be built: make wasm): open of a new repository, ROUNDS*10 durable
// puts awaited one by one, and a reopen after close (snapshot). `node scripts/measure-backends.mjs`
// (SIZE_MIB=50 ROUNDS=20 by default; PORT for the static server, 0 = a free one).
import { chromium } from '@playwright/test';
import { startServer } from './serve.mjs';

const SIZE_MIB = Number(process.env.SIZE_MIB ?? 50);
const ROUNDS = Number(process.env.ROUNDS ?? 20);

const workerSrc = `
const CHUNK = 65536;
const med = (a) => { const s = [...a].sort((x, y) => x - y); return +s[s.length >> 1].toFixed(2); };
const max = (a) => +Math.max(...a).toFixed(2);
onmessage = async ({ data: { sizeMiB, rounds } }) => {
  const size = sizeMiB << 20;
  const out = {};
  // IndexedDB
  const db = await new Promise((res, rej) => {
    const r = indexedDB.open('measure-' + Math.random(), 1);
    r.onupgradeneeded = () => r.result.createObjectStore('chunks');
    r.onsuccess = () => res(r.result);
    r.onerror = () => rej(r.error);
  });
  const txDone = (tx) => new Promise((res, rej) => { tx.oncomplete = res; tx.onerror = tx.onabort = () => rej(tx.error); });
  let t = performance.now();
  { const tx = db.transaction('chunks', 'readwrite', { durability: 'strict' });
    for (let i = 0; i < size / CHUNK; i++) tx.objectStore('chunks').put(new Uint8Array(CHUNK).fill(i & 255), i);
    await txDone(tx); }
  out.idbFillMs = +(performance.now() - t).toFixed(1);
  const idb = [];
  for (let r = 0; r < rounds; r++) {
    const chunk = new Uint8Array(CHUNK); chunk[r * 200 % CHUNK] = r;
    t = performance.now();
    const tx = db.transaction('chunks', 'readwrite', { durability: 'strict' });
    tx.objectStore('chunks').put(chunk, size / CHUNK + (r * 200 / CHUNK | 0));
    tx.objectStore('chunks').put(size + r * 200, 'size');
    await txDone(tx);
    idb.push(performance.now() - t);
  }
  t = performance.now();
  { const tx = db.transaction('chunks', 'readonly');
    const all = tx.objectStore('chunks').getAll(IDBKeyRange.bound(0, size / CHUNK + 10));
    await txDone(tx); out.idbReadAllMs = +(performance.now() - t).toFixed(1); out.idbChunks = all.result.length; }
  out.idbDurableWriteMs = { median: med(idb), max: max(idb) };
  db.close();
  // OPFS
  const root = await navigator.storage.getDirectory();
  const fh = await root.getFileHandle('measure-' + Math.random(), { create: true });
  const sh = await fh.createSyncAccessHandle();
  const block = new Uint8Array(1 << 20);
  for (let i = 0; i < sizeMiB; i++) sh.write(block, { at: i << 20 });
  sh.flush();
  const syncRuns = [];
  for (let r = 0; r < rounds; r++) {
    t = performance.now();
    sh.write(new Uint8Array(200), { at: size + r * 200 });
    sh.flush();
    syncRuns.push(performance.now() - t);
  }
  sh.truncate(size);
  sh.close();
  out.syncHandleDurableWriteMs = { median: med(syncRuns), max: max(syncRuns) };
  const asyncRuns = [];
  for (let r = 0; r < Math.min(rounds, 10); r++) {
    t = performance.now();
    const w = await fh.createWritable({ keepExistingData: true });
    await w.write({ type: 'write', position: size + r * 200, data: new Uint8Array(200) });
    await w.close();
    asyncRuns.push(performance.now() - t);
  }
  out.createWritableDurableWriteMs = { median: med(asyncRuns), max: max(asyncRuns) };
  await root.removeEntry(fh.name);
  postMessage(out);
};`;

const server = await startServer({ port: Number(process.env.PORT ?? 0) });
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu'] });
try {
  const page = await browser.newPage();
  await page.goto(`http://127.0.0.1:${server.port}/www/examples/basic.html`);
  const out = await page.evaluate(async ([src, sizeMiB, rounds]) => {
    const w = new Worker(URL.createObjectURL(new Blob([src], { type: 'text/javascript' })));
    return new Promise((res, rej) => { w.onmessage = (e) => res(e.data); w.onerror = (e) => rej(new Error(e.message)); w.postMessage({ sizeMiB, rounds }); });
  }, [workerSrc, SIZE_MIB, ROUNDS]);
  console.log(JSON.stringify({ sizeMiB: SIZE_MIB, rounds: ROUNDS, ...out }, null, 1));
  await page.goto(`http://127.0.0.1:${server.port}/www/examples/playground.html`);
  await page.waitForSelector('body[data-ready="1"]');
  const engine = await page.evaluate(async (n) => {
    const med = (a) => { const s = [...a].sort((x, y) => x - y); return +s[s.length >> 1].toFixed(2); };
    const out = {};
    for (const storage of ['opfs', 'indexeddb', 'memory']) {
      const name = `measure-${storage}-${Date.now()}`;
      let t = performance.now();
      let db = await window.ibexdb.open(name, { storage });
      const openMs = performance.now() - t;
      const puts = [];
      for (let i = 0; i < n; i++) {
        t = performance.now();
        await db.put(`items/${i}`, { i, text: `item ${i} `.repeat(10) });
        puts.push(performance.now() - t);
      }
      await db.close();
      t = performance.now();
      db = await window.ibexdb.open(name, { storage });
      const reopenMs = performance.now() - t;
      await db.close();
      out[storage] = { openMs: +openMs.toFixed(1), durablePutMs: { median: med(puts), max: +Math.max(...puts).toFixed(2) }, reopenMs: +reopenMs.toFixed(1) };
    }
    return out;
  }, ROUNDS * 10);
  console.log(JSON.stringify({ ibexdb: engine }, null, 1));
} finally {
  await browser.close();
  await server.close();
}
