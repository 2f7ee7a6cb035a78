// The npm package's two entry files as one file each (issue 28, the cold-page open): `make pkg`
// (scripts/build-pkg.mjs) replaces the package's `worker.js` by a bundle of it and everything it
// imports (the wasm-bindgen glue included), and `ibexdb.js` (the public module) by a bundle of it
// and everything it imports except `errors.js` (kept a module of its own: ibexdb/react, /vue and
// /svelte import it too, and an error class must be one class for `instanceof`). The
// repository's source stays the modules in www/lib/ (what the tests and the benchmark's worker
// rows load).
//
// Why: a browser finds a module's imports only once it has fetched and parsed it, and fetches
// at most 6 files at a time from one HTTP/1.1 origin, so the worker's ~30 modules (six import
// levels) and the page's ~17 cost a cold page round trips one after another before anything
// runs; measured (docs/benchmarks.md, "The one-file worker"): the worker's alone Firefox ~220 ms
// of a ~450 ms open + first read, Chromium ~115 ms of ~275 ms. sqlite-wasm's worker is one
// script too. An app that bundles its own code (Vite) bundles these again; this is for the
// package served as it is, from a site's folder or a CDN.
//
// What must stay true in a bundle:
// - every `new URL('<relative>', import.meta.url)` is written relative to the bundle's folder
//   (the package's root), so the wasm, the glue's fresh copy after a panic, the worker and
//   verify()'s helper thread are found where the package has them, and bundlers (Vite) still
//   see the literals;
// - nothing is minified or renamed beyond what merging modules needs: errors keep their names
//   (errors.js names them by its table's keys), and a stack trace stays readable.
//
//   import { bundleModule } from './bundle-modules.mjs';
//   await bundleModule('dist/npm', 'worker.js'); await bundleModule('dist/npm', 'ibexdb.js', { external: ['errors.js'] });

import { promises as fs } from 'node:fs';
import path from 'node:path';

/** `new URL('<literal>', import.meta.url)`, the form every file of the library and the glue uses. */
const URL_LITERAL = /new URL\((['"])([^'"]+)\1,\s*import\.meta\.url\)/g;

/**
 * A rolldown plugin: rewrite each module's `new URL('<rel>', import.meta.url)` to the same file
 * relative to `root`, the folder the bundle is written to.
 * @param {string} root
 */
function relocateUrls(root) {
  return {
    name: 'ibexdb-relocate-urls',
    /** @param {string} code @param {string} id */
    transform(code, id) {
      if (!id.endsWith('.js')) return null;
      let changed = false;
      const out = code.replace(URL_LITERAL, (all, q, rel) => {
        if (/^[a-z][a-z0-9+.-]*:/i.test(rel)) return all; // absolute (blob:, https:)
        const target = path.resolve(path.dirname(id), rel);
        let fromRoot = path.relative(root, target).split(path.sep).join('/');
        if (!fromRoot.startsWith('../')) fromRoot = `./${fromRoot}`;
        changed ||= fromRoot !== rel;
        return `new URL(${q}${fromRoot}${q}, import.meta.url)`;
      });
      return changed ? { code: out, map: null } : null;
    },
  };
}

/**
 * Replace `<dir>/<entry>` by one file holding it and its whole static import graph, except the
 * `external` files (paths relative to `dir`), which it keeps importing. Returns the modules it
 * holds and the bundle's bytes.
 * @param {string} dir the package folder (dist/npm), or any folder laid out like it
 * @param {string} entry
 * @param {{external?: string[]}} [options]
 * @returns {Promise<{modules: string[], bytes: number}>}
 */
export async function bundleModule(dir, entry, { external = [] } = {}) {
  const { rolldown } = await import('rolldown');
  const root = path.resolve(dir);
  const input = path.join(root, entry);
  const kept = new Set(external.map((f) => path.join(root, f)));
  const bundle = await rolldown({
    input,
    // An external file stays an import, written relative to the bundle ('./errors.js').
    external: (id, importer) => kept.has(importer ? path.resolve(path.dirname(importer), id) : id),
    plugins: [relocateUrls(root)],
    // The library's modules have no effects at import time that matter besides those they declare;
    // keep everything anyway: no tree-shaking surprises between the source and the package.
    treeshake: false,
    logLevel: 'warn',
  });
  const tmp = `${input}.${process.pid}.tmp`;
  try {
    const { output } = await bundle.write({ file: tmp, format: 'es', minify: false, sourcemap: false });
    const chunk = output.find((o) => o.type === 'chunk');
    if (!chunk || output.filter((o) => o.type === 'chunk').length !== 1) throw new Error(`bundling ${entry} gave ${output.length} outputs, expected one file`);
    const text = await fs.readFile(tmp, 'utf8');
    // Static imports left in the bundle would be fetched one by one again: only the external ones.
    for (const m of text.matchAll(/^\s*(?:import|export)\s(?:[^'";]*?\sfrom\s*)?['"]([^'"]+)['"]/gm)) {
      if (!external.some((f) => m[1] === `./${f}`)) throw new Error(`the bundled ${entry} still imports ${m[1]}`);
    }
    await fs.rename(tmp, input);
    return { modules: Object.keys(chunk.modules).filter((m) => !m.includes('rolldown')).map((m) => path.relative(root, m).split(path.sep).join('/')), bytes: Buffer.byteLength(text) };
  } finally {
    await bundle.close();
    await fs.rm(tmp, { force: true });
  }
}
