// Invite links (docs/design.md §6.4 "Invites"): making a link from an invite the worker wrote,
// reading one back, and the arguments' checks. The secret travels only in the URL fragment
// (`#ibexdb-invite=…`), which browsers never send to a server.

import { fromBase64url, toBase64url } from './codec.js';
import { ClosedError, InvalidValueError } from './errors.js';
import { describe, isPlainObject } from './args.js';

const ROLES = ['reader', 'writer', 'owner'];
const PREFIX = 'ibexdb-invite=';
const MAX_USES = 1000;

/** @param {string} s @returns {Uint8Array | null} the 32-byte secret of a link */
function fromB64url(s) {
  return /^[A-Za-z0-9_-]{43}$/.test(s) ? fromBase64url(s) : null;
}

/**
 * Check `db.invite(options)`; the options with their defaults (expires: 7 days from now).
 * @param {unknown} options
 * @returns {{role: string, expires: number, uses: number, base: string | undefined}}
 */
export function inviteOptions(options) {
  const bad = (/** @type {string} */ path, /** @type {string} */ want, /** @type {unknown} */ v) =>
    new InvalidValueError(`invite(options): ${path} must be ${want}, got ${describe(v)}`, { path, argument: 'options' });
  if (!isPlainObject(options)) throw bad('options', '{role, expires?, uses?, base?}', options);
  const o = /** @type {Record<string, unknown>} */ (options);
  for (const k of Object.keys(o)) if (!['role', 'expires', 'uses', 'base'].includes(k)) throw bad(k, 'absent (unknown option)', o[k]);
  if (typeof o.role !== 'string' || !ROLES.includes(o.role)) throw bad('role', "'reader', 'writer' or 'owner'", o.role);
  const expires = o.expires instanceof Date ? o.expires.getTime() : o.expires ?? Date.now() + 7 * 24 * 3600 * 1000;
  if (typeof expires !== 'number' || !Number.isSafeInteger(expires) || expires < 0) throw bad('expires', 'a Date or a whole number of ms since the epoch', o.expires);
  const uses = o.uses ?? 1;
  if (typeof uses !== 'number' || !Number.isInteger(uses) || uses < 1 || uses > MAX_USES) throw bad('uses', `a whole number from 1 to ${MAX_USES}`, o.uses);
  if (o.base !== undefined && typeof o.base !== 'string') throw bad('base', 'a URL string', o.base);
  return { role: o.role, expires, uses, base: /** @type {string | undefined} */ (o.base) };
}

/** A fresh 32-byte secret. */
export function inviteSecret() {
  return crypto.getRandomValues(new Uint8Array(32));
}

/**
 * The link: `<base>#ibexdb-invite=<repo>.<invite commit>.<role>.<secret>`.
 * @param {string | undefined} base @param {string} repo @param {string} commit @param {string} role @param {Uint8Array} secret
 */
export function inviteLink(base, repo, commit, role, secret) {
  const page = base ?? (typeof location !== 'undefined' ? location.href : '');
  return `${page.split('#')[0]}#${PREFIX}${repo}.${commit}.${role}.${toBase64url(secret)}`;
}

/**
 * Read an invite link (or its fragment) for repository `name`: InvalidValueError if malformed
 * or for another repository.
 * @param {string} name @param {unknown} link
 * @returns {{secret: Uint8Array, role: string, commit: string}}
 */
export function parseInvite(name, link) {
  const bad = (/** @type {string} */ why) => new InvalidValueError(`open(name, { invite }): ${why}, got ${describe(link)}`, { path: 'invite', argument: 'options' });
  if (typeof link !== 'string') throw bad('invite must be an invite link (a string)');
  const at = link.indexOf(PREFIX);
  if (at < 0) throw bad(`an invite link holds "#${PREFIX}…"`);
  const body = link.slice(at + PREFIX.length);
  const m = /^(.+)\.([0-9a-f]{64})\.(reader|writer|owner)\.([A-Za-z0-9_-]{43})$/.exec(body);
  const secret = m && fromB64url(m[4]);
  if (!m || !secret) throw bad('the invite link is malformed');
  if (m[1] !== name) throw bad(`the invite is for repository ${JSON.stringify(m[1])}, not ${JSON.stringify(name)}`);
  return { secret, role: m[3], commit: m[2] };
}

/**
 * Have `db`'s worker write an invite with a fresh secret; the link and the invite's id.
 * @param {{name: string, _send: (op: any, args: any[], dec: (t: string) => any) => Promise<any>}} db
 * @param {ReturnType<typeof inviteOptions>} o
 * @returns {Promise<{link: string, id: string}>}
 */
export async function sendInvite(db, o) {
  const secret = inviteSecret();
  const r = await db._send('invite', [secret, o.role, o.expires, o.uses], (t) => JSON.parse(t));
  return { link: inviteLink(o.base, db.name, r.commit, o.role, secret), id: r.id };
}

const RANK = { reader: 1, writer: 2, owner: 3 };

/**
 * What `open(name, {sync, invite})` does with the link once the replica has synced
 * (docs/design.md §6.4 "Invites", "A device that already reads"): a new device redeemed it
 * while the server kept it waiting (worker/sync.js); a device that already reads redeems it
 * only if it gives more than the role it has (`db.redeem`, which writes nothing when the key
 * already has the role or a higher one, so the link keeps its use, and refuses with
 * `invite-invalid`, writing nothing, when an owner's entry sets the key's role). Resolves to
 * 'redeemed' (this device got the link's role), 'kept' (it already had it: the link is unused)
 * or the typed error; never rejects.
 * @param {SyncedDb & {name: string, publicKey: string | null, members: () => Promise<{members: {publicKey: string, role: string}[]}>, redeem: (link: string) => Promise<boolean>}} db
 * @param {string} link an invite link for this repository (checked by open())
 * @returns {Promise<'redeemed' | 'kept' | Error>}
 */
export async function redeemIfMore(db, link) {
  const role = parseInvite(db.name, link).role;
  const rank = async () => {
    const mine = (await db.members()).members.find((m) => m.publicKey === db.publicKey);
    return mine ? RANK[/** @type {keyof typeof RANK} */ (mine.role)] ?? 0 : 0;
  };
  try {
    const before = await rank();
    await synced(db);
    if (await db.redeem(link)) {
      await db.sync();
      return 'redeemed';
    }
    const want = RANK[/** @type {keyof typeof RANK} */ (role)];
    return before < want && (await rank()) >= want ? 'redeemed' : 'kept';
  } catch (e) {
    return /** @type {Error} */ (e);
  }
}

/** @typedef {{sync: () => Promise<unknown>, syncStatus: () => Promise<{state: string, lastError: any}>, onSyncStatus: (f: (st: {state: string, lastError: any}) => void) => () => void}} SyncedDb */

/**
 * Until the replica has synced (state `synced`), through the wait of a session the server keeps
 * waiting (`cannot-read`: a new device whose redemption is on its way is welcomed once it is
 * stored); a refusal (`invite-used`, …) is thrown as it is. It watches the status rather than
 * calling `db.sync()`, which dials again after a refusal (and the status would then say
 * `cannot-read` instead of why the link was refused).
 * @param {SyncedDb} db
 */
async function synced(db) {
  /** @type {{state: string, lastError: any}} */
  const st = await new Promise((resolve) => {
    const settled = (/** @type {{state: string, lastError: any}} */ st) =>
      st.state === 'synced' || st.state === 'off' || (st.state === 'error' && st.lastError?.kind !== 'cannot-read');
    const stop = db.onSyncStatus((st) => {
      if (settled(st)) stop(), resolve(st);
    });
    db.syncStatus().then((st) => {
      if (settled(st)) stop(), resolve(st);
    }, (err) => (stop(), resolve({ state: 'error', lastError: err })));
  });
  if (st.state === 'error') throw st.lastError;
  if (st.state === 'off') throw new ClosedError('sync stopped before the invite link was used');
}
