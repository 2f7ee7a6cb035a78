// The npm package as a user gets it: `npm pack` of the package built from www/lib/ + pkg/,
// installed from the tarball into a scratch project in a temp dir (outside the repository), and
// used there by a small notes page (tests/browser/scratch/): CRUD, a live query, a reload.
// Served by a plain static server without COOP/COEP from a sub-path; with the module loaded from
// a second origin (a "CDN" on another loopback port, with CORS); and as a Vite production build.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test, expect, watch } from './ibexdb.fixtures';
import { NOTES_EXPECTED, exerciseNotes, notesPage, scratchProject, serve, type Scratch } from './support/shipping';

test.describe.configure({ mode: 'serial' });

let scratch: Scratch;

test.beforeAll(async () => {
  scratch = await scratchProject();
  console.log(`npm pack: ${path.basename(scratch.tarball)} ${(scratch.tarballBytes / 1024).toFixed(1)} KiB`);
});

test.afterAll(() => scratch?.remove());

test('installed package, unbundled, from a sub-path without COOP/COEP', async ({ page, watched }) => {
  void watched;
  const installed = JSON.parse(readFileSync(path.join(scratch.dir, 'node_modules/ibexdb/package.json'), 'utf8'));
  expect(installed.exports['.']).toEqual({ types: './ibexdb.d.ts', default: './ibexdb.js' });
  // ibexdb/react and ibexdb/vue ship as sub-paths; React and Vue are optional peers (an app without them installs neither).
  expect(installed.exports['./react']).toEqual({ types: './react.d.ts', default: './react.js' });
  expect(installed.exports['./vue']).toEqual({ types: './vue.d.ts', default: './vue.js' });
  // ibexdb/svelte imports nothing from svelte (the store contract is plain JS): no peer at all.
  expect(installed.exports['./svelte']).toEqual({ types: './svelte.d.ts', default: './svelte.js' });
  expect(installed.peerDependencies).toEqual({ react: '>=18', vue: '>=3.3' });
  expect(installed.peerDependenciesMeta).toEqual({ react: { optional: true }, vue: { optional: true } });
  expect(readdirSync(path.join(scratch.dir, 'node_modules'))).not.toContain('react');
  expect(readdirSync(path.join(scratch.dir, 'node_modules'))).not.toContain('vue');
  for (const f of ['react.js', 'react.d.ts', 'vue.js', 'vue.d.ts', 'svelte.js', 'svelte.d.ts', 'collection.js']) expect(readdirSync(path.join(scratch.dir, 'node_modules/ibexdb')), f).toContain(f);
  expect(readdirSync(path.join(scratch.dir, 'node_modules/ibexdb/wasm')).sort()).toEqual(['ibexdb.d.ts', 'ibexdb.js', 'ibexdb_bg.wasm', 'ibexdb_bg.wasm.br', 'ibexdb_bg.wasm.gz']);
  const site = await serve(scratch.dir, { mount: '/apps/notes/' });
  try {
    const seen = await exerciseNotes(page, `${site.url}/apps/notes/`);
    expect(seen.env).toEqual({ secure: true, isolated: false, role: 'owner' });
    expect(seen).toMatchObject(NOTES_EXPECTED);
  } finally {
    await site.close();
  }
});

test('ibexdb/node from the installed package: the engine in Node, files on disk, ws installed with it', async () => {
  // No browser: a Node script in the scratch project imports the package's Node entry by name.
  const script = `
    import { open } from 'ibexdb/node';
    const db = await open('pkg', { directory: './node-data' });
    await db.put('items/1', { n: 1 });
    await db.close();
    const again = await open('pkg', { directory: './node-data' });
    console.log(JSON.stringify({ item: await again.get('items/1'), storage: again.storage, ws: typeof (await import('ws')).WebSocket }));
    await again.close();`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: scratch.dir, encoding: 'utf8' });
  expect(JSON.parse(out.trim().split('\n').pop()!)).toEqual({ item: { n: 1 }, storage: 'disk', ws: 'function' });
  const installed = JSON.parse(readFileSync(path.join(scratch.dir, 'node_modules/ibexdb/package.json'), 'utf8'));
  expect(installed.exports['./node']).toMatchObject({ types: './node/index.d.ts', default: './node/index.js' });
  expect(installed.dependencies.ws).toMatch(/^\d+\.\d+\.\d+$/); // pinned
});

test('module loaded from another origin (a CDN): blob-bootstrapped worker, wasm over CORS', async ({ page, watched }) => {
  void watched;
  const cdn = await serve(path.join(scratch.dir, 'node_modules'), { mount: '/npm/', headers: { 'Access-Control-Allow-Origin': '*' } });
  const moduleUrl = `${cdn.url}/npm/ibexdb/ibexdb.js`;
  notesPage(scratch.dir, 'cdn', moduleUrl);
  const site = await serve(scratch.dir, { mount: '/apps/notes/' });
  // What the two servers were asked for (seen by the servers, so in every browser alike).
  const requests: string[] = [];
  for (const srv of [cdn, site]) srv.server.on('request', (req: { url: string }) => requests.push(`${srv.url}${req.url}`));
  try {
    expect(new URL(site.url).origin).not.toBe(new URL(cdn.url).origin);
    const seen = await exerciseNotes(page, `${site.url}/apps/notes/cdn.html`);
    expect(seen).toMatchObject(NOTES_EXPECTED);
    // The module, the worker and the wasm all came from the CDN origin.
    for (const f of ['ibexdb.js', 'worker.js', 'wasm/ibexdb_bg.wasm']) {
      expect(requests, f).toContain(`${cdn.url}/npm/ibexdb/${f}`);
    }
    // The worker is one file (scripts/bundle-modules.mjs): none of its modules, not the glue, was
    // fetched on its own (a cold page would wait for them one import level after another).
    const workerModules = ['engine.js', 'storage.js', 'wasm-instance.js', 'wasm/ibexdb.js', 'worker/batch.js', 'worker/ownership.js', 'backends/opfs.js'];
    for (const f of workerModules) expect(requests, f).not.toContain(`${cdn.url}/npm/ibexdb/${f}`);
    expect(requests.some((u) => u.startsWith(`${site.url}/apps/notes/node_modules`))).toBe(false);
  } finally {
    await site.close();
    await cdn.close();
  }
});

test('Vite production build of the scratch project', async ({ page, watched }) => {
  void watched;
  test.setTimeout(180_000);
  const { build } = await import('vite');
  const outDir = path.join(scratch.dir, 'dist-vite');
  await build({
    root: path.join(scratch.dir, 'vite'),
    base: '/apps/notes/',
    configFile: false,
    logLevel: 'warn',
    build: { outDir, emptyOutDir: true },
  });
  const assets = readdirSync(path.join(outDir, 'assets'));
  // Vite found the worker (bundled on its own) and the wasm (emitted once, hashed).
  expect(assets.filter((f) => f.endsWith('.wasm'))).toHaveLength(1);
  expect(assets.filter((f) => /^worker-.*\.js$/.test(f))).toHaveLength(1);
  for (const f of assets.filter((a) => a.endsWith('.js'))) {
    expect(readFileSync(path.join(outDir, 'assets', f), 'utf8'), f).not.toContain('/pkg/');
  }
  // The glue is a file of its own too: after a panic the worker loads a fresh copy of it.
  expect(assets.filter((f) => /^ibexdb-.*\.js$/.test(f))).toHaveLength(1);
  const site = await serve(outDir, { mount: '/apps/notes/' });
  try {
    const seen = await exerciseNotes(page, `${site.url}/apps/notes/`);
    expect(seen.env.isolated).toBe(false);
    expect(seen).toMatchObject(NOTES_EXPECTED);
    const recovered = await page.evaluate(async () => {
      const db = (window as any).db;
      const panic = await db._debugPanic().then(() => 'no error', (e: Error) => e.name);
      const a = await db.get('notes/a');
      return { panic, after: { title: a.title, tags: [...a.tags] } };
    });
    expect(recovered).toEqual({ panic: 'PanicError', after: { title: 'Alpha 2', tags: ['x'] } });
  } finally {
    await site.close();
  }
});

test('two tabs of the installed package share one repository', async ({ context, page, watched }) => {
  void watched;
  const site = await serve(scratch.dir, { mount: '/apps/notes/' });
  try {
    await exerciseNotes(page, `${site.url}/apps/notes/`);
    const second = await context.newPage();
    const w2 = watch(second, 'tab 2');
    await second.goto(`${site.url}/apps/notes/`);
    await second.waitForFunction(() => document.querySelectorAll('#notes li').length === 2);
    expect(await second.evaluate(() => (window as any).db.role)).toBe('client');
    await second.evaluate(() => (window as any).db.put('notes/d', { title: 'Delta' }));
    await page.waitForFunction(() => document.querySelectorAll('#notes li').length === 3);
    expect(w2.problems).toEqual([]);
  } finally {
    await site.close();
  }
});

test('after a panic, an engine that cannot be loaded again fails the calls instead of hanging', async ({ page, watched }) => {
  void watched;
  const site = await serve(scratch.dir, { mount: '/apps/notes/' });
  const glue = path.join(scratch.dir, 'node_modules/ibexdb/wasm/ibexdb.js');
  const saved = readFileSync(glue);
  try {
    await exerciseNotes(page, `${site.url}/apps/notes/`);
    rmSync(glue); // a deploy removed the files under a running page
    const out = await page.evaluate(async () => {
      const db = (window as any).db;
      const panic = await db._debugPanic().then(() => 'no error', (e: Error) => `${e.name}: ${e.message}`);
      const next = await db.get('notes/a').then(() => 'no error', (e: Error) => `${e.name}: ${e.message}`);
      return { panic, next };
    });
    expect(out.panic).toMatch(/^PanicError: the engine panicked and cannot be restarted: a fresh copy of its glue \(.*\/wasm\/ibexdb\.js\?instance=1\) did not load/);
    expect(out.next).toMatch(/^PanicError: the engine panicked and cannot be restarted: .*\?instance=2\) did not load/);
  } finally {
    writeFileSync(glue, saved);
    await site.close();
  }
});
