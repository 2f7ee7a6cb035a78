// Bytes values (docs/design.md §2.2): Uint8Array and ArrayBuffer stored and read back as
// Uint8Array through every read and write path of the page API, compared byte-wise in queries
// and indexes, kept in OPFS across a reopen; bad bytes are typed errors with nothing stored.
// The bytes are compared inside the page (a 5 MB value never crosses to the test as JSON).
import { test, expect, gotoPlayground, uniqueName } from './ibexdb.fixtures';
import { installRunWorker } from './support/workers';

test('bytes of 0 B, 1 B and 5 MB round-trip through put, get, query, live, history and a reopen from OPFS', async ({ page, watched, browserName }) => {
  void watched;
  const name = uniqueName('bytes');
  await gotoPlayground(page);
  const out = await page.evaluate(async (name) => {
    const { open } = (window as any).ibexdb;
    const big = new Uint8Array(5_000_000);
    for (let i = 0; i < big.length; i++) big[i] = (Math.imul(i, 2654435761) >>> 24) & 0xff;
    const values: Record<string, Uint8Array> = {
      empty: new Uint8Array(0),
      one: new Uint8Array([0xff]),
      odd: new Uint8Array([0xc3, 0x28, 0, 0x80]),
      big,
    };
    const same = (a: unknown, b: Uint8Array) => a instanceof Uint8Array && a.length === b.length && a.every((x, i) => x === b[i]);
    const cmp = (a: Uint8Array, b: Uint8Array) => {
      for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i] - b[i];
      return a.length - b.length;
    };
    const r: Record<string, unknown> = {};
    const db = await open(name);
    await db.defineSchema('files', { fields: { data: { type: 'bytes', required: true } }, indexes: ['data'] });
    const liveSeen: string[] = [];
    const lq = await db.live({ collection: 'files', where: { data: { gte: new Uint8Array(0) } }, sort: ['data'] }, (rows: any[]) => {
      liveSeen.push(rows.map((x) => x.id).join(','));
    });
    for (const [id, data] of Object.entries(values)) await db.put(`files/${id}`, { data, name: id });
    // An ArrayBuffer reads back as a Uint8Array; so does a Node-style subclass of Uint8Array.
    await db.put('files/ab', { data: new Uint8Array([1, 2]).buffer });
    r.getEach = Object.fromEntries(await Promise.all(Object.entries(values).map(async ([id, data]) => [id, same((await db.get(`files/${id}`)).data, data)])));
    r.ab = same((await db.get('files/ab')).data, new Uint8Array([1, 2]));
    const many = await db.getMany(['files/one', 'files/none', 'files/big']);
    r.many = [same(many[0].data, values.one), many[1] === undefined, same(many[2].data, big)];
    // The live query is current when the put resolves: its rows are the bytes in byte order.
    const all = { ...values, ab: new Uint8Array([1, 2]) };
    const byteOrder = Object.entries(all).sort((a, b) => cmp(a[1], b[1])).map(([id]) => id);
    r.liveOrder = lq.results.map((x: any) => x.id).join(',') === byteOrder.join(',');
    r.liveBytes = lq.results.every((x: any) => same(x.value.data, (all as any)[x.id]));
    r.liveCalls = liveSeen.length;
    // eq, in and ranges compare byte-wise, through the index (plan) and as a filter alike.
    const ids = async (where: object) => (await db.query({ collection: 'files', where })).map((x: any) => x.id).sort().join(',');
    r.eq = await ids({ data: new Uint8Array([0xff]) });
    r.eqEmpty = await ids({ data: { eq: new Uint8Array(0) } });
    r.in = await ids({ data: { in: [new Uint8Array([0xc3, 0x28, 0, 0x80]), new Uint8Array([1, 2])] } });
    const lt = new Uint8Array([0xc3]);
    r.lt = (await ids({ data: { lt } })) === Object.keys(all).filter((k) => cmp((all as any)[k], lt) < 0).sort().join(',');
    r.range = await ids({ data: { gt: new Uint8Array(0), lte: new Uint8Array([1, 2]) } });
    r.notIndexed = await ids({ name: 'big', data: { gte: new Uint8Array([big[0]]) } });
    r.plan = JSON.stringify(await db.explain({ collection: 'files', where: { data: new Uint8Array([0xff]) } })).includes('data');
    // A string is not bytes: eq on the same text finds nothing.
    r.stringIsNotBytes = await ids({ data: '\u00ff' });
    // Update, transaction and a collection handle write bytes too; history shows them.
    await db.update('files/one', { data: new Uint8Array([9, 9]) });
    await db.transaction((tx: any) => tx.put('files/tx', { data: new Uint8Array([7]), nested: { list: [new Uint8Array([6])] } }));
    const files = db.collection('files');
    await files.put('col', { data: new Uint8Array([5, 5, 5]) });
    const tx = await db.get('files/tx');
    r.tx = same(tx.data, new Uint8Array([7])) && same(tx.nested.list[0], new Uint8Array([6]));
    r.col = same((await files.get('col')).data, new Uint8Array([5, 5, 5]));
    const h = await db.history('files/one');
    r.history = [same(h[0].op.value.data, values.one), same(h[1].op.fields.data.assign, new Uint8Array([9, 9]))];
    // A schema refuses a string where bytes are declared.
    r.schema = await db.put('files/bad', { data: 'not bytes' }).then(() => 'stored', (e: any) => e.name);
    lq.close();
    await db.close();
    // Reopen from OPFS: the same bytes, the index still answers.
    const db2 = await open(name);
    r.storage = db2.storage;
    await db2.defineSchema('files', { fields: { data: { type: 'bytes', required: true } }, indexes: ['data'] });
    r.reopenBig = same((await db2.get('files/big')).data, big);
    r.reopenEmpty = same((await db2.get('files/empty')).data, values.empty);
    r.reopenEq = (await db2.query({ collection: 'files', where: { data: new Uint8Array([9, 9]) } })).map((x: any) => x.id).join(',');
    await db2.close();
    return r;
  }, name);
  expect(out).toEqual({
    getEach: { empty: true, one: true, odd: true, big: true },
    ab: true,
    many: [true, true, true],
    liveOrder: true,
    liveBytes: true,
    liveCalls: 6,
    eq: 'one',
    eqEmpty: 'empty',
    in: 'ab,odd',
    lt: true,
    range: 'ab,big', // big starts with byte 0: [] < [0, ...] <= [1, 2]
    notIndexed: 'big',
    plan: true,
    stringIsNotBytes: '',
    tx: true,
    col: true,
    history: [true, true],
    schema: 'SchemaError',
    // WebKitGTK has no sync access handles: the default backend there is IndexedDB.
    storage: browserName === 'webkit' ? 'indexeddb' : 'opfs',
    reopenBig: true,
    reopenEmpty: true,
    reopenEq: 'one',
  });
});

test('bytes between two tabs: a client tab writes and reads them through the owner, its live query gets the owner tab\'s', async ({ context, page, watched }) => {
  void watched;
  const name = uniqueName('bytes-tabs');
  await gotoPlayground(page);
  const pageB = await context.newPage();
  await gotoPlayground(pageB);
  const roleA = await page.evaluate(async (name) => {
    const w = window as any;
    w.db = await w.ibexdb.open(name);
    await w.db.put('f/a', { d: new Uint8Array([1, 2, 3]) });
    return w.db.role;
  }, name);
  const b = await pageB.evaluate(async (name) => {
    const w = window as any;
    w.db = await w.ibexdb.open(name);
    w.lq = await w.db.live({ collection: 'f', sort: ['d'] });
    const big = new Uint8Array(1 << 20).map((_, i) => i & 0xff);
    await w.db.put('f/b', { d: big });
    const got = await w.db.get('f/b');
    const a = await w.db.get('f/a');
    return { role: w.db.role, big: got.d instanceof Uint8Array && got.d.length === big.length && got.d.every((x: number, i: number) => x === big[i]), a: [...a.d] };
  }, name);
  expect([roleA, b.role]).toEqual(['owner', 'client']);
  expect(b.big).toBe(true);
  expect(b.a).toEqual([1, 2, 3]);
  await page.evaluate(() => (window as any).db.put('f/c', { d: new Uint8Array([0]) }));
  await expect.poll(() => pageB.evaluate(() => (window as any).lq.results.map((r: any) => `${r.id}:${r.value.d instanceof Uint8Array ? r.value.d.length : 'not bytes'}`))).toEqual(['c:1', 'b:1048576', 'a:3']);
  expect(await page.evaluate(async () => ((await (window as any).db.get('f/b')).d as Uint8Array).length)).toBe(1 << 20);
});

test('wasm memory: 5 MB bytes written and read 20 times grow it by a bounded number of copies once, not per round (engine.js in a worker)', async ({ page, watched }) => {
  void watched;
  const name = uniqueName('bytes-memory');
  await gotoPlayground(page);
  await installRunWorker(page);
  const out = await page.evaluate(async (name) => {
    const body = `
      const eng = await E.openEngine(${JSON.stringify(name)}, { trusted: true });
      const mem = () => eng._memory.buffer.byteLength;
      const data = new Uint8Array(5_000_000).map((_, i) => i & 0xff);
      const start = mem();
      const after = [];
      for (let round = 0; round < 20; round++) {
        eng.put('f/x', { d: data });
        eng.flush();
        const v = eng.get('f/x');
        if (!(v.d instanceof Uint8Array) || v.d.length !== data.length || v.d[4_999_999] !== data[4_999_999]) throw new Error('read back differs');
        const text = eng.queryJson(JSON.stringify({ collection: 'f' }));
        if (typeof text === 'string' || text.bytes.length !== 1) throw new Error('query without its bytes');
        after.push(mem() - start);
      }
      await eng.close();
      postMessage({ done: { first: after[0], last: after[19], all: after } });
    `;
    return (window as any).__runWorker(body, () => null).done;
  }, name);
  console.log(`wasm memory for 5 MB bytes: +${(out.first / 1e6).toFixed(1)} MB after the first round, +${(out.last / 1e6).toFixed(1)} MB after twenty (${out.all.map((x: number) => (x / 1e6).toFixed(1)).join(" ")})`);
  // Each copy held at once (the transaction's bytes, the value, the commit's encoding, the log
  // frame, the old value while the new one is applied) is 5 MB: at most 8 of them (measured: 6,
  // reached in the second round), and nothing more in the rounds after.
  expect(out.last).toBeLessThanOrEqual(40_000_000);
  expect(out.last - out.all[1]).toBeLessThanOrEqual(5_500_000);
});

test('bad bytes are typed errors and store nothing: detached, shared, other views, oversized, in a set, the reserved $bytes form', async ({ page, watched, browserName }) => {
  void watched;
  const name = uniqueName('bytes-bad');
  await gotoPlayground(page);
  const out = await page.evaluate(async (name) => {
    const { open } = (window as any).ibexdb;
    const db = await open(name);
    const err = (p: Promise<unknown>) => p.then(() => 'stored', (e: any) => e.name);
    const detached = new Uint8Array(4);
    structuredClone(detached.buffer, { transfer: [detached.buffer] });
    const detachedBuf = new ArrayBuffer(4);
    structuredClone(detachedBuf, { transfer: [detachedBuf] });
    const r: Record<string, unknown> = {};
    r.detached = await err(db.put('bad/1', { d: detached }));
    r.detachedBuffer = await err(db.put('bad/2', { d: detachedBuf }));
    // The playground is served cross-origin isolated (scripts/serve.mjs): SharedArrayBuffer exists.
    r.isolated = crossOriginIsolated;
    r.shared = typeof SharedArrayBuffer === 'undefined' ? 'no SharedArrayBuffer' : await err(db.put('bad/3', { d: new Uint8Array(new SharedArrayBuffer(4)) }));
    r.sharedBuffer = typeof SharedArrayBuffer === 'undefined' ? 'no SharedArrayBuffer' : await err(db.put('bad/3', { d: new SharedArrayBuffer(4) }));
    r.int16 = await err(db.put('bad/4', { d: new Int16Array(2) }));
    r.dataView = await err(db.put('bad/5', { d: new DataView(new ArrayBuffer(2)) }));
    r.tooLarge = await err(db.put('bad/6', { d: new Uint8Array((16 << 20) + 1) }));
    // Two fields each under the limit, together over it: the engine's TooLargeError (no panic).
    r.tooLargeItem = await err(db.put('bad/7', { a: new Uint8Array(9 << 20), b: new Uint8Array(9 << 20) }));
    r.inSet = await err(db.put('bad/8', { s: new Set([new Uint8Array(1)]) }));
    r.inSetForm = await err(db.put('bad/9', { s: { $set: [new Uint8Array(1)] } }));
    r.setAdd = await err(db.transaction((tx: any) => tx.setAdd('bad/10', 's', [new Uint8Array(1)])));
    r.reserved = await err(db.put('bad/11', { d: { $bytes: 0 } }));
    r.inTxn = await err(db.transaction((tx: any) => tx.put('bad/12', { d: detached })));
    r.update = await err(db.update('bad/13', { d: new Uint8Array(1) }));
    r.count = await db.count('bad');
    // The database still works, and the 16 MiB limit itself is accepted.
    await db.put('ok/1', { d: new Uint8Array((16 << 20) - 64) });
    r.after = (await db.get('ok/1')).d.length;
    await db.close();
    return r;
  }, name);
  expect(out).toEqual({
    detached: 'InvalidValueError',
    detachedBuffer: 'InvalidValueError',
    isolated: true,
    // WebKitGTK 2.50's MiniBrowser has no SharedArrayBuffer even cross-origin isolated
    // (crossOriginIsolated is true there, `typeof SharedArrayBuffer` 'undefined'): nothing to refuse.
    shared: browserName === 'webkit' ? 'no SharedArrayBuffer' : 'InvalidValueError',
    sharedBuffer: browserName === 'webkit' ? 'no SharedArrayBuffer' : 'InvalidValueError',
    int16: 'InvalidValueError',
    dataView: 'InvalidValueError',
    tooLarge: 'TooLargeError',
    tooLargeItem: 'TooLargeError',
    inSet: 'InvalidValueError',
    inSetForm: 'InvalidValueError',
    setAdd: 'InvalidValueError',
    reserved: 'InvalidValueError',
    inTxn: 'InvalidValueError',
    update: 'NotFoundError',
    count: 0,
    after: (16 << 20) - 64,
  });
});

test('measure: put + get of 5 MB as bytes against the same as a base64 string', async ({ page, watched }) => {
  void watched;
  const name = uniqueName('bytes-measure');
  await gotoPlayground(page);
  const out = await page.evaluate(async (name) => {
    const { open } = (window as any).ibexdb;
    const db = await open(name);
    const data = new Uint8Array(5_000_000);
    for (let i = 0; i < data.length; i++) data[i] = (Math.imul(i, 2654435761) >>> 24) & 0xff;
    let bin = '';
    for (let i = 0; i < data.length; i += 0x8000) bin += String.fromCharCode.apply(null, data.subarray(i, i + 0x8000) as any);
    const b64 = btoa(bin);
    const median = (xs: number[]) => xs.sort((a, b) => a - b)[xs.length >> 1];
    const run = async (label: string, value: unknown, check: (v: any) => boolean) => {
      const put: number[] = [];
      const get: number[] = [];
      for (let i = 0; i < 7; i++) {
        let t = performance.now();
        await db.put(`m/${label}${i}`, { v: value });
        put.push(performance.now() - t);
        t = performance.now();
        const got = await db.get(`m/${label}${i}`);
        get.push(performance.now() - t);
        if (!check(got.v)) throw new Error(`${label}: read back differs`);
      }
      return { putMs: Math.round(median(put) * 10) / 10, getMs: Math.round(median(get) * 10) / 10 };
    };
    const bytes = await run('bytes', data, (v) => v instanceof Uint8Array && v.length === data.length && v[4_999_999] === data[4_999_999]);
    const base64 = await run('base64', b64, (v) => v === b64);
    // What the app must add for base64: encode before the put, decode after the get.
    let t = performance.now();
    let s = '';
    for (let i = 0; i < data.length; i += 0x8000) s += String.fromCharCode.apply(null, data.subarray(i, i + 0x8000) as any);
    btoa(s);
    const encodeMs = performance.now() - t;
    t = performance.now();
    const dec = atob(b64);
    const back = new Uint8Array(dec.length);
    for (let i = 0; i < dec.length; i++) back[i] = dec.charCodeAt(i);
    const decodeMs = performance.now() - t;
    await db.close();
    return { bytes, base64, base64EncodeMs: Math.round(encodeMs), base64DecodeMs: Math.round(decodeMs) };
  }, name);
  console.log(`bytes 5 MB: ${JSON.stringify(out)}`);
  test.info().annotations.push({ type: 'measure', description: JSON.stringify(out) });
  expect(out.bytes.putMs).toBeGreaterThan(0);
});
