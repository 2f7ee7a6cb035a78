// Two processes on one repository on disk (`ibexdb/node`, www/lib/node/disk.js): one at a time.
// The second is refused with StorageUnavailableError kind 'locked' naming the holder's pid, at
// once by default or once `lockTimeout` ms have passed without the holder closing; a holder that
// closes within the timeout hands the repository over, its writes there; a lock left by a killed
// process is taken over, and by one of several processes that find it at the same instant.
// Real processes (node children), real files. Run by `make test-node` (node --test tests/node/).
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { open, InvalidValueError, StorageUnavailableError } from '../../www/lib/node/index.js';

const ENTRY = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../www/lib/node/index.js');
const dirs = [];
const tmp = () => {
  const d = mkdtempSync(path.join(tmpdir(), 'ibexdb-node-lock-'));
  dirs.push(d);
  return d;
};
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/**
 * A node process that opens `name` in `dir` (with `lockTimeout`), writes `items/<tag>`, prints
 * `open <pid>` (or `refused <kind> <pid>`), holds it `holdMs`, closes and prints `closed`.
 */
function child(dir, name, { holdMs = 0, lockTimeout = 0, tag = 'child' } = {}) {
  const src = `
    const { open } = await import(${JSON.stringify(ENTRY)});
    try {
      const db = await open(${JSON.stringify(name)}, { directory: ${JSON.stringify(dir)}, lockTimeout: ${lockTimeout} });
      await db.put('items/${tag}', { pid: process.pid });
      console.log('open ' + process.pid);
      await new Promise((r) => setTimeout(r, ${holdMs}));
      await db.close();
      console.log('closed');
    } catch (e) {
      console.log('refused ' + e.kind + ' ' + e.pid);
    }`;
  const proc = spawn(process.execPath, ['--input-type=module', '-e', src], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = [];
  const waiters = [];
  createInterface({ input: proc.stdout }).on('line', (l) => {
    lines.push(l);
    for (const w of waiters.splice(0)) w();
  });
  const exited = new Promise((r) => proc.once('exit', r));
  /** The first line starting with `prefix`. */
  const line = async (prefix) => {
    for (;;) {
      const l = lines.find((x) => x.startsWith(prefix));
      if (l) return l;
      await Promise.race([new Promise((r) => waiters.push(r)), exited.then(() => { throw new Error(`child exited without "${prefix}": ${lines.join(' | ')}`); })]);
    }
  };
  return { proc, lines, line, exited };
}

test('a second process is refused at once with the holder named; with lockTimeout it waits for the holder to close', async () => {
  const dir = tmp();
  // In this process: the holder is this process.
  const db = await open('board', { directory: dir });
  await db.put('items/first', { n: 1 });
  const err = await open('board', { directory: dir }).then(() => null, (e) => e);
  assert.ok(err instanceof StorageUnavailableError, String(err));
  assert.equal(err.kind, 'locked');
  assert.equal(err.pid, process.pid);
  assert.equal(err.file, path.join(dir, 'board', 'lock'));
  assert.match(err.message, new RegExp(`open in process ${process.pid}\\b.*lockTimeout`));

  // Another process, no lockTimeout: refused at once, told this process's pid.
  let t0 = performance.now();
  const b = child(dir, 'board');
  assert.equal(await b.line('refused'), `refused locked ${process.pid}`);
  await b.exited;
  // With a lockTimeout shorter than the holder keeps it: refused after waiting it.
  const c = child(dir, 'board', { lockTimeout: 400 });
  t0 = performance.now();
  assert.equal(await c.line('refused'), `refused locked ${process.pid}`);
  const waited = performance.now() - t0;
  assert.ok(waited >= 400, `refused after ${waited.toFixed(0)} ms, before its lockTimeout`);
  await c.exited;

  // With a lockTimeout longer than the holder keeps it: opens once the holder closes, its writes there.
  const d = child(dir, 'board', { lockTimeout: 10_000, tag: 'd' });
  await new Promise((r) => setTimeout(r, 600));
  assert.deepEqual(d.lines, [], 'opened while this process holds the repository');
  const closedAt = performance.now();
  await db.close();
  const opened = await d.line('open');
  const handover = performance.now() - closedAt;
  await d.line('closed');
  await d.exited;
  const again = await open('board', { directory: dir });
  assert.deepEqual(await again.get('items/first'), { n: 1 });
  assert.equal((await again.get('items/d')).pid, Number(opened.split(' ')[1]));
  assert.equal((await again.verify()).items, 2);
  await again.close();
  console.log(`node lock: refused ${waited.toFixed(0)} ms after its start (lockTimeout 400, node start-up included); handed over ${handover.toFixed(0)} ms after the holder closed (its open included)`);
});

test('a lock left by a killed process is taken over, by exactly one of several processes starting at once', async () => {
  const dir = tmp();
  // A holder killed while it holds the repository (SIGKILL: no close, the lock file stays).
  const a = child(dir, 'board', { holdMs: 60_000, tag: 'a' });
  const pidA = Number((await a.line('open')).split(' ')[1]);
  a.proc.kill('SIGKILL');
  await a.exited;
  assert.ok(existsSync(path.join(dir, 'board', 'lock')));
  // Five processes find the dead pid at once; each that opens holds it 1.5 s.
  const kids = Array.from({ length: 5 }, (_, i) => child(dir, 'board', { holdMs: 1500, tag: `k${i}` }));
  const outcomes = await Promise.all(kids.map((k) => Promise.race([k.line('open'), k.line('refused')])));
  await Promise.all(kids.map((k) => k.exited));
  const opened = outcomes.filter((o) => o.startsWith('open'));
  assert.equal(opened.length, 1, outcomes.join(' | '));
  const winner = Number(opened[0].split(' ')[1]);
  for (const o of outcomes.filter((x) => x.startsWith('refused'))) assert.match(o, new RegExp(`^refused locked (${winner}|${pidA}|null)$`));
  const db = await open('board', { directory: dir });
  assert.equal((await db.get('items/a')).pid, pidA, 'the killed holder acknowledged its write before it was killed');
  assert.equal(await db.count('items'), 2);
  await db.close();
});

test('a stale lock file without a pid (a crash between create and write) is taken over once it is old', async () => {
  const dir = tmp();
  mkdirSync(path.join(dir, 'board'), { recursive: true });
  writeFileSync(path.join(dir, 'board', 'lock'), '');
  const err = await open('board', { directory: dir }).then(() => null, (e) => e);
  assert.equal(err?.kind, 'locked');
  assert.equal(err.pid, null);
  const db = await open('board', { directory: dir, lockTimeout: 5000 });
  await db.put('items/1', { n: 1 });
  await db.close();
});

test('lockTimeout is checked: a typed error naming the option', async () => {
  for (const v of [-1, 'soon', Infinity, NaN]) {
    await assert.rejects(open('x', { directory: tmp(), lockTimeout: v }), (e) => e instanceof InvalidValueError && e.path === 'options.lockTimeout');
  }
});
