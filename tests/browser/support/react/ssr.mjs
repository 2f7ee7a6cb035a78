// Server rendering of ibexdb/react in Node (tests/browser/react.spec.ts runs it): react-dom/server
// renders components that use every hook, with a database whose every property access is
// recorded and with Worker, OPFS and IndexedDB replaced by traps. Prints what was rendered and
// what was touched (nothing may be).
import { createElement as h } from 'react';
import { renderToString } from 'react-dom/server';

const touched = [];
globalThis.Worker = class {
  constructor() {
    touched.push('Worker');
    throw new Error('a Worker on the server');
  }
};
const storage = {
  getDirectory() {
    touched.push('OPFS');
    throw new Error('OPFS on the server');
  },
};
Object.defineProperty(globalThis, 'navigator', { value: { storage }, configurable: true });
Object.defineProperty(globalThis, 'indexedDB', {
  get() {
    touched.push('indexedDB');
    return undefined;
  },
  configurable: true,
});

const { IbexProvider, useItem, useLive, useSyncStatus } = await import('../../../../www/lib/react.js');

/** A "database" that records any use: the hooks must not call it while rendering on a server. */
const db = new Proxy(
  {},
  {
    get(_target, prop) {
      touched.push(`db.${String(prop)}`);
      return () => {
        throw new Error(`db.${String(prop)} on the server`);
      };
    },
  },
);

function App() {
  const live = useLive({ collection: 'tasks', where: { done: false } });
  const item = useItem('tasks/1');
  const status = useSyncStatus();
  return h('p', null, `live ${live.loading} ${live.rows.length} ${live.error}; item ${item.loading} ${item.value}; sync ${status?.state ?? 'unknown'}`);
}

const withDb = renderToString(h(IbexProvider, { db }, h(App)));
const withoutDb = renderToString(h(IbexProvider, { db: null }, h(App)));
// The board the browser hydrates (react.spec.ts).
const { Board } = await import('./board.js');
const board = renderToString(h(IbexProvider, { db }, h(Board)));
console.log(JSON.stringify({ withDb, withoutDb, board, touched }));
