// Attachments of a memory repository (`storage: 'memory'`, docs/design.md §6.7): Blobs in this
// context's memory, by hash, gone with the repository's files (memory.js `removeRepository`) or
// the context. The same rules as the other stores: written in pieces and hashed as they come,
// visible only when whole, identical bytes stored once, reclaimed at the store's first use in a
// session (nothing removed later, so a Blob handed out stays readable).

import { chargeOnce, hashedPieces } from '../attachment-chunks.js';
import { SignatureError } from '../errors.js';

/** @typedef {import('../attachments.js').AttachmentEngine} AttachmentEngine */

/** The files of each memory repository of this context. @type {Map<string, Map<string, Blob>>} */
const repositories = new Map();

/**
 * The attachment store of memory repository `name`, reclaimed.
 * @param {string} name
 * @param {AttachmentEngine} engine
 */
export function openMemoryAttachments(name, engine) {
  let files = repositories.get(name);
  if (!files) repositories.set(name, (files = new Map()));
  const store = new MemoryAttachmentStore(files);
  store.reclaim(engine);
  return store;
}

/** Drop memory repository `name`'s files. @param {string} name */
export function forgetMemoryAttachments(name) {
  repositories.delete(name);
}

export class MemoryAttachmentStore {
  /** @param {Map<string, Blob>} files */
  constructor(files) {
    this.files = files;
    this.bytes = 0;
    /** The engine generation `bytes` were charged to (-1: not yet). */
    this.charged = -1;
  }

  /** @param {AttachmentEngine} engine */
  reclaim(engine) {
    const keep = this.files.size > 0 ? new Set(engine.attachmentHashes()) : new Set();
    let removed = 0;
    let bytes = 0;
    for (const [h, b] of this.files) {
      if (keep.has(h)) bytes += b.size;
      else {
        this.files.delete(h);
        removed++;
      }
    }
    this.bytes = bytes;
    this.charged = -1;
    chargeOnce(this, engine);
    return { removed, kept: this.files.size };
  }

  /** @param {AttachmentEngine} engine */
  charge(engine) {
    chargeOnce(this, engine);
  }

  /** @param {string} hash @returns {Promise<Blob | null>} */
  async file(hash) {
    return this.files.get(hash) ?? null;
  }

  async names() {
    return [...this.files.keys()];
  }

  /**
   * @param {Blob | ReadableStream<unknown>} source
   * @param {AttachmentEngine} engine
   * @param {string} [expect] the SHA-256 (hex) the bytes must have (fetched from a sync server):
   *   other bytes are SignatureError `tampered` and nothing is stored
   * @returns {Promise<{hash: string, size: number, created: boolean}>}
   */
  async write(source, engine, expect) {
    chargeOnce(this, engine);
    /** @type {Blob[]} */
    const parts = [];
    let size = 0;
    try {
      const { hash } = await hashedPieces(source, engine, (piece) => {
        engine.quotaCharge(piece.length);
        size += piece.length;
        parts.push(new Blob([/** @type {Uint8Array<ArrayBuffer>} */ (piece)]));
      });
      if (expect !== undefined && hash !== expect) {
        throw new SignatureError(`attachment bytes from the sync server have SHA-256 ${hash}, not the ${expect} their commit records; nothing was stored`, { kind: 'tampered' });
      }
      const existing = this.files.get(hash);
      if (existing && existing.size === size) {
        engine.quotaRelease(size);
        return { hash, size, created: false };
      }
      this.files.set(hash, new Blob(parts));
      this.bytes += size;
      return { hash, size, created: true };
    } catch (e) {
      engine.quotaRelease(size);
      throw e;
    }
  }

  /** @param {string} hash @param {number} size @param {AttachmentEngine} engine */
  async drop(hash, size, engine) {
    this.files.delete(hash);
    this.bytes = Math.max(0, this.bytes - size);
    engine.quotaRelease(size);
  }
}
