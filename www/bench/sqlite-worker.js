// SQLite engine for the benchmark: @sqlite.org/sqlite-wasm (pinned in package.json) on the
// `opfs-sahpool` VFS, in this dedicated module worker. One worker per engine id; the page passes
// the configuration in the init message (see www/bench/engines.js):
//
//   preset 'default' : the build's defaults (rollback journal, 8 KiB pages, normal locking), synchronous=FULL
//   preset 'tuned'   : locking_mode=EXCLUSIVE, page_size=16384, journal_mode=WAL, cache_size=-65536
//   synchronous      : 'FULL' (durable rows) or 'OFF' (relaxed rows)
//
// Data model, done the idiomatic SQLite way:
//   items(id TEXT PRIMARY KEY, title TEXT, count INTEGER, tags TEXT)  -- tags: JSON array of strings
//   CREATE INDEX items_count ON items(count)                          -- ibexdb declares the same index
// "tags contains X" is `EXISTS (SELECT 1 FROM json_each(tags) WHERE value = X)`: the set lives with
// its row (no join table to keep in sync on every write) and the planner walks items_count backwards
// for `ORDER BY count DESC LIMIT 100`, testing the JSON predicate per row until 100 rows matched.
// All statements are prepared once per open and reused, as an app would.

import { serve } from './harness.js';

const SQLITE_MODULE = '/node_modules/@sqlite.org/sqlite-wasm/dist/index.mjs';
const DB_FILE = '/bench.sqlite3';

const PRESETS = {
  default: [],
  // Order matters: EXCLUSIVE locking must precede WAL on opfs-sahpool (it has no shared memory, so
  // WAL keeps its index in heap memory, which SQLite only allows in exclusive mode), and page_size
  // must be set before the first table is created (it cannot change once a database is in WAL mode).
  tuned: [['locking_mode', 'EXCLUSIVE'], ['page_size', 16384], ['journal_mode', 'WAL'], ['cache_size', -65536]],
};

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS items(id TEXT PRIMARY KEY, title TEXT, count INTEGER, tags TEXT);
  CREATE INDEX IF NOT EXISTS items_count ON items(count);
`;

const COLS = 'id, title, count, tags';
const SQL = {
  get: 'SELECT title, count, tags FROM items WHERE id = ?',
  put: 'INSERT INTO items(id, title, count, tags) VALUES (?, ?, ?, ?)',
  update: 'UPDATE items SET title = ?, count = ?, tags = ? WHERE id = ?',
  all: `SELECT ${COLS} FROM items`,
  range: `SELECT ${COLS} FROM items WHERE count >= ? AND count < ? ORDER BY count`,
  complex: `SELECT ${COLS} FROM items
            WHERE EXISTS (SELECT 1 FROM json_each(items.tags) WHERE json_each.value = ?)
              AND title GLOB '*[0-9]*'
            ORDER BY count DESC LIMIT ?`,
  count: 'SELECT count(*) FROM items',
  keys: 'SELECT id FROM items ORDER BY id',
  aggregate: 'SELECT sum(count), min(count), max(count), avg(count) FROM items',
};

let sqlite3 = null;
let pool = null; // opfs-sahpool utility object
let poolDir = '';
let cfg = null;
let db = null;
let st = null; // prepared statements, by SQL key
let inList = new Map(); // "WHERE id IN (?,...)" statements by arity
let effective = null;
let plans = null;
let removed = false;

/** Read one item row (columns id, title, count, tags) from a stepped statement. */
function rowToItem(s) {
  return { id: s.getString(0), title: s.getString(1), count: s.getInt(2), tags: JSON.parse(s.getString(3)) };
}

/** Step a statement to completion collecting items; always resets it. */
function collect(s) {
  const out = [];
  try {
    while (s.step()) out.push(rowToItem(s));
  } finally {
    s.reset();
  }
  return out;
}

function pragma(name) {
  return db.selectValue(`PRAGMA ${name}`);
}

function finalizeAll() {
  if (st) for (const s of Object.values(st)) s.finalize();
  for (const s of inList.values()) s.finalize();
  st = null;
  inList = new Map();
}

serve({
  async init(config) {
    cfg = { preset: 'default', synchronous: 'FULL', ...config };
    if (!PRESETS[cfg.preset]) throw new Error(`sqlite-worker: unknown preset "${cfg.preset}"`);
    if (!['FULL', 'OFF', 'NORMAL', 'EXTRA'].includes(cfg.synchronous)) throw new Error(`sqlite-worker: bad synchronous "${cfg.synchronous}"`);
    const t0 = performance.now();
    // Only opfs-sahpool is used: keep the library from also bringing up its other OPFS VFSes, which
    // would start an extra async-proxy worker during init (what an app using sahpool does too).
    globalThis.sqlite3ApiConfig = { disable: { vfs: { opfs: true, 'opfs-wl': true } } };
    const { default: sqlite3InitModule } = await import(SQLITE_MODULE);
    const t1 = performance.now();
    sqlite3 = await sqlite3InitModule();
    const t2 = performance.now();
    // One VFS name + OPFS directory per engine id, so configurations never share files or locks.
    poolDir = `.bench-${cfg.engine}`;
    pool = await sqlite3.installOpfsSAHPoolVfs({ name: `sahpool-${cfg.engine}`, directory: poolDir, initialCapacity: 6 });
    const t3 = performance.now();
    return { import: t1 - t0, instantiate: t2 - t1, storage: t3 - t2 };
  },

  open() {
    db = new pool.OpfsSAHPoolDb(DB_FILE);
    for (const [k, v] of PRESETS[cfg.preset]) db.exec(`PRAGMA ${k}=${v}`);
    db.exec(`PRAGMA synchronous=${cfg.synchronous}`);
    db.exec(SCHEMA);
    st = Object.fromEntries(Object.entries(SQL).map(([k, sql]) => [k, db.prepare(sql)]));

    // Read the settings back: a pragma that silently did not apply would make the comparison unfair.
    const syncNames = ['OFF', 'NORMAL', 'FULL', 'EXTRA'];
    effective = {
      journal_mode: pragma('journal_mode'),
      locking_mode: pragma('locking_mode'),
      page_size: pragma('page_size'),
      cache_size: pragma('cache_size'),
      synchronous: syncNames[pragma('synchronous')] ?? String(pragma('synchronous')),
    };
    const want = { synchronous: cfg.synchronous };
    if (cfg.preset === 'tuned') Object.assign(want, { journal_mode: 'wal', locking_mode: 'exclusive', page_size: 16384, cache_size: -65536 });
    for (const [k, v] of Object.entries(want)) {
      if (effective[k] !== v) throw new Error(`sqlite-worker: PRAGMA ${k} is ${effective[k]}, expected ${v} (preset ${cfg.preset})`);
    }
    if (!plans) {
      // Record how SQLite runs the query rows (column 3 of EXPLAIN QUERY PLAN is the detail text).
      const binds = { get: ['x'], range: [0, 1], complex: ['category 3', 100], count: undefined, keys: undefined };
      plans = {};
      for (const [k, bind] of Object.entries(binds)) {
        plans[k] = db.selectArrays(`EXPLAIN QUERY PLAN ${SQL[k]}`, bind).map((r) => r[3]).join('; ');
      }
    }
  },

  close() {
    finalizeAll();
    if (db) db.close();
    db = null;
  },

  async reset({ final }) {
    if (final) {
      // Deletes the VFS's OPFS directory; this worker cannot use the VFS afterwards.
      await pool.removeVfs();
      removed = true;
    } else {
      await pool.wipeFiles();
    }
  },

  shutdown() {
    // Give the OPFS access handles back before the page terminates this worker, so the next
    // worker for the same engine can take them immediately.
    if (pool && !removed && !pool.isPaused()) pool.pauseVfs();
  },

  async stats() {
    const s = {
      dbBytes: db ? pragma('page_count') * pragma('page_size') : null,
      wasmMemoryBytes: sqlite3.wasm.memory?.buffer.byteLength ?? sqlite3.wasm.heap8u().byteLength,
    };
    // OPFS footprint of this engine: every file under its pool directory, recursively (database,
    // journal/WAL and the pool's preallocated slot files, each with a 4 KiB header).
    try {
      const root = await navigator.storage.getDirectory();
      const walk = async (dir) => {
        let bytes = 0;
        let files = 0;
        for await (const h of dir.values()) {
          if (h.kind === 'directory') {
            const sub = await walk(h);
            bytes += sub.bytes;
            files += sub.files;
          } else {
            bytes += (await h.getFile()).size;
            files++;
          }
        }
        return { bytes, files };
      };
      const { bytes, files } = await walk(await root.getDirectoryHandle(poolDir));
      s.opfsBytes = bytes;
      s.opfsFiles = files;
    } catch (err) {
      s.opfsBytes = null;
      s.opfsError = `${err.name}: ${err.message}`;
    }
    return s;
  },

  info() {
    return {
      engine: 'sqlite-wasm',
      version: sqlite3.version.libVersion,
      sourceId: sqlite3.version.sourceId,
      vfs: 'opfs-sahpool',
      preset: cfg.preset,
      effective,
      queryPlans: plans,
      notes: 'tags as a JSON array column, set membership via json_each; statements prepared once per open',
    };
  },

  get(id) {
    const s = st.get;
    try {
      s.bind(1, id);
      if (!s.step()) return undefined;
      return { id, title: s.getString(0), count: s.getInt(1), tags: JSON.parse(s.getString(2)) };
    } finally {
      s.reset();
    }
  },

  getMany(ids) {
    let s = inList.get(ids.length);
    if (!s) {
      s = db.prepare(`SELECT ${COLS} FROM items WHERE id IN (${ids.map(() => '?').join(',')})`);
      inList.set(ids.length, s);
    }
    s.bind(ids);
    return collect(s);
  },

  put(item) {
    const s = st.put;
    try {
      s.bind([item.id, item.title, item.count, JSON.stringify(item.tags)]).stepReset();
    } finally {
      s.reset();
    }
  },

  update(id, f) {
    const s = st.update;
    try {
      s.bind([f.title, f.count, JSON.stringify(f.tags), id]).stepReset();
    } finally {
      s.reset();
    }
  },

  putMany(items) {
    const s = st.put;
    db.exec('BEGIN');
    try {
      for (const it of items) s.bind([it.id, it.title, it.count, JSON.stringify(it.tags)]).stepReset();
      db.exec('COMMIT');
    } catch (err) {
      s.reset();
      db.exec('ROLLBACK');
      throw err;
    }
  },

  all() {
    return collect(st.all);
  },

  queryRange(lo, hi) {
    st.range.bind([lo, hi]);
    return collect(st.range);
  },

  queryComplex({ tag, limit }) {
    st.complex.bind([tag, limit]);
    return collect(st.complex);
  },

  count() {
    const s = st.count;
    try {
      s.step();
      return s.getInt(0);
    } finally {
      s.reset();
    }
  },

  keys() {
    const s = st.keys;
    const out = [];
    try {
      while (s.step()) out.push(s.getString(0));
    } finally {
      s.reset();
    }
    return out;
  },

  aggregate() {
    const s = st.aggregate;
    try {
      s.step();
      // get() returns a Number for 64-bit integers within the safe range (sum of 100k counts > 2^31).
      return { sum: s.get(0), min: s.get(1), max: s.get(2), avg: s.get(3) };
    } finally {
      s.reset();
    }
  },
});
