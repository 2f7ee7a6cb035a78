// The attachment ops of the worker (docs/design.md §6.7; the files: ../attachments.js). Part of
// the op table (ops.js spreads them in); same shape: `{run, write}`.
//
// attach: the bytes first (streamed to a temporary file, flushed, named by their hash), then the
// commit that records them; the batch flushes that commit under 'flush' durability. Were the
// commit refused (the item is gone, a bad name), a file this call created is removed again.

import { openAttachments } from '../attachments.js';
import { openIdbAttachments } from '../backends/indexeddb-attachments.js';
import { openMemoryAttachments } from '../backends/memory-attachments.js';
import { AttachmentNotFoundError, AttachmentUnavailableError, NotFoundError, StorageUnavailableError } from '../errors.js';

/** @typedef {import('../engine.js').EngineHandle} EngineHandle */

/**
 * The engine's attachment store, opened on first use when the open found none: OPFS files beside
 * the repository's (attachments.js), an IndexedDB database of its own (the IndexedDB backend), or
 * Blobs in memory (`storage: 'memory'`).
 * @param {EngineHandle} engine
 * @param {boolean} create
 */
export async function storeOf(engine, create) {
  if (engine.attachmentStore) return engine.attachmentStore;
  /** @type {import('../engine.js').AttachmentStoreLike | null} */
  let store;
  if (engine.storage === 'opfs') store = await openAttachments(engine.name, engine, { create });
  else if (engine.storage === 'indexeddb') store = await openIdbAttachments(engine.name, engine);
  else if (engine.storage === 'memory') store = openMemoryAttachments(engine.name, engine);
  else throw new StorageUnavailableError(`attachments are not stored in ${engine.storage}`, { kind: 'attachments' });
  if (!store) throw new StorageUnavailableError('this repository has no attachments directory', { kind: 'attachments' });
  engine.attachmentStore = store;
  return store;
}

/**
 * The descriptor of attachment `name` of `key`, or AttachmentNotFoundError.
 * @param {EngineHandle} engine
 * @param {string} key
 * @param {string} name
 * @returns {{name: string, hash: string, size: number, type: string}}
 */
function descriptor(engine, key, name) {
  const list = JSON.parse(engine.attachmentsJson(key));
  const d = list.find((/** @type {any} */ a) => a.name === name);
  if (!d) throw new AttachmentNotFoundError(`${key} has no attachment ${JSON.stringify(name)}`, { key, attachment: name });
  return d;
}

/** @typedef {{engine: EngineHandle, sync?: import('./sync.js').SyncManager}} Cx */

/**
 * Fetch the bytes of `d` from the sync server, if a connection is open (docs/design.md §12.2):
 * written to the store only when their SHA-256 is the recorded one (else SignatureError,
 * nothing stored); the server's refusal (PermissionError, LimitError, …) is thrown; a server
 * without the bytes is AttachmentUnavailableError. Null when not connected.
 * @param {Cx} cx
 * @param {{name: string, hash: string, size: number}} d
 * @returns {Promise<Blob | null>}
 */
async function fetched(cx, d) {
  // An encrypted repository's bytes do not travel (§6.8: their hashes would tell files apart).
  if (cx.engine.isEncrypted()) return null;
  const stream = cx.sync?.fetchAttachment(d.hash, d.size);
  if (!stream) return null;
  const store = await storeOf(cx.engine, true);
  try {
    await store.write(stream, cx.engine, d.hash);
  } catch (e) {
    if (/** @type {any} */ (e)?.name === 'UnavailableError') {
      throw new AttachmentUnavailableError(`the bytes of attachment ${JSON.stringify(d.name)} are neither on this device nor on the sync server`, { attachment: d.name, hash: d.hash });
    }
    throw e;
  }
  return store.file(d.hash);
}

export const ATTACH_OPS = {
  attach: {
    write: true,
    /**
     * @param {Cx} cx
     * @param {string} key
     * @param {string} name
     * @param {Blob | ReadableStream<unknown>} source
     * @param {string} type
     */
    async run(cx, key, name, source, type) {
      const engine = cx.engine;
      // Refuse before streaming what could not be recorded.
      if (engine.getJson(key) === undefined) throw new NotFoundError(`no item at ${key}`, { key });
      const store = await storeOf(engine, true);
      const { hash, size, created } = await store.write(source, engine);
      try {
        engine.attach(key, name, hash, size, type);
      } catch (e) {
        if (created) await store.drop(hash, size, engine);
        throw e;
      }
      cx.sync?.attachments.changed();
      return { name, hash, size, type };
    },
  },
  attachment: {
    write: false,
    /** @param {Cx} cx @param {string} key @param {string} name @returns {Promise<Blob>} */
    async run(cx, key, name) {
      const d = descriptor(cx.engine, key, name);
      const store = await storeOf(cx.engine, false).catch(() => null);
      let file = store && (await store.file(d.hash));
      if (!file || file.size !== d.size) file = await fetched(cx, d);
      if (!file || file.size !== d.size) {
        throw new AttachmentUnavailableError(`the bytes of attachment ${JSON.stringify(name)} of ${key} are not on this device`, { key, attachment: name, hash: d.hash });
      }
      // A view with the type: no copy (the file is read when the Blob is).
      return file.slice(0, file.size, d.type);
    },
  },
  detach: {
    write: true,
    /** @param {Cx} cx @param {string} key @param {string} name */
    run: (cx, key, name) => cx.engine.detach(key, name),
  },
  attachments: {
    write: false,
    /** @param {Cx} cx @param {string} key */
    run: (cx, key) => cx.engine.attachmentsJson(key),
  },
  /** The attachment directory's file names (tests: dedup, reclaim, nothing half-written). */
  attachmentFiles: {
    write: false,
    /** @param {Cx} cx */
    async run(cx) {
      const store = await storeOf(cx.engine, false).catch(() => null);
      return store ? store.names() : [];
    },
  },
};

/**
 * This device's attachment files that a visible item refers to (on the work chain), for the
 * sync manager to offer to the server (./attach-sync.js).
 * @param {EngineHandle | null} engine
 * @returns {Promise<Array<{hash: string, file: Blob}>>}
 */
export async function localAttachments(engine) {
  if (!engine || engine.dead || engine.isEncrypted()) return [];
  const store = await storeOf(engine, false).catch(() => null);
  if (!store) return [];
  const names = (await store.names()).filter((n) => /^[0-9a-f]{64}$/.test(n));
  if (names.length === 0) return [];
  const keep = new Set(engine.attachmentHashes());
  const out = [];
  for (const hash of names) {
    if (!keep.has(hash)) continue;
    const file = await store.file(hash);
    if (file) out.push({ hash, file });
  }
  return out;
}
