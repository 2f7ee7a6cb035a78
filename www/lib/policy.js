// The runtime's policy, in one module without side effects: where things live, what names are
// valid, how long writes may wait before they are flushed or sealed, when a snapshot is written,
// and what background work is due at a given time.
//
// The runtime worker (worker.js) drives the maintenance schedule with timers; the benchmark's
// ibexdb adapter (www/bench/) runs the same functions inline, at the first write after a
// deadline, so the benchmark times the product's schedule rather than a copy of it. Nothing here
// starts a timer, touches storage or keeps state between calls: state is passed in.

import { describe } from './args.js';
import { InvalidKeyError } from './errors.js';

// ----- where things live -------------------------------------------------------------------

/** OPFS directory under which every repository has its own directory: `<root>/ibexdb/<name>/`. */
export const ROOT_DIR = 'ibexdb';

/**
 * The engine's WebAssembly binary: the one place its URL is decided, relative to this module
 * (in the repository wasm-pack's output `pkg/` is served as a sibling of `www/`; in the npm
 * package it is `./wasm/`, and scripts/build-pkg.mjs rewrites this path and engine.js's import of
 * the glue `ibexdb.js`, which sits next to the binary). The page compiles the binary and hands
 * the module to the worker; the worker compiles it itself only without one.
 */
export const WASM_URL = new URL('../../pkg/ibexdb_bg.wasm', import.meta.url);

// ----- names -------------------------------------------------------------------------------

/** Repository names: also OPFS directory names and parts of lock and channel names. */
export const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/**
 * Throw InvalidKeyError unless `name` is a valid repository name.
 * @param {unknown} name
 * @returns {asserts name is string}
 */
export function checkName(name) {
  if (typeof name !== 'string' || !NAME_RE.test(name)) {
    const what = typeof name === 'string' ? JSON.stringify(name) : describe(name);
    throw new InvalidKeyError(`invalid repository name ${what}: 1-128 characters of letters, digits, '_', '-', '.', starting with a letter or digit`, { key: what, argument: 'name' });
  }
}

/** Web Lock held by the worker that owns repository `name`'s files. @param {string} name */
export const ownerLockName = (name) => `ibexdb:${name}`;
/** BroadcastChannel between the workers (tabs) that opened repository `name`. @param {string} name */
export const channelName = (name) => `ibexdb:${name}`;
/** Web Lock every worker holds for its lifetime, so the owner learns when it is gone. @param {string} id */
export const clientLockName = (id) => `ibexdb-client:${id}`;

/** Sync server URLs: `ws://` or `wss://`. @param {unknown} url @returns {url is string} */
export const isSyncUrl = (url) => typeof url === 'string' && /^wss?:\/\//.test(url);

/**
 * The one spelling of a sync URL (`new URL(url).href`, e.g. `ws://127.0.0.1:8787/`): the worker
 * dials it, signs it into the session proof and persists it with the cursor, so the same server
 * is always named the same way.
 * @param {string} url
 */
export const normalizeSyncUrl = (url) => new URL(url).href;

/** At most this many URLs in a sync list (the nodes of one deployment). */
export const MAX_SYNC_URLS = 16;
/** At most this many characters per sync URL (the list is saved with the position). */
export const MAX_SYNC_URL_CHARS = 200;

/**
 * A sync URL, or a non-empty list of at most MAX_SYNC_URLS of them (each at most
 * MAX_SYNC_URL_CHARS long). @param {unknown} urls @returns {urls is string | string[]}
 */
export const isSyncUrls = (urls) => {
  const list = Array.isArray(urls) ? urls : [urls];
  return list.length > 0 && list.length <= MAX_SYNC_URLS && list.every((u) => isSyncUrl(u) && u.length <= MAX_SYNC_URL_CHARS && parses(u));
};

/** @param {string} url */
const parses = (url) => {
  try {
    return !!new URL(url);
  } catch {
    return false;
  }
};

/**
 * A URL or a list of them as a list of normalized URLs, in the given order, without repeats.
 * @param {string | string[]} urls @returns {string[]}
 */
export const normalizeSyncUrls = (urls) => [...new Set((Array.isArray(urls) ? urls : [urls]).map(normalizeSyncUrl))];

/**
 * The name a sync position is saved under: the normalized list, space-separated (a single
 * server's is its URL, as before lists existed). A position belongs to one deployment: another
 * list starts from 0 (only slower: received commits are counted once, pushes are idempotent).
 * @param {string[]} list normalized
 */
export const syncUrlsKey = (list) => list.join(' ');

// ----- timers ------------------------------------------------------------------------------

/** Relaxed writes are flushed at most this long after the first unflushed one (if the worker is not busy). */
export const RELAXED_FLUSH_MS = 50;
/** Local commits are sealed (signed) this long after the first unsealed one. */
export const SEAL_DELAY_MS = 100;
/** Background work that failed (a relaxed flush, a seal) is tried again after this long. */
export const MAINTENANCE_RETRY_MS = 1000;
/** How long a new client tab waits for the owner to answer before failing `open`. */
export const ATTACH_TIMEOUT_MS = 15_000;
/**
 * Sync reconnects after a delay that starts at RECONNECT_MIN_MS and doubles up to
 * RECONNECT_MAX_MS (reset by the server's Welcome); each wait is drawn uniformly from
 * [delay/2, delay] (jitter, so tabs and devices do not reconnect in lockstep).
 */
export const RECONNECT_MIN_MS = 100;
export const RECONNECT_MAX_MS = 10_000;
/** A connection without the server's Welcome this long after it was dialed is dropped and dialed again. */
export const HANDSHAKE_TIMEOUT_MS = 10_000;
/**
 * An explicit `db.sync()` re-dials a session the server keeps waiting for a grant (to get its
 * answer as of now) at most this often: an app asking in a loop does not churn the server.
 */
export const WAITING_REDIAL_MS = 1000;
/** The sync position (cursor, pushFrom) is written to the repository's `sync` file at most this long after it changed. */
export const SYNC_SAVE_MS = 250;

/**
 * The next reconnection wait for backoff `delay` (ms), with jitter; `random` in [0, 1).
 * @param {number} delay
 * @param {number} [random]
 */
export const reconnectWait = (delay, random = Math.random()) => Math.round(delay / 2 + (delay / 2) * random);

// ----- snapshots ---------------------------------------------------------------------------

/** A snapshot is written when the log tail exceeds max(this, current snapshot size). */
export const SNAPSHOT_MIN_TAIL = 8 << 20;

/**
 * Whether a snapshot is due: the log tail (bytes not covered by the snapshot) is at least
 * max(SNAPSHOT_MIN_TAIL, snapshot size), so replay on open stays bounded and snapshot writes
 * stay amortized. `force` (on close): whenever the tail is non-empty.
 * @param {{tailBytes: number, snapshotBytes: number}} stats
 * @param {boolean} [force]
 */
export function snapshotDue(stats, force = false) {
  return stats.tailBytes > 0 && (force || stats.tailBytes >= Math.max(SNAPSHOT_MIN_TAIL, stats.snapshotBytes));
}

// ----- the maintenance schedule ------------------------------------------------------------

/**
 * Deadlines of the background work, in ms on the `performance.now()` clock; 0 when nothing is
 * pending. Armed after work that wrote, cleared when the work has run.
 * @typedef {object} Maintenance
 * @property {number} flushAt flush relaxed writes at this time
 * @property {number} sealAt seal local commits (then flush the seal and check for a snapshot) at this time
 */

/**
 * What the schedule needs of an engine (an `EngineHandle`).
 * @typedef {object} MaintainedEngine
 * @property {() => boolean} hasUnflushed
 * @property {() => number} unsealed
 * @property {() => void} flush
 * @property {() => number} seal
 * @property {() => boolean} maybeSnapshot
 */

const NOTHING_DONE = Object.freeze({ flushed: false, sealed: 0, snapshot: false });

/** @returns {Maintenance} nothing pending */
export function idleMaintenance() {
  return { flushAt: 0, sealAt: 0 };
}

/**
 * After work that may have left frames unflushed or commits unsealed (a batch that wrote,
 * commits received or pushed by sync): arm the deadlines that are not armed yet. An armed
 * deadline is kept, so work waits at most the delay after the first write it covers.
 * @param {Maintenance} m
 * @param {MaintainedEngine} engine
 * @param {number} now
 */
export function armMaintenance(m, engine, now) {
  if (!m.flushAt && engine.hasUnflushed()) m.flushAt = now + RELAXED_FLUSH_MS;
  if (!m.sealAt && engine.unsealed() > 0) m.sealAt = now + SEAL_DELAY_MS;
}

/**
 * The earliest armed deadline, or 0 when nothing is pending.
 * @param {Maintenance} m
 */
export function nextDeadline(m) {
  if (!m.flushAt) return m.sealAt;
  if (!m.sealAt) return m.flushAt;
  return Math.min(m.flushAt, m.sealAt);
}

/**
 * What maintenance is due at time `now`.
 * @param {Maintenance} m
 * @param {number} now
 * @returns {{flush: boolean, seal: boolean}}
 */
export function maintenanceDue(m, now) {
  return { flush: m.flushAt !== 0 && now >= m.flushAt, seal: m.sealAt !== 0 && now >= m.sealAt };
}

/**
 * Run the maintenance due at `now` and clear its deadlines: the relaxed flush; the seal (one
 * signature over every unsealed local commit), the flush of its frame and the snapshot check.
 * Cheap when nothing is due (the benchmark calls it before every write). A failure leaves the
 * frames buffered; the caller re-arms later.
 * @param {Maintenance} m
 * @param {MaintainedEngine} engine
 * @param {number} now
 * @returns {{flushed: boolean, sealed: number, snapshot: boolean}} what was done
 */
export function runMaintenance(m, engine, now) {
  const due = maintenanceDue(m, now);
  if (!due.flush && !due.seal) return NOTHING_DONE;
  const done = { flushed: false, sealed: 0, snapshot: false };
  if (due.flush) {
    m.flushAt = 0;
    if (engine.hasUnflushed()) {
      engine.flush();
      done.flushed = true;
    }
  }
  if (due.seal) {
    m.sealAt = 0;
    done.sealed = engine.seal();
    if (done.sealed > 0) engine.flush();
    done.snapshot = engine.maybeSnapshot();
  }
  return done;
}
