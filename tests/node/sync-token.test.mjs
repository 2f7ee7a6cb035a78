// ibexdb/node's `syncToken` against the real server with `--auth-jwks` (issue 27 §4;
// docs/design.md §12.4): the token travels as an `Authorization: Bearer` header (the `ws`
// package), asked for before every dial. Tokens are ES256 JWTs signed here by a P-256 key made
// for this run, published to the server as a JWKS file. The server binary is
// target/release/ibexdb-server (`make test-node` builds it) or $IBEXDB_SERVER.
import { spawn } from 'node:child_process';
import { generateKeyPairSync, sign } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { open, AuthError, InvalidValueError } from '../../www/lib/node/index.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SERVER = process.env.IBEXDB_SERVER ?? path.join(REPO, 'target/release/ibexdb-server');
const AUD = 'node-app';
const key = generateKeyPairSync('ec', { namedCurve: 'P-256' });

/** An ES256 JWT for `repos` expiring `ttl` s from now (negative: expired). */
function token(repos, ttl, create = true) {
  const now = Math.floor(Date.now() / 1000);
  const b64 = (v) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const input = `${b64({ alg: 'ES256', typ: 'JWT', kid: 'k1' })}.${b64({ sub: 'n', aud: AUD, iat: now, exp: now + ttl, ibexdb_repos: repos, ibexdb_create: create })}`;
  return `${input}.${sign('sha256', Buffer.from(input), { key: key.privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
}

async function startServer(more = []) {
  assert.ok(existsSync(SERVER), `${SERVER} is missing: cargo build --release -p ibexdb-server`);
  const dir = mkdtempSync(path.join(tmpdir(), 'ibexdb-node-token-'));
  const jwks = path.join(dir, 'jwks.json');
  writeFileSync(jwks, JSON.stringify({ keys: [{ ...key.publicKey.export({ format: 'jwk' }), kid: 'k1', alg: 'ES256' }] }));
  const args = ['--data', path.join(dir, 'data'), '--listen', '127.0.0.1:0', '--auth-jwks', jwks, '--auth-audience', AUD, ...more];
  const proc = spawn(SERVER, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  proc.stderr.on('data', (b) => (log += b));
  const line = await new Promise((resolve, reject) => {
    proc.once('error', reject);
    proc.once('exit', (code) => reject(new Error(`ibexdb-server exited with ${code}`)));
    createInterface({ input: proc.stdout }).once('line', resolve);
  });
  const m = /listening on (\S+)/.exec(line);
  assert.ok(m, `unexpected server output: ${line}`);
  return {
    url: `ws://${m[1]}`,
    /** The server's log lines so far. */
    log: () => log,
    stop: () => {
      proc.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A syncToken function handing out `list` one by one (the last again), counting its calls. */
function tokens(list) {
  const f = async () => {
    f.calls++;
    const t = list.length > 1 ? list.shift() : list[0];
    if (t === 'throw') throw new Error('the login expired');
    return t;
  };
  f.calls = 0;
  return f;
}

/** Write, then `db.sync()`: 'synced' or the AuthError's kind. */
async function writeAndSync(db, url) {
  await db.put(`items/${Date.now()}`, { n: 1 });
  try {
    await db.sync(url);
    return 'synced';
  } catch (e) {
    assert.ok(e instanceof AuthError, `an AuthError, got ${e}`);
    return e.kind;
  }
}

test('syncToken in Node: a good token syncs; expired, failing and out-of-scope tokens are typed; a refreshed one works', async () => {
  const server = await startServer();
  const dbs = [];
  try {
    const good = token(['nt-*'], 3600);
    const a = await open('nt-a', { syncToken: good });
    dbs.push(a);
    assert.equal(await writeAndSync(a, server.url), 'synced');
    // A second replica of it, with a function: reads what a wrote.
    const fa = tokens([good]);
    const a2 = await open('nt-a', { syncToken: fa });
    dbs.push(a2);
    await a.grant(a2.publicKey, 'reader');
    await a.sync();
    await a2.sync(server.url);
    assert.equal(await a2.count('items'), 1);
    assert.equal(fa.calls, 1);
    const b = tokens([token(['nt-*'], -3600), good]);
    const dbB = await open('nt-b', { syncToken: b });
    dbs.push(dbB);
    assert.equal(await writeAndSync(dbB, server.url), 'token-expired');
    assert.equal((await dbB.syncStatus()).lastError.kind, 'token-expired');
    assert.equal(await writeAndSync(dbB), 'synced', 'the function is asked again and its fresh token is welcomed');
    assert.equal(b.calls, 2);
    const c = await open('nt-c', { syncToken: tokens(['throw']) });
    dbs.push(c);
    assert.equal(await writeAndSync(c, server.url), 'token-unavailable');
    const d = await open('nt-d', { syncToken: () => 42 });
    dbs.push(d);
    assert.equal(await writeAndSync(d, server.url), 'token-unavailable');
    const e = await open('nt-e', { syncToken: token(['other'], 3600) });
    dbs.push(e);
    assert.equal(await writeAndSync(e, server.url), 'token-scope');
    // Without a token the server says so.
    const f = await open('nt-f');
    dbs.push(f);
    assert.equal(await writeAndSync(f, server.url), 'token-missing');
    await assert.rejects(open('nt-g', { syncToken: 5 }), (err) => err instanceof InvalidValueError && err.path === 'options.syncToken');
  } finally {
    for (const db of dbs) await db.close().catch(() => {});
    server.stop();
  }
});

test('syncToken in Node: the server ends a session at its token expiry; the client redials with a fresh token', async () => {
  const server = await startServer(['--auth-leeway-s', '0']);
  const list = [token(['nt-*'], 4)];
  const f = tokens(list);
  const db = await open('nt-exp', { syncToken: f });
  try {
    /** @type {string[]} */
    const kinds = [];
    db.onSyncStatus((s) => kinds.push(`${s.state}:${s.lastError?.kind ?? ''}`));
    assert.equal(await writeAndSync(db, server.url), 'synced');
    // From now on the function hands out a token good for an hour.
    const n0 = f.calls;
    list[0] = token(['nt-*'], 3600);
    const t0 = Date.now();
    while (f.calls === n0 && Date.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 50));
    assert.equal(f.calls, n0 + 1, 'asked for a fresh token after the cut');
    assert.ok(kinds.some((k) => k.endsWith(':token-expired')), kinds.join(' '));
    assert.equal(await writeAndSync(db), 'synced');
    assert.ok((await db.syncStatus()).connects >= 2);
  } finally {
    await db.close().catch(() => {});
    server.stop();
  }
});

test('syncToken in Node: a function that never answers is token-unavailable after 10 s, and nothing is dialed', async () => {
  const server = await startServer();
  const db = await open('nt-hang', { syncToken: () => new Promise(() => {}) });
  try {
    const t0 = performance.now();
    assert.equal(await writeAndSync(db, server.url), 'token-unavailable');
    const waited = performance.now() - t0;
    assert.ok(waited >= 9_500 && waited < 15_000, `${waited} ms`);
    const st = await db.syncStatus();
    assert.equal(st.state, 'error');
    assert.match(st.lastError.message, /did not answer within 10000 ms/);
    assert.doesNotMatch(server.log(), /event=conn_open/, 'no connection without a token');
  } finally {
    await db.close().catch(() => {});
    server.stop();
  }
});
