// Hostile argument values at the page API, from outside (attack34), beyond arguments.spec.ts's
// wrong types: cyclic objects and arrays, Proxies whose traps throw, getters and toJSON that
// throw, a 4 MiB key, lone surrogates and NUL, BigInt inside objects. Every call must reject
// (never throw synchronously) with an IbexError of a stable name, or with the caller's own
// exception; no PanicError; and the database works afterwards (a write and a read back).
import { test, expect, gotoPlayground, uniqueName } from './ibexdb.fixtures';

test.beforeEach(async ({ page, watched }) => {
  void watched;
  await gotoPlayground(page);
});

test('cyclic, throwing and huge arguments are refused typed, rejected, and leave the database working', async ({ page }) => {
  test.setTimeout(240_000);
  const out = await page.evaluate(async (name) => {
    const ib = (window as any).ibexdb;
    const db = await ib.open(name);
    await db.put('notes/1', { n: 1 });
    const boom = () => {
      throw new Error('boom from a trap');
    };
    const cyclic: any = {};
    cyclic.self = cyclic;
    const cyclicList: any[] = [];
    cyclicList.push(cyclicList);
    const traps = { get: boom, has: boom, ownKeys: boom, getOwnPropertyDescriptor: boom, getPrototypeOf: boom };
    const HOSTILE: [string, () => unknown][] = [
      ['a cyclic object', () => cyclic],
      ['a cyclic array', () => cyclicList],
      ['a Proxy whose traps throw', () => new Proxy({}, traps)],
      ['an array Proxy whose traps throw', () => new Proxy([], traps)],
      ['toJSON and toString that throw', () => ({ toJSON: boom, toString: boom, valueOf: boom })],
      ['a getter that throws', () => Object.defineProperty({}, 'collection', { get: boom, enumerable: true })],
      ['a 4 MiB key', () => `notes/${'x'.repeat(4 << 20)}`],
      ['a lone surrogate', () => 'notes/\ud800'],
      ['NUL', () => 'notes/\u0000'],
      ['a BigInt field', () => ({ n: 10n })],
      ['a nested cycle', () => ({ a: { b: cyclic } })],
      ['a locked ReadableStream', () => {
        const st = new ReadableStream({ start: (c) => c.close() });
        st.getReader();
        return st;
      }],
      ['detached bytes', () => {
        const u = new Uint8Array([1, 2, 3]);
        structuredClone(u.buffer, { transfer: [u.buffer] });
        return { b: u };
      }],
    ];
    const PK = '02' + '11'.repeat(48);
    const METHODS: [string, unknown[]][] = [
      ['get', ['notes/1']],
      ['getMany', [['notes/1']]],
      ['query', [{ collection: 'notes' }]],
      ['page', [{ collection: 'notes', limit: 1 }]],
      ['explain', [{ collection: 'notes' }]],
      ['count', ['notes', { n: 1 }]],
      ['keys', ['notes']],
      ['aggregate', [{ collection: 'notes', aggregates: { n: { count: true } } }]],
      ['history', ['notes/1']],
      ['put', ['notes/2', { n: 2 }]],
      ['update', ['notes/1', { n: 3 }]],
      ['delete', ['notes/9']],
      ['defineSchema', ['other', { indexes: ['n'] }]],
      ['receive', [new Uint8Array(0)]],
      ['grant', [PK, 'reader']],
      ['revoke', [PK]],
      ['invite', [{ role: 'reader' }]],
      ['redeem', ['https://example.invalid/#x']],
      ['revokeInvite', ['0'.repeat(32)]],
      ['setPublic', [{ read: false, write: false }]],
      ['exportIdentity', [undefined]],
      ['attach', ['notes/1', 'a.txt', new Uint8Array([1]), { type: 'text/plain' }]],
      ['attachment', ['notes/1', 'a.txt']],
      ['detach', ['notes/1', 'b.txt']],
      ['attachments', ['notes/1']],
      ['live', [{ collection: 'notes' }, () => {}]],
      ['sync', ['ws://127.0.0.1:1/']],
    ];
    const bad: string[] = [];
    const judge = (e: any) => {
      if (e instanceof Error && e.message === 'boom from a trap') return null;
      if (e?.name === 'PanicError') return `PanicError: ${String(e.message).slice(0, 120)}`;
      if (!(e instanceof ib.IbexError)) return `${e?.name} (not an IbexError): ${String(e?.message).slice(0, 120)}`;
      if (!/^[A-Z][A-Za-z]*Error$/.test(e.name)) return `no stable name: ${e.name}`;
      return null;
    };
    let canary = 0;
    for (const [method, valid] of METHODS) {
      for (let i = 0; i < valid.length; i++) {
        for (const [label, make] of HOSTILE) {
          const args = [...valid];
          args[i] = make();
          const what = `${method} arg ${i} = ${label}`;
          let r: any;
          try {
            r = db[method](...args);
          } catch (e: any) {
            bad.push(`${what}: threw synchronously (${e?.name})`);
            continue;
          }
          try {
            const v = await Promise.race([r, new Promise((_, no) => setTimeout(() => no(new Error('no answer within 20 s')), 20_000))]);
            if (method === 'live') (v as any)?.close?.();
          } catch (e: any) {
            if (String(e?.message) === 'no answer within 20 s') bad.push(`${what}: no answer`);
            else {
              const j = judge(e);
              if (j) bad.push(`${what}: ${j}`);
            }
          }
          canary++;
          try {
            await db.put('canary/1', { n: canary });
            if ((await db.get('canary/1'))?.n !== canary) bad.push(`${what}: the canary read back wrong`);
          } catch (e: any) {
            bad.push(`${what}: POISONED (${e?.name}: ${String(e?.message).slice(0, 80)})`);
            return { bad };
          }
        }
      }
    }
    await db.sync(null).catch(() => {});
    await db.close();
    return { bad };
  }, uniqueName('hostile'));
  expect(out.bad).toEqual([]);
});
