// A QR code encoder for the share dialog's invite link (ISO/IEC 18004): byte mode, error
// correction level M (15 % of the codewords may be lost; L on request), the smallest version
// of 1–40 the text fits, the mask of least penalty. Written for the app rather than taken from
// npm: it is ~200 lines with no dependency, it works offline from the service worker's cache
// like the rest of the app, and what it draws is checked by decoding it (app-invite.spec.ts,
// with jsQR). No DOM here: `qrModules` returns the grid, `paintQr` draws it on a canvas.

/** Error-correction codewords per block, and blocks, by level and version (index 0 unused). */
const ECC_PER_BLOCK = {
  L: [0, 7, 10, 15, 20, 26, 18, 20, 24, 30, 18, 20, 24, 26, 30, 22, 24, 28, 30, 28, 28, 28, 28, 30, 30, 26, 28, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30, 30],
  M: [0, 10, 16, 26, 18, 24, 16, 18, 22, 22, 26, 30, 22, 22, 24, 24, 28, 28, 26, 26, 26, 26, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28],
};
const BLOCKS = {
  L: [0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 4, 6, 6, 6, 6, 7, 8, 8, 9, 9, 10, 12, 12, 12, 13, 14, 15, 16, 17, 18, 19, 19, 20, 21, 22, 24, 25],
  M: [0, 1, 1, 1, 2, 2, 4, 4, 4, 5, 5, 5, 8, 9, 9, 10, 10, 11, 13, 14, 16, 17, 17, 18, 20, 21, 23, 25, 26, 28, 29, 31, 33, 35, 37, 38, 40, 43, 45, 47, 49],
};
/** The level's two bits in the format information. */
const FORMAT_BITS = { L: 1, M: 0 };

/** Modules that carry codewords (not function patterns) in version `v`. @param {number} v */
function rawModules(v) {
  let n = (16 * v + 128) * v + 64;
  if (v >= 2) {
    const align = Math.floor(v / 7) + 2;
    n -= (25 * align - 10) * align - 55;
    if (v >= 7) n -= 36;
  }
  return n;
}

/** @param {'L' | 'M'} ecl @param {number} v */
const dataCodewords = (ecl, v) => Math.floor(rawModules(v) / 8) - ECC_PER_BLOCK[ecl][v] * BLOCKS[ecl][v];

/** Multiplication in GF(2^8) modulo x^8 + x^4 + x^3 + x^2 + 1. @param {number} x @param {number} y */
function gfMul(x, y) {
  let z = 0;
  for (let i = 7; i >= 0; i--) {
    z = (z << 1) ^ ((z >>> 7) * 0x11d);
    z ^= ((y >>> i) & 1) * x;
  }
  return z;
}

/** The Reed–Solomon generator of `degree`, highest coefficient first (the leading 1 dropped). @param {number} degree */
function rsDivisor(degree) {
  const d = new Array(degree).fill(0);
  d[degree - 1] = 1;
  let root = 1;
  for (let i = 0; i < degree; i++) {
    for (let j = 0; j < d.length; j++) {
      d[j] = gfMul(d[j], root);
      if (j + 1 < d.length) d[j] ^= d[j + 1];
    }
    root = gfMul(root, 0x02);
  }
  return d;
}

/** @param {number[]} data @param {number[]} divisor */
function rsRemainder(data, divisor) {
  const r = divisor.map(() => 0);
  for (const b of data) {
    const factor = b ^ /** @type {number} */ (r.shift());
    r.push(0);
    divisor.forEach((c, i) => (r[i] ^= gfMul(c, factor)));
  }
  return r;
}

/** The data codewords of `bytes` for version `v`: mode, count, data, terminator, padding. @param {Uint8Array} bytes @param {number} v @param {number} capacity */
function dataWords(bytes, v, capacity) {
  /** @type {number[]} */
  const bits = [];
  const put = (/** @type {number} */ val, /** @type {number} */ n) => {
    for (let i = n - 1; i >= 0; i--) bits.push((val >>> i) & 1);
  };
  put(0b0100, 4);
  put(bytes.length, v <= 9 ? 8 : 16);
  for (const b of bytes) put(b, 8);
  put(0, Math.min(4, capacity * 8 - bits.length));
  put(0, (8 - (bits.length % 8)) % 8);
  /** @type {number[]} */
  const words = [];
  for (let i = 0; i < bits.length; i += 8) words.push(bits.slice(i, i + 8).reduce((a, b) => (a << 1) | b, 0));
  for (let pad = 0xec; words.length < capacity; pad ^= 0xec ^ 0x11) words.push(pad);
  return words;
}

/** Split into blocks, add each block's error correction, interleave. @param {number[]} data @param {'L' | 'M'} ecl @param {number} v */
function interleaved(data, ecl, v) {
  const blocks = BLOCKS[ecl][v];
  const eccLen = ECC_PER_BLOCK[ecl][v];
  const raw = Math.floor(rawModules(v) / 8);
  const short = blocks - (raw % blocks);
  const shortLen = Math.floor(raw / blocks);
  const div = rsDivisor(eccLen);
  /** @type {number[][]} */
  const out = [];
  for (let i = 0, k = 0; i < blocks; i++) {
    const dat = data.slice(k, k + shortLen - eccLen + (i < short ? 0 : 1));
    k += dat.length;
    const ecc = rsRemainder(dat, div);
    if (i < short) dat.push(0);
    out.push(dat.concat(ecc));
  }
  /** @type {number[]} */
  const result = [];
  for (let i = 0; i < out[0].length; i++) {
    out.forEach((b, j) => {
      if (i !== shortLen - eccLen || j >= short) result.push(b[i]);
    });
  }
  return result;
}

const MASKS = [
  (/** @type {number} */ x, /** @type {number} */ y) => (x + y) % 2 === 0,
  (/** @type {number} */ _x, /** @type {number} */ y) => y % 2 === 0,
  (/** @type {number} */ x) => x % 3 === 0,
  (/** @type {number} */ x, /** @type {number} */ y) => (x + y) % 3 === 0,
  (/** @type {number} */ x, /** @type {number} */ y) => (Math.floor(x / 3) + Math.floor(y / 2)) % 2 === 0,
  (/** @type {number} */ x, /** @type {number} */ y) => ((x * y) % 2) + ((x * y) % 3) === 0,
  (/** @type {number} */ x, /** @type {number} */ y) => (((x * y) % 2) + ((x * y) % 3)) % 2 === 0,
  (/** @type {number} */ x, /** @type {number} */ y) => (((x + y) % 2) + ((x * y) % 3)) % 2 === 0,
];

/**
 * The QR code of `text` (UTF-8, byte mode): `modules[y][x]` true for a dark module.
 * RangeError if it does not fit version 40.
 * @param {string} text @param {{ecl?: 'L' | 'M'}} [opts]
 * @returns {{version: number, size: number, mask: number, modules: boolean[][]}}
 */
export function qrModules(text, { ecl = 'M' } = {}) {
  const bytes = new TextEncoder().encode(text);
  let v = 1;
  while (v <= 40 && 4 + (v <= 9 ? 8 : 16) + 8 * bytes.length > dataCodewords(ecl, v) * 8) v++;
  if (v > 40) throw new RangeError(`${bytes.length} bytes do not fit a QR code`);
  const size = 17 + 4 * v;
  const modules = Array.from({ length: size }, () => new Array(size).fill(false));
  const fixed = Array.from({ length: size }, () => new Array(size).fill(false));
  const set = (/** @type {number} */ x, /** @type {number} */ y, /** @type {boolean} */ dark) => {
    modules[y][x] = dark;
    fixed[y][x] = true;
  };
  // Timing, finders (with separators), alignment patterns.
  for (let i = 0; i < size; i++) {
    set(6, i, i % 2 === 0);
    set(i, 6, i % 2 === 0);
  }
  for (const [cx, cy] of [[3, 3], [size - 4, 3], [3, size - 4]]) {
    for (let dy = -4; dy <= 4; dy++) {
      for (let dx = -4; dx <= 4; dx++) {
        const d = Math.max(Math.abs(dx), Math.abs(dy));
        const x = cx + dx;
        const y = cy + dy;
        if (x >= 0 && x < size && y >= 0 && y < size) set(x, y, d !== 2 && d !== 4);
      }
    }
  }
  const align = alignmentPositions(v, size);
  const last = align.length - 1;
  align.forEach((ax, i) => align.forEach((ay, j) => {
    if ((i === 0 && j === 0) || (i === 0 && j === last) || (i === last && j === 0)) return;
    for (let dy = -2; dy <= 2; dy++) for (let dx = -2; dx <= 2; dx++) set(ax + dx, ay + dy, Math.max(Math.abs(dx), Math.abs(dy)) !== 1);
  }));
  drawFormat(set, size, ecl, 0); // reserves the format areas; drawn again with the mask
  if (v >= 7) {
    let rem = v;
    for (let i = 0; i < 12; i++) rem = (rem << 1) ^ ((rem >>> 11) * 0x1f25);
    const bits = (v << 12) | rem;
    for (let i = 0; i < 18; i++) {
      const dark = ((bits >>> i) & 1) === 1;
      const a = size - 11 + (i % 3);
      const b = Math.floor(i / 3);
      set(a, b, dark);
      set(b, a, dark);
    }
  }
  // The codewords, in the zigzag of two-module columns from the bottom right.
  const words = interleaved(dataWords(bytes, v, dataCodewords(ecl, v)), ecl, v);
  let i = 0;
  for (let right = size - 1; right >= 1; right -= 2) {
    if (right === 6) right = 5;
    for (let vert = 0; vert < size; vert++) {
      for (let j = 0; j < 2; j++) {
        const x = right - j;
        const y = ((right + 1) & 2) === 0 ? size - 1 - vert : vert;
        if (!fixed[y][x] && i < words.length * 8) {
          modules[y][x] = ((words[i >>> 3] >>> (7 - (i & 7))) & 1) === 1;
          i++;
        }
      }
    }
  }
  // The mask of least penalty.
  const flip = (/** @type {number} */ m) => {
    for (let y = 0; y < size; y++) for (let x = 0; x < size; x++) if (!fixed[y][x] && MASKS[m](x, y)) modules[y][x] = !modules[y][x];
  };
  let best = 0;
  let bestScore = Infinity;
  for (let m = 0; m < 8; m++) {
    flip(m);
    drawFormat(set, size, ecl, m);
    const score = penalty(modules);
    if (score < bestScore) [best, bestScore] = [m, score];
    flip(m);
  }
  flip(best);
  drawFormat(set, size, ecl, best);
  return { version: v, size, mask: best, modules };
}

/** @param {number} v @param {number} size */
function alignmentPositions(v, size) {
  if (v === 1) return [];
  const n = Math.floor(v / 7) + 2;
  const step = v === 32 ? 26 : Math.ceil((v * 4 + 4) / (n * 2 - 2)) * 2;
  const out = [6];
  for (let pos = size - 7; out.length < n; pos -= step) out.splice(1, 0, pos);
  return out;
}

/** The two copies of the format information (level and mask, BCH-protected), and the dark module. */
function drawFormat(/** @type {(x: number, y: number, d: boolean) => void} */ set, /** @type {number} */ size, /** @type {'L' | 'M'} */ ecl, /** @type {number} */ mask) {
  const data = (FORMAT_BITS[ecl] << 3) | mask;
  let rem = data;
  for (let i = 0; i < 10; i++) rem = (rem << 1) ^ ((rem >>> 9) * 0x537);
  const bits = ((data << 10) | rem) ^ 0x5412;
  const bit = (/** @type {number} */ i) => ((bits >>> i) & 1) === 1;
  for (let i = 0; i <= 5; i++) set(8, i, bit(i));
  set(8, 7, bit(6));
  set(8, 8, bit(7));
  set(7, 8, bit(8));
  for (let i = 9; i < 15; i++) set(14 - i, 8, bit(i));
  for (let i = 0; i < 8; i++) set(size - 1 - i, 8, bit(i));
  for (let i = 8; i < 15; i++) set(8, size - 15 + i, bit(i));
  set(8, size - 8, true);
}

/** The standard's penalty: runs, 2×2 blocks, finder look-alikes, imbalance. @param {boolean[][]} m */
function penalty(m) {
  const size = m.length;
  let score = 0;
  const lines = [];
  for (let y = 0; y < size; y++) lines.push(m[y]);
  for (let x = 0; x < size; x++) lines.push(m.map((row) => row[x]));
  for (const line of lines) {
    let run = 1;
    for (let i = 1; i <= size; i++) {
      if (i < size && line[i] === line[i - 1]) run++;
      else {
        if (run >= 5) score += run - 2;
        run = 1;
      }
    }
    const s = line.map((d) => (d ? '1' : '0')).join('');
    for (const p of ['10111010000', '00001011101']) for (let at = s.indexOf(p); at >= 0; at = s.indexOf(p, at + 1)) score += 40;
  }
  let dark = 0;
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      if (m[y][x]) dark++;
      if (x + 1 < size && y + 1 < size && m[y][x] === m[y][x + 1] && m[y][x] === m[y + 1][x] && m[y][x] === m[y + 1][x + 1]) score += 3;
    }
  }
  const total = size * size;
  return score + (Math.ceil(Math.abs(dark * 20 - total * 10) / total) - 1) * 10;
}

/**
 * Draw the QR code of `text` on `canvas`: `scale` pixels a module, with the standard's quiet
 * zone of 4 modules, dark on white.
 * @param {HTMLCanvasElement} canvas @param {string} text @param {number} [scale]
 */
export function paintQr(canvas, text, scale = 4) {
  const { size, modules } = qrModules(text);
  const px = (size + 8) * scale;
  canvas.width = px;
  canvas.height = px;
  const g = /** @type {CanvasRenderingContext2D} */ (canvas.getContext('2d'));
  g.fillStyle = '#fff';
  g.fillRect(0, 0, px, px);
  g.fillStyle = '#000';
  for (let y = 0; y < size; y++) for (let x = 0; x < size; x++) if (modules[y][x]) g.fillRect((x + 4) * scale, (y + 4) * scale, scale, scale);
}
