// The Vue test page's module: Vue, ibexdb and ibexdb/vue on `window.t`, with the React page's
// counter of live queries (../react/page.js).
import * as Vue from 'vue';
import * as ibexdb from 'ibexdb';
import * as composables from 'ibexdb/vue';

/**
 * Count a database's live queries: `calls`, `opened` (resolved), `closed`, `pending`, and
 * `registered` (open in the page's bookkeeping: the worker's subscriptions).
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
  Object.defineProperty(counts, 'registered', { get: () => db._live.size, enumerable: true });
  return counts;
}

window.t = { Vue, ibexdb, composables, countLive };
document.body.dataset.ready = '1';
