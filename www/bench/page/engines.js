// The engines the benchmark knows about. Each runs in its own dedicated module worker that speaks
// the protocol in www/bench/PROTOCOL.md. An engine whose `requires` files are not served (e.g. the
// ibexdb adapter or pkg/ before `make wasm`) is reported as unavailable and skipped, unless it was
// asked for explicitly (BENCH_ENGINES / ?engines=), in which case the run fails.
//
//   family      'sqlite' | 'ibexdb'; the ratio column compares ibexdb engines to the best SQLite
//   durability  'full'    rows return once data is flushed to OPFS (SQLite synchronous=FULL, ibexdb flush)
//               'relaxed' rows return once applied (SQLite synchronous=OFF, ibexdb relaxed)
//   The report compares an ibexdb engine with the best SQLite engine per row: on read rows every
//   SQLite engine (the same reads whatever the durability), on write rows those of the same
//   durability; relaxed write rows get no ratio (not the same guarantee: report.js ratios()).
//   pageApi     how page-side rows reach the engine: 'worker' (default) = op messages to the
//               engine's benchmark worker (workers/harness.js); 'ibexdb' = the public page API
//               (www/ibexdb.js open() → its own worker www/lib/worker.js, batching, group commit),
//               which is how an app talks to ibexdb. Same kind of messaging as the SQLite rows:
//               one worker round trip per awaited call. See clients.js (IbexPageClient).
//   storage     ibexdb only: the backend of open()'s `storage` option (www/lib/storage.js). The
//               engines above open with the default ('auto': OPFS sync access handles where they
//               work, i.e. Chromium and Firefox); each has a twin `<id>-idb` on the IndexedDB
//               fallback (storage: 'indexeddb', www/lib/backends/indexeddb.js), the backend
//               WebKit's non-Cocoa ports and browsers without sync access handles get. The twins
//               run only when asked for: runBench({storage: ['indexeddb']}) (BENCH_STORAGE) or by id.

import { WASM_URL } from '../../lib/policy.js';

/** The wasm-pack output the ibexdb engines need, where the library looks for it. */
const IBEXDB_PKG = [new URL('ibexdb.js', WASM_URL).href, WASM_URL.href];

const BASE = [
  {
    id: 'sqlite-default',
    family: 'sqlite',
    durability: 'full',
    worker: '../workers/sqlite.js',
    requires: ['../workers/sqlite.js', '/node_modules/@sqlite.org/sqlite-wasm/dist/index.mjs'],
    config: { preset: 'default', synchronous: 'FULL' },
    description: 'sqlite-wasm, opfs-sahpool, SQLite defaults of this build (rollback journal DELETE, 8 KiB pages, 16 MiB cache), synchronous=FULL',
  },
  {
    id: 'sqlite-tuned',
    family: 'sqlite',
    durability: 'full',
    worker: '../workers/sqlite.js',
    requires: ['../workers/sqlite.js', '/node_modules/@sqlite.org/sqlite-wasm/dist/index.mjs'],
    config: { preset: 'tuned', synchronous: 'FULL' },
    description: 'sqlite-wasm, opfs-sahpool, WAL + locking_mode=EXCLUSIVE + page_size=16384 + cache_size=-65536, synchronous=FULL',
  },
  {
    id: 'sqlite-tuned-off',
    family: 'sqlite',
    durability: 'relaxed',
    worker: '../workers/sqlite.js',
    requires: ['../workers/sqlite.js', '/node_modules/@sqlite.org/sqlite-wasm/dist/index.mjs'],
    config: { preset: 'tuned', synchronous: 'OFF' },
    description: 'sqlite-wasm, opfs-sahpool, tuned as above with synchronous=OFF (no flush)',
  },
  {
    id: 'sqlite-best',
    family: 'sqlite',
    durability: 'full',
    worker: '../workers/sqlite.js',
    requires: ['../workers/sqlite.js', '/node_modules/@sqlite.org/sqlite-wasm/dist/index.mjs'],
    config: { preset: 'best', synchronous: 'FULL' },
    description: 'sqlite-wasm, opfs-sahpool, the best a tuned app would write: WAL + locking_mode=EXCLUSIVE + page_size=4096 + cache_size=-65536, synchronous=FULL; items a WITHOUT ROWID table keyed by the text id; bulk reads as one json_group_array(json_object(…)) + one JSON.parse; bulk inserts as one INSERT … SELECT … FROM json_each(?); the complex query with instr',
  },
  {
    id: 'ibexdb',
    family: 'ibexdb',
    durability: 'full',
    worker: '../workers/ibexdb.js',
    pageApi: 'ibexdb',
    requires: ['../workers/ibexdb.js', ...IBEXDB_PKG],
    config: { durability: 'flush', trusted: false },
    description: 'ibexdb wasm engine, OPFS log, signed (P-384 seals off the write path), each write resolves after flush',
  },
  {
    id: 'ibexdb-relaxed',
    family: 'ibexdb',
    durability: 'relaxed',
    worker: '../workers/ibexdb.js',
    pageApi: 'ibexdb',
    requires: ['../workers/ibexdb.js', ...IBEXDB_PKG],
    config: { durability: 'relaxed', trusted: false },
    description: 'ibexdb wasm engine, OPFS log, signed, writes resolve once applied in memory (flushed within 50 ms)',
  },
  {
    id: 'ibexdb-trusted',
    family: 'ibexdb',
    durability: 'full',
    worker: '../workers/ibexdb.js',
    pageApi: 'ibexdb',
    requires: ['../workers/ibexdb.js', ...IBEXDB_PKG],
    config: { durability: 'flush', trusted: true },
    description: 'ibexdb wasm engine, OPFS log, trusted mode (unsigned commits), each write resolves after flush',
  },
];

/** The storage backends an ibexdb engine can be timed on, and the suffix of its engine id. */
export const STORAGES = { opfs: '', indexeddb: '-idb' };

/** ibexdb's engines on the IndexedDB backend: the same configuration, `storage: 'indexeddb'`. */
const IDB = BASE.filter((e) => e.family === 'ibexdb').map((e) => ({
  ...e,
  id: `${e.id}${STORAGES.indexeddb}`,
  storage: /** @type {const} */ ('indexeddb'),
  config: { ...e.config, storage: 'indexeddb' },
  description: e.description.replace('OPFS log', 'IndexedDB backend (open(name, {storage: \'indexeddb\'}): the log in memory, each flush one IndexedDB transaction, durable writes wait for its completion)'),
}));

/**
 * @typedef {object} Engine
 * @property {string} id
 * @property {'sqlite' | 'ibexdb' | string} family
 * @property {'full' | 'relaxed' | string} durability
 * @property {string} worker
 * @property {string[]} [requires]
 * @property {Record<string, any>} config
 * @property {string} description
 * @property {string} [pageApi]
 * @property {'opfs' | 'indexeddb'} [storage] ibexdb: the backend it is timed on
 */

/** @type {Engine[]} */
export const ENGINES = [...BASE.map((e) => (e.family === 'ibexdb' ? { ...e, storage: /** @type {const} */ ('opfs') } : e)), ...IDB];
