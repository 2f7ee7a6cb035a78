// A file held in memory with the synchronous interface the engine calls (the shape of OPFS's
// FileSystemSyncAccessHandle: getSize, read(buf, {at}), write(buf, {at}), truncate, flush,
// close; bindings/wasm/src/opfs.rs binds it structurally). The IndexedDB and memory backends
// give the engine these: the engine's reads and writes are synchronous, so a backend whose own
// primitive is asynchronous keeps the whole file in memory, loaded at open, and persists what
// changed at `flush()` (IndexedDB: the chunks written since the last flush, in one transaction).

/** Bytes per chunk: the unit a backend persists (the IndexedDB backend keeps one record per chunk). */
export const CHUNK = 64 * 1024;

export class MemFile {
  /**
   * @param {string} name the file's name in its repository (`log`, `snapshot`, ...)
   * @param {Uint8Array} [bytes] its content
   * @param {{flush(file: MemFile): void, close(file: MemFile): void} | null} [sink] told at
   *   `flush()` (it persists the dirty chunks) and at `close()`
   */
  constructor(name, bytes = new Uint8Array(0), sink = null) {
    this.name = name;
    /** Backing store; `size` bytes of it are the file. */
    this.buf = new Uint8Array(Math.max(CHUNK, bytes.length));
    this.buf.set(bytes);
    this.size = bytes.length;
    /** @type {Set<number>} chunk indices written since the last flush */
    this.dirty = new Set();
    /** The size changed since the last flush. */
    this.resized = false;
    this.sink = sink;
    this.closed = false;
  }

  /**
   * A file over `buf` as it is (no copy): its first `size` bytes are the file.
   * @param {string} name
   * @param {Uint8Array} buf
   * @param {number} size
   * @param {{flush(file: MemFile): void, close(file: MemFile): void} | null} sink
   */
  static adopt(name, buf, size, sink) {
    const m = new MemFile(name, new Uint8Array(0), sink);
    m.buf = buf.length >= CHUNK ? /** @type {Uint8Array<ArrayBuffer>} */ (buf) : new Uint8Array(CHUNK);
    if (m.buf !== buf) m.buf.set(buf.subarray(0, size));
    m.size = size;
    return m;
  }

  _open() {
    if (this.closed) throw Object.assign(new Error(`file ${this.name} is closed`), { name: 'InvalidStateError' });
  }

  getSize() {
    this._open();
    return this.size;
  }

  /**
   * @param {Uint8Array} out
   * @param {{at?: number}} [opts]
   * @returns {number} bytes read (fewer at the end of the file)
   */
  read(out, { at = 0 } = {}) {
    this._open();
    const n = Math.max(0, Math.min(out.length, this.size - at));
    if (n > 0) out.set(this.buf.subarray(at, at + n));
    return n;
  }

  /**
   * @param {Uint8Array} data
   * @param {{at?: number}} [opts]
   * @returns {number} bytes written (all)
   */
  write(data, { at = 0 } = {}) {
    this._open();
    const end = at + data.length;
    this._reserve(end);
    this.buf.set(data, at);
    if (end > this.size) {
      this.size = end;
      this.resized = true;
    }
    for (let c = Math.floor(at / CHUNK), last = Math.floor((end - 1) / CHUNK); c <= last && data.length > 0; c++) this.dirty.add(c);
    return data.length;
  }

  /** @param {number} len */
  truncate(len) {
    this._open();
    this._reserve(len);
    if (len < this.size) {
      this.buf.fill(0, len, this.size);
      if (len % CHUNK !== 0) this.dirty.add(Math.floor(len / CHUNK));
    } else if (len > this.size) {
      for (let c = Math.floor(this.size / CHUNK); c * CHUNK < len; c++) this.dirty.add(c);
    }
    if (len !== this.size) this.resized = true;
    this.size = len;
  }

  flush() {
    this._open();
    this.sink?.flush(this);
  }

  close() {
    if (this.closed) return;
    this.closed = true;
    this.sink?.close(this);
  }

  /**
   * The chunks written since the last call (their current bytes, copies) and the size; clears
   * the dirty set. Chunks past the end are not returned (the size says they are gone).
   * @returns {{size: number, chunks: [number, Uint8Array][], resized: boolean}}
   */
  takeDirty() {
    /** @type {[number, Uint8Array][]} */
    const chunks = [];
    for (const c of [...this.dirty].sort((a, b) => a - b)) {
      const start = c * CHUNK;
      if (start >= this.size) continue;
      chunks.push([c, this.buf.slice(start, Math.min(start + CHUNK, this.size))]);
    }
    const out = { size: this.size, chunks, resized: this.resized };
    this.dirty.clear();
    this.resized = false;
    return out;
  }

  /** @param {number} len */
  _reserve(len) {
    if (len <= this.buf.length) return;
    let cap = this.buf.length;
    while (cap < len) cap = cap < 64 << 20 ? cap * 2 : cap + (64 << 20);
    const next = new Uint8Array(cap);
    next.set(this.buf.subarray(0, this.size));
    this.buf = next;
  }
}
