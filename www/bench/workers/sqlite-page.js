// The lean SQLite worker of the [page] rows, as a competent app would write it: a message comes in,
// the prepared statement runs, the reply goes out (no benchmark harness, no promise queue). The
// page client (page/clients.js SqlitePageClient) sends the calls of one tick as one message; a
// message with several writes runs in one transaction, each write in its own savepoint (a failing
// write fails alone, as separate transactions would), durable once at COMMIT: the same work as
// ibexdb's group commit of one batch.

import { loadSqlite, openItems, sqliteConfig } from './sqlite-db.js';

/** @type {import('./sqlite-db.js').Items} */
let items;
/** @type {any} */
let pool;

const WRITES = new Set(['put', 'update', 'putMany']);

/** @param {string} op @param {any} a @param {boolean} inTxn whether a transaction is open */
function apply(op, a, inTxn) {
  switch (op) {
    case 'get': return items.get(a.id);
    case 'queryRange': return items.queryRange(a.lo, a.hi);
    case 'count': return items.count();
    case 'put': return items.put(a.item);
    case 'update': return items.update(a.id, a.fields);
    case 'putMany':
      if (!inTxn) return items.putMany(a.items);
      if (items.best) return items.insertJson(a.items);
      for (const it of a.items) items.put(it);
      return undefined;
    default: throw new Error(`unknown op ${op}`);
  }
}

/** @param {unknown} e */
const wire = (e) => (e instanceof Error ? { name: e.name, message: e.message } : { name: 'Error', message: String(e) });

/** @param {[number, string, any][]} ops */
function runBatch(ops) {
  const results = [];
  const group = ops.filter((o) => WRITES.has(o[1])).length > 1;
  if (!group) {
    for (const [seq, op, a] of ops) {
      try {
        results.push([seq, 1, apply(op, a, false)]);
      } catch (e) {
        results.push([seq, 0, wire(e)]);
      }
    }
    return results;
  }
  const db = items.db;
  db.exec('BEGIN');
  try {
    for (const [seq, op, a] of ops) {
      if (!WRITES.has(op)) {
        try {
          results.push([seq, 1, apply(op, a, true)]);
        } catch (e) {
          results.push([seq, 0, wire(e)]);
        }
        continue;
      }
      db.exec('SAVEPOINT w');
      try {
        results.push([seq, 1, apply(op, a, true)]);
        db.exec('RELEASE w');
      } catch (e) {
        db.exec('ROLLBACK TO w');
        db.exec('RELEASE w');
        results.push([seq, 0, wire(e)]);
      }
    }
    db.exec('COMMIT');
  } catch (e) {
    db.exec('ROLLBACK');
    // Not durable: none of the writes is acknowledged.
    return ops.map(([seq]) => [seq, 0, wire(e)]);
  }
  return results;
}

self.onmessage = async (e) => {
  const m = e.data;
  if (m.type === 'batch') {
    self.postMessage({ type: 'batch', results: runBatch(m.ops) });
    return;
  }
  try {
    if (m.type === 'open') {
      const cfg = sqliteConfig({ ...m.config, engine: m.engine });
      ({ pool } = await loadSqlite(m.engine));
      items = await openItems(pool, cfg);
    } else if (m.type === 'close') {
      items.effective(); // a preset pragma that did not apply fails the row (checked after the timed calls)
      items.close();
      pool.pauseVfs();
    } else if (m.type === 'wipe') {
      items.close();
      await pool.wipeFiles();
      items = await openItems(pool, items.cfg);
    }
    self.postMessage({ seq: m.seq });
  } catch (err) {
    self.postMessage({ seq: m.seq, error: wire(err) });
  }
};
