// Server rendering of ibexdb/svelte in Node (tests/browser/svelte.spec.ts runs it): the test
// components compiled by svelte/compiler for the server (generate: 'server') and rendered by
// svelte/server's render, with a database whose every property access is recorded, and with
// Worker, OPFS and IndexedDB replaced by traps. Prints what was rendered and what was touched
// (nothing may be, also after the microtasks and timers that follow a render).
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { compile } from 'svelte/compiler';
import { render } from 'svelte/server';
import { get } from 'svelte/store';

const HERE = import.meta.dirname;
const REPO = path.resolve(HERE, '../../../..');
const OUT = path.join(REPO, 'dist/svelte-ssr');

const touched = [];
globalThis.Worker = class {
  constructor() {
    touched.push('Worker');
    throw new Error('a Worker on the server');
  }
};
Object.defineProperty(globalThis, 'navigator', {
  value: {
    storage: {
      getDirectory() {
        touched.push('OPFS');
        throw new Error('OPFS on the server');
      },
    },
  },
  configurable: true,
});
Object.defineProperty(globalThis, 'indexedDB', {
  get() {
    touched.push('indexedDB');
    return undefined;
  },
  configurable: true,
});

const db = new Proxy(
  {},
  {
    get(_target, prop) {
      if (prop === 'then' || prop === 'subscribe') return undefined; // what follow() asks of any value
      touched.push(`db.${String(prop)}`);
      return () => {
        throw new Error(`db.${String(prop)} on the server`);
      };
    },
  },
);

// Compile each component for the server into dist/svelte-ssr/ (inside the repository, so `svelte`
// resolves to its node_modules), with `ibexdb/svelte` pointing at www/lib/svelte.js.
await fs.mkdir(OUT, { recursive: true });
const lib = pathToFileURL(path.join(REPO, 'www/lib/svelte.js')).href;
/** @param {string} name */
async function component(name) {
  const source = await fs.readFile(path.join(HERE, `${name}.svelte`), 'utf8');
  const { js } = compile(source, { filename: `${name}.svelte`, generate: 'server' });
  const file = path.join(OUT, `${name}.js`);
  await fs.writeFile(file, js.code.replaceAll("'ibexdb/svelte'", JSON.stringify(lib)));
  return (await import(pathToFileURL(file).href)).default;
}
const Board = await component('Board');
const Legacy = await component('Legacy');
const Runes = await component('Runes');
const Count = await component('Count');
const { live } = await import(lib);

const out = {};
for (const [label, d] of Object.entries({ withDb: db, withPromise: Promise.resolve(db), withoutDb: null })) {
  out[label] = [
    render(Board, { props: { db: d } }).body,
    render(Legacy, { props: { db: d, search: 'x' } }).body,
    render(Runes, { props: { db: d } }).body,
    render(Count, { props: { db: d, id: 'c', store: live(d, { collection: 'tasks' }) } }).body,
  ]
    .join('')
    .replace(/<!--[^>]*-->/g, ''); // Svelte's hydration markers
}
// svelte/store's get(): a subscribe and unsubscribe in one go reads the loading state.
out.get = get(live(db, { collection: 'tasks' }));
await new Promise((r) => setTimeout(r, 50));
console.log(JSON.stringify({ ...out, touched }));
