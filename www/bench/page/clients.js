// How the page reaches an engine for the rows it times itself ([page] rows): SQLite through op
// messages to its benchmark worker, ibexdb through its public API, the way an app does.

import { itemId, makeItem, updatedFields } from '../shared/model.js';
import { ITEMS_SCHEMA, ibexValue, repoName } from '../shared/ibexdb.js';

/** The public module, where apps import it (www/ibexdb.js). */
const PUBLIC_MODULE = new URL('../../ibexdb.js', import.meta.url).href;

/**
 * ibexdb as an app uses it: the public page API (www/ibexdb.js). open() starts its own worker
 * (www/lib/worker.js) that owns the OPFS files; calls made in one tick travel as one message. The
 * benchmark worker must have released the files first ('release' message).
 */
export class IbexPageClient {
  static async open(engine) {
    const { open } = await import(PUBLIC_MODULE);
    const db = await open(repoName(engine.id), {
      durability: engine.config.durability,
      trusted: !!engine.config.trusted,
      schemas: { items: ITEMS_SCHEMA },
      onError: (e) => console.error(`[bench] ${engine.id} page API background error: ${e.name}: ${e.message}`),
    });
    return new IbexPageClient(db);
  }

  constructor(db) {
    this.db = db;
  }

  op({ op, args }) {
    const db = this.db;
    switch (op) {
      case 'get': return db.get(`items/${args.id}`);
      case 'queryRange': return db.query({ collection: 'items', where: { count: { gte: args.lo, lt: args.hi } }, sort: ['count'] });
      case 'put': return db.put(`items/${args.item.id}`, ibexValue(args.item));
      case 'update': return db.update(`items/${args.id}`, ibexValue(args.fields));
      case 'putMany': return db.transaction((tx) => { for (const it of args.items) tx.put(`items/${it.id}`, ibexValue(it)); });
      // Issued in one tick: the page API sends them as one batch, the worker group-commits them.
      case 'putConcurrent': return Promise.all(args.items.map((it) => db.put(`items/${it.id}`, ibexValue(it))));
      default: throw new Error(`IbexPageClient: unknown op ${op}`);
    }
  }

  close() {
    return this.db.close();
  }
}

/** SQLite (and any worker-protocol engine): one op message per awaited call. */
export function workerOp(w, { op, args }) {
  if (op === 'putConcurrent') {
    // 100 messages posted at once; the worker handles them one at a time, each its own transaction.
    return Promise.all(args.items.map((item) => w.call({ type: 'op', op: 'put', args: { item } })));
  }
  return w.call({ type: 'op', op, args });
}

/** Page-side operation generators per row: each returns an op descriptor {op, args, per?}. */
export function pageOpMakers(n, pageRng, nextNew, plan) {
  const batch = plan.rows['writes-batched']?.pageBatch ?? 100;
  return {
    'read-by-id': () => ({ op: 'get', args: { id: itemId(pageRng.int(n)) } }),
    'simple-query': () => { const lo = pageRng.int(Math.max(1, n - 1000 + 1)); return { op: 'queryRange', args: { lo, hi: lo + 1000 } }; },
    'create-item': () => { const i = nextNew(); return { op: 'put', args: { item: { ...makeItem(i), id: `page-item-${i}` } } }; },
    'update-item': () => { const i = pageRng.int(n); return { op: 'update', args: { id: itemId(i), fields: updatedFields(i, 1_000_000 + nextNew()) } }; },
    'bulk-create-100': () => ({ op: 'putMany', args: { items: Array.from({ length: 100 }, () => { const i = nextNew(); return { ...makeItem(i), id: `page-item-${i}` }; }) } }),
    'writes-batched': () => ({ op: 'putConcurrent', per: batch, args: { items: Array.from({ length: batch }, () => { const i = nextNew(); return { ...makeItem(i), id: `page-item-${i}` }; }) } }),
  };
}
