#!/usr/bin/env node
// Debian's Firefox ESR for Playwright (the `firefox` project of playwright.config.ts): Playwright
// launches this file as its `executablePath` with the `moz-firefox` channel, which speaks WebDriver
// BiDi to a stock Firefox (no patched build, nothing downloaded).
//
// Playwright 1.65 sends `emulation.setMediaFeaturesOverride` (prefers-color-scheme) when it makes
// a context or page; Firefox 153's BiDi does not know the command and answers "unknown command",
// and newPage() fails. So this launcher starts the real Firefox, puts a small WebSocket proxy in
// front of its BiDi endpoint and answers that one command itself (success, nothing changed: the
// tests emulate no color scheme); everything else passes through unchanged, both ways.
//
//   FIREFOX_BIN   the Firefox to run (default /usr/lib/firefox-esr/firefox-esr)
//
// Playwright finds the endpoint in the browser's output ("WebDriver BiDi listening on ws://..."):
// the launcher prints the proxy's address in that line instead of Firefox's. Firefox's own output
// is passed through otherwise. The launcher exits with Firefox (Playwright kills the process group).
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';

const require = createRequire(import.meta.url);
// Playwright's own bundled `ws` (the project has no other WebSocket server dependency).
const { ws: WebSocket, wsServer: WebSocketServer } = require('playwright-core/lib/utilsBundle');

const FIREFOX = process.env.FIREFOX_BIN || '/usr/lib/firefox-esr/firefox-esr';
/** BiDi commands Firefox does not know that Playwright sends; answered here with an empty success. */
const ANSWERED = new Set(['emulation.setMediaFeaturesOverride']);

const child = spawn(FIREFOX, process.argv.slice(2), { stdio: ['ignore', 'inherit', 'pipe'] });
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
child.on('error', (e) => {
  process.stderr.write(`firefox-bidi: cannot start ${FIREFOX}: ${e.message}\n`);
  process.exit(1);
});
for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(sig, () => child.kill(sig));

const lines = createInterface({ input: child.stderr });
lines.on('line', (line) => {
  const m = /WebDriver BiDi listening on (ws:\/\/\S+)$/.exec(line);
  if (!m) {
    process.stderr.write(line + '\n');
    return;
  }
  proxy(m[1]).then(
    (port) => process.stderr.write(`WebDriver BiDi listening on ws://127.0.0.1:${port}\n`),
    (e) => {
      process.stderr.write(`firefox-bidi: proxy failed: ${e.message}\n`);
      child.kill('SIGKILL');
    },
  );
});

/**
 * A WebSocket proxy to Firefox's BiDi endpoint `upstream` on a free loopback port.
 * @param {string} upstream
 * @returns {Promise<number>} its port
 */
function proxy(upstream) {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  server.on('connection', (client, req) => {
    const browser = new WebSocket(upstream + (req.url ?? ''), { perMessageDeflate: false });
    /** @type {any[]} client messages before the browser connection opened */
    const early = [];
    browser.on('open', () => {
      for (const m of early) browser.send(m);
      early.length = 0;
    });
    // BiDi is text: Firefox refuses binary frames, so text is passed on as text.
    browser.on('message', (data, isBinary) => client.readyState === WebSocket.OPEN && client.send(isBinary ? data : String(data)));
    browser.on('close', () => client.close());
    browser.on('error', () => client.close());
    client.on('message', (raw, isBinary) => {
      const data = isBinary ? raw : String(raw);
      if (!isBinary) {
        let msg;
        try {
          msg = JSON.parse(String(data));
        } catch {
          msg = null;
        }
        if (msg && ANSWERED.has(msg.method)) {
          client.send(JSON.stringify({ type: 'success', id: msg.id, result: {} }));
          return;
        }
      }
      if (browser.readyState === WebSocket.OPEN) browser.send(data);
      else early.push(data);
    });
    client.on('close', () => browser.close());
    client.on('error', () => browser.close());
  });
  return new Promise((resolve, reject) => {
    server.on('listening', () => resolve(server.address().port));
    server.on('error', reject);
  });
}
