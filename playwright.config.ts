// Playwright configuration for ibexdb's browser tests (tests/browser).
//
// Browsers cannot be downloaded on our machines (`npx playwright install` fails), so every project
// runs Debian's Chromium at /usr/bin/chromium. The static server (scripts/serve.mjs) adds the
// COOP/COEP headers the benchmark's 5 µs timer needs (OPFS does not); the shipping specs
// (package, environments, app) start their own plain static servers on free ports.
//
// The full benchmark is not a Playwright test: `make bench` runs scripts/bench.mjs, which drives the
// same page with the same browser flags. tests/browser/bench-smoke.spec.ts runs it at tiny sizes.
import { defineConfig } from '@playwright/test';

const port = Number(process.env.PORT ?? 8080);

/** Chromium flags shared with scripts/bench.mjs (DESIGN.md section 11). */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];

export default defineConfig({
  testDir: 'tests/browser',
  timeout: 120_000,
  expect: { timeout: 10_000 },
  fullyParallel: false,
  workers: 1,
  retries: 0,
  forbidOnly: !!process.env.CI,
  reporter: 'list',
  outputDir: 'test-results',
  use: {
    baseURL: `http://127.0.0.1:${port}`,
    headless: true,
    trace: 'retain-on-failure',
  },
  projects: [
    {
      name: 'chromium',
      use: {
        browserName: 'chromium',
        viewport: { width: 1280, height: 900 },
        launchOptions: { executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS },
      },
    },
  ],
  webServer: {
    command: 'node scripts/serve.mjs',
    env: { PORT: String(port) },
    url: `http://127.0.0.1:${port}/www/bench/page/`,
    reuseExistingServer: !process.env.CI,
    timeout: 30_000,
    stdout: 'ignore',
    stderr: 'pipe',
  },
});
