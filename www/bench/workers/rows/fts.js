// The full-text search rows (suite `fts`): N documents {title, n} (shared/fts.js) in a fresh
// database, then: the text index's build over them, a 2-word search (an exact word + a prefix,
// every match returned {id, title} in rank order, checked against the oracle), and the update of
// one document's title with the index maintained. Adapters implement `fts` (PROTOCOL.md "Full-text
// search"): setup(), insert(docs), build(), search(text), update(id, title), title(id).

import { ftsDoc, ftsExpected, ftsSearches, ftsTitle } from '../../shared/fts.js';
import { rng } from '../../shared/model.js';
import { isThenable, measure, now, settle } from '../loops.js';

/** @typedef {import('../harness.js').Session} Session */
/** @typedef {import('../harness.js').RowParams} RowParams */
/** @typedef {import('../harness.js').RowResult} RowResult */

/**
 * Call the adapter's `fts[name]`, awaiting only a real promise.
 * @param {Session} s @param {string} name @param {...any} args @returns {Promise<any>}
 */
async function ftsCall(s, name, ...args) {
  const fts = /** @type {Record<string, any> | undefined} */ (s.adapter.fts);
  if (!fts || typeof fts[name] !== 'function') throw new Error(`engine adapter has no fts.${name}()`);
  const r = fts[name](...args);
  return isThenable(r) ? await r : r;
}

/**
 * @param {Session} s
 * @returns {Record<string, (p: RowParams) => Promise<RowResult>>}
 */
export function ftsRows(s) {
  /** @param {RowParams} p */
  const plan = (p) => /** @type {{docs: number, searches: number}} */ (p.fts);
  /** Current titles by document id (the oracle's input), once loaded. @type {(string | undefined)[]} */
  let titles = [];
  let loaded = 0;

  /** A fresh database holding the documents (untimed), its text index built. @param {RowParams} p */
  async function ensureLoaded(p) {
    const n = plan(p).docs;
    if (loaded === n) return;
    await s.ensureClosed();
    await s.call('reset', { final: false });
    await s.ensureOpen();
    await ftsCall(s, 'setup');
    titles = [];
    for (let start = 0; start < n; start += 1000) {
      const docs = [];
      for (let i = start; i < Math.min(n, start + 1000); i++) {
        const d = ftsDoc(i);
        docs.push(d);
        titles.push(d.title);
      }
      await ftsCall(s, 'insert', docs);
    }
    await s.optional('settle');
    loaded = n;
  }

  return {
    async 'fts-build'(p) {
      await ensureLoaded(p);
      const out = [];
      const warmup = p.warmup ?? 0;
      /** @type {any} */
      let info = null;
      for (let i = 0; i < warmup + p.samples; i++) {
        const t0 = now();
        info = await ftsCall(s, 'build');
        if (i >= warmup) out.push(now() - t0);
      }
      // The index answers: one search checked against the oracle.
      const q = ftsSearches(1)[0];
      const got = (await ftsCall(s, 'search', q)).map((/** @type {{id: number}} */ r) => r.id).sort((/** @type {number} */ a, /** @type {number} */ b) => a - b);
      const want = ftsExpected(q, titles);
      const check = { docs: loaded, returned: got.length, ...(got.join() === want.join() ? {} : { wrong: `search "${q}": ${got.length} ids, expected ${want.length}` }) };
      return { samples: out, k: 1, warmupSamples: warmup, check, note: `${loaded.toLocaleString('en-US')} documents of 4–10 words (vocabulary of 4,000, Zipf-like); ${info?.note ?? ''}` };
    },
    async 'fts-query'(p) {
      await ensureLoaded(p);
      await ftsCall(s, 'build');
      const searches = ftsSearches(plan(p).searches);
      /** @type {Map<number, {id: number, title: string}[]>} the last answer to each search */
      const last = new Map();
      let j = 0;
      /** @type {number[]} */
      let picks = [];
      const m = await measure(
        p,
        (total) => { picks = Array.from({ length: total }, () => j++ % searches.length); },
        (i) => settle(ftsCall(s, 'search', searches[picks[i]]), (x) => { last.set(picks[i], x); }),
      );
      let wrong = 0;
      let returned = 0;
      let firstWrong = '';
      for (const [qi, rows] of last) {
        const want = ftsExpected(searches[qi], titles);
        const got = rows.map((r) => r.id).sort((a, b) => a - b);
        returned += rows.length;
        const titlesOk = rows.every((r) => r.title === titles[r.id]);
        if (got.join() !== want.join() || !titlesOk) {
          wrong++;
          firstWrong ||= `"${searches[qi]}": ${got.length} ids (expected ${want.length})${titlesOk ? '' : ', wrong titles'}`;
        }
      }
      const check = { searches: last.size, meanReturned: Math.round(returned / Math.max(1, last.size)), ...(wrong ? { wrong: `${wrong} searches differ from the oracle; first ${firstWrong}` } : {}) };
      return { ...m, check, note: `${searches.length} searches "word pre" (an exact word + a 3-letter prefix), each returning every match {id, title} in rank order (BM25 in both engines)` };
    },
    async 'fts-update'(p) {
      await ensureLoaded(p);
      await ftsCall(s, 'build');
      const r = rng(p.seed);
      const n = plan(p).docs;
      let version = 0;
      /** @type {[number, string][]} */
      let edits = [];
      /** @type {Map<number, string>} */
      const written = new Map();
      const m = await measure(
        p,
        (total) => {
          version++;
          edits = Array.from({ length: total }, () => {
            const id = r.int(n);
            return [id, ftsTitle(id, version)];
          });
        },
        (i) => {
          const [id, title] = edits[i];
          written.set(id, title);
          titles[id] = title;
          return ftsCall(s, 'update', id, title);
        },
        { finish: () => s.optional('settle') },
      );
      // Read back the titles written, and the index agrees with them: searches checked.
      let bad = 0;
      for (const [id, title] of written) if ((await ftsCall(s, 'title', id)) !== title) bad++;
      const searches = ftsSearches(5);
      let wrongSearches = 0;
      for (const q of searches) {
        const got = (await ftsCall(s, 'search', q)).map((/** @type {{id: number}} */ x) => x.id).sort((/** @type {number} */ a, /** @type {number} */ b) => a - b);
        if (got.join() !== ftsExpected(q, titles).join()) wrongSearches++;
      }
      const check = { updated: written.size, ...(bad || wrongSearches ? { wrong: `${bad} titles not read back, ${wrongSearches} of ${searches.length} searches differ from the oracle` } : {}) };
      return { ...m, check, note: 'set one document\'s title (random id, 4–10 new words), own transaction/commit, durable per config, text index maintained; trailing work in the last sample' };
    },
  };
}
