// Response compression for scripts/serve.mjs: which encoding a request accepts, and the encoded
// bytes of a file in it.
//
// A file goes out encoded from its precompressed sibling (`ibexdb_bg.wasm.br`, `.gz`: what
// `make pkg` writes beside the wasm, what nginx's gzip_static/brotli_static and Caddy's
// `precompressed` serve) when the sibling is at least as new as the file; otherwise it is
// compressed here once (brotli 5, gzip 6: fast enough for a first request) and kept in memory (keyed by path, size and mtime; at most CACHE_BYTES in
// all), so a rebuilt wasm is never served from a stale copy.

import { promises as fs } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import zlib from 'node:zlib';

/** File types worth compressing: the wasm and text. */
const COMPRESSIBLE = new Set(['.wasm', '.js', '.mjs', '.css', '.html', '.json', '.map', '.svg', '.webmanifest', '.txt', '.md', '.ts']);
/** Smaller files go out as they are (the encoding would not pay for its own bytes). */
const MIN_BYTES = 1024;
/** The encodings offered, best first, with the precompressed sibling's suffix. */
const ENCODINGS = [
  { name: 'br', suffix: '.br' },
  { name: 'gzip', suffix: '.gz' },
];
/** Bytes of compressed bodies kept in memory; the oldest go first. */
const CACHE_BYTES = 64 * 1024 * 1024;

const brotli = promisify(zlib.brotliCompress);
const gzip = promisify(zlib.gzip);

/**
 * The weights of an Accept-Encoding header: name -> q (`br;q=0` refuses br; `*` stands for the
 * names not listed).
 * @param {string | undefined} header
 * @returns {(name: string) => number}
 */
function weights(header) {
  /** @type {Map<string, number>} */
  const q = new Map();
  for (const part of String(header ?? '').split(',')) {
    const [token, ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    if (!token) continue;
    let w = 1;
    for (const p of params) {
      const m = /^q\s*=\s*([0-9.]+)$/.exec(p);
      if (m) w = Number(m[1]);
    }
    q.set(token, Number.isFinite(w) ? w : 0);
  }
  return (name) => q.get(name) ?? q.get('*') ?? 0;
}

/**
 * How to send `file` (`size` bytes) to a request with this Accept-Encoding: null when its type is
 * never compressed (no Vary needed), else `{name}` with the encoding to use, or `name: null` for
 * identity (the response still varies by Accept-Encoding).
 * @param {string} file
 * @param {number} size
 * @param {string | undefined} acceptEncoding
 * @returns {{name: 'br' | 'gzip' | null} | null}
 */
export function negotiate(file, size, acceptEncoding) {
  if (!COMPRESSIBLE.has(path.extname(file).toLowerCase())) return null;
  if (size < MIN_BYTES) return { name: null };
  const of = weights(acceptEncoding);
  let best = null;
  for (const e of ENCODINGS) if (of(e.name) > 0 && (best === null || of(e.name) > of(best.name))) best = e;
  return { name: /** @type {'br' | 'gzip' | null} */ (best?.name ?? null) };
}

/** @type {Map<string, {size: number, mtimeMs: number, bytes: Promise<Buffer>, length: number}>} */
const cache = new Map();
let cached = 0;

/**
 * The body of `file` (stat `st`) in `encoding`: `{size, file}` of a fresh precompressed sibling
 * inside `realRoot`, else `{size, bytes}` compressed here (once per file version).
 * @param {string} file
 * @param {import('node:fs').Stats} st
 * @param {'br' | 'gzip'} encoding
 * @param {string} realRoot
 * @returns {Promise<{size: number, bytes?: Buffer, file?: string}>}
 */
export async function encodedBody(file, st, encoding, realRoot) {
  const { suffix } = /** @type {{suffix: string}} */ (ENCODINGS.find((e) => e.name === encoding));
  const sibling = await freshSibling(file + suffix, st, realRoot);
  if (sibling) return sibling;

  const key = `${encoding}\0${file}`;
  let entry = cache.get(key);
  if (!entry || entry.size !== st.size || entry.mtimeMs !== st.mtimeMs) {
    if (entry) forget(key);
    const bytes = fs.readFile(file).then((raw) => (encoding === 'br' ? brotli(raw, brotliOptions(raw.length)) : gzip(raw, { level: 6 })));
    entry = { size: st.size, mtimeMs: st.mtimeMs, bytes, length: 0 };
    cache.set(key, entry);
    const e = entry;
    bytes.then(
      (b) => {
        if (cache.get(key) !== e) return;
        e.length = b.length;
        cached += b.length;
        for (const [k] of cache) {
          if (cached <= CACHE_BYTES || k === key) break;
          forget(k);
        }
      },
      () => cache.get(key) === e && cache.delete(key),
    );
  }
  const bytes = await entry.bytes;
  return { size: bytes.length, bytes };
}

/** @param {string} key */
function forget(key) {
  cached -= cache.get(key)?.length ?? 0;
  cache.delete(key);
}

/**
 * Brotli at quality 5: a 1.5 MB wasm in about a quarter of a second, within ~15% of quality 11,
 * which takes seconds (what `make pkg` spends once on the precompressed copy).
 * @param {number} n
 */
function brotliOptions(n) {
  return { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 5, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: n } };
}

/**
 * `candidate` if it is a file inside `realRoot` at least as new as the original (`st`).
 * @param {string} candidate
 * @param {import('node:fs').Stats} st
 * @param {string} realRoot
 */
async function freshSibling(candidate, st, realRoot) {
  try {
    const real = await fs.realpath(candidate);
    if (!real.startsWith(realRoot + path.sep)) return null;
    const s = await fs.stat(real);
    return s.isFile() && s.mtimeMs >= st.mtimeMs ? { file: real, size: s.size } : null;
  } catch {
    return null;
  }
}
