// The page side of attachments (docs/design.md §6.7): `db.attach`, `db.attachment`,
// `db.detach`, `db.attachments` check their arguments here and send them to the worker
// (worker/attach-ops.js, which streams the bytes into OPFS: ../attachments.js).
//
// What crosses to the worker is a Blob or a ReadableStream, never the bytes in a message:
// a Blob (or File) goes as it is (a reference; the browser keeps large ones on disk), an
// ArrayBuffer or Uint8Array becomes a Blob, a ReadableStream is transferred where the browser
// can transfer streams (else it is read into a Blob first).

import { argKey, argString, describe, isPlainObject } from './args.js';
import { InvalidValueError } from './errors.js';

/** @type {boolean | undefined} */
let streamsTransfer;

/** Whether this browser transfers ReadableStreams through postMessage. */
function canTransferStreams() {
  if (streamsTransfer === undefined) {
    try {
      const s = new ReadableStream();
      structuredClone(s, { transfer: [/** @type {any} */ (s)] });
      streamsTransfer = true;
    } catch {
      streamsTransfer = false;
    }
  }
  return streamsTransfer;
}

/**
 * Check `attach`'s arguments; the source as the worker takes it, and its type (also the Node
 * entry's check: node/index.js).
 * @param {unknown} key
 * @param {unknown} name
 * @param {unknown} data
 * @param {unknown} options
 * @returns {{source: Blob | ReadableStream<unknown>, type: string}}
 */
export function attachArgs(key, name, data, options) {
  argKey('attach', key);
  argString('attach', name, 'name', 'an attachment name (a string)');
  if (options !== undefined && !isPlainObject(options)) {
    throw new InvalidValueError(`attach(options): options must be an object {type?}, got ${describe(options)}`, { path: 'options', argument: 'options' });
  }
  const t = /** @type {{type?: unknown} | undefined} */ (options)?.type;
  if (t !== undefined && typeof t !== 'string') {
    throw new InvalidValueError(`attach(options): options.type must be a string (a media type), got ${describe(t)}`, { path: 'options.type', argument: 'options.type' });
  }
  /** @param {string} why */
  const unusable = (why) => new InvalidValueError(`attach(data): data ${why}`, { path: 'data', argument: 'data' });
  if (data instanceof Blob) return { source: data, type: t ?? data.type };
  if (data instanceof ArrayBuffer || data instanceof Uint8Array) {
    // A transferred (detached) buffer cannot be read: a refusal, not the Blob's TypeError.
    const buffer = data instanceof ArrayBuffer ? data : data.buffer;
    if (/** @type {any} */ (buffer).detached === true) throw unusable('is a detached ArrayBuffer (it was transferred)');
    let source;
    try {
      source = new Blob([/** @type {BlobPart} */ (data)]);
    } catch {
      throw unusable('cannot be read (a detached ArrayBuffer?)');
    }
    return { source, type: t ?? '' };
  }
  if (typeof ReadableStream !== 'undefined' && data instanceof ReadableStream) {
    if (data.locked) throw unusable('is a locked ReadableStream (a reader holds it)');
    return { source: data, type: t ?? '' };
  }
  throw new InvalidValueError(`attach(data): data must be a Blob, an ArrayBuffer, a Uint8Array or a ReadableStream, got ${describe(data)}`, {
    path: 'data',
    argument: 'data',
  });
}

/**
 * `db.attach(key, name, data, {type})`.
 * @param {any} db the Database
 * @param {unknown} key @param {unknown} name @param {unknown} data @param {unknown} options
 * @returns {Promise<{name: string, hash: string, size: number, type: string}>}
 */
export async function sendAttach(db, key, name, data, options) {
  let { source, type } = attachArgs(key, name, data, options);
  if (source instanceof ReadableStream) {
    if (canTransferStreams()) db._transfer.push(source);
    else source = await new Response(source).blob();
  }
  return db._send('attach', [key, name, source, type], (/** @type {any} */ r) => r);
}

/**
 * `db.attachment(key, name)`: the bytes as a Blob of the attachment's type.
 * @param {any} db @param {unknown} key @param {unknown} name
 * @returns {Promise<Blob>}
 */
export async function sendAttachment(db, key, name) {
  argKey('attachment', key);
  argString('attachment', name, 'name', 'an attachment name (a string)');
  return db._send('attachment', [key, name], (/** @type {any} */ b) => b);
}

/**
 * `db.detach(key, name)`: whether the item had that attachment.
 * @param {any} db @param {unknown} key @param {unknown} name
 * @returns {Promise<boolean>}
 */
export async function sendDetach(db, key, name) {
  argKey('detach', key);
  argString('detach', name, 'name', 'an attachment name (a string)');
  return db._send('detach', [key, name], (/** @type {any} */ b) => b);
}

/**
 * `db.attachments(key)`: the item's attachments `{name, hash, size, type}`, by name.
 * @param {any} db @param {unknown} key
 * @returns {Promise<Array<{name: string, hash: string, size: number, type: string}>>}
 */
export async function sendAttachments(db, key) {
  argKey('attachments', key);
  return db._send('attachments', [key], (/** @type {string} */ t) => JSON.parse(t));
}
