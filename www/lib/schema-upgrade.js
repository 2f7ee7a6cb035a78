// Versioned schemas and migrations, on the page (docs/design.md §2.4).
//
// `open(name, { schemas, version, migrations, onMigrationProgress })`: the application declares
// the schema version it understands. The worker's engine refuses its writes when the
// repository's stored schemas are newer (`db.readOnly` says why), and its first commit of an
// empty repository stores its schemas. Here, on open and after sync brings commits:
//
// 1. an owner whose application is newer than the stored schemas upgrades: every item to
//    migrate is computed first (a migration that throws, or returns something that is not an
//    item, is a MigrationError and nothing is written), then the schemas are stored (one
//    commit) and the migrated items written, `BATCH` per commit, with `onMigrationProgress`;
// 2. at the stored version, the items still written under an older one (a crash midway, edits
//    made offline on an older application, another device's upgrade) are migrated the same way.
//
// Migrations are functions of the page (they cannot cross to the worker): eager, as commits,
// so queries and indexes see the migrated items. Two devices that upgrade concurrently write
// the same values (a migration must be a pure function of the item), and the item merge keeps
// one: no duplicates, and the same result on every replica.

import { decode, encode, encodeObject } from './codec.js';
import { describe, isPlainObject } from './args.js';
import { MigrationError, fromWire } from './errors.js';

/** The highest schema version (the core's limit). */
export const MAX_SCHEMA_VERSION = 2 ** 30;
/** Migrated items per commit. */
const BATCH = 1000;

/**
 * @typedef {import('./ibexdb.js').OpenOptions} OpenOptions
 * @typedef {import('./ibexdb.js').Item} Item
 * @typedef {{version: number, app: number | null, commits: number, mayUpgrade: boolean, mayWrite: boolean, schemas: Record<string, number>, readOnly: import('./errors.js').WireError | null}} SchemaInfo
 */

/**
 * Check `version`, `migrations` and `onMigrationProgress` of open()'s options.
 * @param {OpenOptions} options
 * @param {(k: string, what: string, v: unknown) => Error} bad the InvalidValueError naming `options.<k>`
 */
export function checkVersionOptions(options, bad) {
  const { version, migrations, onMigrationProgress } = options;
  if (version !== undefined && (!Number.isSafeInteger(version) || version < 1 || version > MAX_SCHEMA_VERSION)) {
    throw bad('version', `a whole number from 1 to ${MAX_SCHEMA_VERSION}`, version);
  }
  if (onMigrationProgress !== undefined && typeof onMigrationProgress !== 'function') throw bad('onMigrationProgress', 'a function', onMigrationProgress);
  if (migrations === undefined) return;
  if (version === undefined) throw bad('migrations', 'given together with options.version; it is', migrations);
  if (!isPlainObject(migrations)) throw bad('migrations', 'an object {version: function | {collection: function}}', migrations);
  for (const [k, m] of Object.entries(migrations)) {
    if (!/^[1-9][0-9]*$/.test(k) || Number(k) > version) {
      throw bad(`migrations.${k}`, `keyed by a version from 1 to options.version (${version}); the key is not one, and its value is`, m);
    }
    if (typeof m === 'function') continue;
    if (!isPlainObject(m)) throw bad(`migrations.${k}`, 'a function or an object {collection: function}', m);
    for (const [c, f] of Object.entries(m)) if (typeof f !== 'function') throw bad(`migrations.${k}.${c}`, 'a function', f);
  }
}

/** Runs the upgrade and the migrations of one open database. */
export class SchemaUpgrader {
  /**
   * @param {any} db the Database (its `_send` and `transaction`)
   * @param {OpenOptions & {version: number}} options
   */
  constructor(db, options) {
    this.db = db;
    this.version = options.version;
    this.schemas = options.schemas ?? {};
    /** @type {Record<string, Function | Record<string, Function>>} */
    this.migrations = /** @type {any} */ (options.migrations ?? {});
    this.onProgress = options.onMigrationProgress;
    this.onError = options.onError ?? ((/** @type {unknown} */ e) => console.warn('ibexdb: schema upgrade after sync:', e));
    /** @type {SchemaInfo | null} the engine's answer, as last asked */
    this.info = null;
    /** @type {number | null} the commits the last complete pass covered (commit-table length) */
    this._passedAt = null;
    /** @type {Promise<void> | null} */
    this._running = null;
    this._again = false;
  }

  /** The versions that have a migration, ascending. */
  steps() {
    return Object.keys(this.migrations).map(Number).sort((a, b) => a - b);
  }

  /** The collections to migrate: those with a schema, and those a migration names. */
  collections() {
    const out = new Set(Object.keys(this.schemas));
    for (const m of Object.values(this.migrations)) if (typeof m !== 'function') for (const c of Object.keys(m)) out.add(c);
    return [...out].sort();
  }

  /** @param {number} step @param {string} collection @returns {Function | undefined} */
  fn(step, collection) {
    const m = this.migrations[step];
    return typeof m === 'function' ? m : m?.[collection];
  }

  /** Ask the engine where the schemas stand. @returns {Promise<SchemaInfo>} */
  async refresh() {
    const info = /** @type {SchemaInfo} */ (JSON.parse(await this.db._send('schemaInfo', [], (/** @type {string} */ t) => t)));
    this.info = info;
    return info;
  }

  /**
   * `db.readOnly`: null, or the SchemaVersionError the engine gives this application's writes.
   * @returns {any}
   */
  readOnly() {
    const r = this.info?.readOnly;
    return r ? fromWire(r) : null;
  }

  /** Sync applied commits: the versions may have changed, and older edits may need migrating. */
  afterReceive() {
    this.run().catch((e) => {
      if (/** @type {any} */ (e)?.name !== 'ClosedError') this.onError(e);
    });
  }

  /** Upgrade and migrate (one run at a time; a call during a run runs again after it). @returns {Promise<void>} */
  run() {
    if (this._running) {
      this._again = true;
      return this._running;
    }
    this._running = (async () => {
      try {
        do {
          this._again = false;
          await this._run();
        } while (this._again);
      } finally {
        this._running = null;
      }
    })();
    return this._running;
  }

  async _run() {
    const info = await this.refresh();
    // An empty repository gets the schemas with its first commit; a newer repository is read-only.
    // A reader leaves the migrations to the members who write.
    if (info.readOnly || info.commits === 0 || !info.mayWrite) return;
    const upgrade = info.version < this.version;
    // Only an owner upgrades; until one does, this application works against the stored version.
    if (upgrade && !info.mayUpgrade) return;
    const target = this.version;
    const steps = this.steps().filter((s) => s <= target);
    // After a complete pass, only commits that arrived since, written under an older version
    // (an older application's), can need a migration.
    const since = this._passedAt;
    const older = (/** @type {number} */ n) => this.db._send('olderCommitsSince', [n, target], (/** @type {boolean} */ b) => b);
    if (!upgrade && since !== null && !(await older(since))) {
      this._passedAt = info.commits;
      return;
    }
    // 1. Compute every migrated item: a failure writes nothing.
    /** @type {[string, Item | null][]} */
    const work = [];
    if (steps.length > 0) {
      for (const c of this.collections()) {
        const rows = decode(await this.db._send('migrationPending', [c, JSON.stringify(steps), target], (/** @type {import('./codec.js').EngineText} */ t) => t));
        /** @type {[string, Item | null][]} */
        const mine = [];
        // null: an older application deleted the item concurrently with its migration.
        for (const [id, from, item] of rows) mine.push([id, item === null ? null : this.migrate(c, id, from, target, item)]);
        // Every result against the declared schema, before anything is written.
        if (mine.length > 0) {
          await this.db._send('checkMigrated', [c, encode(mine, '')], () => undefined).catch((/** @type {any} */ e) => {
            const id = /\(item "(.*)"\)/.exec(String(e?.rule ?? ''))?.[1] ?? '';
            throw new MigrationError(`a migration to version ${target} returned an item the schema of ${c} refuses: ${e?.message ?? e}; nothing was written`, { version: target, key: `${c}/${id}`, cause: e });
          });
        }
        for (const [id, v] of mine) work.push([`${c}/${id}`, v]);
      }
    }
    // 2. The schemas (one commit), then the items.
    if (upgrade) await this.db._send('storeSchemas', [this.version, JSON.stringify(this.schemas)], () => undefined);
    let done = 0;
    for (let i = 0; i < work.length; i += BATCH) {
      const part = work.slice(i, i + BATCH);
      await this.db.transaction((/** @type {any} */ tx) => {
        for (const [k, v] of part) {
          if (v === null) tx.delete(k);
          else tx.put(k, v);
        }
      });
      done += part.length;
      this.onProgress?.({ version: target, done, total: work.length });
    }
    this._passedAt = info.commits;
    if (upgrade || work.length > 0) await this.refresh();
  }

  /**
   * One item through the migrations above its version.
   * @param {string} collection @param {string} id @param {number} from @param {number} target @param {Item} item
   * @returns {Item}
   */
  migrate(collection, id, from, target, item) {
    let v = item;
    const key = `${collection}/${id}`;
    for (const step of this.steps()) {
      if (step <= from || step > target) continue;
      const f = this.fn(step, collection);
      if (!f) continue;
      let out;
      try {
        out = f(v, { collection, id, key, from: step - 1, to: step });
      } catch (e) {
        throw new MigrationError(`the migration to version ${step} threw for ${key}: ${/** @type {any} */ (e)?.message ?? e}; nothing was written`, { version: step, key, cause: e });
      }
      if (!isPlainObject(out)) {
        throw new MigrationError(`the migration to version ${step} returned ${describe(out)} for ${key}, not an item (a plain object); nothing was written`, { version: step, key });
      }
      try {
        // A value that cannot be stored (a Date, NaN, a bad field name) fails here, before any write.
        encodeObject(out, key);
      } catch (e) {
        throw new MigrationError(`the migration to version ${step} returned an item ibexdb cannot store for ${key}: ${/** @type {any} */ (e)?.message ?? e}; nothing was written`, { version: step, key, cause: e });
      }
      v = /** @type {Item} */ (out);
    }
    return v;
  }
}

/**
 * Declared version at open: upgrade and migrate now, and again whenever sync brings commits
 * (the worker's `received` message: `Database` calls `afterReceive`).
 * @param {any} db
 * @param {OpenOptions & {version: number}} options
 * @returns {Promise<SchemaUpgrader>}
 */
export async function startSchemas(db, options) {
  const up = new SchemaUpgrader(db, options);
  db._upgrader = up;
  await up.run();
  return up;
}
