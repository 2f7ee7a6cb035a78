// The React test page's module: puts React, react-dom and ibexdb(/react) on `window.t` for the
// spec, with a counter of the database's live queries (opened through the API, closed, still
// open in the page's bookkeeping) so a test can prove no subscription leaks.
import * as React from 'react';
import * as ReactDOM from 'react-dom/client';
import * as ibexdb from 'ibexdb';
import * as hooks from 'ibexdb/react';

/**
 * Count a database's live queries: `opened` (db.live calls that resolved), `closed`, `pending`.
 * @param {any} db
 */
function countLive(db) {
  const counts = { calls: 0, opened: 0, closed: 0, pending: 0 };
  const live = db.live.bind(db);
  db.live = (q, onChange) => {
    counts.calls++;
    counts.pending++;
    return live(q, onChange).then(
      (lq) => {
        counts.pending--;
        counts.opened++;
        const close = lq.close.bind(lq);
        lq.close = () => {
          if (!lq.closed) counts.closed++;
          close();
        };
        return lq;
      },
      (e) => {
        counts.pending--;
        throw e;
      },
    );
  };
  // Open in the page's bookkeeping (the ids the worker has live queries for).
  Object.defineProperty(counts, 'registered', { get: () => db._live.size, enumerable: true });
  return counts;
}

window.t = { React, ReactDOM, ibexdb, hooks, countLive, h: React.createElement };
document.body.dataset.ready = '1';
