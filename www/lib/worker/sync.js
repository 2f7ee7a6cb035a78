// Sync from the worker that owns the repository: one WebSocket to an ibexdb-server, driven by
// the core's sync client inside the wasm engine (EngineHandle.syncStart/syncConnect/syncHandle/
// syncOutgoing of ../engine.js; protocol in docs/design.md §12).
//
// - Every engine call runs on the worker's work chain (`hooks.run`), between batches.
// - Received commits are verified and applied by the engine; `hooks.afterReceive` flushes them
//   (group commit with the next batch) and delivers live-query changes to the pages.
// - Local writes call `nudge()`: the sync client seals unsealed commits (a signed commit never
//   travels without its seal) and pushes what the server has not acknowledged.
// - The socket reconnects with exponential backoff (policy.js RECONNECT_MIN_MS doubling up to
//   RECONNECT_MAX_MS, reset once the server's Hello arrives), resuming from the cursor.
// - The cursor lives in memory: a new worker (page reload) starts from 0 and the server
//   resends everything (received as duplicates). After an engine panic the wasm instance is
//   new; the client is re-created from cursor 0 (what was not flushed is gone with the old
//   instance) and the socket reconnects.

import { RECONNECT_MAX_MS, RECONNECT_MIN_MS, isSyncUrl } from '../policy.js';

/**
 * @typedef {object} SyncHooks
 * @property {string} name repository name (also the name on the server)
 * @property {() => import('../engine.js').EngineHandle | null} engine the open engine (or null)
 * @property {(f: () => any) => Promise<any>} run run `f` on the worker's work chain
 * @property {() => void} afterReceive received commits were applied
 * @property {() => void} afterPush local commits were sealed and pushed
 */

export class SyncManager {
  /** @param {SyncHooks} hooks */
  constructor(hooks) {
    this.hooks = hooks;
    /** @type {string | null} */
    this.url = null;
    /** @type {WebSocket | null} */
    this.ws = null;
    /** @type {import('../ibexdb.js').SyncStatus['state']} */
    this.state = 'off';
    this.cursor = 0;
    this.pushFrom = 0;
    /** @type {number | null} */
    this.serverHead = null;
    /** @type {import('../ibexdb.js').SyncStatus['lastError']} */
    this.lastError = null;
    this.connects = 0;
    this.received = 0;
    this.pushed = 0;
    this.acked = 0;
    /** The engine generation (EngineHandle.generation) whose sync client this state belongs to. */
    this._generation = 0;
    this._delay = RECONNECT_MIN_MS;
    /** @type {ReturnType<typeof setTimeout> | 0} */
    this._timer = 0;
  }

  /** Start (or move to another server). @param {unknown} url */
  start(url) {
    if (!isSyncUrl(url)) {
      throw new TypeError(`sync needs a ws:// or wss:// URL, got ${JSON.stringify(url)}`);
    }
    if (this.url !== url) {
      this.cursor = 0;
      this.pushFrom = 0;
      this._generation = 0;
    }
    this.url = url;
    this._drop();
    this._connect();
  }

  stop() {
    this.url = null;
    this.state = 'off';
    clearTimeout(this._timer);
    this._drop();
  }

  /** @returns {import('../ibexdb.js').SyncStatus} */
  status() {
    return {
      state: this.state,
      url: this.url,
      cursor: this.cursor,
      pushFrom: this.pushFrom,
      serverHead: this.serverHead,
      connects: this.connects,
      received: this.received,
      pushed: this.pushed,
      acked: this.acked,
      lastError: this.lastError,
    };
  }

  /** Local commits were written: push them (on the work chain, after the current batch). */
  nudge() {
    if (this.state !== 'connected') return;
    this.hooks.run(() => this._push()).catch((e) => this._fail(e));
  }

  // ----- internals ----------------------------------------------------------------------

  /** The engine, with a sync client for this connection's state. */
  _engine() {
    const engine = this.hooks.engine();
    if (!engine || engine.generation === 0) throw new Error('the repository is not open');
    if (this._generation !== engine.generation) {
      // A new wasm instance (first start, or reopened from OPFS after a panic) starts from 0/0:
      // received commits not yet flushed were lost with the old instance, so the old cursor
      // may claim commits this engine does not have. The server resends; duplicates are cheap.
      this.cursor = 0;
      this.pushFrom = 0;
      engine.syncStart(this.hooks.name, 0, 0);
      this._generation = engine.generation;
    }
    return engine;
  }

  _drop() {
    const ws = this.ws;
    this.ws = null;
    if (ws) {
      ws.onopen = ws.onmessage = ws.onclose = ws.onerror = null;
      try {
        ws.close();
      } catch {
        // already closed
      }
    }
  }

  _connect() {
    if (!this.url) return;
    clearTimeout(this._timer);
    this.state = 'connecting';
    this.connects++;
    let ws;
    try {
      ws = new WebSocket(this.url);
    } catch (e) {
      this._fail(e);
      return;
    }
    ws.binaryType = 'arraybuffer';
    this.ws = ws;
    ws.onopen = () =>
      this.hooks
        .run(() => {
          if (this.ws !== ws) return;
          ws.send(this._engine().syncConnect());
        })
        .catch((e) => this._fail(e));
    ws.onmessage = (ev) => {
      const bytes = new Uint8Array(ev.data);
      this.hooks.run(() => this._onMessage(ws, bytes)).catch((e) => this._fail(e));
    };
    ws.onclose = () => {
      if (this.ws === ws) this._retry();
    };
    ws.onerror = () => {};
  }

  /** @param {WebSocket} ws the connection it came on @param {Uint8Array} bytes */
  _onMessage(ws, bytes) {
    if (this.ws !== ws || this._reopened()) return;
    const ev = this._engine().syncHandle(bytes);
    this.cursor = ev.cursor;
    this.pushFrom = ev.pushFrom;
    switch (ev.event) {
      case 'welcome':
        this.state = 'connected';
        this.serverHead = ev.head ?? null;
        this.lastError = null;
        this._delay = RECONNECT_MIN_MS;
        break;
      case 'received':
        this.received += ev.applied ?? 0;
        this.serverHead = Math.max(this.serverHead ?? 0, ev.cursor);
        if ((ev.applied ?? 0) > 0) this.hooks.afterReceive();
        break;
      case 'acked':
        this.acked += ev.count ?? 0;
        break;
      case 'error':
        this.lastError = { code: ev.code, message: ev.message ?? '' };
        break;
      default:
    }
    this._push();
  }

  /**
   * The engine was reopened (after a panic) since this connection's Hello: its sync client is
   * new and not welcomed, so start a new connection (resuming from the cursor). True if so.
   */
  _reopened() {
    if (this._generation === this.hooks.engine()?.generation) return false;
    this._drop();
    this._connect();
    return true;
  }

  _push() {
    if (this.state !== 'connected' || !this.ws || this.ws.readyState !== WebSocket.OPEN) return;
    if (this._reopened()) return;
    const engine = this._engine();
    let sent = 0;
    for (;;) {
      const m = engine.syncOutgoing();
      if (!m) break;
      this.ws.send(m);
      sent++;
    }
    if (sent > 0) {
      this.pushed += sent;
      this.hooks.afterPush();
    }
  }

  /** @param {any} e */
  _fail(e) {
    this.lastError = { name: e?.name ?? 'Error', message: String(e?.message ?? e) };
    this._drop();
    this._retry();
  }

  _retry() {
    this.ws = null;
    if (!this.url) return;
    this.state = 'backoff';
    clearTimeout(this._timer);
    const delay = this._delay;
    this._delay = Math.min(this._delay * 2, RECONNECT_MAX_MS);
    this._timer = setTimeout(() => this._connect(), delay);
  }
}
