// Build the Svelte test page's module (tests/browser/svelte.spec.ts): the components here
// (*.svelte) compiled by the real svelte/compiler from npm, with Svelte's runtime, bundled by
// Vite into dist/svelte-vendor/page.js. ibexdb and ibexdb/svelte stay outside the bundle: the
// page's import map (index.html) loads them unbundled from www/lib/, as shipped. Development
// mode: Svelte's dev runtime (its store-contract checks, `validate_store`).
import path from 'node:path';
import { build, type Plugin } from 'vite';
import { compile } from 'svelte/compiler';

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

export async function buildSveltePage() {
  await build({
    configFile: false,
    logLevel: 'warn',
    mode: 'development',
    root: HERE,
    plugins: [svelteCompile()],
    resolve: { conditions: ['browser', 'development', 'module', 'import', 'default'] },
    build: {
      outDir: VENDOR_DIR,
      emptyOutDir: true,
      minify: false,
      lib: { entry: { page: path.join(HERE, 'page-entry.js') }, formats: ['es'], fileName: (_format, name) => `${name}.js` },
      rollupOptions: { external: ['ibexdb', 'ibexdb/svelte'] },
    },
  });
  return VENDOR_DIR;
}
