// `ibexdb/node` with `{ encrypted: true }` (docs/design.md §6.8): an encrypted repository on
// disk whose log holds no plaintext value (the commits are sealed before they are logged), read
// back after a reopen. Run by `make test-node` (node --test tests/node/).
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { open, InvalidValueError } from '../../www/lib/node/index.js';

function files(dir) {
  return readdirSync(dir).flatMap((e) => {
    const p = path.join(dir, e);
    return statSync(p).isDirectory() ? files(p) : [p];
  });
}

test('disk: an encrypted repository logs sealed commits and reads back after a reopen', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'ibexdb-enc-'));
  try {
    const db = await open('sealed', { storage: 'disk', directory: dir, encrypted: true, durability: 'flush' });
    await db.put('notes/a', { title: 'node-sealed-alpha-zq', n: 1 });
    await db.put('notes/b', { title: 'node-sealed-bravo-zq', n: 2 });
    const rows = await db.query({ collection: 'notes', where: { n: { gte: 2 } } });
    assert.deepEqual(rows.map((r) => r.value.title), ['node-sealed-bravo-zq']);
    await db.close();
    const logs = files(dir).filter((f) => f.endsWith('log'));
    assert.ok(logs.length > 0, `no log in ${files(dir)}`);
    for (const f of logs) {
      const bytes = readFileSync(f);
      for (const v of ['node-sealed-alpha-zq', 'node-sealed-bravo-zq', 'title']) assert.equal(bytes.includes(v), false, `${v} in ${f}`);
    }
    const again = await open('sealed', { storage: 'disk', directory: dir, encrypted: true });
    assert.equal((await again.get('notes/a')).title, 'node-sealed-alpha-zq');
    assert.equal((await again.history('notes/b')).length, 1);
    await again.close();
    await assert.rejects(open('x', { storage: 'memory', encrypted: 'yes' }), InvalidValueError);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
