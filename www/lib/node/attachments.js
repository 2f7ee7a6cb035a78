// Attachment files of the Node entry (./index.js; docs/design.md §6.7), as the browser's
// (../attachments.js) with Node's files: `<directory>/<name>/attachments/<sha256 hex>`, written
// as `tmp-<uuid>` in 1 MiB chunks hashed by the engine, fsynced, then renamed to the hash before
// the commit; temporaries and files no visible item refers to are removed at open. With
// `storage: 'memory'` the bytes are Blobs in memory, gone at close. The directory exists once
// something was attached.

import { randomUUID } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, mkdirSync, openAsBlob, openSync, readdirSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import path from 'node:path';
import { readPieces } from '../attachment-chunks.js';
import { QuotaExceededError, SignatureError } from '../errors.js';

const HASH_NAME = /^[0-9a-f]{64}$/;

export class NodeAttachments {
  /**
   * @param {string | null} dir the attachments directory (null: in memory)
   * @param {import('../attachments.js').AttachmentEngine} engine
   */
  constructor(dir, engine) {
    this.dir = dir;
    /** @type {Map<string, Blob>} in memory only */
    this.mem = new Map();
    this.bytes = 0;
    if (dir && existsSync(dir)) {
      const names = readdirSync(dir);
      const keep = names.some((n) => HASH_NAME.test(n)) ? new Set(engine.attachmentHashes()) : new Set();
      for (const n of names) {
        if (HASH_NAME.test(n) && keep.has(n)) this.bytes += statSync(path.join(dir, n)).size;
        else rmSync(path.join(dir, n), { force: true, recursive: true });
      }
      try {
        engine.quotaCharge(this.bytes);
      } catch {
        // over the limit already: later writes fail
      }
    }
  }

  /** File names (tests). */
  names() {
    if (!this.dir) return [...this.mem.keys()];
    return existsSync(this.dir) ? readdirSync(this.dir) : [];
  }

  /**
   * The bytes of `hash` as a Blob of `type`, or null.
   * @param {string} hash @param {string} type @param {number} size
   * @returns {Promise<Blob | null>}
   */
  async file(hash, type, size) {
    if (!this.dir) {
      const b = this.mem.get(hash);
      return b && b.size === size ? b.slice(0, b.size, type) : null;
    }
    const p = path.join(this.dir, hash);
    try {
      if (statSync(p).size !== size) return null;
      return await openAsBlob(p, { type });
    } catch (e) {
      if (/** @type {any} */ (e)?.code === 'ENOENT') return null;
      throw e;
    }
  }

  /**
   * Stream `source` into a file named by its hash (see the browser's `AttachmentStore.write`).
   * @param {Blob | ReadableStream<unknown>} source
   * @param {import('../attachments.js').AttachmentEngine} engine
   * @param {string} [expect] the SHA-256 (hex) the bytes must have (fetched from a sync server):
   *   other bytes are SignatureError `tampered` and nothing is stored
   * @returns {Promise<{hash: string, size: number, created: boolean}>}
   */
  async write(source, engine, expect) {
    const reader = (source instanceof Blob ? source.stream() : source).getReader();
    // The directory is made by the first attachment (a repository without any has none).
    if (this.dir) mkdirSync(this.dir, { recursive: true });
    const tmp = this.dir ? path.join(this.dir, `tmp-${randomUUID()}`) : null;
    const fd = tmp ? openSync(tmp, 'w') : -1;
    /** @type {Uint8Array[]} */
    const kept = [];
    const hasher = engine.newHasher();
    let size = 0;
    let charged = 0;
    let closed = false;
    try {
      await readPieces(reader, (piece) => {
        engine.quotaCharge(piece.length);
        charged += piece.length;
        if (fd >= 0) {
          for (let at = 0; at < piece.length; ) at += writeSync(fd, piece, at, piece.length - at, size + at);
        } else kept.push(piece.slice());
        hasher.update(piece);
        size += piece.length;
      });
      if (fd >= 0) {
        fsyncSync(fd);
        closeSync(fd);
        closed = true;
      }
      const hash = hasher.finish();
      if (expect !== undefined && hash !== expect) {
        throw new SignatureError(`attachment bytes from the sync server have SHA-256 ${hash}, not the ${expect} their commit records; nothing was stored`, { kind: 'tampered' });
      }
      const existing = this.dir ? await this.file(hash, '', size) : this.mem.get(hash);
      if (existing && existing.size === size) {
        if (tmp) rmSync(tmp, { force: true });
        engine.quotaRelease(charged);
        return { hash, size, created: false };
      }
      if (tmp && this.dir) renameSync(tmp, path.join(this.dir, hash));
      else this.mem.set(hash, new Blob(/** @type {BlobPart[]} */ (kept)));
      this.bytes += size;
      return { hash, size, created: true };
    } catch (e) {
      reader.cancel(e).catch(() => {});
      if (fd >= 0 && !closed) closeSync(fd);
      if (tmp) rmSync(tmp, { force: true });
      engine.quotaRelease(charged);
      const err = /** @type {any} */ (e);
      if (err?.code === 'ENOSPC' || err?.code === 'EDQUOT') throw new QuotaExceededError(`no space for an attachment: ${err.message}`);
      throw e;
    } finally {
      try {
        hasher.free();
      } catch {
        // freed already
      }
    }
  }

  /**
   * The files a visible item refers to, for the sync manager to offer to the server.
   * @param {import('../attachments.js').AttachmentEngine} engine
   * @returns {Promise<Array<{hash: string, file: Blob}>>}
   */
  async local(engine) {
    const names = this.names().filter((n) => HASH_NAME.test(n));
    if (names.length === 0) return [];
    const keep = new Set(engine.attachmentHashes());
    const out = [];
    for (const hash of names) {
      if (!keep.has(hash)) continue;
      const file = this.dir ? await openAsBlob(path.join(this.dir, hash)) : this.mem.get(hash);
      if (file) out.push({ hash, file });
    }
    return out;
  }

  /**
   * Remove the file of `hash` (this write created it and its commit failed).
   * @param {string} hash @param {number} size @param {import('../attachments.js').AttachmentEngine} engine
   */
  drop(hash, size, engine) {
    if (this.dir) rmSync(path.join(this.dir, hash), { force: true });
    else this.mem.delete(hash);
    this.bytes = Math.max(0, this.bytes - size);
    engine.quotaRelease(size);
  }
}
