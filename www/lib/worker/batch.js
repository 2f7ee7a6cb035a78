// Batches in the worker that owns the files: every op of a batch is applied in order (an error
// fails only its op); with 'flush' durability a batch that wrote is flushed once, before any
// result is sent (group commit). A panic fails only the op that caused it: the engine is reopened
// from OPFS in a fresh wasm instance and the rest of the batch runs again (none of it had been
// acknowledged). A failed flush fails every write of the batch and reopens the engine, so memory
// goes back to what is on disk.

import { PanicError, toWire } from '../errors.js';
import { HostCrypto } from './crypto.js';
import { verifyRepository } from './verify.js';

/** @typedef {import('../worker.js').Runtime} Runtime */
/** @typedef {import('../worker.js').Op} Op */
/** @typedef {import('../worker.js').Result} Result */

/** Ops that write: a batch holding one is flushed (durability 'flush') and arms maintenance. */
const WRITES = new Set(['put', 'update', 'delete', 'txn', 'receive', 'grant', 'revoke', 'setPublic']);

/** After so many panics of its group-commit flush, a batch fails instead of running again. */
const MAX_FLUSH_RETRIES = 2;

export class Batches {
  /**
   * @param {Runtime} rt
   * @param {object} parts
   * @param {import('./live.js').LiveQueries} parts.live
   * @param {import('./sync.js').SyncManager} parts.sync
   * @param {import('./maintenance.js').Maintenance} parts.maintenance
   * @param {() => Promise<void>} parts.recover reopen the engine after a panic or a failed flush
   */
  constructor(rt, { live, sync, maintenance, recover }) {
    this.rt = rt;
    this.live = live;
    this.sync = sync;
    this.maintenance = maintenance;
    this.recover = recover;
    /** WebCrypto for verify()'s seal signatures (./verify.js); null where it is missing. */
    this.crypto = HostCrypto.available() ? new HostCrypto() : null;
  }

  /**
   * Apply a batch and group-commit it.
   * @param {Op[]} ops
   * @param {'flush' | 'relaxed'} durability
   * @param {string} origin 'local' (this worker's page) or the client worker that sent it
   * @returns {Promise<[Result[], string | undefined]>} the results, and the live changes they made (JSON text)
   */
  async run(ops, durability, origin) {
    /** @type {Result[]} */
    const results = new Array(ops.length);
    const failed = new Set();
    for (let round = 0; ; round++) {
      let panicAt = -1;
      let wrote = false;
      for (let i = 0; i < ops.length; i++) {
        if (failed.has(i)) continue;
        const [seq, op, ...args] = ops[i];
        try {
          const out = this.exec(op, args, origin);
          // verify() awaits WebCrypto; the work chain stays held, so nothing runs in between.
          results[i] = [seq, 1, out instanceof Promise ? await out : out];
          if (WRITES.has(op)) wrote = true;
        } catch (e) {
          results[i] = [seq, 0, toWire(e)];
          if (e instanceof PanicError) {
            panicAt = i;
            break;
          }
        }
      }
      if (panicAt < 0 && wrote && durability === 'flush') {
        try {
          this.rt.owned().flush();
        } catch (e) {
          if (!(e instanceof PanicError) || round > MAX_FLUSH_RETRIES) {
            // Not durable: none of this batch's writes is acknowledged.
            for (let i = 0; i < ops.length; i++) {
              if (WRITES.has(ops[i][1]) && results[i][1] === 1) results[i] = [ops[i][0], 0, toWire(e)];
            }
            await this._recover(ops, results);
            return [results, undefined];
          }
          panicAt = ops.length; // the flush itself trapped: run the whole batch again
        }
      }
      if (panicAt >= 0) {
        if (panicAt < ops.length) failed.add(panicAt);
        if (!(await this._recover(ops, results))) return [results, undefined];
        continue;
      }
      if (wrote) {
        this.maintenance.schedule();
        this.sync.nudge();
      }
      let changes;
      try {
        changes = this.live.take();
      } catch {
        changes = undefined;
      }
      return [results, changes];
    }
  }

  /**
   * Reopen the engine after a panic. If that fails too (the wasm or its glue cannot be loaded
   * again: offline, or a deploy removed the files), every op of the batch fails with that error
   * (the panic included) rather than waiting forever; later calls try again.
   * @param {Op[]} ops
   * @param {Result[]} results
   * @returns {Promise<boolean>} whether the engine is back
   */
  async _recover(ops, results) {
    try {
      await this.recover();
      return true;
    } catch (e) {
      const error = toWire(e);
      for (let i = 0; i < ops.length; i++) results[i] = [ops[i][0], 0, error];
      return false;
    }
  }

  /**
   * Run one op on the engine: synchronously, except `verify` (a promise: WebCrypto checks the
   * seal signatures). Values, queries and results are JSON text.
   * @param {string} op
   * @param {any[]} a its arguments
   * @param {string} origin
   * @returns {unknown} the result's payload
   */
  exec(op, a, origin) {
    const engine = this.rt.owned();
    switch (op) {
      case 'get':
        return engine.getJson(a[0]);
      case 'getMany':
        return engine.getManyJson(a[0]);
      case 'put':
        return engine.putJson(a[0], a[1]);
      case 'update':
        return engine.updateJson(a[0], a[1]);
      case 'delete':
        return engine.delete(a[0]);
      case 'txn':
        return engine.transaction(a[0]);
      case 'query':
        return engine.queryJson(a[0]);
      case 'explain':
        return engine.explainJson(a[0]);
      case 'count':
        return engine.countJson(a[0], a[1]);
      case 'keys':
        return engine.keysJson(a[0]);
      case 'aggregate':
        return engine.aggregateJson(a[0]);
      case 'history':
        return engine.historyJson(a[0]);
      case 'defineSchema':
        return engine.defineSchemaJson(a[0], a[1]);
      case 'subscribe':
        return this.live.subscribe(origin, a[0], a[1]);
      case 'unsubscribe':
        return this.live.unsubscribe(origin, a[0]);
      case 'flush':
        return engine.flush();
      case 'verify':
        return verifyRepository(engine, this.crypto).then((r) => JSON.stringify(r));
      case 'stats':
        return engine.statsJson();
      case 'identity':
        return { identity: engine.identity, trusted: engine.trusted };
      case 'exportIdentity':
        return engine.exportIdentity();
      case 'export':
        return engine.exportBundle();
      case 'receive':
        return engine.receiveBundleJson(a[0]);
      case 'grant':
        return engine.grant(a[0], a[1]);
      case 'revoke':
        return engine.revoke(a[0]);
      case 'setPublic':
        return engine.setPublic(a[0], a[1]);
      case 'members':
        return engine.membersJson();
      case 'sync':
        // null stops; a URL or a list starts (or keeps) sync with those servers; undefined: the current one(s).
        if (a[0] === null) this.sync.stop().catch(() => {});
        else if (a[0] !== undefined) this.sync.start(a[0]);
        else this.sync.retryRefused();
        return JSON.stringify(this.sync.status());
      case 'syncStatus':
        return JSON.stringify(this.sync.status());
      case 'debugPanic':
        return engine.panicForTest(a[0]);
      default:
        throw new TypeError(`unknown operation ${op}`);
    }
  }
}
