// Batches in the worker that owns the files: every op of a batch is applied in order (an error
// fails only its op); with 'flush' durability a batch that wrote is flushed once, before any
// result is sent (group commit). A panic fails only the op that caused it: the engine is reopened
// from OPFS in a fresh wasm instance and the rest of the batch runs again (none of it had been
// acknowledged). A failed flush fails every write of the batch and reopens the engine, so memory
// goes back to what is on disk. A batch is acknowledged when its flush is durable: at once with
// OPFS, when the transaction completed with IndexedDB (`engine.durable()`, storage.js).

import { PanicError, ProtocolError, toWire } from '../errors.js';
import { HostCrypto } from './crypto.js';
import { OPS, isOp } from './ops.js';

/** @typedef {import('../worker.js').Runtime} Runtime */
/** @typedef {import('../worker.js').Op} Op */
/** @typedef {import('../worker.js').Result} Result */

/** Whether op `name` writes (ops.js): a batch holding one is flushed and arms maintenance. @param {string} name */
const writes = (name) => isOp(name) && !!OPS[name].write;

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
    // Its helper thread is started by the page (worker.js passes the page's answer on).
    this.crypto = HostCrypto.available() ? new HostCrypto(() => rt.post({ type: 'verify-thread' })) : null;
  }

  /**
   * Apply a batch and group-commit it.
   * @param {Op[]} ops
   * @param {'flush' | 'relaxed'} durability
   * @param {string} origin 'local' (this worker's page) or the client worker that sent it
   * @returns {Promise<[Result[], import('../codec.js').EngineText | undefined]>} the results, and the live changes they made (JSON text)
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
          results[i] = [seq, 1, out instanceof Promise ? await out : out];
          if (writes(op)) wrote = true;
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
          // IndexedDB: the flush's transaction completed (OPFS: resolved already).
          await this.rt.owned().durable();
        } catch (e) {
          if (!(e instanceof PanicError) || round > MAX_FLUSH_RETRIES) {
            // Not durable: none of this batch's writes is acknowledged.
            for (let i = 0; i < ops.length; i++) {
              if (writes(ops[i][1]) && results[i][1] === 1) results[i] = [ops[i][0], 0, toWire(e)];
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
   * Run one op of the table (ops.js) on the engine: synchronously, except `verify` (a promise:
   * WebCrypto checks the seal signatures).
   * @param {string} name
   * @param {any[]} args its arguments
   * @param {string} origin
   * @returns {unknown} the result's payload
   */
  exec(name, args, origin) {
    if (!isOp(name)) throw new ProtocolError(`unknown operation ${JSON.stringify(name)}`);
    const cx = { engine: this.rt.owned(), live: this.live, sync: this.sync, maintenance: this.maintenance, crypto: this.crypto, origin };
    return /** @type {(cx: import('./ops.js').OpContext, ...a: any[]) => unknown} */ (OPS[name].run)(cx, ...args);
  }
}
