// A measurement, not a check (run with IBEXDB_MEASURE=1): what keeping large values in wasm
// memory costs, against reading them from an OPFS file when asked (issue 26 §4; the threshold
// docs/design.md proposes comes from these numbers). In one worker: items of one text field of
// 1–200 KB put in one transaction each size, then the wasm memory they hold, the time of a get
// of one (the runtime's read path: engine.js getJson), and the time of a read of that many
// bytes at a random offset of a 64 MiB OPFS file through a sync access handle.
import { test, expect, gotoPlayground, uniqueName } from './ibexdb.fixtures';
import { installRunWorker } from './support/workers';

test('measure: large values in wasm memory against reads from OPFS', async ({ page, watched }) => {
  test.skip(!process.env.IBEXDB_MEASURE, 'a measurement: set IBEXDB_MEASURE=1');
  void watched;
  const name = uniqueName('large-measure');
  await gotoPlayground(page);
  await installRunWorker(page);
  const out = await page.evaluate(async (name) => {
    const body = `
      const name = ${JSON.stringify(name)};
      const eng = await E.openEngine(name, { trusted: true });
      const mem = () => eng._memory.buffer.byteLength;
      const rows = [];
      const root = await navigator.storage.getDirectory();
      const fh = await root.getFileHandle(name + '-raw', { create: true });
      const raw = await fh.createSyncAccessHandle();
      const FILE = 64 << 20;
      const fill = new Uint8Array(1 << 20).fill(120);
      for (let at = 0; at < FILE; at += fill.length) raw.write(fill, { at });
      raw.flush();
      for (const size of [1024, 4096, 16384, 65536, 200000]) {
        const n = Math.max(50, Math.floor((16 << 20) / size));
        const text = 'x'.repeat(size - 8);
        const before = mem();
        let t = performance.now();
        eng.transaction((tx) => { for (let i = 0; i < n; i++) tx.put('s' + size + '/' + i, { text: text + String(i).padStart(8, '0') }); });
        eng.flush();
        const putUs = ((performance.now() - t) * 1000) / n;
        const grew = mem() - before;
        // Averages over 500 calls (a single call is near the timer's 5 µs resolution).
        const keys = Array.from({ length: 500 }, () => 's' + size + '/' + Math.floor(Math.random() * n));
        t = performance.now();
        for (const key of keys) {
          const v = eng.getJson(key);
          if (typeof v !== 'string' || v.length < size) throw new Error('bad read');
        }
        const getUs = ((performance.now() - t) * 1000) / keys.length;
        const ats = keys.map(() => Math.floor(Math.random() * (FILE - size)));
        const buf = new Uint8Array(size);
        t = performance.now();
        for (const at of ats) raw.read(buf, { at });
        const readUs = ((performance.now() - t) * 1000) / ats.length;
        // The same offsets again (the OS's page cache holds them now).
        t = performance.now();
        for (const at of ats) raw.read(buf, { at });
        const againUs = ((performance.now() - t) * 1000) / ats.length;
        // What a read from the file would add: the bytes decoded to text (as getJson's are).
        t = performance.now();
        for (let k = 0; k < 100; k++) new TextDecoder().decode(buf);
        const decodeUs = ((performance.now() - t) * 1000) / 100;
        rows.push({ size, items: n, putUsPerItem: Math.round(putUs), wasmGrewBytesPerItem: Math.round(grew / n), getUs: Math.round(getUs * 10) / 10, opfsReadUs: Math.round(readUs * 10) / 10, opfsReadAgainUs: Math.round(againUs * 10) / 10, textDecodeUs: Math.round(decodeUs * 10) / 10 });
      }
      raw.close();
      await root.removeEntry(name + '-raw');
      await eng.close();
      postMessage({ done: rows });
    `;
    return (window as any).__runWorker(body, () => null).done;
  }, name);
  console.log(`large values: ${JSON.stringify(out, null, 1)}`);
  test.info().annotations.push({ type: 'measure', description: JSON.stringify(out) });
  expect(out.length).toBe(5);
});
