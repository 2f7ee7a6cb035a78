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
