// The counter of a database's live queries the framework binding pages (react/page.js,
// vue/page.js) give their specs, so a test can prove no subscription leaks.

/**
 * Count a database's live queries: `opened` (db.live calls that resolved), `closed`, `pending`.
 * @param {any} db
 */
export function countLive(db) {
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
