// Error classes of ibexdb. Every error the database reports is an `IbexError` subclass whose
// `name` is stable (it is the core's `Error::name()`), so apps can test either
// `err instanceof NotFoundError` or `err.name === 'NotFoundError'`. Extra details of the error
// (the schema `field`, the `key`, the log `offset`, ...) are own properties.
//
// Errors cross the worker boundary as plain `{name, message, ...details}` objects (structured
// clone keeps only standard error names); `fromWire` rebuilds the subclass.

export class IbexError extends Error {
  /**
   * @param {string} message
   * @param {Record<string, unknown>} [details]
   */
  constructor(message, details) {
    super(message);
    if (details) {
      for (const [k, v] of Object.entries(details)) {
        if (k !== 'name' && k !== 'message' && k !== 'stack') /** @type {any} */ (this)[k] = v;
      }
    }
  }
}

/** A write breaks the collection's schema (`field` and `rule` say how). */
export class SchemaError extends IbexError {}
/** A schema definition is malformed. */
export class InvalidSchemaError extends IbexError {}
/**
 * A schema version does not fit (`stored`: the repository's version, `version`: the one
 * involved): the application understands an older version than the repository holds (its
 * writes are refused, `db.readOnly` says why), or a stored schema would go down a version.
 */
export class SchemaVersionError extends IbexError {}
/**
 * A migration (`open(name, {migrations})`) failed: it threw (`cause`), or returned something
 * that is not an item (`version`, `key` name where). Nothing of that step was written.
 */
export class MigrationError extends IbexError {}
/**
 * A passphrase does not unlock a wrapped identity (`open(name, {identity, passphrase})`): a wrong
 * passphrase, or changed bytes (GCM cannot tell them apart); `kind`: `wrong-passphrase`. Nothing
 * was opened or stored.
 */
export class PassphraseError extends IbexError {}
/** The item does not exist (e.g. `update` of a missing key). */
export class NotFoundError extends IbexError {}
/** `attachment(key, name)`: the item has no attachment of that name (`key`, `attachment`). */
export class AttachmentNotFoundError extends IbexError {}
/** `attachment(key, name)`: this device has the attachment's record but not its bytes (`key`, `attachment`, `hash`). */
export class AttachmentUnavailableError extends IbexError {}
/** A key is not `collection/id` or breaks a limit; or a repository name is invalid. */
export class InvalidKeyError extends IbexError {}
/** A value cannot be stored (NaN, Infinity, a Date or Map, a cycle, a bad field name, ...). */
export class InvalidValueError extends IbexError {}
/** Something is larger than its limit (an item over 16 MiB, a transaction, ...). */
export class TooLargeError extends IbexError {}
/** Any other storage failure. */
export class StorageError extends IbexError {}
/** The origin's storage quota (or the repository's `quotaBytes`) is exhausted. */
export class QuotaExceededError extends StorageError {}
/** ibexdb cannot work here (`kind`: insecure context, no OPFS, site data blocked, CSP, the worker or wasm not loading, …). */
export class StorageUnavailableError extends StorageError {}
/** The database was closed. */
export class ClosedError extends IbexError {}
/** The log is damaged in the middle (`offset`, `nextValid`). */
export class CorruptError extends IbexError {}
/** A commit or seal failed signature checks (`kind`). */
export class SignatureError extends IbexError {}
/** A query is malformed. */
export class QueryError extends IbexError {}
/** `verify()` found a mismatch. */
export class VerifyError extends IbexError {}
/** The engine panicked (a bug); the worker reopened it from OPFS. */
export class PanicError extends IbexError {}
/** Bytes (a bundle, a commit) could not be decoded. */
export class DecodeError extends IbexError {}
/** A received commit's clock is too far ahead of local time. */
export class ClockSkewError extends IbexError {}
/** A sync protocol message was refused (bad version, unknown type, malformed, unexpected). */
export class ProtocolError extends IbexError {}
/**
 * The repository's access list does not allow it (`kind`: `cannot-read`, `cannot-write`,
 * `cannot-administer`, `foreign-root`, `cannot-create`, `not-found`, `wrong-founder`,
 * `invite-invalid`, `invite-expired`, `invite-used`, `invite-revoked`): a local write, a grant,
 * an invite's redemption, the server refusing this replica's session or push, or a repository
 * whose founder is not the `owner` the application pinned.
 */
export class PermissionError extends IbexError {}
/**
 * The sync server did not accept this replica's session proof (`kind`: `stale`, `wrong-server`,
 * ...) or its bearer token (`token-expired`, `token-scope`, ...); `token-unavailable`: the app's
 * `syncToken` failed, so nothing was dialed.
 */
export class AuthError extends IbexError {}
/** The sync server refused something over one of its limits (`limit` names it). */
export class LimitError extends IbexError {}
/** The sync server cannot serve the repository now (try again later). */
export class UnavailableError extends IbexError {}
/**
 * An encrypted repository's data could not be decrypted on this device (`kind`: `missing-key`,
 * `unwrap`, `aead`, `malformed`); a tampered ciphertext is a `SignatureError` instead.
 */
export class DecryptError extends IbexError {}

/**
 * Every class by its name. The names are the core's `Error::name` values (plus `IbexError` and
 * `PanicError`, which only this library makes); a Rust test (src/error.rs) fails when the two
 * drift apart.
 * @type {Record<string, typeof IbexError>}
 */
export const ERROR_CLASSES = {
  IbexError,
  SchemaError,
  InvalidSchemaError,
  SchemaVersionError,
  MigrationError,
  PassphraseError,
  NotFoundError,
  AttachmentNotFoundError,
  AttachmentUnavailableError,
  InvalidKeyError,
  InvalidValueError,
  TooLargeError,
  StorageError,
  QuotaExceededError,
  StorageUnavailableError,
  ClosedError,
  CorruptError,
  SignatureError,
  QueryError,
  VerifyError,
  PanicError,
  DecodeError,
  ClockSkewError,
  ProtocolError,
  PermissionError,
  AuthError,
  LimitError,
  UnavailableError,
  DecryptError,
};

for (const [name, cls] of Object.entries(ERROR_CLASSES)) {
  Object.defineProperty(cls.prototype, 'name', { value: name, writable: true, configurable: true });
}

/**
 * An error as it crosses postMessage: `{name, message, ...details}` (primitive details only).
 * @typedef {{name: string, message: string, [k: string]: unknown}} WireError
 */

/**
 * Plain, cloneable form of any error: `{name, message, ...details}`.
 * @param {unknown} err
 * @returns {WireError}
 */
export function toWire(err) {
  if (err && typeof err === 'object') {
    const e = /** @type {any} */ (err);
    /** @type {WireError} */
    const out = { name: String(e.name ?? 'Error'), message: String(e.message ?? e) };
    for (const [k, v] of Object.entries(e)) {
      if (k !== 'name' && k !== 'message' && k !== 'stack' && (v === null || typeof v !== 'object')) out[k] = v;
    }
    return out;
  }
  return { name: 'Error', message: String(err) };
}

/**
 * The class of error name `name`: only this module's own (a name a sync server sends, such as
 * `constructor` or `toString`, must not reach Object.prototype's properties).
 * @param {unknown} name
 * @returns {(typeof ERROR_CLASSES)[keyof typeof ERROR_CLASSES] | undefined}
 */
function classOf(name) {
  return typeof name === 'string' && Object.hasOwn(ERROR_CLASSES, name) ? ERROR_CLASSES[/** @type {keyof typeof ERROR_CLASSES} */ (name)] : undefined;
}

/**
 * Rebuild an error from its wire form. Unknown names become a plain `IbexError` that keeps
 * the name.
 * @param {WireError} w
 * @returns {Error}
 */
export function fromWire(w) {
  const cls = classOf(w.name);
  if (cls) return new cls(w.message, w);
  const e = new IbexError(w.message, w);
  Object.defineProperty(e, 'name', { value: w.name, writable: true, configurable: true });
  return e;
}

/**
 * The error class of each sync protocol error code (docs/design.md §12.2), for a name this
 * library does not know (a newer server); code 0 ("other") and unknown codes have none. A Rust
 * test (src/sync/tests.rs) checks it against the codes the core sends.
 * @type {Record<number, string>}
 */
const SYNC_CODES = {
  1: 'ProtocolError',
  2: 'SignatureError',
  3: 'DecodeError',
  4: 'ClockSkewError',
  5: 'TooLargeError',
  6: 'StorageError',
  7: 'InvalidKeyError',
  8: 'PermissionError',
  9: 'AuthError',
  10: 'LimitError',
  11: 'UnavailableError',
  12: 'SchemaError',
};

/**
 * The wire form of an `Error` message from the sync server, from its fields as the engine's
 * sync event carries them (docs/design.md §12.2): the error's `name` (the server's
 * `Error::name`; a name without a class here falls back to the class of the `code`), its `kind`
 * (a `LimitError`'s `limit`), its text.
 * @param {{code?: number, name?: string, kind?: string | null, message?: string}} ev
 * @returns {WireError}
 */
export function syncErrorToWire(ev) {
  const code = ev.code ?? 0;
  const name = ev.name && classOf(ev.name) ? ev.name : (SYNC_CODES[code] ?? 'IbexError');
  /** @type {WireError} */
  const w = { name, message: `the sync server refused: ${ev.message ?? ''}`, code };
  if (ev.kind) w[name === 'LimitError' ? 'limit' : 'kind'] = ev.kind;
  return w;
}
