#!/usr/bin/env node
// Every shell command that README.md and the package's README (www/lib/README.md) show is run
// here, against this checkout's build, so that a stale command fails `make test` (make
// test-readme). How commands are found: tests/readme/extract.mjs (```sh fences and command-like
// code spans). Each command is either in RUN (run and checked by tests/readme/runners.mjs) or in
// EXCUSED (with the reason it cannot run inside make test); a command in neither fails the test
// before anything runs, and so does an entry of RUN or EXCUSED that no README shows any more.
//
// The package, its install and the app are built first, one after the other (they write dist/);
// then the rest run JOBS at a time (servers with ports of their own, checked and stopped; the
// benchmarks with their quick options); the commands that compile for minutes (cargo bench) come
// last, one at a time.
//
//   node tests/readme/commands.mjs            # all
//   node tests/readme/commands.mjs 'make demo' 'make serve'   # some (phase 1 runs too when needed)

import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { commands } from './extract.mjs';
import { groupAlive, within } from './procs.mjs';
import { RUNNERS, tail } from './runners.mjs';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const READMES = ['README.md', 'www/lib/README.md'];
/** Commands of phase 2 running at once (most wait on servers or a browser; 2 cores). */
const JOBS = 3;

/** README command (as extract.mjs gives it) -> its runner in runners.mjs, in the order they run. */
const RUN = {
  'make pkg': 'pkg',
  'npm install /path/to/ibexdb/dist/ibexdb-0.1.0.tgz': 'install',
  'make app': 'app',
  'make demo': 'demo',
  'make serve': 'serve',
  'cargo run --release -p ibexdb-server -- --data ./sync-data --listen 127.0.0.1:8787': 'syncServer',
  'target/release/ibexdb-server --help': 'serverHelp',
  'make cluster': 'cluster',
  'cargo run --release -p ibexdb-server --bin ibexdb-load': 'load',
  'make bench-cluster': 'benchCluster',
  'make bench': 'bench',
  'cargo bench --bench core': 'benchCore',
  'cargo bench --bench query': 'benchQuery',
};

/** README commands this test does not run, and why. */
const EXCUSED = {
  'make test': 'this test is a step of make test: running it here would run this test again, forever',
  'make test-node': 'a step of make test itself (it runs before this test)',
  'make wasm': 'a step of make test itself (the forced wasm build this test runs against); make pkg, run here, checks the incremental one',
  'npm install ibexdb': 'the package is not published yet; its real equivalent, the tarball make pkg packs installed into a project, runs as npm install /path/to/…tgz',
  'npm ci': "run by make pkg, make app and make demo themselves when node_modules is missing (and by make test's setup): here it would delete the node_modules the other commands run from while they run",
};

/** The README commands, each with where it is shown; errors for misplaced commands. */
function readmeCommands() {
  /** @type {Map<string, string[]>} */
  const found = new Map();
  const errors = [];
  for (const f of READMES) {
    const r = commands(path.join(REPO, f));
    errors.push(...r.errors.map((e) => path.relative(REPO, e.split(':')[0]) + e.slice(e.indexOf(':'))));
    for (const c of r.commands) found.set(c.text, [...(found.get(c.text) ?? []), `${f}:${c.line}`]);
  }
  for (const [text, where] of found) {
    const runner = RUN[/** @type {keyof typeof RUN} */ (text)];
    if (!runner && !(text in EXCUSED)) errors.push(`${where[0]}: \`${text}\` is neither run (RUN) nor excused (EXCUSED) in tests/readme/commands.mjs`);
    if (runner && text in EXCUSED) errors.push(`\`${text}\` is both run and excused`);
    if (runner && !RUNNERS[runner]) errors.push(`\`${text}\`: no runner ${runner} in runners.mjs`);
  }
  for (const text of [...Object.keys(RUN), ...Object.keys(EXCUSED)]) {
    if (!found.has(text)) errors.push(`tests/readme/commands.mjs lists \`${text}\`, which no README shows any more`);
  }
  return { found, errors };
}

/** @param {number} ms */
const secs = (ms) => `${(ms / 1000).toFixed(1)} s`;

async function main() {
  const t0 = Date.now();
  const { found, errors } = readmeCommands();
  if (errors.length) {
    console.error(`readme-commands: the READMEs' commands and this test disagree:\n  ${errors.join('\n  ')}`);
    return 1;
  }
  const only = process.argv.slice(2);
  const all = Object.keys(RUN).filter((t) => found.has(t));
  const wanted = only.length ? all.filter((t) => only.includes(t) || RUNNERS[RUN[t]].phase === 1) : all;
  console.log(`readme-commands: ${found.size} commands in ${READMES.join(' and ')}: ${all.length} run, ${Object.keys(EXCUSED).length} excused`);

  const tmp = mkdtempSync(path.join(tmpdir(), 'ibexdb-readme-'));
  chmodSync(tmp, 0o755); // make cluster's PostgreSQL runs as the user postgres when we are root
  /** @type {import('@playwright/test').Browser | null} */
  let browser = null;
  /** @type {Promise<import('@playwright/test').Browser> | null} */
  let launching = null;
  const failures = [];
  /** @type {Set<ReturnType<typeof import('./procs.mjs').run>>} */
  const procs = new Set();

  /** @param {string} text */
  const runOne = async (text) => {
    const runner = RUNNERS[RUN[text]];
    const started = Date.now();
    /** @type {Set<ReturnType<typeof import('./procs.mjs').run>>} */
    const mine = new Set();
    /** @type {import('./runners.mjs').Context} */
    const ctx = { ...shared, track: (p) => (mine.add(p), procs.add(p), p) };
    try {
      const said = await within(runner.run(ctx, { file: '', line: 0, text, from: 'block' }), runner.timeout, `\`${text}\``);
      console.log(`  ok    ${text}  (${secs(Date.now() - started)})\n        ${said}`);
    } catch (e) {
      failures.push(text);
      const out = [...mine].map((p) => tail(p.output())).join('\n');
      console.log(`  FAIL  ${text}  (${secs(Date.now() - started)})\n        ${/** @type {Error} */ (e).message}${out && !String(/** @type {Error} */ (e).message).includes('|') ? `\n${out}` : ''}`);
    } finally {
      for (const p of mine) if (groupAlive(p.pgid)) p.signal('SIGKILL');
    }
  };
  /** @type {Omit<import('./runners.mjs').Context, 'track'>} */
  const shared = {
    repo: REPO,
    tmp,
    readmes: READMES,
    state: {},
    browser: async () => {
      if (browser) return browser;
      launching ??= import('@playwright/test').then(({ chromium }) =>
        chromium.launch({ executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium', args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'] }),
      );
      browser = await launching;
      return browser;
    },
  };

  try {
    for (const text of wanted.filter((t) => RUNNERS[RUN[t]].phase === 1)) {
      await runOne(text);
      if (failures.length) break; // what follows needs the package
    }
    if (!failures.length) {
      const queue = wanted.filter((t) => RUNNERS[RUN[t]].phase === 2);
      await Promise.all(Array.from({ length: JOBS }, async () => {
        for (let text = queue.shift(); text; text = queue.shift()) await runOne(text);
      }));
      for (const text of wanted.filter((t) => RUNNERS[RUN[t]].phase === 3)) await runOne(text);
    }
  } finally {
    for (const p of procs) if (groupAlive(p.pgid)) p.signal('SIGKILL');
    await (browser ?? (await launching?.catch(() => null)))?.close();
    rmSync(tmp, { recursive: true, force: true });
  }
  for (const [text, why] of Object.entries(EXCUSED)) console.log(`  excused  ${text}: ${why}`);
  const total = secs(Date.now() - t0);
  if (failures.length) {
    console.error(`readme-commands: ${failures.length} failed (${failures.join(', ')}); ${total}`);
    return 1;
  }
  console.log(`readme-commands: ${wanted.length} run and passed, ${Object.keys(EXCUSED).length} excused; ${total}`);
  return 0;
}

process.exitCode = await main();
