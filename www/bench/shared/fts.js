// The full-text search rows' data (suite `fts`): documents {title, n} whose titles are 4–10 words
// drawn from a fixed vocabulary with a Zipf-like skew (a few words are common, most are rare, as
// in real text), the 2-word searches (an exact word and the prefix of another, as a search box
// sends while the user types), and the oracle that says which documents each search must find.
// Shared by the page and the workers: dependency-free.

import { rng } from './model.js';

const SYLLABLES = ['ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'ti', 'vo', 'be', 'do', 'fa', 'gu', 'pi', 'ze', 'shi', 'tra', 'qu', 'mon', 'ler', 'ix'];

/** The vocabulary: 4,000 distinct lowercase ASCII words of 2–4 syllables. */
export const VOCABULARY = (() => {
  const r = rng(4242);
  const words = new Set();
  while (words.size < 4000) {
    const n = 2 + r.int(3);
    let w = '';
    for (let i = 0; i < n; i++) w += SYLLABLES[r.int(SYLLABLES.length)];
    words.add(w);
  }
  return [...words];
})();

/** A word index with a Zipf-like skew (rank k drawn with probability ~ 1/(k+10)). @param {{next(): number}} r */
function zipf(r) {
  const n = VOCABULARY.length;
  // Inverse of the CDF of 1/(k+10) over [0, n): k = 10·((n+10)/10)^u − 10.
  return Math.min(n - 1, Math.floor(10 * Math.pow((n + 10) / 10, r.next()) - 10));
}

/** Title of document i: 4–10 words, the first capitalised (folding must make case irrelevant). @param {number} i */
export function ftsTitle(i, version = 0) {
  const r = rng(1_000_003 * (version + 1) + i);
  const n = 4 + r.int(7);
  const words = [];
  for (let j = 0; j < n; j++) words.push(VOCABULARY[zipf(r)]);
  words[0] = words[0][0].toUpperCase() + words[0].slice(1);
  return words.join(' ');
}

/** Document i: `{id, title, n}`. @param {number} i */
export const ftsDoc = (i) => ({ id: i, title: ftsTitle(i), n: i });

/**
 * The searches the query row cycles through: an exact word of rank 40–140 and the first 3 letters
 * of a word of rank 150–400 (a few hundred matches among 100k documents each).
 * @param {number} count
 * @returns {string[]}
 */
export function ftsSearches(count) {
  const r = rng(777);
  const out = [];
  while (out.length < count) {
    const a = VOCABULARY[40 + r.int(100)];
    const b = VOCABULARY[150 + r.int(250)].slice(0, 3);
    const q = `${a} ${b}`;
    if (!out.includes(q)) out.push(q);
  }
  return out;
}

/**
 * The ids a search must find among `titles` (the oracle): every exact word present, and a word
 * starting with the last one. Titles are ASCII: folding is lowercasing.
 * @param {string} search @param {string[]} titles title of document i at i (undefined: deleted)
 * @returns {number[]} ascending
 */
export function ftsExpected(search, titles) {
  const words = search.toLowerCase().split(/[^a-z0-9]+/).filter(Boolean);
  const prefix = words.pop() ?? '';
  const out = [];
  for (let i = 0; i < titles.length; i++) {
    const t = titles[i];
    if (t === undefined) continue;
    const ws = t.toLowerCase().split(' ');
    if (words.every((w) => ws.includes(w)) && ws.some((w) => w.startsWith(prefix))) out.push(i);
  }
  return out;
}
