// The benchmark's sync-latency row, measured by the driver rather than inside the benchmark page:
// it needs the native ibexdb-server and two browser contexts (two separate OPFS), which a page
// cannot create. Used by scripts/bench.mjs and by the smoke test (tests/browser/bench-smoke.spec.ts).
//
// What it times: a `db.put()` on page A, from the call until the new row is reported by a live
// query on page B (another browser context), through ibexdb-server on 127.0.0.1. That includes A's
// durable write (flush, or the relaxed timer), the push (for signed engines: the seal, a P-384
// signature), the server's verification and fsync before it relays, and B's verification and apply.

import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { summarize } from '../www/bench/shared/stats.js';

export const SYNC_ROW = 'sync-latency';
const NA_SQLITE = 'not applicable: SQLite has no sync';

/** Start `serverBin` on 127.0.0.1 with an ephemeral port; resolves when it prints its address. */
export async function startSyncServer(serverBin, { acceptTrusted = false } = {}) {
  if (!existsSync(serverBin)) throw new Error(`${serverBin} not found (cargo build --release -p ibexdb-server)`);
  const dir = mkdtempSync(path.join(tmpdir(), 'ibexdb-bench-sync-'));
  const args = ['--data', dir, '--listen', '127.0.0.1:0', ...(acceptTrusted ? ['--accept-trusted'] : [])];
  const proc = spawn(serverBin, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const stop = () => {
    proc.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const line = await new Promise((resolve, reject) => {
      proc.once('error', reject);
      proc.once('exit', (code) => reject(new Error(`ibexdb-server exited with ${code}`)));
      createInterface({ input: proc.stdout }).once('line', resolve);
    });
    const m = /listening on (\S+)/.exec(line);
    if (!m) throw new Error(`unexpected ibexdb-server output: ${line}`);
    return { url: `ws://${m[1]}`, stop };
  } catch (err) {
    stop();
    throw err;
  }
}

/**
 * Time `writes` sequential puts on page A until each shows in page B's live query.
 * @param {object} o
 * @param {import('@playwright/test').Browser} o.browser
 * @param {string} o.baseUrl origin serving the repository (COOP/COEP)
 * @param {string} o.serverBin path of ibexdb-server
 * @param {{durability?: string, trusted?: boolean}} o.config the engine's open options
 * @param {number} o.writes timed writes (after one untimed warm-up write)
 * @returns {Promise<number[]>} latencies in ms
 */
export async function measureSyncLatency({ browser, baseUrl, serverBin, config, writes }) {
  const server = await startSyncServer(serverBin, { acceptTrusted: !!config.trusted });
  const contexts = [await browser.newContext(), await browser.newContext()];
  try {
    const [a, b] = await Promise.all(contexts.map(async (ctx) => {
      const p = await ctx.newPage();
      await p.goto(`${baseUrl}/www/examples/playground.html`);
      await p.waitForSelector('body[data-ready="1"]');
      return p;
    }));
    const name = `bench-sync-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
    // The engine's backend too (the `-idb` engines: storage 'indexeddb'; default 'auto').
    const opts = { sync: server.url, durability: config.durability ?? 'flush', trusted: !!config.trusted, ...(config.storage ? { storage: config.storage } : {}) };
    // A creates the repository (signed: its first write makes its key the owner) and lets B
    // read (B tells its key); B catches up (`db.sync()`) before the timed writes.
    await a.evaluate(async ([name, opts]) => {
      window.db = await window.ibexdb.open(name, opts);
      await window.db.put('items/founding', { n: -2 });
      await window.db.sync();
    }, [name, opts]);
    await b.evaluate(async ([name, opts]) => { window.db = await window.ibexdb.open(name, opts); }, [name, opts]);
    const keyB = await b.evaluate(() => window.db.publicKey);
    if (keyB) await a.evaluate(async (k) => { await window.db.grant(k, 'reader'); await window.db.sync(); }, keyB);
    await b.evaluate(async () => {
      await window.db.sync();
      window.seen = {};
      window.lq = await window.db.live({ collection: 'items' }, (rows) => {
        const now = performance.timeOrigin + performance.now();
        for (const r of rows) if (!(r.id in window.seen)) window.seen[r.id] = now;
      });
    });
    const lat = [];
    for (let i = -1; i < writes; i++) {
      const t0 = await a.evaluate(async (i) => {
        const t0 = performance.timeOrigin + performance.now();
        await window.db.put(`items/k${i}`, { n: i, title: `item ${i}` });
        return t0;
      }, i);
      const seen = await b.waitForFunction((id) => window.seen[id], `k${i}`, { polling: 'raf', timeout: 20_000 });
      if (i >= 0) lat.push((await seen.jsonValue()) - t0);
    }
    await a.evaluate(() => window.db.close());
    await b.evaluate(() => window.db.close());
    return lat;
  } finally {
    for (const ctx of contexts) await ctx.close().catch(() => {});
    server.stop();
  }
}

/**
 * Fill the sync-latency row of every run in `results` (left as a placeholder by the page): the
 * ibexdb engines get a [page] summary measured once per engine, SQLite engines n/a. Returns a
 * line per engine for the log.
 */
export async function fillSyncLatency(results, { browser, baseUrl, serverBin, writes }) {
  const log = [];
  const byEngine = new Map();
  for (const run of results.runs) {
    if (!run.rows?.[SYNC_ROW]) continue;
    const engine = results.engines.find((e) => e.id === run.engine);
    if (engine?.family !== 'ibexdb') {
      run.rows[SYNC_ROW] = { na: NA_SQLITE };
      continue;
    }
    if (!byEngine.has(run.engine)) {
      try {
        const samples = await measureSyncLatency({ browser, baseUrl, serverBin, config: engine.config ?? {}, writes });
        const page = summarize(samples);
        byEngine.set(run.engine, { page, note: `${samples.length} writes, one at a time, two browser contexts through ibexdb-server` });
        log.push(`${run.engine} sync-latency: page p50 ${page.p50.toFixed(1)} ms p95 ${page.p95.toFixed(1)} ms (${page.n})`);
      } catch (err) {
        byEngine.set(run.engine, { error: `sync latency: ${err.message.split('\n')[0]}` });
        run.errors?.push(`${SYNC_ROW}: ${err.message.split('\n')[0]}`);
        log.push(`${run.engine} sync-latency: error: ${err.message.split('\n')[0]}`);
      }
    }
    run.rows[SYNC_ROW] = byEngine.get(run.engine);
  }
  return log;
}
