#!/usr/bin/env node
// ibexdb in WebKit: Debian's WebKitGTK (MiniBrowser, driven by WebKitWebDriver over plain W3C
// WebDriver; Playwright's WebKit is a patched build that cannot be downloaded here). Run under a
// display: MiniBrowser has no headless mode.
//
//   xvfb-run -a node scripts/webkit/run.mjs [playwright test args]   (make test runs it)
//     WEBKIT_PORT   the probe's WebDriver port (default 19510; the inspector's is the next one)
//     PORT          the static server's port of the Playwright run (playwright.config.ts)
//
// 1. probe: what this WebKit offers (navigator.storage, OPFS getDirectory(), sync access handles
//    in a worker, Web Locks, BroadcastChannel, WebCrypto P-384, wasm), printed as a table.
// 2. the shared specs: Playwright's `webkit` project (IBEXDB_WEBKIT=1; playwright.config.ts
//    WEBKIT_SPECS), whose browser, contexts and pages are tests/browser/support/webkit.ts's
//    (a MiniBrowser process per context, a window per page): the same test bodies as in Chromium
//    and Firefox, on the IndexedDB backend (WebKitGTK has no sync access handles: WebKit
//    implements them for its Cocoa ports only). A test that cannot run there skips itself with
//    its reason (`WEBKIT_CANNOT` in tests/browser/ibexdb.fixtures.ts).
//
// Why MiniBrowser's automation session keeps no data across browser restarts: WebKitWebDriver
// starts it with --automation, and MiniBrowser then uses an ephemeral website data store (OPFS
// getDirectory() fails there: "UnknownError … transient reason"; IndexedDB lives in memory).
// A page reload or a second window keeps the store (it lives as long as the browser process);
// persistence.spec.ts's reload test checks exactly that. Exit code: 0 passed, 1 failed, 3 cannot
// run here (no driver, no display).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../serve.mjs';
import { MINIBROWSER, client, waitFor } from './webdriver.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const DRIVER_PORT = Number(process.env.WEBKIT_PORT ?? 19510);
const say = (s) => console.log(`webkit: ${s}`);

async function main() {
  if (!MINIBROWSER || !existsSync('/usr/bin/WebKitWebDriver')) {
    say('cannot run: WebKitWebDriver or MiniBrowser missing (make setup installs webkit2gtk-driver)');
    return 3;
  }
  if (!process.env.DISPLAY) {
    say('cannot run: no DISPLAY (run under xvfb-run -a)');
    return 3;
  }
  const server = await startServer({ root: ROOT, port: 0, isolation: false });
  // The browser is started here, its remote inspector on a loopback port, and the driver pointed at
  // it (--target): a session whose browser the driver starts itself never came up here.
  const browser = spawn(MINIBROWSER, ['--automation', '--features=+FileSystem,+AccessHandle,+StorageAPI'], {
    stdio: ['ignore', 'ignore', 'pipe'],
    // Without JavaScriptCore's OMG wasm tier, as the specs' browsers (tests/browser/support/webkit.ts JSC_ENV).
    env: { ...process.env, JSC_useOMGJIT: process.env.JSC_useOMGJIT ?? '0', WEBKIT_INSPECTOR_SERVER: `127.0.0.1:${DRIVER_PORT + 1}` },
  });
  const driver = spawn('/usr/bin/WebKitWebDriver', [`--port=${DRIVER_PORT}`, `--target=127.0.0.1:${DRIVER_PORT + 1}`], { stdio: ['ignore', 'ignore', 'pipe'] });
  let driverLog = '';
  driver.stderr.on('data', (d) => (driverLog += d));
  browser.stderr.on('data', (d) => (driverLog += d));
  let session = null;
  try {
    const wd = client(`http://127.0.0.1:${DRIVER_PORT}`);
    await waitFor(async () => (session = await wd.post('/session', { capabilities: { alwaysMatch: {} } })), 20_000, 'a WebDriver session with MiniBrowser');
    const sid = session.sessionId;
    const s = (p) => `/session/${sid}${p}`;
    const version = session.capabilities?.browserVersion ?? '?';
    const page = `${server.url}/www/examples/playground.html`;
    const load = async () => {
      await wd.post(s('/url'), { url: page });
      await waitFor(() => wd.post(s('/execute/sync'), { script: 'return document.body.dataset.ready === "1"', args: [] }), 20_000, 'the playground page');
    };
    /** Run `body` (an async function's source taking `arg`) in the page; its JSON result. */
    const run = async (body, arg) => {
      const script = `const done = arguments[arguments.length - 1];
        (${body})(arguments[0]).then((r) => done({ ok: r }), (e) => done({ error: String(e && e.name) + ': ' + String(e && e.message) }));`;
      const out = await wd.post(s('/execute/async'), { script, args: [arg] });
      if (out?.error) throw new Error(out.error);
      return out?.ok;
    };
    await load();
    const probe = await run(PROBE.toString());
    say(`WebKitGTK ${version} (MiniBrowser, automation session)`);
    for (const k of Object.keys(probe).sort()) say(`  ${k.padEnd(24)} ${probe[k]}`);
    return 0;
  } catch (e) {
    say(`FAILED: ${e.stack ?? e}`);
    if (driverLog) say(`driver log:\n${driverLog.slice(-4000)}`);
    return 1;
  } finally {
    if (session) await client(`http://127.0.0.1:${DRIVER_PORT}`).del(`/session/${session.sessionId}`).catch(() => {});
    driver.kill('SIGTERM');
    browser.kill('SIGTERM');
    await server.close();
  }
}

// ----- code run in the page (serialized with toString) -------------------------------------------

async function PROBE() {
  const r = {};
  r.storage = typeof navigator.storage === 'object' ? 'navigator.storage' : 'none';
  try {
    await navigator.storage.getDirectory();
    r.opfsDirectory = 'ok';
  } catch (e) {
    r.opfsDirectory = `${e.name}: ${e.message}`;
  }
  const src = `onmessage = async () => { try { const d = await navigator.storage.getDirectory(); const f = await d.getFileHandle('probe', { create: true });
    if (!f.createSyncAccessHandle) { postMessage('no createSyncAccessHandle'); return; } const h = await f.createSyncAccessHandle(); h.close(); postMessage('ok'); }
    catch (e) { postMessage(e.name + ': ' + e.message); } };`;
  const w = new Worker(URL.createObjectURL(new Blob([src], { type: 'text/javascript' })));
  r.syncAccessHandle = await new Promise((res) => {
    w.onmessage = (ev) => res(ev.data);
    w.onerror = (ev) => res(`worker error: ${ev.message}`);
    w.postMessage(0);
    setTimeout(() => res('no answer in 5 s'), 5000);
  });
  w.terminate();
  r.indexedDB = typeof indexedDB === 'object' ? 'yes' : 'no';
  r.webLocks = navigator.locks ? 'yes' : 'no';
  r.broadcastChannel = typeof BroadcastChannel === 'function' ? 'yes' : 'no';
  try {
    const k = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-384' }, false, ['sign', 'verify']);
    const sig = await crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-384' }, k.privateKey, new Uint8Array(8));
    r.webCryptoP384 = sig.byteLength === 96 ? 'yes (r||s, 96 bytes)' : `signature of ${sig.byteLength} bytes`;
  } catch (e) {
    r.webCryptoP384 = `${e.name}: ${e.message}`;
  }
  try {
    const m = new WebAssembly.Memory({ initial: 1, maximum: 65536 });
    m.grow(16384); // 1 GiB
    r.wasmMemory1GiB = 'yes';
  } catch (e) {
    r.wasmMemory1GiB = `${e.name}: ${e.message}`;
  }
  r.persist = navigator.storage?.persist ? String(await Promise.race([navigator.storage.persist(), new Promise((res) => setTimeout(() => res('no answer in 2 s'), 2000))])) : 'none';
  const est = navigator.storage?.estimate ? await navigator.storage.estimate().catch((e) => ({ quota: e.name })) : {};
  r.quota = String(est.quota ?? 'none');
  const t = performance.now();
  let d = 0;
  while (d === 0) d = performance.now() - t;
  r.timerStep = `${(d * 1000).toFixed(0)} µs`;
  return r;
}

/** The shared specs in WebKitGTK: Playwright's `webkit` project; its exit code. */
function specs() {
  const args = ['--no-install', 'playwright', 'test', '--project=webkit', ...process.argv.slice(2)];
  say(`the shared specs: npx ${args.join(' ')} (IBEXDB_WEBKIT=1)`);
  const t0 = Date.now();
  const child = spawn('npx', args, { cwd: ROOT, stdio: 'inherit', env: { ...process.env, IBEXDB_WEBKIT: '1' } });
  return new Promise((resolve) =>
    child.on('exit', (code, signal) => {
      say(`the shared specs ${code === 0 ? 'passed' : 'FAILED'} in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
      resolve(code ?? (signal ? 1 : 0));
    }),
  );
}

const probed = await main();
process.exit(probed !== 0 ? probed : await specs());
