// The relational workloads of go-sqlite-bench (suite `relational`): users, articles and comments,
// inserted in one or many transactions and read back joined, each workload on a fresh database.
// Adapters implement `rel.setup`, `rel.insert(table, rows)`, `rel.insertUserTree(user, articles,
// comments)`, `rel.allUsers()`, `rel.userTree(email)` and `rel.allJoined()` (PROTOCOL.md).

import { ROWS } from '../../shared/rows.js';
import { isThenable, now, repeat, settle } from '../loops.js';

/** @typedef {import('../harness.js').Session} Session */
/** @typedef {import('../harness.js').RowParams} RowParams */
/** @typedef {import('../harness.js').RowResult} RowResult */

// Rows: users {id, created, email, active}, articles {id, created, userId, text},
// comments {id, created, articleId, text}; `created` in ms since the epoch, ids from 1.
/** @typedef {{id: number, created: number, email: string, active: boolean}} User */
/** @typedef {{id: number, created: number, userId: number, text: string}} Article */
/** @typedef {{id: number, created: number, articleId: number, text: string}} Comment */
/** @typedef {{users: User[], articles: Article[], comments: Comment[]}} Joined */

const REL_BASE = Date.UTC(2023, 9, 1, 10, 0, 0);
const MINUTE = 60_000;
/** @param {number} id */
const email = (id) => `user${String(id).padStart(8, '0')}@example.com`;

/** @param {number} n @param {(id: number) => string} [emailOf] @returns {User[]} */
function relUsers(n, emailOf = email) {
  return Array.from({ length: n }, (_, i) => ({ id: i + 1, created: REL_BASE + i * MINUTE, email: emailOf(i + 1), active: true }));
}

/**
 * The complex/real data set: users, articles per user, comments per article; created increases.
 * @param {{users: number, articles: number, comments: number}} sizes
 * @param {(userId: number) => boolean} [activeOf]
 * @returns {Joined}
 */
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
 * @param {Joined} r @param {number} users @param {number} articles @param {number} comments
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
      const pu = /** @type {number} */ (userPos.get(p.userId));
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

/** @param {User[]} list @param {number} n @param {number} [emailLen] */
function checkUsers(list, n, emailLen) {
  let wrong = list.length === n ? 0 : 1;
  for (let i = 0; i < list.length; i++) {
    const u = list[i];
    if (u.id !== i + 1 || u.active !== true || (emailLen ? u.email.length !== emailLen : u.email !== email(i + 1))) wrong++;
  }
  return wrong;
}

/**
 * @param {Session} s
 * @returns {Record<string, (p: RowParams) => Promise<RowResult>>}
 */
export function relationalRows(s) {
  /**
   * Call the adapter's `rel[name]`, awaiting only a real promise.
   * @param {string} name @param {...any} args @returns {Promise<any>}
   */
  async function relCall(name, ...args) {
    const rel = /** @type {Record<string, any> | undefined} */ (s.adapter.rel);
    if (!rel || typeof rel[name] !== 'function') throw new Error(`engine adapter has no rel.${name}()`);
    const r = rel[name](...args);
    return isThenable(r) ? await r : r;
  }
  /**
   * A fresh, empty database with the relational schema (what go-sqlite-bench does per workload),
   * its declared indexes built (nothing to build yet), so that every insert maintains them.
   * `variant` 'tuned': the schema and queries a tuned SQLite app would use (ibexdb: the same).
   * @param {string} [variant]
   */
  async function freshRelational(variant = 'standard') {
    await s.ensureClosed();
    await s.call('reset', { final: false });
    await s.ensureOpen();
    await relCall('setup', variant);
    await s.optional('buildIndexes');
    s.indexed = true;
    s.relLoaded = null;
  }
  /**
   * Rows of each table now (untimed check of an insert row) against what was inserted.
   * @param {Record<string, number>} want
   */
  async function checkCounts(want) {
    /** @type {Record<string, number>} */
    const got = await relCall('counts');
    /** @type {Record<string, unknown>} */
    const check = { ...got };
    const bad = Object.entries(want).filter(([t, n]) => got[t] !== n);
    if (bad.length) check.wrong = bad.map(([t, n]) => `${t}: ${got[t]} rows, inserted ${n}`).join('; ');
    return check;
  }
  /**
   * Insert rows: each sample on a fresh database (go-sqlite-bench makes one; we take p50 of a few),
   * the trailing work of the writes (seal, flush, snapshot / checkpoint) timed inside the sample.
   * @template T
   * @param {RowParams} p @param {() => Promise<T>} f
   */
  async function freshSamples(p, f) {
    const out = [];
    /** @type {T | undefined} */
    let last;
    let trailingMs = 0;
    for (let i = 0; i < Math.max(1, p.samples); i++) {
      await freshRelational();
      const t0 = now();
      last = await f();
      const t1 = now();
      await s.optional('settle');
      const t2 = now();
      trailingMs = t2 - t1;
      out.push(t2 - t0);
    }
    return { samples: out, k: 1, warmupSamples: 0, last, trailingMs };
  }
  /** @param {string} [variant] */
  const relNote = (variant = 'standard') => (variant === 'tuned' ? s.adapter.rel?.tunedNote : null) ?? s.adapter.rel?.note ?? '';
  /** @param {RowParams} p */
  const sizes = (p) => /** @type {import('../harness.js').RelationalSizes} */ (p.rel);

  /** @type {Record<string, (p: RowParams) => Promise<RowResult>>} */
  const rows = {
    async 'rel-simple-insert'(p) {
      const users = relUsers(sizes(p).simpleUsers);
      const m = await freshSamples(p, () => relCall('insert', 'users', users));
      s.relLoaded = 'simple';
      return { ...m, check: await checkCounts({ users: users.length }), note: `${users.length.toLocaleString('en-US')} users in one transaction; fresh database per sample; ${relNote()}` };
    },
    async 'rel-simple-query'(p) {
      const n = sizes(p).simpleUsers;
      if (s.relLoaded !== 'simple') {
        await freshRelational();
        await relCall('insert', 'users', relUsers(n));
        s.relLoaded = 'simple';
      }
      /** @type {User[]} */
      let last = [];
      const m = await repeat(p, () => settle(relCall('allUsers'), (x) => { last = x; }));
      /** @type {Record<string, unknown>} */
      const check = { returned: last.length };
      const wrong = checkUsers(last, n);
      if (wrong) check.wrong = wrong;
      return { ...m, check, note: `${n.toLocaleString('en-US')} users` };
    },
    async 'rel-real-insert'(p) {
      const t = relTree(sizes(p).real);
      const { articles: A, comments: C } = sizes(p).real;
      /** @type {[User, Article[], Comment[]][]} */
      const parts = t.users.map((u, i) => [u, t.articles.slice(i * A, (i + 1) * A), t.comments.slice(i * A * C, (i + 1) * A * C)]);
      const m = await freshSamples(p, async () => {
        for (const [u, a, c] of parts) {
          const r = relCall('insertUserTree', u, a, c);
          if (isThenable(r)) await r;
        }
      });
      s.relLoaded = 'real:standard';
      return { ...m, check: await checkCounts({ users: t.users.length, articles: t.articles.length, comments: t.comments.length }), note: `${t.users.length} transactions of 1 user + ${A} articles + ${A * C} comments; fresh database per sample` };
    },
    async 'rel-real-query'(p) {
      return realQuery(p, 'standard');
    },
  };
  /** @param {RowParams} p @param {string} variant */
  async function realQuery(p, variant) {
    const { users: U, articles: A, comments: C } = sizes(p).real;
    if (s.relLoaded !== `real:${variant}`) {
      await freshRelational(variant);
      const t = relTree(sizes(p).real);
      for (let u = 0; u < U; u++) await relCall('insertUserTree', t.users[u], t.articles.slice(u * A, (u + 1) * A), t.comments.slice(u * A * C, (u + 1) * A * C));
      s.relLoaded = `real:${variant}`;
    }
    let wrong = 0;
    let comments = 0;
    const m = await repeat(p, async () => {
      wrong = 0;
      comments = 0;
      for (let u = 1; u <= U; u++) {
        let r = relCall('userTree', email(u));
        if (isThenable(r)) r = await r;
        const joined = /** @type {Joined} */ (/** @type {unknown} */ (r));
        wrong += checkJoined(joined, 1, A, A * C);
        if (joined.users[0]?.email !== email(u)) wrong++;
        comments += joined.comments.length;
      }
    });
    /** @type {Record<string, unknown>} */
    const check = { comments };
    if (wrong) check.wrong = wrong;
    return { ...m, check, note: `${U} users, each: find by email + its ${A} articles + their ${A * C} comments; ${relNote(variant)}` };
  }
  Object.assign(rows, {
    async 'rel-complex-insert'(p) {
      const t = relTree(sizes(p).complex, (u) => u % 2 === 0);
      const m = await freshSamples(p, async () => {
        let commits = 0;
        for (const table of /** @type {const} */ (['users', 'articles', 'comments'])) {
          const r = await relCall('insert', table, t[table]);
          commits += r?.commits ?? 1;
        }
        return commits;
      });
      s.relLoaded = 'complex:standard';
      const commits = m.last ?? 0;
      return { ...m, check: await checkCounts({ users: t.users.length, articles: t.articles.length, comments: t.comments.length }), note: `${t.users.length} users, ${t.articles.length.toLocaleString('en-US')} articles, ${t.comments.length.toLocaleString('en-US')} comments in 3 transactions${commits > 3 ? ` (${commits} commits)` : ''}; fresh database per sample` };
    },
    async 'rel-complex-query'(p) {
      return complexQuery(p, 'standard');
    },
    'rel-real-query-tuned': (p) => realQuery(p, 'tuned'),
    'rel-complex-query-tuned': (p) => complexQuery(p, 'tuned'),
  });
  /** @param {RowParams} p @param {string} variant */
  async function complexQuery(p, variant) {
    const { users: U, articles: A, comments: C } = sizes(p).complex;
    if (s.relLoaded !== `complex:${variant}`) {
      await freshRelational(variant);
      const t = relTree(sizes(p).complex, (u) => u % 2 === 0);
      for (const table of /** @type {const} */ (['users', 'articles', 'comments'])) await relCall('insert', table, t[table]);
      s.relLoaded = `complex:${variant}`;
    }
    /** @type {Joined} */
    let r = { users: [], articles: [], comments: [] };
    const m = await repeat(p, () => settle(relCall('allJoined'), (x) => { r = x; }));
    /** @type {Record<string, unknown>} */
    const check = { users: r.users.length, articles: r.articles.length, comments: r.comments.length };
    const wrong = checkJoined(r, U, U * A, U * A * C) + r.users.filter((u) => u.active !== (u.id % 2 === 0)).length;
    if (wrong) check.wrong = wrong;
    return { ...m, check, note: `${(U * A * C).toLocaleString('en-US')} comments under ${(U * A).toLocaleString('en-US')} articles under ${U} users; ${relNote(variant)}` };
  }
  for (const users of [10, 100, 1000]) {
    rows[`rel-many-${users}`] = async (p) => {
      await freshRelational();
      await relCall('insert', 'users', relUsers(users));
      const total = sizes(p).manyQueries;
      const per = Math.max(1, Math.ceil(total / p.samples));
      /** @type {User[]} */
      let last = [];
      const m = await repeat({ ...p, warmup: p.warmup ?? 1 }, async () => {
        for (let i = 0; i < per; i++) {
          let x = relCall('allUsers');
          if (isThenable(x)) x = await x;
          last = /** @type {User[]} */ (/** @type {unknown} */ (x));
        }
      });
      m.samples = m.samples.map((ms) => ms / per);
      m.k = per;
      /** @type {Record<string, unknown>} */
      const check = { returned: last.length };
      const wrong = checkUsers(last, users);
      if (wrong) check.wrong = wrong;
      return { ...m, check, note: `${users} users; ${per * p.samples} timed queries (${per} per sample), per query` };
    };
  }
  for (const row of ROWS.filter((r) => r.largeBytes)) {
    const size = /** @type {number} */ (row.largeBytes);
    const insert = row.id.endsWith('-insert');
    /** @param {RowParams} p */
    const load = async (p) => {
      await freshRelational();
      // One shared string: the engines copy it per row, the page's memory does not grow with L.
      const text = 'a'.repeat(size);
      const users = relUsers(sizes(p).largeRows, () => text);
      const t0 = now();
      const r = await relCall('insert', 'users', users);
      await s.optional('settle');
      const ms = now() - t0;
      s.relLoaded = `large-${size}`;
      return { ms, commits: r?.commits ?? 1, check: await checkCounts({ users: users.length }) };
    };
    rows[row.id] = insert
      ? async (p) => {
        const { ms, commits, check } = await load(p);
        const L = sizes(p).largeRows;
        return { samples: [ms], k: 1, warmupSamples: 0, check, note: `${L.toLocaleString('en-US')} users × ${size.toLocaleString('en-US')} characters (${((L * size) / 1e6).toFixed(0)} MB) in one transaction${commits > 1 ? `, ${commits} commits` : ''}; trailing work (seal, flush, snapshot / checkpoint) included` };
      }
      : async (p) => {
        if (s.relLoaded !== `large-${size}`) await load(p);
        const L = sizes(p).largeRows;
        // Past 400 MB one result cannot hold them (a JS string, wasm memory): every engine
        // visits the rows and drops them, as go-sqlite-bench's rows.Next() loop does.
        if (L * size > 400e6) {
          /** @type {{returned: number, wrong: number}} */
          let got = { returned: 0, wrong: 0 };
          const m = await repeat(p, () => settle(relCall('scanUsers', size), (x) => { got = x; }));
          /** @type {Record<string, unknown>} */
          const check = { returned: got.returned };
          const wrong = got.wrong + (got.returned === L ? 0 : 1);
          if (wrong) check.wrong = wrong;
          return { ...m, check, note: `${L.toLocaleString('en-US')} users × ${size.toLocaleString('en-US')} characters, visited in id order and dropped (ibexdb: pages of 100)` };
        }
        /** @type {User[]} */
        let last = [];
        const m = await repeat(p, () => settle(relCall('allUsers'), (x) => { last = x; }));
        /** @type {Record<string, unknown>} */
        const check = { returned: last.length };
        const wrong = checkUsers(last, L, size);
        if (wrong) check.wrong = wrong;
        return { ...m, check, note: `${L.toLocaleString('en-US')} users × ${size.toLocaleString('en-US')} characters` };
      };
  }
  return rows;
}
