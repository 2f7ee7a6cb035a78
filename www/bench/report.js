// Turns a results object (see PROTOCOL.md, "Results object") into the console table and the
// self-contained HTML report with inline SVG charts. Pure functions: used by the benchmark page and
// by scripts/bench.mjs in Node. No external libraries.

import { ROWS, fmtMs, fmtBytes } from './common.js';

const COLORS = {
  'sqlite-default': '#8a8f98',
  'sqlite-tuned': '#2f6db5',
  'sqlite-tuned-off': '#7fb0e6',
  ibexdb: '#d9731a',
  'ibexdb-relaxed': '#f2b26b',
};
const FALLBACK_COLORS = ['#6a3d9a', '#33a02c', '#b15928', '#e31a1c', '#1f78b4'];

export function engineColor(id, i = 0) {
  return COLORS[id] ?? FALLBACK_COLORS[i % FALLBACK_COLORS.length];
}

const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);

/**
 * One line per (row, side) that has data, for one size: cells by engine id with the summary stats.
 * side 'worker' = engine cost measured in the worker; 'page' = measured around postMessage.
 */
export function tableLines(results, size) {
  const runs = results.runs.filter((r) => r.size === size);
  const lines = [];
  for (const row of ROWS) {
    for (const side of ['worker', 'page']) {
      const cells = {};
      let any = false;
      for (const run of runs) {
        const m = run.rows[row.id];
        if (!m) continue;
        if (m.error) {
          cells[run.engine] = { error: m.error };
          any = true;
        } else if (m[side]) {
          cells[run.engine] = m[side];
          any = true;
        }
      }
      if (!any) continue;
      if (side === 'page' && !runs.some((r) => r.rows[row.id]?.page)) continue;
      lines.push({
        rowId: row.id,
        side,
        label: side === 'page' ? `${row.label} [page]` : row.label,
        what: row[side] ?? '',
        cells,
      });
    }
  }
  return lines;
}

/**
 * Ratio of each ibexdb engine to the best SQLite engine of the same durability on this line
 * (p50 / p50; below 1 means ibexdb is faster). Returns { [ibexEngineId]: {ratio, vs} }.
 */
export function ratios(results, line) {
  const byId = Object.fromEntries(results.engines.map((e) => [e.id, e]));
  const out = {};
  for (const [id, cell] of Object.entries(line.cells)) {
    const eng = byId[id];
    if (!eng || eng.family !== 'ibexdb' || !Number.isFinite(cell.p50)) continue;
    let best = null;
    for (const [sid, scell] of Object.entries(line.cells)) {
      const s = byId[sid];
      if (!s || s.family !== 'sqlite' || s.durability !== eng.durability || !Number.isFinite(scell.p50)) continue;
      if (!best || scell.p50 < best.p50) best = { id: sid, p50: scell.p50 };
    }
    if (best) out[id] = { ratio: cell.p50 / best.p50, vs: best.id };
  }
  return out;
}

function sizesOf(results) {
  return [...new Set(results.runs.map((r) => r.size))];
}

function enginesOf(results, size) {
  return results.runs.filter((r) => r.size === size).map((r) => r.engine);
}

/** Plain-text table (p50 per engine, ratio columns for ibexdb engines) for the terminal. */
export function textTable(results) {
  const out = [];
  for (const size of sizesOf(results)) {
    const engines = enginesOf(results, size);
    const ibex = engines.filter((e) => results.engines.find((x) => x.id === e)?.family === 'ibexdb');
    const header = ['operation (p50)', ...engines, ...ibex.map((e) => `${e}/best-sqlite`)];
    const body = [];
    for (const line of tableLines(results, size)) {
      const r = ratios(results, line);
      body.push([
        line.label,
        ...engines.map((e) => {
          const c = line.cells[e];
          if (!c) return '';
          if (c.error) return 'ERROR';
          return fmtMs(c.p50);
        }),
        ...ibex.map((e) => (r[e] ? `${r[e].ratio.toFixed(2)}x` : '')),
      ]);
    }
    const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
    const fmt = (cols) => cols.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
    out.push(`N = ${size.toLocaleString('en-US')}`);
    out.push(fmt(header));
    out.push(widths.map((w) => '-'.repeat(w)).join('  '));
    for (const b of body) out.push(fmt(b));
    out.push('');
  }
  return out.join('\n');
}

/** Horizontal log-scale bar chart (p50 bar, p95 whisker) for one line, as an SVG string. */
export function barChartSvg(results, line) {
  const entries = Object.entries(line.cells).filter(([, c]) => Number.isFinite(c.p50) && c.p50 > 0);
  const width = 600;
  const labelW = 120;
  const valueW = 130;
  const barH = 16;
  const gap = 6;
  const axisH = 18;
  const height = entries.length * (barH + gap) + axisH + 4;
  if (!entries.length) return `<svg width="${width}" height="24" xmlns="http://www.w3.org/2000/svg"><text x="4" y="16" font-size="12" fill="#a00">no data</text></svg>`;

  const lo = Math.min(...entries.map(([, c]) => c.p50));
  const hi = Math.max(...entries.map(([, c]) => Math.max(c.p50, c.p95 ?? c.p50)));
  // Whole decades around the data; at least two decades so small differences are not exaggerated.
  let d0 = Math.floor(Math.log10(lo)) ;
  let d1 = Math.ceil(Math.log10(hi));
  if (d1 - d0 < 2) d1 = d0 + 2;
  const plotW = width - labelW - valueW;
  const x = (v) => labelW + ((Math.log10(v) - d0) / (d1 - d0)) * plotW;

  const parts = [];
  parts.push(`<svg width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" xmlns="http://www.w3.org/2000/svg" font-family="system-ui, sans-serif" font-size="11">`);
  for (let d = d0; d <= d1; d++) {
    const gx = x(10 ** d).toFixed(1);
    parts.push(`<line x1="${gx}" y1="0" x2="${gx}" y2="${height - axisH}" stroke="#e3e3e3"/>`);
    parts.push(`<text x="${gx}" y="${height - 5}" text-anchor="middle" fill="#777">${esc(fmtMs(10 ** d))}</text>`);
  }
  const order = results.engines.map((e) => e.id);
  entries.sort((a, b) => order.indexOf(a[0]) - order.indexOf(b[0]));
  entries.forEach(([id, c], i) => {
    const y = i * (barH + gap) + 2;
    const w = Math.max(1, x(c.p50) - labelW);
    parts.push(`<text x="${labelW - 6}" y="${y + barH - 4}" text-anchor="end" fill="#333">${esc(id)}</text>`);
    parts.push(`<rect x="${labelW}" y="${y}" width="${w.toFixed(1)}" height="${barH}" fill="${engineColor(id, i)}"><title>${esc(`${id}: p50 ${fmtMs(c.p50)}, p95 ${fmtMs(c.p95)}, n=${c.n}`)}</title></rect>`);
    if (Number.isFinite(c.p95) && c.p95 > c.p50) {
      const x1 = x(c.p50);
      const x2 = x(c.p95);
      const my = y + barH / 2;
      parts.push(`<line x1="${x1.toFixed(1)}" y1="${my}" x2="${x2.toFixed(1)}" y2="${my}" stroke="#222" stroke-width="1"/>`);
      parts.push(`<line x1="${x2.toFixed(1)}" y1="${my - 4}" x2="${x2.toFixed(1)}" y2="${my + 4}" stroke="#222" stroke-width="1"/>`);
    }
    parts.push(`<text x="${width - valueW + 6}" y="${y + barH - 4}" fill="#111">${esc(fmtMs(c.p50))} <tspan fill="#888">p95 ${esc(fmtMs(c.p95))}</tspan></text>`);
  });
  parts.push('</svg>');
  return parts.join('');
}

/** The complete, self-contained report page. */
export function renderReport(results) {
  const m = results.meta ?? {};
  const sqliteInfo = results.runs.find((r) => r.info?.engine === 'sqlite-wasm')?.info;
  const h = [];
  h.push(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>ibexdb benchmark ${esc(m.date ?? '')}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
 body{font-family:system-ui,sans-serif;margin:24px;color:#111;max-width:1260px}
 h1{font-size:22px;margin:0 0 4px} h2{font-size:18px;margin:28px 0 8px} h3{font-size:14px;margin:18px 0 2px}
 .meta{color:#555;font-size:13px;line-height:1.5}
 table{border-collapse:collapse;font-size:13px;margin:8px 0}
 th,td{border-bottom:1px solid #e4e4e4;padding:4px 10px;text-align:right;white-space:nowrap}
 th:first-child,td:first-child{text-align:left}
 th{background:#f6f6f6}
 td.err{color:#b00}
 .good{color:#176b1d;font-weight:600} .bad{color:#a3300b;font-weight:600}
 .what{color:#666;font-size:12px;margin:0 0 4px}
 .charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(600px,1fr));gap:4px 24px}
 .legend span{display:inline-block;margin-right:14px;font-size:12px}
 .legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-1px}
 code{background:#f3f3f3;padding:0 3px}
 .errors{color:#b00;font-size:13px}
</style></head><body>`);
  h.push(`<h1>ibexdb vs sqlite-wasm — browser benchmark</h1>`);
  h.push(`<div class="meta">${esc(m.date ?? '')} · ${esc(m.browser ?? m.userAgent ?? '')} · ${esc(m.machine?.os ?? '')} · ${esc(m.machine?.cpus ?? '')} × ${esc(m.machine?.cpuModel ?? '')} · ${m.machine?.memoryBytes ? esc(fmtBytes(m.machine.memoryBytes)) : ''} RAM<br>`
    + `sqlite-wasm ${esc(m.sqliteWasmPackage ?? '')} (SQLite ${esc(sqliteInfo?.version ?? '?')}, VFS opfs-sahpool) · sizes ${esc(sizesOf(results).join(', '))} · plan <code>${esc(results.options?.plan ?? '')}</code> · cross-origin isolated: ${esc(String(m.crossOriginIsolated))} · timer step ${esc(fmtMs(m.timerResolutionMs))}<br>`
    + (m.opfsProbe ? `OPFS call costs measured at the start of this run (p50): ${esc(Object.entries(m.opfsProbe).map(([k, v]) => `${k} ${fmtMs(v.p50)}`).join(' · '))} (DESIGN.md §10 reference: write ~0.5 ms, write + flush ~0.84 ms); write rows scale with these.<br>` : '')
    + `Times are p50 with p95 whiskers, log scale. Percentiles by nearest rank over the recorded samples; micro-operations are timed as loops of K and divided by K. `
    + `<b>[page]</b> rows are timed on the page around one postMessage round trip per operation (what an app sees); other rows are timed inside the engine's worker. `
    + `Ratio = ibexdb p50 / p50 of the best SQLite configuration with the same durability (below 1 = ibexdb faster).</div>`);

  const legend = results.engines.filter((e) => results.runs.some((r) => r.engine === e.id));
  h.push(`<p class="legend">${legend.map((e, i) => `<span><i style="background:${engineColor(e.id, i)}"></i>${esc(e.id)} — ${esc(e.description ?? '')}</span>`).join('<br>')}</p>`);

  const errs = results.runs.flatMap((r) => r.errors.map((e) => `${r.engine} @ ${r.size}: ${e}`)).concat(results.errors ?? []);
  if (errs.length) h.push(`<div class="errors"><b>Errors:</b><ul>${errs.map((e) => `<li>${esc(e)}</li>`).join('')}</ul></div>`);

  for (const size of sizesOf(results)) {
    const engines = enginesOf(results, size);
    const ibex = engines.filter((e) => results.engines.find((x) => x.id === e)?.family === 'ibexdb');
    const lines = tableLines(results, size);
    h.push(`<h2>N = ${size.toLocaleString('en-US')}</h2>`);
    h.push('<table><tr><th>operation (p50 / p95)</th>' + engines.map((e) => `<th>${esc(e)}</th>`).join('') + ibex.map((e) => `<th>${esc(e)} / best SQLite</th>`).join('') + '<th>samples × K</th></tr>');
    for (const line of lines) {
      const r = ratios(results, line);
      const sampleInfo = engines.map((e) => line.cells[e] && !line.cells[e].error ? `${line.cells[e].n}×${line.cells[e].k ?? 1}` : '–').join(' / ');
      h.push(`<tr title="${esc(line.what)}"><td>${esc(line.label)}</td>`
        + engines.map((e) => {
          const c = line.cells[e];
          if (!c) return '<td></td>';
          if (c.error) return `<td class="err" title="${esc(c.error)}">error</td>`;
          return `<td>${esc(fmtMs(c.p50))} <span style="color:#999">/ ${esc(fmtMs(c.p95))}</span></td>`;
        }).join('')
        + ibex.map((e) => {
          if (!r[e]) return '<td></td>';
          const cls = r[e].ratio <= 1 ? 'good' : 'bad';
          return `<td class="${cls}" title="vs ${esc(r[e].vs)}">${r[e].ratio.toFixed(2)}×</td>`;
        }).join('')
        + `<td style="color:#888">${esc(sampleInfo)}</td></tr>`);
    }
    h.push('</table>');

    // Storage / memory after the bulk load.
    const statRuns = results.runs.filter((r) => r.size === size && r.stats?.afterLoad);
    if (statRuns.length) {
      h.push('<table><tr><th>after bulk load</th>' + statRuns.map((r) => `<th>${esc(r.engine)}</th>`).join('') + '</tr>');
      for (const [k, label] of [['opfsBytes', 'OPFS bytes'], ['dbBytes', 'database bytes'], ['wasmMemoryBytes', 'wasm memory'], ['jsHeapUsedBytes', 'JS heap (worker)']]) {
        if (!statRuns.some((r) => r.stats.afterLoad[k] != null)) continue;
        h.push(`<tr><td>${label}</td>${statRuns.map((r) => `<td>${esc(fmtBytes(r.stats.afterLoad[k]))}</td>`).join('')}</tr>`);
      }
      h.push('</table>');
    }

    h.push('<div class="charts">');
    for (const line of lines) {
      h.push(`<div><h3>${esc(line.label)}</h3><p class="what">${esc(line.what)}</p>${barChartSvg(results, line)}</div>`);
    }
    h.push('</div>');
  }

  const configs = results.runs.filter((r) => r.info?.effective);
  if (configs.length) {
    h.push('<h2>Effective engine settings (read back after open)</h2><table><tr><th>engine</th><th>settings</th><th>query plans</th></tr>');
    const seen = new Set();
    for (const r of configs) {
      if (seen.has(r.engine)) continue;
      seen.add(r.engine);
      h.push(`<tr><td>${esc(r.engine)}</td><td style="text-align:left;white-space:normal;max-width:420px">${esc(JSON.stringify(r.info.effective))}</td><td style="text-align:left;white-space:normal;font-size:11px">${esc(Object.entries(r.info.queryPlans ?? {}).map(([k, v]) => `${k}: ${v}`).join(' | '))}</td></tr>`);
    }
    h.push('</table>');
  }
  h.push('</body></html>');
  return h.join('\n');
}
