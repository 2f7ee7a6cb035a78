// Attachments in the Node entry (docs/design.md §6.7): files under <directory>/<name>/attachments/
// named by their SHA-256, stored once, reclaimed at open when no item refers to them, kept
// across reopen; in memory with storage 'memory'; typed errors as in the browser.
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { open } from '../../www/lib/node/index.js';

const dirs = [];
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const tmp = () => {
  const d = mkdtempSync(path.join(tmpdir(), 'ibexdb-att-'));
  dirs.push(d);
  return d;
};
const sha = (b) => createHash('sha256').update(b).digest('hex');
const bytes = (n, s) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + s * 7) & 255);

test('node: attach on disk, dedup, reclaim at reopen, streams, typed errors', async () => {
  const dir = tmp();
  const files = () => readdirSync(path.join(dir, 'files', 'attachments')).sort();
  let db = await open('files', { directory: dir });
  await db.put('tasks/1', { t: 1 });
  await db.put('tasks/2', { t: 2 });
  const big = bytes(3_000_000, 1);
  const a = await db.attach('tasks/1', 'big.bin', new Blob([big]), { type: 'application/x-big' });
  assert.deepEqual(a, { name: 'big.bin', hash: sha(big), size: big.length, type: 'application/x-big' });
  const b = await db.attach('tasks/2', 'same.bin', big);
  assert.equal(b.hash, a.hash);
  const small = bytes(1000, 2);
  const c = await db.attach('tasks/2', 'small', new Blob([small]).stream());
  assert.deepEqual(files(), [a.hash, c.hash].sort());
  const blob = await db.attachment('tasks/1', 'big.bin');
  assert.equal(blob.type, 'application/x-big');
  assert.equal(sha(new Uint8Array(await blob.arrayBuffer())), a.hash);
  assert.deepEqual(await db.get('tasks/1'), { t: 1 });
  assert.equal((await db.storageInfo()).repository.attachmentBytes, big.length + small.length);
  await assert.rejects(db.attachment('tasks/1', 'nope'), { name: 'AttachmentNotFoundError', key: 'tasks/1', attachment: 'nope' });
  await assert.rejects(db.attach('tasks/none', 'x', small), { name: 'NotFoundError' });
  await assert.rejects(db.attach('tasks/1', 'x', 'text'), { name: 'InvalidValueError', argument: 'data' });
  // tasks/1 detaches the shared bytes (tasks/2 keeps them); tasks/2 detaches the small file.
  assert.equal(await db.detach('tasks/1', 'big.bin'), true);
  assert.equal(await db.detach('tasks/2', 'small'), true);
  await db.close();
  // A leftover of a killed write goes at open too.
  writeFileSync(path.join(dir, 'files', 'attachments', 'tmp-leftover'), 'partial');
  db = await open('files', { directory: dir });
  assert.deepEqual(files(), [a.hash]);
  assert.deepEqual((await db.attachments('tasks/2')).map((x) => x.name), ['same.bin']);
  const again = await db.attachment('tasks/2', 'same.bin');
  assert.equal(sha(new Uint8Array(await again.arrayBuffer())), a.hash);
  // The record without the bytes: AttachmentUnavailableError.
  rmSync(path.join(dir, 'files', 'attachments', a.hash));
  await assert.rejects(db.attachment('tasks/2', 'same.bin'), { name: 'AttachmentUnavailableError', hash: a.hash });
  await db.close();
});

test('node: attachments in memory, and quotaBytes counts them', async () => {
  const db = await open('mem', { storage: 'memory', quotaBytes: 200_000 });
  await db.put('t/1', {});
  const d = await db.attach('t/1', 'f', bytes(50_000, 3));
  assert.equal(sha(new Uint8Array(await (await db.attachment('t/1', 'f')).arrayBuffer())), d.hash);
  await assert.rejects(db.attach('t/1', 'g', bytes(500_000, 4)), { name: 'QuotaExceededError' });
  assert.deepEqual((await db.attachments('t/1')).map((x) => x.name), ['f']);
  await db.close();
});
