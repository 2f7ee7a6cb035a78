// The [page] rows timed op by op (read by id, simple query and the write rows [page]), with every
// engine of a section measured in the same minutes: each engine's page client is open at once and
// the engines take turns, a block of operations each, in an order that rotates every round.
//
// Why interleaved: a page ↔ worker round trip on this machine switches between a fast and a slow
// mode (35–50 µs and 85–120 µs for a worker doing 10 µs of work) every few seconds or minutes, and
// both engines pay two transits per call. Measured one engine after the other, each engine caught
// the mode of its own minutes, and a ratio of two such rows measured the machine, not the engines.

import { itemId, makeItem, rng, updatedFields } from '../shared/model.js';
import { sampleSummary } from '../shared/stats.js';
import { pageClientClass } from './clients.js';
import { setStatus } from './status.js';

/** How many turns each engine gets in a row at most (the blocks are `samples / ROUNDS` operations). */
const ROUNDS = 20;

/**
 * Page-side operation generators per row: each returns an op descriptor {op, args, per?}. Every
 * engine gets the same sequence (one generator per engine, the same seed). The warm-up draws from
 * its own generators (another seed, new items named `page-warm-…`), so that a warm-up of another
 * length leaves the timed sequence the same for every engine.
 * @param {number} n @param {number} seed @param {any} plan @param {string} [prefix] new items' id prefix
 */
export function pageOpMakers(n, seed, plan, prefix = 'page-item-') {
  const pageRng = rng(seed ^ 0x5eed);
  let pageNew = 0;
  const nextNew = () => n + pageNew++;
  const batch = plan.rows['writes-batched']?.pageBatch ?? 100;
  const newItem = () => { const i = nextNew(); return { ...makeItem(i), id: `${prefix}${i}` }; };
  return {
    'read-by-id': () => ({ op: 'get', args: { id: itemId(pageRng.int(n)) } }),
    'simple-query': () => { const lo = pageRng.int(Math.max(1, n - 1000 + 1)); return { op: 'queryRange', args: { lo, hi: lo + 1000 } }; },
    'create-item': () => ({ op: 'put', args: { item: newItem() } }),
    'update-item': () => { const i = pageRng.int(n); return { op: 'update', args: { id: itemId(i), fields: updatedFields(i, 1_000_000 + nextNew()) } }; },
    'bulk-create-100': () => ({ op: 'putMany', args: { items: Array.from({ length: 100 }, newItem) } }),
    'writes-batched': () => ({ op: 'putConcurrent', per: batch, args: { items: Array.from({ length: batch }, newItem) } }),
  };
}

/** The rows whose page side is timed op by op here (the cold starts are timed in fresh pages). */
const PAGE_OP_ROWS = new Set(Object.keys(pageOpMakers(1, 0, { rows: {} })));

/** Whether `rowId`'s page side is timed op by op here. @param {string} rowId */
export const isPageOpRow = (rowId) => PAGE_OP_ROWS.has(rowId);

/**
 * What the page's reads must return: `get` the base item, `queryRange` the 1,000 items of the
 * range in order. Returns the number of wrong answers.
 * @param {{op: string, args: any}} m @param {any[]} got the answer as protocol items @param {number} n
 */
function wrongRead(m, got, n) {
  /** @param {any} it @param {number} i */
  const same = (it, i) => { const w = makeItem(i); return it && it.id === w.id && it.title === w.title && it.count === i && it.tags.length === 2 && w.tags.every((t) => it.tags.includes(t)); };
  if (m.op === 'get') return got.length === 1 && same(got[0], Number(m.args.id.slice(5))) ? 0 : 1;
  if (m.op === 'queryRange') return got.length === Math.min(m.args.hi, n) - m.args.lo && got.every((it, j) => same(it, m.args.lo + j)) ? 0 : 1;
  return 0;
}

/** What the page's writes wrote, id → fields (the last write of an id wins). @param {{op: string, args: any}[]} msgs */
function writtenBy(msgs) {
  const out = new Map();
  for (const m of msgs) {
    if (m.op === 'put') out.set(m.args.item.id, m.args.item);
    else if (m.op === 'update') out.set(m.args.id, m.args.fields);
    else if (m.op === 'putMany' || m.op === 'putConcurrent') for (const it of m.args.items) out.set(it.id, it);
  }
  return out;
}

/**
 * One engine's side of a [page] row: its page client, its operations and what it timed.
 * `owner` is the engine's run (run-engine.js EngineRun): its benchmark worker (`w`) gives the
 * files to the page client and reads the writes back; `pageApi` says how the page reaches it.
 */
class Side {
  /**
   * @param {any} owner @param {{timed: () => {op: string, args: any, per?: number}, warm: () => {op: string, args: any, per?: number}}} maker the row's operations, in order (timed), and the warm-up's
   * @param {number} samples timed operations @param {{ops: number, ms: number}} warm the warm-up: at least `ops` operations and `ms` ms
   * @param {boolean} write whether the row writes (its deferred work is paid inside each turn)
   */
  constructor(owner, maker, samples, warm, write) {
    this.owner = owner;
    this.maker = maker;
    this.samples = samples;
    this.warmRule = warm;
    this.write = write;
    /** @type {{op: string, args: any, per?: number}[]} every operation sent, the warm-up's first */
    this.msgs = [];
    /** warm-up operations done (discarded) */
    this.warm = 0;
    /** The engine's deferred work (ibexdb: the seal, the relaxed flush, a due snapshot; db.settle()), timed at the end of each turn of a write row. */
    this.settleMs = 0;
    this.settles = 0;
    /** @type {any[]} */
    this.answers = [];
    /** @type {number[]} */
    this.times = [];
    /** @type {any} the engine's page client (kept after close: it converts the answers for the checks) */
    this.client = null;
    this.isOpen = false;
    /** @type {number | undefined} */
    this.trailingMs = undefined;
    this.next = 0;
  }

  /**
   * Open the client and warm it up the same way for every engine: at least `warm.ops` operations
   * and `warm.ms` ms of them (JIT tier-up of the client, the worker and, for SQLite, its JS VFS
   * glue), then settle untimed (the warm-up's deferred work is not the timed operations' cost).
   */
  async open() {
    await this.owner.w.call({ type: 'release' });
    this.client = await pageClientClass(this.owner.engine).open(this.owner.engine);
    this.isOpen = true;
    await this.client.buildIndexes();
    const t0 = performance.now();
    while (this.warm < this.warmRule.ops || (performance.now() - t0 < this.warmRule.ms && this.warm < 10_000)) {
      const m = this.maker.warm();
      this.msgs.push(m);
      this.answers.push(await this.client.op(m));
      this.warm++;
    }
    this.next = this.warm;
    for (let i = 0; i < this.samples; i++) this.msgs.push(this.maker.timed());
    await this.client.settle();
  }

  /**
   * Time the next `count` operations, one awaited call each. A write row's turn ends with the
   * engine's deferred work (`settle()`), timed into the turn's last operation: it falls in this
   * engine's own turn, never in another's.
   * @param {number} count
   */
  async block(count) {
    const end = Math.min(this.msgs.length, this.next + count);
    for (; this.next < end; this.next++) {
      const m = this.msgs[this.next];
      const t0 = performance.now();
      const v = await this.client.op(m);
      const t1 = performance.now();
      this.answers.push(v);
      this.times.push((t1 - t0) / (m.per ?? 1));
    }
    if (this.write && this.times.length) {
      const t0 = performance.now();
      await this.client.settle();
      const ms = performance.now() - t0;
      this.settleMs += ms;
      this.settles++;
      this.times[this.times.length - 1] += ms / (this.msgs[this.msgs.length - 1].per ?? 1);
    }
  }

  get done() {
    return this.next >= this.msgs.length;
  }

  /** Close the client; a write row's close (seal, flush, snapshot / checkpoint) is timed into its last operation. @param {boolean} write */
  async close(write) {
    if (!this.isOpen) return;
    this.isOpen = false;
    const t0 = performance.now();
    await this.client.close();
    if (write) {
      this.trailingMs = performance.now() - t0;
      if (this.times.length) this.times[this.times.length - 1] += this.trailingMs / (this.msgs[this.msgs.length - 1].per ?? 1);
    }
  }

  /** Checks (untimed): every read answer; every write read back through the benchmark worker. @param {boolean} write @param {number} n */
  async check(write, n) {
    const wrongReads = this.msgs.reduce((bad, m, i) => bad + wrongRead(m, this.client.items(m.op, this.answers[i], m.args), n), 0);
    if (wrongReads) throw new Error(`wrong result on the page: ${wrongReads} of ${this.msgs.length} answers`);
    if (!write) return;
    const rb = (await this.owner.w.call({ type: 'check', items: [...writtenBy(this.msgs)] })).check;
    if (rb.wrong || rb.readBack !== rb.written) throw new Error(`wrong result on the page: read back ${rb.readBack} of ${rb.written} items written, ${rb.wrong ?? 0} different`);
  }
}

/**
 * Time one [page] row on every engine of `sides` in the same minutes: all clients open, then
 * rounds in which each engine runs a block of operations, the first engine of a round rotating.
 * Returns, per side, its summary or its error.
 * @param {Side[]} sides @param {boolean} write @param {number} n @param {number} samples
 */
async function interleave(sides, write, n, samples) {
  const per = Math.max(1, Math.ceil(samples / ROUNDS));
  /** @type {Map<Side, string>} */
  const failed = new Map();
  /** @param {Side} s @param {() => Promise<void>} f */
  const guard = async (s, f) => {
    if (failed.has(s)) return;
    try {
      await f();
    } catch (err) {
      failed.set(s, err.message);
      await s.close(false).catch(() => {});
    }
  };
  for (const s of sides) await guard(s, () => s.open());
  for (let round = 0; sides.some((s) => !s.done && !failed.has(s)); round++) {
    for (let j = 0; j < sides.length; j++) {
      const s = sides[(round + j) % sides.length];
      await guard(s, () => s.block(per));
    }
  }
  for (const s of sides) await guard(s, () => s.close(write));
  for (const s of sides) await guard(s, () => s.check(write, n));
  return { per, failed };
}

/**
 * The op-by-op [page] rows of one dataset section, every engine of `runs` interleaved (their
 * benchmark workers still hold the section's database). Fills each run's row entry: `page`,
 * `pageVia`, `pageInterleaved`, or records the error.
 * @param {any[]} runs the sections' EngineRuns (run-engine.js) that ran their worker rows
 * @param {string[]} rowIds @param {any} plan @param {number} n
 * @param {(run: any, rowId: string) => void} onRow
 */
export async function pageOpRows(runs, rowIds, plan, n, onRow) {
  for (const rowId of rowIds.filter(isPageOpRow)) {
    const live = runs.filter((r) => r.pageRowPending(rowId));
    if (!live.length) continue;
    const def = live[0].rowDef(rowId);
    const samples = live[0].planFor(rowId).pageSamples;
    // The same warm-up for every engine and every row, reads and writes alike.
    const warm = { ops: plan.pageWarmup ?? 1, ms: plan.warmupMs ?? 0 };
    setStatus(`[page] ${def.label}: ${live.map((r) => r.engine.id).join(', ')} interleaved`);
    const sides = live.map((r) => new Side(r, { timed: r.pageMakers[rowId], warm: r.warmMakers[rowId] }, samples, warm, !!def.write));
    const { per, failed } = await interleave(sides, !!def.write, n, samples);
    for (const s of sides) {
      const entry = s.owner.result.rows[rowId];
      const error = failed.get(s);
      if (error) {
        entry.error = `[page] ${error}`;
        s.owner.result.errors.push(`${rowId} [page]: ${error}`);
      } else {
        entry.page = sampleSummary(s.times, 1, { warmupSamples: s.warm, ...(s.trailingMs !== undefined ? { trailingMs: s.trailingMs } : {}), ...(s.settles ? { settleMs: s.settleMs, settles: s.settles } : {}) });
        entry.pageVia = s.owner.pageApi ? 'public API (www/ibexdb.js)' : 'lean page worker (workers/sqlite-page.js)';
        entry.pageInterleaved = `engines ${live.map((r) => r.engine.id).join(', ')} in turns of ${per} operation${per === 1 ? '' : 's'}`;
      }
      s.owner.pageRowDone(rowId);
      onRow(s.owner.result, rowId);
    }
  }
}
