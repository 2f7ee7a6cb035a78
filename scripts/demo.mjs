#!/usr/bin/env node
// `make demo`: build the task board PWA (and with it the npm package), start the sync server and
// a plain static server (no COOP/COEP, as a user would deploy it), and print the URL to open.
// Ctrl-C stops both.
//
//   DEMO_PORT=8090        the static server (the app is at /app/)
//   DEMO_SYNC_PORT=8787   ibexdb-server (its data in dist/demo-sync/, kept between runs)

import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { buildApp } from './build-app.mjs';
import { startServer } from './serve.mjs';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const port = Number(process.env.DEMO_PORT ?? 8090);
const syncPort = Number(process.env.DEMO_SYNC_PORT ?? 8787);
const data = path.join(REPO, 'dist/demo-sync');

const app = await buildApp();
console.log(`--- demo: task board ${app.version} built into ${path.relative(REPO, app.dir)}/`);

mkdirSync(data, { recursive: true });
console.log(`--- demo: sync server (cargo run --release -p ibexdb-server; data in ${path.relative(REPO, data)}/)`);
const server = spawn('cargo', ['run', '--release', '-q', '-p', 'ibexdb-server', '--', '--data', data, '--listen', `127.0.0.1:${syncPort}`], {
  cwd: REPO,
  stdio: ['ignore', 'pipe', 'inherit'],
});
const stop = () => {
  server.kill('SIGTERM');
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
server.on('exit', (code) => {
  console.error(`ibexdb-server exited (${code})`);
  process.exit(1);
});
const listening = await new Promise((resolve) => createInterface({ input: server.stdout }).once('line', resolve));
console.log(`    ${listening}`);

const site = await startServer({ root: app.dir, port, isolation: false, mount: '/app/' });
const url = `${site.url}/app/?board=demo&sync=${encodeURIComponent(`ws://127.0.0.1:${syncPort}`)}`;
console.log(`
Open the task board:

    ${url}

Open it in a second browser profile (or a private window) too and edit the same board: the two
sync through ibexdb-server. Stop the server (Ctrl-C) or go offline in DevTools: the app keeps
working and catches up when the server is back. Ctrl-C stops both servers.
`);
