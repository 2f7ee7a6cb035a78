// Background work of the worker that owns the files, on timers: the relaxed flush and the seal
// (+ flush + snapshot check) of policy.js's maintenance schedule. Deadlines are armed after every
// batch that wrote (and after sync received or pushed commits); one timer is set for the
// earliest, and the work runs on the work chain, between batches. Failures are reported to the
// page and tried again later (the frames stay buffered).

import { PanicError, toWire } from '../errors.js';
import { MAINTENANCE_RETRY_MS, armMaintenance, idleMaintenance, nextDeadline, runMaintenance } from '../policy.js';

/** @typedef {import('../worker.js').Runtime} Runtime */

export class Maintenance {
  /**
   * @param {Runtime} rt
   * @param {{recover: () => Promise<void>}} hooks `recover` reopens the engine after a panic
   */
  constructor(rt, hooks) {
    this.rt = rt;
    this.hooks = hooks;
    /** @type {import('../policy.js').Maintenance} */
    this.deadlines = idleMaintenance();
    /** @type {ReturnType<typeof setTimeout> | 0} */
    this.timer = 0;
    /** The deadline the timer is set for. */
    this.timerAt = 0;
    /** A run waits on the work chain (the timer is set again after it). */
    this.queued = false;
  }

  /** After work that may have left writes unflushed or commits unsealed. */
  schedule() {
    const engine = this.rt.engine;
    if (!engine || engine.dead) return;
    armMaintenance(this.deadlines, engine, performance.now());
    this._setTimer();
  }

  /** Forget what is pending (the engine was reopened, or is closing). */
  cancel() {
    clearTimeout(this.timer);
    this.timer = 0;
    this.deadlines = idleMaintenance();
  }

  /** The page is going away (pagehide): seal and flush now, best effort. */
  flushNow() {
    return this._background((engine) => {
      if (engine.seal() > 0 || engine.hasUnflushed()) engine.flush();
    });
  }

  _setTimer() {
    const at = nextDeadline(this.deadlines);
    if (at === 0 || this.queued || (this.timer && this.timerAt <= at)) return;
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => {
      this.timer = 0;
      this.queued = true;
      this.rt
        // A timer may fire a little before its deadline on the performance.now() clock.
        .run(() => this._background((engine) => runMaintenance(this.deadlines, engine, Math.max(performance.now(), at))))
        .finally(() => {
          this.queued = false;
          this._setTimer();
        });
    }, Math.max(0, at - performance.now()));
  }

  /**
   * Run timer work on the engine if this worker still owns it; a failure is reported to the page
   * and the work armed again later.
   * @param {(engine: import('../engine.js').EngineHandle) => void} f
   */
  async _background(f) {
    const engine = this.rt.engine;
    if (!this.rt.isOwner() || !engine) return;
    try {
      f(engine);
    } catch (e) {
      // A panic, or a backend whose earlier flush failed (IndexedDB): reopen from what is durable.
      if (e instanceof PanicError || engine.broken) await this.hooks.recover();
      this.rt.post({ type: 'background-error', error: toWire(e) });
      if (!engine.dead) setTimeout(() => this.schedule(), MAINTENANCE_RETRY_MS);
    }
  }
}
