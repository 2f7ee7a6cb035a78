#!/usr/bin/env node
// Where a cold page's open + first read goes (issue 28): fills a repository of N items, then opens
// www/bench/probe/probe.html K times, each in a new page (new worker, wasm compiled again), and
// prints the median of each mark in ms since the page's navigation start: the page's module
// imports, its wasm fetch and compile, the worker's start, its last module fetched, its script
// run (w.graph), OPFS, Web Locks, the instance, the answers. Load average before and after.
//
//   PROBE_BROWSER=chromium|firefox PROBE_N=100000 PROBE_K=9 PROBE_API=package|source PORT=8713 node scripts/cold-probe.mjs
//   PROBE_DUMP=1: also every resource of the last run (W: the worker's, P: the page's)
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os'; import path from 'node:path'; import { fileURLToPath } from 'node:url';
import { startServer } from './serve.mjs';
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const browserName = process.env.PROBE_BROWSER ?? 'chromium';
const N = Number(process.env.PROBE_N ?? 100000), K = Number(process.env.PROBE_K ?? 9);
const pw = await import('@playwright/test');
const launch = browserName === 'firefox'
  ? { executablePath: path.join(ROOT, 'scripts/firefox-bidi.mjs'), channel: 'moz-firefox', headless: true }
  : { executablePath: '/usr/bin/chromium', headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'] };
const server = await startServer({ port: Number(process.env.PORT ?? 0) });
const base = `http://127.0.0.1:${server.port ?? server.address?.().port}`;
const dir = mkdtempSync(path.join(os.tmpdir(), 'ff28-probe-'));
const ctx = await pw[browserName].launchPersistentContext(dir, launch);
async function run(qs) {
  const p = await ctx.newPage();
  p.on('pageerror', (e) => console.error('pageerror', e.message)); p.on('console', (m) => { if (m.type() === 'error') console.error('console', m.text()); });
  await p.goto(`${base}/www/bench/probe/probe.html?${qs}`);
  await p.waitForFunction(() => window.probeResult !== undefined, null, { timeout: 600000, polling: 50 });
  const r = await p.evaluate(() => window.probeResult); await p.close(); return r;
}
const api = process.env.PROBE_API ?? 'package';
let mod = '';
if (api === 'package') {
  const { buildPackage } = await import('./build-pkg.mjs');
  const built = await buildPackage({ out: path.join(ROOT, 'dist/bench-npm') });
  mod = `&module=${encodeURIComponent(`/${path.relative(ROOT, built.dir).split(path.sep).join('/')}/ibexdb.js`)}`;
}
console.log(`load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
const f = await run(`mode=fill&n=${N}${mod}`); if (f.error) throw new Error(f.error);
const all = [];
for (let k = 0; k < K; k++) {
  const r = await run(`mode=cold&n=${N}${mod}${process.env.PROBE_PLAIN ? '&plain=1' : ''}`);
  if (r.error || !r.ok) { console.error(r); continue; }
  const row = { ...r.marks };
  if (r.report) for (const [key, v] of Object.entries(r.report.m)) row[key] = r.report.origin + v - r.origin;
  const wres = r.report?.res ?? [];
  row['w.modules'] = wres.filter((e) => e.name.endsWith('.js')).length;
  row['w.modules.lastEnd'] = r.report ? Math.max(...wres.filter((e) => e.name.endsWith('.js')).map((e) => e.end)) + r.report.origin - r.origin : NaN;
  const pw = r.res.find((e) => e.name.endsWith('.wasm')); if (pw) { row['page.wasm.fetchStart'] = pw.start; row['page.wasm.fetchEnd'] = pw.end; }
  const ww = wres.find((e) => e.name.endsWith('.wasm')); if (ww) { row['w.wasm.fetchEnd'] = ww.end + r.report.origin - r.origin; }
  const pm = r.res.filter((e) => e.name.endsWith('.js') && !e.name.includes('/bench/'));
  row['page.modules'] = pm.length;
  row['page.modules.lastEnd'] = Math.max(...pm.map((e) => e.end));
  all.push(row);
  if (process.env.PROBE_DUMP && k === K - 1) { for (const e of wres) console.log('W', e.name.padEnd(40), (e.start + r.report.origin - r.origin).toFixed(1), (e.end + r.report.origin - r.origin).toFixed(1)); for (const e of r.res) console.log('P', e.name.padEnd(40), e.start.toFixed(1), e.end.toFixed(1)); }
}
const keys = [...new Set(all.flatMap((r) => Object.keys(r)))];
const med = (a) => { const s = a.filter((x) => x !== undefined && !Number.isNaN(x)).sort((x, y) => x - y); return s.length ? s[Math.floor(s.length / 2)] : NaN; };
const out = keys.map((k) => [k, med(all.map((r) => r[k]))]).sort((a, b) => a[1] - b[1]);
console.log(`${browserName} ${api} N=${N} K=${all.length} (ms since the page's navigation start; medians); load average now ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
for (const [k, v] of out) console.log(`${k.padEnd(28)} ${v.toFixed(1)}`);
console.log('total page.read.end - page.import.start:', med(all.map((r) => r['page.read.end'] - r['page.import.start'])).toFixed(1));
await ctx.close(); rmSync(dir, { recursive: true, force: true }); await server.close?.(); process.exit(0);
