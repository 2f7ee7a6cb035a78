// The benchmark's initial-sync row, measured by the driver like the sync-latency row (it needs the
// native ibexdb-server and fresh browser contexts, which a page cannot create). Used by
// scripts/bench.mjs and by the smoke test (tests/browser/bench-smoke.spec.ts).
//
// What it times: an app opening a repository of N items that exists only on the server, in a browser
// that has never seen it (a fresh context: no OPFS data, no compiled wasm), from `open(name,
// {sync})` until `db.sync()` resolves and `db.count('items')` answers N. That includes the
// worker and wasm start, the handshake, the server streaming the history, the client verifying
// every seal, applying the commits and persisting them to OPFS.

import { summarize } from '../www/bench/shared/stats.js';
import { startSyncServer } from './sync-latency.mjs';

export const SYNC_INITIAL_ROW = 'sync-initial';
const NA_SQLITE = 'not applicable: SQLite has no sync';
/** Items per commit while page A fills the repository (the bulk-load row's batch size). */
const BATCH = 1000;

/** A fresh browser context on the playground page, ready to call `window.ibexdb`. */
async function freshPage(browser, baseUrl) {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  await page.goto(`${baseUrl}/www/examples/playground.html`);
  await page.waitForSelector('body[data-ready="1"]');
  return { ctx, page };
}

/** Page A founds the repository with N benchmark items in commits of BATCH and pushes them all. */
async function fillRepository(page, name, opts, n) {
  await page.evaluate(async ([name, opts, n, batch]) => {
    const { makeItem } = await import('/www/bench/shared/model.js');
    const db = await window.ibexdb.open(name, opts);
    for (let from = 0; from < n; from += batch) {
      await db.transaction((tx) => {
        for (let i = from; i < Math.min(n, from + batch); i++) {
          const { id, ...item } = makeItem(i);
          tx.put(`items/${id}`, item);
        }
      });
    }
    await db.sync();
    window.owner = db;
  }, [name, opts, n, BATCH]);
}

/** One timed sample: a fresh context opens the repository with sync until it holds all N items. */
async function timeInitialSync(browser, baseUrl, name, opts, n) {
  const { ctx, page } = await freshPage(browser, baseUrl);
  try {
    return await page.evaluate(async ([name, opts, n]) => {
      const { itemId } = await import('/www/bench/shared/model.js');
      const t0 = performance.now();
      const db = await window.ibexdb.open(name, opts);
      await db.sync();
      const count = await db.count('items');
      const ms = performance.now() - t0;
      const last = await db.get(`items/${itemId(n - 1)}`);
      await db.close();
      if (count !== n) throw new Error(`initial sync: ${count} items after sync, expected ${n}`);
      if (last?.count !== n - 1) throw new Error(`initial sync: items/${itemId(n - 1)} is ${JSON.stringify(last)}`);
      return ms;
    }, [name, opts, n]);
  } finally {
    await ctx.close().catch(() => {});
  }
}

/**
 * Time `samples` initial syncs of an N-item repository into an empty browser.
 * @returns {Promise<number[]>} one duration in ms per sample
 */
export async function measureInitialSync({ browser, baseUrl, serverBin, config, n, samples }) {
  const server = await startSyncServer(serverBin, { acceptTrusted: !!config.trusted });
  const owner = await freshPage(browser, baseUrl);
  try {
    const name = `bench-initial-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
    // The engine's backend too (the `-idb` engines: storage 'indexeddb'; default 'auto').
    const opts = { sync: server.url, durability: config.durability ?? 'flush', trusted: !!config.trusted, ...(config.storage ? { storage: config.storage } : {}) };
    await fillRepository(owner.page, name, opts, n);
    // The reader's key, made in a context of its own and granted read by the owner (untimed).
    const reader = await freshPage(browser, baseUrl);
    const identity = await reader.page.evaluate(async (trusted) => {
      if (trusted) return null;
      const db = await window.ibexdb.open('bench-keyholder', {});
      const [id, key] = [await db.exportIdentity(), db.publicKey];
      await db.close();
      return { id, key };
    }, !!config.trusted);
    await reader.ctx.close();
    if (identity) await owner.page.evaluate(async (k) => { await window.owner.grant(k, 'reader'); await window.owner.sync(); }, identity.key);
    const readerOpts = identity ? { ...opts, identity: identity.id } : opts;
    const times = [];
    for (let s = 0; s < samples; s++) times.push(await timeInitialSync(browser, baseUrl, name, readerOpts, n));
    return times;
  } finally {
    await owner.ctx.close().catch(() => {});
    server.stop();
  }
}

/**
 * Fill the sync-initial row of every run in `results` (a placeholder from the page): each ibexdb
 * engine is measured once per dataset size, SQLite engines get n/a. Returns a line per measurement.
 */
export async function fillInitialSync(results, { browser, baseUrl, serverBin, samples }) {
  const log = [];
  const done = new Map();
  for (const run of results.runs) {
    if (!run.rows?.[SYNC_INITIAL_ROW]) continue;
    const engine = results.engines.find((e) => e.id === run.engine);
    if (engine?.family !== 'ibexdb') {
      run.rows[SYNC_INITIAL_ROW] = { na: NA_SQLITE };
      continue;
    }
    const key = `${run.engine}@${run.size}`;
    if (!done.has(key)) {
      try {
        const times = await measureInitialSync({ browser, baseUrl, serverBin, config: engine.config ?? {}, n: run.size, samples });
        const page = summarize(times);
        done.set(key, { page, note: `${run.size} items in ${Math.ceil(run.size / BATCH)} commits; a fresh browser context per sample` });
        log.push(`${run.engine} sync-initial N=${run.size}: page p50 ${page.p50.toFixed(0)} ms (${page.n})`);
      } catch (err) {
        const msg = err.message.split('\n')[0];
        done.set(key, { error: `initial sync: ${msg}` });
        run.errors?.push(`${SYNC_INITIAL_ROW}: ${msg}`);
        log.push(`${run.engine} sync-initial N=${run.size}: error: ${msg}`);
      }
    }
    run.rows[SYNC_INITIAL_ROW] = done.get(key);
  }
  return log;
}
