// The npm package's one-file worker (scripts/bundle-worker.mjs, issue 28's cold-page open), from
// the outside: the package `make pkg` builds, read as files. Its worker.js must hold the source
// worker's whole static module graph (nothing left to fetch one import at a time), and every URL
// it computes from import.meta.url must name a file the package has (the wasm, the glue's fresh
// copy after a panic, verify()'s helper thread). The browser specs run it (package.spec.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildPackage } from '../../scripts/build-pkg.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The static import graph of `entry` (relative specifiers only), as paths relative to `base`. */
function staticGraph(entry, base) {
  const seen = new Set();
  const todo = [path.resolve(entry)];
  while (todo.length) {
    const f = todo.pop();
    if (seen.has(f)) continue;
    seen.add(f);
    const src = readFileSync(f, 'utf8');
    for (const m of src.matchAll(/^\s*(?:import|export)\s(?:[^'";]*?\sfrom\s*)?['"](\.[^'"]+)['"]/gm)) todo.push(path.resolve(path.dirname(f), m[1]));
  }
  return [...seen].map((f) => path.relative(base, f).split(path.sep).join('/')).sort();
}

test('the package worker is one file holding the source worker\'s whole graph; its URLs name package files', async (t) => {
  if (!existsSync(path.join(ROOT, 'pkg/ibexdb_bg.wasm'))) {
    t.skip('pkg/ is not built (make wasm)');
    return;
  }
  const out = mkdtempSync(path.join(os.tmpdir(), 'ibexdb-bundle-'));
  try {
    const built = await buildPackage({ out });
    const text = readFileSync(path.join(out, 'worker.js'), 'utf8');
    assert.doesNotMatch(text, /^\s*import\s[^(]/m, 'no static import left in the bundled worker');
    assert.doesNotMatch(text, /^\s*export\s/m, 'the worker exports nothing');
    // The same modules as the source graph (the glue under its package name).
    const source = staticGraph(path.join(ROOT, 'www/lib/worker.js'), path.join(ROOT, 'www/lib')).map((f) => f.replace('../../pkg/', 'wasm/'));
    const bundled = built.worker.modules.filter((m) => !m.includes('rolldown')).sort();
    assert.deepEqual(bundled, source.sort());
    assert.ok(source.length >= 25, `the source worker graph was read (${source.length} modules)`);
    // Every URL relative to the bundle names a file the package has, written as bundlers expect it.
    const urls = [...text.matchAll(/new URL\((['"])([^'"]+)\1,\s*import\.meta\.url\)/g)].map((m) => m[2]);
    for (const want of ['./wasm/ibexdb_bg.wasm', './wasm/ibexdb.js', './worker/verify-thread.js']) assert.ok(urls.includes(want), `${want} in ${urls}`);
    for (const u of urls) assert.ok(existsSync(path.join(out, u)), `${u} (named by the bundled worker) is in the package`);
    assert.ok(!text.includes('/pkg/'), 'no repository path left');
    // Error classes keep their names on the wire (errors.js names them by its table's keys).
    for (const name of ['ClosedError', 'StorageUnavailableError', 'PanicError']) assert.match(text, new RegExp(`\\b${name}\\b`));
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
