// The rows of the benchmark: what each row times (the catalogue), which suites run which rows,
// the sample plans and the results every engine must produce. Shared by the page, the workers and
// the Node runner (scripts/bench.mjs): dependency-free, valid in window, worker and Node.

/**
 * One row of the catalogue (fields as described below).
 * @typedef {object} RowDef
 * @property {string} id
 * @property {string} suite
 * @property {string} [section] 'relational' | 'verify'; absent: 'dataset'
 * @property {string} label
 * @property {string} scale 'n' (grows with N) or '1'
 * @property {string} [worker] what the worker times
 * @property {string} [page] what the page times
 * @property {boolean} [adaptive]
 * @property {boolean} [write]
 * @property {string} [rate]
 * @property {string} [na]
 * @property {boolean} [comparable]
 * @property {number} [largeBytes] relational "large" rows: characters per email
 * @property {string[]} [engines] the engines the row runs on (others: n/a "not run: enginesWhy")
 * @property {string} [enginesWhy]
 * @property {string} [reference] a published figure the row is shown next to (seed suites)
 */

/**
 * The row catalogue: what each row times. `worker` = timed inside the engine's worker (engine cost);
 * `page` = timed on the page around postMessage round trips (what an app sees).
 * Sample plans: `samples` timed samples after `warmup` discarded ones; rows marked `adaptive` repeat
 * the operation K times per sample, K chosen per engine so one sample lasts about `targetMs`
 * (performance.now() is 5 µs coarse even when cross-origin isolated).
 * `suite`: the suite that runs the row (SUITES below). `section`: 'dataset' rows run on one
 * database holding the N base items (one run per engine and size); 'relational' and 'verify' rows
 * build their own databases (one run per engine).
 * `scale`: how the row's cost is expected to grow with N ('n' linear, '1' constant) — used by the
 * runner's BENCH_ASSERT ceilings and to cut sample counts at large N.
 * `na`: the row cannot be measured for any engine yet (recorded with this reason, never faked).
 * `comparable: false`: the engines do different work on this row; no ratio is computed.
 * `rate`: the report also shows the throughput (1000 / per-operation ms) with this unit.
 * Params are documented precisely in www/bench/PROTOCOL.md.
 * @type {RowDef[]}
 */
export const ROWS = [
  {
    id: 'create-instance', suite: 'core', label: 'create instance', scale: '1',
    worker: 'init on empty storage: load the engine module (dynamic import + wasm instantiate), set up OPFS storage, create the empty database and schema',
    page: 'cold start in a fresh page (no module or wasm carried over), empty storage: SQLite: its page client + worker (import, wasm, sahpool) + open + create the schema, until the first read answers; ibexdb: open() of the public API (www/ibexdb.js: its worker + wasm + OPFS + identity) + the first read',
  },
  {
    id: 'open-empty', suite: 'core', label: 'open empty', scale: '1',
    worker: 'close, then open the existing empty database (schema present) + read one id (absent)',
  },
  {
    id: 'bulk-load-txn', suite: 'scaling', label: 'bulk load N (one transaction)', scale: 'n', write: true,
    worker: 'on a fresh database with its declared index: insert N items in one transaction/commit, durable per config, plus the trailing work (ibexdb: seal, flush, snapshot; SQLite WAL: checkpoint); a fresh worker on clean storage follows',
  },
  {
    id: 'bulk-load', suite: 'core', label: 'bulk load N (batches of 1,000)', scale: 'n', write: true,
    worker: 'with the declared index built (maintained by every commit): insert N items in transactions/commits of 1,000 items, each durable per the engine config, plus the trailing work (ibexdb: seal, flush, snapshot; SQLite WAL: checkpoint)',
  },
  {
    id: 'read-by-id', suite: 'core', label: 'read item by id', scale: '1', adaptive: true,
    worker: 'get one item by id (random ids over N), returned as a JS object',
    page: 'one call per read, awaited (SQLite: one op message to its worker; ibexdb: db.get() of the public API); the item comes back to the page by structured clone',
  },
  {
    id: 'bulk-read-100', suite: 'core', label: 'bulk read 100', scale: '1', adaptive: true,
    worker: 'get 100 items by id (random ids) in one call, as JS objects',
  },
  {
    id: 'read-all', suite: 'core', label: 'read all N', scale: 'n', adaptive: true,
    worker: 'read all N items as JS objects (array)',
  },
  {
    id: 'simple-query', suite: 'core', label: 'simple query (count range 1,000)', scale: '1', adaptive: true,
    worker: 'items with lo <= count < lo+1000 (random lo), sorted by count, as JS objects',
    page: 'one call per query (SQLite: op message; ibexdb: db.query()); 1,000 items cloned back to the page',
  },
  {
    id: 'complex-query', suite: 'core', label: 'complex query (tag + substring, sort desc, limit 100)', scale: '1', adaptive: true,
    worker: 'tags contains "category 3" and title contains a digit, sorted by count desc, limit 100, as JS objects',
  },
  {
    id: 'count', suite: 'core', label: 'count', scale: '1', adaptive: true, comparable: false,
    worker: 'number of items in the collection. Not the same work: ibexdb returns its maintained collection size, SQLite count(*) scans an index (the DBX suite times counts that scan in both)',
  },
  {
    id: 'keys', suite: 'core', label: 'keys', scale: 'n', adaptive: true,
    worker: 'all N item ids as an array of strings, in key order',
  },
  {
    id: 'aggregate', suite: 'core', label: 'aggregate (sum/min/max/avg)', scale: 'n', adaptive: true, comparable: false,
    worker: 'sum, min, max and avg of count over all items. Not the same work: ibexdb answers from its count index (maintained sum and count, min/max at its ends), SQLite makes a pass over items_count (the DBX suite times aggregates that scan in both)',
  },
  {
    id: 'open-n', suite: 'core', label: 'open N items + first read', scale: 'n',
    worker: 'close, then reopen the database holding N items + read one item by id',
    page: 'cold start in a fresh page (no module or wasm carried over): SQLite: its page client + worker + open + one get; ibexdb: open() of the public API + one db.get(); page-timed',
  },
  {
    id: 'open-n-query', suite: 'core', label: 'open N items + first indexed query', scale: 'n',
    worker: 'close, then reopen the database holding N items + the first query that needs the count index (count in a 1,000-wide range from N/2, sorted): ibexdb builds the index on this first use',
    page: 'cold start in a fresh page (no module or wasm carried over): SQLite: its page client + worker + open + the query; ibexdb: open() of the public API + db.query(); page-timed',
  },
  {
    id: 'read-by-id-after-open', suite: 'core', label: 'read item by id, just after open (first reads)', scale: '1',
    worker: 'close + reopen (not timed), then the first reads by id (random ids), each timed on its own, no warm-up: the state of an app right after start-up, before its first write',
  },
  {
    id: 'create-item', suite: 'core', label: 'create item (durable)', scale: '1', adaptive: true, write: true,
    worker: 'insert one new item as its own transaction/commit; returns once durable per the engine config',
    page: 'one call per insert, awaited, resolved once durable (SQLite: op message; ibexdb: db.put())',
  },
  {
    id: 'update-item', suite: 'core', label: 'update item (3 fields)', scale: '1', adaptive: true, write: true,
    worker: 'set title, count and tags of one existing item (random id), own transaction/commit, durable per config',
    page: 'one call per update, awaited, resolved once durable (SQLite: op message; ibexdb: db.update())',
  },
  {
    id: 'bulk-create-100', suite: 'core', label: 'bulk create 100 (one transaction)', scale: '1', adaptive: true, write: true,
    worker: 'insert 100 new items in one transaction/commit, durable per config',
    page: 'one call with 100 items, awaited (SQLite: one putMany op = one transaction; ibexdb: db.transaction() with 100 puts = one commit)',
  },
  {
    id: 'writes-single', suite: 'writes', label: 'durable single writes, sustained', scale: '1', adaptive: true, write: true, rate: 'writes/s',
    worker: 'one-item transactions/commits back to back (~250 ms per sample), durable per config; includes the background work the engine does meanwhile (ibexdb: seals, relaxed flushes, snapshots)',
  },
  {
    id: 'writes-batched', suite: 'writes', label: 'batched writes (100 per transaction), per item', scale: '1', adaptive: true, write: true, rate: 'items/s',
    worker: 'transactions/commits of 100 new items back to back, durable per config; time per item',
    page: '100 single-item writes issued in one tick from the page and awaited together, per item. Both page clients send the calls of one tick as one message and make them durable once: SQLite: one transaction with a savepoint per write (one failing write fails alone), one sync at COMMIT; ibexdb: one batch, a commit per write, group-committed with one flush',
  },
  {
    id: 'seal-batch', suite: 'core', label: 'seal (sign) a batch of 100 commits', scale: '1', write: true,
    worker: 'signed ibexdb only: one ECDSA P-384 signature over the ids of 100 unsealed commits + write and flush of the seal frame (the runtime does this off the write path, 100 ms after a write)',
  },
  {
    id: 'sync-latency', suite: 'core', label: 'sync latency (two pages through the server)', scale: '1',
    // A page cannot start ibexdb-server or a second browser context: the driver measures this
    // row (scripts/sync-latency.mjs, from scripts/bench.mjs) and replaces the placeholder.
    na: 'measured by the benchmark driver (make bench), not by this page',
    page: 'a put on page A until the row is reported by a live query on page B (another browser context, its own OPFS), through ibexdb-server on 127.0.0.1: A\'s durable write, the seal (signed engines), the server\'s verification and fsync before it relays, B\'s verification and apply',
  },
  {
    id: 'sync-initial', suite: 'core', label: 'initial sync of N items into an empty browser', scale: 'n',
    // Like sync-latency: the driver (scripts/sync-initial.mjs) measures it and replaces the placeholder.
    na: 'measured by the benchmark driver (make bench), not by this page',
    page: 'a fresh browser context (no OPFS data, no compiled wasm) opens a repository that holds N items (in commits of 1,000) only on ibexdb-server on 127.0.0.1, until db.sync() resolves and count(items) answers N: worker + wasm start, handshake, the history streamed, every seal verified, the commits applied and persisted',
  },
  // --- relational workloads after go-sqlite-bench (fresh database per workload) ---------------
  {
    id: 'rel-simple-insert', suite: 'relational', section: 'relational', label: 'simple: insert users (one transaction)', scale: '1', write: true,
    worker: 'insert U users {id, created, email, active} in one transaction, durable per config (go-sqlite-bench "simple")',
  },
  {
    id: 'rel-simple-query', suite: 'relational', section: 'relational', label: 'simple: read all users', scale: '1',
    worker: 'all users ordered by id, as JS objects (SQLite: SELECT … ORDER BY id; ibexdb: query of the collection in key order)',
  },
  {
    id: 'rel-real-insert', suite: 'relational', section: 'relational', label: 'real: insert 100 users × 20 articles × 20 comments', scale: '1', write: true,
    worker: 'per user one transaction holding the user, its articles and their comments, durable per config (100 transactions)',
  },
  {
    id: 'rel-real-query', suite: 'relational', section: 'relational', label: 'real: per user: find by email, articles, comments', scale: '1',
    worker: 'for each of the 100 users: find the user by email, its articles and their comments, ordered by created (SQLite: one LEFT JOIN per user; ibexdb: 3 indexed queries per user, app-side join); time for all 100 users',
  },
  {
    id: 'rel-complex-insert', suite: 'relational', section: 'relational', label: 'complex: insert 200 users, 20k articles, 400k comments', scale: '1', write: true,
    worker: 'three transactions (users, articles, comments), each durable per config',
  },
  {
    id: 'rel-complex-query', suite: 'relational', section: 'relational', label: 'complex: read everything joined', scale: '1',
    worker: 'every user with its articles and their comments, ordered by created at each level (SQLite: one LEFT JOIN over the three tables; ibexdb: 1 + 2×200 indexed queries, app-side join)',
  },
  {
    id: 'rel-real-query-tuned', suite: 'relational', section: 'relational', label: 'real: per user (SQLite tuned: composite indexes, 3 prepared queries)', scale: '1',
    worker: 'as "real: per user", on a database whose SQLite schema a tuned app would use: composite indexes articles(userId, created) and comments(articleId, created) in place of the single-column ones, and per user three prepared queries (user by email, its articles, their comments via one join) as ibexdb does; ibexdb: the same as the standard row',
  },
  {
    id: 'rel-complex-query-tuned', suite: 'relational', section: 'relational', label: 'complex: read everything joined (SQLite tuned: composite indexes)', scale: '1',
    worker: 'as "complex: read everything joined", with the composite indexes of the tuned schema (the LEFT JOIN reads every level in created order without a sort); ibexdb: the same as the standard row',
  },
  {
    id: 'rel-many-10', suite: 'relational', section: 'relational', label: 'many: query all of 10 users (per query)', scale: '1',
    worker: 'all users ordered by id, repeated (1,000 queries in total); time per query',
  },
  {
    id: 'rel-many-100', suite: 'relational', section: 'relational', label: 'many: query all of 100 users (per query)', scale: '1',
    worker: 'all users ordered by id, repeated (1,000 queries in total); time per query',
  },
  {
    id: 'rel-many-1000', suite: 'relational', section: 'relational', label: 'many: query all of 1,000 users (per query)', scale: '1',
    worker: 'all users ordered by id, repeated (1,000 queries in total); time per query',
  },
  ...[50, 100, 200].flatMap((kb) => [
    {
      id: `rel-large-${kb}k-insert`, suite: 'relational', section: 'relational', label: `large: insert users with ${kb} KB text`, scale: '1', largeBytes: kb * 1000, write: true,
      worker: `insert L users whose email is ${kb},000 characters, one transaction, durable per config (ibexdb splits it into commits of <= 48 MiB: its commits are capped at 64 MiB)`,
    },
    {
      id: `rel-large-${kb}k-query`, suite: 'relational', section: 'relational', label: `large: read all users with ${kb} KB text`, scale: '1', largeBytes: kb * 1000,
      worker: 'all users ordered by id, as JS objects',
    },
  ]),
  // --- verification ------------------------------------------------------------------------------
  {
    id: 'verify', suite: 'verify', section: 'verify', label: 'verify at 50,000 commits', scale: '1',
    comparable: false,
    worker: 'ibexdb: verify() re-proves the repository (every frame checksum, commit hash, seal signature, the snapshot and every index) after 50,000 single-item commits, the seal signatures by WebCrypto on a helper thread while the engine replays (the runtime\'s worker/verify.js); SQLite: PRAGMA integrity_check of the 50,000-row database — not the same work (no hashes, no signatures, no history)',
  },
  // --- DBX seed: aggregates and filters over 1M records, no index on the field ------------------
  {
    id: 'dbx-load', suite: 'dbx', section: 'dbx', label: 'DBX: load 1M records (transactions of 1,000)', scale: '1', write: true,
    worker: 'fresh database: N people {name, age, city} (age a permutation of 0 … N−1, no index on it) in transactions of 1,000, durable per config, trailing work included',
  },
  {
    id: 'dbx-count', suite: 'dbx', section: 'dbx', label: 'DBX: COUNT(age) over 1M (first after open)', scale: '1',
    worker: 'count of records with an age, the first aggregate after an open (close, open and setup untimed): a scan in both engines (SQLite: SELECT count(age); ibexdb: aggregate {count: "age"}, which also builds its running aggregate of age), no index on age',
  },
  {
    id: 'dbx-sum', suite: 'dbx', section: 'dbx', label: 'DBX: SUM(age) over 1M (first after open)', scale: '1',
    worker: 'sum of age over all records, the first aggregate after an open: a scan in both engines (SQLite: SELECT sum(age); ibexdb: aggregate {sum: "age"})',
  },
  {
    id: 'dbx-minmax', suite: 'dbx', section: 'dbx', label: 'DBX: MIN/MAX(age) over 1M (first after open)', scale: '1',
    worker: 'min and max of age in one query, the first aggregate after an open: a scan in both engines (no index: SQLite cannot take them from an index end)',
  },
  {
    id: 'dbx-sum-again', suite: 'dbx', section: 'dbx', label: 'DBX: SUM(age) over 1M, repeated', scale: '1', comparable: false,
    worker: 'sum of age again on the open database: SQLite scans again; ibexdb answers from the running aggregate of age that its first aggregate built and every write maintains (its cost is in the write rows and the first-after-open rows): not the same work, no ratio',
  },
  {
    id: 'dbx-filter-half', suite: 'dbx', section: 'dbx', label: 'DBX: filter age > 500,000 (≈500k rows)', scale: '1',
    worker: 'every record with age > N/2, as JS objects (SQLite: SELECT … WHERE age > ?; ibexdb: query where age gt): a scan, half of the records returned',
  },
  {
    id: 'dbx-filter-quarter', suite: 'dbx', section: 'dbx', label: 'DBX: filter age > 250,000 (≈750k rows)', scale: '1',
    worker: 'every record with age > N/4, as JS objects: a scan, three quarters of the records returned',
  },
  // --- go-persist seed: load scaling on fat records --------------------------------------------
  ...[
    { id: 'fat-load', label: 'fat: load (transactions of 1,000)', write: true, worker: 'fresh database: N fat records (5 string fields, nested metadata, a 1 KB payload) over 5 collections, in transactions of 1,000, durable per config, trailing work included' },
    { id: 'fat-get', label: 'fat: read one record by id', adaptive: true, worker: 'one record of a random collection by id, as a JS object (metadata decoded)' },
    { id: 'fat-batch-read', label: 'fat: batch of 40,000 random reads', worker: '40,000 random records, as getMany calls of up to 1,000 ids of one collection (SQLite: WHERE id IN (…) prepared per arity)' },
    { id: 'fat-open-cycles', label: 'fat: open → read one → close (per cycle)', worker: 'a cycle: open the database, read one random record, close it; up to 1,000 cycles, or as many as fit in the row\'s time budget (the note says how many)' },
  ].map((r) => ({
    suite: 'fat', section: 'fat', scale: 'n', ...r,
    engines: ['sqlite-default', 'sqlite-tuned', 'sqlite-best', 'ibexdb'],
    enginesWhy: 'the fat-record suite runs the durable engines (sqlite-default, sqlite-tuned, sqlite-best, signed ibexdb) to bound the run time; the relaxed and trusted variants change only the load',
  })),
  // --- OMGDB seed: its published rows -------------------------------------------------------------
  {
    id: 'omgdb-batched', suite: 'omgdb', section: 'omgdb', label: 'OMGDB: batched documents (batches of 1,000), per document', scale: '1', write: true, rate: 'docs/s',
    reference: '> 100,000 docs/s',
    worker: 'fresh database with its declared index: 50,000 documents in batches of 1,000, each one transaction/commit, durable per config, trailing work in the last batch; per document',
  },
  {
    id: 'omgdb-verify', suite: 'omgdb', section: 'omgdb', label: 'OMGDB: verify 50,000 documents', scale: '1', comparable: false,
    reference: '~1 s',
    worker: 'closed and reopened, then ibexdb verify() of the 50,000 documents (every frame, hash, signature, snapshot and index); SQLite: PRAGMA integrity_check — not the same work, no ratio',
  },
  {
    id: 'omgdb-single', suite: 'omgdb', section: 'omgdb', label: 'OMGDB: durable single writes', scale: '1', adaptive: true, write: true, rate: 'writes/s',
    reference: '> 2,500 writes/s',
    worker: 'one-document transactions/commits back to back (~250 ms per sample) on the 50,000-document database, durable per config, trailing work in the last sample',
  },
  // --- full-text search (issue 25 §5): a text index against SQLite FTS5 ---------------------------
  ...[
    {
      id: 'fts-build', label: 'FTS: build the index over 100k documents', scale: '1', write: true,
      worker: 'documents {title of 4–10 words, n} loaded untimed; timed: building the full-text index over them (SQLite: FTS5 external-content \'rebuild\' in a transaction + checkpoint; ibexdb: the text index declared and built by its first search, in memory)',
    },
    {
      id: 'fts-query', label: 'FTS: 2-word search (word + prefix), every match ranked', scale: '1', adaptive: true,
      worker: 'a search "word pre" (an exact word and a 3-letter prefix, 20 different ones in turn): every match {id, title}, best first by BM25; each answer checked against the oracle (same ids in both engines)',
    },
    {
      id: 'fts-update', label: 'FTS: update one document\'s title (index maintained)', scale: '1', adaptive: true, write: true,
      worker: 'set the title of one document (random id) to 4–10 new words, own transaction/commit, durable per config; the full-text index maintained (SQLite: FTS5 triggers; ibexdb: the text index via the change feed); trailing work in the last sample',
    },
  ].map((r) => ({
    suite: 'fts', section: 'fts', ...r,
    engines: ['sqlite-default', 'sqlite-tuned', 'sqlite-best', 'ibexdb', 'ibexdb-relaxed'],
    enginesWhy: 'the full-text rows run the SQLite presets and the signed ibexdb engines (durable and relaxed); the trusted variant changes only the signing of writes',
  })),
  // --- go-persist seed: its file storage suite (issue 26): files of 2–5 MB ------------------------
  ...[
    {
      id: 'files-write-100', label: 'files: write 100 files of 2–5 MB', write: true,
      worker: 'fresh database: 100 files of 2–5 MB (bytes made untimed), each stored durably before the next (ibexdb: an item and its attachment, streamed from a Blob to its own OPFS file, hashed, flushed; SQLite: a row with the file as a BLOB in one transaction), trailing work included',
    },
    {
      id: 'files-write-1000', label: 'files: write 1,000 files of 2–5 MB', write: true,
      worker: 'as files-write-100, with 1,000 files (~3.5 GB); the note gives the storage bytes against the bytes of the files (storage efficiency)',
    },
    {
      id: 'files-read-one', label: 'files: read one file (2–5 MB)', write: false,
      worker: 'one random file of the 1,000 read whole into an ArrayBuffer and checked (size and a checksum of its bytes) (ibexdb: attachment() → Blob → arrayBuffer(); SQLite: SELECT of the BLOB); the note gives the engine memory one read adds in a fresh database connection',
    },
  ].map((r) => ({
    suite: 'files', section: 'files', scale: '1', ...r,
    engines: ['sqlite-default', 'sqlite-tuned', 'sqlite-best', 'ibexdb'],
    enginesWhy: 'the file suite runs the durable engines (sqlite-default, sqlite-tuned, sqlite-best, signed ibexdb); the relaxed and trusted variants change only the metadata commits',
  })),
];

/** Which suites run which rows, in catalogue order. `load` is the old name of `scaling`. */
export const SUITES = {
  core: ROWS.filter((r) => r.suite === 'core').map((r) => r.id),
  writes: ROWS.filter((r) => r.suite === 'writes').map((r) => r.id),
  scaling: ['bulk-load-txn', 'bulk-load', 'open-n', 'open-n-query'],
  relational: ROWS.filter((r) => r.suite === 'relational').map((r) => r.id),
  verify: ['verify'],
  dbx: ROWS.filter((r) => r.suite === 'dbx').map((r) => r.id),
  fat: ROWS.filter((r) => r.suite === 'fat').map((r) => r.id),
  omgdb: ROWS.filter((r) => r.suite === 'omgdb').map((r) => r.id),
  fts: ROWS.filter((r) => r.suite === 'fts').map((r) => r.id),
  files: ROWS.filter((r) => r.suite === 'files').map((r) => r.id),
};
SUITES.load = SUITES.scaling;

/** Suites that run when none are named (every suite; `load` is an alias). */
export const DEFAULT_SUITES = ['core', 'writes', 'scaling', 'relational', 'verify', 'dbx', 'fat', 'omgdb', 'fts', 'files'];
/** Default sizes: the core and writes rows at N = 100k; bulk load and open at 10k, 100k and 1M. */
export const DEFAULT_SIZES = [100000];
export const DEFAULT_SCALING_SIZES = [10000, 100000, 1000000];

/** The section a row belongs to ('dataset' unless it says otherwise). */
export function sectionOf(rowId) {
  return ROWS.find((r) => r.id === rowId)?.section ?? 'dataset';
}

/**
 * Sample plans. `full` is the real benchmark; `quick` is for the smoke test (tiny N, few samples).
 * targetMs: adaptive rows pick K so that one sample takes about this long (K clamped to [1, maxK]).
 * warmupMs: minimum time spent in discarded warm-up batches before timing (JIT tier-up, caches).
 * pageWarmup: discarded page-side operations before the timed ones.
 * Rows whose cost grows with N (scale 'n') take fewer samples above N = 100k: max(3, samples × 100k/N).
 * relational: sizes of the go-sqlite-bench workloads. verify: the commit history verified.
 */
export const PLANS = {
  full: {
    targetMs: 20, warmupMs: 100, maxK: 10000, pageWarmup: 5,
    rows: {
      'create-instance': { samples: 5, pageOnly: true },
      'open-empty': { samples: 20, warmup: 1 },
      'bulk-load-txn': { samples: 1 },
      'bulk-load': { samples: 1, batch: 1000 },
      'read-by-id': { samples: 20, warmup: 1, pageSamples: 300 },
      'bulk-read-100': { samples: 20, warmup: 1 },
      'read-all': { samples: 5, warmup: 1 },
      'simple-query': { samples: 20, warmup: 1, pageSamples: 30 },
      'complex-query': { samples: 20, warmup: 1 },
      'count': { samples: 20, warmup: 1 },
      'keys': { samples: 10, warmup: 1 },
      'aggregate': { samples: 10, warmup: 1 },
      'open-n': { samples: 10, warmup: 1, pageSamples: 5 },
      'open-n-query': { samples: 10, warmup: 1, pageSamples: 5 },
      'read-by-id-after-open': { samples: 20, warmup: 0 },
      // Write rows cap K so a very fast (relaxed) engine does not grow the data set by 100k+ items.
      'create-item': { samples: 30, warmup: 1, pageSamples: 50, maxK: 500 },
      'update-item': { samples: 30, warmup: 1, pageSamples: 50, maxK: 500 },
      'bulk-create-100': { samples: 20, warmup: 1, pageSamples: 20, maxK: 50 },
      'writes-single': { samples: 8, warmup: 1, targetMs: 250, maxK: 5000 },
      'writes-batched': { samples: 8, warmup: 1, targetMs: 250, maxK: 100, pageSamples: 10, pageBatch: 100 },
      'seal-batch': { samples: 20, warmup: 1 },
      'rel-simple-insert': { samples: 3 },
      'rel-simple-query': { samples: 3, warmup: 1 },
      'rel-real-insert': { samples: 3 },
      'rel-real-query': { samples: 5, warmup: 1 },
      'rel-complex-insert': { samples: 3 },
      'rel-complex-query': { samples: 3, warmup: 1 },
      'rel-real-query-tuned': { samples: 5, warmup: 1 },
      'rel-complex-query-tuned': { samples: 3, warmup: 1 },
      'rel-many-10': { samples: 10, warmup: 1 },
      'rel-many-100': { samples: 10, warmup: 1 },
      'rel-many-1000': { samples: 10, warmup: 1 },
      'rel-large-50k-insert': { samples: 1 },
      'rel-large-50k-query': { samples: 3, warmup: 1 },
      'rel-large-100k-insert': { samples: 1 },
      'rel-large-100k-query': { samples: 3, warmup: 1 },
      'rel-large-200k-insert': { samples: 1 },
      'rel-large-200k-query': { samples: 3, warmup: 1 },
      'verify': { samples: 3, warmup: 0 },
      'dbx-load': { samples: 1 },
      'dbx-count': { samples: 5, warmup: 1 },
      'dbx-sum': { samples: 5, warmup: 1 },
      'dbx-minmax': { samples: 5, warmup: 1 },
      'dbx-sum-again': { samples: 5, warmup: 1 },
      'dbx-filter-half': { samples: 3, warmup: 1 },
      'dbx-filter-quarter': { samples: 3, warmup: 1 },
      'fat-load': { samples: 1 },
      'fat-get': { samples: 10, warmup: 1 },
      'fat-batch-read': { samples: 3, warmup: 1 },
      'fat-open-cycles': { samples: 1 },
      'omgdb-batched': { samples: 50 },
      'omgdb-verify': { samples: 3, warmup: 0 },
      'omgdb-single': { samples: 8, warmup: 1, targetMs: 250, maxK: 5000 },
      'fts-build': { samples: 3, warmup: 1 },
      'fts-query': { samples: 20 },
      'fts-update': { samples: 10, maxK: 500 },
      'files-write-100': { samples: 1, warmup: 0 },
      'files-write-1000': { samples: 1, warmup: 0 },
      'files-read-one': { samples: 20, warmup: 2 },
    },
    // go-sqlite-bench sizes, except: simple inserts 1M users there (here 100k: the benchmark's N;
    // see docs/benchmarks.md), large inserts 10,000 rows there (here 1,000, the published rows;
    // BENCH_LARGE_ROWS=10000 runs the seed's size since issue 26 §4 kept large values in the log).
    relational: {
      simpleUsers: 100000,
      real: { users: 100, articles: 20, comments: 20 },
      complex: { users: 200, articles: 100, comments: 20 },
      manyQueries: 1000,
      largeRows: 1000,
    },
    verify: { commits: 50000, sealEvery: 100 },
    // Seed suites: DBX 1M records; go-persist ~205k/410k/820k fat records, 40k batch reads, 1,000
    // open cycles (at most 60 s of them per row); OMGDB 50,000 documents in batches of 1,000.
    dbx: { rows: 1_000_000 },
    fat: { sizes: [204_800, 409_600, 819_200], batchReads: 40_000, cycles: 1000, cycleBudgetMs: 30_000 },
    omgdb: { documents: 50_000, batch: 1000 },
    // Full-text search: 100k documents, 20 different searches.
    fts: { docs: 100_000, searches: 20 },
    // go-persist's file storage suite: 100 and 1,000 files of 2–5 MB.
    files: { few: 100, many: 1000, minBytes: 2_000_000, maxBytes: 5_000_000 },
  },
  quick: {
    targetMs: 2, warmupMs: 10, maxK: 200, pageWarmup: 2,
    rows: {
      'create-instance': { samples: 1, pageOnly: true },
      'open-empty': { samples: 2, warmup: 1 },
      'bulk-load-txn': { samples: 1 },
      'bulk-load': { samples: 1, batch: 1000 },
      'read-by-id': { samples: 5, warmup: 1, pageSamples: 20 },
      'bulk-read-100': { samples: 3, warmup: 1 },
      'read-all': { samples: 3, warmup: 1 },
      'simple-query': { samples: 3, warmup: 1, pageSamples: 5 },
      'complex-query': { samples: 3, warmup: 1 },
      'count': { samples: 3, warmup: 1 },
      'keys': { samples: 3, warmup: 1 },
      'aggregate': { samples: 3, warmup: 1 },
      'open-n': { samples: 2, warmup: 1, pageSamples: 1 },
      'open-n-query': { samples: 2, warmup: 1, pageSamples: 1 },
      'read-by-id-after-open': { samples: 3, warmup: 0 },
      'create-item': { samples: 3, warmup: 1, pageSamples: 3 },
      'update-item': { samples: 3, warmup: 1, pageSamples: 3 },
      'bulk-create-100': { samples: 3, warmup: 1, pageSamples: 2, maxK: 5 },
      'writes-single': { samples: 3, warmup: 1, targetMs: 5, maxK: 20 },
      'writes-batched': { samples: 3, warmup: 1, targetMs: 5, maxK: 5, pageSamples: 1, pageBatch: 10 },
      'seal-batch': { samples: 3, warmup: 1 },
      'rel-simple-insert': { samples: 1 },
      'rel-simple-query': { samples: 2, warmup: 1 },
      'rel-real-insert': { samples: 1 },
      'rel-real-query': { samples: 2, warmup: 1 },
      'rel-complex-insert': { samples: 1 },
      'rel-complex-query': { samples: 2, warmup: 1 },
      'rel-real-query-tuned': { samples: 2, warmup: 1 },
      'rel-complex-query-tuned': { samples: 2, warmup: 1 },
      'rel-many-10': { samples: 2, warmup: 1 },
      'rel-many-100': { samples: 2, warmup: 1 },
      'rel-many-1000': { samples: 2, warmup: 1 },
      'rel-large-50k-insert': { samples: 1 },
      'rel-large-50k-query': { samples: 2, warmup: 1 },
      'rel-large-100k-insert': { samples: 1 },
      'rel-large-100k-query': { samples: 2, warmup: 1 },
      'rel-large-200k-insert': { samples: 1 },
      'rel-large-200k-query': { samples: 2, warmup: 1 },
      'verify': { samples: 2, warmup: 0 },
      'dbx-load': { samples: 1 },
      'dbx-count': { samples: 2, warmup: 1 },
      'dbx-sum': { samples: 2, warmup: 1 },
      'dbx-minmax': { samples: 2, warmup: 1 },
      'dbx-sum-again': { samples: 2, warmup: 1 },
      'dbx-filter-half': { samples: 2, warmup: 1 },
      'dbx-filter-quarter': { samples: 2, warmup: 1 },
      'fat-load': { samples: 1 },
      'fat-get': { samples: 3, warmup: 1 },
      'fat-batch-read': { samples: 2, warmup: 1 },
      'fat-open-cycles': { samples: 1 },
      'omgdb-batched': { samples: 3 },
      'omgdb-verify': { samples: 2, warmup: 0 },
      'omgdb-single': { samples: 3, warmup: 1, targetMs: 5, maxK: 20 },
      'fts-build': { samples: 1, warmup: 0 },
      'fts-query': { samples: 3 },
      'fts-update': { samples: 3, maxK: 20 },
      'files-write-100': { samples: 1, warmup: 0 },
      'files-write-1000': { samples: 1, warmup: 0 },
      'files-read-one': { samples: 3, warmup: 0 },
    },
    relational: {
      simpleUsers: 300,
      real: { users: 3, articles: 3, comments: 3 },
      complex: { users: 3, articles: 4, comments: 3 },
      manyQueries: 10,
      largeRows: 3,
    },
    verify: { commits: 250, sealEvery: 100 },
    dbx: { rows: 2000 },
    fat: { sizes: [300, 600], batchReads: 400, cycles: 5, cycleBudgetMs: 5000 },
    omgdb: { documents: 600, batch: 200 },
    fts: { docs: 2000, searches: 5 },
    files: { few: 4, many: 10, minBytes: 20_000, maxBytes: 50_000 },
  },
};

/** Samples for a row at size n: rows that grow with N take fewer above 100k (at least 3). */
export function samplesAt(row, samples, n) {
  if (row?.scale !== 'n' || n <= 100000 || samples <= 3) return samples;
  return Math.max(3, Math.ceil((samples * 100000) / n));
}

/**
 * Expected results for the given N, used to check every engine did the same logical work
 * (a wrong answer is reported as an error for that row, not silently timed).
 */
export function expectedChecks(n) {
  let cat3 = 0;
  let topCat3 = -1;
  for (let i = 0; i < n; i++) if (i % 5 === 3) { cat3++; topCat3 = i; }
  return {
    'open-empty': { count: 0, found: false },
    'bulk-load': { count: n },
    'bulk-load-txn': { count: n },
    'open-n': { found: true },
    'open-n-query': { returned: Math.min(1000, n) },
    'read-by-id': { missing: 0 },
    'read-by-id-after-open': { missing: 0 },
    'bulk-read-100': { returned: Math.min(100, n) },
    'read-all': { returned: n },
    'simple-query': { returned: Math.min(1000, n) },
    'complex-query': { returned: Math.min(100, cat3), firstCount: topCat3 },
    'count': { value: n },
    'keys': { returned: n },
    'aggregate': { sum: (n * (n - 1)) / 2, min: n ? 0 : null, max: n ? n - 1 : null, avg: n ? (n - 1) / 2 : null },
  };
}
