// The application's bearer token for the sync server (`open(name, { sync, syncToken })`;
// docs/design.md §12.4, "Bearer tokens"). `syncToken` is a string or a function (sync or async)
// returning one; it is asked for again before every dial, so a reconnect carries a fresh token
// (tokens expire). In the browser the page owns the function: the worker asks it through a
// request/response message before each connection attempt and keeps the answer only for that
// dial (worker.js `token`); in Node the database calls it directly (node/index.js).
//
// A function that throws, returns something other than a non-empty string, or does not answer
// within TOKEN_TIMEOUT_MS is an `AuthError` of kind `token-unavailable` (the sync status reports
// it, `db.sync()` rejects with it); a token the server refuses is the server's `AuthError` kind.

import { AuthError, toWire } from './errors.js';

/** How long a `syncToken` function may take to answer before the dial gives up (ms). */
export const TOKEN_TIMEOUT_MS = 10_000;
/** The subprotocol a browser offers beside the token's (the server answers it). */
export const TOKEN_PROTOCOL = 'ibexdb';
/** The prefix of the subprotocol entry that carries the token (`ibexdb.bearer.TOKEN`). */
export const TOKEN_PROTOCOL_PREFIX = 'ibexdb.bearer.';
/** A subprotocol's characters (RFC 7230 `token`): a JWT's base64url and dots are. */
const PROTOCOL_CHARS = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * Whether `v` is a valid `syncToken` option: a non-empty string or a function.
 * @param {unknown} v
 */
export const isSyncTokenOption = (v) => (typeof v === 'string' && v !== '') || typeof v === 'function';

/**
 * The token now: the string, or what the function returns (awaited), within TOKEN_TIMEOUT_MS.
 * @param {string | (() => string | Promise<string>)} source
 * @param {number} [timeoutMs]
 * @returns {Promise<string>}
 * @throws {AuthError} kind `token-unavailable`
 */
export async function fetchToken(source, timeoutMs = TOKEN_TIMEOUT_MS) {
  /** @type {unknown} */
  let token;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  try {
    const answer = typeof source === 'function' ? Promise.resolve().then(() => source()) : Promise.resolve(source);
    const late = new Promise((_, reject) => {
      timer = setTimeout(() => reject(unavailable(`the syncToken function did not answer within ${timeoutMs} ms`)), timeoutMs);
    });
    token = await Promise.race([answer, late]);
  } catch (e) {
    if (e instanceof AuthError) throw e;
    const w = toWire(e);
    throw unavailable(`the syncToken function failed: ${w.name}: ${w.message}`);
  } finally {
    clearTimeout(timer);
  }
  return checkToken(token);
}

/**
 * `token` if it is a non-empty string that can travel as a subprotocol entry.
 * @param {unknown} token
 * @returns {string}
 */
export function checkToken(token) {
  if (typeof token !== 'string' || token === '') {
    const got = token === null ? 'null' : typeof token;
    throw unavailable(`the syncToken function must return a non-empty string (the token), got ${got}`);
  }
  if (!PROTOCOL_CHARS.test(token)) throw unavailable('the token holds characters a WebSocket subprotocol cannot carry (a JWT is base64url and dots)');
  return token;
}

/** @param {string} message */
export const unavailable = (message) => new AuthError(message, { kind: 'token-unavailable' });
