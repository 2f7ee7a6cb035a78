// The public API (www/ibexdb.js) end to end in Chromium with real OPFS: CRUD, transactions,
// queries, live queries, schemas, identity, storage info, batching.
import { test, expect, gotoPlayground, uniqueName } from './ibexdb.fixtures';

test.beforeEach(async ({ page, watched }) => {
  void watched;
  await gotoPlayground(page);
});

test('reads by id: sets only where stored, unicode, large items, memory growth, a second open on the page, engine.js directly', async ({ page }) => {
  const name = uniqueName('reads');
  const out = await page.evaluate(async (name) => {
    const { open } = (window as any).ibexdb;
    const show = (v: any): any =>
      v instanceof Set ? { set: [...v].sort() } : Array.isArray(v) ? v.map(show) : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, show(x)])) : v;
    let db = await open(name);
    const big = 'ü'.repeat(700_000) + '😀'; // > 1 MiB of UTF-8: the engine's read buffer grows, then shrinks
    const items: Record<string, any> = {
      'items/plain': { title: 'no set', n: 1, l: [1, 'x', null], o: { a: { b: true } } },
      'items/nested': { l: [{ s: new Set(['b', 'a']) }], o: { deep: { s: new Set<string>() } } },
      'items/lookalike': { o: { $set: 'not a list' }, t: 'has "$set" in a string' },
      'items/unicode': { 'clé ü': 'ñ 日本 😀', s: new Set(['é', '😀']) },
      'items/big': { big },
    };
    for (const [k, v] of Object.entries(items)) await db.put(k, v);
    const read = async () => {
      const r: Record<string, any> = {};
      for (const k of Object.keys(items)) r[k] = show(await db.get(k));
      r.missing = (await db.get('items/none')) === undefined;
      r.afterBig = show(await db.get('items/plain'));
      return r;
    };
    const first = await read();
    // Many writes grow wasm memory (detaching old views of it) between reads.
    await db.transaction((tx: any) => {
      for (let i = 0; i < 2000; i++) tx.put(`fill/${i}`, { pad: 'x'.repeat(500), s: new Set([String(i)]) });
    });
    const grown = await read();
    await db.close();
    db = await open(name); // second open on this page: the worker gets the page's compiled module
    const reopened = await read();
    await db.close();
    // engine.js in a worker of its own: EngineHandle.get revives sets only where the engine says.
    const src = `
      import { openEngine } from '${location.origin}/www/lib/engine.js';
      const show = ${show.toString()};
      const eng = await openEngine(${JSON.stringify(name)});
      const r = {};
      for (const k of ${JSON.stringify(Object.keys(items))}) r[k] = show(eng.get(k));
      r.missing = eng.get('items/none') === undefined;
      r.afterBig = show(eng.get('items/plain'));
      r.json = eng.getJson('items/unicode');
      await eng.close();
      postMessage(r);`;
    const w = new Worker(URL.createObjectURL(new Blob([src], { type: 'text/javascript' })), { type: 'module' });
    const direct: any = await new Promise((resolve, reject) => {
      w.onmessage = (ev) => resolve(ev.data);
      w.onerror = (ev) => reject(new Error(ev.message));
    });
    w.terminate();
    const json = direct.json;
    delete direct.json;
    return {
      first,
      same: [grown, reopened, direct].every((r) => JSON.stringify(r) === JSON.stringify(first)),
      bigOk: first['items/big'].big === big,
      json,
    };
  }, name);
  expect(out.first['items/plain']).toEqual({ title: 'no set', n: 1, l: [1, 'x', null], o: { a: { b: true } } });
  expect(out.first['items/nested']).toEqual({ l: [{ s: { set: ['a', 'b'] } }], o: { deep: { s: { set: [] } } } });
  expect(out.first['items/lookalike']).toEqual({ o: { $set: 'not a list' }, t: 'has "$set" in a string' });
  expect(out.first['items/unicode']).toEqual({ 'clé ü': 'ñ 日本 😀', s: { set: ['é', '😀'] } });
  expect(out.first.missing).toBe(true);
  expect(out.first.afterBig).toEqual(out.first['items/plain']);
  expect(out.bigOk).toBe(true);
  expect(out.same).toBe(true);
  expect(JSON.parse(out.json)).toEqual({ 'clé ü': 'ñ 日本 😀', s: { $set: ['é', '😀'] } });
});

test('CRUD, getMany, sets and history', async ({ page }) => {
  const name = uniqueName('crud');
  const out = await page.evaluate(async (name) => {
    const { open } = (window as any).ibexdb;
    const db = await open(name);
    await db.put('items/1', { title: 'Item 1', count: 1, tags: new Set(['tag 1', 'category 1']), nested: { a: [1, 'x', null, true] } });
    await db.put('items/2', { title: 'Item 2', count: 2.5 });
    const one = await db.get('items/1');
    await db.update('items/2', { count: 3, extra: 'e' });
    const two = await db.get('items/2');
    const missing = await db.get('items/nope');
    const many = await db.getMany(['items/1', 'items/nope', 'items/2']);
    await db.delete('items/1');
    const afterDelete = await db.get('items/1');
    const history = await db.history('items/2');
    const ident = db.publicKey;
    await db.close();
    return {
      one: { ...one, tags: [...one.tags].sort(), isSet: one.tags instanceof Set },
      two,
      missing: missing === undefined,
      many: many.map((x: any) => x?.title ?? null),
      afterDelete: afterDelete === undefined,
      history: history.map((h: any) => [h.op.type, typeof h.commit, h.author === ident, h.trusted]),
      ident,
    };
  }, name);
  expect(out.one).toEqual({ title: 'Item 1', count: 1, tags: ['category 1', 'tag 1'], nested: { a: [1, 'x', null, true] }, isSet: true });
  expect(out.two).toEqual({ title: 'Item 2', count: 3, extra: 'e' });
  expect(out.missing).toBe(true);
  expect(out.many).toEqual(['Item 1', null, 'Item 2']);
  expect(out.afterDelete).toBe(true);
  expect(out.history).toEqual([
    ['put', 'string', true, false],
    ['patch', 'string', true, false],
  ]);
  expect(out.ident).toMatch(/^[0-9a-f]{98}$/);
});

test('transactions are atomic and support set edits', async ({ page }) => {
  const out = await page.evaluate(async (name) => {
    const { open } = (window as any).ibexdb;
    const db = await open(name);
    const ret = await db.transaction((tx: any) => {
      tx.put('items/a', { title: 'A', tags: new Set(['x']) });
      tx.put('items/b', { title: 'B' });
      tx.setAdd('items/a', 'tags', ['y', 'z']);
      tx.setRemove('items/a', 'tags', ['x']);
      return 'done';
    });
    let failed = '';
    try {
      // The update of a missing item fails the whole transaction: items/c must not appear.
      await db.transaction((tx: any) => {
        tx.put('items/c', { title: 'C' });
        tx.update('items/missing', { title: '?' });
      });
    } catch (e: any) {
      failed = e.name;
    }
    await db.transaction((tx: any) => {
      tx.delete('items/b');
      tx.unset('items/a', 'title');
      tx.setAdd('items/a', 'tags', 'w');
    });
    const a = await db.get('items/a');
    const res = { ret, failed, a: { ...a, tags: [...a.tags].sort() }, b: await db.get('items/b'), c: await db.get('items/c') };
    await db.close();
    return res;
  }, uniqueName('txn'));
  expect(out.ret).toBe('done');
  expect(out.failed).toBe('NotFoundError');
  expect(out.a).toEqual({ tags: ['w', 'y', 'z'] });
  expect(out.b).toBeUndefined();
  expect(out.c).toBeUndefined();
});

test('transactions travel as bytes: every value reads back as put() stores it; bad values name their path and write nothing', async ({ page }) => {
  const out = await page.evaluate(async (name) => {
    const { open } = (window as any).ibexdb;
    const show = (v: any): any =>
      v instanceof Set ? { set: [...v].sort() } : Array.isArray(v) ? v.map(show) : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, show(x)])) : v;
    const wide: Record<string, number> = {};
    for (let i = 0; i < 300; i++) wide[`f${i}`] = i; // a map of >= 128 fields: its count is widened
    const bare = Object.create(null);
    bare.x = 1;
    const values: Record<string, any> = {
      plain: { title: 'no set', n: 1.5, neg: -0, big: 2 ** 60, l: [1, 'x', null, true, false], o: { a: { b: true } } },
      sets: { s: new Set(['b', 'a']), lone: { $set: ['y', 'x'] }, empty: new Set<string>(), l: [{ s: new Set(['q']) }] },
      lookalike: { o: { $set: 'not a list' }, two: { $set: ['a'], other: 1 }, t: 'has "$set" in a string' },
      unicode: { 'clé ü': 'ñ 日本 😀', s: new Set(['é', '😀']), long: 'é'.repeat(300), ascii: 'a'.repeat(200) },
      skipped: { kept: 1, gone: undefined },
      wide,
      bare,
    };
    const db = await open(name);
    for (const [k, v] of Object.entries(values)) await db.put(`a/${k}`, v);
    await db.transaction((tx: any) => {
      for (const [k, v] of Object.entries(values)) tx.put(`b/${k}`, v);
    });
    const same: Record<string, boolean> = {};
    const differ: Record<string, [string, string]> = {}; // what read back differently (the failure's message)
    for (const k of Object.keys(values)) {
      const [a, b] = [JSON.stringify(show(await db.get(`a/${k}`))), JSON.stringify(show(await db.get(`b/${k}`)))];
      same[k] = a === b;
      if (a !== b) differ[k] = [a, b];
    }
    const sets = show(await db.get('b/sets'));
    const plain = await db.get('b/plain');
    // Bad values: the whole transaction fails with the path, and nothing of it is written.
    const bad = async (f: (tx: any) => void) =>
      db.transaction((tx: any) => {
        tx.put('c/first', { ok: true });
        f(tx);
      }).then(() => 'resolved', (e: any) => `${e.name}: ${e.message}`);
    const errors = {
      nan: await bad((tx) => tx.put('c/1', { o: { n: NaN } })),
      date: await bad((tx) => tx.put('c/1', { l: [1, new Date(0)] })),
      hole: await bad((tx) => tx.put('c/1', { l: [1, undefined] })),
      setOfNumbers: await bad((tx) => tx.put('c/1', { s: new Set([1]) })),
      loneOfNumbers: await bad((tx) => tx.put('c/1', { s: { $set: [1] } })),
      surrogate: await bad((tx) => tx.put('c/1', { s: 'a\uD800b' })),
      notObject: await bad((tx) => tx.put('c/1', [1])),
      key: await bad((tx) => tx.put(7, { a: 1 })),
      badKey: await bad((tx) => tx.put('no-slash', { a: 1 })),
      dotted: await bad((tx) => tx.update('c/1', { 'a.b': 1 })),
      field: await bad((tx) => tx.unset('c/1', 5)),
      elements: await bad((tx) => tx.setAdd('c/1', 'tags', [1])),
    };
    const leaked = await db.get('c/first');
    await db.close();
    return { same, differ, sets, plain, errors, leaked };
  }, uniqueName('txnbytes'));
  expect(out.same, `put() and a transaction read back differently: ${JSON.stringify(out.differ)}`).toEqual({ plain: true, sets: true, lookalike: true, unicode: true, skipped: true, wide: true, bare: true });
  expect(out.sets).toEqual({ s: { set: ['a', 'b'] }, lone: { set: ['x', 'y'] }, empty: { set: [] }, l: [{ s: { set: ['q'] } }] });
  expect(Object.is(out.plain.neg, 0)).toBe(true);
  expect(out.plain.big).toBe(2 ** 60);
  expect(out.errors.nan).toMatch(/^InvalidValueError: invalid value at o\.n: numbers must be finite/);
  expect(out.errors.date).toMatch(/^InvalidValueError: invalid value at l\[1\]: a Date cannot be stored/);
  expect(out.errors.hole).toMatch(/^InvalidValueError: invalid value at l\[1\]: undefined in an array/);
  expect(out.errors.setOfNumbers).toMatch(/^InvalidValueError: invalid value at s: set elements must be strings/);
  expect(out.errors.loneOfNumbers).toMatch(/^InvalidValueError: .*set elements must be strings/);
  expect(out.errors.surrogate).toMatch(/^InvalidValueError: .*lone surrogate/);
  expect(out.errors.notObject).toMatch(/^InvalidValueError: invalid value at c\/1: an item must be a plain object/);
  expect(out.errors.key).toMatch(/^InvalidKeyError: a key must be a string/);
  expect(out.errors.badKey).toMatch(/^InvalidKeyError: /);
  expect(out.errors.dotted).toMatch(/^InvalidValueError: .*contains '\.'/);
  expect(out.errors.field).toMatch(/^InvalidValueError: invalid value at c\/1: a field name must be a string/);
  expect(out.errors.elements).toMatch(/^InvalidValueError: invalid value at c\/1\.tags: set elements must be strings/);
  expect(out.leaked).toBeUndefined();
});

test('engine.js takes a transaction as a function, a builder or its bytes (not JSON text); a failed op leaves the builder usable; malformed bytes are a DecodeError', async ({ page }) => {
  const out = await page.evaluate(async (name) => {
    const src = `
      import { openEngine, TxnBuilder } from '${location.origin}/www/lib/engine.js';
      const eng = await openEngine(${JSON.stringify(name)});
      const r = {};
      eng.transaction((tx) => tx.put('t/fn', { via: 'function' }));
      const tx = new TxnBuilder();
      tx.put('t/builder', { via: 'builder' });
      try { tx.put('t/bad', { n: Infinity }); } catch (e) { r.badOp = e.name; }
      try { tx.delete('t/\\uD800'); } catch (e) { r.badKeyOp = e.name; }
      tx.setAdd('t/builder', 'tags', ['a']);
      r.size = tx.size;
      eng.transaction(tx);
      const bytes = new TxnBuilder().put('t/bytes', { via: 'bytes' }).bytes();
      eng.transaction(bytes);
      try { eng.transaction('[["put", "t/json", {"via": "json"}]]'); r.json = 'accepted'; } catch (e) { r.json = e.name; }
      // transaction(fn) reuses its builder: cleared each time, a nested call gets its own.
      eng.transaction((tx) => {
        tx.put('t/outer', { via: 'outer' });
        eng.transaction((inner) => inner.put('t/inner', { via: 'inner' }));
      });
      eng.putJson('t/outer', '{"via": "changed"}');
      eng.transaction((tx) => tx.put('t/again', { via: 'again' }));
      for (const [k, b] of [['version', [2]], ['op', [1, 9, 3, 116, 47, 120]], ['truncated', bytes.slice(0, bytes.length - 2)]]) {
        try { eng.transaction(new Uint8Array(b)); r[k] = 'accepted'; } catch (e) { r[k] = e.name + ': ' + e.message; }
      }
      try { eng.transaction(42); } catch (e) { r.notTxn = e.name; }
      r.rows = JSON.parse(eng.queryJson('{"collection": "t"}'));
      r.bad = eng.getJson('t/bad') ?? null;
      await eng.close();
      postMessage(r);`;
    const w = new Worker(URL.createObjectURL(new Blob([src], { type: 'text/javascript' })), { type: 'module' });
    const r: any = await new Promise((resolve, reject) => {
      w.onmessage = (ev) => resolve(ev.data);
      w.onerror = (ev) => reject(new Error(ev.message));
    });
    w.terminate();
    return r;
  }, uniqueName('txnforms'));
  expect(out.badOp).toBe('InvalidValueError');
  expect(out.badKeyOp).toBe('InvalidValueError');
  expect(out.size).toBe(2);
  expect(out.rows).toEqual([
    ['again', { via: 'again' }],
    ['builder', { tags: { $set: ['a'] }, via: 'builder' }],
    ['bytes', { via: 'bytes' }],
    ['fn', { via: 'function' }],
    ['inner', { via: 'inner' }],
    ['outer', { via: 'changed' }],
  ]);
  expect(out.bad).toBeNull();
  expect(out.version).toMatch(/^DecodeError: .*unknown transaction format version 2/);
  expect(out.op).toMatch(/^DecodeError: .*unknown transaction op 9/);
  expect(out.truncated).toMatch(/^DecodeError: /);
  expect(out.notTxn).toBe('InvalidValueError');
  expect(out.json).toBe('InvalidValueError');
});

test('queries, count, keys, aggregate, explain', async ({ page }) => {
  const out = await page.evaluate(async (name) => {
    const { open } = (window as any).ibexdb;
    const db = await open(name, { schemas: { items: { fields: { count: { type: 'number' } }, indexes: ['count'] } } });
    await db.transaction((tx: any) => {
      for (let i = 0; i < 50; i++) tx.put(`items/${String(i).padStart(3, '0')}`, { title: `Item ${i}`, count: i, tags: new Set([`tag ${i}`, `category ${i % 5}`]) });
    });
    const range = await db.query({ collection: 'items', where: { count: { gte: 10, lt: 20 } }, sort: [{ field: 'count', desc: true }], limit: 3 });
    const complex = await db.query({ collection: 'items', where: { tags: { contains: 'category 3' } }, sort: [{ field: 'count', desc: true }], limit: 2 });
    const res = {
      range: range.map((r: any) => [r.id, r.value.count]),
      complex: complex.map((r: any) => r.value.count),
      countAll: await db.count('items'),
      countWhere: await db.count('items', { count: { lt: 5 } }),
      keys: (await db.keys('items')).slice(0, 3),
      agg: await db.aggregate({ collection: 'items', aggregates: { s: { sum: 'count' }, mn: { min: 'count' }, mx: { max: 'count' }, av: { avg: 'count' } } }),
      plan: await db.explain({ collection: 'items', where: { count: { gte: 10, lt: 20 } } }),
    };
    await db.close();
    return res;
  }, uniqueName('query'));
  expect(out.range).toEqual([['019', 19], ['018', 18], ['017', 17]]);
  expect(out.complex).toEqual([48, 43]);
  expect(out.countAll).toBe(50);
  expect(out.countWhere).toBe(5);
  expect(out.keys).toEqual(['000', '001', '002']);
  expect(out.agg).toMatchObject({ s: 1225, mn: 0, mx: 49, av: 24.5 });
  expect(JSON.stringify(out.plan)).toContain('count');
});

test('live queries update after writes from the same page', async ({ page }) => {
  const out = await page.evaluate(async (name) => {
    const { open } = (window as any).ibexdb;
    const db = await open(name);
    await db.put('items/1', { title: 'one', count: 1 });
    const calls: number[] = [];
    const lq = await db.live({ collection: 'items', sort: [{ field: 'count' }] }, (rows: any[]) => calls.push(rows.length));
    const initial = lq.results.map((r: any) => r.id);
    await db.put('items/2', { title: 'two', count: 0 });
    const afterPut = lq.results.map((r: any) => r.id); // updated before put() resolved
    await db.update('items/1', { count: -1 });
    const afterMove = lq.results.map((r: any) => [r.id, r.value.count]);
    await db.delete('items/2');
    const afterDelete = lq.results.map((r: any) => r.id);
    lq.close();
    await db.put('items/3', { count: 3 });
    const afterClose = lq.results.map((r: any) => r.id);
    await db.close();
    return { initial, afterPut, afterMove, afterDelete, afterClose, calls };
  }, uniqueName('live'));
  expect(out.initial).toEqual(['1']);
  expect(out.afterPut).toEqual(['2', '1']);
  expect(out.afterMove).toEqual([['1', -1], ['2', 0]]);
  expect(out.afterDelete).toEqual(['1']);
  expect(out.afterClose).toEqual(['1']);
  expect(out.calls).toEqual([1, 2, 2, 1]); // first results, then one call per change
});

test('calls in one tick are batched; relaxed durability; flush, verify, storageInfo', async ({ page, browserName }) => {
  const out = await page.evaluate(async (name) => {
    const { open } = (window as any).ibexdb;
    const db = await open(name, { durability: 'relaxed' });
    const puts = [];
    for (let i = 0; i < 200; i++) puts.push(db.put(`items/${i}`, { i }));
    await Promise.all(puts);
    const gets = await Promise.all([db.get('items/0'), db.get('items/199'), db.count('items')]);
    await db.flush();
    const report = await db.verify();
    const info = await db.storageInfo();
    await db.close();
    return { gets, report, info };
  }, uniqueName('batch'));
  expect(out.gets).toEqual([{ i: 0 }, { i: 199 }, 200]);
  expect(out.report.commits).toBe(200);
  expect(out.report.items).toBe(200);
  // WebKitGTK's automation session reports no quota (navigator.storage.estimate() has none): 0.
  if (browserName !== 'webkit') expect(out.info.quota).toBeGreaterThan(0);
  expect(out.info.usage).toBeGreaterThanOrEqual(0);
  expect(typeof out.info.persisted).toBe('boolean');
  expect(out.info.repository.logBytes).toBeGreaterThan(200 * 20);
});

test('identity export and import; trusted mode; commit exchange', async ({ page, browser }) => {
  // Seals are bound to the repository's name: a bundle is received by another replica of the
  // same repository (here in another browser context, i.e. another OPFS), and refused by a
  // repository of another name.
  const name = uniqueName('idA');
  const out = await page.evaluate(async ([a, other, c]) => {
    const { open } = (window as any).ibexdb;
    const dbA = await open(a);
    const exported = await dbA.exportIdentity();
    await dbA.put('notes/1', { text: 'from A' });
    const bundle = await dbA.exportCommits();
    const idA = dbA.publicKey;
    await dbA.close();
    const dbO = await open(other);
    const wrong = await dbO.receive(bundle).then(
      () => null,
      (e: any) => [e.name, e.kind],
    );
    await dbO.close();
    const dbC = await open(c, { trusted: true });
    await dbC.put('notes/x', { t: 1 });
    const trustedId = dbC.publicKey;
    const trustedVerify = await dbC.verify();
    await dbC.close();
    return { exported, idA, bundle: Array.from(bundle as Uint8Array), wrong, trustedId, trustedVerify };
  }, [name, uniqueName('idB'), uniqueName('idC')]);
  expect(out.exported.slice(0, 19)).toBe('ibexdb-identity-v1:');
  expect(out.wrong).toEqual(['SignatureError', 'wrong-repository']);
  expect(out.trustedId).toBeNull();
  expect(out.trustedVerify.trustedCommits).toBe(1);

  const ctxB = await browser.newContext();
  try {
    const pageB = await ctxB.newPage();
    await pageB.goto('/www/examples/playground.html');
    await pageB.waitForSelector('body[data-ready="1"]');
    const got = await pageB.evaluate(async ([name, exported, bytes]) => {
      const { open } = (window as any).ibexdb;
      const dbB = await open(name, { identity: exported });
      const report = await dbB.receive(new Uint8Array(bytes as number[]));
      const item = await dbB.get('notes/1');
      const verified = await dbB.verify();
      const idB = dbB.publicKey;
      await dbB.close();
      return { report, item, verified, idB };
    }, [name, out.exported, out.bundle] as const);
    expect(got.idB).toBe(out.idA);
    expect(got.report.applied).toBe(1);
    expect(got.item).toEqual({ text: 'from A' });
    expect(got.verified.signaturesVerified).toBeGreaterThan(0);
  } finally {
    await ctxB.close();
  }
});

test('the identity file holds the public key; an old file is rewritten; a damaged one refuses writes', async ({ page }) => {
  const out = await page.evaluate(async ([name, other]) => {
    const { open } = (window as any).ibexdb;
    // The identity file in OPFS, or where there is no OPFS (WebKitGTK) in the repository's
    // IndexedDB database (backends/indexeddb.js: the size under ['identity', -1], the bytes under
    // ['identity', 0]; a write counts the generation, so the worker does not reopen from kept bytes).
    const opfs = await navigator.storage.getDirectory().then(() => true, () => false);
    const file = async (n: string) => {
      const dir = await (await (await navigator.storage.getDirectory()).getDirectoryHandle('ibexdb')).getDirectoryHandle(n);
      return dir.getFileHandle('identity');
    };
    const idb = (n: string) =>
      new Promise<IDBDatabase>((res, rej) => {
        const r = indexedDB.open(`ibexdb/${n}`);
        r.onsuccess = () => res(r.result);
        r.onerror = () => rej(r.error);
      });
    const done = <T,>(r: IDBRequest<T>) => new Promise<T>((res, rej) => ((r.onsuccess = () => res(r.result)), (r.onerror = () => rej(r.error))));
    const bytes = async (n: string) => {
      if (opfs) return new Uint8Array(await (await (await file(n)).getFile()).arrayBuffer());
      const db = await idb(n);
      const store = db.transaction('files').objectStore('files');
      const [size, chunk] = await Promise.all([done(store.get(['identity', -1])), done(store.get(['identity', 0]))]);
      db.close();
      return new Uint8Array(chunk).slice(0, size);
    };
    const rewrite = async (n: string, b: Uint8Array) => {
      if (opfs) {
        const w = await (await file(n)).createWritable();
        await w.write(b);
        await w.close();
        return;
      }
      const db = await idb(n);
      const tx = db.transaction('files', 'readwrite');
      const store = tx.objectStore('files');
      store.put(b.slice(), ['identity', 0]);
      store.put(b.length, ['identity', -1]);
      const g = store.get('generation');
      g.onsuccess = () => store.put((g.result ?? 0) + 1, 'generation');
      await new Promise((res) => (tx.oncomplete = res));
      db.close();
    };
    const db = await open(name);
    const id = db.publicKey;
    await db.put('notes/1', { t: 1 });
    await db.close();
    const stored = await bytes(name);
    // A file of the secret alone (before the public key was stored beside it).
    await rewrite(name, stored.slice(0, 48));
    const again = await open(name);
    const sameId = again.publicKey === id;
    await again.put('notes/2', { t: 2 });
    await again.close();
    const rewritten = await bytes(name);
    // The public key of another identity in place of this one's.
    const o = await open(other);
    const otherKey = o.publicKey;
    await o.close();
    const damaged = new Uint8Array(rewritten);
    damaged.set(await bytes(other).then((b) => b.slice(48)), 48);
    await rewrite(name, damaged);
    const bad = await open(name);
    const read = await bad.get('notes/1');
    const write = await bad.put('notes/3', { t: 3 }).then(() => null, (e: any) => e.name);
    const badId = bad.publicKey;
    await bad.close();
    return {
      size: stored.length, pubHex: Array.from(stored.slice(48), (b) => b.toString(16).padStart(2, '0')).join(''),
      id, sameId, rewrittenSize: rewritten.length, read, write, badIsOther: badId === otherKey,
    };
  }, [uniqueName('idfile'), uniqueName('idother')]);
  expect(out.size).toBe(97);
  expect(out.pubHex).toBe(out.id);
  expect(out.sameId).toBe(true);
  expect(out.rewrittenSize).toBe(97);
  expect(out.read).toEqual({ t: 1 });
  expect(out.badIsOther).toBe(true);
  expect(out.write).toBe('SignatureError');
});

test('fresh identities open: each self-tested before it is stored (docs/design.md §11.5), signs, verifies, and reopens as itself', async ({ page }) => {
  // The core derives a new identity's public key twice by two computations, decompresses it and
  // signs a test message before the identity file is written (Identity::generate; a wrong
  // derivation, as JavaScriptCore computes at times, is replaced by a fresh candidate). Here, in
  // every browser: fresh repositories open, write, verify their seals, and reopen with the same key.
  const out = await page.evaluate(async (prefix) => {
    const { open } = (window as any).ibexdb;
    const rows = [];
    for (let i = 0; i < 4; i++) {
      const name = `${prefix}-${i}`;
      const db = await open(name);
      const key = db.publicKey;
      await db.put('notes/1', { i });
      await db.settle(); // seals the commit now
      const v = await db.verify();
      const exported: string = await db.exportIdentity();
      await db.close();
      const again = await open(name);
      rows.push({ keyOk: /^0[23][0-9a-f]{96}$/.test(key), signed: v.signaturesVerified > 0, exported: exported.startsWith('ibexdb-identity-v1:'), same: again.publicKey === key, item: await again.get('notes/1') });
      await again.close();
    }
    return rows;
  }, uniqueName('fresh-id'));
  expect(out).toEqual([0, 1, 2, 3].map((i) => ({ keyOk: true, signed: true, exported: true, same: true, item: { i } })));
});

test('P-384 in wasm holds in fresh workers right after a compile: every derived public key is a point of the curve, the same twice', async ({ page, browserName }) => {
  // WebKitGTK 2.50.6's JavaScriptCore gets this wrong at times (open() failed with "public key is
  // not a P-384 point"): about 1 key in 700 with its OMG wasm tier, rarer without it, which is how
  // its specs run (docs/design.md §15.1a, JSC_ENV in support/webkit.ts). A browser fault ibexdb
  // cannot fix: in WebKit this measures it only when asked (IBEXDB_WEBKIT_P384=1).
  test.skip(browserName === 'webkit' && process.env.IBEXDB_WEBKIT_P384 !== '1', 'WebKitGTK computes P-384 in wasm wrong at times (docs/design.md §15.1a): IBEXDB_WEBKIT_P384=1 runs it');
  // Each round compiles the module afresh (a fresh tier-up) and three workers derive at once, as
  // open() does with the module the page compiled.
  await gotoPlayground(page);
  const out = await page.evaluate(async () => {
    const bytes = await (await fetch('/pkg/ibexdb_bg.wasm')).arrayBuffer();
    const src = `onmessage = async (ev) => { try {
      const g = await import(ev.data.base + '/pkg/ibexdb.js');
      await g.default({ module_or_path: ev.data.mod });
      const hex = (h) => Uint8Array.from(h.match(/../g), (x) => parseInt(x, 16));
      const bad = [];
      for (let i = 0; i < 4; i++) {
        const s = g.Engine.identityFromEntropy(crypto.getRandomValues(new Uint8Array(48)));
        const pk = g.Engine.publicKeyOf(s);
        try { g.Engine.uncompressedKey(hex(pk)); } catch (e) { bad.push(String(e.message)); }
        if (g.Engine.publicKeyOf(s) !== pk) bad.push('derived differently the second time');
      }
      postMessage({ bad });
    } catch (e) { postMessage({ bad: ['worker: ' + e] }); } };`;
    const url = URL.createObjectURL(new Blob([src], { type: 'text/javascript' }));
    const bad: string[] = [];
    let rounds = 0;
    for (const t0 = performance.now(); rounds < 150 && performance.now() - t0 < 25_000; rounds++) {
      const mod = await WebAssembly.compile(bytes);
      const answers = await Promise.all([0, 1, 2].map(() => new Promise<any>((resolve) => {
        const w = new Worker(url, { type: 'module' });
        w.onmessage = (e) => { resolve(e.data); w.terminate(); };
        w.onerror = (e) => resolve({ bad: [`worker error: ${e.message}`] });
        w.postMessage({ mod, base: location.origin });
      })));
      for (const a of answers) bad.push(...a.bad);
    }
    return { rounds, bad };
  });
  expect(out.bad).toEqual([]);
  expect(out.rounds).toBeGreaterThanOrEqual(30);
});
