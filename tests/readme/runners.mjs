// How tests/readme/commands.mjs runs each README command and what it checks. Every runner gets
// the command as the README shows it, runs it (or, for a line with placeholders, its real
// equivalent; with the command's own quick options where it has them, on ports of its own) and
// returns a line saying what it saw, or throws.
//
// Long-running commands are started, checked to be really serving (the URL they print answers,
// the sync server answers GET /healthz, the app loads in Chromium), then stopped the way their
// user stops them (Ctrl-C, i.e. SIGINT to the process group; SIGTERM for the sync server, as a
// deploy does), and checked to have ended cleanly: no process of theirs left, their ports closed.

import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { startServer } from '../../scripts/serve.mjs';
import { fenced, parse, spans } from './extract.mjs';
import { freePort, get, groupAlive, listening, run, sleep, within } from './procs.mjs';

/**
 * @typedef {import('./extract.mjs').Command} Command
 * @typedef {{
 *   repo: string, tmp: string, readmes: string[],
 *   browser: () => Promise<import('@playwright/test').Browser>,
 *   track: (p: ReturnType<typeof run>) => ReturnType<typeof run>,
 *   state: {tarball?: string},
 * }} Context  (state: what one runner leaves for the next, e.g. the tarball make pkg made)
 * @typedef {{phase: 1 | 2 | 3, timeout: number, run: (ctx: Context, cmd: Command) => Promise<string>}} Runner
 *   phase 1: builds what the rest use (dist/), one at a time; 2: the rest, several at once;
 *   3: commands that compile for minutes (cargo bench), one at a time after the others, whose
 *   cargo commands would otherwise wait on the build directory's lock
 */

/** Run `line` to its end in the repository; throws with the output's tail unless it exits 0. @param {Context} ctx @param {string} line @param {Record<string, string>} [env] */
async function runToEnd(ctx, line, env = {}) {
  const p = ctx.track(run(line, { cwd: ctx.repo, env }));
  const { code, signal } = await p.exit;
  if (code !== 0) throw new Error(`\`${line}\` failed (${signal ?? `exit ${code}`}):\n${tail(p.output())}`);
  return p.output();
}

/** The last lines of some output, indented. @param {string} text */
export const tail = (text, n = 25) => text.trimEnd().split('\n').slice(-n).map((l) => `      | ${l}`).join('\n');

/**
 * Stop a server command as its user does and check it ended cleanly: within 20 s, no process of
 * its group left, `ports` closed, `marker` printed. Ctrl-C ends make by SIGINT (make re-raises
 * it after its recipe ended), which is clean; any other failure is not.
 * @param {ReturnType<typeof run>} p @param {{signal?: NodeJS.Signals, ports: number[], marker?: RegExp, exitCode?: number}} how
 */
async function stopCleanly(p, { signal = 'SIGINT', ports, marker, exitCode }) {
  p.signal(signal);
  const end = await within(p.exit, 20_000, `ending after ${signal}`);
  if (exitCode !== undefined ? end.code !== exitCode : !(end.code === 0 || end.code === 130 || end.signal === 'SIGINT')) {
    throw new Error(`after ${signal} it ended with ${end.signal ?? `exit ${end.code}`}:\n${tail(p.output())}`);
  }
  for (let i = 0; groupAlive(p.pgid); i++) {
    if (i === 50) throw new Error(`processes of its group are still running 5 s after it ended (${signal})`);
    await sleep(100);
  }
  for (const port of ports) if (await listening(port)) throw new Error(`port ${port} still accepts connections after ${signal}`);
  if (marker && !marker.test(p.output())) throw new Error(`no ${marker} after ${signal}:\n${tail(p.output())}`);
  if (/panicked|Traceback|Unhandled/i.test(p.output())) throw new Error(`its output shows a failure:\n${tail(p.output())}`);
  return `${signal} stopped it cleanly`;
}

/**
 * Poll `url` until it answers 200 (a node on PostgreSQL answers 503 until its store is
 * reachable); throws with the last answer after `ms`.
 * @param {string} url @param {number} [ms]
 */
async function healthy(url, ms = 15_000) {
  const until = Date.now() + ms;
  for (;;) {
    const r = await get(url).catch((e) => ({ status: 0, body: Buffer.from(e.message) }));
    if (r.status === 200) return;
    if (Date.now() > until) throw new Error(`GET ${url}: ${r.status || r.body} for ${ms / 1000} s`);
    await sleep(200);
  }
}

/** Substitute `from` with `to` in a README line, failing if the line has no `from`. @param {string} line @param {[string, string][]} pairs */
function substitute(line, pairs) {
  for (const [from, to] of pairs) {
    if (!line.includes(from)) throw new Error(`the README line no longer contains ${from}: update its runner in tests/readme/runners.mjs`);
    line = line.replace(from, to);
  }
  return line;
}

/** Whether a make's output shows a wasm-pack build. */
const wasmBuilt = (/** @type {string} */ output) => /^--- wasm: wasm-pack/m.test(output);

/**
 * Load `url` in a fresh browser context and wait until `ready(page)` resolves (60 s at most).
 * Fails on page errors. Returns the responses' headers by URL and what `WATCH_TODO` recorded.
 * @param {Context} ctx @param {string} url
 * @param {(page: import('@playwright/test').Page) => Promise<unknown>} ready
 * @param {{init?: string}} [opts]
 */
async function inChromium(ctx, url, ready, { init } = {}) {
  const context = await (await ctx.browser()).newContext();
  try {
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    /** @type {Map<string, Record<string, string>>} */
    const responses = new Map();
    context.on('response', (r) => responses.set(r.url(), r.headers()));
    if (init) await page.addInitScript(init);
    await page.goto(url);
    await ready(page).catch((e) => {
      throw new Error(`${url}: not ready: ${errors.join('; ') || e.message}`);
    });
    if (errors.length) throw new Error(`${url}: page errors: ${errors.join('; ')}`);
    const state = await page.evaluate(() => /** @type {any} */ (window).__todo ?? null);
    return { responses, state };
  } finally {
    await context.close();
  }
}

/**
 * Resolves once WATCH_TODO's record satisfies `done` (a function run in the page).
 * @param {() => boolean} done
 */
const todo = (done) => (/** @type {import('@playwright/test').Page} */ page) => page.waitForFunction(done, undefined, { timeout: 60_000 });

/** Records every text of #todo, in order, into window.__todo (the README examples render into it). */
const WATCH_TODO = `window.__todo = [];
new MutationObserver(() => {
  const t = document.querySelector('#todo');
  if (t && window.__todo.at(-1) !== t.textContent) window.__todo.push(t.textContent);
}).observe(document, { subtree: true, childList: true, characterData: true });`;

/** The wasm's response among `responses`: its headers. @param {Map<string, Record<string, string>>} responses */
function wasmResponse(responses) {
  const hit = [...responses].find(([u]) => u.endsWith('/ibexdb_bg.wasm'));
  if (!hit) throw new Error('the page never fetched ibexdb_bg.wasm');
  return hit[1];
}

/** @type {Record<string, Runner>} */
export const RUNNERS = {
  pkg: {
    phase: 1,
    timeout: 600_000,
    async run(ctx, cmd) {
      const out = await runToEnd(ctx, cmd.text);
      const sizes = /^sizes: tarball .+$/m.exec(out);
      const packed = /^npm pack: (dist\/ibexdb-[^\s]+\.tgz)/m.exec(out);
      if (!sizes || !packed) throw new Error(`make pkg printed no sizes line or no tarball:\n${tail(out)}`);
      ctx.state.tarball = path.join(ctx.repo, packed[1]);
      // The tarball carries the precompressed wasm, and both decode to the wasm.
      const dir = path.join(ctx.tmp, 'unpacked');
      mkdirSync(dir, { recursive: true });
      execFileSync('tar', ['-xzf', ctx.state.tarball, '-C', dir]);
      const wasm = readFileSync(path.join(dir, 'package/wasm/ibexdb_bg.wasm'));
      if (!brotliDecompressSync(readFileSync(path.join(dir, 'package/wasm/ibexdb_bg.wasm.br'))).equals(wasm)) throw new Error('wasm/ibexdb_bg.wasm.br is not the wasm');
      if (!gunzipSync(readFileSync(path.join(dir, 'package/wasm/ibexdb_bg.wasm.gz'))).equals(wasm)) throw new Error('wasm/ibexdb_bg.wasm.gz is not the wasm');
      // Sizes go stale in a README; make pkg prints them.
      for (const f of ctx.readmes) {
        const quoted = /\b\d+(?:[.,]\d+)?\s?(?:KiB|MiB|kB|KB|MB)\b/.exec(readFileSync(path.join(ctx.repo, f), 'utf8'));
        if (quoted) throw new Error(`${f} quotes a size (${quoted[0]}): say that make pkg prints it instead`);
      }
      return `${sizes[0]}${wasmBuilt(out) ? ' (built the wasm)' : ''}; its .br and .gz decode to the wasm`;
    },
  },

  install: {
    phase: 1,
    timeout: 240_000,
    async run(ctx, cmd) {
      if (!ctx.state.tarball) throw new Error('no tarball: make pkg did not run first');
      const named = /\/(ibexdb-[^/\s]+\.tgz)$/.exec(cmd.text)?.[1];
      if (named !== path.basename(ctx.state.tarball)) throw new Error(`the README installs ${named}, make pkg made ${path.basename(ctx.state.tarball)}`);
      const dir = path.join(ctx.tmp, 'project');
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'readme-project', private: true, type: 'module' }));
      // The placeholder path is the tarball make pkg made; a local tarball needs no registry.
      const line = substitute(cmd.text, [[`/path/to/ibexdb/dist/${named}`, ctx.state.tarball]]) + ' --offline --no-audit --no-fund';
      const p = ctx.track(run(line, { cwd: dir }));
      const { code } = await p.exit;
      if (code !== 0) throw new Error(`${line} failed:\n${tail(p.output())}`);
      const version = JSON.parse(readFileSync(path.join(dir, 'node_modules/ibexdb/package.json'), 'utf8')).version;

      // The READMEs' examples in that project: README.md's page as it is; the package README's
      // module code under its import map.
      const [html] = fenced(path.join(ctx.repo, 'README.md'), 'html');
      writeFileSync(path.join(dir, 'index.html'), `<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,">\n${html.text}\n`);
      const pkgReadme = path.join(ctx.repo, 'www/lib/README.md');
      const [js] = fenced(pkgReadme, 'js');
      const map = parse(pkgReadme).paragraphs.flatMap((p) => spans(p.text)).find((s) => s.startsWith('{"imports"'));
      if (!js || !map) throw new Error('www/lib/README.md has no js block or no import map span');
      writeFileSync(path.join(dir, 'package.html'), `<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,">\n<script type="importmap">${map}</script>\n<ul id="todo"></ul>\n<script type="module">\n${js.text}\n</script>\n`);
      // README.md's Node example, as a script of that project (ibexdb/node, files in ./data).
      const nodeJs = fenced(path.join(ctx.repo, 'README.md'), 'js').find((b) => b.text.includes("from 'ibexdb/node'"));
      if (!nodeJs) throw new Error("README.md has no js block importing 'ibexdb/node'");
      writeFileSync(path.join(dir, 'node-example.mjs'), `${nodeJs.text}\nconsole.log(JSON.stringify(await db.get('notes/1')));\nawait db.close();\n`);
      const nodeOut = execFileSync(process.execPath, ['node-example.mjs'], { cwd: dir, encoding: 'utf8', timeout: 60_000 }).trim();
      if (nodeOut !== '{"title":"Buy milk"}' || !existsSync(path.join(dir, 'data/notes/log'))) throw new Error(`README.md's Node example printed ${nodeOut}, or wrote no data/notes/log`);
      const site = await startServer({ root: dir, port: 0, isolation: false, compress: true });
      try {
        const main = await inChromium(ctx, `${site.url}/index.html`, todo(() => window.__todo.at(-1) === 'Write report' && window.__todo.includes('Buy milkWrite report')), { init: WATCH_TODO });
        const pkg = await inChromium(ctx, `${site.url}/package.html`, todo(() => window.__todo.includes('Buy milk') && window.__todo.at(-1) === ''), { init: WATCH_TODO });
        return `installed ibexdb ${version} from ${path.basename(ctx.state.tarball)}; README.md's page listed ${JSON.stringify(main.state)}, the package README's ${JSON.stringify(pkg.state)}; README.md's Node example read back ${nodeOut}`;
      } finally {
        await site.close();
      }
    },
  },

  app: {
    phase: 1,
    timeout: 300_000,
    async run(ctx, cmd) {
      const out = await runToEnd(ctx, cmd.text);
      if (wasmBuilt(out)) throw new Error('make app rebuilt the wasm although make pkg had just built it');
      const dir = path.join(ctx.repo, 'dist/app');
      const sw = readFileSync(path.join(dir, 'sw.js'), 'utf8');
      if (sw.includes('%VERSION%') || sw.includes('%FILES%')) throw new Error('dist/app/sw.js has unfilled placeholders');
      const v = readdirSync(dir).find((f) => f.startsWith('v-'));
      if (!v || !existsSync(path.join(dir, v, 'ibexdb/wasm/ibexdb_bg.wasm.br'))) throw new Error('dist/app has no precompressed wasm');
      if (!sw.includes(`"${v}/ibexdb/wasm/ibexdb_bg.wasm"`) || /\.wasm\.(br|gz)"/.test(sw)) throw new Error('the service worker must cache the wasm, not its .br/.gz');
      return `dist/app/${v}/ with the precompressed wasm, not in the service worker's list; no wasm build`;
    },
  },

  demo: {
    phase: 2,
    timeout: 420_000,
    async run(ctx, cmd) {
      const [port, syncPort] = [await freePort(), await freePort()];
      const p = ctx.track(run(cmd.text, { cwd: ctx.repo, env: { DEMO_PORT: String(port), DEMO_SYNC_PORT: String(syncPort) } }));
      const url = (await p.waitFor(/^\s+(http:\/\/127\.0\.0\.1:\d+\/app\/\S+)$/m, 360_000))[1];
      if (wasmBuilt(p.output())) throw new Error('make demo rebuilt the wasm although nothing changed since make pkg');
      await healthy(`http://127.0.0.1:${syncPort}/healthz`);
      const { responses } = await inChromium(ctx, url, (page) => page.locator('body[data-state="ready"]').waitFor({ state: 'attached', timeout: 60_000 }));
      const wasm = wasmResponse(responses);
      if (wasm['content-encoding'] !== 'br' || wasm['content-type'] !== 'application/wasm') throw new Error(`the wasm came as ${wasm['content-type']}, ${wasm['content-encoding'] ?? 'uncompressed'}`);
      const stopped = await stopCleanly(p, { ports: [port, syncPort], marker: /^--- demo: stopped \(ibexdb-server exited with 0\)$/m });
      return `${url.replace(/\?.*/, '')} loaded the board (wasm: application/wasm, br); /healthz 200; no wasm build; ${stopped}`;
    },
  },

  serve: {
    phase: 2,
    timeout: 60_000,
    async run(ctx, cmd) {
      const port = await freePort();
      const p = ctx.track(run(cmd.text, { cwd: ctx.repo, env: { PORT: String(port) } }));
      const url = (await p.waitFor(/^serving .* at (http:\/\/127\.0\.0\.1:\d+)\//m, 30_000))[1];
      for (const page of ['/www/examples/basic.html', '/www/bench/page/']) {
        const r = await get(url + page);
        if (r.status !== 200 || r.headers['cross-origin-embedder-policy'] !== 'require-corp') throw new Error(`${page}: ${r.status}, COEP ${r.headers['cross-origin-embedder-policy']}`);
      }
      const wasm = await get(`${url}/pkg/ibexdb_bg.wasm`, { 'Accept-Encoding': 'gzip, br' });
      if (wasm.headers['content-encoding'] !== 'br' || wasm.headers['content-type'] !== 'application/wasm') throw new Error(`/pkg/ibexdb_bg.wasm came as ${wasm.headers['content-type']}, ${wasm.headers['content-encoding']}`);
      const stopped = await stopCleanly(p, { ports: [port] });
      return `${url}/www/examples/basic.html and /www/bench/page/ 200 with COOP/COEP; the wasm br; ${stopped}`;
    },
  },

  syncServer: {
    phase: 2,
    timeout: 300_000,
    async run(ctx, cmd) {
      const port = await freePort();
      const line = substitute(cmd.text, [['./sync-data', path.join(ctx.tmp, 'sync-data')], ['127.0.0.1:8787', `127.0.0.1:${port}`]]);
      const p = ctx.track(run(line, { cwd: ctx.repo }));
      await p.waitFor(/ibexdb-server listening on /, 240_000);
      await healthy(`http://127.0.0.1:${port}/healthz`);
      const metrics = await get(`http://127.0.0.1:${port}/metrics`);
      if (metrics.status !== 200) throw new Error(`GET /metrics: ${metrics.status}`);
      const stopped = await stopCleanly(p, { signal: 'SIGTERM', ports: [port], exitCode: 0 });
      return `listening on 127.0.0.1:${port} (data in a temp dir); /healthz and /metrics 200; ${stopped} (exit 0)`;
    },
  },

  serverHelp: {
    phase: 2,
    timeout: 60_000,
    async run(ctx, cmd) {
      const out = await runToEnd(ctx, cmd.text);
      // Every server flag the READMEs name in their prose is one the server has.
      const flags = ctx.readmes.flatMap((f) => parse(path.join(ctx.repo, f)).paragraphs.flatMap((p) => spans(p.text))).filter((s) => /^--[a-z]/.test(s)).map((s) => s.split(/[\s=]/)[0]);
      const missing = [...new Set(flags)].filter((f) => !out.includes(f));
      if (missing.length) throw new Error(`the READMEs name flags that --help does not list: ${missing.join(', ')}`);
      return `exit 0; lists the flags the README names (${[...new Set(flags)].join(', ')})`;
    },
  },

  load: {
    phase: 2,
    timeout: 300_000,
    async run(ctx, cmd) {
      const json = path.join(ctx.tmp, 'load.json');
      await runToEnd(ctx, `${cmd.text} -- --scenarios baseline --seconds 1 --json ${json}`);
      const report = JSON.parse(readFileSync(json, 'utf8'));
      return `quick run (-- --scenarios baseline --seconds 1): wrote ${Object.keys(report).length} report keys`;
    },
  },

  cluster: {
    phase: 2,
    timeout: 300_000,
    async run(ctx, cmd) {
      const pgPort = await freePort();
      const p = ctx.track(run(cmd.text, { cwd: ctx.repo, env: { NODES: '2', PG_PORT: String(pgPort), CLUSTER_DIR: path.join(ctx.tmp, 'cluster') } }));
      await p.waitFor(/^--- cluster: 2 nodes up/m, 240_000);
      const nodes = [...p.output().matchAll(/^node \d+ ws:\/\/(127\.0\.0\.1:(\d+))$/gm)];
      if (nodes.length !== 2) throw new Error(`expected 2 node URLs:\n${tail(p.output())}`);
      for (const [, addr] of nodes) await healthy(`http://${addr}/healthz`);
      const stopped = await stopCleanly(p, { ports: [pgPort, ...nodes.map((n) => Number(n[2]))], marker: /^--- cluster: stopped/m });
      return `NODES=2: PostgreSQL on ${pgPort}, /healthz 200 on ${nodes.map((n) => n[1]).join(' and ')}; ${stopped}`;
    },
  },

  benchCluster: {
    phase: 2,
    timeout: 300_000,
    async run(ctx, cmd) {
      const json = path.join(ctx.tmp, 'bench-cluster.json');
      const env = { SCENARIOS: 'baseline', SECONDS_EACH: '1', NODES: '1', PG_PORT: String(await freePort()), LOAD_ARGS: `--json ${json}` };
      await runToEnd(ctx, cmd.text, env);
      JSON.parse(readFileSync(json, 'utf8'));
      return `quick run (SCENARIOS=baseline SECONDS_EACH=1 NODES=1): files and PostgreSQL`;
    },
  },

  bench: {
    phase: 2,
    timeout: 420_000,
    async run(ctx, cmd) {
      const out = path.join(ctx.tmp, 'bench');
      // make test built the wasm and make pkg found it current: SKIP_WASM=1 saves a rebuild.
      const env = { SKIP_WASM: '1', BENCH_SIZES: '1000', BENCH_SCALING_SIZES: '1000', BENCH_SUITES: 'core', BENCH_PLAN: 'quick', BENCH_ENGINES: 'ibexdb,sqlite-tuned', BENCH_OUT: out, PORT: String(await freePort()) };
      await runToEnd(ctx, cmd.text, env);
      const results = JSON.parse(readFileSync(path.join(out, 'results.json'), 'utf8'));
      const engines = [...new Set(results.runs.map((/** @type {{engine: string}} */ r) => r.engine))];
      if (!engines.includes('ibexdb') || !existsSync(path.join(out, 'report.html'))) throw new Error(`results for ${engines.join(', ')}; report.html ${existsSync(path.join(out, 'report.html'))}`);
      return `quick run (BENCH_SIZES=1000 BENCH_SUITES=core BENCH_PLAN=quick, ${engines.join(' and ')}): results.json and report.html written`;
    },
  },

  benchCore: {
    phase: 3,
    timeout: 600_000,
    async run(ctx, cmd) {
      const started = Date.now();
      await runToEnd(ctx, cmd.text, { CORE_BENCH_SIZES: '1000', CORE_BENCH_VERIFY_COMMITS: '200' });
      const json = path.join(ctx.repo, 'target/bench-core.json');
      if (!existsSync(json) || statSync(json).mtimeMs < started) throw new Error('target/bench-core.json was not written');
      return 'quick run (CORE_BENCH_SIZES=1000 CORE_BENCH_VERIFY_COMMITS=200): target/bench-core.json written';
    },
  },

  benchQuery: {
    phase: 3,
    timeout: 600_000,
    async run(ctx, cmd) {
      const started = Date.now();
      await runToEnd(ctx, cmd.text, { QUERY_BENCH_SIZES: '1000' });
      const json = path.join(ctx.repo, 'target/bench-query.json');
      if (!existsSync(json) || statSync(json).mtimeMs < started) throw new Error('target/bench-query.json was not written');
      return 'quick run (QUERY_BENCH_SIZES=1000): target/bench-query.json written';
    },
  },
};
