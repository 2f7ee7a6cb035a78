// Where a cold page's ibexdb open + first read goes (issue 28; scripts/cold-probe.mjs runs it):
// marks on the page and in the worker, taken from outside the library: WebAssembly, OPFS, Web
// Locks and postMessage are wrapped, and the worker is started from a blob: bootstrap that marks
// its start, imports the real worker script and reports the worker's own resource timings
// (each module it fetched) after its first answer. `module=<url>` opens another public module
// (the built npm package); `plain=1` starts the worker unwrapped (page marks only).
//
//   probe.html?mode=fill|cold&n=N[&module=/dist/bench-npm/ibexdb.js][&plain=1]
import { ITEMS_SCHEMA, ibexValue } from '../shared/ibexdb.js';
const q = new URLSearchParams(location.search);
const mode = q.get('mode') ?? 'cold';
const n = Number(q.get('n') ?? 1000);
const name = `probe-${n}`;
const marks = {}; window.probeMarks = marks;
const mark = (k) => { marks[k] ??= performance.now(); };
for (const f of ['compileStreaming', 'compile']) {
  const o = WebAssembly[f];
  WebAssembly[f] = async function (...a) { mark(`page.${f}.start`); try { return await o.apply(this, a); } finally { mark(`page.${f}.end`); } };
}
let report = null; let reportResolve; const reportP = new Promise((r) => (reportResolve = r));
const workerSrc = (href) => `
const P = { origin: performance.timeOrigin, m: {} };
const mark = (k) => { P.m[k] ??= performance.now(); };
mark('w.start');
const early = []; self.onmessage = (e) => { mark('w.msg.' + e.data?.type); early.push(e); };
for (const f of ['instantiate', 'compileStreaming', 'compile', 'instantiateStreaming']) {
  const o = WebAssembly[f]; WebAssembly[f] = async function (...a) { mark('w.' + f + '.start'); try { return await o.apply(this, a); } finally { mark('w.' + f + '.end'); } };
}
if (navigator.storage?.getDirectory) { const gd = navigator.storage.getDirectory.bind(navigator.storage); navigator.storage.getDirectory = async () => { mark('w.getDirectory.start'); const r = await gd(); mark('w.getDirectory.end'); return r; }; }
if (self.FileSystemFileHandle?.prototype.createSyncAccessHandle) { const o = FileSystemFileHandle.prototype.createSyncAccessHandle; FileSystemFileHandle.prototype.createSyncAccessHandle = async function (...a) { mark('w.sah.start'); const r = await o.apply(this, a); P.m['w.sah.end'] = performance.now(); return r; }; }
const lr = navigator.locks.request.bind(navigator.locks);
navigator.locks.request = (nm, ...rest) => { const k = nm.includes('client') ? 'client' : 'lock'; mark('w.' + k + '.req'); const cb = rest[rest.length - 1]; rest[rest.length - 1] = (l) => { mark('w.' + k + '.got'); return cb(l); }; return lr(nm, ...rest); };
const op = self.postMessage.bind(self);
self.postMessage = (msg, o) => { if (msg?.type) mark('w.post.' + msg.type); const r = op(msg, o); if (msg?.type === 'results' && !P.sent) { P.sent = 1; P.res = performance.getEntriesByType('resource').map((e) => ({ name: e.name.replace(/^.*?\\/\\/[^/]+/, ''), start: e.startTime, end: e.responseEnd, size: e.encodedBodySize })); op({ type: 'probe', probe: P }); } return r; };
import(${JSON.stringify(href)}).then(() => { mark('w.graph'); for (const e of early) self.dispatchEvent(new MessageEvent('message', { data: e.data })); }, (e) => op({ type: 'boot-failed', message: String(e) }));
`;
const RealWorker = Worker;
globalThis.Worker = class extends RealWorker {
  constructor(url, opts) {
    const href = new URL(url, location.href).href;
    if (!/\/worker\.js$/.test(href) || q.get('plain')) { super(href, opts); if (/\/worker\.js$/.test(href)) mark('page.worker.new'); return; }
    mark('page.worker.new');
    super(URL.createObjectURL(new Blob([workerSrc(href)], { type: 'text/javascript' })), opts);
    this.addEventListener('message', (e) => { if (e.data?.type === 'probe') { report = e.data.probe; reportResolve(); } if (e.data?.type === 'opened') mark('page.opened'); });
  }
  postMessage(m, o) { if (m?.type === 'open') mark('page.post.open'); return super.postMessage(m, o); }
};
async function main() {
  mark('page.import.start');
  const { open } = await import(q.get('module') ?? '../../ibexdb.js');
  mark('page.import.end');
  const db = await open(name, { schemas: { items: ITEMS_SCHEMA } });
  mark('page.open.end');
  if (mode === 'fill') {
    for (let i = 0; i < n; i += 1000) {
      await db.transaction((tx) => { for (let j = i; j < Math.min(n, i + 1000); j++) tx.put(`items/item-${j}`, ibexValue({ title: `Item ${j}`, count: j, tags: ['a', j % 2 ? 'odd' : 'even'] })); });
    }
    await db.close();
    return { ok: true };
  }
  const i = Math.floor(n / 2);
  const v = await db.get(`items/item-${i}`);
  mark('page.read.end');
  const ok = v?.count === i;
  if (!q.get('plain')) await Promise.race([reportP, new Promise((r) => setTimeout(r, 2000))]);
  await db.close();
  const res = performance.getEntriesByType('resource').map((e) => ({ name: e.name.replace(/^.*?\/\/[^/]+/, ''), start: e.startTime, end: e.responseEnd, size: e.encodedBodySize }));
  return { ok, marks, origin: performance.timeOrigin, report, res };
}
main().then((r) => { window.probeResult = r; }, (e) => { window.probeResult = { error: `${e.name}: ${e.message}` }; });
