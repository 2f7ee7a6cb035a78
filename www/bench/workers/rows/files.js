// The go-persist seed's file storage rows (suite `files`, issue 26): files of 2–5 MB written one
// after another, each durable before the next, into a fresh database — 100, then 1,000 — and one
// random file of the 1,000 read whole. The bytes are made untimed and alike for every engine; every
// file read back is checked (its size and a checksum of its bytes). Adapters implement `files`
// (PROTOCOL.md "Files"): setup(), put(i, name, bytes, type), read(i) → ArrayBuffer.

import { isThenable, now } from '../loops.js';
import { rng } from '../../shared/model.js';

/** @typedef {import('../harness.js').Session} Session */
/** @typedef {import('../harness.js').RowParams} RowParams */
/** @typedef {import('../harness.js').RowResult} RowResult */
/** @typedef {{few: number, many: number, minBytes: number, maxBytes: number}} FilesPlan */

/**
 * Call the adapter's `files[name]`, awaiting only a real promise.
 * @param {Session} s @param {string} name @param {...any} args @returns {Promise<any>}
 */
async function filesCall(s, name, ...args) {
  const files = /** @type {Record<string, any> | undefined} */ (s.adapter.files);
  if (!files || typeof files[name] !== 'function') throw new Error(`engine adapter has no files.${name}()`);
  const r = files[name](...args);
  return isThenable(r) ? await r : r;
}

/** File `i`'s size: from `minBytes` to `maxBytes`, spread evenly. @param {FilesPlan} f @param {number} i */
export const fileSize = (f, i) => f.minBytes + Math.floor((((i * 7919) % 1000) / 999) * (f.maxBytes - f.minBytes));

/**
 * File `i`'s bytes: a xorshift stream (incompressible, different for every file).
 * @param {FilesPlan} f @param {number} i
 */
export function fileBytes(f, i) {
  const out = new Uint8Array(fileSize(f, i));
  const words = new Uint32Array(out.buffer, 0, out.length >>> 2);
  let x = (Math.imul(i + 1, 0x9e3779b1) | 1) >>> 0;
  for (let k = 0; k < words.length; k++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    words[k] = x >>> 0;
  }
  for (let k = words.length * 4; k < out.length; k++) out[k] = k & 0xff;
  return out;
}

/** A checksum of `b` (every 4th word, FNV-style): what a read is checked against. @param {ArrayBuffer | Uint8Array} b */
export function fileSum(b) {
  const u8 = b instanceof Uint8Array ? b : new Uint8Array(b);
  const words = new Uint32Array(u8.buffer, u8.byteOffset, u8.byteLength >>> 2);
  let h = 0x811c9dc5;
  for (let k = 0; k < words.length; k += 4) h = Math.imul(h ^ words[k], 0x01000193) >>> 0;
  for (let k = words.length * 4; k < u8.length; k++) h = Math.imul(h ^ u8[k], 0x01000193) >>> 0;
  return `${u8.length}:${h.toString(16)}`;
}

const mb = (/** @type {number} */ b) => `${(b / 1e6).toFixed(1)} MB`;

/**
 * @param {Session} s
 * @returns {Record<string, (p: RowParams) => Promise<RowResult>>}
 */
export function filesRows(s) {
  /** @param {RowParams} p */
  const plan = (p) => /** @type {FilesPlan} */ (p.files);
  /** How many files the database holds (0: not loaded by this suite). */
  let loaded = 0;
  /** Each loaded file's checksum. @type {string[]} */
  let sums = [];

  /** A fresh database with `count` files; returns the timed ms and the bytes written. @param {RowParams} p @param {number} count */
  async function write(p, count) {
    const f = plan(p);
    await s.ensureClosed();
    await s.call('reset', { final: false });
    await s.ensureOpen();
    await filesCall(s, 'setup');
    loaded = 0;
    sums = [];
    let ms = 0;
    let bytes = 0;
    for (let i = 0; i < count; i++) {
      const data = fileBytes(f, i);
      sums.push(fileSum(data));
      bytes += data.length;
      const t0 = now();
      await filesCall(s, 'put', i, `file-${i}.bin`, data, 'application/octet-stream');
      ms += now() - t0;
    }
    const t0 = now();
    await s.optional('settle');
    ms += now() - t0;
    loaded = count;
    return { ms, bytes };
  }

  /** The files read back against their checksums: how many differ. @param {number[]} which */
  async function wrongAmong(which) {
    let wrong = 0;
    for (const i of which) if (fileSum(await filesCall(s, 'read', i)) !== sums[i]) wrong++;
    return wrong;
  }

  /** @param {number} count @returns {(p: RowParams) => Promise<RowResult>} */
  const writeRow = (count) => async (p) => {
    const { ms, bytes } = await write(p, count);
    const stats = /** @type {Record<string, any>} */ (await s.call('stats'));
    const disk = typeof stats?.opfsBytes === 'number' ? stats.opfsBytes : null;
    const spot = [0, count >> 1, count - 1];
    const wrong = await wrongAmong(spot);
    const check = { files: count, bytes, checked: spot.length, ...(wrong ? { wrong: `${wrong} of ${spot.length} files read back differ` } : {}) };
    const efficiency = disk === null ? 'storage not measured' : `storage ${mb(disk)} for ${mb(bytes)} of files (${(disk / bytes).toFixed(3)}×)`;
    return { samples: [ms], k: 1, warmupSamples: 0, check, note: `${count.toLocaleString('en-US')} files, ${mb(bytes)} (${(ms / count).toFixed(1)} ms per file); ${efficiency}` };
  };

  return {
    'files-write-100': (p) => writeRow(plan(p).few)(p),
    'files-write-1000': (p) => writeRow(plan(p).many)(p),
    async 'files-read-one'(p) {
      const f = plan(p);
      if (loaded !== f.many) await write(p, f.many);
      // The engine's wasm memory around a first read in a fresh connection (the worker's memory
      // never shrinks: what the writes grew stays, so a read grows it only past that).
      await s.ensureClosed();
      await s.ensureOpen();
      const before = await s.optional('wasmMemoryBytes');
      const first = fileSum(await filesCall(s, 'read', 0));
      const after = await s.optional('wasmMemoryBytes');
      const r = rng(p.seed);
      const picks = Array.from({ length: (p.warmup ?? 0) + p.samples }, () => r.int(f.many));
      const out = [];
      let wrong = first === sums[0] ? 0 : 1;
      for (let k = 0; k < picks.length; k++) {
        const t0 = now();
        const buf = await filesCall(s, 'read', picks[k]);
        const t = now() - t0;
        if (fileSum(buf) !== sums[picks[k]]) wrong++;
        if (k >= (p.warmup ?? 0)) out.push(t);
      }
      const check = { reads: picks.length + 1, ...(wrong ? { wrong: `${wrong} reads differ` } : {}) };
      const memory = typeof before === 'number' && typeof after === 'number' ? `wasm memory ${mb(before)} → ${mb(after)} over the first read (${mb(fileSize(f, 0))}) in a fresh connection, after the writes` : 'wasm memory not measured';
      return { samples: out, k: 1, warmupSamples: p.warmup ?? 0, check, note: `a random file of ${f.many.toLocaleString('en-US')} (${mb(f.minBytes)}–${mb(f.maxBytes)}), read whole into an ArrayBuffer; ${memory}` };
    },
  };
}
