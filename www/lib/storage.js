// Where a repository's files live: one of three backends behind one interface, chosen by
// `open(name, {storage})` (docs/design.md §11.5):
//
//   backends/opfs.js       OPFS sync access handles (dedicated workers): the default where they work
//   backends/indexeddb.js  IndexedDB, for browsers without sync access handles ('auto' falls back to it)
//   backends/memory.js     this worker's memory: nothing survives the worker (private windows, tests, Node)
//
// Every backend gives the engine files with the synchronous interface of a sync access handle
// (getSize, read, write, truncate, flush, close), holding the same bytes: the engine's frame
// format and recovery do not depend on the backend. What differs is what `flush()` guarantees
// when it returns; `durable()` closes the gap (the worker awaits it before it acknowledges a
// durable write).

import { StorageUnavailableError } from './errors.js';
import { indexedDbBackend } from './backends/indexeddb.js';
import { memoryBackend } from './backends/memory.js';
import { checkStorage, closeAll, hasSyncHandles, opfsBackend } from './backends/opfs.js';

export { checkStorage, checkStorageAccess, closeAll, openFiles, removeRepository, repositoryDir } from './backends/opfs.js';
export { dropParked as closeKeptFiles } from './backends/opfs-pool.js';

/** What `open()`'s `storage` option accepts. @typedef {'auto' | 'opfs' | 'indexeddb' | 'memory'} StorageOption */
/** A backend's name (`db.storage`). @typedef {'opfs' | 'indexeddb' | 'memory'} StorageKind */

/**
 * A file as the engine uses it (an OPFS FileSystemSyncAccessHandle, or a backends/mem-file.js
 * MemFile): every call synchronous.
 * @typedef {object} StorageFile
 * @property {() => number} getSize
 * @property {(buf: Uint8Array, opts: {at: number}) => number} read
 * @property {(buf: Uint8Array, opts: {at: number}) => number} write
 * @property {(len: number) => void} truncate
 * @property {() => void} flush
 * @property {() => void} close
 */

/**
 * One storage backend.
 * @typedef {object} StorageBackend
 * @property {StorageKind} kind
 * @property {boolean} shared whether other contexts of the origin (tabs) see the same files
 * @property {() => boolean} available whether this context has what the backend needs
 * @property {() => Promise<void>} checkAccess StorageUnavailableError unless the site may use it here
 * @property {(name: string, files: string[]) => Promise<any[]>} openFiles the files (created empty
 *   if absent), in the order of `files`; on failure none stays open
 * @property {(name: string, files: any[]) => void} [release] a closed repository's files, which the
 *   backend may keep for this context's next open of it (OPFS: backends/opfs-pool.js); closed when absent
 * @property {(name: string) => Promise<void>} removeRepository delete the repository (its files closed)
 * @property {(name: string) => Promise<void>} durable resolves when every flush of the repository so far
 *   is durable; rejects with the typed error (QuotaExceededError, StorageUnavailableError) of one that failed
 * @property {(name: string) => Error | null} failure the error that made the repository's open files
 *   unusable (they must be closed and opened again), if any
 */

/**
 * Give a closed repository's files back to its backend (kept for the next open where the backend
 * keeps them, else closed).
 * @param {StorageBackend} backend
 * @param {string} name
 * @param {any[]} files
 */
export function releaseFiles(backend, name, files) {
  if (backend?.release) backend.release(name, files);
  else closeAll(files);
}

/** @type {Record<StorageKind, StorageBackend>} */
export const BACKENDS = { opfs: opfsBackend, indexeddb: indexedDbBackend, memory: memoryBackend };

/** The values `storage` accepts. */
export const STORAGE_OPTIONS = ['auto', 'opfs', 'indexeddb', 'memory'];

/**
 * The backend for `option` in this context (a dedicated worker): 'auto' takes OPFS where sync
 * access handles exist and the site may use OPFS, else IndexedDB. A backend that cannot work
 * here is a StorageUnavailableError naming what is missing.
 * @param {StorageOption} [option]
 * @param {{probe?: boolean}} [how] `probe: false`: 'auto' takes OPFS where sync access handles
 *   exist without asking for the OPFS root first. openEngine probes: WebKitGTK has
 *   `createSyncAccessHandle` but refuses the OPFS root, and 'auto' takes IndexedDB there
 * @returns {Promise<StorageBackend>}
 */
export async function chooseBackend(option = 'auto', { probe = true } = {}) {
  if (option === 'memory') return memoryBackend;
  if (option === 'indexeddb') {
    await indexedDbBackend.checkAccess();
    return indexedDbBackend;
  }
  if (option === 'opfs') {
    checkStorage();
    await opfsBackend.checkAccess();
    return opfsBackend;
  }
  if (hasSyncHandles()) {
    if (!probe) return opfsBackend;
    try {
      await opfsBackend.checkAccess();
      return opfsBackend;
    } catch (e) {
      // Site data blocked: IndexedDB is blocked too, and the OPFS message says why.
      if (!indexedDbBackend.available() || /** @type {any} */ (e)?.kind === 'storage-denied') throw e;
    }
  }
  if (indexedDbBackend.available()) return indexedDbBackend;
  throw new StorageUnavailableError('this browser keeps no files for ibexdb here: it has neither OPFS sync access handles nor IndexedDB (use storage: \'memory\' to run without keeping data)', { kind: 'no-storage' });
}
