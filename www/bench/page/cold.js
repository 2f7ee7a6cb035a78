// One cold start of an engine, in a page of its own (the [page] cold-start rows: create instance,
// open N + first read, open N + first indexed query). The runner opens this page fresh for every
// sample (scripts/bench-cold.mjs), so no module and no compiled wasm is carried over from an
// earlier sample for either engine. Timed: importing the engine's page client, opening (SQLite:
// its worker, the library, the wasm, sahpool, the database; ibexdb: open() of the public API), and
// the first answer. Untimed: the check, close, and (create) removing the storage again.
//
//   cold.html?engine=<JSON {id, family, config}>&mode=create|open|query&n=N

const q = new URLSearchParams(location.search);
const engine = JSON.parse(q.get('engine') ?? '{}');
const mode = q.get('mode') ?? 'open';
const n = Number(q.get('n') ?? 0);

/** The first operation of each mode and what its answer must be. */
function first() {
  if (mode === 'query') {
    const lo = Math.max(0, Math.min(Math.floor(n / 2), n - 1000));
    return { op: { op: 'queryRange', args: { lo, hi: lo + 1000 } }, want: (/** @type {any[]} */ rows) => rows.length === Math.min(1000, n) && rows.every((it, j) => it.count === lo + j) };
  }
  const i = mode === 'create' ? 0 : Math.floor(n / 2);
  return { op: { op: 'get', args: { id: `item-${i}` } }, want: (/** @type {any[]} */ rows) => (mode === 'create' ? rows.length === 0 : rows.length === 1 && rows[0].count === i && rows[0].title === `Item ${i}`) };
}

async function main() {
  const { op, want } = first();
  const t0 = performance.now();
  const { pageClientClass } = await import('./clients.js');
  const Client = pageClientClass(engine);
  const client = await Client.open(engine);
  const v = await client.op(op);
  const t1 = performance.now();
  const ok = want(client.items(op.op, v, op.args));
  await client.close();
  if (mode === 'create') await Client.remove(engine);
  return { ms: t1 - t0, ok, sinceNavigationStart: t1, crossOriginIsolated };
}

main().then(
  (r) => { window.coldResult = r; window.parent?.postMessage({ coldResult: r }, '*'); },
  (e) => { window.coldResult = { error: `${e.name}: ${e.message}` }; window.parent?.postMessage({ coldResult: window.coldResult }, '*'); },
);
