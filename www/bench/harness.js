// Worker-side benchmark harness: implements the message protocol of www/bench/PROTOCOL.md on top of
// a small engine adapter, so that every engine runs exactly the same timing loops and the same inputs.
// An engine worker is just:
//
//   import { serve } from './harness.js';
//   serve({ init, open, close, reset, stats, get, getMany, put, update, putMany, all,
//           queryRange, queryComplex, count, keys, aggregate, info,
//           supports, sealPrepare, sealRun, verifySetup, verify, rel: {...} });
//
// `supports(rowId)` (optional) returns true, or a string saying why the row does not apply to this
// engine ("not applicable: …"); the row is then recorded with that reason instead of a time.
// Adapter methods may be synchronous or return promises; the loops only await real promises, so a
// synchronous engine is not charged for a microtask per operation.

import { ROWS, itemId, makeItem, updatedFields, rng } from './common.js';

const now = () => performance.now();
const isThenable = (x) => x !== null && typeof x === 'object' && typeof x.then === 'function';

/** Serialize an Error for postMessage, keeping name and stack (engine errors have stable names). */
export function serializeError(err) {
  if (err instanceof Error) return { name: err.name, message: err.message, stack: err.stack };
  return { name: 'Error', message: String(err) };
}

/** Smallest observable step of performance.now() in this context, in ms (5 µs when isolated). */
export function timerResolutionMs() {
  let best = Infinity;
  for (let i = 0; i < 50; i++) {
    const a = now();
    let b = now();
    while (b === a) b = now();
    best = Math.min(best, b - a);
  }
  return best;
}

/**
 * Time `run(i)` for `samples` samples of K iterations each and return per-iteration times (ms).
 *
 * Warm-up first, so that JS and wasm code is optimized and caches are warm (a cold first call of a
 * wasm engine can be 50x slower than the steady state): batches of K = 1, 2, 4, ... iterations run
 * until one batch lasts >= targetMs and all warm-up batches together >= warmupMs. Adaptive rows then
 * take K = clamp(round(K_last * targetMs / elapsed_last), 1, maxK), so one sample lasts ~targetMs
 * (performance.now() moves in 5 us steps); other rows use K = 1. Warm-up batches are discarded.
 * `prepare(total)` builds the inputs for the next `total` iterations outside any timed region;
 * `run(i)` consumes input i. Returns { samples, k, warmupSamples }.
 */
async function measure(plan, prepare, run) {
  const { samples, adaptive = false, targetMs = 20, warmupMs = 100, maxK = 10000 } = plan;
  const warmupBatches = Math.max(0, plan.warmup ?? 1);

  const batch = async (k) => {
    prepare(k);
    const t0 = now();
    for (let i = 0; i < k; i++) {
      const r = run(i);
      if (isThenable(r)) await r;
    }
    return now() - t0;
  };

  let k = 1;
  let warmups = 0;
  if (warmupBatches > 0) {
    let spent = 0;
    for (;;) {
      const elapsed = await batch(k);
      spent += elapsed;
      warmups++;
      const longEnough = elapsed >= targetMs || k >= maxK;
      if (longEnough && spent >= warmupMs && warmups >= warmupBatches) {
        if (adaptive) k = Math.max(1, Math.min(maxK, Math.round((k * targetMs) / Math.max(elapsed, 0.005))));
        else k = 1;
        break;
      }
      if (!adaptive && warmups >= warmupBatches && spent >= warmupMs) { k = 1; break; }
      if (!longEnough && adaptive) k = Math.min(maxK, k * 2);
    }
  }

  const out = [];
  for (let s = 0; s < samples; s++) out.push((await batch(k)) / k);
  return { samples: out, k, warmupSamples: warmups };
}

/** `count` distinct random base-item ids (all of them when n <= count). */
function distinctIds(r, n, count) {
  if (n <= count) return Array.from({ length: n }, (_, i) => itemId(i));
  const picked = new Set();
  while (picked.size < count) picked.add(r.int(n));
  return [...picked].map(itemId);
}

// --- relational workloads (go-sqlite-bench) -----------------------------------------------------
// Rows: users {id, created, email, active}, articles {id, created, userId, text},
// comments {id, created, articleId, text}; `created` in ms since the epoch, ids from 1.
const REL_BASE = Date.UTC(2023, 9, 1, 10, 0, 0);
const MINUTE = 60_000;
const email = (id) => `user${String(id).padStart(8, '0')}@example.com`;
function relUsers(n, emailOf = email) {
  return Array.from({ length: n }, (_, i) => ({ id: i + 1, created: REL_BASE + i * MINUTE, email: emailOf(i + 1), active: true }));
}
/** The complex/real data set: users, articles per user, comments per article; created increases. */
function relTree({ users, articles, comments }, activeOf = () => true) {
  const us = [];
  const as = [];
  const cs = [];
  let a = 0;
  let c = 0;
  for (let u = 1; u <= users; u++) {
    us.push({ id: u, created: REL_BASE + u * MINUTE, email: email(u), active: activeOf(u) });
    for (let j = 0; j < articles; j++) {
      a++;
      as.push({ id: a, created: REL_BASE + a * MINUTE, userId: u, text: 'article text' });
      for (let k = 0; k < comments; k++) {
        c++;
        cs.push({ id: c, created: REL_BASE + c * MINUTE, articleId: a, text: 'comment text' });
      }
    }
  }
  return { users: us, articles: as, comments: cs };
}
/**
 * Check a joined result: expected counts, users in order, articles grouped by user and comments
 * by article in the users' order, `created` increasing within each group. Returns mismatches.
 */
function checkJoined(r, users, articles, comments) {
  let wrong = 0;
  if (r.users.length !== users || r.articles.length !== articles || r.comments.length !== comments) wrong++;
  const userPos = new Map(r.users.map((u, i) => [u.id, i]));
  for (let i = 1; i < r.users.length; i++) if (r.users[i].created < r.users[i - 1].created) wrong++;
  const artPos = new Map();
  for (let i = 0; i < r.articles.length; i++) {
    const a = r.articles[i];
    artPos.set(a.id, i);
    if (i > 0) {
      const p = r.articles[i - 1];
      const pu = userPos.get(p.userId);
      const au = userPos.get(a.userId);
      if (au === undefined || au < pu || (au === pu && a.created < p.created)) wrong++;
    }
  }
  for (let i = 1; i < r.comments.length; i++) {
    const p = r.comments[i - 1];
    const c = r.comments[i];
    const pa = artPos.get(p.articleId);
    const ca = artPos.get(c.articleId);
    if (ca === undefined || ca < pa || (ca === pa && c.created < p.created)) wrong++;
  }
  if (r.comments.some((c) => c.text !== 'comment text') || r.articles.some((a) => a.text !== 'article text')) wrong++;
  return wrong;
}
function checkUsers(list, n, emailLen) {
  let wrong = list.length === n ? 0 : 1;
  for (let i = 0; i < list.length; i++) {
    const u = list[i];
    if (u.id !== i + 1 || u.active !== true || (emailLen ? u.email.length !== emailLen : u.email !== email(i + 1))) wrong++;
  }
  return wrong;
}

/** Start serving the protocol in this worker with the given engine adapter. */
export function serve(adapter) {
  const state = {
    engine: null,
    config: null,
    open: false,
    // Next index for items created by write rows/ops; starts above the base N so ids never collide.
    nextNew: 0,
    updateVersion: 0,
  };

  async function call(name, ...args) {
    if (typeof adapter[name] !== 'function') throw new Error(`engine adapter has no ${name}()`);
    const r = adapter[name](...args);
    return isThenable(r) ? await r : r;
  }
  async function ensureOpen() {
    if (!state.open) {
      await call('open');
      state.open = true;
    }
  }
  async function ensureClosed() {
    if (state.open) {
      await call('close');
      state.open = false;
    }
  }
  async function relCall(name, ...args) {
    const rel = adapter.rel;
    if (!rel || typeof rel[name] !== 'function') throw new Error(`engine adapter has no rel.${name}()`);
    const r = rel[name](...args);
    return isThenable(r) ? await r : r;
  }
  /** A fresh, empty database with the relational schema (what go-sqlite-bench does per workload). */
  async function freshRelational() {
    await ensureClosed();
    await call('reset', { final: false });
    await ensureOpen();
    await relCall('setup');
    state.relLoaded = null;
  }
  /** Time `f` once per sample (K = 1), after `warmup` discarded runs. */
  async function repeat(p, f) {
    const out = [];
    const warmup = p.warmup ?? 0;
    for (let s = 0; s < warmup + p.samples; s++) {
      const t0 = now();
      const r = f();
      if (isThenable(r)) await r;
      const t = now() - t0;
      if (s >= warmup) out.push(t);
    }
    return { samples: out, k: 1, warmupSamples: warmup };
  }
  const relNote = () => adapter.rel?.note ?? '';
  /** Insert rows: each sample on a fresh database (go-sqlite-bench makes one; we take p50 of a few). */
  async function freshSamples(p, f) {
    const out = [];
    let last;
    for (let s = 0; s < Math.max(1, p.samples); s++) {
      await freshRelational();
      const t0 = now();
      last = await f();
      out.push(now() - t0);
    }
    return { samples: out, k: 1, warmupSamples: 0, last };
  }

  // --- rows ------------------------------------------------------------------------------------
  // Each returns { samples, k, warmupSamples, check, note? }.
  const rows = {
    async 'open-empty'(p) {
      return reopenRow(p, itemId(0));
    },
    async 'open-n'(p) {
      return reopenRow(p, itemId(Math.floor(p.n / 2)));
    },
    async 'bulk-load'(p) {
      await ensureOpen();
      const batch = p.batch ?? 1000;
      let ms = 0;
      for (let start = 0; start < p.n; start += batch) {
        const items = [];
        for (let i = start; i < Math.min(p.n, start + batch); i++) items.push(makeItem(i));
        const t0 = now();
        await call('putMany', items);
        ms += now() - t0;
      }
      state.nextNew = Math.max(state.nextNew, p.n);
      const count = await call('count');
      return {
        samples: [ms], k: 1, warmupSamples: 0, check: { count },
        note: `${Math.round(p.n / (ms / 1000)).toLocaleString('en-US')} items/s; batches of ${batch}; item generation not timed`,
      };
    },
    async 'read-by-id-after-open'(p) {
      await ensureClosed();
      await ensureOpen();
      return rows['read-by-id'](p);
    },
    async 'read-by-id'(p) {
      await ensureOpen();
      const r = rng(p.seed);
      let ids = [];
      let missing = 0;
      const m = await measure(
        p,
        (total) => { ids = Array.from({ length: total }, () => itemId(r.int(p.n))); missing = 0; },
        (i) => {
          const v = adapter.get(ids[i]);
          if (isThenable(v)) return v.then((x) => { if (x === undefined) missing++; });
          if (v === undefined) missing++;
          return undefined;
        },
      );
      return { ...m, check: { missing } };
    },
    async 'bulk-read-100'(p) {
      await ensureOpen();
      const r = rng(p.seed);
      let sets = [];
      let returned = 0;
      const m = await measure(
        p,
        (total) => {
          sets = Array.from({ length: total }, () => distinctIds(r, p.n, 100));
        },
        (i) => settle(adapter.getMany(sets[i]), (x) => { returned = x.length; }),
      );
      return { ...m, check: { returned }, note: '100 distinct random ids per call' };
    },
    async 'read-all'(p) {
      await ensureOpen();
      let returned = 0;
      const m = await measure(p, () => {}, () => settle(adapter.all(), (x) => { returned = x.length; }));
      return { ...m, check: { returned } };
    },
    async 'simple-query'(p) {
      await ensureOpen();
      const r = rng(p.seed);
      let los = [];
      let returned = 0;
      let bad = 0;
      const m = await measure(
        p,
        (total) => { los = Array.from({ length: total }, () => r.int(Math.max(1, p.n - 1000 + 1))); },
        (i) => settle(adapter.queryRange(los[i], los[i] + 1000), (x) => {
          returned = x.length;
          if (x.length && (x[0].count !== los[i] || x[x.length - 1].count < x[0].count)) bad++;
        }),
      );
      const check = { returned };
      if (bad) check.unsorted = bad;
      return { ...m, check };
    },
    async 'complex-query'(p) {
      await ensureOpen();
      let last = [];
      const m = await measure(p, () => {}, () => settle(adapter.queryComplex({ tag: 'category 3', limit: 100 }), (x) => { last = x; }));
      const check = { returned: last.length, firstCount: last.length ? last[0].count : -1 };
      const wrong = last.filter((it, j) => !it.tags.includes('category 3') || !/[0-9]/.test(it.title) || (j > 0 && last[j - 1].count < it.count));
      if (wrong.length) check.wrong = wrong.length;
      return { ...m, check };
    },
    async count(p) {
      await ensureOpen();
      let value = -1;
      const m = await measure(p, () => {}, () => settle(adapter.count(), (x) => { value = x; }));
      return { ...m, check: { value } };
    },
    async keys(p) {
      await ensureOpen();
      let returned = 0;
      let typeOk = true;
      const m = await measure(p, () => {}, () => settle(adapter.keys(), (x) => { returned = x.length; typeOk = typeof x[0] === 'string' || x.length === 0; }));
      const check = { returned };
      if (!typeOk) check.notStrings = true;
      return { ...m, check };
    },
    async aggregate(p) {
      await ensureOpen();
      let value = null;
      const m = await measure(p, () => {}, () => settle(adapter.aggregate(), (x) => { value = x; }));
      return { ...m, check: value };
    },
    async 'create-item'(p) {
      await ensureOpen();
      state.nextNew = Math.max(state.nextNew, p.n);
      let items = [];
      const m = await measure(
        p,
        (total) => { items = Array.from({ length: total }, () => makeItem(state.nextNew++)); },
        (i) => adapter.put(items[i]),
      );
      return { ...m, check: {}, note: 'each insert is its own transaction/commit' };
    },
    async 'update-item'(p) {
      await ensureOpen();
      const r = rng(p.seed);
      let args = [];
      const m = await measure(
        p,
        (total) => {
          args = Array.from({ length: total }, () => {
            const i = r.int(p.n);
            return [itemId(i), updatedFields(i, ++state.updateVersion)];
          });
        },
        (i) => adapter.update(args[i][0], args[i][1]),
      );
      return { ...m, check: {}, note: 'title, count and tags of a random existing item; own transaction/commit' };
    },
    async 'bulk-create-100'(p) {
      await ensureOpen();
      state.nextNew = Math.max(state.nextNew, p.n);
      let batches = [];
      const m = await measure(
        p,
        (total) => {
          batches = Array.from({ length: total }, () => Array.from({ length: 100 }, () => makeItem(state.nextNew++)));
        },
        (i) => adapter.putMany(batches[i]),
      );
      return { ...m, check: {} };
    },
    async 'writes-single'(p) {
      await ensureOpen();
      state.nextNew = Math.max(state.nextNew, p.n);
      let items = [];
      const m = await measure(
        p,
        (total) => { items = Array.from({ length: total }, () => makeItem(state.nextNew++)); },
        (i) => adapter.put(items[i]),
      );
      const perSec = m.samples.map((ms) => 1000 / ms).sort((a, b) => a - b);
      return { ...m, check: {}, note: `${Math.round(perSec[Math.floor(perSec.length / 2)]).toLocaleString('en-US')} writes/s (median sample); ${m.k} writes per sample` };
    },
    async 'writes-batched'(p) {
      await ensureOpen();
      state.nextNew = Math.max(state.nextNew, p.n);
      let batches = [];
      const m = await measure(
        p,
        (total) => {
          batches = Array.from({ length: total }, () => Array.from({ length: 100 }, () => makeItem(state.nextNew++)));
        },
        (i) => adapter.putMany(batches[i]),
      );
      // Per item: a sample is K transactions of 100 items.
      m.samples = m.samples.map((ms) => ms / 100);
      const perSec = m.samples.map((ms) => 1000 / ms).sort((a, b) => a - b);
      return { ...m, k: m.k * 100, check: {}, note: `${Math.round(perSec[Math.floor(perSec.length / 2)]).toLocaleString('en-US')} items/s (median sample); ${m.k} transactions of 100 per sample` };
    },
    async 'seal-batch'(p) {
      await ensureOpen();
      state.nextNew = Math.max(state.nextNew, p.n);
      let sealed = -1;
      let prepared = -1;
      const m = await measure(
        { ...p, adaptive: false },
        () => {
          const items = Array.from({ length: 100 }, () => makeItem(state.nextNew++));
          prepared = adapter.sealPrepare(items);
        },
        () => settle(adapter.sealRun(), (x) => { sealed = x; }),
      );
      const check = { sealed };
      if (prepared !== 100 || sealed !== 100) check.wrong = `prepared ${prepared}, sealed ${sealed} commits (expected 100)`;
      return { ...m, check, note: '100 single-item commits (made and flushed untimed), then timed: seal() + flush()' };
    },

    // --- relational (go-sqlite-bench); p.rel = the plan's sizes --------------------------------
    async 'rel-simple-insert'(p) {
      const users = relUsers(p.rel.simpleUsers);
      const m = await freshSamples(p, () => relCall('insert', 'users', users));
      state.relLoaded = 'simple';
      return { ...m, check: {}, note: `${users.length.toLocaleString('en-US')} users in one transaction; fresh database per sample; ${relNote()}` };
    },
    async 'rel-simple-query'(p) {
      const n = p.rel.simpleUsers;
      if (state.relLoaded !== 'simple') {
        await freshRelational();
        await relCall('insert', 'users', relUsers(n));
        state.relLoaded = 'simple';
      }
      let last = [];
      const m = await repeat(p, () => settle(relCall('allUsers'), (x) => { last = x; }));
      const check = { returned: last.length };
      const wrong = checkUsers(last, n);
      if (wrong) check.wrong = wrong;
      return { ...m, check, note: `${n.toLocaleString('en-US')} users` };
    },
    async 'rel-real-insert'(p) {
      const t = relTree(p.rel.real);
      const { articles: A, comments: C } = p.rel.real;
      const parts = t.users.map((u, i) => [u, t.articles.slice(i * A, (i + 1) * A), t.comments.slice(i * A * C, (i + 1) * A * C)]);
      const m = await freshSamples(p, async () => {
        for (const [u, a, c] of parts) {
          const r = relCall('insertUserTree', u, a, c);
          if (isThenable(r)) await r;
        }
      });
      state.relLoaded = 'real';
      return { ...m, check: {}, note: `${t.users.length} transactions of 1 user + ${A} articles + ${A * C} comments; fresh database per sample` };
    },
    async 'rel-real-query'(p) {
      const { users: U, articles: A, comments: C } = p.rel.real;
      if (state.relLoaded !== 'real') {
        await freshRelational();
        const t = relTree(p.rel.real);
        for (let u = 0; u < U; u++) await relCall('insertUserTree', t.users[u], t.articles.slice(u * A, (u + 1) * A), t.comments.slice(u * A * C, (u + 1) * A * C));
        state.relLoaded = 'real';
      }
      let wrong = 0;
      let comments = 0;
      const m = await repeat(p, async () => {
        wrong = 0;
        comments = 0;
        for (let u = 1; u <= U; u++) {
          let r = relCall('userTree', email(u));
          if (isThenable(r)) r = await r;
          wrong += checkJoined(r, 1, A, A * C);
          if (r.users[0]?.email !== email(u)) wrong++;
          comments += r.comments.length;
        }
      });
      const check = { comments };
      if (wrong) check.wrong = wrong;
      return { ...m, check, note: `${U} users, each: find by email + its ${A} articles + their ${A * C} comments; ${relNote()}` };
    },
    async 'rel-complex-insert'(p) {
      const t = relTree(p.rel.complex, (u) => u % 2 === 0);
      const m = await freshSamples(p, async () => {
        let commits = 0;
        for (const table of ['users', 'articles', 'comments']) {
          const r = await relCall('insert', table, t[table]);
          commits += r?.commits ?? 1;
        }
        return commits;
      });
      state.relLoaded = 'complex';
      return { ...m, check: {}, note: `${t.users.length} users, ${t.articles.length.toLocaleString('en-US')} articles, ${t.comments.length.toLocaleString('en-US')} comments in 3 transactions${m.last > 3 ? ` (${m.last} commits)` : ''}; fresh database per sample` };
    },
    async 'rel-complex-query'(p) {
      const { users: U, articles: A, comments: C } = p.rel.complex;
      if (state.relLoaded !== 'complex') {
        await freshRelational();
        const t = relTree(p.rel.complex, (u) => u % 2 === 0);
        for (const table of ['users', 'articles', 'comments']) await relCall('insert', table, t[table]);
        state.relLoaded = 'complex';
      }
      let r = null;
      const m = await repeat(p, () => settle(relCall('allJoined'), (x) => { r = x; }));
      const check = { users: r.users.length, articles: r.articles.length, comments: r.comments.length };
      const wrong = checkJoined(r, U, U * A, U * A * C) + r.users.filter((u) => u.active !== (u.id % 2 === 0)).length;
      if (wrong) check.wrong = wrong;
      return { ...m, check, note: `${(U * A * C).toLocaleString('en-US')} comments under ${(U * A).toLocaleString('en-US')} articles under ${U} users; ${relNote()}` };
    },
  };
  for (const users of [10, 100, 1000]) {
    rows[`rel-many-${users}`] = async (p) => {
      await freshRelational();
      await relCall('insert', 'users', relUsers(users));
      const total = p.rel.manyQueries;
      const per = Math.max(1, Math.ceil(total / p.samples));
      let last = [];
      const m = await repeat({ ...p, warmup: p.warmup ?? 1 }, async () => {
        for (let i = 0; i < per; i++) {
          let x = relCall('allUsers');
          if (isThenable(x)) x = await x;
          last = x;
        }
      });
      m.samples = m.samples.map((ms) => ms / per);
      m.k = per;
      const check = { returned: last.length };
      const wrong = checkUsers(last, users);
      if (wrong) check.wrong = wrong;
      return { ...m, check, note: `${users} users; ${per * p.samples} timed queries (${per} per sample), per query` };
    };
  }
  for (const row of ROWS.filter((r) => r.largeBytes)) {
    const size = row.largeBytes;
    const insert = row.id.endsWith('-insert');
    const load = async (p) => {
      await freshRelational();
      // One shared string: the engines copy it per row, the page's memory does not grow with L.
      const text = 'a'.repeat(size);
      const users = relUsers(p.rel.largeRows, () => text);
      const t0 = now();
      const r = await relCall('insert', 'users', users);
      state.relLoaded = `large-${size}`;
      return { ms: now() - t0, commits: r?.commits ?? 1 };
    };
    rows[row.id] = insert
      ? async (p) => {
        const { ms, commits } = await load(p);
        return { samples: [ms], k: 1, warmupSamples: 0, check: {}, note: `${p.rel.largeRows.toLocaleString('en-US')} users × ${size.toLocaleString('en-US')} characters (${((p.rel.largeRows * size) / 1e6).toFixed(0)} MB) in one transaction${commits > 1 ? `, ${commits} commits` : ''}` };
      }
      : async (p) => {
        if (state.relLoaded !== `large-${size}`) await load(p);
        let last = [];
        const m = await repeat(p, () => settle(relCall('allUsers'), (x) => { last = x; }));
        const check = { returned: last.length };
        const wrong = checkUsers(last, p.rel.largeRows, size);
        if (wrong) check.wrong = wrong;
        return { ...m, check, note: `${p.rel.largeRows.toLocaleString('en-US')} users × ${size.toLocaleString('en-US')} characters` };
      };
  }

  rows.verify = async (p) => {
    await ensureClosed();
    await call('reset', { final: false });
    await ensureOpen();
    const { commits, sealEvery } = p.verify;
    const items = Array.from({ length: commits }, (_, i) => makeItem(i));
    const setup = await call('verifySetup', { items, sealEvery });
    // Verify the repository as an app finds it at start-up: closed and reopened (not timed).
    await ensureClosed();
    await ensureOpen();
    let report = null;
    const m = await repeat(p, () => settle(adapter.verify(), (x) => { report = x; }));
    const check = { ...report };
    if (report?.commits !== undefined && report.commits !== setup.commits) check.wrong = `verified ${report.commits} commits, made ${setup.commits}`;
    if (report?.ok === false) check.wrong = `integrity check failed: ${report.result}`;
    return { ...m, check, note: setup.note ?? '' };
  };

  /** Apply `f` to a value or to a promise's result (keeps synchronous adapters synchronous). */
  function settle(v, f) {
    if (isThenable(v)) return v.then(f);
    f(v);
    return undefined;
  }

  /** close → (timed: open + one read by id) per sample. */
  async function reopenRow(p, id) {
    const out = [];
    const warmup = p.warmup ?? 1;
    let found = null;
    for (let s = 0; s < warmup + p.samples; s++) {
      await ensureClosed();
      const t0 = now();
      await call('open');
      state.open = true;
      const v = await call('get', id);
      const t1 = now();
      found = v !== undefined;
      if (s >= warmup) out.push(t1 - t0);
    }
    const check = { found };
    if (p.row === 'open-empty') check.count = await call('count');
    return { samples: out, k: 1, warmupSamples: warmup, check };
  }

  // --- single operations for page-side rows ----------------------------------------------------
  const ops = {
    get: ({ id }) => call('get', id),
    put: ({ item }) => call('put', item),
    putMany: ({ items }) => call('putMany', items),
    update: ({ id, fields }) => call('update', id, fields),
    queryRange: ({ lo, hi }) => call('queryRange', lo, hi),
    count: () => call('count'),
  };

  async function handle(msg) {
    switch (msg.type) {
      case 'init': {
        if (state.engine) throw new Error(`worker already initialized for ${state.engine}`);
        state.engine = msg.engine;
        state.config = msg.config ?? {};
        const t0 = now();
        const initTimes = (await call('init', { engine: msg.engine, ...state.config })) ?? {};
        const t1 = now();
        await ensureOpen();
        const t2 = now();
        return {
          ms: { total: t2 - t0, init: t1 - t0, open: t2 - t1, ...initTimes },
          info: (await call('info')) ?? {},
          timerResolutionMs: timerResolutionMs(),
          crossOriginIsolated: self.crossOriginIsolated === true,
        };
      }
      case 'row': {
        const fn = rows[msg.row];
        if (!fn) throw new Error(`unknown row "${msg.row}"`);
        const p = { ...msg.params, row: msg.row };
        if (!Number.isInteger(p.n) || p.n < 0) throw new Error(`row ${msg.row}: params.n must be a non-negative integer`);
        const supported = typeof adapter.supports === 'function' ? adapter.supports(msg.row) : true;
        if (supported !== true) return { na: String(supported || 'not applicable to this engine') };
        const r = await fn(p);
        // What this engine does on the row (plans, shortcuts), from the adapter.
        const note = [r.note, adapter.rowNotes?.[msg.row]].filter(Boolean).join('; ');
        return { samples: r.samples, iterationsPerSample: r.k, warmupSamples: r.warmupSamples, check: r.check, note };
      }
      case 'op': {
        const fn = ops[msg.op];
        if (!fn) throw new Error(`unknown op "${msg.op}"`);
        await ensureOpen();
        return { value: await fn(msg.args ?? {}) };
      }
      case 'stats': {
        const s = (await call('stats')) ?? {};
        // Non-standard Chromium API; absent in some contexts. Reported when available.
        const mem = performance.memory;
        if (mem && s.jsHeapUsedBytes === undefined) s.jsHeapUsedBytes = mem.usedJSHeapSize;
        return { stats: s };
      }
      case 'reset': {
        await ensureClosed();
        await call('reset', { final: !!msg.final });
        state.nextNew = 0;
        return {};
      }
      case 'close': {
        await ensureClosed();
        if (typeof adapter.shutdown === 'function') await call('shutdown');
        return {};
      }
      case 'release': {
        // Close the database (releasing its OPFS handles) but keep the worker: another context
        // (the ibexdb page API) is about to open the same files. The next row/op reopens.
        await ensureClosed();
        return {};
      }
      default:
        throw new Error(`unknown message type "${msg.type}"`);
    }
  }

  // Messages are handled strictly one at a time, in arrival order.
  let queue = Promise.resolve();
  self.onmessage = (e) => {
    const msg = e.data ?? {};
    queue = queue.then(async () => {
      try {
        const reply = await handle(msg);
        self.postMessage({ id: msg.id, ok: true, ...reply });
      } catch (err) {
        self.postMessage({ id: msg.id, ok: false, error: serializeError(err) });
      }
    });
  };
  self.addEventListener('unhandledrejection', (e) => {
    self.postMessage({ type: 'fatal', error: serializeError(e.reason) });
  });
}
