#!/usr/bin/env node
// `make demo`: build the task board PWA (and with it the npm package), start the sync server and
// a plain static server (no COOP/COEP, as a user would deploy it; brotli/gzip like a production
// server, the wasm from its precompressed sibling), and print the URL to open. Ctrl-C or SIGTERM
// stops both, waits for them and prints "--- demo: stopped".
//
//   DEMO_PORT=8090        the static server (the app is at /app/)
//   DEMO_SYNC_PORT=8787   ibexdb-server (its data in dist/demo-sync/, kept between runs)
//
//   import { startDemo } from './demo.mjs'   # the same, in a test (port 0 = any free port)

import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildApp } from './build-app.mjs';
import { startServer } from './serve.mjs';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Build the app into `appDir` and start ibexdb-server (`cargo run --release`) on `syncPort` and
 * the static server on `port`. Resolves once both listen.
 * @param {{port?: number, syncPort?: number, appDir?: string, packageDir?: string, dataDir?: string, log?: (line: string) => void}} [options]
 */
export async function startDemo({
  port = 8090,
  syncPort = 8787,
  appDir = path.join(REPO, 'dist/app'),
  packageDir = path.join(REPO, 'dist/npm'),
  dataDir = path.join(REPO, 'dist/demo-sync'),
  log = () => {},
} = {}) {
  const app = await buildApp({ out: appDir, packageDir });
  log(`--- demo: task board ${app.version} built into ${path.relative(REPO, app.dir) || app.dir}/`);

  mkdirSync(dataDir, { recursive: true });
  log(`--- demo: sync server (cargo run --release -p ibexdb-server; data in ${path.relative(REPO, dataDir) || dataDir}/)`);
  const server = spawn('cargo', ['run', '--release', '-q', '-p', 'ibexdb-server', '--', '--data', dataDir, '--listen', `127.0.0.1:${syncPort}`], {
    cwd: REPO,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  /** @type {Promise<number | null>} the server's exit code (null: killed by a signal) */
  const exited = new Promise((resolve) => server.once('exit', (code) => resolve(code)));
  const listening = await new Promise((resolve, reject) => {
    createInterface({ input: /** @type {import('node:stream').Readable} */ (server.stdout) }).once('line', resolve);
    exited.then((code) => reject(new Error(`ibexdb-server exited (${code}) before it listened`)));
  });
  log(`    ${listening}`);
  const addr = /listening on (\S+)/.exec(String(listening))?.[1] ?? `127.0.0.1:${syncPort}`;
  const syncUrl = `ws://${addr}`;

  const site = await startServer({ root: app.dir, port, isolation: false, mount: '/app/', compress: true });
  let stopping = false;
  return {
    url: `${site.url}/app/?board=demo&sync=${encodeURIComponent(syncUrl)}`,
    syncUrl,
    /** The server's exit code once it ended, whether stopped or not. */
    exited,
    get stopping() {
      return stopping;
    },
    /** Stop both servers: SIGTERM to ibexdb-server (graceful), then close the static one. Resolves to the server's exit code. */
    async stop() {
      stopping = true;
      if (server.exitCode === null && server.signalCode === null) server.kill('SIGTERM');
      const timer = setTimeout(() => server.kill('SIGKILL'), 10_000);
      const code = await exited;
      clearTimeout(timer);
      await site.close();
      return code;
    },
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const demo = await startDemo({
    port: Number(process.env.DEMO_PORT ?? 8090),
    syncPort: Number(process.env.DEMO_SYNC_PORT ?? 8787),
    log: (line) => console.log(line),
  }).catch((e) => {
    console.error(`demo: ${e.message}`);
    process.exit(1);
  });
  const stop = async () => {
    const code = await demo.stop();
    console.log(`--- demo: stopped (ibexdb-server exited with ${code})`);
    process.exit(code === 0 ? 0 : 1);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  demo.exited.then(async (code) => {
    // Ctrl-C reaches the whole process group: ibexdb-server may end on it before this process's
    // own SIGINT handler runs. Give that handler a moment before calling the exit unexpected.
    await new Promise((r) => setTimeout(r, 300));
    if (demo.stopping) return;
    console.error(`ibexdb-server exited (${code})`);
    await demo.stop();
    process.exit(1);
  });
  console.log(`
Open the task board:

    ${demo.url}

Open it in a second browser profile (or a private window) too and edit the same board: the two
sync through ibexdb-server. Stop the server (Ctrl-C) or go offline in DevTools: the app keeps
working and catches up when the server is back. Ctrl-C stops both servers.
`);
}
