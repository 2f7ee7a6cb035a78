// Attachment files in the worker (docs/design.md §6.7): bytes outside the commit log, one OPFS
// file per content, named by its SHA-256 (hex), in the repository's directory:
//
//   <OPFS root>/ibexdb/<name>/attachments/<64 hex digits>   complete files only
//                                        /tmp-<uuid>        being written (removed at the next open)
//
// A write streams its source in CHUNK_BYTES pieces into a temporary file through a sync access
// handle, hashing each piece with the engine's incremental SHA-256 (a Blob of up to 64 MiB is
// read whole and hashed by WebCrypto instead: `hashedPieces`), flushes it, and only then gives it its hash as its name (`move`):
// a kill mid-write leaves a temporary file, never a visible one with part of the bytes. The
// commit that records the attachment is written after that (ops.js `attach`). Identical bytes
// are stored once: a write whose hash already has a file drops its temporary copy.
//
// Reclaim: at open (`AttachmentStore.open`) every temporary file is removed, and every hash file
// no visible item refers to (`Engine.attachmentHashes`): history does not keep bytes alive.
// Nothing is removed while the repository is open, so a Blob `attachment()` returned stays
// readable for the session.

import { CHUNK_BYTES, chargeOnce, hashedPieces } from './attachment-chunks.js';
import { repositoryDir } from './backends/opfs.js';
import { QuotaExceededError, SignatureError, StorageUnavailableError } from './errors.js';

/** The attachments directory, inside the repository's. */
export const ATTACHMENT_DIR = 'attachments';
const TEMP_PREFIX = 'tmp-';
const HASH_NAME = /^[0-9a-f]{64}$/;

/**
 * What a store needs of the engine: its incremental hash and the shared byte limit.
 * @typedef {object} AttachmentEngine
 * @property {() => {update(b: Uint8Array): void, finish(): string, free(): void}} newHasher
 * @property {(bytes: number) => void} quotaCharge throws QuotaExceededError when they do not fit
 * @property {(bytes: number) => void} quotaRelease
 * @property {() => string[]} attachmentHashes every hash a visible item refers to
 * @property {number} generation changes when the engine is reopened (its byte count starts again)
 */

/**
 * The attachment store of repository `name` (OPFS), reclaimed (temporaries and unreferenced
 * files removed); null when it has no attachments directory and `create` is false.
 * @param {string} name
 * @param {AttachmentEngine} engine
 * @param {{create?: boolean}} [options]
 * @returns {Promise<AttachmentStore | null>}
 */
export async function openAttachments(name, engine, { create = false } = {}) {
  const repo = await repositoryDir(name, { create: true });
  let dir;
  try {
    dir = await repo.getDirectoryHandle(ATTACHMENT_DIR, { create });
  } catch (e) {
    if (/** @type {any} */ (e)?.name === 'NotFoundError') return null;
    throw e;
  }
  const store = new AttachmentStore(dir);
  await store.reclaim(engine);
  return store;
}

/** @param {unknown} e */
const isQuota = (e) => /** @type {any} */ (e)?.name === 'QuotaExceededError';

export class AttachmentStore {
  /**
   * @param {FileSystemDirectoryHandle} dir the attachments directory
   */
  constructor(dir) {
    this.dir = dir;
    /** Bytes of the visible files, as last counted. */
    this.bytes = 0;
    /** The engine generation `bytes` were charged to (-1: not yet). */
    this.charged = -1;
  }

  /** @returns {Promise<Array<[string, FileSystemHandle]>>} */
  async _entries() {
    /** @type {Array<[string, FileSystemHandle]>} */
    const out = [];
    for await (const [name, h] of /** @type {any} */ (this.dir).entries()) out.push([name, h]);
    return out;
  }

  /**
   * Remove temporary files and files no visible item refers to; count the rest.
   * @param {AttachmentEngine} engine
   * @returns {Promise<{removed: number, kept: number}>}
   */
  async reclaim(engine) {
    const entries = await this._entries();
    let removed = 0;
    const hashes = entries.filter(([n]) => HASH_NAME.test(n));
    const keep = hashes.length > 0 ? new Set(engine.attachmentHashes()) : new Set();
    let bytes = 0;
    for (const [n, h] of entries) {
      if (h.kind === 'file' && HASH_NAME.test(n) && keep.has(n)) {
        bytes += (await /** @type {FileSystemFileHandle} */ (h).getFile()).size;
        continue;
      }
      await this.dir.removeEntry(n, { recursive: true }).catch(() => {});
      removed++;
    }
    this.bytes = bytes;
    this.charged = -1;
    this.charge(engine);
    return { removed, kept: entries.length - removed };
  }

  /**
   * Count the stored files against the engine's byte limit once per engine (a reopened engine
   * counts its log and snapshot afresh). Files already over the limit are counted as far as
   * they fit: further writes fail.
   * @param {AttachmentEngine} engine
   */
  charge(engine) {
    chargeOnce(this, engine);
  }

  /**
   * The file holding `hash`, or null.
   * @param {string} hash
   * @returns {Promise<File | null>}
   */
  async file(hash) {
    try {
      return await (await this.dir.getFileHandle(hash)).getFile();
    } catch (e) {
      if (/** @type {any} */ (e)?.name === 'NotFoundError') return null;
      throw e;
    }
  }

  /** Names of the files (hash files and temporaries), for tests and storageInfo. */
  async names() {
    return (await this._entries()).map(([n]) => n);
  }

  /**
   * Stream `source` into a file named by its hash. Resolves once the file is flushed and
   * visible: `{hash, size, created}` (`created` false when identical bytes were stored already).
   * On any failure nothing is visible and the temporary file is gone.
   * @param {Blob | ReadableStream<unknown>} source
   * @param {AttachmentEngine} engine
   * @param {string} [expect] the SHA-256 (hex) the bytes must have (bytes fetched from a sync
   *   server): other bytes are SignatureError `tampered` and nothing is stored
   * @returns {Promise<{hash: string, size: number, created: boolean}>}
   */
  async write(source, engine, expect) {
    this.charge(engine);
    const tmpName = TEMP_PREFIX + crypto.randomUUID();
    const tmp = await this.dir.getFileHandle(tmpName, { create: true });
    /** @type {any} */
    let handle = null;
    let size = 0;
    let charged = 0;
    try {
      handle = await /** @type {any} */ (tmp).createSyncAccessHandle();
      const { hash } = await hashedPieces(source, engine, (piece) => {
        engine.quotaCharge(piece.length);
        charged += piece.length;
        const n = handle.write(piece, { at: size });
        // Chromium's in-memory OPFS reports running out of room as a short count (opfs.rs).
        if (n !== piece.length) throw new QuotaExceededError(`OPFS write failed: no space for ${piece.length} bytes of an attachment`);
        size += piece.length;
      });
      handle.flush();
      handle.close();
      handle = null;
      if (expect !== undefined && hash !== expect) {
        throw new SignatureError(`attachment bytes from the sync server have SHA-256 ${hash}, not the ${expect} their commit records; nothing was stored`, { kind: 'tampered' });
      }
      const existing = await this.file(hash);
      if (existing && existing.size === size) {
        // Stored already: one copy on disk.
        await this.dir.removeEntry(tmpName).catch(() => {});
        engine.quotaRelease(charged);
        return { hash, size, created: false };
      }
      // A file of another length under this hash is a copy cut short (moveTo's fallback).
      if (existing) await this.dir.removeEntry(hash);
      await moveTo(this.dir, tmp, tmpName, hash);
      this.bytes += size;
      return { hash, size, created: true };
    } catch (e) {
      try {
        handle?.close();
      } catch {
        // already closed
      }
      await this.dir.removeEntry(tmpName).catch(() => {});
      engine.quotaRelease(charged);
      if (isQuota(e)) throw e instanceof QuotaExceededError ? e : new QuotaExceededError(/** @type {any} */ (e).message);
      throw e;
    }
  }

  /**
   * Remove the file of `hash` (a write whose commit then failed). Only for a file this write
   * created: another item may refer to one that existed before.
   * @param {string} hash
   * @param {number} size
   * @param {AttachmentEngine} engine
   */
  async drop(hash, size, engine) {
    await this.dir.removeEntry(hash).catch(() => {});
    this.bytes = Math.max(0, this.bytes - size);
    engine.quotaRelease(size);
  }
}

/**
 * Give the temporary file its final name. `move` where the browser has it on OPFS files; else
 * a copy through sync access handles (the temporary is removed after).
 * @param {FileSystemDirectoryHandle} dir
 * @param {FileSystemFileHandle} tmp
 * @param {string} tmpName
 * @param {string} name
 */
async function moveTo(dir, tmp, tmpName, name) {
  const t = /** @type {any} */ (tmp);
  if (typeof t.move === 'function') {
    await t.move(name);
    return;
  }
  // No move (WebKit): copy into `<name>`. A kill mid-copy leaves a file shorter than its
  // descriptor's size: `attachment()` checks the size (AttachmentUnavailableError), and the
  // next write of those bytes replaces it (`write`).
  const src = await t.createSyncAccessHandle();
  const dstHandle = await dir.getFileHandle(name, { create: true });
  const dst = await /** @type {any} */ (dstHandle).createSyncAccessHandle();
  try {
    const buf = new Uint8Array(CHUNK_BYTES);
    const size = src.getSize();
    for (let at = 0; at < size; ) {
      const n = src.read(buf, { at });
      if (n <= 0) throw new StorageUnavailableError('an attachment copy read nothing', { kind: 'attachments' });
      if (dst.write(buf.subarray(0, n), { at }) !== n) throw new QuotaExceededError('OPFS write failed: no space for an attachment copy');
      at += n;
    }
    dst.flush();
  } catch (e) {
    dst.close();
    src.close();
    await dir.removeEntry(name).catch(() => {});
    throw e;
  }
  dst.close();
  src.close();
  await dir.removeEntry(tmpName).catch(() => {});
}
