// The engines the benchmark knows about. Each runs in its own dedicated module worker that speaks
// the protocol in www/bench/PROTOCOL.md. An engine whose `requires` files are not served (e.g. the
// ibexdb adapter or pkg/ before `make wasm`) is reported as unavailable and skipped, unless it was
// asked for explicitly (BENCH_ENGINES / ?engines=), in which case the run fails.
//
//   family      'sqlite' | 'ibexdb'; the ratio column compares ibexdb engines to the best SQLite
//   durability  'full'    rows return once data is flushed to OPFS (SQLite synchronous=FULL, ibexdb flush)
//               'relaxed' rows return once applied (SQLite synchronous=OFF, ibexdb relaxed)
//   The report compares an ibexdb engine with the best SQLite engine of the same durability, per row.

export const ENGINES = [
  {
    id: 'sqlite-default',
    family: 'sqlite',
    durability: 'full',
    worker: './sqlite-worker.js',
    requires: ['./sqlite-worker.js', '/node_modules/@sqlite.org/sqlite-wasm/dist/index.mjs'],
    config: { preset: 'default', synchronous: 'FULL' },
    description: 'sqlite-wasm, opfs-sahpool, SQLite defaults of this build (rollback journal DELETE, 8 KiB pages, 16 MiB cache), synchronous=FULL',
  },
  {
    id: 'sqlite-tuned',
    family: 'sqlite',
    durability: 'full',
    worker: './sqlite-worker.js',
    requires: ['./sqlite-worker.js', '/node_modules/@sqlite.org/sqlite-wasm/dist/index.mjs'],
    config: { preset: 'tuned', synchronous: 'FULL' },
    description: 'sqlite-wasm, opfs-sahpool, WAL + locking_mode=EXCLUSIVE + page_size=16384 + cache_size=-65536, synchronous=FULL',
  },
  {
    id: 'sqlite-tuned-off',
    family: 'sqlite',
    durability: 'relaxed',
    worker: './sqlite-worker.js',
    requires: ['./sqlite-worker.js', '/node_modules/@sqlite.org/sqlite-wasm/dist/index.mjs'],
    config: { preset: 'tuned', synchronous: 'OFF' },
    description: 'sqlite-wasm, opfs-sahpool, tuned as above with synchronous=OFF (no flush)',
  },
  {
    id: 'ibexdb',
    family: 'ibexdb',
    durability: 'full',
    worker: './ibexdb-worker.js',
    requires: ['./ibexdb-worker.js', '/pkg/ibexdb.js', '/pkg/ibexdb_bg.wasm'],
    config: { durability: 'flush' },
    description: 'ibexdb wasm engine, OPFS log, each write resolves after flush',
  },
  {
    id: 'ibexdb-relaxed',
    family: 'ibexdb',
    durability: 'relaxed',
    worker: './ibexdb-worker.js',
    requires: ['./ibexdb-worker.js', '/pkg/ibexdb.js', '/pkg/ibexdb_bg.wasm'],
    config: { durability: 'relaxed' },
    description: 'ibexdb wasm engine, OPFS log, writes resolve once applied in memory (flushed within a bounded delay)',
  },
];
