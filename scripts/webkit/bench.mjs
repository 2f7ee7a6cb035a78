#!/usr/bin/env node
// The benchmark page (www/bench/page/) in WebKit: Debian's WebKitGTK (MiniBrowser under a display,
// driven by WebKitWebDriver over plain W3C WebDriver, as scripts/webkit/run.mjs does). What runs:
// a subset of the headline rows, ibexdb on its IndexedDB backend (the `-idb` engines: WebKitGTK
// has no sync access handles, so this is the backend its users get with storage 'auto'), and the
// SQLite engines, which cannot run here (sqlite-wasm's opfs-sahpool VFS needs sync access
// handles: their rows record the error, so the report says so instead of leaving them out).
//
//   xvfb-run -a node scripts/webkit/bench.mjs        (make bench with BENCH_BROWSER=webkit runs this)
//
// Environment: BENCH_SIZES (default 10000), BENCH_ROWS (default the headline rows below),
// BENCH_ENGINES (default ibexdb-idb,sqlite-tuned), BENCH_PLAN (default full), BENCH_OUT
// (default bench-results/<date>-webkit), BENCH_TIMEOUT_S (default 1800), WEBKIT_PORT (WebDriver port, default 19520; the
// inspector takes the next one).
//
// Not here, and why: the cold-start [page] rows run in an iframe per sample (the runner's fresh
// page per sample needs Playwright); sync latency needs two browser contexts and the driver's
// Playwright (n/a); no worker heap figures (they come from Chromium's CDP). MiniBrowser's
// automation session keeps its data in an ephemeral store (IndexedDB in memory, run.mjs says
// why): durable writes here complete without reaching a disk, so the write rows are a lower bound.
//
// Exit code: 0 ran (engine errors are in the results), 1 failed, 3 cannot run here.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../serve.mjs';
import { MINIBROWSER, client, waitFor } from './webdriver.mjs';
import { markdownTables, textTable } from '../../www/bench/page/report.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const DRIVER_PORT = Number(process.env.WEBKIT_PORT ?? 19520);
const HEADLINE = ['bulk-load', 'read-by-id', 'simple-query', 'complex-query', 'open-n', 'create-item', 'update-item'];
const say = (s) => console.log(`webkit bench: ${s}`);
const list = (name, fallback) => (process.env[name]?.trim() ? process.env[name].split(',').map((x) => x.trim()).filter(Boolean) : fallback);

async function main() {
  if (!MINIBROWSER || !existsSync('/usr/bin/WebKitWebDriver')) {
    say('cannot run: WebKitWebDriver or MiniBrowser missing (make setup installs webkit2gtk-driver)');
    return 3;
  }
  if (!process.env.DISPLAY) {
    say('cannot run: no DISPLAY (run under xvfb-run -a)');
    return 3;
  }
  const sizes = list('BENCH_SIZES', ['10000']).map(Number);
  const options = {
    sizes,
    scalingSizes: sizes,
    suites: ['core', 'writes', 'scaling'],
    rows: list('BENCH_ROWS', HEADLINE),
    engines: list('BENCH_ENGINES', ['sqlite-tuned', 'ibexdb-idb']),
    plan: process.env.BENCH_PLAN || 'full',
  };
  const d = new Date();
  const outDir = path.resolve(ROOT, process.env.BENCH_OUT || path.join('bench-results', `${d.toISOString().slice(0, 10)}-webkit`));
  // COOP/COEP: the page refuses to run without cross-origin isolation (its 5 µs timer).
  const server = await startServer({ port: 0 });
  const browser = spawn(MINIBROWSER, ['--automation', '--features=+FileSystem,+AccessHandle,+StorageAPI'], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, WEBKIT_INSPECTOR_SERVER: `127.0.0.1:${DRIVER_PORT + 1}` },
  });
  const driver = spawn('/usr/bin/WebKitWebDriver', [`--port=${DRIVER_PORT}`, `--target=127.0.0.1:${DRIVER_PORT + 1}`], { stdio: ['ignore', 'ignore', 'pipe'] });
  let driverLog = '';
  driver.stderr.on('data', (x) => (driverLog += x));
  browser.stderr.on('data', (x) => (driverLog += x));
  const wd = client(`http://127.0.0.1:${DRIVER_PORT}`);
  let session = null;
  try {
    await waitFor(async () => (session = await wd.post('/session', { capabilities: { alwaysMatch: {} } })), 20_000, 'a WebDriver session with MiniBrowser');
    const s = (p) => `/session/${session.sessionId}${p}`;
    await wd.post(s('/timeouts'), { script: 60 * 60 * 1000, pageLoad: 60_000 });
    await wd.post(s('/url'), { url: `${server.url}/www/bench/page/` });
    await waitFor(() => wd.post(s('/execute/sync'), { script: 'return window.benchReady === true', args: [] }), 30_000, 'the benchmark page');
    const isolated = await wd.post(s('/execute/sync'), { script: 'return crossOriginIsolated', args: [] });
    const version = session.capabilities?.browserVersion ?? '?';
    say(`WebKitGTK ${version} (MiniBrowser, automation session), cross-origin isolated: ${isolated}; ${JSON.stringify(options)}`);
    const loadAvgAtStart = os.loadavg();
    const t0 = Date.now();
    // Started, then polled (a blocking async script would show nothing until the end): the page's
    // log lines are printed as they come.
    await wd.post(s('/execute/sync'), {
      script: `window.webkitBench = null;
        window.runBench(arguments[0]).then((r) => { window.webkitBench = { ok: r }; }, (e) => { window.webkitBench = { error: String(e && e.name) + ': ' + String(e && e.message) }; });
        return true;`,
      args: [options],
    });
    const deadline = Date.now() + Number(process.env.BENCH_TIMEOUT_S ?? 1800) * 1000;
    let printed = 0;
    let out = null;
    while (!out) {
      await new Promise((r) => setTimeout(r, 2000));
      const st = await wd.post(s('/execute/sync'), { script: 'return { log: document.getElementById("log")?.textContent ?? "", done: window.webkitBench !== null }', args: [] });
      const lines = st.log.split('\n').filter(Boolean);
      for (const l of lines.slice(printed)) console.log(`  ${l}`);
      printed = lines.length;
      if (st.done) out = await wd.post(s('/execute/sync'), { script: 'return window.webkitBench', args: [] });
      else if (Date.now() > deadline) throw new Error(`no result within BENCH_TIMEOUT_S (${process.env.BENCH_TIMEOUT_S ?? 1800} s); last log line: ${lines.at(-1) ?? '(none)'}`);
    }
    if (out.error) throw new Error(`runBench: ${out.error}`);
    const results = out.ok;
    const cpus = os.cpus();
    Object.assign(results.meta, {
      date: d.toISOString().slice(0, 10),
      browser: `WebKitGTK ${version} (MiniBrowser --automation under Xvfb, WebKitWebDriver; ephemeral website data store)`,
      storage: 'ibexdb: IndexedDB of an ephemeral (in-memory) website data store; SQLite: opfs-sahpool cannot run (no sync access handles)',
      sizes: results.options.sizes,
      scalingSizes: results.options.scalingSizes,
      machine: { os: `${os.type()} ${os.release()}`, arch: os.arch(), cpus: cpus.length, cpuModel: cpus[0]?.model ?? 'unknown', memoryBytes: os.totalmem(), loadAvgAtStart, loadAvgAtEnd: os.loadavg(), node: process.version },
      wallSeconds: (Date.now() - t0) / 1000,
    });
    await mkdir(outDir, { recursive: true });
    await writeFile(path.join(outDir, 'results.json'), JSON.stringify(results, null, 1));
    await writeFile(path.join(outDir, 'results.md'), markdownTables(results));
    console.log('');
    console.log(textTable(results));
    for (const r of results.runs) for (const e of r.errors) say(`${r.engine}: ${e}`);
    say(`load avg ${loadAvgAtStart.map((x) => x.toFixed(2)).join(' ')} → ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}; wrote ${path.relative(ROOT, outDir)}/results.json, results.md (${results.meta.wallSeconds.toFixed(0)} s)`);
    return 0;
  } catch (e) {
    say(`FAILED: ${e.stack ?? e}`);
    if (driverLog) say(`driver log:\n${driverLog.slice(-4000)}`);
    return 1;
  } finally {
    if (session) await wd.del(`/session/${session.sessionId}`).catch(() => {});
    driver.kill('SIGTERM');
    browser.kill('SIGTERM');
    await server.close();
  }
}

process.exit(await main());
