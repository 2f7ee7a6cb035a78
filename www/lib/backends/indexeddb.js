// The IndexedDB backend: for browsers whose workers have no OPFS sync access handles (WebKitGTK,
// older Safari, several WebViews, some private modes), chosen by `storage: 'auto'` there and
// selectable with `storage: 'indexeddb'`. docs/design.md §11.5 says what it guarantees.
//
// Layout: one IndexedDB database per repository, `ibexdb/<name>`, with one object store `files`.
// A file is its size under the key `[file, -1]` and its bytes in 64 KiB chunks under
// `[file, index]` (the last one may be shorter; bytes past the size are not part of the file).
// The same bytes as the OPFS backend's files: the engine's frame format, torn-tail recovery and
// snapshot are unchanged; the engine cannot tell the backends apart.
//
// The engine's file calls are synchronous, IndexedDB's are not: a file is loaded whole into
// memory at open (MemFile), reads and writes go to memory, and `flush()` queues the chunks
// written since the last flush (and the size) as one readwrite transaction with
// `durability: 'strict'`. Transactions of a repository run one after another, in flush order
// (the next starts when the previous completed), so what IndexedDB holds after a crash is the
// files as of some flush, never a later flush without an earlier one. `durable()` resolves when
// every flush queued so far has completed (its `complete` event: the data is on disk); the
// worker awaits it before it acknowledges a durable write. If a transaction fails (the origin's
// quota, the browser's IndexedDB failing), the repository is `failed`: that flush's waiters and
// every later flush fail with the typed error (QuotaExceededError, StorageUnavailableError) until
// the files are closed and opened again, which reloads them from what IndexedDB holds.
//
// Every flush transaction also counts the repository's `generation` (a number under the key
// 'generation'). A context that closes a repository keeps its connection and the closed files'
// bytes (at most KEPT_REPOSITORIES repositories and KEPT_BYTES in all, but always the last one
// closed, whatever its size: it was in memory while open); its next open reads only
// the generation and, when no other context wrote since (the same number), takes the kept bytes
// instead of loading the files again — what OPFS's handle pool saves (opfs-pool.js), for a
// backend whose open loads everything.

import { QuotaExceededError, StorageUnavailableError } from '../errors.js';
import { attachmentsDbName, forgetIdbAttachments } from './indexeddb-attachments.js';
import { CHUNK, MemFile } from './mem-file.js';

const STORE = 'files';
/** The key of the repository's generation: flush transactions count it (not an array: no file's key). */
const GEN_KEY = 'generation';
/** Closed repositories whose connection and bytes a context keeps at most. */
export const KEPT_REPOSITORIES = 8;
/** Bytes of closed files a context keeps at most, in all. */
export const KEPT_BYTES = 64 << 20;
const dbName = (/** @type {string} */ name) => `ibexdb/${name}`;

/**
 * One repository's connection and flush queue (while any of its files is open here).
 * @typedef {object} Repo
 * @property {IDBDatabase} db
 * @property {number} open files open
 * @property {Map<string, {size: number, chunks: [number, Uint8Array][], resized: boolean}>} queued flushed, not yet in a transaction (by file; later flushes merge in)
 * @property {Promise<void> | null} running the transaction in flight
 * @property {Error | null} failed the error of a failed transaction
 * @property {number} gen the generation IndexedDB holds as of this context's last read or flush
 * @property {Map<string, {buf: Uint8Array, size: number}>} kept closed files' bytes, as flushed
 * @property {boolean} dead its connection was closed (for a deletion, or by the browser): never kept again
 */

/** @type {Map<string, Repo>} */
const repos = new Map();
/** @type {Map<string, Promise<void>>} repositories whose files were all closed, until their flushes are done */
const draining = new Map();

/** The error a failed request or transaction becomes. @param {any} err @param {string} what */
function mapError(err, what) {
  const msg = `IndexedDB ${what} failed: ${err?.name ?? 'Error'}: ${err?.message ?? err}`;
  if (err?.name === 'QuotaExceededError') return new QuotaExceededError(`${msg} (the origin's storage quota is used up)`);
  if (err?.name === 'SecurityError') {
    return new StorageUnavailableError(`the browser does not let this site keep data (${msg}): a private window that keeps no storage, or site data blocked in the browser's settings`, { kind: 'storage-denied' });
  }
  return new StorageUnavailableError(msg, { kind: 'indexeddb' });
}

/**
 * @template T
 * @param {IDBRequest<T>} req
 * @param {string} what
 * @returns {Promise<T>}
 */
const request = (req, what) =>
  new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(mapError(req.error, what));
  });

/** @param {IDBTransaction} tx @param {string} what @returns {Promise<void>} */
const completion = (tx, what) =>
  new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = tx.onabort = () => reject(mapError(tx.error, what));
  });

/** @param {string} name @returns {Promise<IDBDatabase>} */
async function connect(name) {
  const db = await openConnection(name);
  // Another context deleting the database (removeRepository) waits for this connection: let go.
  db.onversionchange = () => {
    db.close();
    dropConnection(name, db);
  };
  // The browser closed it (the site's data cleared, storage evicted): no `versionchange`.
  db.onclose = () => dropConnection(name, db);
  return db;
}

/**
 * `indexedDB.open` of repository `name`. An open the browser aborts while it is clearing the
 * site's data ("The connection was closed") is tried again a few times, 10–50 ms apart.
 * @param {string} name
 * @returns {Promise<IDBDatabase>}
 */
async function openConnection(name) {
  for (let attempt = 0; ; attempt++) {
    /** @type {IDBOpenDBRequest} */
    let req;
    try {
      req = indexedDB.open(dbName(name), 1);
    } catch (e) {
      throw mapError(e, 'open');
    }
    req.onupgradeneeded = () => req.result.createObjectStore(STORE);
    try {
      return await new Promise((resolve, reject) => {
        req.onsuccess = () => resolve(req.result);
        req.onerror = () => reject(req.error);
      });
    } catch (e) {
      if (/** @type {any} */ (e)?.name !== 'AbortError' || attempt >= 5) throw mapError(e, 'open');
      await new Promise((r) => setTimeout(r, 10 * (attempt + 1)));
    }
  }
}

/**
 * Connection `db` of repository `name` is closed (for a deletion, or by the browser): its entry is
 * not used again (open files see it fail; the next open connects afresh).
 * @param {string} name
 * @param {IDBDatabase} db
 */
function dropConnection(name, db) {
  const r = repos.get(name);
  if (r?.db !== db) return;
  r.dead = true;
  if (r.open > 0) {
    // Files still open here: nothing they flush can land any more. The repository is failed
    // (typed), and `durable`/`failure` still find it until its files are closed.
    r.failed ??= new StorageUnavailableError(`IndexedDB closed repository ${name}'s connection (the site's data was cleared, or another context deleted the database): reopen it`, { kind: 'indexeddb' });
    closedUnder.set(name, r);
  }
  forget(name, r);
}

/** Repositories whose connection was closed under their open files, until those are closed. @type {Map<string, Repo>} */
const closedUnder = new Map();

/** Bytes of closed files kept in all (KEPT_BYTES at most). */
let keptBytes = 0;

/** @param {Repo} r */
function dropKept(r) {
  for (const k of r.kept.values()) keptBytes -= k.buf.length;
  r.kept.clear();
}

/**
 * Stop keeping repository `name` (its files closed): no longer in `repos`; its connection closes
 * once its queued flushes are done.
 * @param {string} name
 * @param {Repo} r
 */
function forget(name, r) {
  dropKept(r);
  if (repos.get(name) !== r) return; // forgotten before (its connection closes once)
  repos.delete(name);
  const done = settle(r).finally(() => {
    r.db.close();
    if (draining.get(name) === done) draining.delete(name);
  });
  draining.set(name, done);
  done.catch(() => {});
}

/**
 * Keep at most KEPT_REPOSITORIES closed repositories and KEPT_BYTES of their files, the least
 * recently closed going first; the last one closed is kept whatever its size (its bytes were in
 * memory while it was open anyway).
 */
function trimKept() {
  const idle = [...repos].filter(([, r]) => r.open === 0);
  while (idle.length > 1 && (idle.length > KEPT_REPOSITORIES || keptBytes > KEPT_BYTES)) {
    const [name, r] = /** @type {[string, Repo]} */ (idle.shift());
    forget(name, r);
  }
}

/** @param {string} name @returns {Promise<Repo>} */
async function repo(name) {
  let r = repos.get(name);
  if (!r) {
    const db = await connect(name);
    r = repos.get(name); // another open of the same repository may have won the race
    if (r) db.close();
    else repos.set(name, (r = { db, open: 0, queued: new Map(), running: null, failed: null, gen: 0, kept: new Map(), dead: false }));
  }
  return r;
}

/**
 * Start the next transaction of `r` if none is in flight: everything queued goes into it.
 * @param {Repo} r
 */
function pump(r) {
  if (r.running || r.queued.size === 0 || r.failed) return;
  const batch = r.queued;
  r.queued = new Map();
  r.running = (async () => {
    const tx = r.db.transaction(STORE, 'readwrite', { durability: 'strict' });
    const done = completion(tx, 'flush');
    const store = tx.objectStore(STORE);
    store.put(++r.gen, GEN_KEY);
    for (const [file, { size, chunks, resized }] of batch) {
      for (const [i, bytes] of chunks) store.put(bytes, [file, i]);
      if (resized) {
        store.put(size, [file, -1]);
        // Chunks wholly past the end are gone.
        store.delete(IDBKeyRange.bound([file, Math.ceil(size / CHUNK)], [file, Infinity]));
      }
    }
    await done;
  })().then(
    () => {
      r.running = null;
      pump(r);
    },
    (e) => {
      r.running = null;
      // `db.transaction()` itself throws raw DOMExceptions (a connection the browser closed).
      r.failed = e instanceof StorageUnavailableError || e instanceof QuotaExceededError ? e : mapError(e, 'flush');
      r.queued.clear();
      dropKept(r);
    },
  );
}

/**
 * The repository's flushes so far, settled: resolves when they are all durable, rejects with the
 * typed error of one that failed.
 * @param {Repo} r
 * @returns {Promise<void>}
 */
async function settle(r) {
  for (;;) {
    if (r.failed) throw r.failed;
    if (!r.running) {
      if (r.queued.size === 0) return;
      pump(r);
      continue;
    }
    await r.running;
  }
}

/** @param {Repo} r @param {string} name */
function sinkFor(r, name) {
  return {
    /** @param {MemFile} m */
    flush(m) {
      if (r.failed) throw r.failed;
      if (m.dirty.size === 0 && !m.resized) return;
      const d = m.takeDirty();
      const prev = r.queued.get(m.name);
      if (prev) {
        // Merge into the flush not yet started: later chunks replace earlier ones.
        const byIndex = new Map(prev.chunks);
        for (const [i, b] of d.chunks) byIndex.set(i, b);
        prev.chunks = [...byIndex];
        prev.size = d.size;
        prev.resized ||= d.resized;
      } else {
        r.queued.set(m.name, d);
      }
      pump(r);
    },
    /** @param {MemFile} [m] the file (absent: an open that failed gives its count back) */
    close(m) {
      r.open--;
      // What it holds is what was flushed (the engine writes only when it flushes): kept for the
      // next open here, unless a write was left unflushed (a panic between the two).
      if (!r.failed && !r.dead && m && m.dirty.size === 0 && !m.resized) {
        const old = r.kept.get(m.name);
        if (old) keptBytes -= old.buf.length;
        r.kept.set(m.name, { buf: m.buf, size: m.size });
        keptBytes += m.buf.length;
      }
      if (r.open === 0) {
        if (closedUnder.get(name) === r) closedUnder.delete(name);
        // A failed repository is opened afresh (reloaded from what IndexedDB holds); another is
        // kept, its connection and bytes, least recently closed last.
        if (r.failed || r.dead) forget(name, r);
        else {
          repos.delete(name);
          repos.set(name, r);
          trimKept();
        }
      }
    },
  };
}

/**
 * Load one file of a repository into memory.
 * @param {IDBObjectStore} store
 * @param {string} file
 * @returns {Promise<Uint8Array>}
 */
async function loadFile(store, file) {
  const range = IDBKeyRange.bound([file, 0], [file, Infinity]);
  // All three requested before the first await (the transaction ends when none is pending).
  const [size, chunks, keys] = await Promise.all([
    request(store.get([file, -1]), 'read'),
    request(store.getAll(range), 'read'),
    request(store.getAllKeys(range), 'read'),
  ]);
  const n = typeof size === 'number' ? size : 0;
  const bytes = new Uint8Array(n);
  for (let k = 0; k < keys.length; k++) {
    const i = /** @type {[string, number]} */ (keys[k])[1];
    const at = i * CHUNK;
    if (at >= n) continue;
    const c = /** @type {Uint8Array} */ (chunks[k]);
    bytes.set(c.subarray(0, Math.min(c.length, n - at)), at);
  }
  return bytes;
}

/**
 * The closed files of repository `name` whose bytes this context keeps (tests).
 * @param {string} name
 * @returns {string[]}
 */
export const keptFiles = (name) => [...(repos.get(name)?.kept.keys() ?? [])].sort();

/**
 * Load `files` of a repository in a transaction of their own.
 * @param {Repo} r
 * @param {string[]} files
 */
function loadAll(r, files) {
  const store = r.db.transaction(STORE, 'readonly').objectStore(STORE);
  return Promise.all(files.map((f) => loadFile(store, f)));
}

/**
 * Open `files` of repository `name` (the backend's `openFiles`).
 * @param {string} name
 * @param {string[]} files
 * @param {boolean} [again] a second try, after a kept connection turned out closed
 * @returns {Promise<MemFile[]>}
 */
async function openIdbFiles(name, files, again) {
  // An earlier session's flushes first: they must land before this one reads.
  await draining.get(name)?.catch(() => {});
  const r = await repo(name);
  r.open += files.length;
  try {
    // Flushes of an earlier session of this context first (they run in order anyway).
    await settle(r).catch(() => {});
    const sink = sinkFor(r, name);
    const tx = r.db.transaction(STORE, 'readonly');
    const store = tx.objectStore(STORE);
    const gen = request(store.get(GEN_KEY), 'read');
    const fromKept = files.every((f) => r.kept.has(f));
    // Requested before the first await (the transaction ends when none is pending).
    const loads = fromKept ? null : Promise.all(files.map((f) => loadFile(store, f)));
    const stored = Number((await gen) ?? 0);
    if (fromKept && stored === r.gen) {
      const kept = files.map((f) => /** @type {{buf: Uint8Array, size: number}} */ (r.kept.get(f)));
      for (const f of files) r.kept.delete(f);
      for (const k of kept) keptBytes -= k.buf.length;
      return files.map((f, i) => MemFile.adopt(f, kept[i].buf, kept[i].size, sink));
    }
    // Another context wrote since (or nothing was kept): what IndexedDB holds.
    dropKept(r);
    r.gen = stored;
    const contents = await (loads ?? loadAll(r, files));
    return files.map((f, i) => new MemFile(f, contents[i], sink));
  } catch (e) {
    const sink = sinkFor(r, name);
    for (let i = 0; i < files.length; i++) sink.close();
    // A kept connection the browser closed without telling (its `close` event not yet seen):
    // connect again, once.
    if (!again && /** @type {any} */ (e)?.name === 'InvalidStateError') {
      dropConnection(name, r.db);
      return openIdbFiles(name, files, true);
    }
    throw e instanceof StorageUnavailableError || e instanceof QuotaExceededError ? e : mapError(e, 'read');
  }
}

/** @type {import('../storage.js').StorageBackend} */
export const indexedDbBackend = {
  kind: 'indexeddb',
  shared: true,
  available: () => typeof indexedDB !== 'undefined' && indexedDB !== null,
  async checkAccess() {
    if (!this.available()) throw new StorageUnavailableError('IndexedDB is not available here', { kind: 'no-indexeddb' });
  },
  openFiles: (name, files) => openIdbFiles(name, files, false),
  async removeRepository(name) {
    await draining.get(name)?.catch(() => {});
    const r = repos.get(name);
    if (r) {
      repos.delete(name);
      dropKept(r);
      r.db.close();
    }
    await request(indexedDB.deleteDatabase(dbName(name)), 'delete');
    // Its attachments' database (indexeddb-attachments.js) goes with it.
    forgetIdbAttachments(name);
    await request(indexedDB.deleteDatabase(attachmentsDbName(name)), 'delete');
  },
  async durable(name) {
    const r = repos.get(name) ?? closedUnder.get(name);
    if (r) await settle(r);
    else await draining.get(name);
  },
  failure(name) {
    return (repos.get(name) ?? closedUnder.get(name))?.failed ?? null;
  },
};
