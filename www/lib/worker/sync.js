// Sync from the worker that owns the repository: one WebSocket to an ibexdb-server, driven by
// the core's sync client inside the wasm engine (EngineHandle.syncStart/syncConnect/syncHandle/
// syncOutgoing of ../engine.js; protocol v2 in docs/design.md §12.2).
//
// - Every engine call runs on the worker's work chain (`hooks.run`), between batches.
// - A connection: the server sends a Challenge; the engine answers with a Hello signed by the
//   repository's identity (over the nonce, the URL as dialed, the protocol version, the
//   repository and the key); the server's Welcome carries its head and this session's rights;
//   then commits after our cursor, and live relays. No Welcome within HANDSHAKE_TIMEOUT_MS:
//   the connection is dropped and dialed again.
// - Received commits are verified and applied by the engine; `hooks.afterReceive` schedules their
//   flush and delivers live-query changes to the pages.
// - Local writes call `nudge()`: unsealed commits are sealed (a signed commit never travels
//   without its seal) and what the server has not acknowledged is pushed.
// - Seal signatures on this critical path use WebCrypto (./crypto.js: under 1 ms instead of
//   2-3 ms of P-384 in wasm): the push seals with a WebCrypto signature; a received message's
//   seals are verified before the engine receives it as vouched. Without WebCrypto the engine
//   does both. The verification starts when the message arrives, not when the work chain
//   reaches it: the chain no longer waits for WebCrypto between messages of a catch-up
//   (docs/benchmarks.md: 40-50 ms of waits for 100 seals gone; the verifying itself is still
//   done on this thread). That is sound: a signature's validity is a
//   function of the message's bytes alone (`syncSealChecks` is a static function of them: the
//   author key, the signed message and the signature come from the seal), and `vouched` skips
//   only those checks; everything that depends on state (ids, parents, whether the author may
//   write) is checked by `syncHandle` when the message is applied, in arrival order.
// - The position (cursor, pushFrom) is captured right after every engine flush, and after an
//   acknowledgement when nothing waits to be flushed (so it claims only what is durable), and
//   written to the repository's `sync` file SYNC_SAVE_MS later, on close and on pagehide; a
//   reload, a new tab or a takeover resumes from it. `start` reads it at once, before any
//   connection: `pushFrom` and `pending` (local commits the server has not acknowledged) are
//   true from the first status on, offline too.
// - Reconnection: backoff from RECONNECT_MIN_MS doubling to RECONNECT_MAX_MS, with jitter,
//   reset by a Welcome. With a list of URLs (the nodes of one deployment, docs/design.md §12.5)
//   every retry dials the next one: a failed dial, a dropped connection, an UnavailableError,
//   an AuthError (a node that does not know the URL it was dialed under) or a handshake
//   timeout moves on; a PermissionError at Hello does not (all nodes share the access list).
//   An UnavailableError from the server (it is shutting down, e.g. for a deploy, or cannot
//   serve the repository now) is no refusal: the connection is dropped and dialed again with
//   the usual backoff, and the state is `offline` meanwhile.
//   The nodes share sequence numbers, so the cursor and the push position carry over
//   (`syncSetUrl`); what was not acknowledged is pushed again, and the server stores a commit
//   it already has once. A server that refuses the session (PermissionError at Hello, AuthError)
//   is retried at RECONNECT_MAX_MS only; a push refused for lack of permission pauses pushing
//   (the engine resumes once a grant arrives), it is not retried in a loop.
// - Bearer tokens (`syncToken`, docs/design.md §12.4): `hooks.token()` is asked before every
//   dial and its answer goes only into that WebSocket (a subprotocol entry in the browser, an
//   Authorization header in Node: `hooks.dial`). A token that cannot be had (the app's function
//   threw, returned no string, did not answer) is reported like a refusal: state `error`,
//   asked again at RECONNECT_MAX_MS or at `db.sync()`. A session (welcomed, or waiting for a
//   grant) the server ends because its token expired (AuthError `token-expired`) is no
//   refusal: it is dialed again with the usual backoff, with a fresh token.
// - After an engine panic the wasm instance is new: the client is re-created from the last
//   durable position and the socket reconnects.
// - Attachment bytes (./attach-sync.js): their messages are handled as they arrive, off the
//   work chain; once every local commit is acknowledged, this device's attachment files are
//   offered to the server (`hooks.localAttachments`); `fetchAttachment` downloads one.

import { syncErrorToWire, toWire } from '../errors.js';
import { HostCrypto } from './crypto.js';
import { AttachmentSync } from './attach-sync.js';
import { TOKEN_PROTOCOL, TOKEN_PROTOCOL_PREFIX } from '../sync-token.js';
import { loadPosition, savePosition } from './sync-position.js';
import { HANDSHAKE_TIMEOUT_MS, WAITING_REDIAL_MS, RECONNECT_MAX_MS, RECONNECT_MIN_MS, SYNC_SAVE_MS, isSyncUrls, normalizeSyncUrls, reconnectWait, syncUrlsKey } from '../policy.js';

/** @typedef {import('../ibexdb.js').SyncStatus} SyncStatus */
/** @typedef {import('./sync-position.js').SyncPosition} SyncPosition */
/** @typedef {import('../errors.js').WireError} WireError */

/**
 * @typedef {object} SyncHooks
 * @property {string} name repository name (also the name on the server)
 * @property {() => import('../engine.js').EngineHandle | null} engine the open engine (or null)
 * @property {<T>(f: () => T | Promise<T>) => Promise<T>} run run `f` on the worker's work chain
 * @property {() => void} afterReceive received commits were applied
 * @property {() => void} afterPush local commits were sealed and pushed
 * @property {(status: SyncStatus) => void} onStatus the state, the URL or the last error changed
 * @property {() => Promise<string | null>} [token] the application's bearer token, asked for
 *   before every dial (absent, or null: no token); rejects with an AuthError (`token-unavailable`) when the app's
 *   `syncToken` fails
 * @property {() => Promise<Array<{hash: string, file: Blob}>>} [localAttachments] this device's
 *   attachment files that a visible item refers to (run on the work chain; absent: none)
 * @property {(url: string, token: string | null) => WebSocket} [dial] make the WebSocket
 *   (default: the global one, the token as the `ibexdb.bearer.TOKEN` subprotocol; Node sends
 *   an Authorization header instead)
 */

/**
 * A browser's WebSocket to `url`, offering the token as a subprotocol entry beside `ibexdb`
 * (a browser cannot set headers; the server answers `ibexdb` and never echoes the token).
 * @param {string} url @param {string | null} token
 */
export const dialWebSocket = (url, token) => (token === null ? new WebSocket(url) : new WebSocket(url, [TOKEN_PROTOCOL, TOKEN_PROTOCOL_PREFIX + token]));

export class SyncManager {
  /** @param {SyncHooks} hooks */
  constructor(hooks) {
    this.hooks = hooks;
    /** @type {string[] | null} the servers (normalized, the nodes of one deployment), null when sync is off */
    this.urls = null;
    /** @type {string | null} the one dialed now (of `urls`), null when sync is off */
    this.url = null;
    /** Its index in `urls`. */
    this._at = 0;
    /** @type {string | null} the list as one string: the `url` a saved position belongs to */
    this._key = null;
    /** @type {WebSocket | null} */
    this.ws = null;
    /** The socket is open (the handshake may still be under way). */
    this.open = false;
    /** The server's Welcome arrived on this connection. */
    this.welcomed = false;
    this.cursor = 0;
    this.pushFrom = 0;
    /** Local commits the server does not know yet (as of the last engine call). */
    this.pending = 0;
    /** The server's head as its Welcome announced it (catch-up target), then as last heard. */
    this.serverHead = /** @type {number | null} */ (null);
    /** The head announced by this connection's Welcome: caught up once the cursor reaches it. */
    this._welcomeHead = 0;
    /** @type {SyncStatus['rights']} */
    this.rights = null;
    /** @type {WireError | null} */
    this.lastError = null;
    /** The server refused a push for lack of permission (the engine pauses pushing). */
    this.refused = false;
    /** The server refused this session at Hello (closed the connection): retried slowly. */
    this._sessionRefused = false;
    /** The server refused a push for another reason (bad signature, clock skew, ...) since the last Welcome/Ack. */
    this._pushRefused = false;
    this.connects = 0;
    this.received = 0;
    this.pushed = 0;
    this.acked = 0;
    /** The engine generation (EngineHandle.generation) and URL list the engine's sync client was made for. */
    this._generation = 0;
    /** @type {string | null} */
    this._clientKey = null;
    /** @type {string | null} the URL the engine's sync client signs for now */
    this._clientUrl = null;
    /** @type {SyncPosition | null} the position as of the last flush (only durable state) */
    this._durable = null;
    /** @type {SyncPosition | null} the position last written to the `sync` file */
    this.saved = null;
    this._delay = RECONNECT_MIN_MS;
    /** Refused before a Welcome but still connected: the server keeps the session waiting for a grant. */
    this._waiting = false;
    /** @type {{secret: Uint8Array, role: string, commit: string} | null} the invite to redeem once the server keeps this session waiting */
    this.invite = null;
    /** When the last connection was dialed (performance.now()). */
    this._dialedAt = 0;
    /** Counts dials: a token answer for an older one (dropped or superseded meanwhile) is not used. */
    this._dialSeq = 0;
    /** @type {ReturnType<typeof setTimeout> | 0} */
    this._timer = 0;
    /** @type {ReturnType<typeof setTimeout> | 0} */
    this._handshakeTimer = 0;
    /** @type {ReturnType<typeof setTimeout> | 0} */
    this._saveTimer = 0;
    /** @type {string} the state last reported through onStatus (with the error's message) */
    this._reported = '';
    /** WebCrypto for seal signatures on the critical path (null: the engine does everything). */
    this._crypto = HostCrypto.available() ? new HostCrypto() : null;
    /** Attachment uploads and downloads on the connection (./attach-sync.js). */
    this.attachments = new AttachmentSync();
  }

  /**
   * The bytes of attachment `hash` (`size` bytes) from the server, as a stream the caller
   * verifies; null when no connection is open that could ask (not connected, or before the
   * server answered the Hello). A session that may not read is asked all the same: the server
   * refuses with PermissionError.
   * @param {string} hash @param {number} size
   * @returns {ReadableStream<Uint8Array> | null}
   */
  fetchAttachment(hash, size) {
    const ws = this.ws;
    if (!ws || !this.open || !(this.welcomed || this._waiting) || ws.readyState !== 1) return null;
    return this.attachments.fetch(ws, hash, size);
  }

  /**
   * Start (or move to other servers): a URL, or a list of the nodes of one deployment, dialed
   * first to last and round again. The same list while running changes nothing.
   * @param {unknown} urls
   */
  start(urls) {
    if (!isSyncUrls(urls)) {
      throw new TypeError(`sync needs a ws:// or wss:// URL or a list of them, got ${JSON.stringify(urls)}`);
    }
    const list = normalizeSyncUrls(urls);
    if (syncUrlsKey(list) === this._key) {
      this.retryRefused();
      return;
    }
    this.urls = list;
    this._key = syncUrlsKey(list);
    this._at = 0;
    this.url = list[0];
    this._drop();
    // The persisted position, read now (on the work chain, before anything queued after this
    // call): the status counts what the server has not acknowledged before any connection.
    const key = this._key;
    this.hooks
      .run(async () => {
        if (this._key === key) await this._client();
        this._report();
      })
      .catch(() => {});
    this._connect();
    this._report();
  }

  /**
   * The app asks again (`db.sync()`): a session the server refused is re-dialed now rather
   * than at the slow pace (e.g. after an owner granted this key a role).
   */
  retryRefused() {
    if (!this.url || !this._sessionRefused) return;
    // A session the server keeps waiting for a grant is dialed again too: the server welcomes
    // a waiting session itself once a grant lets it read, but the app asking now (just after
    // the owner's grant was acknowledged) must get the server's answer as of now, not the
    // refusal still standing until that welcome arrives (`db.sync()` rejected with the old
    // `cannot-read` when the welcome was slower than the call: seen in WebKit).
    // An app asking in a loop (from a status listener) re-dials a waiting session at most once
    // per WAITING_REDIAL_MS, so the server is not churned: sooner, the session keeps its place
    // (reported `online`: the call waits) and is re-dialed when that time is up, unless the
    // server welcomed it meanwhile.
    const since = performance.now() - this._dialedAt;
    if (this._waiting && since < WAITING_REDIAL_MS) {
      const ws = this.ws;
      this._sessionRefused = false;
      clearTimeout(this._timer);
      this._timer = setTimeout(() => {
        if (this.ws !== ws || this.welcomed) return;
        this._drop();
        this._connect();
        this._report();
      }, WAITING_REDIAL_MS - since);
      this._report();
      return;
    }
    this._sessionRefused = false;
    this._waiting = false;
    // Dial the same node now (a socket still open is the refused one, or a slow retry not yet
    // answered: dropped, so that its close does not move on to the next node).
    this._drop();
    this._connect();
    this._report();
  }

  /**
   * Stop sync. The position is saved (the engine is still open). `quiet`: report nothing to
   * the pages (the worker is closing: other tabs keep the URL and resume sync if they take over).
   * @param {{quiet?: boolean}} [opts]
   */
  async stop({ quiet = false } = {}) {
    if (!this.url) return;
    // Flush what was received, so the saved position covers it.
    const engine = this.hooks.engine();
    if (engine && !engine.dead && engine.generation > 0 && engine.hasUnflushed()) engine.flush();
    this._captureIfDurable();
    this.url = null;
    this.urls = null;
    this._key = null;
    clearTimeout(this._timer);
    this._drop();
    await this.saveNow();
    if (!quiet) this._report();
  }

  /** @returns {SyncStatus} */
  status() {
    const engine = this.hooks.engine();
    if (this.url && engine && this._generation === engine.generation && this._clientKey === this._key) {
      try {
        this.pending = engine.syncPending();
      } catch {
        // the engine is being reopened: keep the last count
      }
    }
    return {
      state: this._state(),
      url: this.url,
      urls: this.urls ? [...this.urls] : null,
      cursor: this.cursor,
      pushFrom: this.pushFrom,
      pending: this.pending,
      serverHead: this.serverHead,
      rights: this.rights,
      connects: this.connects,
      received: this.received,
      pushed: this.pushed,
      acked: this.acked,
      lastError: this.lastError,
      saved: this.saved ? { cursor: this.saved.cursor, pushFrom: this.saved.pushFrom } : null,
    };
  }

  /** Local commits were written: push them (on the work chain, after the current batch). */
  nudge() {
    if (!this.welcomed) {
      // The server has no repository of this name (`not-found`) and this replica had nothing
      // to found it with; now it has: dial again at once (its Hello offers to create it).
      if (this._sessionRefused && this.lastError?.kind === 'not-found') this.retryRefused();
      return;
    }
    this.hooks.run(() => this._push()).catch((e) => this._fail(e));
  }

  /**
   * Write the durable position to the `sync` file now, if it changed (on the work chain; the
   * engine is open).
   */
  async saveNow() {
    clearTimeout(this._saveTimer);
    this._saveTimer = 0;
    this._captureIfDurable();
    const pos = this._durable;
    const engine = this.hooks.engine();
    if (!pos || !engine || engine.dead || engine.generation === 0) return;
    if (this.saved && this.saved.url === pos.url && this.saved.cursor === pos.cursor && this.saved.pushFrom === pos.pushFrom) return;
    await savePosition(engine, pos);
    this.saved = pos;
  }

  // ----- internals ----------------------------------------------------------------------

  /**
   * Start checking the seal signatures of a server message as it arrives (see the header).
   * @param {Uint8Array} bytes
   * @returns {Promise<boolean> | null} whether every seal verified; null: nothing to vouch for
   *   (no WebCrypto, no seals, or a seal that does not decode: the engine reports it)
   */
  _verifyEarly(bytes) {
    const host = this._crypto;
    const engine = this.hooks.engine();
    if (!host || !engine || engine.dead || engine.generation === 0) return null;
    try {
      const checks = engine.syncSealChecks(bytes);
      if (!checks || checks.length === 0) return null;
      const verified = host.verifyAll(engine, checks);
      verified.catch(() => {});
      return verified;
    } catch {
      return null;
    }
  }

  /** @returns {SyncStatus['state']} */
  _state() {
    if (!this.url) return 'off';
    if (this.refused || this._pushRefused || (this._sessionRefused && !this.welcomed)) return 'error';
    if (!this.open) return 'offline';
    if (!this.welcomed) return 'online';
    return this.cursor < this._welcomeHead || this.pending > 0 ? 'syncing' : 'synced';
  }

  /** Tell the pages when the state or the last error changed. */
  _report() {
    const st = this.status();
    const key = `${st.state}|${st.url}|${st.lastError?.name ?? ''}:${st.lastError?.message ?? ''}`;
    if (key === this._reported) return;
    this._reported = key;
    this.hooks.onStatus(st);
  }

  /**
   * The engine, with a sync client for this URL list: made when the engine or the list is new,
   * resuming from the durable position (this worker's, else the `sync` file's) for the list;
   * moved to the URL dialed now when it is another node of the list.
   */
  async _client() {
    const engine = this.hooks.engine();
    if (!engine || engine.generation === 0 || !this.url || !this._key) throw new Error('the repository is not open');
    if (this._generation === engine.generation && this._clientKey === this._key) {
      if (this._clientUrl !== this.url) engine.syncSetUrl(this.url);
      this._clientUrl = this.url;
      return engine;
    }
    let pos = this._durable?.url === this._key ? this._durable : null;
    if (!pos) {
      const stored = await loadPosition(engine);
      if (stored) this.saved = stored;
      pos = stored?.url === this._key ? stored : { url: this._key, cursor: 0, pushFrom: 0 };
    }
    engine.syncStart(this.hooks.name, this.url, pos.cursor, pos.pushFrom);
    this.cursor = pos.cursor;
    this.pushFrom = pos.pushFrom;
    this._durable = pos;
    this._generation = engine.generation;
    this._clientKey = this._key;
    this._clientUrl = this.url;
    // Capture the position at every flush: from then on it describes durable state.
    engine.afterFlush = () => this._captured();
    return engine;
  }

  /**
   * Everything applied so far is durable (nothing waits to be flushed): the position is. An
   * acknowledgement moves `pushFrom` without a flush; captured here, a reload does not count
   * acknowledged commits as waiting.
   */
  _captureIfDurable() {
    const engine = this.hooks.engine();
    if (!engine || engine.dead || engine.generation !== this._generation) return;
    try {
      if (!engine.hasUnflushed()) this._captured();
    } catch {
      // the engine is being reopened: the next flush captures it
    }
  }

  /** The engine flushed: everything applied so far is durable. Save the position soon. */
  _captured() {
    if (!this._key || this._clientKey !== this._key) return;
    const d = this._durable;
    if (d && d.url === this._key && d.cursor === this.cursor && d.pushFrom === this.pushFrom) return;
    this._durable = { url: this._key, cursor: this.cursor, pushFrom: this.pushFrom };
    if (!this._saveTimer) {
      this._saveTimer = setTimeout(() => {
        this._saveTimer = 0;
        this.hooks.run(() => this.saveNow()).catch(() => {});
      }, SYNC_SAVE_MS);
    }
  }

  _drop() {
    clearTimeout(this._handshakeTimer);
    this._dialSeq++;
    const ws = this.ws;
    this.ws = null;
    this.open = false;
    this.welcomed = false;
    this._waiting = false;
    this.attachments.closed();
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
    this.connects++;
    this._dialedAt = performance.now();
    const seq = ++this._dialSeq;
    if (!this.hooks.token) {
      this._dial(null);
      return;
    }
    // The application's token, asked for now (it may have expired since the last dial) and
    // kept only until the WebSocket is made.
    this.hooks.token().then(
      (token) => {
        if (seq === this._dialSeq && this.url && !this.ws) this._dial(token);
      },
      (e) => {
        if (seq !== this._dialSeq || !this.url || this.ws) return;
        // No token, no dial: reported like a refusal (state `error`, `db.sync()` rejects),
        // asked again at the slowest pace or when the app calls `db.sync()`.
        this.lastError = toWire(e);
        this._sessionRefused = true;
        this._retry();
      },
    );
  }

  /** @param {string | null} token */
  _dial(token) {
    const dial = this.hooks.dial ?? dialWebSocket;
    let ws;
    try {
      ws = dial(/** @type {string} */ (this.url), token);
    } catch (e) {
      this._fail(e);
      return;
    }
    ws.binaryType = 'arraybuffer';
    this.ws = ws;
    this._handshakeTimer = setTimeout(() => {
      if (this.ws !== ws || this.welcomed) return;
      this.lastError = { name: 'UnavailableError', message: `no Welcome from ${this.url} within ${HANDSHAKE_TIMEOUT_MS} ms` };
      this._drop();
      this._retry();
    }, HANDSHAKE_TIMEOUT_MS);
    ws.onopen = () =>
      this.hooks
        .run(async () => {
          if (this.ws !== ws) return;
          const engine = await this._client();
          if (this.ws !== ws) return;
          engine.syncConnect();
          this.open = true;
          this._report();
        })
        .catch((e) => this._fail(e));
    ws.onmessage = (ev) => {
      const bytes = new Uint8Array(ev.data);
      if (AttachmentSync.is(bytes)) {
        // Not on the work chain: a read that fetches holds the chain while it writes them.
        if (this.ws === ws) this.attachments.onMessage(bytes);
        return;
      }
      const sealsVerified = this._verifyEarly(bytes);
      this.hooks.run(() => this._onMessage(ws, bytes, sealsVerified)).catch((e) => this._fail(e));
    };
    // Handled on the work chain, after the messages that came before the close: a server that
    // refuses a session sends the refusal and closes, and the refusal (still queued behind a
    // message in progress, or behind WebCrypto's check of its seals) decides where the next dial
    // goes: the same node for a PermissionError (every node would say the same), the next one
    // otherwise. Handled at once, the close moved on to the next node before the refusal was
    // read (seen in WebKitGTK: cluster.spec.ts's owner synced with its second node).
    ws.onclose = () => {
      if (this.ws !== ws) return;
      // The messages that came before the close may still wait on the work chain (a refusal
      // is the server's last message before it closes: a token refused right after the
      // upgrade arrives while the open is still being handled): the close comes after them.
      this.hooks
        .run(() => {
          if (this.ws !== ws) return;
          this._drop();
          this._retry();
        })
        .catch(() => {
          if (this.ws !== ws) return;
          this._drop();
          this._retry();
        });
    };
    ws.onerror = () => {};
  }

  /**
   * One message from the server, on the work chain (held until WebCrypto has verified its
   * seals: the check started when it arrived).
   * @param {WebSocket} ws the connection it came on @param {Uint8Array} bytes
   * @param {Promise<boolean> | null} sealsVerified `_verifyEarly`'s answer
   */
  async _onMessage(ws, bytes, sealsVerified) {
    if (this.ws !== ws || !this.open || this._reopened()) return;
    let vouched = false;
    if (sealsVerified) {
      vouched = await sealsVerified.catch(() => false);
      // Dropped meanwhile: the next connection resumes from the cursor.
      if (this.ws !== ws || this._reopened()) return;
    }
    const engine = /** @type {import('../engine.js').EngineHandle} */ (this.hooks.engine());
    const ev = engine.syncHandle(bytes, vouched);
    this.cursor = ev.cursor;
    this.pushFrom = ev.pushFrom;
    this.pending = ev.pending;
    const wasRefused = this.refused;
    this.refused = ev.refused;
    if (wasRefused && !this.refused && this.lastError?.name === 'PermissionError') this.lastError = null;
    switch (ev.event) {
      case 'challenge': {
        // The signed Hello, at once.
        const hello = engine.syncOutgoing();
        if (hello) ws.send(hello);
        break;
      }
      case 'welcome':
        clearTimeout(this._handshakeTimer);
        this.welcomed = true;
        this._sessionRefused = false;
        this._waiting = false;
        this._pushRefused = false;
        this.serverHead = ev.head ?? 0;
        this._welcomeHead = ev.head ?? 0;
        this.rights = ev.rights ?? null;
        if (!this.refused) this.lastError = null;
        this._delay = RECONNECT_MIN_MS;
        break;
      case 'received':
        this.received += (ev.applied ?? 0) + (ev.duplicates ?? 0);
        this.serverHead = Math.max(this.serverHead ?? 0, ev.cursor);
        if ((ev.applied ?? 0) > 0) this.hooks.afterReceive();
        break;
      case 'acked':
        this.acked += ev.count ?? 0;
        this._pushRefused = false;
        this._captureIfDurable();
        break;
      case 'error': {
        this.lastError = syncErrorToWire(ev);
        if (this.lastError.name === 'UnavailableError' || ((this.welcomed || this._waiting) && this.lastError.name === 'AuthError')) {
          // Not a refusal: the server is going away (a deploy) or cannot serve now, or it ended
          // a session (welcomed, or waiting for a grant) whose bearer token expired
          // (`token-expired`). Dial again (asking the app for a fresh token first).
          if (this.lastError.name === 'AuthError') this._sessionRefused = false;
          this._drop();
          this._retry();
          return;
        }
        if (!this.welcomed) {
          this._sessionRefused = true;
          clearTimeout(this._handshakeTimer);
          // The server answered: a session that may not read yet (`cannot-read`) stays
          // connected and is welcomed the moment a grant lets it read (it is not dialed again
          // meanwhile). Any other refusal closes the session.
          this._waiting = this.lastError.kind === 'cannot-read';
          // A refusal that ends the wait (an invite's redemption refused: invite-used, …) also
          // cancels a re-dial of the waiting session that retryRefused() scheduled: dialed
          // again, the session would only be told cannot-read, and the reason would be lost.
          if (!this._waiting) clearTimeout(this._timer);
          // Waiting, with an invite to redeem (open(name, { invite })): push the redemption,
          // built from the link alone; the server welcomes this session once it is stored,
          // or refuses it with its typed error (invite-used, invite-expired, ...).
          if (this._waiting && this.invite && this.ws) {
            const { secret, role, commit } = this.invite;
            this.invite = null;
            const engine = /** @type {import('../engine.js').EngineHandle} */ (this.hooks.engine());
            this.ws.send(engine.redemptionPush(secret, role, commit));
          }
          // No repository of this name yet, and this replica wrote commits after its Hello
          // went out: dial the same node again now, offering to found it.
          if (this.lastError.kind === 'not-found' && this.pending > 0) {
            this._drop();
            this._sessionRefused = false;
            this._connect();
            this._report();
            return;
          }
        } else if (this.lastError.name !== 'PermissionError') this._pushRefused = true;
        break;
      }
      default:
    }
    await this._push();
    this._report();
    if (ev.event === 'welcome' || ev.event === 'acked') this._pushAttachments();
  }

  /** Every local commit is acknowledged: offer the attachment files (not on the work chain). */
  _pushAttachments() {
    const local = this.hooks.localAttachments;
    if (!local || !this.welcomed || !this.rights?.write || this.refused || this.pending > 0) return;
    const ws = this.ws;
    const socket = () => (this.ws === ws && this.welcomed ? ws : null);
    this.attachments.pushAll(socket, () => this.hooks.run(local)).catch(() => {});
  }

  /**
   * The engine was reopened (after a panic) since this connection's handshake: its sync client
   * is new and not welcomed, so start a new connection (resuming from the durable position).
   * True if so.
   */
  _reopened() {
    if (this._generation === this.hooks.engine()?.generation) return false;
    this._drop();
    this._connect();
    return true;
  }

  /** Seal (WebCrypto when available) and push what the server lacks, on the work chain. */
  async _push() {
    if (!this.welcomed || !this.ws || this.ws.readyState !== WebSocket.OPEN) return;
    if (this._reopened()) return;
    const engine = /** @type {import('../engine.js').EngineHandle} */ (this.hooks.engine());
    const ws = this.ws;
    if (this._crypto && !this.refused && engine.unsealed() > 0) {
      // Otherwise the engine seals in wasm inside syncOutgoing.
      await this._crypto.seal(engine);
      if (this.ws !== ws || !this.welcomed || this._reopened()) return;
    }
    let sent = 0;
    for (;;) {
      const m = engine.syncOutgoing();
      if (!m) break;
      this.ws.send(m);
      sent++;
    }
    this.pending = engine.syncPending();
    if (sent > 0) {
      this.pushed += sent;
      this.hooks.afterPush();
    }
    this._report();
  }

  /** @param {any} e */
  _fail(e) {
    this.lastError = toWire(e);
    // The server's repository was founded by another key than the `owner` the application
    // pinned: a refusal (the state says error; asked again only at the slowest pace). So is a
    // server whose messages this client cannot read (another protocol version, or malformed):
    // dialing it again at once would only hear the same, and db.sync() must not wait forever.
    if (this.lastError?.kind === 'wrong-founder' || this.lastError?.name === 'ProtocolError') this._sessionRefused = true;
    this._drop();
    this._retry();
  }

  _retry() {
    this.ws = null;
    if (!this.url || !this.urls) return;
    clearTimeout(this._timer);
    // The next node of the list, unless the deployment itself refused this session (a
    // PermissionError: every node derives the same access list, so another would say the same).
    if (!(this._sessionRefused && this.lastError?.name === 'PermissionError')) {
      this._at = (this._at + 1) % this.urls.length;
      this.url = this.urls[this._at];
    }
    // A session the server refused is asked again only at the slowest pace.
    const delay = this._sessionRefused ? RECONNECT_MAX_MS : this._delay;
    this._delay = Math.min(this._delay * 2, RECONNECT_MAX_MS);
    this._timer = setTimeout(() => this._connect(), reconnectWait(delay));
    this._report();
  }
}
