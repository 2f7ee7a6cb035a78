// Where sync stands with one deployment, persisted with the repository: the `sync` file beside
// the log (docs/design.md §11.5, §12.3) holds `{"v": 1, "url", "cursor", "pushFrom"}` as JSON.
// It must describe flushed state only (sync.js captures it right after a flush): a cursor past
// what the log holds would skip commits after a crash. A torn write leaves a file that does not
// parse, which means a restart from 0/0 (only slower).

/** The file's name in the repository's directory. */
const FILE = 'sync';
/** A position file is tiny; anything larger is not one. */
const MAX_BYTES = 4096;

/**
 * Where sync stands with one server (or the nodes of one deployment).
 * @typedef {object} SyncPosition
 * @property {string} url the server list as one string (policy.js syncUrlsKey)
 * @property {number} cursor the last server sequence received (and flushed)
 * @property {number} pushFrom local commit-table entries before it are known to the server
 */

/**
 * The persisted position, or null when there is none (or it does not parse).
 * @param {import('../engine.js').EngineHandle} engine
 * @returns {Promise<SyncPosition | null>}
 */
export async function loadPosition(engine) {
  const h = await engine.file(FILE);
  const size = h.getSize();
  if (size === 0 || size > MAX_BYTES) return null;
  const buf = new Uint8Array(size);
  h.read(buf, { at: 0 });
  try {
    const v = JSON.parse(new TextDecoder().decode(buf));
    const ok = v && v.v === 1 && typeof v.url === 'string' && Number.isSafeInteger(v.cursor) && Number.isSafeInteger(v.pushFrom) && v.cursor >= 0 && v.pushFrom >= 0;
    return ok ? { url: v.url, cursor: v.cursor, pushFrom: v.pushFrom } : null;
  } catch {
    return null;
  }
}

/**
 * Persist a position (flushed).
 * @param {import('../engine.js').EngineHandle} engine
 * @param {SyncPosition} pos
 */
export async function savePosition(engine, pos) {
  const h = await engine.file(FILE);
  const bytes = new TextEncoder().encode(JSON.stringify({ v: 1, url: pos.url, cursor: pos.cursor, pushFrom: pos.pushFrom }));
  h.write(bytes, { at: 0 });
  h.truncate(bytes.length);
  h.flush();
}
