// SQLite engine for the benchmark: @sqlite.org/sqlite-wasm on the `opfs-sahpool` VFS, in this
// dedicated module worker (the presets, the `items` schema and its statements: sqlite-db.js, shared
// with the lean page worker sqlite-page.js). One worker per engine id; the page passes the
// configuration in the init message (see www/bench/page/engines.js).
//
// Relational workloads (go-sqlite-bench): its schema exactly (users, articles, comments; indexes on
// created, articles.userId, comments.articleId), created by rel.setup() in a fresh database; the
// queries are its SQL: ORDER BY id, and LEFT JOINs ordered by created at each level. Differences:
// journal_mode/synchronous follow the engine preset (go-sqlite-bench: DELETE + FULL), and
// foreign_keys stays off (SQLite's default): ibexdb does no referential checks either.
// The 'tuned' variant is what a tuned app would write: composite indexes articles(userId, created)
// and comments(articleId, created) in place of the single-column ones, so that the joins read in
// order without a sort, and per user three prepared queries (the user by email, its articles,
// their comments) instead of one LEFT JOIN, as ibexdb does.

import { serve } from './harness.js';
import { opfsUsage } from './opfs-usage.js';
import { loadSqlite, openItems, rowsOf, sqliteConfig } from './sqlite-db.js';
import { FAT_COLLECTIONS } from '../shared/docs.js';

let sqlite3 = null;
let pool = null; // opfs-sahpool utility object
let poolDir = '';
let cfg = null;
/** @type {import('./sqlite-db.js').Items | null} */
let items = null;
let effective = null;
let rel = null; // relational statements, prepared by rel.setup()
let relVariant = 'standard';
let relPlans = null;
let plans = null;
let removed = false;

function pragma(name) {
  return items.db.selectValue(`PRAGMA ${name}`);
}

/** @type {Map<string, any>} statements of the seed suites (docs), prepared on first use after each open */
let docSt = new Map();

function finalizeRel() {
  if (rel) for (const s of Object.values(rel)) s.finalize();
  rel = null;
  for (const s of docSt.values()) s.finalize();
  docSt = new Map();
}

/** A prepared statement of the seed suites, prepared once per open. @param {string} sql */
function docStmt(sql) {
  let s = docSt.get(sql);
  if (!s) docSt.set(sql, (s = items.db.prepare(sql)));
  return s;
}


// The seed suites' tables (shared/docs.js): DBX `people` (no index on age), and go-persist's five
// tables of fat records (the nested metadata as JSON text, as SQLite apps store documents).
const DOC_TABLES = {
  dbx: { people: 'id INTEGER PRIMARY KEY, name TEXT, age INTEGER, city TEXT' },
  fat: Object.fromEntries(FAT_COLLECTIONS.map((c) => [c, 'id INTEGER PRIMARY KEY, name TEXT, email TEXT, city TEXT, status TEXT, metadata TEXT, payload TEXT'])),
};
const INSERT_SQL = new Map();
/** @param {string} coll */
const insertSql = (coll) => {
  let q = INSERT_SQL.get(coll);
  if (!q) INSERT_SQL.set(coll, (q = `INSERT INTO ${coll}(${docCols(coll)}) VALUES (${docCols(coll).split(',').map(() => '?').join(',')})`));
  return q;
};
const docCols = (coll) => (coll === 'people' ? 'id, name, age, city' : 'id, name, email, city, status, metadata, payload');
const docBind = (r) => (r.coll === undefined ? [r.id, r.name, r.age, r.city] : [r.id, r.name, r.email, r.city, r.status, JSON.stringify(r.metadata), r.payload]);
/** @param {string} coll @returns {(s: any) => any} */
const docRow = (coll) => (coll === 'people'
  ? (s) => ({ id: s.getInt(0), name: s.getString(1), age: s.getInt(2), city: s.getString(3) })
  : (s) => ({ id: s.getInt(0), name: s.getString(1), email: s.getString(2), city: s.getString(3), status: s.getString(4), metadata: JSON.parse(s.getString(5)), payload: s.getString(6) }));

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
/** The tuned variant: composite indexes in place of articles(userId) and comments(articleId). */
const REL_SCHEMA_TUNED = REL_SCHEMA
  .replace('articles_userId ON articles(userId)', 'articles_userId_created ON articles(userId, created)')
  .replace('comments_articleId ON comments(articleId)', 'comments_articleId_created ON comments(articleId, created)');
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
  counts: 'SELECT (SELECT count(*) FROM users), (SELECT count(*) FROM articles), (SELECT count(*) FROM comments)',
  // The tuned variant's per-user queries (userTree): three prepared statements.
  userByEmail: 'SELECT id, created, email, active FROM users WHERE email = ? ORDER BY created',
  articlesOf: 'SELECT id, created, userId, text FROM articles WHERE userId = ? ORDER BY created',
  commentsOf: `SELECT comments.id, comments.created, comments.articleId, comments.text
    FROM articles JOIN comments ON comments.articleId = articles.id
    WHERE articles.userId = ? ORDER BY articles.created, comments.created`,
};
/** A users row (columns id, created, email, active). @param {any} s */
const userRow = (s) => ({ id: s.getInt(0), created: s.getInt(1), email: s.getString(2), active: s.getInt(3) !== 0 });
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

serve({
  async init(config) {
    cfg = sqliteConfig(config);
    const loaded = await loadSqlite(cfg.engine);
    ({ sqlite3, pool, poolDir } = loaded);
    return loaded.ms;
  },

  async open() {
    items = await openItems(pool, cfg);
  },

  /** After an open, untimed: read the settings back (a pragma that did not apply fails the run) and record the query plans. */
  inspect() {
    effective = items.effective();
    if (!plans) {
      // Record how SQLite runs the query rows (column 3 of EXPLAIN QUERY PLAN is the detail text).
      const binds = { get: ['x'], range: [0, 1], complex: ['category 3', 100], count: undefined, keys: undefined };
      plans = {};
      for (const [k, bind] of Object.entries(binds)) {
        plans[k] = items.db.selectArrays(`EXPLAIN QUERY PLAN ${items.sql[k]}`, bind).map((r) => r[3]).join('; ');
      }
    }
  },

  close() {
    finalizeRel();
    if (items) items.close();
    items = null;
  },

  /** Give the pool's OPFS access handles to another worker (the page worker); the next open takes them back. */
  release() {
    if (pool && !removed && !pool.isPaused()) pool.pauseVfs();
  },

  /** The trailing work of a row's writes, as close would do it: checkpoint the WAL (tuned and best presets). */
  settle() {
    items.checkpoint();
  },

  async reset({ final }) {
    if (final) {
      // Deletes the VFS's OPFS directory; this worker cannot use the VFS afterwards.
      await pool.removeVfs();
      removed = true;
    } else {
      if (pool.isPaused()) await pool.unpauseVfs();
      await pool.wipeFiles();
    }
  },

  shutdown() {
    // Give the OPFS access handles back before the page terminates this worker, so the next
    // worker for the same engine can take them immediately.
    if (pool && !removed && !pool.isPaused()) pool.pauseVfs();
  },

  /** The engine's wasm memory now (cheap: the memory's size; the fat load checks it per batch). */
  wasmMemoryBytes() {
    return sqlite3.wasm.memory?.buffer.byteLength ?? sqlite3.wasm.heap8u().byteLength;
  },

  async stats() {
    const s = {
      dbBytes: items ? pragma('page_count') * pragma('page_size') : null,
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
      queryPlans: relPlans ? { ...plans, ...relPlans } : plans,
      notes: 'tags as a JSON array column, set membership via json_each; statements prepared once per open',
    };
  },

  supports(row) {
    if (row === 'seal-batch') return 'not applicable: SQLite does not sign its writes';
    return true;
  },

  /** What SQLite does on each row (shown in the report next to the row). */
  get rowNotes() {
    const wal = cfg.preset !== 'default';
    const best = cfg.preset === 'best';
    const sync = `synchronous=${cfg.synchronous}${cfg.synchronous === 'OFF' ? ' (no flush)' : ' (flush at commit)'}, ${wal ? `WAL, ${best ? '4' : '16'} KiB pages` : 'rollback journal'}${best ? ', WITHOUT ROWID' : ''}`;
    const trailing = wal ? '; trailing WAL checkpoint (TRUNCATE) timed in the last sample' : '';
    const jsonBulk = best ? ' (one INSERT … SELECT … FROM json_each(?) per transaction)' : '';
    const jsonRead = best ? 'one json_group_array(json_object(…)) and one JSON.parse' : '';
    return {
      'open-empty': 'opens the database on the opfs-sahpool VFS, whose files\' sync access handles were acquired when the worker installed the VFS (timed in create instance), not by this open; ibexdb\'s worker keeps its files\' handles from one open to the next the same way',
      'open-n': 'opens the file (its handle held by the VFS since install, as in open empty); pages are read on demand (nothing loaded up front)',
      'open-n-query': 'opens the file; the query reads the items_count index and the rows it needs',
      'read-by-id': 'prepared SELECT by primary key',
      'complex-query': best ? 'walks items_count backwards; instr on the JSON tags + GLOB per row until 100 match; one json_group_array and one JSON.parse' : 'walks items_count backwards; json_each + GLOB per row until 100 match',
      ...(best ? { 'bulk-read-100': `WHERE id IN (SELECT value FROM json_each(?)): ${jsonRead}`, 'read-all': jsonRead, 'simple-query': jsonRead } : {}),
      count: 'count(*): a scan of the smallest index (not the same work as ibexdb\'s maintained size)',
      aggregate: 'one pass over the items_count index (not the same work as ibexdb\'s maintained sum)',
      keys: best ? 'json_group_array(id) ORDER BY id (the WITHOUT ROWID table in key order), one JSON.parse' : 'SELECT id ORDER BY id (primary key index)',
      'bulk-load': `transactions of 1,000 rows${jsonBulk}, ${sync}${trailing}`,
      'bulk-load-txn': `one transaction${jsonBulk}, ${sync}${trailing}`,
      'create-item': sync + trailing,
      'update-item': sync + trailing,
      'bulk-create-100': `one transaction${jsonBulk}, ${sync}${trailing}`,
      'writes-single': sync + trailing,
      'writes-batched': `one transaction per 100 rows${jsonBulk}, ${sync}${trailing}`,
      verify: 'PRAGMA integrity_check: b-tree and index consistency of the file (no hashes, no signatures, no history)',
    };
  },

  // PRAGMA integrity_check is SQLite's nearest equivalent of ibexdb's verify(): b-tree and index
  // consistency of the database file. Not the same work (no hashes, signatures or history).
  verifySetup({ items: list }) {
    for (let i = 0; i < list.length; i += 1000) items.putMany(list.slice(i, i + 1000));
    return { commits: undefined, note: `${list.length.toLocaleString('en-US')} rows inserted in transactions of 1,000 (untimed; integrity_check depends on the file, not on how it was written), then PRAGMA integrity_check` };
  },
  verify() {
    const result = items.db.selectValue('PRAGMA integrity_check');
    return { ok: result === 'ok', result };
  },

  docs: {
    /** @param {'dbx' | 'fat'} kind */
    setup(kind) {
      for (const [t, cols] of Object.entries(DOC_TABLES[kind])) items.db.exec(`CREATE TABLE IF NOT EXISTS ${t}(${cols})`);
    },
    /** One transaction: records `{coll?, id, ...fields}` (`coll` absent: people). */
    insert(recs) {
      items.inTransaction(() => {
        for (const r of recs) docStmt(insertSql(r.coll ?? 'people')).bind(docBind(r)).stepReset();
      });
    },
    get(coll, id) {
      const s = docStmt(`SELECT ${docCols(coll)} FROM ${coll} WHERE id = ?`);
      s.bind([id]);
      return rowsOf(s, docRow(coll))[0];
    },
    getMany(coll, ids) {
      const s = docStmt(`SELECT ${docCols(coll)} FROM ${coll} WHERE id IN (${ids.map(() => '?').join(',')})`);
      s.bind(ids);
      return rowsOf(s, docRow(coll));
    },
    size: (coll) => items.db.selectValue(`SELECT count(*) FROM ${coll}`),
    // Aggregates over a column without an index: SQLite scans the table.
    count: (coll, field) => rowsOf(docStmt(`SELECT count(${field}) FROM ${coll}`), (s) => s.getInt(0))[0],
    sum: (coll, field) => rowsOf(docStmt(`SELECT sum(${field}) FROM ${coll}`), (s) => s.get(0))[0],
    minMax: (coll, field) => rowsOf(docStmt(`SELECT min(${field}), max(${field}) FROM ${coll}`), (s) => ({ min: s.get(0), max: s.get(1) }))[0],
    filterGt(coll, field, x) {
      const s = docStmt(`SELECT ${docCols(coll)} FROM ${coll} WHERE ${field} > ?`);
      s.bind([x]);
      return rowsOf(s, docRow(coll));
    },
  },

  // Full-text search as a tuned app sets up FTS5: an external-content table over `docs` (the text
  // is stored once, in docs), the unicode61 tokenizer folding case and diacritics
  // (remove_diacritics 2), prefix indexes of 2 and 3 characters (the searches' last word is a
  // 3-letter prefix), triggers keeping it current. Search: MATCH 'word pre*' ORDER BY rank
  // (BM25), joined to docs for the titles.
  fts: {
    setup() {
      items.db.exec(`CREATE TABLE IF NOT EXISTS docs(id INTEGER PRIMARY KEY, title TEXT, n INTEGER);
        CREATE VIRTUAL TABLE IF NOT EXISTS docs_fts USING fts5(title, content='docs', content_rowid='id', tokenize='unicode61 remove_diacritics 2', prefix='2 3');`);
    },
    /** One transaction of documents (the index is built afterwards, by build()). */
    insert(docs) {
      const st = docStmt('INSERT INTO docs(id, title, n) VALUES (?, ?, ?)');
      items.inTransaction(() => {
        for (const d of docs) st.bind([d.id, d.title, d.n]).stepReset();
      });
    },
    /** (Re)build the index over the documents, then keep it current by triggers. */
    build() {
      items.db.exec(`DROP TRIGGER IF EXISTS docs_ai; DROP TRIGGER IF EXISTS docs_ad; DROP TRIGGER IF EXISTS docs_au;`);
      items.inTransaction(() => items.db.exec("INSERT INTO docs_fts(docs_fts) VALUES('rebuild')"));
      items.db.exec(`CREATE TRIGGER docs_ai AFTER INSERT ON docs BEGIN INSERT INTO docs_fts(rowid, title) VALUES (new.id, new.title); END;
        CREATE TRIGGER docs_ad AFTER DELETE ON docs BEGIN INSERT INTO docs_fts(docs_fts, rowid, title) VALUES ('delete', old.id, old.title); END;
        CREATE TRIGGER docs_au AFTER UPDATE OF title ON docs BEGIN
          INSERT INTO docs_fts(docs_fts, rowid, title) VALUES ('delete', old.id, old.title);
          INSERT INTO docs_fts(rowid, title) VALUES (new.id, new.title);
        END;`);
      items.checkpoint();
      return { note: "SQLite: FTS5 external-content table, INSERT INTO docs_fts(docs_fts) VALUES('rebuild') in a transaction, durable per config, plus the WAL checkpoint" };
    },
    /** Every match {id, title}, best first. @param {string} text "word pre" */
    search(text) {
      const words = text.split(/\s+/).filter(Boolean);
      const q = words.map((w, i) => (i === words.length - 1 ? `"${w}"*` : `"${w}"`)).join(' ');
      const st = docStmt('SELECT d.id, d.title FROM docs_fts JOIN docs d ON d.id = docs_fts.rowid WHERE docs_fts MATCH ? ORDER BY rank');
      st.bind([q]);
      return rowsOf(st, (x) => ({ id: x.getInt(0), title: x.getString(1) }));
    },
    update(id, title) {
      docStmt('UPDATE docs SET title = ? WHERE id = ?').bind([title, id]).stepReset();
    },
    title(id) {
      return rowsOf(docStmt('SELECT title FROM docs WHERE id = ?').bind([id]), (x) => x.getString(0))[0];
    },
  },

  // Files as a tuned app stores them in SQLite: a row per file with the bytes in a BLOB column,
  // each insert its own transaction (durable per config); a read SELECTs the BLOB (the bytes come
  // out of wasm memory as a Uint8Array).
  files: {
    setup() {
      items.db.exec('CREATE TABLE IF NOT EXISTS files(id INTEGER PRIMARY KEY, name TEXT NOT NULL, type TEXT NOT NULL, data BLOB NOT NULL)');
    },
    /** @param {number} i @param {string} name @param {Uint8Array} bytes @param {string} type */
    put(i, name, bytes, type) {
      const st = docStmt('INSERT INTO files(id, name, type, data) VALUES (?, ?, ?, ?)');
      items.inTransaction(() => st.bind([i, name, type, bytes]).stepReset());
    },
    /** @param {number} i @returns {Uint8Array} */
    read(i) {
      const st = docStmt('SELECT data FROM files WHERE id = ?').bind([i]);
      const out = rowsOf(st, (x) => /** @type {Uint8Array} */ (x.get(0)));
      if (out.length !== 1 || !(out[0] instanceof Uint8Array)) throw new Error(`sqlite-worker: file ${i} not found`);
      return out[0];
    },
  },

  rel: {
    note: 'SQLite: go-sqlite-bench schema and SQL (LEFT JOINs), statements prepared once',
    tunedNote: 'SQLite tuned: composite indexes articles(userId, created), comments(articleId, created); per user 3 prepared queries; statements prepared once',
    /** @param {string} [variant] 'standard' (go-sqlite-bench) or 'tuned' */
    setup(variant = 'standard') {
      const db = items.db;
      db.exec(variant === 'tuned' ? REL_SCHEMA_TUNED : REL_SCHEMA);
      finalizeRel();
      rel = Object.fromEntries(Object.entries(REL_SQL).map(([k, sql]) => [k, db.prepare(sql)]));
      relVariant = variant;
      // How SQLite runs the join queries in this variant (untimed; column 3 is the detail text).
      const plan = (sql, bind) => db.selectArrays(`EXPLAIN QUERY PLAN ${sql}`, bind).map((r) => r[3]).join('; ');
      relPlans = {
        ...relPlans,
        [`rel ${variant}: allJoined`]: plan(REL_SQL.allJoined),
        [`rel ${variant}: userTree`]: variant === 'tuned' ? `${plan(REL_SQL.articlesOf, [1])} | ${plan(REL_SQL.commentsOf, [1])}` : plan(REL_SQL.userTree, ['x']),
      };
    },
    counts() {
      const [users, articles, comments] = items.db.selectArrays(REL_SQL.counts)[0];
      return { users, articles, comments };
    },
    insert(table, rows) {
      const s = rel[table];
      const b = relBind[table];
      items.inTransaction(() => {
        for (const r of rows) s.bind(b(r)).stepReset();
      });
      return { commits: 1 };
    },
    insertUserTree(user, articles, comments) {
      items.inTransaction(() => {
        rel.users.bind(relBind.users(user)).stepReset();
        for (const a of articles) rel.articles.bind(relBind.articles(a)).stepReset();
        for (const c of comments) rel.comments.bind(relBind.comments(c)).stepReset();
      });
    },
    allUsers() {
      return rowsOf(rel.allUsers, userRow);
    },
    /**
     * Every user visited in id order and checked (ids 1..n, active, email of `emailLen`
     * characters) without keeping them: go-sqlite-bench's `rows.Next()` loop, for data sets
     * larger than one result can hold. @param {number} emailLen
     */
    scanUsers(emailLen) {
      const s = rel.allUsers;
      let returned = 0;
      let wrong = 0;
      try {
        while (s.step()) {
          const u = userRow(s);
          returned++;
          if (u.id !== returned || !u.active || u.email.length !== emailLen) wrong++;
        }
      } finally {
        s.reset();
      }
      return { returned, wrong };
    },
    userTree(email) {
      if (relVariant !== 'tuned') {
        rel.userTree.bind([email]);
        return collectJoined(rel.userTree);
      }
      const users = rowsOf(rel.userByEmail.bind([email]), userRow);
      const articles = [];
      const comments = [];
      for (const u of users) {
        articles.push(...rowsOf(rel.articlesOf.bind([u.id]), (s) => ({ id: s.getInt(0), created: s.getInt(1), userId: s.getInt(2), text: s.getString(3) })));
        comments.push(...rowsOf(rel.commentsOf.bind([u.id]), (s) => ({ id: s.getInt(0), created: s.getInt(1), articleId: s.getInt(2), text: s.getString(3) })));
      }
      return { users, articles, comments };
    },
    allJoined() {
      return collectJoined(rel.allJoined);
    },
  },

  get: (id) => items.get(id),
  getMany: (ids) => items.getMany(ids),
  put: (item) => items.put(item),
  update: (id, f) => items.update(id, f),
  putMany: (list) => items.putMany(list),
  all: () => items.all(),
  queryRange: (lo, hi) => items.queryRange(lo, hi),
  queryComplex: (q) => items.queryComplex(q),
  count: () => items.count(),
  scanAll: () => items.scanAll(),
  keys: () => items.keys(),
  aggregate: () => items.aggregate(),
});
