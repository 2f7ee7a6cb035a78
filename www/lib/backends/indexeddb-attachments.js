// Attachments on the IndexedDB backend (docs/design.md §6.7): for the browsers whose workers have
// no OPFS sync access handles (WebKitGTK, older Safari, several WebViews). One database per
// repository beside the repository's own (`ibexdb/<name>`, indexeddb.js):
//
//   ibexdb-attachments/<name>
//     chunks  key [id, index] -> Blob of at most CHUNK_BYTES: a write's pieces, in order
//     files   key <64 hex digits of SHA-256> -> {id, size, n}: a complete file, chunks [id, 0..n)
//
// Pieces are stored as Blobs: the browser keeps them on disk and hands back disk-backed Blobs,
// so a read is a Blob made of them (no byte is read until the Blob is) and a 500 MB video never
// sits whole in memory (a Blob source of up to 64 MiB is read whole for WebCrypto's SHA-256:
// `hashedPieces`). Where IndexedDB refuses Blobs (WebKit's ephemeral sessions: private
// windows, WebKitGTK's automation) pieces are ArrayBuffers, and a read holds the file in memory. A write puts each piece under a fresh id in a transaction of its own
// (durability 'strict': on disk when it completes), hashing it with the engine's incremental
// SHA-256, and only then the `files` record that makes it visible — or, when those bytes are
// stored already, deletes its pieces (one copy). A kill mid-write leaves pieces that no record
// names: the store's first use in a session removes them, with the records no visible item refers
// to (`reclaim`). Nothing is removed later in the session, so a Blob handed out stays readable.

import { chargeOnce, hashedPieces } from '../attachment-chunks.js';
import { IbexError, QuotaExceededError, SignatureError, StorageUnavailableError } from '../errors.js';

export const attachmentsDbName = (/** @type {string} */ name) => `ibexdb-attachments/${name}`;
const CHUNKS = 'chunks';
const FILES = 'files';

/** @typedef {import('../attachments.js').AttachmentEngine} AttachmentEngine */
/** @typedef {{id: string, size: number, n: number}} FileRecord */

/** @template T @param {IDBRequest<T>} r @returns {Promise<T>} */
const result = (r) => new Promise((resolve, reject) => {
  r.onsuccess = () => resolve(r.result);
  r.onerror = () => reject(r.error);
});

/** @param {IDBTransaction} tx @returns {Promise<void>} */
const completion = (tx) => new Promise((resolve, reject) => {
  tx.oncomplete = () => resolve();
  tx.onerror = () => reject(tx.error);
  tx.onabort = () => reject(tx.error ?? new DOMException('transaction aborted', 'AbortError'));
});

/** A failure of IndexedDB as the page's typed error. @param {unknown} e @param {string} what */
function typed(e, what) {
  const name = /** @type {any} */ (e)?.name;
  // Ours already (a quota, a download's refusal or mismatch: SignatureError, PermissionError, …).
  if (e instanceof IbexError) return e;
  if (name === 'QuotaExceededError') return new QuotaExceededError(`IndexedDB refused an attachment's bytes (${what}): the origin's quota`);
  return new StorageUnavailableError(`IndexedDB failed to ${what} an attachment: ${name ?? 'Error'}: ${/** @type {any} */ (e)?.message ?? e}`, { kind: 'indexeddb' });
}

/** The key range of file `id`'s chunks. @param {string} id */
const chunksOf = (id) => IDBKeyRange.bound([id, 0], [id, Number.MAX_SAFE_INTEGER]);

/** Connections by repository, so that a removal can close them (`forgetIdbAttachments`). @type {Map<string, IDBDatabase>} */
const open = new Map();

/**
 * The attachment store of repository `name` on IndexedDB, reclaimed (pieces of unfinished writes
 * and files no visible item refers to removed).
 * @param {string} name
 * @param {AttachmentEngine} engine
 * @returns {Promise<IdbAttachmentStore>}
 */
export async function openIdbAttachments(name, engine) {
  let db;
  try {
    const req = indexedDB.open(attachmentsDbName(name), 1);
    req.onupgradeneeded = () => {
      req.result.createObjectStore(CHUNKS);
      req.result.createObjectStore(FILES);
    };
    db = await result(req);
  } catch (e) {
    throw typed(e, 'open the database of');
  }
  // A removal of the repository (another context's, or this one's) waits for this connection.
  db.onversionchange = () => {
    db.close();
    if (open.get(name) === db) open.delete(name);
  };
  open.get(name)?.close();
  open.set(name, db);
  const store = new IdbAttachmentStore(db);
  await store.reclaim(engine);
  return store;
}

/** Close this context's connection to `name`'s attachments (before its database is deleted). @param {string} name */
export function forgetIdbAttachments(name) {
  open.get(name)?.close();
  open.delete(name);
}

export class IdbAttachmentStore {
  /** @param {IDBDatabase} db */
  constructor(db) {
    this.db = db;
    /** Bytes of the visible files, as last counted. */
    this.bytes = 0;
    /** The engine generation `bytes` were charged to (-1: not yet). */
    this.charged = -1;
    /** Pieces go in as Blobs until IndexedDB refuses one (`_putPiece`). */
    this.asBlobs = true;
  }

  /** @param {'readonly' | 'readwrite'} mode */
  _tx(mode) {
    return this.db.transaction([CHUNKS, FILES], mode, { durability: mode === 'readwrite' ? 'strict' : 'default' });
  }

  /**
   * Remove the pieces no record names and the records no visible item refers to; count the rest.
   * @param {AttachmentEngine} engine
   * @returns {Promise<{removed: number, kept: number}>}
   */
  async reclaim(engine) {
    try {
      const tx = this._tx('readwrite');
      const files = tx.objectStore(FILES);
      const chunks = tx.objectStore(CHUNKS);
      const [hashes, records, chunkKeys] = await Promise.all([
        result(files.getAllKeys()), result(files.getAll()), result(chunks.getAllKeys()),
      ]);
      const keep = hashes.length > 0 ? new Set(engine.attachmentHashes()) : new Set();
      const liveIds = new Set();
      let bytes = 0;
      let removed = 0;
      hashes.forEach((h, i) => {
        const rec = /** @type {FileRecord} */ (records[i]);
        if (keep.has(String(h))) {
          liveIds.add(rec.id);
          bytes += rec.size;
        } else {
          files.delete(h);
          removed++;
        }
      });
      const dead = new Set();
      for (const k of chunkKeys) {
        const id = /** @type {[string, number]} */ (/** @type {unknown} */ (k))[0];
        if (!liveIds.has(id)) dead.add(id);
      }
      for (const id of dead) chunks.delete(chunksOf(id));
      await completion(tx);
      this.bytes = bytes;
      this.charged = -1;
      chargeOnce(this, engine);
      return { removed: removed + dead.size, kept: liveIds.size };
    } catch (e) {
      throw typed(e, 'reclaim the files of');
    }
  }

  /** @param {AttachmentEngine} engine */
  charge(engine) {
    chargeOnce(this, engine);
  }

  /**
   * The bytes of `hash` as a Blob of its stored pieces, or null.
   * @param {string} hash
   * @returns {Promise<Blob | null>}
   */
  async file(hash) {
    try {
      const tx = this._tx('readonly');
      const rec = /** @type {FileRecord | undefined} */ (await result(tx.objectStore(FILES).get(hash)));
      if (!rec) return null;
      const parts = /** @type {(Blob | ArrayBuffer)[]} */ (await result(tx.objectStore(CHUNKS).getAll(chunksOf(rec.id))));
      const blob = new Blob(parts);
      return parts.length === rec.n && blob.size === rec.size ? blob : null;
    } catch (e) {
      throw typed(e, 'read');
    }
  }

  /** The stored files' hashes, and `tmp-<id>` for pieces no record names (tests, storageInfo). */
  async names() {
    const tx = this._tx('readonly');
    const [hashes, records, chunkKeys] = await Promise.all([
      result(tx.objectStore(FILES).getAllKeys()), result(tx.objectStore(FILES).getAll()), result(tx.objectStore(CHUNKS).getAllKeys()),
    ]);
    const named = new Set(records.map((r) => /** @type {FileRecord} */ (r).id));
    const loose = new Set();
    for (const k of chunkKeys) {
      const id = /** @type {[string, number]} */ (/** @type {unknown} */ (k))[0];
      if (!named.has(id)) loose.add(`tmp-${id}`);
    }
    return [...hashes.map(String), ...loose];
  }

  /**
   * Store `source` under its hash, a piece per transaction. Resolves once it is visible and on
   * disk: `{hash, size, created}` (`created` false when identical bytes were stored already). On
   * any failure nothing is visible and its pieces are gone.
   * @param {Blob | ReadableStream<unknown>} source
   * @param {AttachmentEngine} engine
   * @param {string} [expect] the SHA-256 (hex) the bytes must have (fetched from a sync server):
   *   other bytes are SignatureError `tampered` and nothing is stored
   * @returns {Promise<{hash: string, size: number, created: boolean}>}
   */
  async write(source, engine, expect) {
    chargeOnce(this, engine);
    const id = crypto.randomUUID();
    let size = 0;
    let n = 0;
    let charged = 0;
    try {
      const { hash } = await hashedPieces(source, engine, async (piece) => {
        engine.quotaCharge(piece.length);
        charged += piece.length;
        await this._putPiece(piece, [id, n]);
        n++;
        size += piece.length;
      });
      if (expect !== undefined && hash !== expect) {
        throw new SignatureError(`attachment bytes from the sync server have SHA-256 ${hash}, not the ${expect} their commit records; nothing was stored`, { kind: 'tampered' });
      }
      const tx = this._tx('readwrite');
      const files = tx.objectStore(FILES);
      const existing = /** @type {FileRecord | undefined} */ (await result(files.get(hash)));
      const created = !(existing && existing.size === size);
      if (created) files.put(/** @type {FileRecord} */ ({ id, size, n }), hash);
      // Stored already: one copy. A record of another size under this hash cannot be a whole
      // file of it (a hash is of the bytes): replaced, its pieces removed.
      if (!created) tx.objectStore(CHUNKS).delete(chunksOf(id));
      else if (existing) tx.objectStore(CHUNKS).delete(chunksOf(existing.id));
      await completion(tx);
      if (created) this.bytes += size;
      else engine.quotaRelease(charged);
      return { hash, size, created };
    } catch (e) {
      await this._removePieces(id);
      engine.quotaRelease(charged);
      throw typed(e, 'write');
    }
  }

  /**
   * Store one piece: as a Blob (kept on disk by the browser), or, where IndexedDB cannot store
   * Blobs (WebKit's ephemeral sessions: private windows, automation), as an ArrayBuffer — then
   * a read holds the file in memory.
   * @param {Uint8Array} piece @param {[string, number]} key
   */
  async _putPiece(piece, key) {
    const bytes = /** @type {Uint8Array<ArrayBuffer>} */ (piece);
    for (;;) {
      const tx = this._tx('readwrite');
      const put = tx.objectStore(CHUNKS).put(this.asBlobs ? new Blob([bytes]) : bytes.slice().buffer, key);
      try {
        await Promise.all([result(put), completion(tx)]);
        return;
      } catch (e) {
        const name = /** @type {any} */ (e)?.name;
        if (!this.asBlobs || name === 'QuotaExceededError' || name === 'AbortError') throw e;
        this.asBlobs = false;
      }
    }
  }

  /** @param {string} id */
  async _removePieces(id) {
    try {
      const tx = this._tx('readwrite');
      tx.objectStore(CHUNKS).delete(chunksOf(id));
      await completion(tx);
    } catch {
      // The next session's reclaim removes them.
    }
  }

  /**
   * Remove the file of `hash` (a write whose commit then failed): only one this write created.
   * @param {string} hash
   * @param {number} size
   * @param {AttachmentEngine} engine
   */
  async drop(hash, size, engine) {
    try {
      const tx = this._tx('readwrite');
      const files = tx.objectStore(FILES);
      const rec = /** @type {FileRecord | undefined} */ (await result(files.get(hash)));
      if (rec) {
        files.delete(hash);
        tx.objectStore(CHUNKS).delete(chunksOf(rec.id));
      }
      await completion(tx);
    } catch {
      // Unreferenced: the next session's reclaim removes it.
    }
    this.bytes = Math.max(0, this.bytes - size);
    engine.quotaRelease(size);
  }
}
