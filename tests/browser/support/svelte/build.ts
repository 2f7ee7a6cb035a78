// Build the Svelte test page's modules (tests/browser/svelte.spec.ts): the components here
// (*.svelte) compiled by the real svelte/compiler from npm, with Svelte's runtime, bundled by
// Vite into dist/svelte-vendor/page.js; and the Svelte 4 component (Legacy.svelte) compiled by
// Svelte 4's own compiler with Svelte 4's runtime (the devDependency `svelte4`, npm:svelte@4)
// into page4.js. ibexdb and ibexdb/svelte stay outside the bundles: the page's import map
// (index.html) loads them unbundled from www/lib/, as shipped. Development mode: Svelte's dev
// runtime (its store-contract checks, `validate_store`).
import path from 'node:path';
import { build, type Plugin } from 'vite';
import { compile } from 'svelte/compiler';
import { compile as compile4 } from 'svelte4/compiler';

const HERE = import.meta.dirname;
export const VENDOR_DIR = path.resolve(HERE, '../../../../dist/svelte-vendor');

/** Compile `.svelte` files as the client gets them (a component's mode, runes or legacy, is its own). */
export function svelteCompile(generate: 'client' | 'server' = 'client'): Plugin {
  return {
    name: 'ibexdb-test-svelte',
    transform(code, id) {
      if (!id.endsWith('.svelte')) return null;
      const out = compile(code, { filename: id, generate, dev: true, css: 'injected' });
      return { code: out.js.code, map: out.js.map };
    },
  };
}

/** Svelte 4's compiler, for the Svelte 4 bundle. */
function svelte4Compile(): Plugin {
  return {
    name: 'ibexdb-test-svelte4',
    transform(code, id) {
      if (!id.endsWith('.svelte')) return null;
      const out = compile4(code, { filename: id, generate: 'dom', dev: true });
      return { code: out.js.code, map: out.js.map };
    },
  };
}

export async function buildSveltePage() {
  // Svelte 4: `svelte/...` (what its compiled components import) is the `svelte4` package.
  await build({
    configFile: false,
    logLevel: 'warn',
    mode: 'development',
    root: HERE,
    plugins: [svelte4Compile()],
    resolve: { alias: [{ find: /^svelte(?=\/|$)/, replacement: 'svelte4' }], conditions: ['browser', 'development', 'module', 'import', 'default'] },
    build: {
      outDir: VENDOR_DIR,
      emptyOutDir: true,
      minify: false,
      lib: { entry: { page4: path.join(HERE, 'page4-entry.js') }, formats: ['es'], fileName: (_format, name) => `${name}.js` },
      rollupOptions: { external: ['ibexdb', 'ibexdb/svelte'] },
    },
  });
  await build({
    configFile: false,
    logLevel: 'warn',
    mode: 'development',
    root: HERE,
    plugins: [svelteCompile()],
    resolve: { conditions: ['browser', 'development', 'module', 'import', 'default'] },
    build: {
      outDir: VENDOR_DIR,
      emptyOutDir: false,
      minify: false,
      lib: { entry: { page: path.join(HERE, 'page-entry.js') }, formats: ['es'], fileName: (_format, name) => `${name}.js` },
      rollupOptions: { external: ['ibexdb', 'ibexdb/svelte'] },
    },
  });
  return VENDOR_DIR;
}
