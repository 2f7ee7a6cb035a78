// The operations a page can ask of the worker, one entry each: its name (the public method's
// name, `Database.<name>` in ibexdb.js; `unsubscribe` is `LiveQuery.close`, `debugPanic` a test
// hook), whether it writes (a batch holding a write is flushed once under 'flush' durability and
// arms maintenance: batch.js), and what it runs on the engine. The page sends `[seq, name,
// ...args]` (ibexdb.js `_send`, typed by this table); arguments arrive checked by the page
// (args.js) and as JSON text where they are values or queries; the payload goes back as it is.

import { ATTACH_OPS } from './attach-ops.js';
import { verifyRepository } from './verify.js';

/**
 * What an op runs with: the owned engine, and the worker's concerns.
 * @typedef {object} OpContext
 * @property {import('../engine.js').EngineHandle} engine
 * @property {import('./live.js').LiveQueries} live
 * @property {import('./sync.js').SyncManager} sync
 * @property {import('./maintenance.js').Maintenance} maintenance the timers' work (settle runs it now)
 * @property {import('./crypto.js').HostCrypto | null} crypto WebCrypto for verify()'s seal signatures
 * @property {string} origin 'local' (this worker's page) or the client worker that sent the batch
 */

/**
 * @template {any[]} A
 * @typedef {{write?: boolean, run: (cx: OpContext, ...args: A) => unknown}} Op
 */

/**
 * Define an op (keeps each entry's argument types for `OpArgs`).
 * @template {any[]} A
 * @param {(cx: OpContext, ...args: A) => unknown} run
 * @param {boolean} [write]
 * @returns {Op<A>}
 */
const op = (run, write = false) => ({ run, write });

export const OPS = Object.freeze({
  // ----- reads
  get: op((cx, /** @type {string} */ key) => cx.engine.getJson(key)),
  getMany: op((cx, /** @type {string} */ keysJson) => cx.engine.getManyJson(keysJson)),
  query: op((cx, /** @type {string} */ queryJson) => cx.engine.queryJson(queryJson)),
  page: op((cx, /** @type {string} */ queryJson) => cx.engine.queryPageJson(queryJson)),
  explain: op((cx, /** @type {string} */ queryJson) => cx.engine.explainJson(queryJson)),
  count: op((cx, /** @type {string} */ collection, /** @type {string | null} */ whereJson) => cx.engine.countJson(collection, whereJson)),
  keys: op((cx, /** @type {string} */ collection) => cx.engine.keysJson(collection)),
  aggregate: op((cx, /** @type {string} */ queryJson) => cx.engine.aggregateJson(queryJson)),
  history: op((cx, /** @type {string} */ key) => cx.engine.historyJson(key)),
  live: op((cx, /** @type {number} */ subId, /** @type {string} */ queryJson) => cx.live.subscribe(cx.origin, subId, queryJson)),
  unsubscribe: op((cx, /** @type {number} */ subId) => cx.live.unsubscribe(cx.origin, subId)),
  members: op((cx) => cx.engine.membersJson()),
  storageInfo: op((cx) => {
    const stats = JSON.parse(cx.engine.statsJson());
    stats.attachmentBytes = cx.engine.attachmentStore?.bytes ?? 0;
    return JSON.stringify(stats);
  }),
  // ----- writes
  put: op((cx, /** @type {string} */ key, /** @type {string} */ valueJson) => cx.engine.putJson(key, valueJson), true),
  update: op((cx, /** @type {string} */ key, /** @type {string} */ fieldsJson) => cx.engine.updateJson(key, fieldsJson), true),
  delete: op((cx, /** @type {string} */ key) => cx.engine.delete(key), true),
  transaction: op((cx, /** @type {Uint8Array} */ bytes) => cx.engine.transaction(bytes), true),
  receive: op((cx, /** @type {Uint8Array} */ bundle) => cx.engine.receiveJson(bundle), true),
  grant: op((cx, /** @type {string} */ publicKey, /** @type {string} */ role) => cx.engine.grant(publicKey, role), true),
  revoke: op((cx, /** @type {string} */ publicKey) => cx.engine.revoke(publicKey), true),
  invite: op((cx, /** @type {Uint8Array} */ secret, /** @type {string} */ role, /** @type {number} */ expires, /** @type {number} */ uses) => cx.engine.invite(secret, role, expires, uses), true),
  redeem: op((cx, /** @type {Uint8Array} */ secret) => cx.engine.redeem(secret), true),
  revokeInvite: op((cx, /** @type {string} */ id) => cx.engine.revokeInvite(id), true),
  invites: op((cx) => cx.engine.invitesJson()),
  // The invite this replica redeems when the server keeps its session waiting (sync.js).
  setInvite: op((cx, /** @type {{secret: Uint8Array, role: string, commit: string}} */ invite) => {
    cx.sync.invite = invite;
  }),
  setPublic: op((cx, /** @type {boolean} */ read, /** @type {boolean} */ write) => cx.engine.setPublic(read, write), true),
  // ----- schemas, durability, integrity, identity
  defineSchema: op((cx, /** @type {string} */ collection, /** @type {string} */ schemaJson) => cx.engine.defineSchemaJson(collection, schemaJson)),
  // Stored schemas and migrations (docs/design.md §2.4; the page runs the migrations: schema-upgrade.js).
  schemaInfo: op((cx) => cx.engine.schemaInfo()),
  storeSchemas: op((cx, /** @type {number} */ version, /** @type {string} */ schemasJson) => cx.engine.storeSchemas(version, schemasJson), true),
  checkMigrated: op((cx, /** @type {string} */ collection, /** @type {string} */ rowsJson) => cx.engine.checkMigrated(collection, rowsJson)),
  olderCommitsSince: op((cx, /** @type {number} */ since, /** @type {number} */ target) => cx.engine.olderCommitsSince(since, target)),
  migrationPending: op((cx, /** @type {string} */ collection, /** @type {string} */ stepsJson, /** @type {number} */ target) => cx.engine.migrationPending(collection, stepsJson, target)),
  flush: op(async (cx) => {
    cx.engine.flush();
    await cx.engine.durable();
  }),
  // The timers' work done now (policy.js runMaintenance, every deadline due): nothing left pending.
  settle: op(async (cx) => {
    cx.maintenance.cancel();
    if (cx.engine.seal() > 0 || cx.engine.hasUnflushed()) cx.engine.flush();
    cx.engine.maybeSnapshot();
    await cx.engine.durable();
  }),
  // verify() awaits WebCrypto; the work chain stays held meanwhile, so nothing runs in between.
  verify: op((cx) => verifyRepository(cx.engine, cx.crypto).then((r) => JSON.stringify(r))),
  exportIdentity: op((cx) => cx.engine.exportIdentity()),
  exportCommits: op((cx) => cx.engine.exportCommits()),
  // ----- sync
  // null stops; a URL or a list starts (or keeps) sync with those servers; undefined: the current one(s).
  sync: op((cx, /** @type {string | string[] | null | undefined} */ urls) => {
    if (urls === null) cx.sync.stop().catch(() => {});
    else if (urls !== undefined) cx.sync.start(urls);
    else cx.sync.retryRefused();
    return JSON.stringify(cx.sync.status());
  }),
  syncStatus: op((cx) => JSON.stringify(cx.sync.status())),
  // ----- attachments (attach-ops.js)
  ...ATTACH_OPS,
  // ----- test hook
  debugPanic: op((cx, /** @type {string} */ message) => cx.engine.panicForTest(message)),
});

/** The name of an op. @typedef {keyof typeof OPS} OpName */
/**
 * The arguments the page sends for op `K` (after the context).
 * @template {OpName} K
 * @typedef {(typeof OPS)[K] extends Op<infer A> ? A : never} OpArgs
 */

/**
 * Whether `name` is an op (a batch from another tab is checked before it runs).
 * @param {unknown} name
 * @returns {name is OpName}
 */
export const isOp = (name) => typeof name === 'string' && Object.hasOwn(OPS, name);
