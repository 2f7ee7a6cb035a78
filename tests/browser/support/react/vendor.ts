// Build React and react-dom (CommonJS on npm) into ES modules under dist/react-vendor/, which
// the React test page (index.html) maps `react` and `react-dom/client` to. Only React is
// bundled: ibexdb, ibexdb/react and the worker load unbundled from www/lib/, as shipped.
// Vite's development mode keeps React's development build (StrictMode double mounts, the
// "getSnapshot should be cached" check).
import path from 'node:path';
import { build } from 'vite';

const HERE = import.meta.dirname;
export const VENDOR_DIR = path.resolve(HERE, '../../../../dist/react-vendor');

export async function buildReactVendor() {
  await build({
    configFile: false,
    logLevel: 'warn',
    mode: 'development',
    root: HERE,
    define: { 'process.env.NODE_ENV': JSON.stringify('development') },
    build: {
      outDir: VENDOR_DIR,
      emptyOutDir: true,
      minify: false,
      lib: {
        entry: { react: path.join(HERE, 'react-entry.js'), 'react-dom-client': path.join(HERE, 'react-dom-entry.js') },
        formats: ['es'],
        fileName: (_format, name) => `${name}.js`,
      },
    },
  });
  return VENDOR_DIR;
}
