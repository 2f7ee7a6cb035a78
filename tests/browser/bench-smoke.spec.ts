// Smoke test of the browser benchmark: the real page, real workers, real OPFS, in Debian Chromium,
// at tiny sizes with the 'quick' sample plan, every suite (core, writes, scaling, relational,
// verify, dbx, fat, omgdb, fts). Every available engine — the SQLite ones and, once pkg/ is built, the ibexdb ones — must
// produce every planned row: a finite timing (worker, and page where the row has a page side), or
// an explicit "not available / not applicable" with its reason. The page must log no error (worker
// console output included).
import path from 'node:path';
import { test, expect, type ConsoleMessage } from '@playwright/test';
// @ts-expect-error: a plain ES module of the benchmark driver, without type declarations
import { fillSyncLatency, SYNC_ROW } from '../../scripts/sync-latency.mjs';
// @ts-expect-error: a plain ES module of the benchmark driver, without type declarations
import { fillInitialSync, SYNC_INITIAL_ROW } from '../../scripts/sync-initial.mjs';
// @ts-expect-error: a plain ES module of the benchmark driver, without type declarations
import { exposeColdPage } from '../../scripts/bench-cold.mjs';

type Summary = { n: number; p50: number; p95: number; min: number; max: number; k: number };
type RowEntry = { worker?: Summary; page?: Summary; error?: string; na?: string; check?: unknown };
type Run = { engine: string; section: string; size: number | null; errors: string[]; plannedRows: string[]; rows: Record<string, RowEntry>; info?: { effective?: { storage?: string } } };
type Results = {
  meta: { verifyHelpersStartedByPage?: number };
  options: { rows: string[]; runs: { section: string; n: number; rows: string[] }[] };
  rowCatalogue: { id: string; worker?: string; page?: string; na?: string }[];
  runs: Run[];
};

declare global {
  interface Window {
    benchReady?: boolean;
    benchExpected404?: string[];
    runBench(options: object): Promise<Results>;
    listBenchEngines(): Promise<{ id: string; available: boolean }[]>;
  }
}

const SQLITE_ENGINES = ['sqlite-default', 'sqlite-tuned', 'sqlite-tuned-off', 'sqlite-best'];
const IBEXDB_ENGINES = ['ibexdb', 'ibexdb-relaxed', 'ibexdb-trusted'];

/** Rows that may be n/a, and for which engines (anything else n/a is a failure). */
const ALLOWED_NA: Record<string, (engine: string) => boolean> = {
  // The page leaves the row to the driver; after fillSyncLatency only SQLite is n/a.
  'sync-latency': (e) => SQLITE_ENGINES.includes(e),
  'sync-initial': (e) => SQLITE_ENGINES.includes(e),
  'seal-batch': (e) => SQLITE_ENGINES.includes(e) || e === 'ibexdb-trusted',
  // The fat-record suite runs the durable engines only (rows.js `engines`).
  ...Object.fromEntries(['fat-load', 'fat-get', 'fat-batch-read', 'fat-open-cycles'].map((id) => [id, (e: string) => !['sqlite-default', 'sqlite-tuned', 'sqlite-best', 'ibexdb'].includes(e)])),
  // The full-text rows run the SQLite presets and the signed ibexdb engines (rows.js `engines`).
  ...Object.fromEntries(['fts-build', 'fts-query', 'fts-update'].map((id) => [id, (e: string) => ['sqlite-tuned-off', 'ibexdb-trusted'].includes(e)])),
  // The file rows run the durable engines only (rows.js `engines`).
  ...Object.fromEntries(['files-write-100', 'files-write-1000', 'files-read-one'].map((id) => [id, (e: string) => !['sqlite-default', 'sqlite-tuned', 'sqlite-best', 'ibexdb'].includes(e)])),
};

function finiteSummary(s: Summary | undefined): boolean {
  return !!s && s.n > 0 && [s.p50, s.p95, s.min, s.max].every((x) => Number.isFinite(x) && x >= 0) && s.p50 <= s.p95;
}

test('benchmark page: every available engine produces every row (tiny sizes, quick plan)', async ({ page, browser, baseURL }) => {
  test.setTimeout(180_000);
  const logged: string[] = [];
  const errors: string[] = [];

  page.on('console', (msg: ConsoleMessage) => {
    const where = msg.location()?.url ? ` (${msg.location().url})` : '';
    const line = `[${msg.type()}]${msg.worker() ? ' [worker]' : ''} ${msg.text()}${where}`;
    logged.push(line);
    if (msg.type() === 'error') errors.push(line);
  });
  page.on('pageerror', (err) => {
    logged.push(`[pageerror] ${err.message}`);
    errors.push(`[pageerror] ${err.message}`);
  });
  page.on('crash', () => errors.push('[crash] the page crashed'));

  // Everything the page logged, for failure messages.
  const transcript = () => `page log:\n  ${logged.join('\n  ') || '(nothing)'}`;

  await exposeColdPage(page);
  await page.goto('/www/bench/page/');
  await page.waitForFunction(() => window.benchReady === true, null, { timeout: 30_000 });
  expect(await page.evaluate(() => crossOriginIsolated), 'page must be cross-origin isolated (COOP/COEP)').toBe(true);

  // The IndexedDB twins (`-idb`) have a test of their own below.
  const engines = await page.evaluate(async () => (await window.listBenchEngines()).filter((e) => e.available && !e.id.endsWith('-idb')).map((e) => e.id));
  for (const id of SQLITE_ENGINES) expect(engines, transcript()).toContain(id);
  // The ibexdb engines are available as soon as pkg/ is built (make wasm); in `make test` it is.
  const pkgBuilt = await page.evaluate(async () => (await fetch('/pkg/ibexdb_bg.wasm', { method: 'HEAD' })).ok);
  if (pkgBuilt) for (const id of IBEXDB_ENGINES) expect(engines, `pkg/ is built, so ${id} must be available\n${transcript()}`).toContain(id);

  let results: Results;
  const t0 = Date.now();
  try {
    // N = 200 for the operation rows; scaling at 200 and 500; relational/verify at the quick plan's sizes.
    results = await page.evaluate((ids) => window.runBench({ sizes: [200], scalingSizes: [200, 500], fatSizes: [300], plan: 'quick', engines: ids }), engines);
  } catch (err) {
    throw new Error(`runBench failed: ${(err as Error).message}\n${transcript()}`);
  }
  // The driver's part: the sync-latency row, through the real ibexdb-server (3 writes per engine).
  const serverBin = process.env.IBEXDB_SERVER ?? path.resolve('target/release/ibexdb-server');
  for (const line of await fillSyncLatency(results, { browser, baseUrl: baseURL, serverBin, writes: 3 })) console.log(`bench smoke: ${line}`);
  for (const line of await fillInitialSync(results, { browser, baseUrl: baseURL, serverBin, samples: 1 })) console.log(`bench smoke: ${line}`);
  console.log(`bench smoke: ${engines.length} engines, ${results.runs.length} runs in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

  // Absent optional engine files are probed with HEAD; those 404s are expected, anything else is not.
  const expected404 = await page.evaluate(() => window.benchExpected404 ?? []);
  const realErrors = errors.filter((e) => !(e.includes('Failed to load resource') && expected404.some((u) => e.includes(`(${u})`))));

  const catalogue = Object.fromEntries(results.rowCatalogue.map((r) => [r.id, r]));
  const problems: string[] = [];
  // Every planned run (section/size) exists for every engine.
  for (const plan of results.options.runs) {
    for (const engine of engines) {
      const run = results.runs.find((r) => r.engine === engine && r.section === plan.section && (plan.section !== 'dataset' || r.size === plan.n));
      if (!run) problems.push(`${engine}: no ${plan.section} run${plan.section === 'dataset' ? ` at N=${plan.n}` : ''}`);
    }
  }
  // Every suite ran: the operation rows, writes, scaling, relational and verify.
  for (const id of ['read-by-id', 'bulk-load-txn', 'open-n-query', 'writes-batched', 'seal-batch', 'sync-latency', 'sync-initial', 'rel-complex-query', 'rel-complex-query-tuned', 'rel-large-200k-query', 'verify', 'dbx-filter-quarter', 'fat-open-cycles', 'omgdb-single', 'fts-query', 'files-read-one']) {
    if (!results.options.rows.includes(id)) problems.push(`row ${id} was not planned`);
  }
  for (const run of results.runs) {
    const where = `${run.engine} ${run.section}${run.size ? ` N=${run.size}` : ''}`;
    // Run-level errors (row errors are reported per row below).
    const runErrors = run.errors.filter((e) => !run.plannedRows.some((id) => e.startsWith(`${id}: `)));
    if (runErrors.length) problems.push(`${where}: ${runErrors.join('; ')}`);
    for (const rowId of run.plannedRows) {
      const entry = run.rows[rowId];
      if (!entry) { problems.push(`${where}: row ${rowId} missing`); continue; }
      if (entry.error) problems.push(`${where}: row ${rowId}: ${entry.error}`);
      if (entry.na !== undefined) {
        if (!entry.na || !ALLOWED_NA[rowId]?.(run.engine)) problems.push(`${where}: row ${rowId} unexpectedly n/a: ${JSON.stringify(entry.na)}`);
        continue;
      }
      const byDriver = rowId === SYNC_ROW || rowId === SYNC_INITIAL_ROW;
      if (catalogue[rowId]?.na && !byDriver) problems.push(`${where}: row ${rowId} must be n/a (${catalogue[rowId].na}) but has data`);
      if (byDriver) {
        if (!finiteSummary(entry.page)) problems.push(`${where}: row ${rowId}: page timing missing or not finite: ${JSON.stringify(entry.page)}`);
        continue;
      }
      if (!finiteSummary(entry.worker)) problems.push(`${where}: row ${rowId}: worker timing missing or not finite: ${JSON.stringify(entry.worker)}`);
      if (catalogue[rowId]?.page && !finiteSummary(entry.page)) problems.push(`${where}: row ${rowId}: page timing missing or not finite: ${JSON.stringify(entry.page)}`);
    }
  }
  // The problems last, after the transcript: CI shows the tail of a failure message.
  expect(problems, `${transcript()}\n${problems.length} problem(s):\n${problems.join('\n')}`).toEqual([]);
  expect(realErrors, `${transcript()}\nconsole errors:\n${realErrors.join('\n')}`).toEqual([]);
  // verify()'s helper threads were started by the page (never inside the engine worker).
  if (pkgBuilt) expect(results.meta.verifyHelpersStartedByPage ?? 0, 'the page starts the verify helper of the signed ibexdb engines').toBeGreaterThan(0);
});

test('benchmark page: ibexdb on the IndexedDB backend (storage: indexeddb) produces every core, writes and verify row, next to SQLite', async ({ page }) => {
  test.setTimeout(120_000);
  const errors: string[] = [];
  const logged: string[] = [];
  page.on('console', (msg: ConsoleMessage) => {
    const line = `[${msg.type()}]${msg.worker() ? ' [worker]' : ''} ${msg.text()}`;
    logged.push(line);
    if (msg.type() === 'error' && !msg.text().includes('Failed to load resource')) errors.push(line);
  });
  page.on('pageerror', (err) => errors.push(`[pageerror] ${err.message}`));
  await exposeColdPage(page);
  await page.goto('/www/bench/page/');
  await page.waitForFunction(() => window.benchReady === true, null, { timeout: 30_000 });
  const pkgBuilt = await page.evaluate(async () => (await fetch('/pkg/ibexdb_bg.wasm', { method: 'HEAD' })).ok);
  test.skip(!pkgBuilt, 'pkg/ is not built (make wasm)');
  const transcript = () => `page log:\n  ${logged.join('\n  ') || '(nothing)'}`;

  // BENCH_STORAGE=indexeddb: the ibexdb engines are their -idb twins; SQLite runs as always.
  const results = await page.evaluate(() => window.runBench({ sizes: [200], suites: ['core', 'writes', 'verify'], plan: 'quick', storage: ['indexeddb'], rows: ['bulk-load', 'read-by-id', 'simple-query', 'open-n', 'create-item', 'update-item', 'bulk-create-100', 'writes-batched', 'verify'] }));
  const engines = [...new Set(results.runs.map((r) => r.engine))].sort();
  expect(engines, transcript()).toEqual(['ibexdb-idb', 'ibexdb-relaxed-idb', 'ibexdb-trusted-idb', 'sqlite-best', 'sqlite-default', 'sqlite-tuned', 'sqlite-tuned-off']);
  const problems: string[] = [];
  for (const run of results.runs) {
    const where = `${run.engine} ${run.section}`;
    if (run.errors.length) problems.push(`${where}: ${run.errors.join('; ')}`);
    if (run.engine.endsWith('-idb') && run.info?.effective?.storage !== 'indexeddb') problems.push(`${where}: opened on ${run.info?.effective?.storage}, not indexeddb`);
    for (const rowId of run.plannedRows) {
      const e = run.rows[rowId];
      if (!e || e.error || e.na) problems.push(`${where}: row ${rowId}: ${JSON.stringify(e)}`);
      else if (!finiteSummary(e.worker)) problems.push(`${where}: row ${rowId}: worker timing ${JSON.stringify(e.worker)}`);
    }
  }
  expect(problems, `${problems.join('\n')}\n${transcript()}`).toEqual([]);
  // The signed -idb engines verified with WebCrypto on a helper thread the page started.
  expect(results.meta.verifyHelpersStartedByPage ?? 0).toBeGreaterThan(0);
  const verified = results.runs.find((r) => r.engine === 'ibexdb-idb' && r.section === 'verify')?.rows.verify?.check as { signatureEngine?: string } | undefined;
  expect(verified?.signatureEngine, transcript()).toBe('webcrypto');
  expect(errors, transcript()).toEqual([]);
});
