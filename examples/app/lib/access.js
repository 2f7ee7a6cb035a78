// Who may do what on this board, in words: public keys, this device's role, and the refusals of
// ibexdb's typed errors. No DOM here; the share dialog, the join banner and the notices use it.
import { AuthError, IbexError, InvalidValueError, LimitError, PermissionError, QuotaExceededError, StorageError, UnavailableError } from 'ibexdb';

/** @typedef {import('ibexdb').Members} Members */
/** @typedef {import('ibexdb').Role | 'public-reader' | 'public-writer' | 'anyone' | 'none'} Access */

/** A device's public key: a compressed P-384 point, 98 lowercase hex digits starting 02 or 03. */
const KEY_RE = /^0[23][0-9a-f]{96}$/;

/**
 * The key as typed or pasted (spaces, line breaks and capitals are forgiven), or an error text.
 * @param {string} text
 * @returns {{key: string} | {error: string}}
 */
export function parsePublicKey(text) {
  const key = text.replace(/\s+/g, '').toLowerCase();
  if (!key) return { error: 'Paste the public key of the person to invite (they find it under Share on their device).' };
  if (!/^[0-9a-f]*$/.test(key)) return { error: 'A public key has only the digits 0–9 and the letters a–f.' };
  if (key.length !== 98) return { error: `A public key has 98 characters; this one has ${key.length}.` };
  if (!KEY_RE.test(key)) return { error: 'This is not a public key: it must start with 02 or 03.' };
  return { key };
}

/**
 * What `publicKey` may do according to the access list.
 * @param {Members} m @param {string | null} publicKey
 * @returns {Access}
 */
export function accessOf(m, publicKey) {
  if (!m.owned) return 'anyone';
  const mine = m.members.find((x) => x.publicKey === publicKey);
  if (mine) return mine.role;
  if (m.public.write) return 'public-writer';
  if (m.public.read) return 'public-reader';
  return 'none';
}

/** @param {Access} a */
export const canWrite = (a) => a === 'owner' || a === 'writer' || a === 'public-writer' || a === 'anyone';

/** Members in the order the dialog lists them: owners, writers, readers; by key within a role. @param {Members} m */
export function sortedMembers(m) {
  const rank = { owner: 0, writer: 1, reader: 2 };
  return [...m.members].sort((a, b) => rank[a.role] - rank[b.role] || a.publicKey.localeCompare(b.publicKey));
}

/**
 * A refusal or failure in words a user can act on.
 * @param {unknown} err
 * @returns {string}
 */
export function explain(err) {
  if (err instanceof PermissionError) return PERMISSION_TEXT[err.kind] ?? `Not allowed: ${err.message}`;
  if (err instanceof AuthError) return `The server did not accept this device’s signature (${err.kind ?? 'auth'}): ${err.message}`;
  if (err instanceof LimitError) return `The server refused: a limit was reached (${err.limit ?? 'limit'}).`;
  if (err instanceof UnavailableError) return 'The server is unavailable right now; changes stay on this device and are sent later.';
  if (err instanceof InvalidValueError) return err.message;
  if (err instanceof QuotaExceededError) return STORAGE_FULL;
  if (err instanceof StorageError) return `This device could not save your change (its storage failed: ${err.message}). Nothing saved before is lost; try again, or reload the page.`;
  if (err instanceof IbexError) return `${err.name}: ${err.message}`;
  return err instanceof Error ? err.message : String(err);
}

/**
 * Out of room: what happened, and what does (and does not) help. Every change is a signed commit
 * kept in the board's history, so deleting tasks adds a change rather than freeing space.
 */
export const STORAGE_FULL =
  'This device has no room left for the board: your change was not saved (nothing saved before is lost). ' +
  'Deleting tasks does not free space: every change is kept in the board’s signed history. ' +
  'Free up space on this device (files, apps, or other websites’ data in the browser settings), then try again.';

/** @type {Record<string, string>} */
const PERMISSION_TEXT = {
  'cannot-read': 'You do not have access to this board: an owner has to invite your public key.',
  'cannot-write': 'You cannot change this board (you are a reader here, or an owner removed you): your change was not saved.',
  'cannot-administer': 'Only an owner of this board can invite, change roles or remove people.',
  'foreign-root': 'This device already holds another board under this name; it cannot be merged with the one on the server.',
  'cannot-create': 'The server does not accept this board: it was not created with a signing key.',
  'invite-used': 'This invite link was already used: a link works only as many times as its owner chose. Ask an owner of the board for a new one.',
  'invite-expired': 'This invite link has expired. Ask an owner of the board for a new one.',
  'invite-revoked': 'This invite link was revoked by an owner of the board. Ask them for a new one.',
  'invite-invalid': 'This invite link is not valid for this board (it is damaged, or not an invite of this board). Ask an owner of the board for a new one.',
};
