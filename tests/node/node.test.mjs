// The Node entry (`ibexdb/node`, www/lib/node/): the wasm engine in Node, in memory and on disk,
// and sync of two Node clients through the real ibexdb-server (target/release/ibexdb-server,
// `cargo build --release -p ibexdb-server`; IBEXDB_SERVER overrides) on an ephemeral port.
// Run by `make test-node` (node --test tests/node/).
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { open, InvalidValueError, StorageUnavailableError, NotFoundError, PassphraseError } from '../../www/lib/node/index.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SERVER = process.env.IBEXDB_SERVER ?? path.join(REPO, 'target/release/ibexdb-server');
const dirs = [];
const tmp = (p) => {
  const d = mkdtempSync(path.join(tmpdir(), p));
  dirs.push(d);
  return d;
};
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

test('memory: full-text search through a text index, $id, and keyset pages', async () => {
  const db = await open('search', { storage: 'memory', schemas: { notes: { indexes: [{ field: 'title', kind: 'text' }, 'n'] } } });
  await db.transaction((tx) => {
    for (let i = 0; i < 50; i++) tx.put(`notes/${String(i).padStart(2, '0')}`, { title: i % 3 ? `Crème brûlée ${i}` : `Buy milk ${i}`, n: i % 4 });
  });
  const found = await db.query({ collection: 'notes', where: { title: { match: 'CREME bru' } } });
  assert.equal(found.length, 33);
  assert.deepEqual((await db.query({ collection: 'notes', where: { $id: '07' } })).map((r) => r.id), ['07']);
  const seen = [];
  let cursor = null;
  for (;;) {
    const p = await db.page({ collection: 'notes', sort: ['n'], limit: 7, ...(cursor ? { after: cursor } : {}) });
    seen.push(...p.rows.map((r) => r.id));
    if (p.rows.length < 7) break;
    cursor = p.cursor;
  }
  assert.deepEqual(seen, (await db.query({ collection: 'notes', sort: ['n'] })).map((r) => r.id));
  await assert.rejects(db.query({ collection: 'notes', where: { title: { match: 'x'.repeat(1 << 20) } } }), /1048576 bytes is longer than the 1024 bytes/);
  await db.close();
});

test('memory: open, put, get, query, transaction, typed errors; nothing kept after close', async () => {
  const t0 = performance.now();
  const db = await open('notes', { storage: 'memory' });
  const openMs = performance.now() - t0;
  assert.equal(db.storage, 'memory');
  assert.match(db.publicKey, /^[0-9a-f]{98}$/);
  await db.put('notes/1', { title: 'Buy milk', done: false, tags: new Set(['home']) });
  await db.transaction((tx) => {
    tx.put('notes/2', { title: 'Write report', done: false });
    tx.setAdd('notes/2', 'tags', ['work']);
  });
  const seen = [];
  const lq = await db.live({ collection: 'notes', where: { done: false }, sort: ['title'] }, (rows) => seen.push(rows.map((r) => r.id)));
  await db.update('notes/1', { done: true }); // the live query has it when the write resolves
  assert.deepEqual(lq.results.map((r) => r.id), ['2']);
  assert.deepEqual(seen, [['1', '2'], ['2']]);
  lq.close();
  const one = await db.get('notes/1');
  assert.deepEqual({ ...one, tags: [...one.tags] }, { title: 'Buy milk', done: true, tags: ['home'] });
  const open_ = await db.query({ collection: 'notes', where: { done: false } });
  assert.deepEqual(open_.map((r) => r.id), ['2']);
  assert.equal(await db.count('notes'), 2);
  assert.deepEqual(await db.keys('notes'), ['1', '2']);
  await assert.rejects(db.update('notes/none', { done: true }), NotFoundError);
  await assert.rejects(db.put('notes/3', 'not an object'), InvalidValueError);
  // Timing: puts acknowledged (durability 'flush': in memory there is nothing to wait for).
  const N = 2000;
  const t1 = performance.now();
  for (let i = 0; i < N; i++) await db.put(`items/${i}`, { i, text: `item ${i}` });
  const putMs = (performance.now() - t1) / N;
  const verify = await db.verify();
  assert.equal(verify.items, N + 2);
  await db.close();
  const again = await open('notes', { storage: 'memory' });
  assert.equal(await again.count('notes'), 0);
  await again.close();
  console.log(`node memory: open ${openMs.toFixed(1)} ms (first, compiles the wasm), put ${(putMs * 1000).toFixed(0)} µs each (n=${N}, awaited one by one)`);
});

test('disk: the files in a directory, reopened; one process at a time', async () => {
  const dir = tmp('ibexdb-node-disk-');
  let t0 = performance.now();
  let db = await open('board', { directory: dir });
  const openMs = performance.now() - t0;
  assert.equal(db.storage, 'disk');
  const key = db.publicKey;
  const N = 300;
  t0 = performance.now();
  for (let i = 0; i < N; i++) await db.put(`cards/${i}`, { i, title: `card ${i}` });
  const putMs = (performance.now() - t0) / N;
  // Writes of one tick share one fsync.
  t0 = performance.now();
  await Promise.all(Array.from({ length: N }, (_, i) => db.put(`bulk/${i}`, { i })));
  const groupMs = performance.now() - t0;
  // A second open of the same repository (this process holds it): a typed refusal.
  await assert.rejects(open('board', { directory: dir }), (e) => e instanceof StorageUnavailableError && e.kind === 'locked');
  await db.close();
  assert.deepEqual(readdirSync(path.join(dir, 'board')).sort(), ['identity', 'log', 'snapshot']);
  assert.ok(statSync(path.join(dir, 'board', 'log')).size > 10_000);
  t0 = performance.now();
  db = await open('board', { directory: dir });
  const reopenMs = performance.now() - t0;
  assert.equal(db.publicKey, key);
  assert.equal(await db.count('cards'), N);
  assert.deepEqual(await db.get('cards/42'), { i: 42, title: 'card 42' });
  const v = await db.verify();
  assert.equal(v.items, 2 * N);
  assert.equal(v.unsealed, 0);
  await db.close();
  assert.ok(!existsSync(path.join(dir, 'board', 'lock')));
  console.log(`node disk: open ${openMs.toFixed(1)} ms, reopen ${reopenMs.toFixed(1)} ms; put ${putMs.toFixed(2)} ms each awaited (an fsync each), ${N} in one tick ${groupMs.toFixed(1)} ms`);
});

test('bytes: a Buffer and a Uint8Array stored on disk, read back as Uint8Array after a reopen; queries compare them', async () => {
  const dir = tmp('ibexdb-node-bytes-');
  let db = await open('files', { directory: dir });
  const big = new Uint8Array(1 << 20).map((_, i) => (i * 31) & 0xff);
  await db.put('files/buf', { data: Buffer.from([0, 1, 2]) });
  await db.put('files/big', { data: big });
  await db.transaction((tx) => tx.put('files/empty', { data: new Uint8Array(0) }));
  await db.update('files/buf', { extra: new Uint8Array([9]).buffer });
  await assert.rejects(db.put('files/bad', { data: new Float64Array(1) }), (e) => e instanceof InvalidValueError && e.path === 'data');
  await db.close();
  db = await open('files', { directory: dir });
  const buf = await db.get('files/buf');
  assert.ok(buf.data instanceof Uint8Array && !Buffer.isBuffer(buf.data));
  assert.deepEqual([...buf.data], [0, 1, 2]);
  assert.deepEqual([...buf.extra], [9]);
  assert.ok(Buffer.from((await db.get('files/big')).data).equals(Buffer.from(big)));
  const rows = await db.query({ collection: 'files', where: { data: { lt: new Uint8Array([0, 1, 3]) } }, sort: ['data'] });
  assert.deepEqual(rows.map((r) => r.id), ['empty', 'buf']);
  await db.close();
});

test('options are checked: typed errors naming the option', async () => {
  await assert.rejects(open('x', { storage: 'opfs' }), (e) => e instanceof InvalidValueError && e.path === 'options.storage');
  await assert.rejects(open('x', { storage: 'disk' }), (e) => e instanceof InvalidValueError && e.path === 'options.directory');
  await assert.rejects(open('x', { colour: 1 }), (e) => e instanceof InvalidValueError && e.path === 'options.colour');
});

/** The real server on 127.0.0.1:0, its data in a temporary directory. */
async function startServer() {
  assert.ok(existsSync(SERVER), `${SERVER} is missing: cargo build --release -p ibexdb-server`);
  const data = tmp('ibexdb-node-server-');
  const proc = spawn(SERVER, ['--data', data, '--listen', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise((resolve, reject) => {
    proc.once('error', reject);
    proc.once('exit', (code) => reject(new Error(`ibexdb-server exited with ${code}`)));
    createInterface({ input: proc.stdout }).once('line', resolve);
  });
  const m = /listening on (\S+)/.exec(line);
  assert.ok(m, `unexpected server output: ${line}`);
  return { url: `ws://${m[1]}`, stop: () => proc.kill('SIGKILL') };
}

test('identity wrapped under a passphrase: exported, opened elsewhere with it; a wrong passphrase or changed byte opens nothing', async () => {
  const dir = tmp('ibex-wrap-');
  const a = await open('alice', { directory: dir });
  const wrapped = await a.exportIdentity({ passphrase: 'correct horse' });
  const clear = await a.exportIdentity();
  const pk = a.publicKey;
  await a.close();
  assert.match(wrapped, /^ibexdb-wrapped-identity-v1:[A-Za-z0-9_-]{128}$/);
  assert.ok(!wrapped.includes(clear.slice(19)), 'the secret is not in the wrapped text');
  // Each export is freshly salted.
  const again = await open('alice', { directory: dir });
  assert.notEqual(await again.exportIdentity({ passphrase: 'correct horse' }), wrapped);
  await again.close();
  // Wrong passphrase, a changed byte: PassphraseError, and no repository made.
  const flip = wrapped.slice(0, -5) + (wrapped.at(-5) === 'A' ? 'B' : 'A') + wrapped.slice(-4);
  for (const [identity, passphrase] of [[wrapped, 'wrong horse'], [flip, 'correct horse']]) {
    await assert.rejects(open('bob', { directory: dir, identity, passphrase }), (e) => e instanceof PassphraseError && e.name === 'PassphraseError' && e.kind === 'wrong-passphrase');
  }
  assert.ok(!existsSync(path.join(dir, 'bob')), 'nothing stored for a refused identity');
  // Cut short, a passphrase missing or empty, a passphrase without a wrapped identity: InvalidValueError naming it.
  const bad = [
    [{ identity: wrapped.slice(0, -10), passphrase: 'correct horse' }, 'options.identity'],
    [{ identity: wrapped }, 'options.passphrase'],
    [{ identity: wrapped, passphrase: '' }, 'options.passphrase'],
    [{ identity: clear, passphrase: 'correct horse' }, 'options.passphrase'],
    [{ passphrase: 'correct horse' }, 'options.passphrase'],
  ];
  for (const [opts, argument] of bad) {
    await assert.rejects(open('bob', { directory: dir, ...opts }), (e) => e instanceof InvalidValueError && e.argument === argument, argument);
  }
  assert.ok(!existsSync(path.join(dir, 'bob')));
  const b = await open('bob', { directory: dir, identity: wrapped, passphrase: 'correct horse' });
  assert.equal(b.publicKey, pk);
  for (const [opts, argument] of [[{ passphrase: '' }, 'options.passphrase'], [{ passphrase: 42 }, 'options.passphrase'], ['x', 'options'], [{ passphrase: 'p', iterations: 1 }, 'options.iterations']]) {
    await assert.rejects(b.exportIdentity(opts), (e) => e instanceof InvalidValueError && e.argument === argument, argument);
  }
  await b.close();
  const t = await open('trusted', { trusted: true });
  assert.equal(await t.exportIdentity({ passphrase: 'p' }), null);
  await t.close();
});

test('sync: two Node clients through the real server', async () => {
  const server = await startServer();
  const dir = tmp('ibexdb-node-sync-');
  try {
    const a = await open('shared', { directory: path.join(dir, 'a') });
    const b = await open('shared', { storage: 'memory' });
    await a.put('items/first', { from: 'a' });
    let t0 = performance.now();
    await a.sync(server.url);
    const firstSyncMs = performance.now() - t0;
    assert.deepEqual((await a.members()).members, [{ publicKey: a.publicKey, role: 'owner' }]);
    await a.grant(b.publicKey, 'writer');
    await a.sync();
    await b.sync(server.url);
    assert.deepEqual(await b.get('items/first'), { from: 'a' });
    assert.deepEqual((await b.syncStatus()).rights, { read: true, write: true, administer: false });
    // b writes, a's live query gets it (the server's live relay).
    const arrived = new Promise((resolve) => {
      a.live({ collection: 'items' }, (rows) => {
        if (rows.some((r) => r.id === 'fromB')) resolve(performance.now());
      });
    });
    t0 = performance.now();
    await b.put('items/fromB', { from: 'b' });
    const relayMs = (await Promise.race([arrived, new Promise((_, rej) => setTimeout(() => rej(new Error('no relay within 10 s')), 10_000))])) - t0;
    assert.deepEqual(await a.get('items/fromB'), { from: 'b' });
    assert.equal(await a.count('items'), 2);
    assert.equal(await b.count('items'), 2);
    await a.close();
    await b.close();
    // a's disk copy, reopened offline, holds both.
    const a2 = await open('shared', { directory: path.join(dir, 'a') });
    assert.equal(await a2.count('items'), 2);
    assert.equal((await a2.verify()).items, 2);
    await a2.close();
    console.log(`node sync: first sync ${firstSyncMs.toFixed(1)} ms, b put -> a has it ${relayMs.toFixed(1)} ms`);
  } finally {
    server.stop();
  }
});

test('collection handles in Node: ids for keys, the same typed errors', async () => {
  const db = await open('handles', { storage: 'memory' });
  const tasks = db.collection('tasks');
  await tasks.put('1', { title: 'a', done: false });
  await tasks.update('1', { done: true });
  assert.deepEqual(await db.get('tasks/1'), { title: 'a', done: true });
  assert.deepEqual((await tasks.query({ where: { done: true } })).map((r) => r.id), ['1']);
  assert.equal(await tasks.count(), 1);
  await assert.rejects(() => tasks.get(/** @type {any} */ (1)), { name: 'InvalidKeyError', argument: 'id' });
  assert.throws(() => db.collection('a/b'), { name: 'InvalidKeyError', argument: 'name' });
  await db.close();
});

test('versioned schemas on disk: v1, upgrade to v2 with a migration, an older application is read only', async () => {
  const dir = tmp('ibexdb-node-schemas-');
  const v1 = { tasks: { fields: { title: { type: 'string', required: true } } } };
  const v2 = { tasks: { fields: { name: { type: 'string', required: true }, done: { type: 'boolean', required: true } }, allowOtherFields: false } };
  let db = await open('tasks', { directory: dir, schemas: v1, version: 1 });
  for (let i = 0; i < 30; i++) await db.put(`tasks/${String(i).padStart(2, '0')}`, { title: `task ${i}` });
  assert.equal((await db.get('_schema/tasks')).version, 1);
  await db.close();
  // A throwing migration: MigrationError, nothing written.
  await assert.rejects(open('tasks', { directory: dir, schemas: v2, version: 2, migrations: { 2: () => { throw new Error('boom'); } } }), (e) => e.name === 'MigrationError' && e.key === 'tasks/00');
  const progress = [];
  db = await open('tasks', { directory: dir, schemas: v2, version: 2, migrations: { 2: ({ title, ...rest }) => ({ ...rest, name: title, done: false }) }, onMigrationProgress: (p) => progress.push(p) });
  assert.equal(db.schemaVersion, 2);
  assert.deepEqual(progress, [{ version: 2, done: 30, total: 30 }]);
  assert.deepEqual(await db.get('tasks/07'), { name: 'task 7', done: false });
  await db.close();
  db = await open('tasks', { directory: dir, schemas: v1, version: 1 });
  assert.equal(db.readOnly?.name, 'SchemaVersionError');
  await assert.rejects(db.put('tasks/x', { title: 'x' }), (e) => e.name === 'SchemaVersionError' && e.stored === 2 && e.version === 1);
  assert.deepEqual(await db.get('tasks/07'), { name: 'task 7', done: false });
  await db.close();
  await assert.rejects(open('tasks', { directory: dir, version: 0 }), (e) => e instanceof InvalidValueError && e.path === 'options.version');
});

test('invites in Node: a link gives its role through the real server; a second use is invite-used', async () => {
  const server = await startServer();
  try {
    const owner = await open('invited', { storage: 'memory' });
    await owner.put('items/a', { v: 1 });
    await owner.sync(server.url);
    const { link, id } = await owner.invite({ role: 'writer' });
    assert.match(link, /^ibexdb:#ibexdb-invite=invited\.[0-9a-f]{64}\.writer\.[A-Za-z0-9_-]{43}$/);
    const reader = await owner.invite({ role: 'reader' });
    const upgrade = await owner.invite({ role: 'writer' });
    await owner.sync();
    await owner.close();
    const joined = async (link) => {
      const db = await open('invited', { storage: 'memory', sync: server.url, invite: link });
      let st = await db.syncStatus();
      for (let i = 0; i < 200 && st.state !== 'synced' && !(st.state === 'error' && st.lastError?.kind !== 'cannot-read'); i++) {
        await new Promise((r) => setTimeout(r, 50));
        st = await db.syncStatus();
      }
      return { db, st };
    };
    const { db: b, st } = await joined(link);
    assert.equal(st.state, 'synced');
    assert.deepEqual(await b.get('items/a'), { v: 1 });
    await b.put('items/b', { v: 2 });
    await b.sync();
    assert.deepEqual((await b.invites()).map((i) => [i.id, i.used]).sort(), [[id, 1], [reader.id, 0], [upgrade.id, 0]].sort());
    await b.close();
    const { db: c, st: st2 } = await joined(link);
    assert.equal(st2.state, 'error');
    assert.equal(st2.lastError.kind, 'invite-used');
    await c.close();
    // A reader given a writer link on a device that already reads: db.redeem(link).
    const { db: r, st: st3 } = await joined(reader.link);
    assert.equal(st3.state, 'synced');
    await assert.rejects(r.put('items/r', { v: 3 }), (e) => e.name === 'PermissionError' && e.kind === 'cannot-write');
    assert.equal(await r.redeem(upgrade.link), true);
    await r.put('items/r', { v: 3 });
    await r.sync();
    // Again: a writer already, so nothing is written and the link is not used again.
    assert.equal(await r.redeem(upgrade.link), false);
    await r.close();
    await assert.rejects(open('other', { storage: 'memory', sync: server.url, invite: link }), InvalidValueError);
  } finally {
    server.stop();
  }
});
