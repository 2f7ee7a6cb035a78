// SQLite engine for the benchmark: @sqlite.org/sqlite-wasm (pinned in package.json) on the
// `opfs-sahpool` VFS, in this dedicated module worker. One worker per engine id; the page passes
// the configuration in the init message (see www/bench/page/engines.js):
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
//
// Relational workloads (go-sqlite-bench): its schema exactly (users, articles, comments; indexes on
// created, articles.userId, comments.articleId), created by rel.setup() in a fresh database; the
// queries are its SQL: ORDER BY id, and LEFT JOINs ordered by created at each level. Differences:
// journal_mode/synchronous follow the engine preset (go-sqlite-bench: DELETE + FULL), and
// foreign_keys stays off (SQLite's default): ibexdb does no referential checks either.

import { serve } from './harness.js';
import { opfsUsage } from './opfs-usage.js';

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
let rel = null; // relational statements, prepared by rel.setup()
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
  if (rel) for (const s of Object.values(rel)) s.finalize();
  st = null;
  rel = null;
  inList = new Map();
}

const REL_SCHEMA = `
  CREATE TABLE IF NOT EXISTS users (id INTEGER PRIMARY KEY NOT NULL, created INTEGER NOT NULL, email TEXT NOT NULL, active INTEGER NOT NULL);
  CREATE INDEX IF NOT EXISTS users_created ON users(created);
  CREATE TABLE IF NOT EXISTS articles (id INTEGER PRIMARY KEY NOT NULL, created INTEGER NOT NULL, userId INTEGER NOT NULL REFERENCES users(id), text TEXT NOT NULL);
  CREATE INDEX IF NOT EXISTS articles_created ON articles(created);
  CREATE INDEX IF NOT EXISTS articles_userId ON articles(userId);
  CREATE TABLE IF NOT EXISTS comments (id INTEGER PRIMARY KEY NOT NULL, created INTEGER NOT NULL, articleId INTEGER NOT NULL REFERENCES articles(id), text TEXT NOT NULL);
  CREATE INDEX IF NOT EXISTS comments_created ON comments(created);
  CREATE INDEX IF NOT EXISTS comments_articleId ON comments(articleId);
`;
const JOIN = `SELECT users.id, users.created, users.email, users.active,
    articles.id, articles.created, articles.userId, articles.text,
    comments.id, comments.created, comments.articleId, comments.text
  FROM users
  LEFT JOIN articles ON articles.userId = users.id
  LEFT JOIN comments ON comments.articleId = articles.id`;
const REL_SQL = {
  users: 'INSERT INTO users(id, created, email, active) VALUES (?, ?, ?, ?)',
  articles: 'INSERT INTO articles(id, created, userId, text) VALUES (?, ?, ?, ?)',
  comments: 'INSERT INTO comments(id, created, articleId, text) VALUES (?, ?, ?, ?)',
  allUsers: 'SELECT id, created, email, active FROM users ORDER BY id',
  userTree: `${JOIN} WHERE users.email = ? ORDER BY users.created, articles.created, comments.created`,
  allJoined: `${JOIN} ORDER BY users.created, articles.created, comments.created`,
};
const relBind = {
  users: (u) => [u.id, u.created, u.email, u.active ? 1 : 0],
  articles: (a) => [a.id, a.created, a.userId, a.text],
  comments: (c) => [c.id, c.created, c.articleId, c.text],
};

/** Step a join statement into distinct users, articles, comments (as go-sqlite-bench does). */
function collectJoined(s) {
  const users = [];
  const articles = [];
  const comments = [];
  let lastU = null;
  let lastA = null;
  try {
    while (s.step()) {
      const uid = s.getInt(0);
      if (uid !== lastU) {
        users.push({ id: uid, created: s.getInt(1), email: s.getString(2), active: s.getInt(3) !== 0 });
        lastU = uid;
      }
      if (s.get(4) !== null) {
        const aid = s.getInt(4);
        if (aid !== lastA) {
          articles.push({ id: aid, created: s.getInt(5), userId: s.getInt(6), text: s.getString(7) });
          lastA = aid;
        }
        if (s.get(8) !== null) comments.push({ id: s.getInt(8), created: s.getInt(9), articleId: s.getInt(10), text: s.getString(11) });
      }
    }
  } finally {
    s.reset();
  }
  return { users, articles, comments };
}

/** Run `f` in one transaction (BEGIN … COMMIT; ROLLBACK on error). */
function inTransaction(f) {
  db.exec('BEGIN');
  try {
    f();
    db.exec('COMMIT');
  } catch (err) {
    db.exec('ROLLBACK');
    throw err;
  }
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
    Object.assign(s, await opfsUsage(async () => (await navigator.storage.getDirectory()).getDirectoryHandle(poolDir)));
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

  supports(row) {
    if (row === 'seal-batch') return 'not applicable: SQLite does not sign its writes';
    return true;
  },

  /** What SQLite does on each row (shown in the report next to the row). */
  get rowNotes() {
    const sync = `synchronous=${cfg.synchronous}${cfg.synchronous === 'OFF' ? ' (no flush)' : ' (flush at commit)'}, ${cfg.preset === 'tuned' ? 'WAL' : 'rollback journal'}`;
    return {
      'open-n': 'opens the file; pages are read on demand (nothing loaded up front)',
      'read-by-id': 'prepared SELECT by primary key',
      'complex-query': 'walks items_count backwards; json_each + GLOB per row until 100 match',
      count: 'count(*) over the smallest index',
      aggregate: 'one pass over the items_count index',
      keys: 'SELECT id ORDER BY id (primary key index)',
      'bulk-load': `transactions of 1,000 rows, ${sync}`,
      'create-item': sync,
      'update-item': sync,
      'bulk-create-100': `one transaction, ${sync}`,
      'writes-single': sync,
      'writes-batched': `one transaction per 100 rows, ${sync}`,
      verify: 'PRAGMA integrity_check: b-tree and index consistency of the file (no hashes, no signatures, no history)',
    };
  },

  // PRAGMA integrity_check is SQLite's nearest equivalent of ibexdb's verify(): b-tree and index
  // consistency of the database file. Not the same work (no hashes, signatures or history).
  verifySetup({ items }) {
    for (let i = 0; i < items.length; i += 1000) this.putMany(items.slice(i, i + 1000));
    return { commits: undefined, note: `${items.length.toLocaleString('en-US')} rows inserted in transactions of 1,000 (untimed; integrity_check depends on the file, not on how it was written), then PRAGMA integrity_check` };
  },
  verify() {
    const result = db.selectValue('PRAGMA integrity_check');
    return { ok: result === 'ok', result };
  },

  rel: {
    note: 'SQLite: go-sqlite-bench schema and SQL (LEFT JOINs), statements prepared once',
    setup() {
      db.exec(REL_SCHEMA);
      rel = Object.fromEntries(Object.entries(REL_SQL).map(([k, sql]) => [k, db.prepare(sql)]));
    },
    insert(table, rows) {
      const s = rel[table];
      const b = relBind[table];
      inTransaction(() => {
        for (const r of rows) s.bind(b(r)).stepReset();
      });
      return { commits: 1 };
    },
    insertUserTree(user, articles, comments) {
      inTransaction(() => {
        rel.users.bind(relBind.users(user)).stepReset();
        for (const a of articles) rel.articles.bind(relBind.articles(a)).stepReset();
        for (const c of comments) rel.comments.bind(relBind.comments(c)).stepReset();
      });
    },
    allUsers() {
      const s = rel.allUsers;
      const out = [];
      try {
        while (s.step()) out.push({ id: s.getInt(0), created: s.getInt(1), email: s.getString(2), active: s.getInt(3) !== 0 });
      } finally {
        s.reset();
      }
      return out;
    },
    userTree(email) {
      rel.userTree.bind([email]);
      return collectJoined(rel.userTree);
    },
    allJoined() {
      return collectJoined(rel.allJoined);
    },
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
