// Environment probe: the raw cost of OPFS FileSystemSyncAccessHandle calls on this machine, right
// now. Every SQLite (and ibexdb) write row is dominated by the number of these calls, and their
// cost varies between machines and with host load, so each run records them next to its results.
// DESIGN.md section 10 reference on these machines: write 200 B - 64 KiB ~0.5 ms, write + flush
// 200 B ~0.84 ms.
import { summarize } from '../shared/stats.js';

// Where OPFS or its sync access handles are missing (WebKitGTK, an ephemeral store) the probe
// answers {error} instead of never answering.
self.onmessage = () => probe().then((out) => self.postMessage(out), (e) => self.postMessage({ error: `${e?.name}: ${e?.message}` }));

async function probe() {
  const root = await navigator.storage.getDirectory();
  const name = `.bench-opfs-probe-${Date.now()}`;
  const fh = await root.getFileHandle(name, { create: true });
  const h = await /** @type {any} */ (fh).createSyncAccessHandle(); // dedicated workers only
  const small = new Uint8Array(200);
  const page = new Uint8Array(16384);
  const out = {};
  const time = (label, n, f) => {
    f(-1); // warm-up
    const samples = [];
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      f(i);
      samples.push(performance.now() - t0);
    }
    const s = summarize(samples);
    out[label] = { p50: s.p50, p95: s.p95, n: s.n };
  };
  try {
    time('write 200 B (append)', 100, (i) => h.write(small, { at: (i + 1) * 200 }));
    time('write 16 KiB (append)', 100, (i) => h.write(page, { at: 40_000 + (i + 1) * 16384 }));
    time('write 16 KiB (overwrite)', 100, (i) => h.write(page, { at: 40_000 + ((i + 1) % 50) * 16384 }));
    time('write 200 B + flush', 50, (i) => { h.write(small, { at: (i + 1) * 200 }); h.flush(); });
    time('read 16 KiB', 100, (i) => h.read(page, { at: 40_000 + ((i + 1) % 50) * 16384 }));
    time('getSize', 100, () => h.getSize());
  } finally {
    h.close();
    await root.removeEntry(name);
  }
  return out;
}
