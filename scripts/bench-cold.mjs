// The runner's side of the benchmark's cold-start rows ([page] create instance, open N + first
// read, open N + first indexed query): the page asks for `window.benchColdPage(url)`, and this
// opens `url` (www/bench/page/cold.html) as a new page of the same browser context (the same OPFS),
// waits for its one cold start and closes it. A new page gets its own renderer process, so no
// module and no compiled wasm is carried over between samples. Used by scripts/bench.mjs and the
// smoke test (tests/browser/bench-smoke.spec.ts).

/**
 * Expose `window.benchColdPage` on `page`.
 * @param {import('@playwright/test').Page} page
 */
export async function exposeColdPage(page) {
  const context = page.context();
  await page.exposeFunction('benchColdPage', async (url) => {
    const p = await context.newPage();
    const errors = [];
    p.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    p.on('pageerror', (e) => errors.push(e.message));
    try {
      await p.goto(url);
      await p.waitForFunction(() => window.coldResult !== undefined, null, { timeout: 300_000, polling: 50 });
      const r = await p.evaluate(() => window.coldResult);
      return errors.length ? { ...r, errors } : r;
    } finally {
      await p.close();
    }
  });
}
