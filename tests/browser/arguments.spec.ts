// Every public method called with every wrong type, argument by argument: each call fails with
// a typed IbexError that names the argument, nothing reaches the engine (no PanicError, no
// write), and the database works as before afterwards. The table lists each method with valid
// arguments; every argument is replaced in turn by each wrong value of its kind.
import { test, expect, gotoPlayground, uniqueName } from './ibexdb.fixtures';

test.beforeEach(async ({ page, watched }) => {
  void watched;
  await gotoPlayground(page);
});

test('every public method rejects every wrong argument type with a typed error naming it, and nothing is written', async ({ page }) => {
  const out = await page.evaluate(async (name) => {
    const ib = (window as any).ibexdb;
    const db = await ib.open(name);
    await db.put('notes/keep', { title: 'kept', tags: new Set(['a']) });
    const before = { count: await db.count('notes'), history: (await db.history('notes/keep')).length };
    const other = await ib.open(`${name}-other`);
    const validKey = other.publicKey;
    await other.close();
    const bundle = await db.exportCommits();

    // Wrong values: what an app can pass by mistake (every JS type, and look-alikes).
    const wrong: Record<string, () => unknown> = {
      undefined: () => undefined,
      null: () => null,
      number: () => 42,
      NaN: () => NaN,
      boolean: () => true,
      bigint: () => 10n,
      string: () => 'notes',
      object: () => ({ collection: 'notes' }),
      array: () => ['notes/keep'],
      function: () => () => {},
      symbol: () => Symbol('s'),
      Date: () => new Date(0),
      Map: () => new Map([['a', 1]]),
      Uint8Array: () => new Uint8Array(2),
    };
    // Kinds of argument: which wrong values are wrong for it (the rest are its own type).
    const not = (...ok: string[]) => Object.keys(wrong).filter((k) => !ok.includes(k));
    const KIND: Record<string, string[]> = {
      key: not('string'),
      keys: not('array'),
      collection: not('string'),
      query: not('object'),
      where: not('object', 'undefined'),
      item: not('object'),
      fn: not('function'),
      optFn: not('function', 'undefined'),
      schema: not('object'),
      bundle: not('Uint8Array'),
      publicKey: not('string'),
      role: not('string'),
      flags: not('object'),
      url: not('string', 'array', 'undefined', 'null'),
    };
    const q = { collection: 'notes' };
    // [method, valid arguments, the kind of each argument, its name in errors]
    const TABLE: [string, unknown[], string[], string[]][] = [
      ['get', ['notes/keep'], ['key'], ['key']],
      ['getMany', [['notes/keep']], ['keys'], ['keys']],
      ['put', ['notes/new', { a: 1 }], ['key', 'item'], ['key', 'value']],
      ['update', ['notes/keep', { a: 1 }], ['key', 'item'], ['key', 'fields']],
      ['delete', ['notes/keep'], ['key'], ['key']],
      ['transaction', [(tx: any) => tx.put('notes/t', { a: 1 })], ['fn'], ['fn']],
      ['query', [q], ['query'], ['query']],
      ['explain', [q], ['query'], ['query']],
      ['page', [q], ['query'], ['query']],
      ['count', ['notes', { title: 'kept' }], ['collection', 'where'], ['collection', 'where']],
      ['keys', ['notes'], ['collection'], ['collection']],
      ['aggregate', [{ collection: 'notes', aggregates: { n: { count: true } } }], ['query'], ['query']],
      ['live', [q, () => {}], ['query', 'optFn'], ['query', 'onChange']],
      ['history', ['notes/keep'], ['key'], ['key']],
      ['defineSchema', ['things', { fields: {} }], ['collection', 'schema'], ['collection', 'schema']],
      ['receive', [bundle], ['bundle'], ['bundle']],
      ['grant', [validKey, 'reader'], ['publicKey', 'role'], ['publicKey', 'role']],
      ['revoke', [validKey], ['publicKey'], ['publicKey']],
      ['setPublic', [{ read: false, write: false }], ['flags'], ['flags']],
      ['invite', [{ role: 'reader' }], ['flags'], ['options']],
      ['revokeInvite', ['0'.repeat(32)], ['publicKey'], ['id']],
      ['sync', [undefined], ['url'], ['url']],
    ];
    const cases: any[] = [];
    const describeCall = (m: string, args: unknown[]) => `${m}(${args.map((a) => (typeof a === 'symbol' ? 'Symbol' : typeof a === 'bigint' ? `${a}n` : typeof a === 'function' ? 'fn' : JSON.stringify(a) ?? 'undefined')).join(', ')})`;
    const outcome = async (call: () => unknown) => {
      let sync = false;
      let p: any;
      try {
        p = call();
      } catch (e) {
        sync = true;
        p = Promise.reject(e);
      }
      try {
        await p;
        return { error: null, sync };
      } catch (e: any) {
        const cls = ib[e?.name];
        return {
          sync,
          error: e?.name,
          typed: typeof cls === 'function' && e instanceof cls && e instanceof ib.IbexError,
          argument: e?.argument ?? e?.path,
          message: String(e?.message),
        };
      }
    };
    for (const [method, valid, kinds, names] of TABLE) {
      for (let i = 0; i < valid.length; i++) {
        for (const w of KIND[kinds[i]]) {
          const args = [...valid];
          args[i] = wrong[w]();
          // `sync(undefined)` with sync off is not a wrong type; skip that one pairing.
          const r = await outcome(() => db[method](...args));
          cases.push({ call: describeCall(method, args), method, wrong: w, expectArgument: names[i], ...r });
        }
      }
    }
    // Wrong element types inside arrays and objects.
    for (const [call, f, arg] of [
      ['getMany([42])', () => db.getMany([42]), 'keys[0]'],
      ['getMany(["notes/keep", null])', () => db.getMany(['notes/keep', null]), 'keys[1]'],
      ['query({})', () => db.query({}), 'query.collection'],
      ['query({collection: 42})', () => db.query({ collection: 42 }), 'query.collection'],
      ['live({collection: {}})', () => db.live({ collection: {} }), 'query.collection'],
      ['setPublic({read: "yes", write: false})', () => db.setPublic({ read: 'yes', write: false }), 'flags.read'],
      ['grant(validKey, "god")', () => db.grant(validKey, 'god'), 'role'],
      ['invite({role: "god"})', () => db.invite({ role: 'god' }), 'options'],
      ['invite({role: "reader", uses: 0})', () => db.invite({ role: 'reader', uses: 0 }), 'options'],
      ['put("notes/x", {"a.b": 1})', () => db.put('notes/x', { 'a.b': 1 }), 'a.b'],
      ['transaction(async fn)', () => db.transaction(async () => {}), 'fn'],
    ] as [string, () => unknown, string][]) {
      cases.push({ call, expectArgument: arg, ...(await outcome(f)) });
    }
    const onSync: any[] = [];
    for (const w of KIND.fn) {
      onSync.push({ call: `onSyncStatus(${w})`, expectArgument: 'cb', ...(await outcome(() => db.onSyncStatus(wrong[w]()))) });
    }
    // open(): the name and every option.
    const opens: any[] = [];
    for (const w of not('string')) opens.push({ call: `open(${w})`, ...(await outcome(() => ib.open(wrong[w]()))) });
    for (const [label, options, arg] of [
      ['options 42', 42, 'options'],
      ['options "flush"', 'flush', 'options'],
      ['durability', { durability: 'fast' }, 'options.durability'],
      ['trusted', { trusted: 'yes' }, 'options.trusted'],
      ['identity', { identity: 42 }, 'options.identity'],
      ['quotaBytes', { quotaBytes: '1mb' }, 'options.quotaBytes'],
      ['quotaBytes negative', { quotaBytes: -1 }, 'options.quotaBytes'],
      ['schemas', { schemas: [] }, 'options.schemas'],
      ['schemas entry', { schemas: { notes: 5 } }, 'options.schemas.notes'],
      ['recovery', { recovery: 'maybe' }, 'options.recovery'],
      ['sync', { sync: 'http://x' }, 'options.sync'],
      ['onError', { onError: 'log' }, 'options.onError'],
      ['persist', { persist: 'yes' }, 'options.persist'],
      ['typo', { durabilty: 'relaxed' }, 'options.durabilty'],
    ] as [string, unknown, string][]) {
      opens.push({ call: `open(name, ${label})`, expectArgument: arg, ...(await outcome(() => ib.open(`${name}-opts`, options))) });
    }
    // The issue's cases: a collection no key can hold is an error, not 0 or [].
    const content = {
      countDotDot: await outcome(() => db.count('../x')),
      keysDotDot: await outcome(() => db.keys('../x')),
      queryDotDot: await outcome(() => db.query({ collection: '../x' })),
    };
    // The database is unharmed: nothing was written, the engine never panicked, it still works.
    const after = { count: await db.count('notes'), history: (await db.history('notes/keep')).length };
    const kept = await db.get('notes/keep');
    const verify = await db.verify();
    await db.close();
    return { cases, onSync, opens, content, before, after, kept: { title: kept.title, tags: [...kept.tags] }, verifyItems: verify.items };
  }, uniqueName('args'));

  const bad = (c: any) => !c.error || !c.typed || c.error === 'PanicError' || (c.expectArgument !== undefined && c.argument !== c.expectArgument);
  const failures = [...out.cases, ...out.onSync, ...out.opens].filter(bad);
  expect(failures, JSON.stringify(failures, null, 1)).toEqual([]);
  // onSyncStatus is synchronous (it returns the unsubscribe function): it throws.
  expect(out.onSync.every((c: any) => c.sync)).toBe(true);
  // Every other method rejects (never throws synchronously).
  expect(out.cases.filter((c: any) => c.sync)).toEqual([]);
  expect(out.cases.length).toBeGreaterThan(150);
  // Errors carry the class that fits: keys and collections InvalidKeyError, queries QueryError, values InvalidValueError.
  const nameOf = (call: string) => out.cases.find((c: any) => c.call === call)?.error;
  expect(nameOf('get(42)')).toBe('InvalidKeyError');
  expect(nameOf('count({"collection":"notes"}, {"title":"kept"})')).toBe('InvalidKeyError');
  expect(nameOf('keys({"collection":"notes"})')).toBe('InvalidKeyError');
  expect(nameOf('history(42)')).toBe('InvalidKeyError');
  expect(nameOf('query(42)')).toBe('QueryError');
  expect(nameOf('transaction(5)') ?? nameOf('transaction(42)')).toBe('InvalidValueError');
  expect(nameOf('put("notes/new", null)')).toBe('InvalidValueError');
  expect(nameOf('grant(validKey, "god")')).toBe('InvalidValueError');
  expect(out.content.countDotDot.error).toBe('InvalidKeyError');
  expect(out.content.keysDotDot.error).toBe('InvalidKeyError');
  expect(out.content.queryDotDot.error).toBe('InvalidKeyError');
  expect(out.after).toEqual(out.before);
  expect(out.kept).toEqual({ title: 'kept', tags: ['a'] });
  expect(out.verifyItems).toBe(1);
});

test('EngineHandle (engine.js in a worker) refuses keys and collections that are not strings before the engine sees them', async ({ page }) => {
  const out = await page.evaluate(async (name) => {
    const src = `
      import { openEngine } from '${location.origin}/www/lib/engine.js';
      const eng = await openEngine(${JSON.stringify(name)});
      eng.put('n/1', { a: 1 });
      const r = [];
      for (const [label, f] of [
        ['get', () => eng.get(42)], ['getJson', () => eng.getJson({})], ['put', () => eng.put(null, { a: 1 })],
        ['putJson', () => eng.putJson(7, '{}')], ['delete', () => eng.delete(undefined)], ['count', () => eng.count({ collection: 'n' })],
        ['keys', () => eng.keys(['n'])], ['historyJson', () => eng.historyJson(1)], ['transaction', () => eng.transaction('[]')],
      ]) {
        try { f(); r.push([label, 'no error']); } catch (e) { r.push([label, e.name, e.argument ?? e.path]); }
      }
      r.push(['still works', eng.get('n/1').a, eng.count('n')]);
      await eng.close();
      postMessage(r);`;
    const w = new Worker(URL.createObjectURL(new Blob([src], { type: 'text/javascript' })), { type: 'module' });
    const r: any = await new Promise((resolve, reject) => {
      w.onmessage = (ev) => resolve(ev.data);
      w.onerror = (ev) => reject(new Error(ev.message));
    });
    w.terminate();
    return r;
  }, uniqueName('engargs'));
  expect(out).toEqual([
    ['get', 'InvalidKeyError', 'key'],
    ['getJson', 'InvalidKeyError', 'key'],
    ['put', 'InvalidKeyError', 'key'],
    ['putJson', 'InvalidKeyError', 'key'],
    ['delete', 'InvalidKeyError', 'key'],
    ['count', 'InvalidKeyError', 'collection'],
    ['keys', 'InvalidKeyError', 'collection'],
    ['historyJson', 'InvalidKeyError', 'key'],
    ['transaction', 'InvalidValueError', 'ops'],
    ['still works', 1, 1],
  ]);
});
