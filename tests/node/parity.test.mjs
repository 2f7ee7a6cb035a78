// README: ibexdb/node has "the browser Database's methods" (attack34). Every method of the
// page's Database but those about the browser's storage persistence is one of NodeDatabase's,
// and settle() does the timers' work now (seal, flush; a snapshot when one is due).
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { Database } from '../../www/lib/ibexdb.js';
import { NodeDatabase, open } from '../../www/lib/node/index.js';

const dir = mkdtempSync(path.join(tmpdir(), 'ibexdb-parity-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('node: the browser Database methods, but persistence of the browser storage', () => {
  const names = (C) => Object.getOwnPropertyNames(C.prototype).filter((n) => !n.startsWith('_') && n !== 'constructor');
  const node = names(NodeDatabase);
  const missing = names(Database).filter((n) => !node.includes(n));
  // role is an own property of a NodeDatabase (a getter of the page's Database).
  assert.deepEqual(missing.sort(), ['persist', 'persisted', 'role']);
});

test('node: settle() seals and flushes now, and leaves nothing pending', async () => {
  const db = await open('settled', { directory: dir });
  for (let i = 0; i < 20; i++) await db.put(`notes/${i}`, { i });
  const log = () => statSync(path.join(dir, 'settled', 'log')).size;
  const before = log();
  await db.settle();
  const sealed = log();
  assert.ok(sealed > before, 'the seal of the 20 commits is on disk');
  await db.settle();
  assert.equal(log(), sealed, 'nothing was pending');
  assert.equal((await db.verify()).items, 20);
  await db.close();
});
