// The npm package's one-file worker and public module (scripts/bundle-modules.mjs, issue 28's
// cold-page open), from the outside: the package `make pkg` builds, read as files. Its worker.js
// must hold the source worker's whole static module graph (nothing left to fetch one import at a
// time), its ibexdb.js the page's graph but errors.js (which it imports: one set of error classes
// with ibexdb/react, /vue, /svelte), and every URL either computes from import.meta.url must name
// a file the package has (the wasm, the worker, the glue's fresh copy after a panic, verify()'s
// helper thread). The browser specs run them (package.spec.ts).
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

test('the package worker is one file holding the source worker\'s whole graph, the public module one file but errors.js; their URLs name package files', async (t) => {
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
    const bundled = [...built.worker.modules].sort();
    assert.deepEqual(bundled, source.sort());
    assert.ok(source.length >= 25, `the source worker graph was read (${source.length} modules)`);
    // Every URL relative to the bundle names a file the package has, written as bundlers expect it.
    const urls = [...text.matchAll(/new URL\((['"])([^'"]+)\1,\s*import\.meta\.url\)/g)].map((m) => m[2]);
    for (const want of ['./wasm/ibexdb_bg.wasm', './wasm/ibexdb.js', './worker/verify-thread.js']) assert.ok(urls.includes(want), `${want} in ${urls}`);
    for (const u of urls) assert.ok(existsSync(path.join(out, u)), `${u} (named by the bundled worker) is in the package`);
    assert.ok(!text.includes('/pkg/'), 'no repository path left');
    // Error classes keep their names on the wire (errors.js names them by its table's keys).
    for (const name of ['ClosedError', 'StorageUnavailableError', 'PanicError']) assert.match(text, new RegExp(`\\b${name}\\b`));

    // The public module: one file that imports errors.js and nothing else.
    const page = readFileSync(path.join(out, 'ibexdb.js'), 'utf8');
    const imports = [...page.matchAll(/^\s*(?:import|export)\s(?:[^'";]*?\sfrom\s*)?['"]([^'"]+)['"]/gm)].map((m) => m[1]);
    assert.deepEqual([...new Set(imports)], ['./errors.js']);
    const pageSource = staticGraph(path.join(ROOT, 'www/lib/ibexdb.js'), path.join(ROOT, 'www/lib')).filter((f) => f !== 'errors.js');
    assert.deepEqual([...built.page.modules].sort(), pageSource.sort());
    const pageUrls = [...page.matchAll(/new URL\((['"])([^'"]+)\1,\s*import\.meta\.url\)/g)].map((m) => m[2]);
    for (const want of ['./worker.js', './wasm/ibexdb_bg.wasm', './worker/verify-thread.js']) assert.ok(pageUrls.includes(want), `${want} in ${pageUrls}`);
    for (const u of pageUrls) assert.ok(existsSync(path.join(out, u)), `${u} (named by the bundled ibexdb.js) is in the package`);
    // Its exports are the source module's (the error classes through errors.js).
    const mod = await import(path.join(out, 'ibexdb.js'));
    const src = await import(path.join(ROOT, 'www/lib/ibexdb.js'));
    assert.deepEqual(Object.keys(mod).sort(), Object.keys(src).sort());
    const errors = await import(path.join(out, 'errors.js'));
    assert.equal(mod.ClosedError, errors.ClosedError, 'one ClosedError class for the module and errors.js');
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
