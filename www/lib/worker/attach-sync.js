// Attachment bytes over the sync connection (docs/design.md §12.2 *Attachment bytes*, §6.7;
// protocol version 5). The commits travel through the engine's sync client; the bytes are the
// host's: this module speaks the five attachment messages itself, beside the engine.
//
// - Upload: once the server has acknowledged every local commit (so it holds the commits that
//   record the attachments), every attachment file of this device that a visible item refers
//   to is offered (`AttachOffer` hash, size); the server answers `AttachWant` with the offset to
//   send from (the size: it holds them), and the bytes follow in chunks of ATTACH_CHUNK_BYTES,
//   read from the file one at a time (at most about UPLOAD_BUFFER_BYTES queued in the socket).
//   One upload at a time; a refusal (`AttachError`) skips the file until the next connection.
//   Offers are made again on every connection (the server answers those it holds at once).
// - Download (`fetch`): `AttachGet` hash, size, offset, length, one window of
//   DOWNLOAD_WINDOW_BYTES at a time; the server's chunks become a ReadableStream the caller
//   writes to its store (which checks the SHA-256), and the next window is asked for when the
//   store has taken what came (the stream's `pull`): about two windows are in memory at most,
//   whatever the file's size. Chunks are handled as they arrive, not on the work chain: the
//   caller holds the chain while it writes.
//   A closed connection ends the stream with AttachmentUnavailableError (the caller's store
//   removes its temporary file; the next read fetches from the start).
//
// Message layout: version (5) ‖ type ‖ hash (32 bytes) ‖ body; varint = unsigned LEB128.

import { AttachmentUnavailableError, fromWire, syncErrorToWire } from '../errors.js';

const VERSION = 5;
const OFFER = 8;
const WANT = 9;
const CHUNK = 10;
const GET = 11;
const ERROR = 12;
/** Largest chunk a message carries (the core's ATTACH_CHUNK_BYTES). */
export const ATTACH_CHUNK_BYTES = 256 * 1024;
/** Bytes an upload lets the socket hold before it waits for them to drain. */
const UPLOAD_BUFFER_BYTES = 4 * ATTACH_CHUNK_BYTES;
/** A download asks for this many bytes at a time, the next window once the store took half. */
export const DOWNLOAD_WINDOW_BYTES = 8 * ATTACH_CHUNK_BYTES;

/** @param {string} hex @returns {Uint8Array} */
function fromHex(hex) {
  const b = new Uint8Array(32);
  for (let i = 0; i < 32; i++) b[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return b;
}

/** @param {Uint8Array} b @returns {string} */
const toHex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');

/** @param {number[]} out @param {number} v */
function varint(out, v) {
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
}

/**
 * A message `type` about `hash` with varint fields, then `bytes` length-prefixed if given.
 * @param {number} type @param {string} hash @param {number[]} fields @param {Uint8Array} [bytes]
 */
function encode(type, hash, fields, bytes) {
  /** @type {number[]} */
  const head = [VERSION, type, ...fromHex(hash)];
  for (const f of fields) varint(head, f);
  if (bytes) varint(head, bytes.length);
  const out = new Uint8Array(head.length + (bytes?.length ?? 0));
  out.set(head);
  if (bytes) out.set(bytes, head.length);
  return out;
}

/** A reader over a message's body. */
class Reader {
  /** @param {Uint8Array} b */
  constructor(b) {
    this.b = b;
    this.at = 2;
  }
  varint() {
    let v = 0;
    let scale = 1;
    for (;;) {
      if (this.at >= this.b.length) throw new Error('truncated attachment message');
      const x = this.b[this.at++];
      v += (x & 0x7f) * scale;
      if (x < 0x80) return v;
      scale *= 0x80;
    }
  }
  /** @param {number} n */
  take(n) {
    if (this.at + n > this.b.length) throw new Error('truncated attachment message');
    const s = this.b.subarray(this.at, this.at + n);
    this.at += n;
    return s;
  }
  lp() {
    return this.take(this.varint());
  }
  str() {
    return new TextDecoder().decode(this.lp());
  }
}

/** @param {number} ms */
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * @typedef {object} Download
 * @property {number} size
 * @property {number} offset bytes received
 * @property {number} asked bytes asked for (the windows sent)
 * @property {ReadableStreamDefaultController<Uint8Array>} controller
 */

export class AttachmentSync {
  constructor() {
    /** @type {Map<string, {resolve: (offset: number) => void, reject: (e: Error) => void}>} answers to offers */
    this._asked = new Map();
    /** @type {Map<string, Download>} downloads under way, by hash */
    this._downloads = new Map();
    /** Hashes the server said it holds, on this connection. */
    this.held = new Set();
    this._pushing = false;
    this._again = false;
    /** A file may wait to be offered: set by `changed()` and by a new connection. */
    this._dirty = true;
    this.uploaded = 0;
  }

  /** A local attach wrote a file: the next `pushAll` looks at the files again. */
  changed() {
    this._dirty = true;
  }

  /** @param {Uint8Array} bytes whether it is an attachment message (handled by `onMessage`) */
  static is(bytes) {
    return bytes.length >= 2 && bytes[0] === VERSION && bytes[1] >= OFFER && bytes[1] <= ERROR;
  }

  /** A message from the server. @param {Uint8Array} bytes */
  onMessage(bytes) {
    const r = new Reader(bytes);
    const hash = toHex(r.take(32));
    switch (bytes[1]) {
      case WANT: {
        const offset = r.varint();
        const w = this._asked.get(hash);
        this._asked.delete(hash);
        w?.resolve(offset);
        break;
      }
      case CHUNK: {
        const offset = r.varint();
        const chunk = r.lp();
        const d = this._downloads.get(hash);
        if (!d) break;
        if (offset !== d.offset || offset + chunk.length > d.size) {
          this._end(hash, new AttachmentUnavailableError('the sync server sent attachment bytes out of order', { hash }));
          break;
        }
        d.controller.enqueue(chunk.slice());
        d.offset += chunk.length;
        if (d.offset === d.size) {
          this._downloads.delete(hash);
          d.controller.close();
        }
        break;
      }
      case ERROR: {
        const code = r.varint();
        const name = r.str();
        const kind = r.str();
        const message = r.str();
        const e = fromWire({ ...syncErrorToWire({ code, name, kind, message }), hash });
        const w = this._asked.get(hash);
        this._asked.delete(hash);
        w?.reject(e);
        this._end(hash, e);
        break;
      }
      default:
    }
  }

  /** @param {string} hash @param {Error} e */
  _end(hash, e) {
    const d = this._downloads.get(hash);
    if (!d) return;
    this._downloads.delete(hash);
    d.controller.error(e);
  }

  /** The connection closed: everything under way fails. */
  closed() {
    const e = () => new AttachmentUnavailableError('the sync connection closed during an attachment transfer');
    for (const [, w] of this._asked) w.reject(e());
    this._asked.clear();
    for (const hash of [...this._downloads.keys()]) this._end(hash, e());
    this.held.clear();
    this._dirty = true;
  }

  /**
   * The bytes of attachment `hash` (`size` bytes) from the server, as a stream of chunks
   * (unverified: the caller's store checks the SHA-256).
   * @param {WebSocket} ws @param {string} hash @param {number} size
   * @returns {ReadableStream<Uint8Array>}
   */
  fetch(ws, hash, size) {
    /** @type {Download | null} */
    let d = null;
    /** Ask for the next window while less than half a window is on its way or queued. */
    const ask = () => {
      if (!d || this._downloads.get(hash) !== d || d.asked >= size) return;
      if (d.asked - d.offset > DOWNLOAD_WINDOW_BYTES / 2) return;
      const length = Math.min(DOWNLOAD_WINDOW_BYTES, size - d.asked);
      ws.send(encode(GET, hash, [size, d.asked, length]));
      d.asked += length;
    };
    return new ReadableStream(
      {
        start: (controller) => {
          this._end(hash, new AttachmentUnavailableError('superseded by another download'));
          if (size === 0) {
            controller.close(); // nothing to fetch
            return;
          }
          d = { size, offset: 0, asked: 0, controller };
          this._downloads.set(hash, d);
          ask();
        },
        // The store took chunks: room for the next window.
        pull: () => ask(),
      },
      // Queued chunks (at most ATTACH_CHUNK_BYTES each) before `pull` waits.
      { highWaterMark: 4 },
    );
  }

  /**
   * Ask `msg` about `hash` and wait for the server's `AttachWant` offset (or its refusal).
   * @param {WebSocket} ws @param {string} hash @param {Uint8Array<ArrayBuffer> | null} msg
   * @returns {Promise<number>}
   */
  _ask(ws, hash, msg) {
    return new Promise((resolve, reject) => {
      this._asked.get(hash)?.reject(new Error('superseded'));
      this._asked.set(hash, { resolve, reject });
      if (msg) ws.send(msg);
    });
  }

  /**
   * Upload one file: offer it, send what the server wants. True once the server holds it.
   * @param {() => WebSocket | null} socket @param {string} hash @param {Blob} file
   */
  async _upload(socket, hash, file) {
    let ws = socket();
    if (!ws) return false;
    const size = file.size;
    const answer = this._ask(ws, hash, encode(OFFER, hash, [size]));
    let offset = await answer;
    if (offset >= size) return true;
    const done = this._ask(ws, hash, null);
    done.catch(() => {});
    while (offset < size) {
      while (ws.bufferedAmount > UPLOAD_BUFFER_BYTES) {
        await sleep(5);
        if (socket() !== ws) throw new AttachmentUnavailableError('the sync connection closed during an upload');
      }
      const end = Math.min(size, offset + ATTACH_CHUNK_BYTES);
      const bytes = new Uint8Array(await file.slice(offset, end).arrayBuffer());
      ws = /** @type {WebSocket} */ (socket());
      if (!ws) throw new AttachmentUnavailableError('the sync connection closed during an upload');
      ws.send(encode(CHUNK, hash, [offset], bytes));
      offset = end;
    }
    return (await done) >= size;
  }

  /**
   * Offer every local attachment the server may lack, one at a time, until none is left
   * (called again while running: runs once more after).
   * @param {() => WebSocket | null} socket the welcomed connection, or null
   * @param {() => Promise<Array<{hash: string, file: Blob}>>} local this device's files
   */
  async pushAll(socket, local) {
    if (this._pushing) {
      this._again = true;
      return;
    }
    // Listing the files asks the engine which hashes visible items refer to (it loads cold
    // items): only after an attach or on a new connection, not after every acknowledgement.
    if (!this._dirty) return;
    this._pushing = true;
    try {
      do {
        this._again = false;
        this._dirty = false;
        for (const { hash, file } of await local()) {
          if (this.held.has(hash) || !socket()) continue;
          const ok = await this._upload(socket, hash, file).catch(() => {
            // A dropped connection: offered again on the next one (`closed` sets `_dirty`).
            return false;
          });
          // Held, or refused: not offered again on this connection.
          this.held.add(hash);
          if (ok) this.uploaded++;
        }
      } while (this._again && this._dirty && socket());
    } finally {
      this._pushing = false;
    }
  }
}
