// The seeds' published figures next to ibexdb's in this run (issue 24 §3): GoatDB's browser table,
// OMGDB's performance page, and the rows that mirror go-sqlite-bench, go-persist and DBX. Same
// units on both sides (ms per operation; rates where the seed publishes a rate), what differs in
// the machines said, and no ratio: figures from other machines are context, not a comparison.
//
// Only figures we can cite: GoatDB's published table and GoatDB measured on these machines are in
// the design brief (/work/shared/DESIGN.md §9); OMGDB's are the `reference` fields of rows.js
// (its performance page, docs/benchmarks.md "Seed suites"). go-sqlite-bench, go-persist and DBX
// publish no figure in those sources: their rows are listed with ours, the published column empty.
// Pure functions (page and Node), like report.js.

import { ROWS } from '../shared/rows.js';
import { fmtMs } from '../shared/stats.js';

const esc = (/** @type {unknown} */ s) => String(s).replace(/[&<>"']/g, (c) => /** @type {Record<string, string>} */ ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);

/**
 * A published figure: `ms` per operation, or `perSec` (a rate; shown with its ms per operation);
 * `text` when it is a range or a bound.
 * @typedef {{ms?: number, perSec?: number, text?: string}} Figure
 * @typedef {{label: string, row: string, side: 'worker' | 'page', size?: number, published?: Figure, here?: Figure, note?: string}} SeedRow
 * @typedef {{key: string, title: string, source: string, machine: string, columns: string[], rows: SeedRow[], section?: string}} Seed
 */

/** @type {Seed[]} */
export const SEEDS = [
  {
    key: 'goatdb',
    title: 'GoatDB: its published browser table',
    source: 'GoatDB\'s published browser table and GoatDB 8c97ffd measured on these machines, both as quoted in the design brief (DESIGN.md §9)',
    machine: 'Published: Chrome 139 on an Apple M4 Pro (a desktop-class ARM chip; many more and faster cores than the 2-core VM here); GoatDB runs on the main thread with an OPFS log worker; every published GoatDB row ran in trusted mode (unsigned) and most without flushing (read by id is a main-thread map hit). Measured here: GoatDB 8c97ffd in headless Chromium 156 on these machines, signed, each write followed by flush. ibexdb here: its engine in a worker (worker rows), and through the public API from the page ([page] rows), every write durable (flushed) and, for `ibexdb`, signed.',
    columns: ['GoatDB published', 'GoatDB measured here'],
    rows: [
      { label: 'create instance', row: 'create-instance', side: 'page', published: { ms: 16.9 }, here: { ms: 25 } },
      { label: 'open empty', row: 'open-empty', side: 'worker', published: { ms: 0.91 }, here: { ms: 5.9 } },
      { label: 'open 100k items (+ first read)', row: 'open-n', side: 'page', size: 100_000, published: { ms: 289 }, here: { ms: 1200, text: '1.2 s (reopen + first read)' } },
      { label: 'create item', row: 'create-item', side: 'page', published: { ms: 1.0 }, here: { ms: 1.9, text: '1.9 ms (create + flush)' } },
      { label: 'read item by id', row: 'read-by-id', side: 'worker', published: { ms: 0.0005 }, here: { ms: 0.0042, text: '4.2 µs (0.5 µs once its item object is cached)' } },
      { label: 'update item', row: 'update-item', side: 'page', published: { ms: 0.101 }, here: { ms: 1.9, text: '1.9 ms (update + flush)' } },
      { label: 'bulk create 100', row: 'bulk-create-100', side: 'page', published: { ms: 21.4 }, here: { ms: 129, text: '129 ms (+ flush)' } },
      { label: 'bulk read 100', row: 'bulk-read-100', side: 'worker', published: { ms: 0.14 }, here: { ms: 0.44 } },
      { label: 'read all 100k', row: 'read-all', side: 'worker', size: 100_000, published: { ms: 84.5 }, here: { ms: 645, text: '645 ms first, 70 ms cached' } },
      { label: 'simple query (1,000-wide range)', row: 'simple-query', side: 'worker', published: { ms: 0.826 }, here: { ms: 744 } },
      { label: 'complex query', row: 'complex-query', side: 'worker', published: { ms: 0.697 }, here: { ms: 941 } },
      { label: 'count', row: 'count', side: 'worker', published: { ms: 0.002 }, here: { ms: 0.0005 } },
      { label: 'keys', row: 'keys', side: 'worker', size: 100_000, published: { ms: 0.003 }, here: { ms: 0.27, text: '0.27 ms (a cached array)' } },
      { label: 'bulk load 100k', row: 'bulk-load', side: 'worker', size: 100_000, here: { ms: 131_000, text: '131 s (one flush per commit)' } },
      { label: 'sync, one item end to end', row: 'sync-latency', side: 'page', published: { text: '700–1000 ms' } },
    ],
  },
  {
    key: 'omgdb',
    title: 'OMGDB: its published rows',
    source: 'OMGDB\'s performance page, as quoted in rows.js (`reference`) and docs/benchmarks.md',
    machine: 'Published: native, in-process, on OMGDB\'s own machine (not described further in our sources). Here: ibexdb in a browser worker on a 2-core VM, every commit durable in OPFS, signed.',
    columns: ['OMGDB published'],
    section: 'omgdb',
    rows: [
      { label: 'durable single writes', row: 'omgdb-single', side: 'worker', published: { perSec: 2500, text: '> 2,500 writes/s' } },
      { label: 'batched documents (batches of 1,000), per document', row: 'omgdb-batched', side: 'worker', published: { perSec: 100_000, text: '> 100,000 docs/s' } },
      { label: 'verify 50,000 documents', row: 'omgdb-verify', side: 'worker', published: { ms: 1000, text: '~1 s' } },
    ],
  },
  {
    key: 'go-sqlite-bench',
    title: 'go-sqlite-bench: its workloads',
    source: 'no published figure of go-sqlite-bench is quoted in our sources (DESIGN.md, docs/): its workloads only, with ibexdb\'s and the best SQLite\'s times here',
    machine: 'go-sqlite-bench runs native Go SQLite drivers; here both engines run in browser workers on OPFS.',
    columns: ['published'],
    section: 'relational',
    rows: ['rel-simple-insert', 'rel-simple-query', 'rel-real-insert', 'rel-real-query', 'rel-complex-insert', 'rel-complex-query', 'rel-many-1000', 'rel-large-200k-insert', 'rel-large-200k-query'].map((row) => ({ label: row.replace(/^rel-/, ''), row, side: 'worker' })),
  },
  {
    key: 'go-persist',
    title: 'go-persist: fat records',
    source: 'no published figure of go-persist is quoted in our sources: its workload (fat records at ~205k / 410k / 820k), with ibexdb\'s and the best SQLite\'s times here',
    machine: 'go-persist is a native Go store; here both engines run in browser workers on OPFS.',
    columns: ['published'],
    section: 'fat',
    rows: ['fat-load', 'fat-get', 'fat-batch-read', 'fat-open-cycles'].map((row) => ({ label: row.replace(/^fat-/, ''), row, side: 'worker' })),
  },
  {
    key: 'go-persist-files',
    title: 'go-persist: file storage',
    source: 'go-persist\'s file storage suite as issue 26 quotes it: 1,000 files of 2–5 MB written by VoidDB in 8.38 s, by the native file system in 8.35 s',
    machine: 'go-persist\'s figures are native Go writes to a local disk; here both engines run in browser workers on OPFS (ibexdb: attachments; SQLite: BLOBs), each file durable before the next.',
    columns: ['published'],
    section: 'files',
    rows: [
      { label: 'write 100 files of 2–5 MB', row: 'files-write-100', side: 'worker' },
      { label: 'write 1,000 files of 2–5 MB', row: 'files-write-1000', side: 'worker', published: { ms: 8380, text: '8.38 s (VoidDB; native FS 8.35 s)' } },
      { label: 'read one file', row: 'files-read-one', side: 'worker' },
    ],
  },
  {
    key: 'dbx',
    title: 'DBX: aggregates and filters over 1M records',
    source: 'no published figure of DBX is quoted in our sources: its workload, with ibexdb\'s and the best SQLite\'s times here',
    machine: 'DBX\'s own runs are not described in our sources; here both engines run in browser workers on OPFS.',
    columns: ['published'],
    section: 'dbx',
    rows: ['dbx-load', 'dbx-count', 'dbx-sum', 'dbx-minmax', 'dbx-filter-half', 'dbx-filter-quarter'].map((row) => ({ label: row.replace(/^dbx-/, ''), row, side: 'worker' })),
  },
];

/** @param {Figure | undefined} f */
function fmtFigure(f) {
  if (!f) return '—';
  if (f.text) return f.perSec ? `${f.text} (< ${fmtMs(1000 / f.perSec)} per op)` : f.text;
  if (f.perSec) return `${f.perSec.toLocaleString('en-US')}/s (${fmtMs(1000 / f.perSec)} per op)`;
  return fmtMs(f.ms);
}

/**
 * Our cell for a seed row: the entry of `engine` (its p50 and mean), from the section the row
 * belongs to, at `size` when given (else the largest size that has it).
 * @param {any} results @param {string} engine @param {SeedRow} r @param {string | undefined} section
 */
function ours(results, engine, r, section) {
  const runs = results.runs.filter((x) => x.engine === engine && (section ? x.section === section : (x.section ?? 'dataset') === 'dataset') && x.rows[r.row]?.[r.side]);
  const sized = r.size ? runs.filter((x) => x.size === r.size) : [];
  const run = (sized.length ? sized : runs).sort((a, b) => (b.size ?? 0) - (a.size ?? 0))[0];
  const c = run?.rows[r.row]?.[r.side];
  if (!c) return null;
  return { p50: c.p50, mean: c.mean, size: run.size };
}

/**
 * Best SQLite (lowest p50) for the row, as the report picks it: any configuration on a read row,
 * the durable ones on a write row (ibexdb's figures here are durable).
 * @param {any} results @param {SeedRow} r @param {string | undefined} section
 */
function bestSqlite(results, r, section) {
  const write = !!ROWS.find((x) => x.id === r.row)?.write;
  let best = null;
  for (const e of results.engines.filter((x) => x.family === 'sqlite' && (!write || x.durability === 'full'))) {
    const c = ours(results, e.id, r, section);
    if (c && (!best || c.p50 < best.p50)) best = { ...c, engine: e.id };
  }
  return best;
}

/** @param {{p50: number, mean?: number, size?: number | null} | null} c @param {string} [rate] */
function fmtOurs(c, rate) {
  if (!c) return 'not run';
  const r = rate ? ` (${Math.round(1000 / c.p50).toLocaleString('en-US')}/s)` : '';
  return `${fmtMs(c.p50)}${r}${Number.isFinite(c.mean) ? `, mean ${fmtMs(/** @type {number} */ (c.mean))}` : ''}${c.size ? ` @ N=${c.size.toLocaleString('en-US')}` : ''}`;
}

/** The table of each seed: [{seed, header, body}] (strings). @param {any} results */
export function seedTables(results) {
  const ibex = ['ibexdb', 'ibexdb-trusted'].filter((id) => results.runs.some((r) => r.engine === id));
  return SEEDS.map((seed) => {
    const header = ['row', ...seed.columns, ...ibex.map((e) => `${e} here (p50, mean)`), 'best SQLite here (p50, mean)'];
    const body = seed.rows.map((r) => {
      const rate = r.published?.perSec ? 'rate' : undefined;
      const pub = seed.columns.length === 2 ? [fmtFigure(r.published), fmtFigure(r.here)] : [r.published ? fmtFigure(r.published) : '— (none in our sources)'];
      const b = bestSqlite(results, r, seed.section);
      return [`${r.label}${r.side === 'page' ? ' [page]' : ''}`, ...pub, ...ibex.map((e) => fmtOurs(ours(results, e, r, seed.section), rate)), b ? `${fmtOurs(b, rate)} (${b.engine})` : 'not run'];
    });
    return { seed, header, body };
  });
}

/** Markdown: one table per seed, its source and what differs in the machines. @param {any} results */
export function seedsMarkdown(results) {
  const m = results.meta?.machine;
  const out = ['## The seeds\' published figures, side by side', '', `This run: ${results.meta?.browser ?? results.meta?.userAgent ?? ''}${m ? `, ${m.cpus} × ${m.cpuModel}, ${(m.memoryBytes / 2 ** 30).toFixed(1)} GiB` : ''}. Every time is per operation (p50, then mean) in the same unit as the published figure; no ratio across machines.`, ''];
  for (const { seed, header, body } of seedTables(results)) {
    out.push(`### ${seed.title}`, '', `Source: ${seed.source}. Machines: ${seed.machine}`, '');
    out.push(`| ${header.join(' | ')} |`, `|---|${header.slice(1).map(() => '--:').join('|')}|`);
    for (const b of body) out.push(`| ${b.map((x) => x.replace(/\|/g, '\\|')).join(' | ')} |`);
    out.push('');
  }
  return out.join('\n');
}

/** The self-contained seeds page (seeds.html). @param {any} results */
export function renderSeeds(results) {
  const m = results.meta ?? {};
  const h = [`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>ibexdb and the seeds' published figures ${esc(m.date ?? '')}</title>
<style>body{font-family:system-ui,sans-serif;margin:24px;color:#111;max-width:1320px} h1{font-size:22px} h2{font-size:17px;margin:26px 0 4px;border-top:2px solid #ddd;padding-top:10px}
table{border-collapse:collapse;font-size:12.5px;margin:8px 0} th,td{border-bottom:1px solid #e4e4e4;padding:3px 7px;text-align:right} th:first-child,td:first-child{text-align:left} th{background:#f6f6f6}
.what{color:#555;font-size:12.5px;line-height:1.45;max-width:1100px}</style></head><body>`];
  h.push('<h1>ibexdb next to the seeds\' published figures</h1>');
  h.push(`<p class="what">This run: ${esc(m.browser ?? m.userAgent ?? '')}${m.machine ? ` · ${esc(m.machine.cpus)} × ${esc(m.machine.cpuModel)} · ${esc(m.machine.os)}` : ''}${m.gitCommit ? ` · git ${esc(m.gitCommit)}` : ''}. Every time is per operation (p50, then mean), in the unit of the published figure (rates also as ms per operation). Figures from other machines are context: no ratio is drawn across machines. The full table with ratios against SQLite on the same machine is report.html.</p>`);
  for (const { seed, header, body } of seedTables(results)) {
    h.push(`<h2>${esc(seed.title)}</h2><p class="what"><b>Source:</b> ${esc(seed.source)}.<br><b>Machines:</b> ${esc(seed.machine)}</p>`);
    h.push(`<table><tr>${header.map((x) => `<th>${esc(x)}</th>`).join('')}</tr>`);
    for (const b of body) h.push(`<tr>${b.map((x) => `<td>${esc(x)}</td>`).join('')}</tr>`);
    h.push('</table>');
  }
  h.push('</body></html>');
  return h.join('\n');
}
