#!/usr/bin/env node
// Build the task board PWA (examples/app/) into dist/app/, the way its own developer would
// deploy it without a bundler: the app's files and the ibexdb package (built by build-pkg.mjs,
// the same files `npm install ibexdb` puts in node_modules/ibexdb) are copied under one
// versioned folder, and index.html maps the bare name `ibexdb` to it with an import map.
//
//   dist/app/index.html              the shell (stable URL): CSP, import map, v-<version>/app.js
//   dist/app/sw.js                   the service worker (stable URL): VERSION and FILES filled in
//   dist/app/manifest.webmanifest    dist/app/icons/ (svg, 192 and 512 px PNG drawn here)
//   dist/app/v-<version>/            app.js, lib/, views/, style.css, ibexdb/ (the package),
//                                    vendor/vue.js (Vue's ESM browser build, runtime only)
//
// The views are Vue components (render functions: no template compiler, no build step) reading
// the board through ibexdb/vue. Vue comes from node_modules, as `npm install vue` puts it there:
// its self-contained ESM browser build (vue.runtime.esm-browser.prod.js) is copied as is, and the
// import map maps `vue` to it and `ibexdb/vue` to the package's composables.
//
// <version> is a hash of every file the service worker caches (and BUILD_ID, if given), so the
// shell, the module, its worker and the wasm change version together. The package's
// precompressed wasm (.br, .gz) is copied too, for the static server, but not cached.
//
//   node scripts/build-app.mjs [--out DIR] [--build-id ID]

import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { deflateSync } from 'node:zlib';
import { buildPackage } from './build-pkg.mjs';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SRC = path.join(REPO, 'examples/app');
/** Files of examples/app that are not versioned app code. */
const SHELL = new Set(['index.html', 'sw.js', 'manifest.webmanifest', 'README.md']);
/** Suffixes of the package's precompressed copies (scripts/build-pkg.mjs). */
const PRECOMPRESSED = ['.br', '.gz'];
/** Files from node_modules served with the app: its path under v-<version>/ -> the file. */
const VENDOR = { 'vendor/vue.js': path.join(path.dirname(createRequire(import.meta.url).resolve('vue/package.json')), 'dist/vue.runtime.esm-browser.prod.js') };

/** @param {string} dir @returns {Promise<string[]>} files under dir, relative, sorted */
async function walk(dir) {
  const out = [];
  for (const e of await fs.readdir(dir, { recursive: true, withFileTypes: true })) {
    if (e.isFile()) out.push(path.relative(dir, path.join(e.parentPath ?? e.path, e.name)));
  }
  return out.sort();
}

/** @param {string} from @param {string} to */
async function copy(from, to) {
  await fs.mkdir(path.dirname(to), { recursive: true });
  await fs.copyFile(from, to);
}

/**
 * Build the app. Returns { dir, version, files } (files: what the service worker caches).
 * @param {{out?: string, buildId?: string, packageDir?: string}} [options]
 */
export async function buildApp({ out = path.join(REPO, 'dist/app'), buildId = '', packageDir = path.join(REPO, 'dist/npm') } = {}) {
  const pkg = await buildPackage({ out: packageDir });
  const appFiles = (await walk(SRC)).filter((f) => !SHELL.has(f) && !f.startsWith('icons/'));
  // node/ is the package's Node entry: a browser never loads it.
  const pkgFiles = (await walk(pkg.dir)).filter((f) => f !== 'package.json' && f !== 'README.md' && !f.endsWith('.d.ts') && !f.startsWith('node/'));
  // The precompressed wasm (.br, .gz) is deployed for the static server to send, not cached by the
  // service worker: the browser stores what it decoded, under the wasm's own URL.
  const pkgCached = pkgFiles.filter((f) => !PRECOMPRESSED.some((ext) => f.endsWith(ext)));
  const icons = await drawIcons();

  // The version: a hash over everything cached.
  const hash = createHash('sha256').update(`build:${buildId}\n`);
  for (const f of appFiles) hash.update(`app/${f}\n`).update(await fs.readFile(path.join(SRC, f)));
  for (const f of pkgCached) hash.update(`ibexdb/${f}\n`).update(await fs.readFile(path.join(pkg.dir, f)));
  for (const [f, from] of Object.entries(VENDOR)) hash.update(`vendor/${f}\n`).update(await fs.readFile(from));
  for (const f of ['index.html', 'sw.js', 'manifest.webmanifest', 'icons/icon.svg']) hash.update(`shell/${f}\n`).update(await fs.readFile(path.join(SRC, f)));
  for (const [name, png] of Object.entries(icons)) hash.update(`icons/${name}\n`).update(png);
  const version = hash.digest('hex').slice(0, 12);
  const v = `v-${version}`;

  await fs.rm(out, { recursive: true, force: true });
  for (const f of appFiles) await copy(path.join(SRC, f), path.join(out, v, f));
  for (const f of pkgFiles) await copy(path.join(pkg.dir, f), path.join(out, v, 'ibexdb', f));
  for (const [f, from] of Object.entries(VENDOR)) await copy(from, path.join(out, v, f));
  await copy(path.join(SRC, 'manifest.webmanifest'), path.join(out, 'manifest.webmanifest'));
  await copy(path.join(SRC, 'icons/icon.svg'), path.join(out, 'icons/icon.svg'));
  for (const [name, png] of Object.entries(icons)) await fs.writeFile(path.join(out, 'icons', name), png);

  // index.html: the import map, and a Content-Security-Policy that allows exactly it.
  const importMap = JSON.stringify({ imports: { ibexdb: `./${v}/ibexdb/ibexdb.js`, 'ibexdb/vue': `./${v}/ibexdb/vue.js`, vue: `./${v}/vendor/vue.js` } });
  const csp = [
    "default-src 'self'",
    `script-src 'self' 'wasm-unsafe-eval' 'sha256-${createHash('sha256').update(importMap).digest('base64')}'`,
    "worker-src 'self'",
    "connect-src 'self' ws: wss:",
    "img-src 'self' data: blob:",
    "style-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
  ].join('; ');
  const index = (await fs.readFile(path.join(SRC, 'index.html'), 'utf8'))
    .replaceAll('%V%', v)
    .replace('%CSP%', csp)
    .replace('%IMPORTMAP%', importMap)
    .replace('%PKGVERSION%', pkg.version)
    .replace('%SHORT%', version.slice(0, 7));
  await fs.writeFile(path.join(out, 'index.html'), index);

  const cached = ['./', 'index.html', 'manifest.webmanifest', 'icons/icon.svg', ...Object.keys(icons).map((n) => `icons/${n}`), ...appFiles.map((f) => `${v}/${f}`), ...Object.keys(VENDOR).map((f) => `${v}/${f}`), ...pkgCached.map((f) => `${v}/ibexdb/${f}`)];
  const sw = (await fs.readFile(path.join(SRC, 'sw.js'), 'utf8')).replace("'%VERSION%'", JSON.stringify(version)).replace('%FILES%', JSON.stringify(cached, null, 2));
  await fs.writeFile(path.join(out, 'sw.js'), sw);
  return { dir: out, version, files: cached, packageVersion: pkg.version };
}

// ----- icons: the SVG's shapes drawn into PNGs (no image tooling needed) ------------------------

/** @type {Record<string, Buffer> | null} drawn once per process */
let icons = null;

/** @returns {Promise<Record<string, Buffer>>} */
async function drawIcons() {
  icons ??= { 'icon-192.png': drawIcon(192), 'icon-512.png': drawIcon(512) };
  return icons;
}

/**
 * The icon at `size` px: the same rounded squares as icons/icon.svg (a 64-unit grid), 4×4
 * supersampled. The maskable variant is the same image (its content sits inside the safe zone).
 * @param {number} size
 */
function drawIcon(size) {
  const bg = [0x3b, 0x5b, 0xdb];
  /** [x, y, w, h, r, alpha] in 64ths, white */
  const cards = [
    [10, 14, 12, 8, 2, 1], [10, 25, 12, 8, 2, 1], [10, 36, 12, 8, 2, 1],
    [26, 14, 12, 8, 2, 1], [26, 25, 12, 8, 2, 1],
    [42, 14, 12, 8, 2, 0.55],
  ];
  const inRound = (/** @type {number} */ x, /** @type {number} */ y, /** @type {number[]} */ [rx, ry, w, hh, r]) => {
    if (x < rx || y < ry || x > rx + w || y > ry + hh) return false;
    const cx = Math.min(Math.max(x, rx + r), rx + w - r);
    const cy = Math.min(Math.max(y, ry + r), ry + hh - r);
    return (x - cx) ** 2 + (y - cy) ** 2 <= r * r;
  };
  const S = 4;
  const raw = Buffer.alloc(size * (size * 4 + 1));
  for (let py = 0; py < size; py++) {
    raw[py * (size * 4 + 1)] = 0; // filter: none
    for (let px = 0; px < size; px++) {
      let r = 0, g = 0, b = 0, a = 0;
      for (let sy = 0; sy < S; sy++) {
        for (let sx = 0; sx < S; sx++) {
          const x = ((px + (sx + 0.5) / S) / size) * 64;
          const y = ((py + (sy + 0.5) / S) / size) * 64;
          if (!inRound(x, y, [0, 0, 64, 64, 14])) continue;
          let c = bg;
          for (const card of cards) {
            if (inRound(x, y, card)) {
              const k = card[5];
              c = [255 * k + bg[0] * (1 - k), 255 * k + bg[1] * (1 - k), 255 * k + bg[2] * (1 - k)];
            }
          }
          r += c[0]; g += c[1]; b += c[2]; a += 255;
        }
      }
      const n = S * S;
      const o = py * (size * 4 + 1) + 1 + px * 4;
      raw[o] = Math.round(r / n); raw[o + 1] = Math.round(g / n); raw[o + 2] = Math.round(b / n); raw[o + 3] = Math.round(a / n);
    }
  }
  const chunk = (/** @type {string} */ type, /** @type {Buffer} */ data) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(td));
    return Buffer.concat([len, td, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 6; // RGBA
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw, { level: 9 })), chunk('IEND', Buffer.alloc(0))]);
}

/** @param {Buffer} buf */
function crc32(buf) {
  let c = 0xffffffff;
  for (const byte of buf) {
    c ^= byte;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xedb88320 : c >>> 1;
  }
  return (c ^ 0xffffffff) >>> 0;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const arg = (/** @type {string} */ name) => {
    const i = process.argv.indexOf(name);
    return i > 0 ? process.argv[i + 1] : undefined;
  };
  try {
    const built = await buildApp({ out: arg('--out') ? path.resolve(arg('--out')) : undefined, buildId: arg('--build-id') ?? process.env.BUILD_ID ?? '' });
    console.log(`task board ${built.version} (ibexdb ${built.packageVersion}) -> ${path.relative(REPO, built.dir) || built.dir}/ (${built.files.length} files cached by the service worker)`);
  } catch (e) {
    console.error(`build-app: ${e.stack ?? e.message}`);
    process.exit(1);
  }
}
