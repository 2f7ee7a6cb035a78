// The data of the seed suites (dbx, fat), shared by the rows (workers/rows/dbx.js, fat.js) and
// both adapters: what a record holds, how it is made, and what each engine stores it as.
// Dependency-free, valid in window, worker and Node.

/**
 * DBX seed: `people` records {name, age, city}; `age` is a permutation of 0 … N−1 (7919 is prime
 * and does not divide 10^k), so the data is not stored in age order and the expected answers are
 * exact: count(age > x) = N − 1 − x, sum = N(N−1)/2, min 0, max N−1. No index on `age`.
 * @param {number} i @param {number} n
 */
export function person(i, n) {
  return { id: i + 1, name: `person ${i}`, age: (i * 7919) % n, city: `city ${i % 100}` };
}

/** The DBX filters: `age > threshold`, at 50% and 25% of N (500,000 and 250,000 at N = 1M). @param {number} n */
export const dbxThresholds = (n) => ({ half: Math.floor(n / 2), quarter: Math.floor(n / 4) });

/** The fat records' five collections (go-persist seed). */
export const FAT_COLLECTIONS = ['users', 'orders', 'events', 'products', 'sessions'];

/** 1,000 characters every payload rotates (so that no two payloads are the same string). */
const PAYLOAD_BASE = (() => {
  let a = 0x9e3779b9;
  let s = '';
  while (s.length < 1000) {
    a = (Math.imul(a ^ (a >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
    s += a.toString(36);
  }
  return s.slice(0, 1000);
})();

/**
 * go-persist seed: a fat record, several string fields, nested metadata and a 1 KB payload.
 * Record i goes to collection i % 5 under id i + 1.
 * @param {number} i
 */
export function fatRecord(i) {
  const r = i % 1000;
  return {
    coll: FAT_COLLECTIONS[i % FAT_COLLECTIONS.length],
    id: i + 1,
    name: `record ${i}`,
    email: `user${i}@example.com`,
    city: `city ${i % 1000}`,
    status: i % 3 === 0 ? 'inactive' : 'active',
    metadata: { created: 1_700_000_000_000 + i * 1000, version: i % 10, source: 'import', labels: { team: `team ${i % 20}`, region: `region ${i % 7}` } },
    payload: `${i}:${PAYLOAD_BASE.slice(r)}${PAYLOAD_BASE.slice(0, r)}`.slice(0, 1024),
  };
}

/**
 * Whether a fat record read back is the one written (every field, nested metadata included).
 * @param {any} got @param {ReturnType<typeof fatRecord>} want
 */
export function sameFat(got, want) {
  return !!got && got.id === want.id && got.name === want.name && got.email === want.email && got.city === want.city
    && got.status === want.status && got.payload === want.payload && canonical(got.metadata) === canonical(want.metadata);
}

/** JSON with sorted keys (an engine may return a map's fields in another order). @param {any} v @returns {string} */
function canonical(v) {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(',')}}`;
}
