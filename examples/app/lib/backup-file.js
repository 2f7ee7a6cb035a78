// The backup file: which board it is of, then the board as ibexdb exports it. A backup restores
// only into the board it was made from (every seal in it is signed for that board's name), so
// the file says which board that is, and the restore can open it.
//
//   ibexdb-taskboard-backup-1\n          format line
//   {"board": "<name>", "made": "<ISO time>"}\n   at most 1 KiB of JSON
//   <the bundle of db.exportCommits()>   starts with "IBEXBND1"
//
// A bare bundle (a backup from before this format, or exported by another app) is read too:
// its board is then unknown until ibexdb checks it.

const FORMAT = 'ibexdb-taskboard-backup-1\n';
const BUNDLE_MAGIC = 'IBEXBND1';
const MAX_HEADER = 1024;
const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

export class BackupFileError extends Error {
  name = 'BackupFileError';
}

/**
 * The file for a backup of `board`.
 * @param {string} board @param {Uint8Array} bundle from db.exportCommits()
 * @returns {Uint8Array<ArrayBuffer>}
 */
export function writeBackup(board, bundle) {
  const head = new TextEncoder().encode(`${FORMAT}${JSON.stringify({ board, made: new Date().toISOString() })}\n`);
  const out = new Uint8Array(head.length + bundle.length);
  out.set(head);
  out.set(bundle, head.length);
  return out;
}

/** @param {Uint8Array} bytes @param {string} text */
const startsWith = (bytes, text) => bytes.length >= text.length && [...text].every((c, i) => bytes[i] === c.charCodeAt(0));

/**
 * Read a backup file: its board (null for a bare bundle) and the bundle.
 * @param {Uint8Array} bytes
 * @returns {{board: string | null, bundle: Uint8Array}}
 */
export function readBackup(bytes) {
  if (startsWith(bytes, BUNDLE_MAGIC)) return { board: null, bundle: bytes };
  if (!startsWith(bytes, FORMAT)) throw new BackupFileError('This file is not a backup of a task board (choose a .ibexdb file made with “Download backup”).');
  const rest = bytes.subarray(FORMAT.length);
  const end = rest.subarray(0, MAX_HEADER).indexOf(0x0a);
  let board;
  try {
    board = end < 0 ? undefined : JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(rest.subarray(0, end))).board;
  } catch {
    board = undefined;
  }
  if (typeof board !== 'string' || !NAME_RE.test(board)) throw new BackupFileError('This backup file is damaged: it does not say which board it is of.');
  const bundle = rest.subarray(end + 1);
  if (!startsWith(bundle, BUNDLE_MAGIC)) throw new BackupFileError(`This backup file of “${board}” is damaged or cut short: the board’s changes are missing.`);
  return { board, bundle };
}

/**
 * The board a backup file is named after (`<board>-YYYY-MM-DD-HH-MM.ibexdb`, as downloaded),
 * for bare bundles; null if the name does not say.
 * @param {string} fileName
 */
export function boardFromFileName(fileName) {
  const m = /^(.+)-\d{4}-\d\d-\d\d-\d\d-\d\d(?: \(\d+\))?\.ibexdb$/.exec(fileName);
  return m && NAME_RE.test(m[1]) ? m[1] : null;
}
