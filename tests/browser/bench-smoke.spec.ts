// Smoke test of the browser benchmark: the real page, real workers, real OPFS, in Debian Chromium,
// at a tiny size (N = 200) with the 'quick' sample plan. Every available engine must produce every
// row with finite numbers, and the page must log no error (worker console output included).
// An engine added later (ibexdb) is picked up automatically once its files are served.
import { test, expect, type ConsoleMessage } from '@playwright/test';

type Summary = { n: number; p50: number; p95: number; min: number; max: number; k: number };
type RowEntry = { worker?: Summary; page?: Summary; error?: string; check?: unknown };
type Run = { engine: string; size: number; errors: string[]; rows: Record<string, RowEntry> };
type Results = {
  options: { rows: string[] };
  rowCatalogue: { id: string; worker?: string; page?: string }[];
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

const SQLITE_ENGINES = ['sqlite-default', 'sqlite-tuned', 'sqlite-tuned-off'];

function finiteSummary(s: Summary | undefined): boolean {
  return !!s && s.n > 0 && [s.p50, s.p95, s.min, s.max].every((x) => Number.isFinite(x) && x >= 0) && s.p50 <= s.p95;
}

test('benchmark page: every available engine produces every row (N=200, quick plan)', async ({ page }) => {
  test.setTimeout(240_000);
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

  await page.goto('/www/bench/');
  await page.waitForFunction(() => window.benchReady === true, null, { timeout: 30_000 });
  expect(await page.evaluate(() => crossOriginIsolated), 'page must be cross-origin isolated (COOP/COEP)').toBe(true);

  const engines = await page.evaluate(async () => (await window.listBenchEngines()).filter((e) => e.available).map((e) => e.id));
  for (const id of SQLITE_ENGINES) expect(engines, transcript()).toContain(id);

  let results: Results;
  try {
    results = await page.evaluate((ids) => window.runBench({ sizes: [200], plan: 'quick', engines: ids }), engines);
  } catch (err) {
    throw new Error(`runBench failed: ${(err as Error).message}\n${transcript()}`);
  }

  // Absent optional engine files are probed with HEAD; those 404s are expected, anything else is not.
  const expected404 = await page.evaluate(() => window.benchExpected404 ?? []);
  const realErrors = errors.filter((e) => !(e.includes('Failed to load resource') && expected404.some((u) => e.includes(`(${u})`))));

  const catalogue = Object.fromEntries(results.rowCatalogue.map((r) => [r.id, r]));
  expect(results.runs.map((r) => r.engine).sort(), transcript()).toEqual([...engines].sort());
  const problems: string[] = [];
  for (const run of results.runs) {
    // Run-level errors (row errors are reported per row below).
    const runErrors = run.errors.filter((e) => !results.options.rows.some((id) => e.startsWith(`${id}: `)));
    if (runErrors.length) problems.push(`${run.engine}: ${runErrors.join('; ')}`);
    for (const rowId of results.options.rows) {
      const entry = run.rows[rowId];
      if (!entry) { problems.push(`${run.engine}: row ${rowId} missing`); continue; }
      if (entry.error) problems.push(`${run.engine}: row ${rowId}: ${entry.error}`);
      if (!finiteSummary(entry.worker)) problems.push(`${run.engine}: row ${rowId}: worker timing missing or not finite: ${JSON.stringify(entry.worker)}`);
      if (catalogue[rowId]?.page && !finiteSummary(entry.page)) problems.push(`${run.engine}: row ${rowId}: page timing missing or not finite: ${JSON.stringify(entry.page)}`);
    }
  }
  expect(problems, `${problems.join('\n')}\n${transcript()}`).toEqual([]);
  expect(realErrors, `console errors:\n${realErrors.join('\n')}\n${transcript()}`).toEqual([]);
});
