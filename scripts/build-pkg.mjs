#!/usr/bin/env node
// Build the publishable npm package `ibexdb` into dist/npm/ from the shipped library (www/lib/)
// and wasm-pack's output (pkg/), then `npm pack` it into dist/ (`make pkg`).
//
//   dist/npm/
//     package.json  README.md           (README from www/lib/README.md)
//     ibexdb.js  ibexdb.d.ts            the public module (one file but errors.js: bundle-modules.mjs) and its types
//     react.js  react.d.ts              ibexdb/react: React hooks (imports `react` and errors.js)
//     vue.js  vue.d.ts                  ibexdb/vue: Vue composables (imports `vue` and errors.js)
//     svelte.js  svelte.d.ts            ibexdb/svelte: Svelte stores (imports only errors.js: the store contract is plain JS)
//     collection.js                     db.collection(name) handles
//     worker.js  worker/*.js            the worker (worker.js: one file, bundle-modules.mjs) and its modules
//     engine.js loader.js policy.js storage.js codec.js txn.js errors.js
//     wasm/ibexdb.js  wasm/ibexdb_bg.wasm  wasm/ibexdb.d.ts   the wasm-bindgen glue and the engine
//     wasm/ibexdb_bg.wasm.br  wasm/ibexdb_bg.wasm.gz          the engine precompressed (brotli 11, gzip 9)
//
// The precompressed copies are for servers that send a file's `.br`/`.gz` sibling to a browser
// that accepts it (nginx gzip_static/brotli_static, Caddy `precompressed`, scripts/serve.mjs):
// the wasm is most of the bytes a first visit downloads. Brotli at quality 11 takes seconds, so
// they are kept in dist/.wasm-compressed/ under the wasm's hash and made again only for a new wasm.
// It prints every file's size and, last, the sizes a README would quote: the tarball, the wasm
// and the JS, raw, brotli and gzip.
//
// The library's files are copied as they are, except for the one path that differs: in the repo
// the glue and the wasm are wasm-pack's pkg/ (`../../pkg/` from www/lib/); in the package they
// are `./wasm/`, next to the modules. Every URL is relative to the module that uses it
// (`new URL(…, import.meta.url)`), so the package works unbundled from any folder or origin and
// bundlers (Vite) find the worker and the wasm.
//
//   node scripts/build-pkg.mjs          # build dist/npm/ and pack dist/ibexdb-<version>.tgz
//   node scripts/build-pkg.mjs --no-pack
//   import { buildPackage } from './build-pkg.mjs'

import { execFileSync } from 'node:child_process';
import { promises as fs, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createHash } from 'node:crypto';
import zlib from 'node:zlib';
import { bundleModule } from './bundle-modules.mjs';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
/** The repository's pinned dev dependencies: the package's own dependencies take their versions. */
const DEV_DEPENDENCIES = JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')).devDependencies;
const LIB = path.join(REPO, 'www/lib');
const PKG = path.join(REPO, 'pkg');

/** The glue path as the library's files write it, and as the package has it. */
const REPO_GLUE = '../../pkg/';
const PACKAGE_GLUE = './wasm/';
/** The library files that name the glue's folder (each must, exactly that often). */
const GLUE_REFERENCES = { 'engine.js': 1, 'policy.js': 1, 'wasm-instance.js': 2 };

/** Files with effects at import time (a bundler must keep them even when nothing is imported from them). */
const SIDE_EFFECTS = ['./worker.js', './wasm-instance.js'];

/** Where the precompressed wasm is kept between builds (by the wasm's hash). */
const COMPRESSED_CACHE = path.join(REPO, 'dist/.wasm-compressed');

const kib = (n) => (n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(2)} MiB` : `${(n / 1024).toFixed(1)} KiB`);
const brotli = (/** @type {Buffer} */ b) => zlib.brotliCompressSync(b, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: b.length } });
const gzip = (/** @type {Buffer} */ b) => zlib.gzipSync(b, { level: 9 });

/**
 * `wasm` brotli- and gzip-compressed: from the cache when this wasm was compressed before.
 * @param {Buffer} wasm
 * @returns {Promise<{br: Buffer, gz: Buffer}>}
 */
async function precompressed(wasm) {
  const id = createHash('sha256').update(wasm).digest('hex').slice(0, 32);
  const at = (/** @type {string} */ ext) => path.join(COMPRESSED_CACHE, `${id}.wasm${ext}`);
  try {
    return { br: await fs.readFile(at('.br')), gz: await fs.readFile(at('.gz')) };
  } catch {
    const out = { br: brotli(wasm), gz: gzip(wasm) };
    await fs.rm(COMPRESSED_CACHE, { recursive: true, force: true });
    await fs.mkdir(COMPRESSED_CACHE, { recursive: true });
    for (const [ext, bytes] of [['.br', out.br], ['.gz', out.gz]]) {
      // Written under a temporary name and renamed: a concurrent build never reads half a file.
      const tmp = `${at(ext)}.${process.pid}.tmp`;
      await fs.writeFile(tmp, bytes);
      await fs.rename(tmp, at(ext));
    }
    return out;
  }
}

async function listLibrary() {
  const out = [];
  for (const entry of await fs.readdir(LIB, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const rel = path.relative(LIB, path.join(entry.parentPath ?? entry.path, entry.name));
    if (rel.endsWith('.js') || rel.endsWith('.d.ts') || rel === 'README.md') out.push(rel);
  }
  return out.sort();
}

/**
 * Build the package folder. Returns { dir, version, files: [[path, bytes]], sizes } (sizes: the
 * wasm's and the JS's bytes raw, brotli and gzip).
 * @param {{out?: string}} [options]
 */
export async function buildPackage({ out = path.join(REPO, 'dist/npm') } = {}) {
  for (const f of ['ibexdb.js', 'ibexdb_bg.wasm']) {
    await fs.access(path.join(PKG, f)).catch(() => {
      throw new Error(`pkg/${f} is missing: build the wasm first (make wasm)`);
    });
  }
  const wasmPkg = JSON.parse(await fs.readFile(path.join(PKG, 'package.json'), 'utf8'));
  const version = wasmPkg.version;
  await fs.rm(out, { recursive: true, force: true });
  await fs.mkdir(path.join(out, 'wasm'), { recursive: true });

  const seen = {};
  for (const rel of await listLibrary()) {
    let text = await fs.readFile(path.join(LIB, rel), 'utf8');
    const n = text.split(REPO_GLUE).length - 1;
    if (n > 0) {
      if (rel.includes(path.sep)) throw new Error(`www/lib/${rel} names ${REPO_GLUE}; only top-level files may (the rewrite assumes it)`);
      seen[rel] = n;
      text = text.replaceAll(REPO_GLUE, PACKAGE_GLUE);
    }
    await fs.mkdir(path.dirname(path.join(out, rel)), { recursive: true });
    await fs.writeFile(path.join(out, rel), text);
  }
  // Fail loudly when the library changed how it finds the glue: the package would not load.
  for (const [file, count] of Object.entries(GLUE_REFERENCES)) {
    if (seen[file] !== count) throw new Error(`expected www/lib/${file} to name ${REPO_GLUE} ${count} time(s), found ${seen[file] ?? 0}: update GLUE_REFERENCES in scripts/build-pkg.mjs`);
  }
  for (const file of Object.keys(seen)) {
    if (!(file in GLUE_REFERENCES)) throw new Error(`www/lib/${file} names ${REPO_GLUE}: add it to GLUE_REFERENCES in scripts/build-pkg.mjs`);
  }
  for (const f of ['ibexdb.js', 'ibexdb_bg.wasm', 'ibexdb.d.ts']) await fs.copyFile(path.join(PKG, f), path.join(out, 'wasm', f));
  // The worker and the public module as one file each (scripts/bundle-modules.mjs says why):
  // worker.js holds worker/*.js, engine.js, the backends and the glue; ibexdb.js the page's
  // modules but errors.js (one set of error classes with ibexdb/react, /vue, /svelte). The modules
  // stay in the package too (ibexdb/node and the framework entries import some of them; verify()'s
  // helper thread is worker/verify-thread.js).
  const worker = await bundleModule(out, 'worker.js');
  const page = await bundleModule(out, 'ibexdb.js', { external: ['errors.js'] });
  const wasm = await fs.readFile(path.join(out, 'wasm/ibexdb_bg.wasm'));
  const { br, gz } = await precompressed(wasm);
  await fs.writeFile(path.join(out, 'wasm/ibexdb_bg.wasm.br'), br);
  await fs.writeFile(path.join(out, 'wasm/ibexdb_bg.wasm.gz'), gz);

  const manifest = {
    name: 'ibexdb',
    version,
    description: 'A local-first database for the browser: a Rust engine in WebAssembly, in a Web Worker, over OPFS; signed commits, live queries, sync.',
    license: wasmPkg.license ?? 'MIT OR Apache-2.0',
    keywords: ['database', 'local-first', 'offline', 'opfs', 'wasm', 'crdt', 'sync', 'web-worker'],
    type: 'module',
    main: './ibexdb.js',
    module: './ibexdb.js',
    types: './ibexdb.d.ts',
    exports: {
      '.': { types: './ibexdb.d.ts', default: './ibexdb.js' },
      // The same engine in Node >= 20 (memory, or files in a directory; sync over `ws`).
      './node': { types: './node/index.d.ts', node: './node/index.js', default: './node/index.js' },
      // React hooks (useLive, useItem, useSyncStatus); `react` is an optional peer.
      './react': { types: './react.d.ts', default: './react.js' },
      // Vue 3 composables (useLive, useItem, useSyncStatus); `vue` is an optional peer.
      './vue': { types: './vue.d.ts', default: './vue.js' },
      // Svelte stores (live, item, syncStatus): the store contract, no import of `svelte` at all.
      './svelte': { types: './svelte.d.ts', default: './svelte.js' },
      './package.json': './package.json',
    },
    files: ['*.js', '*.d.ts', 'worker/', 'backends/', 'node/', 'wasm/', 'README.md'],
    engines: { node: '>=20' },
    // Node's WebSocket for sync from `ibexdb/node` (Node 20 and 21 have none of their own); pinned.
    dependencies: { ws: DEV_DEPENDENCIES.ws },
    // ibexdb/react needs React 18+ (useSyncExternalStore), ibexdb/vue Vue 3.3+ (toValue); apps
    // without them need nothing.
    peerDependencies: { react: '>=18', vue: '>=3.3' },
    peerDependenciesMeta: { react: { optional: true }, vue: { optional: true } },
    sideEffects: SIDE_EFFECTS,
  };
  await fs.writeFile(path.join(out, 'package.json'), JSON.stringify(manifest, null, 2) + '\n');

  const files = [];
  for (const entry of await fs.readdir(out, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const p = path.join(entry.parentPath ?? entry.path, entry.name);
    files.push([path.relative(out, p), (await fs.stat(p)).size]);
  }
  files.sort((a, b) => a[0].localeCompare(b[0]));
  const js = Buffer.concat(await Promise.all(files.filter(([f]) => f.endsWith('.js')).map(([f]) => fs.readFile(path.join(out, f)))));
  const sizes = {
    wasm: { raw: wasm.length, br: br.length, gzip: gz.length },
    js: { raw: js.length, br: brotli(js).length, gzip: gzip(js).length },
  };
  return { dir: out, version, files, sizes, worker, page };
}

/**
 * `npm pack` the package folder into `dest`; returns { tarball, size, unpackedSize, entryCount }.
 * @param {string} dir
 * @param {string} dest
 */
export function packPackage(dir, dest) {
  const json = execFileSync('npm', ['pack', '--json', '--pack-destination', dest], {
    cwd: dir,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const [info] = JSON.parse(json);
  return { tarball: path.join(dest, info.filename), size: info.size, unpackedSize: info.unpackedSize, entryCount: info.entryCount };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  try {
    const built = await buildPackage();
    console.log(`ibexdb ${built.version} -> ${path.relative(REPO, built.dir)}/`);
    for (const [f, n] of built.files) console.log(`  ${f.padEnd(24)} ${kib(n).padStart(11)}`);
    const { wasm, js } = built.sizes;
    const three = (/** @type {{raw: number, br: number, gzip: number}} */ x) => `${kib(x.raw)} (brotli ${kib(x.br)}, gzip ${kib(x.gzip)})`;
    let tarball = '';
    if (!process.argv.includes('--no-pack')) {
      const packed = packPackage(built.dir, path.dirname(built.dir));
      console.log(`npm pack: ${path.relative(REPO, packed.tarball)} (${packed.entryCount} files, ${kib(packed.unpackedSize)} unpacked)`);
      tarball = `tarball ${kib(packed.size)}; `;
    }
    console.log(`sizes: ${tarball}wasm ${three(wasm)}; JS ${three(js)}`);
  } catch (e) {
    console.error(`build-pkg: ${e.message}`);
    process.exit(1);
  }
}
