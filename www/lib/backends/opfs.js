// The OPFS backend (the default where it works): a repository lives in `<OPFS root>/ibexdb/<name>/`,
// which holds `log`, `snapshot` and (signed mode) `identity` (docs/design.md §11.5). The engine
// opens the files with sync access handles, which exist only in dedicated workers; finding and
// removing a repository's directory works on the page too.

import { QuotaExceededError, StorageUnavailableError } from '../errors.js';
import { ROOT_DIR } from '../policy.js';
import { askRelease, dropParked, park, takeParked } from './opfs-pool.js';

/** Whether this context has OPFS sync access handles (dedicated workers of most browsers). */
export function hasSyncHandles() {
  return (
    typeof navigator !== 'undefined' &&
    !!navigator.storage &&
    typeof navigator.storage.getDirectory === 'function' &&
    typeof globalThis.FileSystemFileHandle !== 'undefined' &&
    typeof (/** @type {any} */ (FileSystemFileHandle.prototype)).createSyncAccessHandle === 'function'
  );
}

/** Check that this context can hold OPFS sync access handles. */
export function checkStorage() {
  if (typeof navigator === 'undefined' || !navigator.storage || typeof navigator.storage.getDirectory !== 'function') {
    throw new StorageUnavailableError('OPFS is not available here (navigator.storage.getDirectory is missing; a secure context is required)', { kind: 'no-opfs' });
  }
  // createSyncAccessHandle exists only in dedicated workers (and is not in TypeScript's DOM library).
  if (typeof globalThis.FileSystemFileHandle === 'undefined' || typeof (/** @type {any} */ (FileSystemFileHandle.prototype)).createSyncAccessHandle !== 'function') {
    throw new StorageUnavailableError('OPFS sync access handles are not available (they exist only in dedicated workers)', { kind: 'no-opfs' });
  }
}

/**
 * The origin's OPFS root. The browser refuses it (SecurityError) where the site may keep no data:
 * a private window without storage, site data blocked in the settings, some third-party iframes.
 * @returns {Promise<FileSystemDirectoryHandle>}
 */
async function opfsRoot() {
  try {
    return await navigator.storage.getDirectory();
  } catch (e) {
    const err = /** @type {any} */ (e);
    if (err?.name === 'SecurityError') {
      throw new StorageUnavailableError(
        `the browser does not let this site keep data (OPFS: ${err.message}): site data is blocked here — a private window that keeps no storage, cookies and site data blocked in the browser's settings, or a third-party iframe. Allow site data for this site, or open it in a normal window`,
        { kind: 'storage-denied' },
      );
    }
    throw new StorageUnavailableError(`OPFS cannot be opened: ${err?.name}: ${err?.message ?? err}`, { kind: 'opfs' });
  }
}

/**
 * Check that the browser lets this site use OPFS at all (it refuses where site data is blocked;
 * Web Locks then fail too, with a less helpful message, so this runs first).
 */
export async function checkStorageAccess() {
  if (opfsAllowed) return;
  await opfsRoot();
  opfsAllowed = true;
}

/** This context got the OPFS root once: it is not asked again at every open (a browser round trip). */
let opfsAllowed = false;

/**
 * The directory of repository `name` (created with `create`; otherwise NotFoundError when absent).
 * @param {string} name
 * @param {{create?: boolean}} [options]
 * @returns {Promise<FileSystemDirectoryHandle>}
 */
export async function repositoryDir(name, { create = false } = {}) {
  const root = await opfsRoot();
  const top = await root.getDirectoryHandle(ROOT_DIR, { create });
  return top.getDirectoryHandle(name, { create });
}

/**
 * Delete repository `name` and its files (nothing to do when it does not exist). Its files must
 * not be open anywhere.
 * @param {string} name
 */
export async function removeRepository(name) {
  directories.delete(name);
  dropParked(name);
  for (let attempt = 0; ; attempt++) {
    try {
      const root = await opfsRoot();
      const top = await root.getDirectoryHandle(ROOT_DIR);
      await top.removeEntry(name, { recursive: true });
      return;
    } catch (err) {
      const why = /** @type {any} */ (err)?.name;
      if (why === 'NotFoundError') return;
      // Another worker keeps the files' handles (opfs-pool.js): ask for them, then retry.
      if (why !== 'NoModificationAllowedError' || attempt >= 50) throw err;
      if (attempt % 10 === 0) askRelease(name);
      await sleep(Math.min(10 * (attempt + 1), 100));
    }
  }
}

/** @param {number} ms */
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * createSyncAccessHandle, retrying while another context still holds the file: a tab that just
 * closed releases its handles shortly after its lock, and a worker that keeps them after a close
 * (opfs-pool.js) lets them go when asked.
 * @param {string} name the repository
 * @param {FileSystemFileHandle} fh
 * @returns {Promise<any>} a FileSystemSyncAccessHandle
 */
async function syncHandle(name, fh) {
  for (let attempt = 0; ; attempt++) {
    try {
      return await /** @type {any} */ (fh).createSyncAccessHandle();
    } catch (e) {
      const err = /** @type {any} */ (e);
      if (err?.name === 'NoModificationAllowedError' && attempt < 50) {
        if (attempt % 10 === 0) askRelease(name);
        await sleep(Math.min(10 * (attempt + 1), 100));
        continue;
      }
      if (err?.name === 'QuotaExceededError') throw new QuotaExceededError(`cannot open ${fh.name} in OPFS: ${err?.message ?? err}`);
      // WebKit's ports other than Cocoa have the method but not the backend for it.
      const kind = err?.name === 'NotSupportedError' ? 'no-sync-handles' : 'opfs';
      throw new StorageUnavailableError(`cannot open ${fh.name} in OPFS: ${err?.name}: ${err?.message ?? err}`, { kind });
    }
  }
}

/**
 * Close sync access handles, ignoring ones already closed.
 * @param {Iterable<{close(): void}>} handles
 */
export function closeAll(handles) {
  for (const h of handles) {
    try {
      h.close();
    } catch {
      // already closed
    }
  }
}

/**
 * The directories of the repositories this context opened, by name: a reopen (after a close, a
 * recovery, another tab giving the files back) resolves its files from there, two browser round
 * trips (each file, its sync access handle) instead of five (the OPFS root and `ibexdb/` before
 * them). A directory removed since is noticed (an error on its files) and resolved again.
 * Only directories are kept: a file handle whose file was removed still gives a sync access
 * handle in Chromium, one whose reads fail.
 * @type {Map<string, FileSystemDirectoryHandle>}
 */
const directories = new Map();

/**
 * The file name of each sync access handle this module gave out (`release` keeps it under it).
 * @type {WeakMap<object, string>}
 */
const fileNames = new WeakMap();

/**
 * Acquire the sync access handles of `files` in `dir` (created if absent); on failure none stays
 * open.
 * @param {string} name the repository
 * @param {FileSystemDirectoryHandle} dir
 * @param {string[]} files
 * @returns {Promise<any[]>}
 */
async function acquireAll(name, dir, files) {
  const got = await Promise.allSettled(
    files.map(async (f) => {
      const h = await syncHandle(name, await dir.getFileHandle(f, { create: true }));
      fileNames.set(h, f);
      return h;
    }),
  );
  const failed = got.find((r) => r.status === 'rejected');
  if (failed) {
    closeAll(got.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : [])));
    throw /** @type {PromiseRejectedResult} */ (failed).reason;
  }
  return got.map((r) => /** @type {PromiseFulfilledResult<any>} */ (r).value);
}

/**
 * Sync access handles on files of repository `name` (created if absent), acquired together.
 * On failure none stays open.
 * @param {string} name
 * @param {string[]} files
 * @returns {Promise<any[]>} FileSystemSyncAccessHandles, in the order of `files`
 */
export async function openFiles(name, files) {
  // Handles this worker kept after an earlier close: no browser round trip for them.
  const kept = files.map((f) => usable(takeParked(name, f)));
  const missing = files.filter((_, i) => kept[i] === undefined);
  if (missing.length === 0) return kept;
  let got;
  try {
    got = await acquireMissing(name, missing);
  } catch (e) {
    closeAll(kept.filter((h) => h !== undefined));
    throw e;
  }
  return kept.map((h) => h ?? got.shift());
}

/**
 * A kept handle if it still answers and reads (the browser clears storage under kept handles),
 * else undefined.
 * @param {any} h
 */
function usable(h) {
  if (h === undefined) return undefined;
  try {
    // Chromium keeps the handles of a cleared storage answering getSize(); their reads return a
    // negative count (an error code). One byte read tells.
    if (h.getSize() > 0 && h.read(new Uint8Array(1), { at: 0 }) !== 1) throw new Error('stale handle');
    return h;
  } catch {
    closeAll([h]);
    return undefined;
  }
}

/**
 * Acquire `files` of repository `name`, from the directory this worker resolved before if any.
 * @param {string} name
 * @param {string[]} files
 * @returns {Promise<any[]>}
 */
async function acquireMissing(name, files) {
  const known = directories.get(name);
  if (known) {
    try {
      return await acquireAll(name, known, files);
    } catch {
      // Resolved again on any error: a removed directory is NotFoundError in Chromium, but
      // `UnknownError: Unknown failure` in Firefox. A real failure recurs below and is thrown.
      directories.delete(name);
    }
  }
  const dir = await repositoryDir(name, { create: true });
  const handles = await acquireAll(name, dir, files);
  directories.set(name, dir);
  return handles;
}

/**
 * A closed repository's files: their handles are kept for this worker's next open of it
 * (opfs-pool.js), unless they did not come from `openFiles`.
 * @param {string} name
 * @param {any[]} handles
 */
export function release(name, handles) {
  /** @type {Map<string, any>} */
  const keep = new Map();
  for (const h of handles) {
    const f = fileNames.get(h);
    if (f === undefined || keep.has(f)) closeAll([h]);
    else keep.set(f, h);
  }
  park(name, keep);
}

/** @type {import('../storage.js').StorageBackend} */
export const opfsBackend = {
  kind: 'opfs',
  shared: true,
  available: hasSyncHandles,
  checkAccess: checkStorageAccess,
  openFiles,
  release,
  removeRepository,
  // A sync access handle's flush() returns when the bytes are on disk: nothing is pending after it.
  async durable() {},
  failure: () => null,
};
