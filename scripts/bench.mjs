#!/usr/bin/env node
// Browser benchmark runner (make bench): serves the repo with COOP/COEP, opens www/bench/page/ in
// headless Debian Chromium, runs window.runBench(), prints the table and writes
// bench-results/<YYYY-MM-DD>/{results.json, results.md, report.html, report.png, seeds.html}.
//
// Environment:
//   BENCH_SIZES    comma-separated item counts N for the core and writes rows (default 100000);
//                  also the scaling sizes unless BENCH_SCALING_SIZES is set
//   BENCH_SCALING_SIZES  item counts for the scaling rows (default 10000,100000,1000000)
//   BENCH_SUITES   comma-separated suites: core, writes, scaling (alias load), relational, verify,
//                  dbx, fat, omgdb, fts, files (default: all)
//   BENCH_ENGINES  comma-separated engine ids              (default: every available engine)
//   BENCH_ROWS     comma-separated row ids to restrict to  (default: every row of the suites)
//   BENCH_FAT_SIZES  record counts of the fat suite          (default 204800,409600,819200)
//   BENCH_LARGE_ROWS rows of the relational "large" workload (default 1000; go-sqlite-bench's is
//                  10000: 2 GB at 200 KB, read all then visits and drops the rows)
//   BENCH_PLAN     full | quick                            (default full)
//   BENCH_ASSERT   1 = fail on order-of-magnitude regressions (coarse per-row ceilings below)
//   BENCH_CEILING_FACTOR  multiplies every ceiling (default 1)
//   BENCH_OUT      output directory                        (default bench-results/<local date>)
//   BENCH_BROWSER  chromium | firefox | webkit             (default chromium; firefox: Debian's
//                  firefox-esr through scripts/firefox-bidi.mjs, FIREFOX_BIN to change; no worker
//                  heap figures there, they come from Chromium's CDP; webkit: Debian's WebKitGTK
//                  through scripts/webkit/bench.mjs under xvfb-run, the headline rows only)
//   BENCH_STORAGE  comma-separated ibexdb backends: opfs (the default: open()'s 'auto', OPFS sync
//                  access handles) and/or indexeddb (the IndexedDB fallback: the engines' `-idb`
//                  twins, open(name, {storage: 'indexeddb'})); the SQLite engines run either way.
//                  Ignored for engines named in BENCH_ENGINES (name `ibexdb-idb` etc. there)
//   CHROMIUM       browser executable                      (default /usr/bin/chromium)
//   PORT           port of the static server               (default: any free port)
//
// Exit codes: 0 ok; 1 an engine failed, a result was wrong, or a ceiling was exceeded;
// 2 bad arguments; 3 the browser benchmark cannot run here (no browser, page did not load) -
// `make bench` then falls back to `cargo bench`.

import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { fillSyncLatency, SYNC_ROW } from './sync-latency.mjs';
import { fillInitialSync, SYNC_INITIAL_ROW } from './sync-initial.mjs';
import { exposeColdPage } from './bench-cold.mjs';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from './serve.mjs';
import { markdownTables, noiseFloor, ratioSummary, renderReport, reportSections, textTable } from '../www/bench/page/report.js';
import { ROWS } from '../www/bench/shared/rows.js';
import { renderSeeds, seedsMarkdown } from '../www/bench/page/seeds.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CHROMIUM_ARGS = [
  '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--no-first-run', '--disable-quic',
];

/**
 * BENCH_ASSERT ceilings: p50 in ms at N = 100,000, set at >= 10x the slowest engine measured on
 * these machines (bench-results/, docs/benchmarks.md; run-to-run noise here is up to ~3x because
 * OPFS call costs vary with host load), so only order-of-magnitude regressions fail.
 * Rows that scale with N ('n' in www/bench/shared/rows.js) get ceiling * N/100k above 100k; below 100k the 100k
 * ceiling applies unchanged (fixed costs dominate small N). The relational and verify rows have
 * fixed sizes (the full plan's); under another plan they are not checked. The `ibexdb` overrides
 * cover rows where ibexdb legitimately does more work than SQLite (verify re-proves every hash
 * and signature). Bytes (OPFS, memory) are not checked.
 * BENCH_CEILING_FACTOR (default 1) scales every ceiling, e.g. 0.5 to tighten.
 */
const CEILINGS = {
  default: {
    'create-instance:worker': 4_000, 'create-instance:page': 5_000,
    'open-empty:worker': 200,
    'bulk-load:worker': 60_000,
    'read-by-id:worker': 15, 'read-by-id:page': 20,
    'bulk-read-100:worker': 50,
    'read-all:worker': 10_000,
    'simple-query:worker': 150, 'simple-query:page': 250,
    'complex-query:worker': 200,
    'count:worker': 25,
    'keys:worker': 3_000,
    'aggregate:worker': 300,
    'open-n:worker': 150, 'open-n:page': 5_000,
    'read-by-id-after-open:worker': 50,
    'create-item:worker': 500, 'create-item:page': 500,
    'update-item:worker': 500, 'update-item:page': 500,
    'bulk-create-100:worker': 1_000, 'bulk-create-100:page': 1_000,
    'writes-single:worker': 500,
    'writes-batched:worker': 20, 'writes-batched:page': 500,
    'seal-batch:worker': 500,
    'rel-simple-insert:worker': 60_000, 'rel-simple-query:worker': 10_000,
    'rel-real-insert:worker': 60_000, 'rel-real-query:worker': 20_000,
    'rel-complex-insert:worker': 120_000, 'rel-complex-query:worker': 60_000,
    'rel-many-10:worker': 50, 'rel-many-100:worker': 100, 'rel-many-1000:worker': 500,
    'rel-large-50k-insert:worker': 150_000, 'rel-large-50k-query:worker': 30_000,
    'rel-large-100k-insert:worker': 250_000, 'rel-large-100k-query:worker': 60_000,
    'rel-large-200k-insert:worker': 400_000, 'rel-large-200k-query:worker': 120_000,
    'verify:worker': 120_000,
  },
  ibexdb: {},
};
/** Rows whose sizes come from the plan, not from N: checked under the full plan only. */
const FIXED_SIZE_SECTIONS = new Set(['relational', 'verify']);

const die = (code, msg) => {
  console.error(`bench: ${msg}`);
  process.exit(code);
};

function listEnv(name, fallback) {
  const v = process.env[name];
  if (!v || !v.trim()) return fallback;
  return v.split(',').map((s) => s.trim()).filter(Boolean);
}

function localDate(d = new Date()) {
  const p = (x) => String(x).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}`;
}

function machineInfo() {
  let osName = `${os.type()} ${os.release()}`;
  try {
    const rel = execFileSync('sh', ['-c', '. /etc/os-release && echo "$PRETTY_NAME"'], { encoding: 'utf8' }).trim();
    if (rel) osName = `${rel} (${os.type()} ${os.release()})`;
  } catch { /* not Linux */ }
  const cpus = os.cpus();
  return {
    os: osName,
    arch: os.arch(),
    cpus: cpus.length,
    cpuModel: cpus[0]?.model ?? 'unknown',
    memoryBytes: os.totalmem(),
    node: process.version,
  };
}

function gitCommit() {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
}

/** Tracked files modified in the working tree (the wasm may have been built from them). */
function gitDirty() {
  try {
    const out = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    return out.split('\n').filter(Boolean).map((l) => l.slice(3));
  } catch {
    return null;
  }
}

/** The ibexdb wasm that was benchmarked: size, SHA-256, build time. */
async function wasmInfo() {
  try {
    const file = path.join(ROOT, 'pkg/ibexdb_bg.wasm');
    const bytes = await readFile(file);
    const { createHash } = await import('node:crypto');
    const { mtime } = await import('node:fs').then((fs) => fs.statSync(file));
    return { bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex'), builtAt: mtime.toISOString() };
  } catch {
    return null;
  }
}

/** Check every measured line against the ceilings; returns failure strings. */
function checkCeilings(results) {
  const ceilingFactor = Number(process.env.BENCH_CEILING_FACTOR ?? 1);
  const failures = [];
  for (const sec of reportSections(results)) {
    if (FIXED_SIZE_SECTIONS.has(sec.key) && results.options.plan !== 'full') continue;
    for (const line of sec.lines) {
      if (line.side === 'stat') continue;
      const row = ROWS.find((r) => r.id === line.rowId);
      const size = line.size ?? (sec.key.startsWith('n') ? Number(sec.key.slice(1)) : 100_000);
      const scale = row.scale === 'n' ? Math.max(1, size / 100_000) : 1;
      for (const [engineId, cell] of Object.entries(line.cells)) {
        if (cell.error || cell.na || !Number.isFinite(cell.p50)) continue;
        const family = results.engines.find((e) => e.id === engineId)?.family;
        const key = `${line.rowId}:${line.side}`;
        const base = CEILINGS[family]?.[key] ?? CEILINGS.default[key];
        if (base === undefined) continue;
        const ceiling = base * scale * ceilingFactor;
        if (cell.p50 > ceiling) {
          failures.push(`${engineId} ${sec.title} ${line.label}: p50 ${cell.p50.toFixed(3)} ms > ceiling ${+ceiling.toPrecision(3)} ms`);
        }
      }
    }
  }
  return failures;
}

/**
 * Worker JS heap by worker name, for the page's stats (window.benchWorkerHeap): CDP
 * Runtime.getHeapUsage on the worker's target, through the page's CDP session `cdp`. performance.memory and
 * measureUserAgentSpecificMemory are not exposed in workers, so this is the only way in.
 */
async function workerHeapProbe(cdp) {
  let nextId = 1;
  const waiting = new Map();
  cdp.on('Target.receivedMessageFromTarget', (ev) => {
    const msg = JSON.parse(ev.message);
    const w = waiting.get(msg.id);
    if (w) {
      waiting.delete(msg.id);
      w(msg);
    }
  });
  return async (name) => {
    const { targetInfos } = await cdp.send('Target.getTargets');
    const t = targetInfos.filter((x) => x.type === 'worker' && x.title === name).pop();
    if (!t) return null;
    const { sessionId } = await cdp.send('Target.attachToTarget', { targetId: t.targetId, flatten: false });
    try {
      const id = nextId++;
      const reply = new Promise((resolve) => waiting.set(id, resolve));
      await cdp.send('Target.sendMessageToTarget', { sessionId, message: JSON.stringify({ id, method: 'Runtime.getHeapUsage' }) });
      const msg = await Promise.race([reply, new Promise((r) => setTimeout(() => r({ error: { message: 'timeout' } }), 10_000))]);
      if (msg.error) throw new Error(msg.error.message);
      return { usedSize: msg.result.usedSize, totalSize: msg.result.totalSize };
    } finally {
      await cdp.send('Target.detachFromTarget', { sessionId }).catch(() => {});
    }
  };
}

async function main() {
  const sizes = listEnv('BENCH_SIZES', null)?.map(Number);
  if (sizes?.some((n) => !Number.isInteger(n) || n < 1)) die(2, `BENCH_SIZES must be positive integers, got "${process.env.BENCH_SIZES}"`);
  const scalingSizes = listEnv('BENCH_SCALING_SIZES', null)?.map(Number);
  if (scalingSizes?.some((n) => !Number.isInteger(n) || n < 1)) die(2, `BENCH_SCALING_SIZES must be positive integers, got "${process.env.BENCH_SCALING_SIZES}"`);
  const suites = listEnv('BENCH_SUITES', null);
  const engines = listEnv('BENCH_ENGINES', null);
  const rows = listEnv('BENCH_ROWS', null);
  const fatSizes = listEnv('BENCH_FAT_SIZES', null)?.map(Number);
  if (fatSizes?.some((n) => !Number.isInteger(n) || n < 1)) die(2, `BENCH_FAT_SIZES must be positive integers, got "${process.env.BENCH_FAT_SIZES}"`);
  const storage = listEnv('BENCH_STORAGE', null);
  if (storage?.some((x) => x !== 'opfs' && x !== 'indexeddb')) die(2, `BENCH_STORAGE must list opfs and/or indexeddb, got "${process.env.BENCH_STORAGE}"`);
  const plan = process.env.BENCH_PLAN || 'full';
  const assert = process.env.BENCH_ASSERT === '1';
  const outDir = path.resolve(ROOT, process.env.BENCH_OUT || path.join('bench-results', localDate()));
  const browserName = process.env.BENCH_BROWSER || 'chromium';
  if (browserName === 'webkit') {
    // No Playwright WebKit build here: Debian's WebKitGTK over WebDriver (scripts/webkit/bench.mjs),
    // under Xvfb; the headline rows, ibexdb on IndexedDB (the backend WebKitGTK gets), SQLite's
    // rows recording why sahpool cannot run there.
    const args = [path.join(ROOT, 'scripts/webkit/bench.mjs')];
    try {
      execFileSync(process.env.DISPLAY ? process.execPath : 'xvfb-run', process.env.DISPLAY ? args : ['-a', process.execPath, ...args], { stdio: 'inherit' });
      return 0;
    } catch (err) {
      return typeof err.status === 'number' ? err.status : 3;
    }
  }
  if (browserName !== 'chromium' && browserName !== 'firefox') die(2, `BENCH_BROWSER must be chromium or firefox, got "${browserName}"`);
  const firefoxBin = process.env.FIREFOX_BIN || '/usr/lib/firefox-esr/firefox-esr';
  const executablePath = browserName === 'firefox' ? path.join(ROOT, 'scripts/firefox-bidi.mjs') : process.env.CHROMIUM || '/usr/bin/chromium';

  if (browserName === 'firefox' && !existsSync(firefoxBin)) die(3, `${firefoxBin} not found (install Debian's firefox-esr: make setup)`);
  if (!existsSync(executablePath)) die(3, `${executablePath} not found (install Debian's chromium: make setup)`);
  let chromium;
  try {
    const pw = await import('@playwright/test');
    chromium = pw[browserName];
  } catch (err) {
    die(3, `@playwright/test is not installed (npm ci): ${err.message}`);
  }
  /** The project's launch options for the browser (Firefox: the stock one over WebDriver BiDi). */
  const launchOptions = browserName === 'firefox' ? { executablePath, channel: 'moz-firefox', headless: true } : { executablePath, headless: true, args: CHROMIUM_ARGS };

  // PORT: a fixed port (e.g. when several worktrees run at once); default: any free port.
  const server = await startServer({ port: Number(process.env.PORT ?? 0) });
  let browser;
  /** @type {import('@playwright/test').BrowserContext | undefined} */
  let context;
  let profileDir = '';
  try {
    try {
      browser = await chromium.launch(launchOptions);
    } catch (err) {
      die(3, `cannot launch ${executablePath}: ${err.message.split('\n')[0]}`);
    }
    const browserVersion = browser.version();
    // The benchmark page runs in a persistent profile, as an app's users have: its OPFS is on disk.
    // (A context of browser.newContext() is off the record: Chromium keeps its OPFS in memory,
    // where a "durable" flush reaches no disk and large files fail with FILE_ERROR_NO_SPACE.)
    // One context for the page and the cold-start pages it asks for (they share its OPFS).
    profileDir = mkdtempSync(path.join(os.tmpdir(), 'ibexdb-bench-profile-'));
    context = await chromium.launchPersistentContext(profileDir, { ...launchOptions, viewport: { width: 1280, height: 900 } });
    const page = context.pages()[0] ?? await context.newPage();
    if (browserName === 'chromium') await page.exposeFunction('benchWorkerHeap', await workerHeapProbe(await context.newCDPSession(page)));
    await exposeColdPage(page);

    // Forward progress; keep errors for the summary.
    const pageErrors = [];
    page.on('console', async (msg) => {
      const text = msg.text();
      // 404s of optional engine files (probed for availability) are expected, not errors.
      if (msg.type() === 'error' && /Failed to load resource/.test(text)) {
        const expected = await page.evaluate(() => window.benchExpected404 ?? []).catch(() => []);
        if (expected.includes(msg.location()?.url)) return;
      }
      if (msg.type() === 'error') pageErrors.push(text);
      if (text.startsWith('[bench]') || msg.type() === 'error' || msg.type() === 'warning') {
        console.log(`  ${msg.type() === 'log' ? '' : `${msg.type()}: `}${text.replace(/^\[bench\] /, '')}`);
      }
    });
    page.on('pageerror', (err) => {
      pageErrors.push(err.message);
      console.log(`  pageerror: ${err.message}`);
    });

    const url = `${server.url}/www/bench/page/`;
    try {
      await page.goto(url, { waitUntil: 'load' });
      await page.waitForFunction(() => window.benchReady === true, null, { timeout: 30_000 });
    } catch (err) {
      die(3, `benchmark page did not load at ${url}: ${err.message.split('\n')[0]}`);
    }

    console.log(`bench: ${browserVersion}, sizes ${sizes ? sizes.join(',') : 'default'}, scaling sizes ${scalingSizes ? scalingSizes.join(',') : sizes ? 'as sizes' : 'default'}, suites ${suites ? suites.join(',') : 'all'}, ibexdb storage ${storage ? storage.join(',') : 'opfs'}, engines ${engines ? engines.join(',') : 'all available'}, plan ${plan}`);
    const t0 = Date.now();
    const loadAvgAtStart = os.loadavg();
    let results;
    try {
      const o = { plan };
      if (sizes) o.sizes = sizes;
      if (scalingSizes) o.scalingSizes = scalingSizes;
      if (suites) o.suites = suites;
      if (engines) o.engines = engines;
      if (rows) o.rows = rows;
      if (fatSizes) o.fatSizes = fatSizes;
      if (process.env.BENCH_LARGE_ROWS) o.largeRows = Number(process.env.BENCH_LARGE_ROWS);
      if (storage) o.storage = storage;
      results = await page.evaluate((x) => window.runBench(x), o);
    } catch (err) {
      console.error(`bench: run failed: ${err.message.split('\n')[0]}`);
      return 1;
    }
    if (results.options.rows.includes(SYNC_ROW)) {
      const serverBin = process.env.IBEXDB_SERVER || path.join(ROOT, 'target/release/ibexdb-server');
      const writes = plan === 'full' ? 100 : 5;
      for (const line of await fillSyncLatency(results, { browser, baseUrl: server.url, serverBin, writes })) console.log(`  ${line}`);
    }
    if (results.options.rows.includes(SYNC_INITIAL_ROW)) {
      const serverBin = process.env.IBEXDB_SERVER || path.join(ROOT, 'target/release/ibexdb-server');
      const samples = plan === 'full' ? 3 : 1;
      for (const line of await fillInitialSync(results, { browser, baseUrl: server.url, serverBin, samples })) console.log(`  ${line}`);
    }
    const sqlitePkg = JSON.parse(await readFile(path.join(ROOT, 'node_modules/@sqlite.org/sqlite-wasm/package.json'), 'utf8')).version;
    const machine = machineInfo();
    machine.loadAvgAtStart = loadAvgAtStart;
    machine.loadAvgAtEnd = os.loadavg();
    Object.assign(results.meta, {
      date: localDate(),
      browser: browserName === 'firefox' ? `Firefox ${browserVersion} (${firefoxBin} over WebDriver BiDi, headless)` : `Chromium ${browserVersion} (${executablePath}, headless)`,
      storage: 'a persistent browser profile in a temporary directory: OPFS and IndexedDB on disk (ext4 on a virtual disk)',
      ibexdbStorage: results.options.storage,
      chromiumArgs: browserName === 'chromium' ? CHROMIUM_ARGS : null,
      sqliteWasmPackage: sqlitePkg,
      sqliteVersion: results.runs.find((r) => r.info?.engine === 'sqlite-wasm')?.info.version ?? null,
      sizes: results.options.sizes,
      scalingSizes: results.options.scalingSizes,
      machine,
      gitCommit: gitCommit(),
      gitDirty: gitDirty(),
      ibexdbWasm: await wasmInfo(),
      wallSeconds: (Date.now() - t0) / 1000,
    });

    await mkdir(outDir, { recursive: true });
    // The report's ratios (p50 and mean, against the best SQLite doing the same work) and the
    // run's noise floor, in the JSON too.
    results.ratios = ratioSummary(results);
    results.noiseFloor = noiseFloor(results);
    const html = renderReport(results);
    await writeFile(path.join(outDir, 'results.json'), JSON.stringify(results, null, 1));
    await writeFile(path.join(outDir, 'report.html'), html);
    await writeFile(path.join(outDir, 'results.md'), `${markdownTables(results)}\n${seedsMarkdown(results)}`);
    // The seeds' published figures next to this run's (www/bench/page/seeds.js).
    await writeFile(path.join(outDir, 'seeds.html'), renderSeeds(results));
    // report.png: the summary view (header, ratio overview, tables, scaling charts), readable as one image.
    const shot = await browser.newPage({ viewport: { width: 1360, height: 900 } });
    await shot.setContent(renderReport(results, { summary: true }), { waitUntil: 'load' });
    await shot.screenshot({ path: path.join(outDir, 'report.png'), fullPage: true });

    console.log('');
    console.log(textTable(results));
    console.log(`machine: ${machine.os}, ${machine.cpus} × ${machine.cpuModel}, ${(machine.memoryBytes / 2 ** 30).toFixed(1)} GiB; load avg ${machine.loadAvgAtStart.map((x) => x.toFixed(2)).join(' ')} → ${machine.loadAvgAtEnd.map((x) => x.toFixed(2)).join(' ')}`);
    console.log(`browser: ${results.meta.browser}; sqlite-wasm ${sqlitePkg} (SQLite ${results.meta.sqliteVersion})`);
    console.log(`wrote ${path.relative(ROOT, outDir)}/results.json, results.md, report.html, report.png, seeds.html (${results.meta.wallSeconds.toFixed(0)} s)`);

    if (pageErrors.length) console.log(`page console errors: ${pageErrors.length} (printed above)`);
    let failed = false;
    const engineErrors = results.runs.flatMap((r) => r.errors.map((e) => `${r.engine} N=${r.size}: ${e}`));
    if (engineErrors.length) {
      failed = true;
      console.error(`\nbench: ${engineErrors.length} error(s):\n  ${engineErrors.join('\n  ')}`);
    }
    if (assert) {
      const over = checkCeilings(results);
      if (over.length) {
        failed = true;
        console.error(`\nbench: BENCH_ASSERT: ${over.length} row(s) over their ceiling:\n  ${over.join('\n  ')}`);
      } else {
        console.log('BENCH_ASSERT: every row is under its ceiling');
      }
    }
    return failed ? 1 : 0;
  } finally {
    await context?.close();
    if (profileDir) rmSync(profileDir, { recursive: true, force: true });
    await browser?.close();
    await server.close();
  }
}

main().then((code) => process.exit(code), (err) => {
  console.error(`bench: ${err.stack ?? err}`);
  process.exit(1);
});
