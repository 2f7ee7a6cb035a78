// A hostile sync server against the Node entry (attack34): its `Error` message names a property
// of Object.prototype (`constructor`, `toString`, `valueOf`, `hasOwnProperty`: names of ASCII
// letters, as the protocol allows). db.sync() must reject with an IbexError of a stable name
// (the class of the error's code), not whatever `new Object.prototype[name]` builds; and the
// database keeps working.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { WebSocketServer } from 'ws';
import { open, IbexError, PermissionError, LimitError } from '../../www/lib/node/index.js';

const V = 5; // src/sync/version.rs PROTOCOL_VERSION
const varint = (v) => {
  const o = [];
  while (v >= 0x80) {
    o.push((v & 0x7f) | 0x80);
    v >>>= 7;
  }
  o.push(v);
  return o;
};
const lp = (s) => {
  const b = [...Buffer.from(s)];
  return [...varint(b.length), ...b];
};
const challenge = Buffer.from([V, 6, ...new Array(32).fill(7), ...new Array(8).fill(0)]);
/** An `Error` message (type 5): code, name, kind, text. */
const error = (code, name, kind) => Buffer.from([V, 5, code, ...lp(name), ...lp(kind), ...lp('refused by a hostile server')]);

const servers = [];
after(() => servers.forEach((s) => s.close()));

/** A server that answers every Hello with `reply`; its URL. */
async function hostile(reply) {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  servers.push(wss);
  await new Promise((r) => wss.on('listening', r));
  wss.on('connection', (ws) => {
    ws.send(challenge);
    ws.once('message', () => ws.send(reply));
  });
  return `ws://127.0.0.1:${wss.address().port}`;
}

test('node: a server of another protocol version, or one that sends what cannot be decoded, fails db.sync() with a ProtocolError (it waited forever)', async () => {
  for (const [what, reply, says] of [
    ['version 4', Buffer.from([4, 5, 8, ...lp('PermissionError'), ...lp(''), ...lp('old server')]), /version 4/],
    ['an unknown type', Buffer.from([V, 99]), /type/],
    ['a truncated Welcome', Buffer.from([V, 2, 0x80]), /./],
  ]) {
    const db = await open('victim-proto', { storage: 'memory' });
    await db.put('notes/1', { n: 1 });
    const url = await hostile(reply);
    const e = await Promise.race([
      db.sync(url).then(() => null, (err) => err),
      new Promise((r) => setTimeout(() => r('still waiting after 10 s'), 10_000)),
    ]);
    assert.ok(e instanceof IbexError, `${what}: ${e}`);
    assert.equal(e.name, 'ProtocolError', what);
    assert.match(e.message, says, what);
    const st = await db.syncStatus();
    assert.equal(st.state, 'error', what);
    await db.sync(null);
    assert.deepEqual(await db.get('notes/1'), { n: 1 });
    await db.close();
  }
});

test('node: a server error named after an Object.prototype property is the class of its code', async () => {
  for (const [name, code, cls] of [
    ['constructor', 8, PermissionError],
    ['toString', 8, PermissionError],
    ['valueOf', 10, LimitError],
    ['hasOwnProperty', 0, IbexError],
  ]) {
    const db = await open('victim', { storage: 'memory' });
    await db.put('notes/1', { n: 1 });
    const url = await hostile(error(code, name, ''));
    const e = await db.sync(url).then(
      () => null,
      (err) => err,
    );
    assert.ok(e instanceof Error && e instanceof IbexError, `${name}: ${e} is an IbexError`);
    assert.ok(e instanceof cls, `${name}: ${e.name}`);
    assert.match(e.name, /^[A-Z][A-Za-z]*Error$/, name);
    assert.equal((await db.syncStatus()).lastError?.name, e.name);
    await db.sync(null);
    await db.put('notes/2', { n: 2 });
    assert.deepEqual(await db.get('notes/1'), { n: 1 });
    await db.close();
  }
});
