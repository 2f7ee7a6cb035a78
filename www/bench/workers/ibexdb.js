// ibexdb engine for the benchmark: the wasm engine of www/lib/engine.js (openEngine → EngineHandle),
// used directly inside this dedicated module worker, so worker-side rows time engine cost without
// page messaging. One worker per engine id; the page passes the configuration in the init message
// (www/bench/page/engines.js):
//
//   durability 'flush'   : every write returns after its commit is flushed to OPFS (eng.flush())
//              'relaxed' : every write returns once applied in memory
//   trusted    false     : commits are signed (sealed) with the repository's P-384 identity
//              true      : trusted mode, unsigned commits
//   storage    absent    : open()'s default ('auto': OPFS sync access handles where they work)
//              'indexeddb': the IndexedDB fallback (www/lib/backends/indexeddb.js). A flush there
//                          queues one IndexedDB transaction; a durable write returns once it
//                          completed (`await eng.durable()`), as the runtime acknowledges it
//                          (www/lib/worker/batch.js), so write rows on it await a promise each.
//
// What an app waits for. The shipped runtime (www/lib/worker.js) answers a write after apply (+ flush),
// and does more work on timers between batches: a relaxed flush RELAXED_FLUSH_MS after the first
// unflushed write, and, in signed mode, a seal (one signature over every unsealed commit) + flush +
// snapshot check SEAL_DELAY_MS after the first unsealed write. An app issuing writes back to back
// waits for that work too (the worker is single-threaded). This adapter therefore runs the
// runtime's own schedule (www/lib/policy.js: armMaintenance after a write, runMaintenance before the
// next) inline, at the first write after its deadline, inside the timed region: write rows pay its
// amortized cost (it shows in p95), exactly as an app would. The separate row "seal (sign) a
// batch" times one seal on its own.
//
// Data model, done the idiomatic ibexdb way:
//   key `items/<id>`, value {title, count, tags: Set}           (the set travels as {"$set": [...]})
//   schema items: typed fields + a sorted secondary index on `count` (SQLite: items_count)
//   No index on `tags`: the planner answers the complex query (tags ∋ X, title contains a digit,
//   count desc, limit 100) by walking the `count` index backwards and filtering, which stops after
//   ~500 entries; a `tags` index would be a 20,000-entry candidate set (20% selectivity) that the
//   planner rejects — measured: same plan, only slower writes. The chosen plans are recorded in
//   info.queryPlans (explain()).
//   "title contains a digit" is an `or` of ten `includes` conditions (the query language has
//   substring match, no regex/GLOB).
// The adapter talks to the engine as the runtime worker does with what the page API encoded: single
// writes, queries and results as JSON text (the EngineHandle's `…Json` methods), multi-item
// transactions as the product's TxnBuilder writes them (docs/design.md §3.3); results
// are decoded with one JSON.parse and the set form {"$set": [...]} becomes the protocol's tags
// array (SQLite: JSON.parse of its tags column). Page-side rows do not use this worker: they go
// through the public API (www/ibexdb.js), see page/clients.js.
//
// The product's modules are imported in `init` (timed: the create-instance row), not statically.

import { serve } from './harness.js';
import { ITEMS_SCHEMA, repoName } from '../shared/ibexdb.js';
import { opfsUsage } from './opfs-usage.js';
import { FAT_COLLECTIONS } from '../shared/docs.js';

/**
 * An engine result decoded as the product decodes it (codec.js `decode`: JSON text, and the
 * UTF-8 of strings of 16 KiB or more beside it, as the "large" rows' texts come).
 * @param {import('../../lib/codec.js').EngineText} t
 */
const parseText = (t) => decodeText(t);

const ENGINE_MODULE = new URL('../../lib/engine.js', import.meta.url).href;
const POLICY_MODULE = new URL('../../lib/policy.js', import.meta.url).href;
const STORAGE_MODULE = new URL('../../lib/storage.js', import.meta.url).href;
const CODEC_MODULE = new URL('../../lib/codec.js', import.meta.url).href;
const ATTACH_OPS_MODULE = new URL('../../lib/worker/attach-ops.js', import.meta.url).href;
// verify() as the runtime worker runs it: seal signatures by WebCrypto, every other check by the engine.
const VERIFY_MODULE = new URL('../../lib/worker/verify.js', import.meta.url).href;
const CRYPTO_MODULE = new URL('../../lib/worker/crypto.js', import.meta.url).href;

// Relational workloads (go-sqlite-bench): three collections with exactly the indexes of
// go-sqlite-bench's SQLite schema: `created` on each, articles.userId, comments.articleId (no index
// on users.email in either engine: "find by email" scans the users, 100 of them in "real").
const REL_SCHEMAS = {
  users: { fields: { created: { type: 'integer' }, email: { type: 'string' }, active: { type: 'boolean' } }, indexes: ['created'] },
  articles: { fields: { created: { type: 'integer' }, userId: { type: 'integer' }, text: { type: 'string' } }, indexes: ['created', 'userId'] },
  comments: { fields: { created: { type: 'integer' }, articleId: { type: 'integer' }, text: { type: 'string' } }, indexes: ['created', 'articleId'] },
};
// The seed suites' collections (shared/docs.js): DBX `people` (no index on age, as SQLite), and
// go-persist's five collections of fat records (the nested metadata as a map).
const DOC_SCHEMAS = {
  dbx: { people: { fields: { name: { type: 'string' }, age: { type: 'integer' }, city: { type: 'string' } } } },
  fat: Object.fromEntries(FAT_COLLECTIONS.map((c) => [c, {
    fields: { name: { type: 'string' }, email: { type: 'string' }, city: { type: 'string' }, status: { type: 'string' }, metadata: { type: 'map' }, payload: { type: 'string' } },
  }])),
};
/** Ids are zero-padded in keys so that key order is numeric order (SQLite: INTEGER PRIMARY KEY). */
const pad = (n) => String(n).padStart(10, '0');
/** The fts suite's documents: a text index on the title. */
const FTS_SCHEMA = { indexes: [{ field: 'title', kind: 'text' }] };
/**
 * Largest transaction the adapter sends, in TxnBuilder bytes (the core refuses commits over
 * 64 MiB; a commit of these items takes ~0.76x their transaction bytes: 6.3 MB for 100k).
 */
const MAX_TXN_BYTES = 48 << 20;

/** @type {typeof import('../../lib/engine.js').openEngine} */
let openEngine;
/** @type {typeof import('../../lib/codec.js').decode} */
let decodeText;
/** @type {typeof import('../../lib/worker/attach-ops.js').ATTACH_OPS | undefined} */
let attachOps;
/** The attachment ops once `files.setup()` loaded them. @template T @param {T | undefined} o @returns {T} */
const opsOf = (o) => {
  if (!o) throw new Error('ibexdb-worker: files.setup() first');
  return o;
};
/** @type {typeof import('../../lib/engine.js').TxnBuilder} */
let TxnBuilder;
/** @type {typeof import('../../lib/policy.js')} */
let policy;
/** @type {typeof import('../../lib/storage.js')} */
let storage;
/** @type {typeof import('../../lib/worker/verify.js').verifyRepository} */
let verifyRepository;
/** @type {import('../../lib/worker/crypto.js').HostCrypto | null} WebCrypto, as the runtime worker keeps one (verifying keys cached per author) */
let host = null;
let cfg = null;
let repo = '';
/** @type {import('../../lib/engine.js').EngineHandle | null} */
let eng = null;
/** wasm memory of the last engine (stats taken after a close) */
let memoryBytes = null;
let flushEach = true;
/** The backend's flush is durable only once `durable()` resolves (IndexedDB). */
let asyncFlush = false;
let signed = true;
/** @type {import('../../lib/policy.js').Maintenance} the runtime's maintenance deadlines */
let deadlines = { flushAt: 0, sealAt: 0 };
const background = { relaxedFlushes: 0, seals: 0, snapshots: 0 };
let plans = null;
let version = null;
/** Collections with declared indexes, and one indexed path of each (for the first query that builds them). */
const declared = new Map([['items', ITEMS_SCHEMA.indexes[0]]]);
/** Whether the declared indexes were built since the last open (explain() would build them). */
let indexesBuilt = false;

const Q = {
  all: '{"collection":"items"}',
  range: (lo, hi) => `{"collection":"items","where":{"count":{"gte":${lo},"lt":${hi}}},"sort":["count"]}`,
  complex: (tag, limit) => JSON.stringify({
    collection: 'items',
    where: { tags: { contains: tag }, or: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map((d) => ({ title: { includes: String(d) } })) },
    sort: [{ field: 'count', desc: true }],
    limit,
  }),
  aggregate: JSON.stringify({ collection: 'items', aggregates: { sum: { sum: 'count' }, min: { min: 'count' }, max: { max: 'count' }, avg: { avg: 'count' } } }),
};

/** The engine's value for an item: tags as a set (`{$set: [...]}`, the codec's form of a Set). */
function itemValue(it) {
  return { title: it.title, count: it.count, tags: { $set: it.tags } };
}
/** The same as JSON text (single writes: putJson). */
function itemJson(it) {
  return JSON.stringify(itemValue(it));
}
/** @param {any} tx @param {import('./harness.js').Item} it */
const putItem = (tx, it) => tx.put(`items/${it.id}`, itemValue(it));
/** Engine value (parsed JSON) → protocol item. */
function toItem(id, v) {
  v.id = id;
  v.tags = v.tags.$set;
  return v;
}

/**
 * The runtime's timer work (policy.js runMaintenance, which the runtime worker runs on timers),
 * run inline at the start of a write once its deadline has passed: relaxed flush, then seal +
 * flush + snapshot check.
 */
function maintenance() {
  const done = policy.runMaintenance(deadlines, eng, performance.now());
  if (done.flushed) background.relaxedFlushes++;
  if (done.sealed > 0) background.seals++;
  if (done.snapshot) background.snapshots++;
}

/**
 * After a write: flush (durable engines, as the runtime's group commit) and arm the deadlines as
 * the runtime does. On a backend whose flush completes later (IndexedDB) a durable write is done
 * when `durable()` resolves: that promise is returned (OPFS: nothing, the flush was durable).
 * @returns {Promise<void> | undefined}
 */
function written() {
  if (flushEach) eng.flush();
  policy.armMaintenance(deadlines, eng, performance.now());
  return flushEach && asyncFlush ? eng.durable() : undefined;
}

/** `v`, once `done` (a promise or nothing) has settled. @template T @param {Promise<void> | undefined} done @param {T} v */
const after = (done, v) => (done ? done.then(() => v) : v);

/** The adapter's TxnBuilder, cleared for each transaction (its buffer reused, as EngineHandle.transaction(fn) does). */
let txBuilder = null;
function builder() {
  txBuilder ??= new TxnBuilder();
  return txBuilder.clear();
}

/** One transaction/commit: `put(tx, x)` writes the op of each of `xs` (the product's TxnBuilder). */
function commit(xs, put) {
  maintenance();
  const tx = builder();
  for (let i = 0; i < xs.length; i++) put(tx, xs[i]);
  eng.transaction(tx);
  return written();
}

/**
 * One logical transaction of many ops. The core caps a commit at 64 MiB: larger ones are split
 * into commits of <= 48 MiB of transaction bytes, made durable together at the end (only the
 * one-transaction load of 1M items and the relational "large" workload get there; their row
 * notes say how many commits it took).
 */
function bigCommit(xs, put) {
  maintenance();
  const tx = builder();
  let commits = 0;
  for (let i = 0; i < xs.length; i++) {
    put(tx, xs[i]);
    if (tx.byteLength >= MAX_TXN_BYTES) {
      eng.transaction(tx);
      commits++;
      tx.clear();
    }
  }
  if (tx.size > 0) {
    eng.transaction(tx);
    commits++;
  }
  return after(written(), commits);
}

function queryRows(text) {
  return parseText(eng.queryJson(text));
}

// ----- relational workloads ------------------------------------------------------------------
const relKey = { users: (id) => `users/${pad(id)}`, articles: (id) => `articles/${pad(id)}`, comments: (id) => `comments/${pad(id)}` };
const relPut = {
  users: (tx, u) => tx.put(relKey.users(u.id), { created: u.created, email: u.email, active: u.active }),
  articles: (tx, a) => tx.put(relKey.articles(a.id), { created: a.created, userId: a.userId, text: a.text }),
  comments: (tx, c) => tx.put(relKey.comments(c.id), { created: c.created, articleId: c.articleId, text: c.text }),
};
const relRow = (id, v) => {
  v.id = Number(id);
  return v;
};
function relQuery(q) {
  const rows = parseText(eng.queryJson(JSON.stringify(q)));
  const out = new Array(rows.length);
  for (let i = 0; i < rows.length; i++) out[i] = relRow(rows[i][0], rows[i][1]);
  return out;
}
/** Comments of the given articles, grouped per article in `articles` order, each by `created`. */
function commentsOf(articles) {
  if (!articles.length) return [];
  const comments = relQuery({ collection: 'comments', where: { articleId: { in: articles.map((a) => a.id) } }, sort: ['articleId', 'created'] });
  // One indexed `in` query per user; sort on (articleId, created) then regroup in the articles'
  // (created) order — a hash join on the app side, as an ibexdb app would write it.
  const by = new Map();
  for (const c of comments) {
    let l = by.get(c.articleId);
    if (!l) by.set(c.articleId, (l = []));
    l.push(c);
  }
  const out = [];
  for (const a of articles) for (const c of by.get(a.id) ?? []) out.push(c);
  return out;
}

/** Users with their articles (by created, index on userId) and the articles' comments, in join order. */
function joinUsers(users) {
  const articles = [];
  const comments = [];
  for (const u of users) {
    const arts = relQuery({ collection: 'articles', where: { userId: u.id }, sort: ['created'] });
    for (const a of arts) articles.push(a);
    for (const c of commentsOf(arts)) comments.push(c);
  }
  return { users, articles, comments };
}

serve({
  async init(config) {
    cfg = { durability: 'flush', trusted: false, ...config };
    if (!['flush', 'relaxed'].includes(cfg.durability)) throw new Error(`ibexdb-worker: bad durability "${cfg.durability}"`);
    flushEach = cfg.durability === 'flush';
    signed = !cfg.trusted;
    repo = repoName(cfg.engine);
    const t0 = performance.now();
    ({ openEngine, TxnBuilder } = await import(ENGINE_MODULE));
    // Loaded with engine.js already: no fetch.
    [policy, storage, { decode: decodeText }] = await Promise.all([import(POLICY_MODULE), import(STORAGE_MODULE), import(CODEC_MODULE)]);
    const [verifyModule, { HostCrypto }] = await Promise.all([import(VERIFY_MODULE), import(CRYPTO_MODULE)]);
    verifyRepository = verifyModule.verifyRepository;
    // verify()'s helper thread is started by the page, as the runtime's is (page/engine-worker.js
    // answers {type: 'verify-thread'} with a port): a worker started from this worker may never
    // start in Firefox.
    host = HostCrypto.available() ? new HostCrypto(() => self.postMessage({ type: 'verify-thread' })) : null;
    const t1 = performance.now();
    // The wasm module is fetched, compiled and instantiated by the first openEngine() (open).
    return { import: t1 - t0 };
  },

  async open() {
    eng = await openEngine(repo, { trusted: !!cfg.trusted, schemas: { items: ITEMS_SCHEMA }, ...(cfg.storage ? { storage: cfg.storage } : {}) });
    asyncFlush = eng.storage !== 'opfs' && eng.storage !== 'memory';
    deadlines = policy.idleMaintenance();
    indexesBuilt = false;
    for (const c of declared.keys()) if (c !== 'items') declared.delete(c);
    plans ??= { get: 'key lookup (in-memory map)', count: 'collection size (no scan)', keys: 'collection in key order' };
  },
  /** Where the last open's time went (untimed, after the row's timer): files, wasm, engine (ms). */
  openPhases() {
    return eng?.openMs ?? null;
  },


  /**
   * Build the declared indexes now, with the first query an app makes on them (an aggregate over
   * an indexed path builds every declared index of its collection, even an empty one): from then
   * on every write maintains them.
   */
  buildIndexes() {
    for (const [c, path] of declared) eng.aggregateJson(JSON.stringify({ collection: c, aggregates: { first: { min: path } } }));
    indexesBuilt = true;
  },

  /** The trailing work of a row's writes, as close() does it: seal, flush, snapshot (EngineHandle.settle). */
  settle() {
    const done = eng.settle();
    deadlines = policy.idleMaintenance();
    if (done.sealed > 0) background.seals++;
    if (done.snapshot) background.snapshots++;
    return asyncFlush ? eng.durable() : undefined;
  },

  async close() {
    // Seal, flush, snapshot (when the log tail is non-empty), release the OPFS handles.
    if (eng) {
      memoryBytes = eng.memoryBytes;
      await eng.close();
    }
    eng = null;
  },

  /**
   * Another context (the page API's worker) is about to open the same files: let go of the
   * handles this worker keeps after its close (backends/opfs-pool.js), as the SQLite adapter
   * pauses its VFS, so that the other open does not wait to ask for them.
   */
  release() {
    storage.closeKeptFiles(repo);
  },

  shutdown() {
    storage.closeKeptFiles(repo);
  },

  async reset() {
    // `final` changes nothing here: the engine's directory (or IndexedDB database) is all there is.
    await (await storage.chooseBackend(cfg.storage)).removeRepository(repo);
  },

  /** The page's answer to this worker's ask for verify()'s helper thread (harness: handled at once). */
  pageNotice(m) {
    if (m.type === 'verify-port') host?.helperPort(m.port ?? null);
    else if (m.type === 'verify-failed') host?.helperFailed();
  },

  /** The engine's wasm memory now (cheap: the memory's size; the fat load checks it per batch). */
  wasmMemoryBytes() {
    return eng ? eng.memoryBytes : memoryBytes;
  },

  async stats() {
    const s = { wasmMemoryBytes: eng ? eng.memoryBytes : memoryBytes, dbBytes: null };
    // An engine that trapped (a row reported it) has its memory left, nothing else to ask.
    if (eng?.dead) s.engineDead = true;
    else if (eng) {
      const st = eng.stats();
      // The planner is cost-based (collection and index sizes): record its choices for the data
      // as it is now (the page stores them after the bulk load), not for the empty database.
      // explain() builds the indexes: only once a row has built them.
      if (st.items > 0 && indexesBuilt) s.queryPlans = { range: eng.explainJson(Q.range(0, 1000)), complex: eng.explainJson(Q.complex('category 3', 100)) };
      s.dbBytes = st.logBytes + st.snapshotBytes;
      s.logBytes = st.logBytes;
      s.snapshotBytes = st.snapshotBytes;
      s.commits = st.commits;
      s.items = st.items;
      s.openedFromSnapshot = st.open?.fromSnapshot ?? null;
      // Where the last open's time went (engine clock, ms): snapshot read, its decode, log replay.
      s.openPhasesMs = st.open ? { snapshot: st.open.snapshotMs, replay: st.open.replayMs } : null;
    }
    s.background = { ...background };
    if (cfg.storage === 'indexeddb') s.storage = 'indexeddb (OPFS not used; dbBytes: the files it holds)';
    else Object.assign(s, await opfsUsage(() => storage.repositoryDir(repo)));
    return s;
  },

  async info() {
    if (version === null) {
      try {
        version = (await (await fetch(new URL('package.json', policy.WASM_URL))).json()).version;
      } catch {
        version = 'unknown';
      }
    }
    return {
      engine: 'ibexdb',
      version,
      effective: {
        durability: cfg.durability,
        storage: eng?.storage ?? cfg.storage ?? 'auto',
        signed,
        publicKey: eng?.publicKey ? `${eng.publicKey.slice(0, 16)}…` : null,
        runtimeTimers: { relaxedFlushMs: policy.RELAXED_FLUSH_MS, sealDelayMs: policy.SEAL_DELAY_MS },
        schema: ITEMS_SCHEMA,
      },
      queryPlans: plans,
      notes: 'engine.js in this worker: JSON text for single writes and reads, TxnBuilder bytes for transactions; runtime timer work (relaxed flush, seal + snapshot check) run inline at the first write after its deadline',
    };
  },

  supports(row) {
    if (row === 'seal-batch' && !signed) return 'not applicable: trusted mode writes unsigned commits';
    return true;
  },

  /** What ibexdb does on each row (shown in the report next to the row). */
  get rowNotes() {
    const idb = cfg.storage === 'indexeddb';
    const dur = flushEach ? (idb ? 'each commit flushed (one IndexedDB transaction, awaited until complete)' : 'each commit flushed (one OPFS write + flush)') : `applied in memory, flushed by the ${policy.RELAXED_FLUSH_MS} ms timer`;
    const bg = (signed ? `; seals (one P-384 signature per ${policy.SEAL_DELAY_MS} ms of writes) + snapshot checks run inline as the runtime would` : '; trusted: no seals')
      + '; count index maintained; trailing seal + flush + snapshot (what close would do) timed in the last sample';
    return {
      'create-instance': 'import engine.js, compile + instantiate wasm, create the OPFS files' + (signed ? ', generate the P-384 identity' : ''),
      'open-empty': 'takes the files\' sync access handles this worker kept at its last close (backends/opfs-pool.js; acquired once, as the sahpool VFS acquires its pool\'s at install), reads the snapshot\'s meta section + replays the log tail (empty)',
      'open-n': 'reads the snapshot\'s meta section (header, footer, block directory); the first read loads the one block that holds its item (4 KiB with >= 32 items; items load on first use); indexes stay in the file',
      'open-n-query': 'reads the snapshot\'s meta section; the query restores the count index from the snapshot\'s index blocks (the collection is unchanged since the snapshot), walks 1,000 entries and loads only the item blocks of those rows',
      'bulk-load': `one commit per 1,000 items, ${dur}; count index maintained; trailing seal + flush + snapshot timed`,
      'bulk-load-txn': `one commit (split beyond 48 MiB), ${dur}; count index maintained; trailing seal + flush + snapshot timed`,
      'read-by-id': 'in-memory map lookup + JSON text to JS',
      'read-by-id-after-open': 'map lookup + JSON text to JS; a read whose item is still in the snapshot loads its block (~60 small items) first',
      'bulk-read-100': 'one getMany call: 100 lookups, one JSON text',
      'read-all': 'whole collection as one JSON text, one JSON.parse',
      'simple-query': 'count index range (1,000 entries), sorted',
      'complex-query': 'count index walked backwards, filter (tags contains, title includes 0-9) per item, stops at 100 matches (no tags index: it would not be used)',
      count: 'collection size, maintained (no scan): not the same work as SQLite\'s count(*)',
      keys: 'ids in key order: of the loaded items, and of items still in the snapshot read in their blocks in place (checked like a load)',
      aggregate: 'from the count index alone: maintained sum + count, min/max at its ends (no scan): not the same work as SQLite\'s pass',
      'create-item': dur + bg,
      'update-item': dur + bg,
      'bulk-create-100': `one commit of 100 items, ${dur}${bg}`,
      'writes-single': dur + bg,
      'writes-batched': `one commit per 100 items, ${dur}${bg}`,
      'seal-batch': 'one ECDSA P-384 signature (p384 crate in wasm) over 100 commit ids + one OPFS write + flush',
      verify: signed ? 'replays the log: every frame checksum, commit hash (SHA-256), snapshot = replay, indexes; seal signatures (P-384) by WebCrypto on a helper thread, all started at once, while the engine replays (the runtime\'s worker/verify.js)' : 'replays the log: every frame checksum, commit hash (SHA-256), snapshot = replay, indexes (no signatures: trusted mode)',
    };
  },

  // ----- items -----------------------------------------------------------------------------
  get(id) {
    // The runtime worker's read path (engine.js getJson: the engine's reused output buffer).
    const t = eng.getJson(`items/${id}`);
    return t === undefined ? undefined : toItem(id, parseText(t));
  },

  getMany(ids) {
    const vals = parseText(eng.getManyJson(JSON.stringify(ids.map((id) => `items/${id}`))));
    const out = [];
    for (let i = 0; i < vals.length; i++) if (vals[i] !== null) out.push(toItem(ids[i], vals[i]));
    return out;
  },

  put(item) {
    maintenance();
    eng.putJson(`items/${item.id}`, itemJson(item));
    return written();
  },

  update(id, f) {
    maintenance();
    eng.updateJson(`items/${id}`, itemJson(f));
    return written();
  },

  putMany(items) {
    // One commit (split only beyond 48 MiB: the one-transaction load of 1M items).
    const commits = bigCommit(items, putItem);
    return typeof commits === 'number' ? { commits } : commits.then((c) => ({ commits: c }));
  },

  all() {
    const rows = queryRows(Q.all);
    for (let i = 0; i < rows.length; i++) rows[i] = toItem(rows[i][0], rows[i][1]);
    return rows;
  },

  queryRange(lo, hi) {
    const rows = queryRows(Q.range(lo, hi));
    for (let i = 0; i < rows.length; i++) rows[i] = toItem(rows[i][0], rows[i][1]);
    return rows;
  },

  queryComplex({ tag, limit }) {
    const rows = queryRows(Q.complex(tag, limit));
    for (let i = 0; i < rows.length; i++) rows[i] = toItem(rows[i][0], rows[i][1]);
    return rows;
  },

  count() {
    return eng.count('items');
  },

  /** Read every item once (a count with a filter on an unindexed field scans the collection,
   * loading every item a snapshot still held); how many matched. */
  scanAll() {
    return eng.count('items', { title: { prefix: 'Item ' } });
  },

  keys() {
    return eng.keys('items');
  },

  aggregate() {
    return parseText(eng.aggregateJson(Q.aggregate));
  },

  // ----- seal row (signed engines) -------------------------------------------------------
  /** Make exactly `items.length` unsealed commits (one item each), flushed; not timed. */
  sealPrepare(items) {
    if (eng.seal() > 0) eng.flush();
    deadlines.sealAt = 0;
    for (const it of items) eng.putJson(`items/${it.id}`, itemJson(it));
    eng.flush();
    return eng.unsealed();
  },
  /** Timed: one P-384 signature over the unsealed commit ids + the seal frame's write + flush. */
  sealRun() {
    const n = eng.unsealed();
    eng.seal();
    eng.flush();
    return asyncFlush ? eng.durable().then(() => n) : n;
  },

  // ----- verify ------------------------------------------------------------------------------
  /** `commits` single-item commits, flushed every 1,000, sealed every `sealEvery`; not timed. */
  verifySetup({ items, sealEvery }) {
    for (let i = 0; i < items.length; i++) {
      eng.putJson(`items/${items[i].id}`, itemJson(items[i]));
      if (signed && (i + 1) % sealEvery === 0) eng.seal();
      if ((i + 1) % 1000 === 0) eng.flush();
    }
    if (signed) eng.seal();
    eng.flush();
    return after(asyncFlush ? eng.durable() : undefined, { commits: eng.stats().commits });
  },
  /** The runtime's verify() (www/lib/worker/verify.js): WebCrypto verifies the seals on a helper thread while the engine replays. */
  async verify() {
    const r = await verifyRepository(eng, host);
    return { commits: r.commits, seals: r.seals, signaturesVerified: r.signaturesVerified, signatureEngine: r.signatureEngine, items: r.items, snapshotChecked: r.snapshotChecked };
  },

  // ----- seed suites (dbx, fat): records {id, ...fields} in collections ------------------------
  docs: {
    /** @param {'dbx' | 'fat'} kind */
    setup(kind) {
      for (const [c, sc] of Object.entries(DOC_SCHEMAS[kind])) eng.defineSchema(c, sc);
    },
    /** One commit: records `{coll?, id, ...fields}` (`coll` defaults to people). */
    insert(recs) {
      return commit(recs, (tx, r) => {
        const { coll = 'people', id, ...v } = r;
        tx.put(`${coll}/${pad(id)}`, v);
      });
    },
    get(coll, id) {
      const t = eng.getJson(`${coll}/${pad(id)}`);
      if (t === undefined) return undefined;
      const v = parseText(t);
      v.id = id;
      return v;
    },
    getMany(coll, ids) {
      const vals = parseText(eng.getManyJson(JSON.stringify(ids.map((id) => `${coll}/${pad(id)}`))));
      const out = [];
      for (let i = 0; i < vals.length; i++) {
        if (vals[i] === null) continue;
        vals[i].id = ids[i];
        out.push(vals[i]);
      }
      return out;
    },
    size: (coll) => eng.count(coll),
    // Aggregates over a field without an index: the engine scans the collection.
    count: (coll, field) => parseText(eng.aggregateJson(JSON.stringify({ collection: coll, aggregates: { n: { count: field } } }))).n,
    sum: (coll, field) => parseText(eng.aggregateJson(JSON.stringify({ collection: coll, aggregates: { s: { sum: field } } }))).s,
    minMax(coll, field) {
      const r = parseText(eng.aggregateJson(JSON.stringify({ collection: coll, aggregates: { min: { min: field }, max: { max: field } } })));
      return { min: r.min, max: r.max };
    },
    filterGt(coll, field, x) {
      const rows = parseText(eng.queryJson(JSON.stringify({ collection: coll, where: { [field]: { gt: x } } })));
      return rows.map(([id, v]) => relRow(id, v));
    },
  },

  // ----- files (suite files, go-persist): an item per file and its attachment -------------------
  files: {
    /** The runtime's attachment ops (worker/attach-ops.js), loaded by the suite, not by init. */
    async setup() {
      attachOps ??= (await import(ATTACH_OPS_MODULE)).ATTACH_OPS;
    },
    /**
     * What `db.put` + `db.attach` do in the runtime's worker: the item, then the bytes streamed
     * from a Blob to their own OPFS file (hashed, flushed, named by their hash) and the commit
     * that records them; one flush makes both durable.
     * @param {number} i @param {string} name @param {Uint8Array} bytes @param {string} type
     */
    async put(i, name, bytes, type) {
      const key = `files/${pad(i)}`;
      eng.putJson(key, JSON.stringify({ name, size: bytes.length }));
      await opsOf(attachOps).attach.run({ engine: eng }, key, 'data', new Blob([/** @type {Uint8Array<ArrayBuffer>} */ (bytes)], { type }), type);
      await written();
    },
    /** The file's bytes: `attachment()`'s Blob (a view of its OPFS file), read whole. @param {number} i */
    async read(i) {
      const blob = await opsOf(attachOps).attachment.run({ engine: eng }, `files/${pad(i)}`, 'data');
      return blob.arrayBuffer();
    },
  },

  // ----- full-text search (suite fts): a `text` index on docs.title ------------------------------
  fts: {
    setup() {
      eng.defineSchema('docs', FTS_SCHEMA);
    },
    /** One commit of documents. */
    insert(docs) {
      return commit(docs, (tx, d) => tx.put(`docs/${pad(d.id)}`, { title: d.title, n: d.n }));
    },
    /** (Re)build the text index: declared anew, built by its first use (a search). */
    build() {
      eng.defineSchema('docs', {});
      eng.defineSchema('docs', FTS_SCHEMA);
      eng.queryJson(JSON.stringify({ collection: 'docs', where: { title: { match: 'a' } }, limit: 1 }));
      return { note: 'ibexdb: the text index built in memory on its first use (a search; not stored in the snapshot: rebuilt after an open)' };
    },
    /** Every match {id, title}, best first (BM25 rank order). @param {string} text */
    search(text) {
      const rows = parseText(eng.queryJson(JSON.stringify({ collection: 'docs', where: { title: { match: text } } })));
      const out = new Array(rows.length);
      for (let i = 0; i < rows.length; i++) out[i] = { id: Number(rows[i][0]), title: rows[i][1].title };
      return out;
    },
    update(id, title) {
      maintenance();
      eng.updateJson(`docs/${pad(id)}`, JSON.stringify({ title }));
      return written();
    },
    title(id) {
      const t = eng.getJson(`docs/${pad(id)}`);
      return t === undefined ? undefined : parseText(t).title;
    },
  },

  // ----- relational workloads (go-sqlite-bench) -----------------------------------------------
  rel: {
    note: 'ibexdb: keys <collection>/<zero-padded id>; indexes users.created, articles.created/userId, comments.created/articleId; queries via the indexes, joins on the app side',
    /** The variant changes nothing here: the idiomatic ibexdb way is the tuned one. */
    setup() {
      for (const [c, s] of Object.entries(REL_SCHEMAS)) {
        eng.defineSchema(c, s);
        declared.set(c, s.indexes[0]);
      }
    },
    counts() {
      return { users: eng.count('users'), articles: eng.count('articles'), comments: eng.count('comments') };
    },
    insert(table, rows) {
      const commits = bigCommit(rows, relPut[table]);
      return typeof commits === 'number' ? { commits } : commits.then((c) => ({ commits: c }));
    },
    insertUserTree(user, articles, comments) {
      return commit([user], (tx) => {
        relPut.users(tx, user);
        for (const a of articles) relPut.articles(tx, a);
        for (const c of comments) relPut.comments(tx, c);
      });
    },
    allUsers() {
      // Key order = id order (zero-padded keys): no sort needed, as SQLite's rowid order.
      return relQuery({ collection: 'users' });
    },
    /**
     * Every user visited in id order and checked without keeping them (see the SQLite
     * adapter's): pages of 100 rows in key order. @param {number} emailLen
     */
    scanUsers(emailLen) {
      let returned = 0;
      let wrong = 0;
      for (;;) {
        const page = relQuery({ collection: 'users', limit: 100, offset: returned });
        for (const u of page) {
          returned++;
          if (u.id !== returned || u.active !== true || u.email.length !== emailLen) wrong++;
        }
        if (page.length < 100) return { returned, wrong };
      }
    },
    userTree(email) {
      return joinUsers(relQuery({ collection: 'users', where: { email }, sort: ['created'] }));
    },
    allJoined() {
      // users by created (index walk), then per user its articles by created (index on userId),
      // then their comments (one `in` query per user on the articleId index), grouped per article.
      return joinUsers(relQuery({ collection: 'users', sort: ['created'] }));
    },
  },
});
