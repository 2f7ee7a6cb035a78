// Wrong argument types at every public method of the Node entry (`ibexdb/node`), from outside
// (attack34): each method is called with one argument replaced by undefined, null, numbers,
// BigInt, symbols, huge strings, cyclic objects, Proxies whose traps throw, functions, typed
// arrays... Every refusal must be a rejected promise (a method that returns a promise never
// throws synchronously) holding an IbexError with its stable `name`; no PanicError (an engine
// panic); and the database keeps working after every call (a put and a get of a canary item).
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { open, IbexError, PanicError } from '../../www/lib/node/index.js';

const cyclic = {};
cyclic.self = cyclic;
const cyclicList = [];
cyclicList.push(cyclicList);
const boom = () => {
  throw new Error('boom from a trap');
};
const trapAll = new Proxy({}, { get: boom, has: boom, ownKeys: boom, getOwnPropertyDescriptor: boom, getPrototypeOf: boom });
const trapList = new Proxy([], { get: boom, has: boom, ownKeys: boom, getOwnPropertyDescriptor: boom, getPrototypeOf: boom });
const throwingToString = { toString: boom, valueOf: boom, toJSON: boom, [Symbol.toPrimitive]: boom };
const getterThrows = Object.defineProperty({}, 'collection', { get: boom, enumerable: true });

function lockedStream() {
  const s = new ReadableStream({ start: (c) => c.close() });
  s.getReader();
  return s;
}
function detachedBytes() {
  const u = new Uint8Array([1, 2, 3]);
  structuredClone(u.buffer, { transfer: [u.buffer] });
  return u;
}
function detachedBuffer() {
  const b = new ArrayBuffer(8);
  structuredClone(b, { transfer: [b] });
  return b;
}

/** Values no method takes in any position. */
const HOSTILE = [
  ['undefined', undefined],
  ['null', null],
  ['0', 0],
  ['-1', -1],
  ['NaN', NaN],
  ['Infinity', Infinity],
  ['1e300', 1e300],
  ['true', true],
  ['empty string', ''],
  ['a 4 MiB key', `notes/${'x'.repeat(4 << 20)}`],
  ['a lone surrogate', 'notes/\ud800'],
  ['NUL', 'notes/\u0000'],
  ['a symbol', Symbol('s')],
  ['a BigInt', 10n],
  ['an empty object', {}],
  ['an empty array', []],
  ['an array of numbers', [1, 2, 3]],
  ['a cyclic object', cyclic],
  ['a cyclic array', cyclicList],
  ['a Proxy whose traps throw', trapAll],
  ['an array Proxy whose traps throw', trapList],
  ['an object whose toString/toJSON throw', throwingToString],
  ['a getter that throws', getterThrows],
  ['a function', () => 1],
  ['a Uint8Array', new Uint8Array([1, 2, 3])],
  ['a Date', new Date(0)],
  ['a null-prototype object', Object.create(null)],
  ['a Map', new Map([['a', 1]])],
  ['a locked ReadableStream', lockedStream()],
  ['a detached ArrayBuffer', detachedBuffer()],
  ['an object holding detached bytes', { b: detachedBytes() }],
];

const PK = '02' + '11'.repeat(48);
/** Each method with valid arguments; the attack replaces one at a time. */
const METHODS = [
  ['get', ['notes/1']],
  ['getMany', [['notes/1']]],
  ['query', [{ collection: 'notes' }]],
  ['page', [{ collection: 'notes', limit: 1 }]],
  ['explain', [{ collection: 'notes' }]],
  ['count', ['notes', { n: 1 }]],
  ['keys', ['notes']],
  ['aggregate', [{ collection: 'notes', count: true }]],
  ['history', ['notes/1']],
  ['members', []],
  ['put', ['notes/2', { n: 2 }]],
  ['update', ['notes/1', { n: 3 }]],
  ['delete', ['notes/9']],
  ['transaction', [(tx) => tx.put('notes/3', { n: 3 })]],
  ['defineSchema', ['other', { indexes: ['n'] }]],
  ['receive', [new Uint8Array(0)]],
  ['grant', [PK, 'reader']],
  ['revoke', [PK]],
  ['invite', [{ role: 'reader', base: 'https://example.invalid/' }]],
  ['redeem', ['https://example.invalid/#x']],
  ['invites', []],
  ['revokeInvite', ['0'.repeat(32)]],
  ['setPublic', [{ read: true, write: false }]],
  ['exportIdentity', [undefined]],
  ['exportCommits', []],
  ['storageInfo', []],
  ['attach', ['notes/1', 'a.txt', new Uint8Array([1]), { type: 'text/plain' }]],
  ['attachment', ['notes/1', 'a.txt']],
  ['detach', ['notes/1', 'b.txt']],
  ['attachments', ['notes/1']],
  ['live', [{ collection: 'notes' }, () => {}]],
  ['onSyncStatus', [() => {}]],
  ['sync', ['ws://127.0.0.1:1/']],
  ['verify', []],
  ['flush', []],
];
/** Methods that return something else than a promise. */
const SYNC = new Set(['collection', 'onSyncStatus']);
/** Methods not attacked in position `i` (a valid call would dial or wait). */
const SKIP = new Set(['sync:valid']);

/** The methods of `db.collection('notes')`, with valid arguments. */
const COLLECTION = [
  ['get', ['1']],
  ['getMany', [['1']]],
  ['put', ['2', { n: 2 }]],
  ['update', ['1', { n: 4 }]],
  ['delete', ['9']],
  ['query', [{ where: { n: 1 } }]],
  ['page', [{ limit: 1 }]],
  ['live', [{}, () => {}]],
  ['count', [{ n: 1 }]],
  ['keys', []],
];
/** The methods of a transaction's builder (`db.transaction((tx) => ...)`), with valid arguments. */
const TXN = [
  ['put', ['notes/4', { n: 4 }]],
  ['update', ['notes/1', { n: 5 }]],
  ['delete', ['notes/9']],
  ['unset', ['notes/1', 'm']],
  ['setAdd', ['notes/1', 'tags', ['a']]],
  ['setRemove', ['notes/1', 'tags', ['a']]],
];

const withTimeout = (p, ms) => Promise.race([p, new Promise((_, no) => setTimeout(() => no(new Error(`no answer within ${ms} ms`)), ms))]);

const findings = [];
const unhandled = [];
process.on('unhandledRejection', (e) => unhandled.push(e));

/** One call: what went wrong (a string), or null. */
async function attempt(db, method, args) {
  let r;
  try {
    r = db[method](...args);
  } catch (e) {
    if (!SYNC.has(method)) return `threw synchronously (${e?.name}: ${String(e?.message).slice(0, 100)})`;
    return judge(e);
  }
  if (SYNC.has(method)) return null;
  if (!(r instanceof Promise)) return `returned ${typeof r}, not a promise`;
  try {
    const v = await withTimeout(r, 10_000);
    if (method === 'live' && v?.close) v.close();
    return null;
  } catch (e) {
    if (String(e?.message).startsWith('no answer within')) return e.message;
    return judge(e);
  }
}

function judge(e) {
  if (e instanceof PanicError) return `PanicError: ${e.message.slice(0, 160)}`;
  // The caller's own exception (a trap of its Proxy, its getter or toJSON) may pass through.
  if (e instanceof Error && e.message === 'boom from a trap') return null;
  if (!(e instanceof Error)) return `a non-Error was thrown: ${typeof e} ${String(e).slice(0, 80)}`;
  if (!(e instanceof IbexError)) return `${e.name} (not an IbexError): ${String(e.message).slice(0, 120)}`;
  if (typeof e.name !== 'string' || !/^[A-Z][A-Za-z]*Error$/.test(e.name)) return `an error without a stable name: ${e.name}`;
  return null;
}

let canary = 0;
async function healthy(db) {
  canary += 1;
  await withTimeout(db.put('canary/1', { n: canary }), 10_000);
  const got = await withTimeout(db.get('canary/1'), 10_000);
  assert.deepEqual(got, { n: canary });
}

let db;
after(async () => {
  await db?.close().catch(() => {});
});

test('node: every public method refuses every wrong argument with a typed, rejected error and stays usable', { timeout: 600_000 }, async () => {
  db = await open('hostile', { storage: 'memory' });
  await db.put('notes/1', { n: 1 });
  const all = [...METHODS, ['collection', ['notes']]];
  // A collection handle's methods, and a transaction builder's, as methods of a stand-in.
  const notes = db.collection('notes');
  const via = {};
  for (const [m, valid] of COLLECTION) {
    via[`collection.${m}`] = (...a) => notes[m](...a);
    all.push([`collection.${m}`, valid]);
  }
  for (const [m, valid] of TXN) {
    via[`tx.${m}`] = (...a) => db.transaction((tx) => void tx[m](...a));
    all.push([`tx.${m}`, valid]);
  }
  const target = new Proxy(db, { get: (t, k) => via[k] ?? (typeof t[k] === 'function' ? t[k].bind(t) : t[k]) });
  for (const [method, valid] of all) {
    const positions = Math.max(valid.length, 1);
    for (let i = 0; i < positions; i++) {
      for (const [label, v] of HOSTILE) {
        const args = [...valid];
        args[i] = v;
        const what = await attempt(target, method, args);
        if (what) findings.push(`${method} arg ${i} = ${label}: ${what}`);
        try {
          await healthy(db);
        } catch (e) {
          findings.push(`${method} arg ${i} = ${label}: POISONED: later calls fail (${e?.name}: ${String(e?.message).slice(0, 120)})`);
          await db.close().catch(() => {});
          db = await open('hostile', { storage: 'memory' });
          await db.put('notes/1', { n: 1 });
        }
      }
    }
  }
  await new Promise((r) => setTimeout(r, 100));
  for (const e of unhandled) findings.push(`an unhandled rejection: ${e?.name}: ${String(e?.message).slice(0, 120)}`);
  if (process.env.IBEX_SHOW) console.log(findings.join('\n'));
  assert.deepEqual(findings, []);
});

test('node: open() refuses every wrong name and options with a typed, rejected error', { timeout: 120_000 }, async () => {
  const bad = [];
  const tries = [];
  for (const [label, v] of HOSTILE) {
    tries.push([`name = ${label}`, () => open(v, { storage: 'memory' })]);
    if (v !== undefined) tries.push([`options = ${label}`, () => open('hostile-open', v)]);
    for (const k of ['storage', 'directory', 'durability', 'identity', 'schemas', 'version', 'quotaBytes', 'encrypted', 'sync', 'syncToken', 'lockTimeout', 'recovery', 'trusted']) {
      if (v !== undefined) tries.push([`options.${k} = ${label}`, () => open('hostile-open', { storage: 'memory', [k]: v })]);
    }
  }
  for (const [what, f] of tries) {
    let r;
    try {
      r = f();
    } catch (e) {
      bad.push(`${what}: threw synchronously (${e?.name})`);
      continue;
    }
    try {
      const db = await withTimeout(r, 10_000);
      await db.close();
    } catch (e) {
      const j = judge(e);
      if (j) bad.push(`${what}: ${j}`);
    }
  }
  if (process.env.IBEX_SHOW) console.log(bad.join('\n'));
  assert.deepEqual(bad, []);
});

test('node: the engine handle itself refuses arguments of the wrong type before the wasm engine sees them', async () => {
  const d = await open('hostile-engine', { storage: 'memory' });
  await d.put('notes/1', { n: 1 });
  const e = d._engine;
  for (const [what, f] of [
    ['grant(0, role)', () => e.grant(0, 'reader')],
    ['grant(key, 0)', () => e.grant('02' + '11'.repeat(48), 0)],
    ['revoke({})', () => e.revoke({})],
    ['setPublic(1, 0)', () => e.setPublic(1, 0)],
    ['revokeInvite(null)', () => e.revokeInvite(null)],
    ['detach(key, 5)', () => e.detach('notes/1', 5)],
    ['attach(key, name, 7, 1, "")', () => e.attach('notes/1', 'a', 7, 1, '')],
  ]) {
    assert.throws(f, (err) => err.name === 'InvalidValueError' || err.name === 'InvalidKeyError', what);
  }
  assert.equal(e.dead, false, 'no panic');
  assert.deepEqual(await d.get('notes/1'), { n: 1 });
  await d.close();
});
