// The benchmark's verify row in every browser project (Chromium, and Firefox: playwright.config.ts
// FIREFOX_SPECS): the ibexdb engine worker asks its page for verify()'s helper thread, as the
// product's worker does, and the page starts it (www/bench/page/engine-worker.js). A helper started
// inside the engine worker sometimes never starts in Firefox, and the row would hang; here it must
// finish, verify the seals with WebCrypto, and the page must have started the helper.
import { test, expect, type ConsoleMessage } from '@playwright/test';

type Summary = { n: number; p50: number };
type Results = {
  meta: { verifyHelpersStartedByPage?: number };
  runs: { engine: string; section: string; errors: string[]; rows: Record<string, { worker?: Summary; check?: Record<string, unknown>; error?: string }> }[];
};

declare global {
  interface Window {
    benchReady?: boolean;
    runBench(options: object): Promise<Results>;
  }
}

test('benchmark verify row: the page starts the helper thread, the seals verify by WebCrypto (OPFS and IndexedDB)', async ({ page }) => {
  test.setTimeout(120_000);
  const logged: string[] = [];
  page.on('console', (msg: ConsoleMessage) => logged.push(`[${msg.type()}] ${msg.text()}`));
  await page.goto('/www/bench/page/');
  await page.waitForFunction(() => window.benchReady === true, null, { timeout: 30_000 });
  const pkgBuilt = await page.evaluate(async () => (await fetch('/pkg/ibexdb_bg.wasm', { method: 'HEAD' })).ok);
  test.skip(!pkgBuilt, 'pkg/ is not built (make wasm)');
  const results = await page.evaluate(() => window.runBench({ suites: ['verify'], plan: 'quick', engines: ['ibexdb', 'ibexdb-idb'] }));
  const transcript = `page log:\n  ${logged.join('\n  ')}`;
  for (const engine of ['ibexdb', 'ibexdb-idb']) {
    const run = results.runs.find((r) => r.engine === engine && r.section === 'verify');
    expect(run?.errors ?? ['no run'], transcript).toEqual([]);
    const row = run?.rows.verify;
    expect(row?.worker?.n ?? 0, transcript).toBeGreaterThan(0);
    expect(row?.check?.signatureEngine, transcript).toBe('webcrypto');
    expect(row?.check?.seals, transcript).toBe(row?.check?.signaturesVerified);
  }
  // One helper per engine worker, each started by the page.
  expect(results.meta.verifyHelpersStartedByPage, transcript).toBe(2);
});
