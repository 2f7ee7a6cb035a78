// ibexdb/node's attachment bytes over sync (docs/design.md §12.2 *Attachment bytes*) against the
// real server: a device that attached offline uploads the bytes once its commits are
// acknowledged; another device fetches them lazily at its first read (verified, stored on
// disk), and a file tampered with on the server is refused (SignatureError, nothing stored).
// The server binary is target/release/ibexdb-server (`make test-node` builds it) or
// $IBEXDB_SERVER.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { open, AttachmentUnavailableError, SignatureError } from '../../www/lib/node/index.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SERVER = process.env.IBEXDB_SERVER ?? path.join(REPO, 'target/release/ibexdb-server');

async function startServer() {
  assert.ok(existsSync(SERVER), `${SERVER} is missing: cargo build --release -p ibexdb-server`);
  const dir = mkdtempSync(path.join(tmpdir(), 'ibexdb-node-attsync-'));
  const proc = spawn(SERVER, ['--data', path.join(dir, 'data'), '--listen', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  proc.stderr.on('data', (b) => (log += b));
  const line = await new Promise((resolve, reject) => {
    proc.once('error', reject);
    proc.once('exit', (code) => reject(new Error(`ibexdb-server exited with ${code}`)));
    createInterface({ input: proc.stdout }).once('line', resolve);
  });
  const m = /listening on (\S+)/.exec(line);
  assert.ok(m, `unexpected server output: ${line}`);
  return { url: `ws://${m[1]}`, data: path.join(dir, 'data'), dir, log: () => log, stop: () => proc.kill('SIGKILL') };
}

const bytes = (n, seed) => Uint8Array.from({ length: n }, (_, i) => ((i * 2654435761 + seed * 40503) >>> 13) & 255);

/** @param {() => boolean | Promise<boolean>} f */
async function until(f, what, ms = 20_000) {
  const end = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('a file attached offline is uploaded after its commit and fetched lazily by another device', async () => {
  const server = await startServer();
  const dirs = [mkdtempSync(path.join(tmpdir(), 'ibexdb-node-a-')), mkdtempSync(path.join(tmpdir(), 'ibexdb-node-b-'))];
  const name = `attsync-${Date.now()}`;
  try {
    const a = await open(name, { directory: dirs[0] });
    await a.setPublic({ read: true, write: false });
    await a.put('tasks/t', { title: 'offline' });
    const photo = bytes(1_500_000, 1);
    const doc = bytes(40_000, 2);
    const hp = (await a.attach('tasks/t', 'photo', photo, { type: 'image/jpeg' })).hash;
    const hd = (await a.attach('tasks/t', 'doc', doc)).hash;
    await a.sync(server.url);
    const onServer = (h) => path.join(server.data, `${name}.attachments`, h);
    await until(() => existsSync(onServer(hp)) && existsSync(onServer(hd)), 'the bytes reached the server');

    const b = await open(name, { directory: dirs[1], sync: server.url });
    await until(async () => (await b.attachments('tasks/t')).length === 2, 'the records reached B');
    const blob = await b.attachment('tasks/t', 'photo');
    assert.equal(blob.type, 'image/jpeg');
    assert.deepEqual(new Uint8Array(await blob.arrayBuffer()), photo);
    assert.ok(readdirSync(path.join(dirs[1], name, 'attachments')).includes(hp), 'stored on B');

    const tampered = readFileSync(onServer(hd));
    tampered[100] ^= 1;
    writeFileSync(onServer(hd), tampered);
    await assert.rejects(b.attachment('tasks/t', 'doc'), (e) => e instanceof SignatureError && e.kind === 'tampered');
    assert.deepEqual(readdirSync(path.join(dirs[1], name, 'attachments')), [hp], 'nothing else stored');


    // Attached while online: uploaded once its commit is acknowledged, read by B.
    const late = bytes(300_000, 4);
    const hl = (await a.attach('tasks/t', 'late', late)).hash;
    await until(() => existsSync(onServer(hl)), 'the online attach reached the server');
    await until(async () => (await b.attachments('tasks/t')).length === 3, 'its record reached B');
    assert.deepEqual(new Uint8Array(await (await b.attachment('tasks/t', 'late')).arrayBuffer()), late);

    await b.sync(null);
    await assert.rejects(b.attachment('tasks/t', 'doc'), AttachmentUnavailableError);
    await a.close();
    await b.close();
  } finally {
    server.stop();
    for (const d of [...dirs, server.dir]) rmSync(d, { recursive: true, force: true });
  }
});

test('an encrypted repository neither offers nor asks for attachment bytes', async () => {
  const server = await startServer();
  const dir = mkdtempSync(path.join(tmpdir(), 'ibexdb-node-enc-'));
  const name = `attsync-enc-${Date.now()}`;
  try {
    const a = await open(name, { directory: dir, encrypted: true });
    await a.put('tasks/t', { title: 'secret' });
    await a.attach('tasks/t', 'photo', bytes(10_000, 3));
    await a.sync(server.url);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(existsSync(path.join(server.data, `${name}.attachments`)), false, 'no bytes on the server');
    // Not even offered: an offer would name the plaintext's SHA-256 (refused, and logged).
    assert.ok(server.log().includes('event=repo_open'), 'the commits were pushed');
    assert.ok(!server.log().includes('event=attach_'), server.log());
    await a.close();
  } finally {
    server.stop();
    for (const d of [dir, server.dir]) rmSync(d, { recursive: true, force: true });
  }
});
