// An attachment's source read in CHUNK_BYTES pieces, shared by the browser's stores (OPFS:
// attachments.js; IndexedDB and memory: backends/*-attachments.js) and ibexdb/node's files
// (node/attachments.js): a 500 MB stream never sits whole in memory, and each piece is written
// and hashed as it comes. Also what every store does to count its bytes against the engine's
// limit (`chargeOnce`).

import { InvalidValueError } from './errors.js';

/** Bytes per piece written (and hashed). */
export const CHUNK_BYTES = 1 << 20;

/**
 * A stream chunk as bytes (a stream of anything else is an InvalidValueError).
 * @param {unknown} v
 * @returns {Uint8Array}
 */
function toBytes(v) {
  if (v instanceof Uint8Array) return v;
  if (v instanceof ArrayBuffer) return new Uint8Array(v);
  if (ArrayBuffer.isView(v)) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  throw new InvalidValueError('an attachment stream must yield Uint8Array or ArrayBuffer chunks', { argument: 'data' });
}

/**
 * Read `reader` to its end, handing `onPiece` pieces of CHUNK_BYTES (the last one shorter; none
 * for an empty stream). A piece is a view of one reused buffer, valid until `onPiece` returns
 * (or, when it returns a promise, until that settles: the next piece waits for it).
 * @param {ReadableStreamDefaultReader<unknown>} reader
 * @param {(piece: Uint8Array) => void | Promise<void>} onPiece
 */
export async function readPieces(reader, onPiece) {
  const buf = new Uint8Array(CHUNK_BYTES);
  let fill = 0;
  for (;;) {
    const r = await reader.read();
    if (r.done) break;
    const chunk = toBytes(r.value);
    for (let at = 0; at < chunk.length; ) {
      const n = Math.min(CHUNK_BYTES - fill, chunk.length - at);
      buf.set(chunk.subarray(at, at + n), fill);
      fill += n;
      at += n;
      if (fill === CHUNK_BYTES) {
        await onPiece(buf);
        fill = 0;
      }
    }
  }
  if (fill > 0) await onPiece(buf.subarray(0, fill));
}

/** Blobs up to this size are hashed by WebCrypto in one call (native SHA-256, running beside the
 * writes) instead of piece by piece in wasm: held whole in memory meanwhile. */
export const WHOLE_HASH_MAX = 64 << 20;

/** @param {ArrayBuffer} d */
const hex = (d) => Array.from(new Uint8Array(d), (b) => b.toString(16).padStart(2, '0')).join('');

/**
 * Hand `onPiece` the bytes of `source` in CHUNK_BYTES pieces (as `readPieces`) and return their
 * SHA-256 (hex) and size. A Blob of at most WHOLE_HASH_MAX is read whole and hashed by WebCrypto
 * while its pieces are written; anything else streams and is hashed piece by piece by the
 * engine's incremental SHA-256 (a 500 MB stream never sits whole in memory). On a failure the
 * source is cancelled and the error thrown.
 * @param {Blob | ReadableStream<unknown>} source
 * @param {{newHasher: () => {update(b: Uint8Array): void, finish(): string, free(): void}}} engine
 * @param {(piece: Uint8Array) => void | Promise<void>} onPiece
 * @returns {Promise<{hash: string, size: number}>}
 */
export async function hashedPieces(source, engine, onPiece) {
  if (source instanceof Blob && source.size <= WHOLE_HASH_MAX && globalThis.crypto?.subtle) {
    const bytes = new Uint8Array(await source.arrayBuffer());
    const digest = crypto.subtle.digest('SHA-256', bytes);
    digest.catch(() => {});
    for (let at = 0; at < bytes.length; at += CHUNK_BYTES) await onPiece(bytes.subarray(at, Math.min(bytes.length, at + CHUNK_BYTES)));
    return { hash: hex(await digest), size: bytes.length };
  }
  const reader = (source instanceof Blob ? source.stream() : source).getReader();
  const hasher = engine.newHasher();
  let size = 0;
  try {
    await readPieces(reader, (piece) => {
      hasher.update(piece);
      size += piece.length;
      return onPiece(piece);
    });
    return { hash: hasher.finish(), size };
  } catch (e) {
    reader.cancel(e).catch(() => {});
    throw e;
  } finally {
    try {
      hasher.free();
    } catch {
      // freed already
    }
    reader.releaseLock?.();
  }
}

/**
 * Count a store's bytes (`store.bytes`) against the engine's byte limit once per engine (a
 * reopened engine counts its log and snapshot afresh; `store.charged` is the generation counted
 * for, -1 for none). Bytes already over the limit count as far as they fit: further writes fail.
 * @param {{bytes: number, charged: number}} store
 * @param {{generation: number, quotaCharge: (bytes: number) => void}} engine
 */
export function chargeOnce(store, engine) {
  if (store.charged === engine.generation) return;
  store.charged = engine.generation;
  try {
    engine.quotaCharge(store.bytes);
  } catch (e) {
    if (/** @type {any} */ (e)?.name !== 'QuotaExceededError') throw e;
  }
}
