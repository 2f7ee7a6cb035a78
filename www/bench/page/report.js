// Turns a results object (see PROTOCOL.md, "Results object") into the console table and the
// self-contained HTML report with inline SVG charts. Pure functions: used by the benchmark page and
// by scripts/bench.mjs in Node. No external libraries.
//
// The report is organised in sections: the operation rows at each core N (worker and [page]
// lines), scaling (bulk load, open, storage and memory at each N), the relational workloads and
// verify. Every line has one cell per engine (p50, p95, samples × K, or "n/a" with its reason) and,
// per ibexdb engine, the ratio to the best SQLite engine of the same durability.

import { ROWS } from '../shared/rows.js';
import { fmtBytes, fmtMs } from '../shared/stats.js';

const COLORS = {
  'sqlite-default': '#8a8f98',
  'sqlite-tuned': '#2f6db5',
  'sqlite-tuned-off': '#7fb0e6',
  'sqlite-best': '#173f73',
  ibexdb: '#d9731a',
  'ibexdb-relaxed': '#e8c330',
  'ibexdb-trusted': '#9c4a0c',
};
const FALLBACK_COLORS = ['#6a3d9a', '#33a02c', '#b15928', '#e31a1c', '#1f78b4'];

export function engineColor(id, i = 0) {
  return COLORS[id] ?? FALLBACK_COLORS[i % FALLBACK_COLORS.length];
}

const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
const rowDef = (id) => ROWS.find((r) => r.id === id) ?? { id, label: id };
const nfmt = (n) => Number(n).toLocaleString('en-US');

export function fmtRate(perSec) {
  if (!Number.isFinite(perSec)) return '—';
  if (perSec >= 1e6) return `${(perSec / 1e6).toFixed(2)} M`;
  if (perSec >= 1e4) return `${(perSec / 1e3).toFixed(0)} k`;
  if (perSec >= 1e3) return `${(perSec / 1e3).toFixed(1)} k`;
  return perSec.toFixed(0);
}

/** A cell value for display: time (with rate), bytes, n/a or error. */
export function fmtCell(line, c, { p95 = false } = {}) {
  if (!c) return '';
  if (c.error) return 'ERROR';
  if (c.na) return 'n/a';
  if (line.unit === 'bytes') return fmtBytes(c.p50);
  let s = fmtMs(c.p50);
  if (p95 && Number.isFinite(c.p95)) s += ` / ${fmtMs(c.p95)}`;
  if (line.rate) s += ` (${fmtRate(1000 / c.p50)} ${line.rate})`;
  // The mean next to the median on every row, so that amortized work (seals, snapshots, the
  // trailing work in the last sample) shows: the ratios are taken on both.
  if (c.n > 1 && Number.isFinite(c.mean)) s += ` (mean ${fmtMs(c.mean)})`;
  if (Number.isFinite(c.gapMs)) s += ` (page−worker ${fmtGap(c.gapMs)})`;
  return s;
}

/** A signed duration: the page-minus-worker gap. @param {number} ms */
export const fmtGap = (ms) => `${ms < 0 ? '−' : '+'}${fmtMs(Math.abs(ms))}`;

/** A cell of the tails table: per-operation p95 / p99 / max of operations timed one by one. */
export function fmtTail(c) {
  if (!c?.ops) return '';
  return `${fmtMs(c.ops.p95)} / ${fmtMs(c.ops.p99)} / ${fmtMs(c.ops.max)}`;
}

function runsOf(results, section, size) {
  return results.runs.filter((r) => (r.section ?? 'dataset') === section && (section !== 'dataset' || size === undefined || r.size === size));
}

/**
 * One line per (row, side) that has data for the given runs: cells by engine id with the summary
 * stats, `{na}` or `{error}`. side 'worker' = engine cost measured in the worker; 'page' = measured
 * around one awaited call on the page.
 */
function linesFor(results, runs, rowIds, labelSuffix = '') {
  const lines = [];
  for (const row of ROWS.filter((r) => rowIds.includes(r.id))) {
    for (const side of ['worker', 'page']) {
      const cells = {};
      let any = false;
      for (const run of runs) {
        const m = run.rows[row.id];
        if (!m) continue;
        if (m.error) {
          cells[run.engine] = { error: m.error };
          any = true;
        } else if (m.na) {
          if (side === 'worker') {
            cells[run.engine] = { na: m.na };
            any = true;
          }
        } else if (m[side]) {
          // [page] cells: the page-minus-worker gap of the same engine (what the page adds: the
          // round trip, the client, the structured clone), on the p50.
          const gap = side === 'page' && Number.isFinite(m.worker?.p50) && Number.isFinite(m.page?.p50) ? { gapMs: m.page.p50 - m.worker.p50 } : {};
          cells[run.engine] = { ...m[side], note: m.note, ...gap };
          any = true;
        }
      }
      if (!any) continue;
      if (side === 'page' && !runs.some((r) => r.rows[row.id]?.page)) continue;
      lines.push({
        rowId: row.id,
        side,
        label: `${side === 'page' ? `${row.label} [page]` : row.label}${labelSuffix}`,
        what: row[side] ?? '',
        cells,
        rate: row.rate,
        write: !!row.write,
        reference: row.reference,
        comparable: row.comparable !== false,
      });
    }
  }
  return lines;
}

/** Back-compatible: lines of the dataset run(s) at `size`. */
export function tableLines(results, size) {
  const runs = runsOf(results, 'dataset', size);
  return linesFor(results, runs, ROWS.map((r) => r.id));
}

const SCALING_ROWS = ['bulk-load-txn', 'bulk-load', 'open-n', 'open-n-query'];
const FAT_MEMORY_LINES = [
  ['afterLoad', 'opfsBytes', 'OPFS bytes after load'],
  ['afterLoad', 'wasmMemoryBytes', 'wasm memory after load'],
  ['afterLoad', 'jsHeapUsedBytes', 'worker JS heap after load'],
  ['afterBatch', 'wasmMemoryBytes', 'wasm memory after the batch reads'],
  ['afterBatch', 'jsHeapUsedBytes', 'worker JS heap after the batch reads'],
];
const MEMORY_LINES = [
  ['afterLoad', 'opfsBytes', 'OPFS bytes after bulk load'],
  ['afterLoad', 'wasmMemoryBytes', 'wasm memory after bulk load'],
  ['afterLoad', 'jsHeapUsedBytes', 'worker JS heap after bulk load'],
  ['afterOpen', 'wasmMemoryBytes', 'wasm memory after reopen + first read'],
  ['afterOpen', 'jsHeapUsedBytes', 'worker JS heap after reopen + first read'],
  ['afterOpenQuery', 'wasmMemoryBytes', 'wasm memory after reopen + first indexed query'],
  ['afterScan', 'wasmMemoryBytes', 'wasm memory after reopen + first indexed query + a full scan'],
];

/**
 * The report's sections: [{key, title, subtitle, lines}]. Dataset sizes that run core rows get a
 * section each; the scaling section holds bulk load + open + storage/memory lines for every size.
 */
export function reportSections(results) {
  const sections = [];
  const datasetRuns = runsOf(results, 'dataset');
  const sizes = [...new Set(datasetRuns.map((r) => r.size))].sort((a, b) => a - b);
  const coreSizes = results.options?.sizes ?? sizes;
  for (const size of sizes.filter((n) => coreSizes.includes(n))) {
    const runs = runsOf(results, 'dataset', size);
    const lines = linesFor(results, runs, ROWS.filter((r) => (r.section ?? 'dataset') === 'dataset').map((r) => r.id));
    if (lines.length) sections.push({ key: `n${size}`, title: `Operations, N = ${nfmt(size)}`, subtitle: 'item shape {title, count, tags}; engines in their own workers, real OPFS', lines });
  }
  const scalingSizes = sizes.filter((n) => datasetRuns.some((r) => r.size === n && SCALING_ROWS.some((id) => r.rows[id])));
  if (scalingSizes.length > 1 || (scalingSizes.length === 1 && !coreSizes.includes(scalingSizes[0]))) {
    const lines = [];
    for (const id of SCALING_ROWS) {
      for (const size of scalingSizes) {
        for (const l of linesFor(results, runsOf(results, 'dataset', size), [id], ` — N = ${nfmt(size)}`)) lines.push({ ...l, size });
      }
    }
    for (const [when, key, label] of MEMORY_LINES) {
      for (const size of scalingSizes) {
        const cells = {};
        for (const run of runsOf(results, 'dataset', size)) {
          const v = run.stats?.[when]?.[key];
          if (Number.isFinite(v)) cells[run.engine] = { p50: v, n: 1 };
        }
        if (Object.keys(cells).length) lines.push({ rowId: `${when}:${key}`, side: 'stat', label: `${label} — N = ${nfmt(size)}`, what: label, cells, unit: 'bytes', comparable: true, size });
      }
    }
    sections.push({ key: 'scaling', title: 'Scaling: bulk load, open + first read, storage and memory', subtitle: `N = ${scalingSizes.map(nfmt).join(', ')}`, lines, scaling: scalingSizes });
  }
  const rel = runsOf(results, 'relational');
  if (rel.length) {
    const p = results.options?.planParams?.relational;
    const subtitle = p
      ? `after go-sqlite-bench; simple ${nfmt(p.simpleUsers)} users; real ${p.real.users}×${p.real.articles}×${p.real.comments}; complex ${p.complex.users} users × ${p.complex.articles} articles × ${p.complex.comments} comments; many: ${nfmt(p.manyQueries)} queries; large: ${nfmt(p.largeRows)} rows`
      : 'after go-sqlite-bench';
    sections.push({ key: 'relational', title: 'Relational workloads (go-sqlite-bench)', subtitle, lines: linesFor(results, rel, ROWS.filter((r) => r.section === 'relational').map((r) => r.id)) });
  }
  const omg = runsOf(results, 'omgdb');
  if (omg.length) {
    const p = results.options?.planParams?.omgdb;
    sections.push({ key: 'omgdb', title: 'OMGDB seed: its published rows, side by side', subtitle: p ? `${nfmt(p.documents)} documents (the benchmark item) in batches of ${nfmt(p.batch)}; published: OMGDB's performance page (native, in-process, its own machine)` : '', lines: linesFor(results, omg, ROWS.filter((r) => r.section === 'omgdb').map((r) => r.id)), reference: 'OMGDB published' });
  }
  const files = runsOf(results, 'files');
  if (files.length) {
    const p = results.options?.planParams?.files;
    sections.push({ key: 'files', title: 'go-persist seed: file storage (attachments against SQLite BLOBs)', subtitle: p ? `${nfmt(p.few)} and ${nfmt(p.many)} files of ${(p.minBytes / 1e6).toFixed(1)}–${(p.maxBytes / 1e6).toFixed(1)} MB; ibexdb: an item and its attachment per file; SQLite: a row with a BLOB` : '', lines: linesFor(results, files, ROWS.filter((r) => r.section === 'files').map((r) => r.id)) });
  }
  const fts = runsOf(results, 'fts');
  if (fts.length) {
    const p = results.options?.planParams?.fts;
    sections.push({ key: 'fts', title: 'Full-text search: text index vs SQLite FTS5', subtitle: p ? `${nfmt(p.docs)} documents of 4–10 words; ${p.searches} searches "word pre"; SQLite: FTS5 external content, unicode61 remove_diacritics 2, prefix='2 3'` : '', lines: linesFor(results, fts, ROWS.filter((r) => r.section === 'fts').map((r) => r.id)) });
  }
  const dbx = runsOf(results, 'dbx');
  if (dbx.length) {
    sections.push({ key: 'dbx', title: 'DBX seed: aggregates and filters over 1M records, no index on the field', subtitle: `N = ${nfmt(dbx[0].size)} records {name, age, city}`, lines: linesFor(results, dbx, ROWS.filter((r) => r.section === 'dbx').map((r) => r.id)) });
  }
  const fatSizes = [...new Set(runsOf(results, 'fat').map((r) => r.size))].sort((a, b) => a - b);
  if (fatSizes.length) {
    const lines = [];
    for (const row of ROWS.filter((r) => r.section === 'fat')) {
      for (const size of fatSizes) {
        for (const l of linesFor(results, runsOf(results, 'fat').filter((r) => r.size === size), [row.id], ` — N = ${nfmt(size)}`)) lines.push({ ...l, size });
      }
    }
    for (const [when, key, label] of FAT_MEMORY_LINES) {
      for (const size of fatSizes) {
        const cells = {};
        for (const run of runsOf(results, 'fat').filter((r) => r.size === size)) {
          const v = run.stats?.[when]?.[key];
          if (Number.isFinite(v)) cells[run.engine] = { p50: v, n: 1 };
        }
        if (Object.keys(cells).length) lines.push({ rowId: `fat:${when}:${key}`, side: 'stat', label: `${label} — N = ${nfmt(size)}`, what: label, cells, unit: 'bytes', comparable: true, size });
      }
    }
    sections.push({ key: 'fat', title: 'go-persist seed: load scaling on fat records', subtitle: `N = ${fatSizes.map(nfmt).join(', ')} records (5 string fields, nested metadata, a 1 KB payload) in 5 collections`, lines });
  }
  const ver = runsOf(results, 'verify');
  if (ver.length) {
    const p = results.options?.planParams?.verify;
    sections.push({ key: 'verify', title: 'Verification', subtitle: p ? `${nfmt(p.commits)} single-item commits, sealed every ${p.sealEvery} (signed engines)` : '', lines: linesFor(results, ver, ['verify']) });
  }
  return sections;
}

/** Why a relaxed write row has no ratio (PROTOCOL.md "Ratios"). */
export const RELAXED_NO_RATIO = 'no ratio: not the same guarantee. ibexdb-relaxed returns with the write in wasm memory only (lost if the tab dies within 50 ms); SQLite synchronous=OFF has written the page to its OPFS file (survives a tab crash, not an OS crash)';

/** A cell's value for the ratio on `stat` ('p50' or 'mean'; a one-sample cell has its p50 only). @param {any} c @param {'p50' | 'mean'} stat */
const statOf = (c, stat) => (Number.isFinite(c?.[stat]) ? c[stat] : c?.p50);

/**
 * Ratio of each ibexdb engine to the best SQLite engine on this line, on the p50 and on the mean
 * (below 1 means ibexdb is faster or smaller); `worse` is the larger of the two, the one a short
 * reading quotes. The best SQLite is per statistic and among every SQLite configuration doing the
 * same work: on a read row (and a footprint line) every SQLite engine, whatever its durability; on
 * a write row those of the same durability. Relaxed write rows get no ratio (`none`: why):
 * ibexdb-relaxed and synchronous=OFF do not give the same guarantee. Lines whose engines do
 * different work (comparable: false) get no ratio.
 * Returns { [ibexEngineId]: {ratio, vs, meanRatio, vsMean, worse} | {none} }.
 */
export function ratios(results, line) {
  if (line.comparable === false) return {};
  const byId = Object.fromEntries(results.engines.map((e) => [e.id, e]));
  /** @type {Record<string, any>} */
  const out = {};
  for (const [id, cell] of Object.entries(line.cells)) {
    const eng = byId[id];
    if (!eng || eng.family !== 'ibexdb' || !Number.isFinite(cell.p50)) continue;
    if (line.write && eng.durability === 'relaxed') {
      out[id] = { none: RELAXED_NO_RATIO };
      continue;
    }
    /** @param {'p50' | 'mean'} stat */
    const best = (stat) => {
      let b = null;
      for (const [sid, scell] of Object.entries(line.cells)) {
        const s = byId[sid];
        const v = statOf(scell, stat);
        if (!s || s.family !== 'sqlite' || (line.write && s.durability !== eng.durability) || !Number.isFinite(v) || v <= 0) continue;
        if (!b || v < b.v) b = { id: sid, v };
      }
      return b;
    };
    const bp = best('p50');
    const bm = best('mean');
    if (!bp || !bm) continue;
    const ratio = cell.p50 / bp.v;
    const meanRatio = statOf(cell, 'mean') / bm.v;
    out[id] = { ratio, vs: bp.id, meanRatio, vsMean: bm.id, worse: Math.max(ratio, meanRatio) };
  }
  return out;
}

/**
 * Every ratio of the report, for results.json: per section and line, per ibexdb engine, the p50
 * and mean ratios, the SQLite engine each is against, and the worse one (or why there is none).
 * @param {any} results
 */
export function ratioSummary(results) {
  return reportSections(results).map((sec) => ({
    section: sec.title,
    lines: sec.lines.filter((l) => l.side !== 'stat').map((l) => ({ row: l.rowId, side: l.side, label: l.label, ...(l.comparable === false ? { notSameWork: true } : { ratios: ratios(results, l) }) })),
  }));
}

/** Two engines that do identical work on read rows: their spread is the run's noise floor. */
export const NOISE_PAIR = ['sqlite-tuned', 'sqlite-tuned-off'];

/**
 * The run's noise floor: on every read line (worker and [page]) where both engines of NOISE_PAIR
 * were timed, the spread max/min of their p50s (and of their means). They run the same SQLite
 * with the same pages and the same reads (only synchronous differs, which reads never reach), so
 * any spread is the machine's. Returns null when the pair was not run.
 */
export function noiseFloor(results) {
  const spreads = [];
  for (const sec of reportSections(results)) {
    for (const line of sec.lines) {
      if (line.write || line.side === 'stat' || line.comparable === false) continue;
      const [a, b] = NOISE_PAIR.map((id) => line.cells[id]);
      if (!Number.isFinite(a?.p50) || !Number.isFinite(b?.p50) || a.p50 <= 0 || b.p50 <= 0) continue;
      const sp = (/** @type {number} */ x, /** @type {number} */ y) => Math.max(x, y) / Math.min(x, y);
      spreads.push({ label: `${line.label}${sec.key.startsWith('n') ? ` (${sec.title.replace('Operations, ', '')})` : ''}`, p50: sp(a.p50, b.p50), mean: sp(statOf(a, 'mean'), statOf(b, 'mean')) });
    }
  }
  if (!spreads.length) return null;
  const med = (/** @type {number[]} */ xs) => [...xs].sort((x, y) => x - y)[Math.ceil(xs.length / 2) - 1];
  const worst = spreads.reduce((w, x) => (Math.max(x.p50, x.mean) > Math.max(w.p50, w.mean) ? x : w));
  return { pair: NOISE_PAIR, lines: spreads.length, medianP50: med(spreads.map((x) => x.p50)), medianMean: med(spreads.map((x) => x.mean)), worst, spreads };
}

/** The noise floor in one sentence. @param {ReturnType<typeof noiseFloor>} nf */
export function noiseText(nf) {
  if (!nf) return 'Noise floor: not measured (the run did not time both sqlite-tuned and sqlite-tuned-off on read rows).';
  const pct = (/** @type {number} */ r) => `${((r - 1) * 100).toFixed(0)}%`;
  return `Noise floor of this run: ${nf.pair.join(' and ')} do identical reads; over ${nf.lines} read lines their p50s differ by ${pct(nf.medianP50)} (median) and their means by ${pct(nf.medianMean)}; the widest: ${pct(Math.max(nf.worst.p50, nf.worst.mean))} on ${nf.worst.label}. A ratio within that distance of 1× is a tie.`;
}

/** A ratio cell's text: the worse of the two first, then both. @param {any} r */
export function fmtRatios(r) {
  if (!r) return '';
  if (r.none) return 'no ratio';
  return `${fmtRatio(r.worse)} (p50 ${fmtRatio(r.ratio)}, mean ${fmtRatio(r.meanRatio)})`;
}

function enginesIn(results, lines) {
  const order = results.engines.map((e) => e.id);
  const set = new Set(lines.flatMap((l) => Object.keys(l.cells)));
  return order.filter((id) => set.has(id));
}
const isIbex = (results, id) => results.engines.find((x) => x.id === id)?.family === 'ibexdb';
const fmtRatio = (r) => (r >= 100 ? `${r.toFixed(0)}x` : r >= 10 ? `${r.toFixed(1)}x` : r >= 0.1 ? `${r.toFixed(2)}x` : `${r.toPrecision(2)}x`);

/** Plain-text tables (p50 per engine, ratio columns for ibexdb engines) for the terminal. */
export function textTable(results) {
  const out = [];
  for (const sec of reportSections(results)) {
    const engines = enginesIn(results, sec.lines);
    const ibex = engines.filter((e) => isIbex(results, e));
    const header = ['operation (p50)', ...engines, ...ibex.map((e) => `${e}/best-sqlite p50|mean`), ...(sec.reference ? [sec.reference] : [])];
    const body = [];
    const notes = new Map();
    for (const line of sec.lines) {
      const r = ratios(results, line);
      body.push([
        line.label,
        ...engines.map((e) => {
          const c = line.cells[e];
          if (c?.na) {
            if (!notes.has(c.na)) notes.set(c.na, new Map());
            const m = notes.get(c.na);
            m.set(line.label, [...(m.get(line.label) ?? []), e]);
          }
          return fmtCell(line, c);
        }),
        ...ibex.map((e) => (line.comparable === false ? (line.cells[e] ? 'not same work' : '') : !r[e] ? '' : r[e].none ? 'no ratio' : `${fmtRatio(r[e].ratio)}|${fmtRatio(r[e].meanRatio)}`)),
        ...(sec.reference ? [line.reference ?? ''] : []),
      ]);
    }
    const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
    const fmt = (cols) => cols.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
    out.push(`${sec.title}${sec.subtitle ? ` (${sec.subtitle})` : ''}`);
    out.push(fmt(header));
    out.push(widths.map((w) => '-'.repeat(w)).join('  '));
    for (const b of body) out.push(fmt(b));
    for (const [reason, rows] of notes) {
      out.push(`  n/a — ${reason}: ${[...rows].map(([label, es]) => `${label} (${es.length === engines.length ? 'every engine' : es.join(', ')})`).join('; ')}`);
    }
    if (sec.lines.some((l) => Object.values(ratios(results, l)).some((x) => x.none))) out.push(`  no ratio — ${RELAXED_NO_RATIO.replace(/^no ratio: /, '')}`);
    out.push('');
  }
  if (out.length) out.push(noiseText(noiseFloor(results)), '');
  return out.join('\n');
}

/** Markdown tables (p50, ratio columns), one per section: for docs/benchmarks.md (results.md). */
export function markdownTables(results) {
  const out = [];
  for (const sec of reportSections(results)) {
    const engines = enginesIn(results, sec.lines);
    const ibex = engines.filter((e) => isIbex(results, e));
    out.push(`### ${sec.title}`, '');
    if (sec.subtitle) out.push(`${sec.subtitle}`, '');
    const ref = sec.reference ? [sec.reference] : [];
    out.push(`| operation (p50) | ${engines.join(' | ')} | ${[...ibex.map((e) => `${e} ÷ best SQLite (worse of p50, mean)`), ...ref].join(' | ')} |`);
    out.push(`|---|${engines.map(() => '--:').join('|')}|${[...ibex, ...ref].map(() => '--:').join('|')}|`);
    const na = new Map();
    for (const line of sec.lines) {
      const r = ratios(results, line);
      const cells = engines.map((e) => {
        const c = line.cells[e];
        if (c?.na) {
          if (!na.has(c.na)) na.set(c.na, new Set());
          na.get(c.na).add(line.label);
        }
        return fmtCell(line, c).replace(/\|/g, '\\|');
      });
      const rs = ibex.map((e) => (line.comparable === false ? (line.cells[e] ? 'not same work' : '') : !r[e] ? '' : r[e].none ? 'no ratio' : `**${fmtRatio(r[e].worse)}** (p50 ${fmtRatio(r[e].ratio)}, mean ${fmtRatio(r[e].meanRatio)})`));
      if (sec.reference) rs.push(line.reference ?? '');
      out.push(`| ${line.label} | ${cells.join(' | ')} | ${rs.join(' | ')} |`);
    }
    // One mention per row, whatever the sizes (the fat suite lists each row at three sizes).
    for (const [reason, rows] of na) out.push('', `n/a — ${reason}: ${[...new Set([...rows].map((l) => l.replace(/ — N = .*/, '')))].join('; ')}.`);
    if (sec.lines.some((l) => Object.values(ratios(results, l)).some((x) => x.none))) out.push('', `No ratio on the relaxed write rows: ${RELAXED_NO_RATIO.replace(/^no ratio: /, '')}.`);
    out.push('');
    // Tails: operations long enough to be timed one by one (>= 50 µs), per operation.
    const tails = sec.lines.filter((l) => Object.values(l.cells).some((c) => c.ops));
    if (tails.length) {
      out.push(`Per-operation tails (operations timed one by one): p95 / p99 / max`, '');
      out.push(`| operation | ${engines.join(' | ')} |`);
      out.push(`|---|${engines.map(() => '--:').join('|')}|`);
      for (const line of tails) out.push(`| ${line.label} | ${engines.map((e) => fmtTail(line.cells[e])).join(' | ')} |`);
      out.push('');
    }
  }
  if (out.length) out.push(noiseText(noiseFloor(results)), '');
  return out.join('\n');
}

// ----- charts ---------------------------------------------------------------------------------------

/** Horizontal log-scale bar chart (p50 bar, p95 whisker) for one line, as an SVG string. */
export function barChartSvg(results, line) {
  const entries = Object.entries(line.cells).filter(([, c]) => Number.isFinite(c.p50) && c.p50 > 0);
  const width = 600;
  const labelW = 120;
  const valueW = 150;
  const barH = 14;
  const gap = 5;
  const axisH = 18;
  const height = entries.length * (barH + gap) + axisH + 4;
  if (!entries.length) return `<svg width="${width}" height="24" xmlns="http://www.w3.org/2000/svg"><text x="4" y="16" font-size="12" fill="#888">no timings${Object.values(line.cells).some((c) => c.na) ? ' (n/a)' : ''}</text></svg>`;

  const fmtV = line.unit === 'bytes' ? fmtBytes : fmtMs;
  const lo = Math.min(...entries.map(([, c]) => c.p50));
  const hi = Math.max(...entries.map(([, c]) => Math.max(c.p50, c.p95 ?? c.p50)));
  // Whole decades around the data; at least two decades so small differences are not exaggerated.
  const d0 = Math.floor(Math.log10(lo));
  let d1 = Math.ceil(Math.log10(hi));
  if (d1 - d0 < 2) d1 = d0 + 2;
  const plotW = width - labelW - valueW;
  const x = (v) => labelW + ((Math.log10(v) - d0) / (d1 - d0)) * plotW;

  const parts = [];
  parts.push(`<svg width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" xmlns="http://www.w3.org/2000/svg" font-family="system-ui, sans-serif" font-size="11">`);
  for (let d = d0; d <= d1; d++) {
    const gx = x(10 ** d).toFixed(1);
    parts.push(`<line x1="${gx}" y1="0" x2="${gx}" y2="${height - axisH}" stroke="#e3e3e3"/>`);
    parts.push(`<text x="${gx}" y="${height - 5}" text-anchor="middle" fill="#777">${esc(fmtV(10 ** d))}</text>`);
  }
  const order = results.engines.map((e) => e.id);
  entries.sort((a, b) => order.indexOf(a[0]) - order.indexOf(b[0]));
  entries.forEach(([id, c], i) => {
    const y = i * (barH + gap) + 2;
    const w = Math.max(1, x(c.p50) - labelW);
    parts.push(`<text x="${labelW - 6}" y="${y + barH - 3}" text-anchor="end" fill="#333">${esc(id)}</text>`);
    parts.push(`<rect x="${labelW}" y="${y}" width="${w.toFixed(1)}" height="${barH}" fill="${engineColor(id, i)}"><title>${esc(`${id}: p50 ${fmtV(c.p50)}, p95 ${fmtV(c.p95)}, n=${c.n}`)}</title></rect>`);
    if (Number.isFinite(c.p95) && c.p95 > c.p50) {
      const x1 = x(c.p50);
      const x2 = x(c.p95);
      const my = y + barH / 2;
      parts.push(`<line x1="${x1.toFixed(1)}" y1="${my}" x2="${x2.toFixed(1)}" y2="${my}" stroke="#222" stroke-width="1"/>`);
      parts.push(`<line x1="${x2.toFixed(1)}" y1="${my - 4}" x2="${x2.toFixed(1)}" y2="${my + 4}" stroke="#222" stroke-width="1"/>`);
    }
    const val = line.unit === 'bytes' ? fmtBytes(c.p50) : `${fmtMs(c.p50)}`;
    parts.push(`<text x="${width - valueW + 6}" y="${y + barH - 3}" fill="#111">${esc(val)}${line.unit === 'bytes' ? '' : ` <tspan fill="#888">p95 ${esc(fmtMs(c.p95))}</tspan>`}</text>`);
  });
  parts.push('</svg>');
  return parts.join('');
}

/**
 * Ratio overview: one row per line; per ibexdb engine a filled dot at its p50 ratio and a ring at
 * its mean ratio (ratios() above), joined by a line; log scale 1/1000× … 1000×; left of the 1×
 * line = ibexdb faster. The grey band around 1× is the run's noise floor (`nf`, noiseFloor()):
 * the spread of two engines doing identical reads.
 * @param {any} results @param {any[]} lines @param {ReturnType<typeof noiseFloor>} [nf]
 */
export function ratioChartSvg(results, lines, nf = null) {
  const ibex = results.engines.filter((e) => e.family === 'ibexdb').map((e) => e.id);
  const rowsData = lines.map((l) => ({ l, r: Object.fromEntries(Object.entries(ratios(results, l)).filter(([, v]) => !v.none)) })).filter((x) => Object.keys(x.r).length);
  if (!rowsData.length) return '';
  const width = 860;
  const labelW = 330;
  const rowH = 17;
  const top = 22;
  const height = top + rowsData.length * rowH + 8;
  const lo = -3;
  const hi = 3;
  const plotW = width - labelW - 46;
  const x = (r) => labelW + ((Math.max(lo, Math.min(hi, Math.log10(r))) - lo) / (hi - lo)) * plotW;
  const p = [];
  p.push(`<svg width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" xmlns="http://www.w3.org/2000/svg" font-family="system-ui, sans-serif" font-size="11">`);
  p.push(`<rect x="${labelW}" y="${top - 4}" width="${(x(1) - labelW).toFixed(1)}" height="${height - top}" fill="#eef7ee"/>`);
  p.push(`<rect x="${x(1).toFixed(1)}" y="${top - 4}" width="${(labelW + plotW - x(1)).toFixed(1)}" height="${height - top}" fill="#fbefea"/>`);
  if (nf) {
    const f = Math.max(nf.medianP50, nf.medianMean);
    p.push(`<rect x="${x(1 / f).toFixed(1)}" y="${top - 4}" width="${Math.max(1, x(f) - x(1 / f)).toFixed(1)}" height="${height - top}" fill="#bbb" opacity="0.45"><title>${esc(`noise floor: ×${f.toFixed(2)} either side of 1× (median spread of ${nf.pair.join(' / ')} on identical reads)`)}</title></rect>`);
  }
  for (let d = lo; d <= hi; d++) {
    const gx = x(10 ** d).toFixed(1);
    p.push(`<line x1="${gx}" y1="${top - 4}" x2="${gx}" y2="${height - 4}" stroke="${d === 0 ? '#333' : '#d8d8d8'}" stroke-width="${d === 0 ? 1.5 : 1}"/>`);
    const lab = d === 0 ? '1× (same)' : d < 0 ? `${10 ** -d}× faster` : `${10 ** d}× slower`;
    p.push(`<text x="${gx}" y="12" text-anchor="middle" fill="#555">${lab}</text>`);
  }
  rowsData.forEach(({ l, r }, i) => {
    const y = top + i * rowH + rowH / 2;
    if (i % 2) p.push(`<rect x="0" y="${y - rowH / 2}" width="${labelW}" height="${rowH}" fill="#f7f7f7"/>`);
    p.push(`<text x="${labelW - 8}" y="${y + 4}" text-anchor="end" fill="#222">${esc(l.label.length > 58 ? `${l.label.slice(0, 56)}…` : l.label)}</text>`);
    p.push(`<line x1="${labelW}" y1="${y}" x2="${labelW + plotW}" y2="${y}" stroke="#eee"/>`);
    ibex.forEach((id, j) => {
      const v = r[id];
      if (!v) return;
      const cx = x(v.ratio);
      const mx = x(v.meanRatio);
      const cy = (y + (j - 1) * 3).toFixed(1);
      const color = engineColor(id, j);
      p.push(`<line x1="${cx.toFixed(1)}" y1="${cy}" x2="${mx.toFixed(1)}" y2="${cy}" stroke="${color}" stroke-width="1.5"/>`);
      p.push(`<circle cx="${mx.toFixed(1)}" cy="${cy}" r="4" fill="#fff" stroke="${color}" stroke-width="2"><title>${esc(`${id}: mean ${fmtRatio(v.meanRatio)} vs ${v.vsMean}`)}</title></circle>`);
      p.push(`<circle cx="${cx.toFixed(1)}" cy="${cy}" r="4.5" fill="${color}" stroke="#fff" stroke-width="0.8"><title>${esc(`${id}: p50 ${fmtRatio(v.ratio)} vs ${v.vs}`)}</title></circle>`);
    });
  });
  p.push('</svg>');
  return p.join('');
}

/** Log-log chart of one scaling row: p50 against N, one line per engine. */
export function scalingChartSvg(results, lines, title) {
  const pts = {};
  for (const l of lines) {
    for (const [id, c] of Object.entries(l.cells)) {
      if (!Number.isFinite(c.p50) || c.p50 <= 0) continue;
      (pts[id] ??= []).push([l.size, c.p50]);
    }
  }
  const ids = results.engines.map((e) => e.id).filter((id) => pts[id]);
  if (!ids.length) return '';
  const width = 400;
  const height = 240;
  const left = 58;
  const bottom = 30;
  const top = 24;
  const right = 10;
  const all = ids.flatMap((id) => pts[id]);
  const nx = all.map((p) => p[0]);
  const vy = all.map((p) => p[1]);
  const x0 = Math.floor(Math.log10(Math.min(...nx)));
  const x1 = Math.max(x0 + 1, Math.ceil(Math.log10(Math.max(...nx))));
  const y0 = Math.floor(Math.log10(Math.min(...vy)));
  const y1 = Math.max(y0 + 1, Math.ceil(Math.log10(Math.max(...vy))));
  const bytes = lines[0]?.unit === 'bytes';
  const fmtV = bytes ? fmtBytes : fmtMs;
  // Byte axes: ticks at 1, 10, 100 × KiB/MiB/GiB (decades of 10 bytes would read "97.7 KiB").
  let yTicks = null;
  let ylo = y0;
  let yhi = y1;
  if (bytes) {
    const lo = Math.min(...vy);
    const hi = Math.max(...vy);
    const cands = [];
    for (const unit of [1, 1024, 1024 ** 2, 1024 ** 3]) for (const m of [1, 10, 100]) cands.push(unit * m);
    const below = cands.filter((c) => c <= lo).pop() ?? cands[0];
    const above = cands.find((c) => c >= hi) ?? cands[cands.length - 1];
    yTicks = cands.filter((c) => c >= below && c <= above);
    ylo = Math.log10(below);
    yhi = Math.max(ylo + 0.5, Math.log10(above));
  }
  const X = (n) => left + ((Math.log10(n) - x0) / (x1 - x0)) * (width - left - right);
  const Y = (v) => height - bottom - ((Math.log10(v) - ylo) / (yhi - ylo)) * (height - top - bottom);
  const p = [`<svg width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" xmlns="http://www.w3.org/2000/svg" font-family="system-ui, sans-serif" font-size="11">`];
  p.push(`<text x="${left}" y="14" font-weight="600" fill="#222">${esc(title)}</text>`);
  for (let d = x0; d <= x1; d++) {
    p.push(`<line x1="${X(10 ** d)}" y1="${top}" x2="${X(10 ** d)}" y2="${height - bottom}" stroke="#e6e6e6"/>`);
    p.push(`<text x="${X(10 ** d)}" y="${height - bottom + 14}" text-anchor="middle" fill="#666">${10 ** d >= 1e6 ? `${10 ** (d - 6)}M` : 10 ** d >= 1e3 ? `${10 ** (d - 3)}k` : 10 ** d}</text>`);
  }
  for (const v of yTicks ?? Array.from({ length: y1 - y0 + 1 }, (_, i) => 10 ** (y0 + i))) {
    p.push(`<line x1="${left}" y1="${Y(v)}" x2="${width - right}" y2="${Y(v)}" stroke="#e6e6e6"/>`);
    p.push(`<text x="${left - 4}" y="${Y(v) + 4}" text-anchor="end" fill="#666">${esc(bytes ? fmtBytes(v).replace('.0 ', ' ') : fmtV(v))}</text>`);
  }
  p.push(`<text x="${(left + width - right) / 2}" y="${height - 4}" text-anchor="middle" fill="#444">N (items)</text>`);
  ids.forEach((id, i) => {
    const ps = pts[id].sort((a, b) => a[0] - b[0]);
    const color = engineColor(id, i);
    p.push(`<polyline fill="none" stroke="${color}" stroke-width="2" points="${ps.map(([n, v]) => `${X(n).toFixed(1)},${Y(v).toFixed(1)}`).join(' ')}"/>`);
    for (const [n, v] of ps) p.push(`<circle cx="${X(n).toFixed(1)}" cy="${Y(v).toFixed(1)}" r="3" fill="${color}"><title>${esc(`${id} N=${nfmt(n)}: ${fmtV(v)}`)}</title></circle>`);
  });
  p.push('</svg>');
  return p.join('');
}

// ----- HTML ----------------------------------------------------------------------------------------

function sectionTable(results, sec) {
  const engines = enginesIn(results, sec.lines);
  const ibex = engines.filter((e) => isIbex(results, e));
  const h = [];
  h.push('<table class="main"><tr><th>operation<br><span class="sub">p50; p95 · samples×K below</span></th>'
    + engines.map((e) => `<th><i class="sw" style="background:${engineColor(e)}"></i>${esc(e)}</th>`).join('')
    + ibex.map((e) => `<th class="ratio"><i class="sw" style="background:${engineColor(e)};border-radius:6px"></i>${esc(e)}<br><span class="sub">÷ best SQLite: the worse of p50, mean</span></th>`).join('')
    + (sec.reference ? `<th>${esc(sec.reference)}</th>` : '') + '</tr>');
  for (const line of sec.lines) {
    const r = ratios(results, line);
    h.push(`<tr title="${esc(line.what)}"><td>${esc(line.label)}</td>`
      + engines.map((e) => {
        const c = line.cells[e];
        if (!c) return '<td></td>';
        if (c.error) return `<td class="err" title="${esc(c.error)}">error</td>`;
        if (c.na) return `<td class="na" title="${esc(c.na)}">n/a</td>`;
        if (line.unit === 'bytes') return `<td>${esc(fmtBytes(c.p50))}</td>`;
        const rate = line.rate ? ` <span class="rate">${esc(fmtRate(1000 / c.p50))}/s</span>` : '';
        const mean = c.n > 1 && Number.isFinite(c.mean) ? ` <span class="p95">mean ${esc(fmtMs(c.mean))}</span>` : '';
        const ops = (c.ops ? ` · op p95 ${esc(fmtMs(c.ops.p95))}, max ${esc(fmtMs(c.ops.max))}` : '') + (Number.isFinite(c.gapMs) ? ` · page−worker ${esc(fmtGap(c.gapMs))}` : '');
        return `<td title="${esc(c.note ?? '')}">${esc(fmtMs(c.p50))}${rate}${mean}<br><span class="p95">${esc(fmtMs(c.p95))} · ${c.n}×${c.k ?? 1}${ops}</span></td>`;
      }).join('')
      + ibex.map((e) => {
        if (line.comparable === false) return line.cells[e] ? '<td class="na" title="the engines do different work on this row">not same work</td>' : '<td></td>';
        if (!r[e]) return '<td></td>';
        if (r[e].none) return `<td class="na" title="${esc(r[e].none)}">no ratio</td>`;
        const cls = r[e].worse <= 1 ? 'good' : 'bad';
        return `<td class="${cls}" title="p50 vs ${esc(r[e].vs)}, mean vs ${esc(r[e].vsMean)}">${fmtRatio(r[e].worse)}<br><span class="p95">p50 ${fmtRatio(r[e].ratio)} · mean ${fmtRatio(r[e].meanRatio)}</span></td>`;
      }).join('')
      + (sec.reference ? `<td>${esc(line.reference ?? '')}</td>` : '')
      + '</tr>');
  }
  h.push('</table>');
  // n/a reasons: per reason, the rows and the engines it applies to.
  const na = new Map();
  for (const line of sec.lines) {
    for (const [e, c] of Object.entries(line.cells)) {
      if (!c.na) continue;
      if (!na.has(c.na)) na.set(c.na, new Map());
      const rows = na.get(c.na);
      if (!rows.has(line.label)) rows.set(line.label, []);
      rows.get(line.label).push(e);
    }
  }
  if (na.size) {
    const all = engines.length;
    h.push(`<p class="what">${[...na].map(([reason, rows]) => `<b>n/a</b> — ${esc(reason)}: ${[...rows].map(([label, es]) => `${esc(label)} (${es.length === all ? 'every engine' : esc(es.join(', '))})`).join('; ')}`).join('<br>')}</p>`);
  }
  return h.join('\n');
}

function whatTable(results, sec) {
  const seen = new Set();
  const h = ['<details><summary>What each row times (per engine), and the notes the engines returned</summary><table class="whatt"><tr><th>row</th><th>what is timed</th><th>engine notes</th></tr>'];
  for (const line of sec.lines) {
    if (line.side === 'stat') continue;
    const key = `${line.rowId}:${line.side}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const notes = Object.entries(line.cells).filter(([, c]) => c.note).map(([e, c]) => `${e}: ${c.note}`);
    h.push(`<tr><td>${esc(line.label)}</td><td class="l">${esc(line.what)}</td><td class="l small">${esc(notes.join(' · '))}</td></tr>`);
  }
  h.push('</table></details>');
  return h.join('\n');
}

/**
 * The complete, self-contained report page. `summary: true` leaves out the per-row bar charts and
 * the details (used for report.png: header, ratio overview, tables, scaling charts).
 */
export function renderReport(results, { summary = false } = {}) {
  const m = results.meta ?? {};
  const sqliteInfo = results.runs.find((r) => r.info?.engine === 'sqlite-wasm')?.info;
  const ibexInfo = results.runs.find((r) => r.info?.engine === 'ibexdb')?.info;
  const sections = reportSections(results);
  const h = [];
  h.push(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>ibexdb benchmark ${esc(m.date ?? '')}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
 body{font-family:system-ui,sans-serif;margin:24px;color:#111;max-width:1320px}
 h1{font-size:22px;margin:0 0 4px} h2{font-size:18px;margin:30px 0 4px;border-top:2px solid #ddd;padding-top:12px} h3{font-size:14px;margin:14px 0 2px}
 .meta{color:#555;font-size:13px;line-height:1.5}
 table{border-collapse:collapse;font-size:12.5px;margin:8px 0}
 th,td{border-bottom:1px solid #e4e4e4;padding:3px 7px;text-align:right;white-space:nowrap}
 table.main td{line-height:1.15} table.main td:first-child{white-space:normal;max-width:280px;min-width:200px} th .sub{font-weight:400;color:#777;font-size:11px} th.ratio{background:#f3ece4}
 th:first-child,td:first-child{text-align:left}
 th{background:#f6f6f6}
 td.err{color:#b00} td.na{color:#888;font-style:italic} td.samples{color:#999;font-size:11px}
 .p95{color:#999;font-size:10.5px} .rate{color:#2a6a2a;font-size:11px}
 .good{color:#176b1d;font-weight:600} .bad{color:#a3300b;font-weight:600}
 .what{color:#666;font-size:12px;margin:2px 0 6px}
 .charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(600px,1fr));gap:2px 24px}
 .scal{display:flex;flex-wrap:wrap;gap:12px}
 .legend{font-size:12px} .legend span{display:inline-block;margin-right:14px;font-size:12px}
 .legend i,.sw{display:inline-block;width:11px;height:11px;margin-right:4px;vertical-align:-1px}
 code{background:#f3f3f3;padding:0 3px}
 .errors{color:#b00;font-size:13px}
 details{margin:6px 0 10px;font-size:12px} td.l{text-align:left;white-space:normal;max-width:520px} td.small{font-size:11px;color:#555;max-width:560px}
</style></head><body>`);
  h.push(`<h1>ibexdb vs sqlite-wasm — browser benchmark</h1>`);
  h.push(`<div class="meta">${esc(m.date ?? '')} · ${esc(m.browser ?? m.userAgent ?? '')} · ${esc(m.machine?.os ?? '')} · ${esc(m.machine?.cpus ?? '')} × ${esc(m.machine?.cpuModel ?? '')} · ${m.machine?.memoryBytes ? esc(fmtBytes(m.machine.memoryBytes)) : ''} RAM${m.machine?.loadAvgAtStart ? ` · load avg ${esc(m.machine.loadAvgAtStart.map((x) => x.toFixed(2)).join(' '))} → ${esc((m.machine.loadAvgAtEnd ?? []).map((x) => x.toFixed(2)).join(' '))}` : ''}<br>`
    + `sqlite-wasm ${esc(m.sqliteWasmPackage ?? '')} (SQLite ${esc(sqliteInfo?.version ?? '?')}, VFS opfs-sahpool) · ibexdb ${esc(ibexInfo?.version ?? '?')}${m.gitCommit ? ` (git ${esc(m.gitCommit)}${m.gitDirty?.length ? ` + ${m.gitDirty.length} modified file(s) in the working tree` : ''}${m.ibexdbWasm ? `; wasm ${esc(fmtBytes(m.ibexdbWasm.bytes))} sha256 ${esc(m.ibexdbWasm.sha256.slice(0, 12))}, built ${esc(m.ibexdbWasm.builtAt.slice(0, 16).replace('T', ' '))} UTC` : ''})` : ''} · plan <code>${esc(results.options?.plan ?? '')}</code> · cross-origin isolated: ${esc(String(m.crossOriginIsolated))} · timer step ${esc(fmtMs(m.timerResolutionMs))}${m.wallSeconds ? ` · wall ${esc(Math.round(m.wallSeconds))} s` : ''}<br>`
    + (m.opfsProbe?.error ? `OPFS call costs: not measurable here (${esc(m.opfsProbe.error)}).<br>` : '')
    + (m.opfsProbe && !m.opfsProbe.error ? `OPFS call costs measured at the start of this run (p50): ${esc(Object.entries(m.opfsProbe).map(([k, v]) => `${k} ${fmtMs(v.p50)}`).join(' · '))} (DESIGN.md §10 reference: write ~0.5 ms, write + flush ~0.84 ms); durable write rows scale with these.<br>` : '')
    + (m.roundTripProbe ? `Page ↔ worker round trip of a small message, timed like a [page] operation (p50 / p95): ${esc(Object.values(m.roundTripProbe).map((v) => `${fmtMs(v.p50)} / ${fmtMs(v.p95)}`).join(' · '))}: the floor under every [page] row, for both engines.<br>` : '')
    + `Times are p50 (p95 after the slash). Percentiles by nearest rank over the recorded samples; micro-operations are timed as loops of K and divided by K. `
    + `<b>[page]</b> rows are timed on the page around one awaited call per operation (SQLite: an op message to its worker; ibexdb: the public API, www/ibexdb.js), every engine's client open at once and the engines taking turns, so that all of them meet the same page ↔ worker transits (cold starts: a fresh page per sample); other rows are timed inside the engine's worker. `
    + `Ratios = ibexdb / the best SQLite configuration doing the same work, on the p50 and on the mean (each against its own best); the cell shows the worse of the two first (below 1 = ibexdb faster). Read rows: the best of every SQLite engine; write rows: of the same durability; relaxed write rows: no ratio (${esc(RELAXED_NO_RATIO.replace(/^no ratio: /, ''))}). ${m.memoryMeasurement ? `Memory: ${esc(m.memoryMeasurement)}.` : ''}</div>`);

  h.push('<p class="meta">The seeds\' published figures (GoatDB, OMGDB) next to this run\'s, and the rows mirroring go-sqlite-bench, go-persist and DBX: <a href="seeds.html">seeds.html</a>.</p>');
  const legend = results.engines.filter((e) => results.runs.some((r) => r.engine === e.id));
  h.push(`<p class="legend">${legend.map((e, i) => `<span><i style="background:${engineColor(e.id, i)}"></i><b>${esc(e.id)}</b> (${esc(e.durability)}) — ${esc(e.description ?? '')}</span>`).join('<br>')}</p>`);

  const errs = results.runs.flatMap((r) => r.errors.map((e) => `${r.engine} @ ${r.section ?? 'dataset'} ${r.size ?? ''}: ${e}`)).concat(results.errors ?? []);
  if (errs.length) h.push(`<div class="errors"><b>Errors:</b><ul>${errs.map((e) => `<li>${esc(e)}</li>`).join('')}</ul></div>`);

  // At a glance: every ratio of every section.
  const nf = noiseFloor(results);
  const glance = sections.map((sec) => ({ sec, svg: ratioChartSvg(results, sec.lines.filter((l) => l.side !== 'stat'), nf) })).filter((x) => x.svg);
  if (glance.length) {
    h.push('<h2>At a glance: ibexdb / best SQLite, on the p50 (dot) and on the mean (ring)</h2>');
    h.push(`<p class="legend">${results.engines.filter((e) => e.family === 'ibexdb' && results.runs.some((r) => r.engine === e.id)).map((e, i) => `<span><i style="background:${engineColor(e.id, i)};border-radius:6px"></i>${esc(e.id)}</span>`).join('')} — vs the best SQLite per row and per statistic: on read rows the best of every SQLite engine, on write rows the best of the same durability (relaxed write rows: no ratio, not the same guarantee). Green side: ibexdb faster; red side: slower; ratios beyond 1000× are drawn at the edge. Rows marked n/a or "not same work" have no dot. Grey band: the run's noise floor.</p>`);
    h.push(`<p class="what">${esc(noiseText(nf))}</p>`);
    for (const { sec, svg } of glance) h.push(`<h3>${esc(sec.title)}</h3>${svg}`);
  }

  for (const sec of sections) {
    h.push(`<h2>${esc(sec.title)}</h2><p class="what">${esc(sec.subtitle ?? '')}</p>`);
    h.push(sectionTable(results, sec));
    if (!summary) h.push(whatTable(results, sec));
    if (sec.scaling) {
      h.push('<div class="scal">');
      for (const id of SCALING_ROWS) {
        for (const side of ['worker', 'page']) {
          const ls = sec.lines.filter((l) => l.rowId === id && l.side === side);
          if (ls.length) h.push(scalingChartSvg(results, ls, `${rowDef(id).label}${side === 'page' ? ' [page]' : ''}`));
        }
      }
      for (const [when, key, label] of MEMORY_LINES) {
        const ls = sec.lines.filter((l) => l.rowId === `${when}:${key}`);
        if (ls.length) h.push(scalingChartSvg(results, ls, label));
      }
      h.push('</div>');
    } else if (!summary) {
      h.push('<div class="charts">');
      for (const line of sec.lines) h.push(`<div><h3>${esc(line.label)}</h3><p class="what">${esc(line.what)}</p>${barChartSvg(results, line)}</div>`);
      h.push('</div>');
    }
  }

  if (summary) h.push('<p class="what">Summary view (report.png). report.html has a bar chart per row, what each row times and the engines\' notes, and the effective settings.</p>');
  const configs = summary ? [] : results.runs.filter((r) => r.info?.effective);
  if (configs.length) {
    h.push('<h2>Effective engine settings (read back after open)</h2><table><tr><th>engine</th><th>settings</th><th>query plans</th></tr>');
    const seen = new Set();
    for (const r of configs) {
      if (seen.has(r.engine)) continue;
      seen.add(r.engine);
      h.push(`<tr><td>${esc(r.engine)}</td><td class="l small">${esc(JSON.stringify(r.info.effective))}</td><td class="l small">${esc(Object.entries(r.info.queryPlans ?? {}).map(([k, v]) => `${k}: ${v}`).join(' | '))}</td></tr>`);
    }
    h.push('</table>');
  }
  h.push('</body></html>');
  return h.join('\n');
}
