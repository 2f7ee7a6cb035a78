// The options `open()` takes, checked before anything starts: an unknown option or a value of
// the wrong type is an InvalidValueError naming it (`options.<name>`). ibexdb.js opens.

import { describe, isPlainObject } from './args.js';
import { InvalidValueError } from './errors.js';
import { MAX_SYNC_URLS, isSyncUrls } from './policy.js';
import { checkVersionOptions } from './schema-upgrade.js';
import { isSyncTokenOption } from './sync-token.js';

/** @typedef {import('./ibexdb.js').OpenOptions} OpenOptions */

/**
 * Every option `open()` takes (the type makes tsc fail when ibexdb.d.ts's OpenOptions and this
 * list differ).
 * @type {Record<keyof OpenOptions, true>}
 */
const OPTION_NAMES = { durability: true, trusted: true, identity: true, passphrase: true, schemas: true, version: true, migrations: true, onMigrationProgress: true, recovery: true, quotaBytes: true, sync: true, invite: true, syncToken: true, owner: true, encrypted: true, onError: true, storage: true, persist: true };

/**
 * Check `open()`'s options: InvalidValueError naming the option (`options.<name>`) for an
 * unknown option or a value of the wrong type. What a string must hold (an identity, a schema,
 * a sync URL) is checked where it is used.
 * @param {unknown} options
 * @returns {asserts options is OpenOptions}
 */
export function checkOptions(options) {
  if (!isPlainObject(options)) {
    throw new InvalidValueError(`open(options): options must be an object (or absent), got ${describe(options)}`, { path: 'options', argument: 'options' });
  }
  /** @param {string} k @param {string} what @param {unknown} v */
  const bad = (k, what, v) => new InvalidValueError(`open(options): options.${k} must be ${what}, got ${describe(v)}`, { path: `options.${k}`, argument: `options.${k}` });
  for (const [k, v] of Object.entries(options)) {
    if (!Object.hasOwn(OPTION_NAMES, k)) throw bad(k, `one of the options (${Object.keys(OPTION_NAMES).join(', ')}); it is unknown and`, v);
    if (v === undefined) continue;
    switch (k) {
      case 'durability':
        if (v !== 'flush' && v !== 'relaxed') throw bad(k, "'flush' or 'relaxed'", v);
        break;
      case 'recovery':
        if (v !== 'strict' && v !== 'repair') throw bad(k, "'strict' or 'repair'", v);
        break;
      case 'storage':
        if (v !== 'auto' && v !== 'opfs' && v !== 'indexeddb' && v !== 'memory') throw bad(k, "'auto', 'opfs', 'indexeddb' or 'memory'", v);
        break;
      case 'trusted':
      case 'encrypted':
      case 'persist':
        if (typeof v !== 'boolean') throw bad(k, 'a boolean', v);
        break;
      case 'identity':
        if (typeof v !== 'string') throw bad(k, 'a string from exportIdentity()', v);
        break;
      case 'passphrase':
        if (typeof v !== 'string' || v === '') throw bad(k, 'a non-empty string (the one given to exportIdentity({passphrase}))', v);
        break;
      case 'quotaBytes':
        if (typeof v !== 'number' || !Number.isSafeInteger(v) || v <= 0) throw bad(k, 'a positive whole number of bytes', v);
        break;
      case 'schemas':
        if (!isPlainObject(v)) throw bad(k, 'an object {collection: schema}', v);
        for (const [c, schema] of Object.entries(v)) if (!isPlainObject(schema)) throw bad(`schemas.${c}`, 'a schema object', schema);
        break;
      case 'onError':
        if (typeof v !== 'function') throw bad(k, 'a function', v);
        break;
      case 'owner':
        if (typeof v !== 'string' || !/^[0-9a-f]{98}$/i.test(v)) throw bad(k, "a public key (98 hex digits: the founder's db.publicKey)", v);
        break;
      case 'invite':
        if (typeof v !== 'string') throw bad(k, 'an invite link (a string from db.invite())', v);
        if (options.sync == null) throw bad(k, 'given with sync (an invite is redeemed at the server)', v);
        break;
      case 'sync':
        if (v !== null && !isSyncUrls(v)) throw bad(k, `a ws:// or wss:// URL or a list of 1-${MAX_SYNC_URLS} of them`, v);
        break;
      case 'syncToken':
        if (!isSyncTokenOption(v)) throw bad(k, 'a non-empty string (a bearer token) or a function returning one', v);
        break;
      default:
    }
  }
  checkVersionOptions(options, bad);
}
