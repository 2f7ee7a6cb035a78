// The npm package's worker as one file (issue 28, the cold-page open): `make pkg`
// (scripts/build-pkg.mjs) replaces the package's `worker.js` by a bundle of it and everything it
// imports, the wasm-bindgen glue included. The repository's source stays the modules in
// www/lib/ (what the tests and the benchmark's worker rows load).
//
// Why: a module worker finds its imports only as it parses each module, and browsers fetch at
// most 6 at a time from one HTTP/1.1 origin, so the worker's ~30 modules cost several round trips
// one after another before it can run; measured on a cold page (docs/benchmarks.md, "The
// one-file worker"): Firefox ~220 ms of a ~450 ms open + first read, Chromium ~115 ms of
// ~275 ms. One file is one request. (sqlite-wasm's worker is one script as well.) An app that
// bundles its own code (Vite) bundles the worker anyway; this is for the package served as it
// is, from a site's folder or a CDN.
//
// What must stay true in the bundle:
// - every `new URL('<relative>', import.meta.url)` is written relative to the bundle's folder
//   (the package's root), so the wasm, the glue's fresh copy after a panic and verify()'s helper
//   thread are found where the package has them, and bundlers (Vite) still see the literals;
// - nothing is minified or renamed beyond what merging modules needs: errors keep their names
//   (the wire protocol sends `name`), and a stack trace stays readable.
//
//   import { bundleWorker } from './bundle-worker.mjs'; await bundleWorker('dist/npm');

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
 * Replace `<dir>/worker.js` by one file holding it and its whole static import graph. Returns
 * the modules it holds and the bundle's bytes.
 * @param {string} dir the package folder (dist/npm), or any folder laid out like www/lib
 * @param {{entry?: string}} [options]
 * @returns {Promise<{modules: string[], bytes: number}>}
 */
export async function bundleWorker(dir, { entry = 'worker.js' } = {}) {
  const { rolldown } = await import('rolldown');
  const root = path.resolve(dir);
  const input = path.join(root, entry);
  const bundle = await rolldown({
    input,
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
    // Static imports left in the bundle would be fetched one by one again: there must be none.
    if (/^\s*import\s[^(]/m.test(text)) throw new Error(`the bundled ${entry} still has a static import`);
    await fs.rename(tmp, input);
    return { modules: Object.keys(chunk.modules).map((m) => path.relative(root, m).split(path.sep).join('/')), bytes: Buffer.byteLength(text) };
  } finally {
    await bundle.close();
    await fs.rm(tmp, { force: true });
  }
}
