// The scratch project's app, as a user writes it against the installed package: a notes list
// kept current by a live query. The shipping specs copy this folder into a temp dir, install the
// packed tarball next to it and serve it (unbundled with an import map, from a "CDN", or built
// by Vite). The page puts `db` on window for the test and reports an open failure on <body>.
import { open } from 'ibexdb';

const list = document.querySelector('#notes');

try {
  const db = await open('notes');
  await db.live({ collection: 'notes', sort: ['title'] }, (rows) => {
    list.replaceChildren(
      ...rows.map((r) => {
        const li = document.createElement('li');
        li.textContent = r.value.title;
        return li;
      }),
    );
  });
  window.db = db;
  document.body.dataset.ready = '1';
} catch (e) {
  document.body.dataset.error = `${e.name}: ${e.message}`;
  document.body.dataset.kind = e.kind ?? '';
  document.body.dataset.ready = '0';
}
