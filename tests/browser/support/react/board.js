// A small board component rendered on a server (ssr.mjs, in Node) and hydrated in the browser
// (react.spec.ts): the same module in both, ibexdb/react by its path (the page's import map
// maps `ibexdb/react` to the same URL, so it is one module instance there).
import { createElement as h } from 'react';
import { useLive, useSyncStatus } from '../../../../www/lib/react.js';

export function Board() {
  const { rows, loading } = useLive({ collection: 'tasks', sort: ['title'] });
  const sync = useSyncStatus();
  return h(
    'section',
    { id: 'board' },
    h('p', { id: 'state' }, loading ? 'loading' : `${rows.length} tasks`),
    h('ul', null, rows.map((r) => h('li', { key: r.id }, String(r.value.title)))),
    h('p', { id: 'sync' }, sync?.state ?? 'unknown'),
  );
}
