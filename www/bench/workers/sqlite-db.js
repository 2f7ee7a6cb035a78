// SQLite as the benchmark uses it, shared by the benchmark worker (workers/sqlite.js) and the lean
// page worker (workers/sqlite-page.js): @sqlite.org/sqlite-wasm (pinned in package.json) on the
// `opfs-sahpool` VFS, the presets, the `items` schema and its prepared statements.
//
//   preset 'default' : the build's defaults (rollback journal, 8 KiB pages, normal locking), synchronous=FULL
//   preset 'tuned'   : locking_mode=EXCLUSIVE, page_size=16384, journal_mode=WAL, cache_size=-65536
//   preset 'best'    : the best SQLite a tuned app would write (issue 24): locking_mode=EXCLUSIVE,
//                      page_size=4096 (a one-row commit writes 4 KiB pages, not 16 KiB ones),
//                      journal_mode=WAL, cache_size=-65536; `items` a WITHOUT ROWID table keyed by
//                      the text id (two B-trees, not three); bulk reads as one
//                      json_group_array(json_object(…)) and one JSON.parse; bulk inserts as one
//                      INSERT … SELECT … FROM json_each(?); the complex query's tag test with instr
//                      on the JSON text instead of a json_each per row
//   synchronous      : 'FULL' (durable rows) or 'OFF' (relaxed rows)
//
// Data model, done the idiomatic SQLite way:
//   items(id TEXT PRIMARY KEY, title TEXT, count INTEGER, tags TEXT)  -- tags: JSON array of strings
//   CREATE INDEX items_count ON items(count)                          -- ibexdb declares the same index
// "tags contains X" is `EXISTS (SELECT 1 FROM json_each(tags) WHERE value = X)`: the set lives with
// its row (no join table to keep in sync on every write) and the planner walks items_count backwards
// for `ORDER BY count DESC LIMIT 100`, testing the JSON predicate per row until 100 rows matched.
// All statements are prepared once per open and reused, as an app would.

export const SQLITE_MODULE = '/node_modules/@sqlite.org/sqlite-wasm/dist/index.mjs';
export const DB_FILE = '/bench.sqlite3';

const PRESETS = {
  default: [],
  // Order matters: EXCLUSIVE locking must precede WAL on opfs-sahpool (it has no shared memory, so
  // WAL keeps its index in heap memory, which SQLite only allows in exclusive mode), and page_size
  // must be set before the first table is created (it cannot change once a database is in WAL mode).
  tuned: [['locking_mode', 'EXCLUSIVE'], ['page_size', 16384], ['journal_mode', 'WAL'], ['cache_size', -65536]],
  best: [['locking_mode', 'EXCLUSIVE'], ['page_size', 4096], ['journal_mode', 'WAL'], ['cache_size', -65536]],
};

/** What each preset must read back after open (effective()). */
const WANT = {
  default: {},
  tuned: { journal_mode: 'wal', locking_mode: 'exclusive', page_size: 16384, cache_size: -65536, items_without_rowid: false },
  best: { journal_mode: 'wal', locking_mode: 'exclusive', page_size: 4096, cache_size: -65536, items_without_rowid: true },
};

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS items(id TEXT PRIMARY KEY, title TEXT, count INTEGER, tags TEXT);
  CREATE INDEX IF NOT EXISTS items_count ON items(count);
`;

const SCHEMA_BEST = `
  CREATE TABLE IF NOT EXISTS items(id TEXT PRIMARY KEY, title TEXT, count INTEGER, tags TEXT) WITHOUT ROWID;
  CREATE INDEX IF NOT EXISTS items_count ON items(count);
`;

const COLS = 'id, title, count, tags';
/** One item as a JSON object (tags: the stored JSON array, embedded as JSON). */
const JSON_ITEM = "json_object('id', id, 'title', title, 'count', count, 'tags', json(tags))";
/** The rows of `from` (a subquery: its order is kept) as one JSON array of items: one parse on the JS side. @param {string} from */
const jsonItems = (from) => `SELECT json_group_array(${JSON_ITEM}) FROM (${from})`;
export const SQL = {
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
  // Every row read (no index on title): what a full scan leaves in the page cache.
  scanAll: "SELECT count(*) FROM items WHERE title LIKE 'Item %'",
  keys: 'SELECT id FROM items ORDER BY id',
  aggregate: 'SELECT sum(count), min(count), max(count), avg(count) FROM items',
};

/** The 'best' preset's statements, in place of SQL's of the same key (`jsonRows`: one JSON text to parse). */
export const SQL_BEST = {
  ...SQL,
  all: jsonItems(`SELECT ${COLS} FROM items`),
  range: jsonItems(`SELECT ${COLS} FROM items WHERE count >= ? AND count < ? ORDER BY count`),
  // The tag bound as its JSON text ("category 3" with its quotes): instr finds it in the stored
  // array exactly (a longer tag such as "category 33" has no closing quote after the 3).
  complex: jsonItems(`SELECT ${COLS} FROM items WHERE instr(tags, ?) > 0 AND title GLOB '*[0-9]*' ORDER BY count DESC LIMIT ?`),
  getMany: jsonItems(`SELECT ${COLS} FROM items WHERE id IN (SELECT value FROM json_each(?))`),
  keys: 'SELECT json_group_array(id) FROM (SELECT id FROM items ORDER BY id)',
  putMany: `INSERT INTO items(id, title, count, tags)
            SELECT json_extract(value, '$.id'), json_extract(value, '$.title'), json_extract(value, '$.count'), json_extract(value, '$.tags') FROM json_each(?)`,
};

/**
 * Check a configuration from page/engines.js.
 * @param {Record<string, any>} config
 */
export function sqliteConfig(config) {
  const cfg = { preset: 'default', synchronous: 'FULL', ...config };
  if (!PRESETS[cfg.preset]) throw new Error(`sqlite-worker: unknown preset "${cfg.preset}"`);
  if (!['FULL', 'OFF', 'NORMAL', 'EXTRA'].includes(cfg.synchronous)) throw new Error(`sqlite-worker: bad synchronous "${cfg.synchronous}"`);
  return cfg;
}

/**
 * Load the library and install the engine's sahpool VFS (one VFS name and OPFS directory per
 * engine id, so configurations never share files or locks). Returns the times of each step.
 * @param {string} engineId
 */
export async function loadSqlite(engineId) {
  const t0 = performance.now();
  // Only opfs-sahpool is used: keep the library from also bringing up its other OPFS VFSes, which
  // would start an extra async-proxy worker during init (what an app using sahpool does too).
  /** @type {any} */ (globalThis).sqlite3ApiConfig = { disable: { vfs: { opfs: true, 'opfs-wl': true } } };
  const { default: sqlite3InitModule } = await import(SQLITE_MODULE);
  const t1 = performance.now();
  const sqlite3 = await sqlite3InitModule();
  const t2 = performance.now();
  const poolDir = `.bench-${engineId}`;
  const pool = await sqlite3.installOpfsSAHPoolVfs({ name: `sahpool-${engineId}`, directory: poolDir, initialCapacity: 6 });
  const t3 = performance.now();
  return { sqlite3, pool, poolDir, ms: { import: t1 - t0, instantiate: t2 - t1, storage: t3 - t2 } };
}

/**
 * Open the database with the preset, create the schema if absent, prepare the statements.
 * @param {any} pool @param {{preset: string, synchronous: string}} cfg
 * @returns {Promise<Items>}
 */
export async function openItems(pool, cfg) {
  if (pool.isPaused()) await pool.unpauseVfs();
  const db = new pool.OpfsSAHPoolDb(DB_FILE);
  for (const [k, v] of PRESETS[cfg.preset]) db.exec(`PRAGMA ${k}=${v}`);
  db.exec(`PRAGMA synchronous=${cfg.synchronous}`);
  db.exec(cfg.preset === 'best' ? SCHEMA_BEST : SCHEMA);
  return new Items(db, cfg);
}

/** Read one item row (columns id, title, count, tags) from a stepped statement. @param {any} s */
function rowToItem(s) {
  return { id: s.getString(0), title: s.getString(1), count: s.getInt(2), tags: JSON.parse(s.getString(3)) };
}

/** The integer in the first column of the one row a prepared statement returns (reset after). @param {any} s */
function oneInt(s) {
  try {
    s.step();
    return s.getInt(0);
  } finally {
    s.reset();
  }
}

/**
 * Step a (bound) statement to completion, mapping each row with `f`; always resets it.
 * @template T
 * @param {any} s @param {(s: any) => T} f @returns {T[]}
 */
export function rowsOf(s, f) {
  const out = [];
  try {
    while (s.step()) out.push(f(s));
  } finally {
    s.reset();
  }
  return out;
}

/** Step a statement to completion collecting items; always resets it. @param {any} s */
export const collect = (s) => rowsOf(s, rowToItem);

/** The `items` table of an open database: its prepared statements and the operations on it. */
export class Items {
  /** @param {any} db @param {{preset: string, synchronous: string}} cfg */
  constructor(db, cfg) {
    this.db = db;
    this.cfg = cfg;
    /** whether this is the 'best' preset: JSON bulk reads and inserts, instr (SQL_BEST) */
    this.best = cfg.preset === 'best';
    /** @type {Record<string, string>} the SQL of each statement */
    this.sql = this.best ? SQL_BEST : SQL;
    /** @type {Record<string, any>} prepared statements, by SQL key */
    this.st = Object.fromEntries(Object.entries(this.sql).map(([k, sql]) => [k, db.prepare(sql)]));
    /** "WHERE id IN (?,...)" statements by arity */
    this.inList = new Map();
  }

  /** @param {string} name */
  pragma(name) {
    return this.db.selectValue(`PRAGMA ${name}`);
  }

  /** The settings as SQLite reports them; throws when a preset's pragma did not apply. */
  effective() {
    const syncNames = ['OFF', 'NORMAL', 'FULL', 'EXTRA'];
    const eff = {
      journal_mode: this.pragma('journal_mode'),
      locking_mode: this.pragma('locking_mode'),
      page_size: this.pragma('page_size'),
      cache_size: this.pragma('cache_size'),
      synchronous: syncNames[this.pragma('synchronous')] ?? String(this.pragma('synchronous')),
      // The items table as created (the best preset's is WITHOUT ROWID).
      items_without_rowid: /WITHOUT ROWID/i.test(String(this.db.selectValue("SELECT sql FROM sqlite_schema WHERE name = 'items'"))),
    };
    /** @type {Record<string, unknown>} */
    const want = { synchronous: this.cfg.synchronous, ...WANT[this.cfg.preset] };
    for (const [k, v] of Object.entries(want)) {
      if (/** @type {any} */ (eff)[k] !== v) throw new Error(`sqlite-worker: ${k} is ${/** @type {any} */ (eff)[k]}, expected ${v} (preset ${this.cfg.preset})`);
    }
    return eff;
  }

  /** What close would do with the writes so far: in WAL mode, checkpoint the WAL into the database. */
  checkpoint() {
    if (this.cfg.preset !== 'default') this.db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  }

  close() {
    for (const s of Object.values(this.st)) s.finalize();
    for (const s of this.inList.values()) s.finalize();
    this.inList = new Map();
    this.db.close();
  }

  /** Run `f` in one transaction (BEGIN … COMMIT; ROLLBACK on error). @param {() => void} f */
  inTransaction(f) {
    this.db.exec('BEGIN');
    try {
      f();
      this.db.exec('COMMIT');
    } catch (err) {
      this.db.exec('ROLLBACK');
      throw err;
    }
  }

  /** @param {string} id */
  get(id) {
    const s = this.st.get;
    try {
      s.bind(1, id);
      if (!s.step()) return undefined;
      return { id, title: s.getString(0), count: s.getInt(1), tags: JSON.parse(s.getString(2)) };
    } finally {
      s.reset();
    }
  }

  /** The one JSON text a 'best' statement returns, parsed (always resets it). @param {any} s */
  json(s) {
    try {
      s.step();
      return JSON.parse(s.getString(0));
    } finally {
      s.reset();
    }
  }

  /** @param {string[]} ids */
  getMany(ids) {
    if (this.best) return this.json(this.st.getMany.bind([JSON.stringify(ids)]));
    let s = this.inList.get(ids.length);
    if (!s) {
      s = this.db.prepare(`SELECT ${COLS} FROM items WHERE id IN (${ids.map(() => '?').join(',')})`);
      this.inList.set(ids.length, s);
    }
    s.bind(ids);
    return collect(s);
  }

  /** @param {{id: string, title: string, count: number, tags: string[]}} item */
  put(item) {
    const s = this.st.put;
    try {
      s.bind([item.id, item.title, item.count, JSON.stringify(item.tags)]).stepReset();
    } finally {
      s.reset();
    }
  }

  /** @param {string} id @param {{title: string, count: number, tags: string[]}} f */
  update(id, f) {
    const s = this.st.update;
    try {
      s.bind([f.title, f.count, JSON.stringify(f.tags), id]).stepReset();
    } finally {
      s.reset();
    }
  }

  /**
   * 'best': the items as one statement (INSERT … SELECT … FROM json_each(?)), inside the caller's
   * transaction or as one of its own (one statement is one transaction).
   * @param {{id: string, title: string, count: number, tags: string[]}[]} items
   */
  insertJson(items) {
    const s = this.st.putMany;
    try {
      s.bind([JSON.stringify(items)]).stepReset();
    } finally {
      s.reset();
    }
  }

  /** One transaction. @param {{id: string, title: string, count: number, tags: string[]}[]} items */
  putMany(items) {
    if (this.best) return this.insertJson(items);
    const s = this.st.put;
    try {
      this.inTransaction(() => {
        for (const it of items) s.bind([it.id, it.title, it.count, JSON.stringify(it.tags)]).stepReset();
      });
    } finally {
      s.reset();
    }
  }

  all() {
    return this.best ? this.json(this.st.all) : collect(this.st.all);
  }

  /** @param {number} lo @param {number} hi */
  queryRange(lo, hi) {
    this.st.range.bind([lo, hi]);
    return this.best ? this.json(this.st.range) : collect(this.st.range);
  }

  /** @param {{tag: string, limit: number}} q */
  queryComplex({ tag, limit }) {
    if (this.best) return this.json(this.st.complex.bind([JSON.stringify(tag), limit]));
    this.st.complex.bind([tag, limit]);
    return collect(this.st.complex);
  }

  /** Read every row once (a scan with a filter on an unindexed column); how many matched. */
  scanAll() {
    return oneInt(this.st.scanAll);
  }

  count() {
    return oneInt(this.st.count);
  }

  keys() {
    if (this.best) return this.json(this.st.keys);
    const s = this.st.keys;
    const out = [];
    try {
      while (s.step()) out.push(s.getString(0));
    } finally {
      s.reset();
    }
    return out;
  }

  aggregate() {
    const s = this.st.aggregate;
    try {
      s.step();
      // get() returns a Number for 64-bit integers within the safe range (sum of 100k counts > 2^31).
      return { sum: s.get(0), min: s.get(1), max: s.get(2), avg: s.get(3) };
    } finally {
      s.reset();
    }
  }
}
