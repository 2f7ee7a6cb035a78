// Live queries in the worker that owns the files: the engine holds them (one live id each) for
// this worker's page ('local') and for the pages of client tabs (origin = the client worker's id).
// Their changes reach the pages tagged with an epoch that names the engine instance; after a
// panic the engine is new, every live query is subscribed again under a new epoch and each page
// gets a reset with fresh rows (pages drop changes of another epoch).

import { toWire } from '../errors.js';

/** @typedef {import('../worker.js').Runtime} Runtime */
/** @typedef {import('../worker.js').WireError} WireError */

/**
 * One live query the engine holds for a page.
 * @typedef {object} Sub
 * @property {string} origin 'local' (this worker's page) or a client worker's id
 * @property {number} subId the page's id for it
 * @property {string} q the query as JSON text
 * @property {number} liveId the engine's id for it (-1 until subscribed)
 */

/**
 * What a page gets for a live query: `[epoch, liveId, rowsJson]`, or with an error
 * `[epoch, -1, null, error]`.
 * @typedef {[string, number, import('../codec.js').EngineText | null] | [string, number, null, WireError]} SubReply
 */

export class LiveQueries {
  /** @param {Runtime} rt */
  constructor(rt) {
    this.rt = rt;
    /** @type {Map<string, Sub>} `${origin}|${subId}` -> its live query */
    this.subs = new Map();
    /** How many of `subs` belong to client tabs (their changes go out on the channel). */
    this.remote = 0;
    /** The engine instance the live ids belong to: `${worker id}:${n}`. */
    this.epoch = '';
    this._epochs = 0;
  }

  /** A new engine instance (opened, or reopened after a panic): changes carry a new epoch. */
  newEpoch() {
    this.epoch = `${this.rt.id}:${++this._epochs}`;
  }

  /**
   * Subscribe (or re-subscribe) a page's live query.
   * @param {string} origin @param {number} subId @param {string} q
   * @returns {SubReply}
   */
  subscribe(origin, subId, q) {
    const engine = this.rt.owned();
    const key = `${origin}|${subId}`;
    const old = this.subs.get(key);
    if (old) {
      engine.unsubscribe(old.liveId);
      this._delete(key, old);
    }
    const { id: liveId, rowsJson } = engine.subscribeJson(q);
    this._add({ origin, subId, q, liveId });
    return [this.epoch, liveId, rowsJson];
  }

  /**
   * @param {string} origin @param {number} subId
   * @returns {boolean} whether it existed
   */
  unsubscribe(origin, subId) {
    const key = `${origin}|${subId}`;
    const s = this.subs.get(key);
    if (!s) return false;
    this._delete(key, s);
    return this.rt.owned().unsubscribe(s.liveId);
  }

  /** A client tab is gone: drop its live queries. @param {string} origin */
  dropOrigin(origin) {
    for (const s of [...this.subs.values()]) if (s.origin === origin) this.unsubscribe(origin, s.subId);
  }

  /**
   * Take over live queries another engine held (this page's, after this worker became the
   * owner); `renew()` subscribes them.
   * @param {string} origin @param {Iterable<[number, string]>} queries subId -> query JSON
   */
  adopt(origin, queries) {
    for (const [subId, q] of queries) this._add({ origin, subId, q, liveId: -1 });
  }

  /** New engine instance: new epoch, subscribe every live query again, send each page its resets. */
  renew() {
    this.newEpoch();
    const all = [...this.subs.values()];
    this.subs.clear();
    this.remote = 0;
    /** @type {Map<string, [number, ...SubReply][]>} */
    const resets = new Map();
    for (const s of all) {
      /** @type {SubReply} */
      let r;
      try {
        r = this.subscribe(s.origin, s.subId, s.q);
      } catch (e) {
        r = [this.epoch, -1, null, toWire(e)];
      }
      let list = resets.get(s.origin);
      if (!list) resets.set(s.origin, (list = []));
      list.push([s.subId, ...r]);
    }
    for (const [origin, list] of resets) {
      if (origin === 'local') this.rt.post({ type: 'live', epoch: this.epoch, resets: list });
      else this.rt.broadcast({ type: 'live', to: origin, epoch: this.epoch, resets: list });
    }
  }

  /** @returns {import('../codec.js').EngineText | undefined} the changes since the last call (JSON text), if any live query exists */
  take() {
    return this.subs.size > 0 ? this.rt.owned().takeLiveChanges() : undefined;
  }

  /** Whether this worker's page holds live queries. */
  hasLocal() {
    return this.subs.size > this.remote;
  }

  /** Send changes to the client tabs, if they hold live queries. @param {import('../codec.js').EngineText} changes */
  broadcast(changes) {
    if (this.remote > 0) this.rt.broadcast({ type: 'live', epoch: this.epoch, changes });
  }

  /**
   * Send changes made outside this page's batches (commits received by sync, a client's
   * request) to every page that holds live queries.
   * @param {import('../codec.js').EngineText | undefined} changes
   */
  deliver(changes) {
    if (!changes) return;
    this.broadcast(changes);
    if (this.hasLocal()) this.rt.post({ type: 'live', epoch: this.epoch, changes });
  }

  /** @param {Sub} s */
  _add(s) {
    this.subs.set(`${s.origin}|${s.subId}`, s);
    if (s.origin !== 'local') this.remote++;
  }

  /** @param {string} key @param {Sub} s */
  _delete(key, s) {
    this.subs.delete(key);
    if (s.origin !== 'local') this.remote--;
  }
}
