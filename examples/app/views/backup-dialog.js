// Backups: the whole board (every signed commit, db.exportCommits()) as one file, and a restore
// with db.receive(bundle), which verifies every signature and merges: restoring into an empty
// browser brings the board back; restoring into a board that has moved on adds only what it lacks.
//
// A backup belongs to its board: every seal in it is signed for the board's name (docs/design.md
// §5.1), so it cannot be restored into a board of another name (ibexdb refuses it, SignatureError
// `wrong-repository`). The file therefore names its board (lib/backup-file.js), and restoring a
// backup of another board offers to open that board and restore it there.
import { SignatureError } from 'ibexdb';
import { explain } from '../lib/access.js';
import { BackupFileError, boardFromFileName, readBackup, writeBackup } from '../lib/backup-file.js';
import { dialog, download, h } from '../lib/dom.js';

/** @typedef {typeof import('../app.js').app} App */

/** @param {App} app */
export function openBackupDialog(app) {
  const msg = h('p.msg', { role: 'status' });
  const other = h('div.other-board', { hidden: true });
  const file = /** @type {HTMLInputElement} */ (h('input', { type: 'file', accept: '.ibexdb,application/octet-stream', 'aria-label': 'Backup file' }));
  /** @param {string} text @param {'' | 'ok' | 'error'} [kind] */
  const say = (text, kind = '') => {
    msg.className = kind ? `msg ${kind}` : 'msg';
    msg.textContent = text;
  };
  const doDownload = async () => {
    const bytes = writeBackup(app.board, await app.db.exportCommits());
    const stamp = new Date().toISOString().slice(0, 16).replace(/[:T]/g, '-');
    download(bytes, `${app.board}-${stamp}.ibexdb`, 'application/octet-stream');
    say(`Downloaded ${(bytes.length / 1024).toFixed(1)} KiB.`, 'ok');
  };

  /** Receive the bundle into the open board and say what happened. @param {Uint8Array} bundle @param {string | null} fileName */
  const restore = async (bundle, fileName) => {
    say('Checking signatures…');
    try {
      const r = await app.db.receive(bundle);
      say(`Restored into “${app.board}”: ${r.applied} changes added, ${r.duplicates} already here${r.pending ? `, ${r.pending} waiting for earlier ones` : ''}.`, 'ok');
    } catch (err) {
      if (err instanceof SignatureError && err.kind === 'wrong-repository') {
        const guess = fileName ? boardFromFileName(fileName) : null;
        say(`This backup is of another board, not of “${app.board}”: a backup restores only into the board it was made from (every change in it is signed for that board). ` +
          (guess && guess !== app.board ? `Its file name says “${guess}”.` : 'Open the board it was made from (its name begins the file name) and restore it there.'), 'error');
        if (guess && guess !== app.board) offerBoard(guess, bundle, fileName);
        return;
      }
      say(`Not restored: ${explain(err)}`, 'error');
    }
  };

  /** Offer to open `board` and restore the backup there. @param {string} board @param {Uint8Array} bundle @param {string | null} fileName */
  const offerBoard = (board, bundle, fileName) => {
    other.hidden = false;
    other.replaceChildren(h('button.primary', {
      type: 'button',
      onclick: async () => {
        other.hidden = true;
        say(`Opening “${board}”…`);
        try {
          await app.openBoard(board);
        } catch (err) {
          say(`The board “${board}” could not be opened: ${explain(err)}`, 'error');
          return;
        }
        await restore(bundle, fileName);
      },
    }, `Open “${board}” and restore it there`));
  };

  const doRestore = async (/** @type {SubmitEvent} */ e) => {
    e.preventDefault();
    const f = file.files?.[0];
    if (!f) return;
    other.hidden = true;
    let backup;
    try {
      backup = readBackup(new Uint8Array(await f.arrayBuffer()));
    } catch (err) {
      say(err instanceof BackupFileError ? err.message : `Not restored: ${explain(err)}`, 'error');
      return;
    }
    if (backup.board && backup.board !== app.board) {
      say(`This is a backup of the board “${backup.board}”, not of “${app.board}”. A backup restores only into its own board (every change in it is signed for “${backup.board}”); this board stays as it is.`);
      offerBoard(backup.board, backup.bundle, f.name);
      return;
    }
    await restore(backup.bundle, f.name);
  };

  dialog('Backup', h('div', null,
    h('p', null, 'A backup holds every change to this board, each signed by its author. It restores this board into any browser, even one that has never seen it. A backup of another board restores into that board: restoring it here offers to open it.'),
    h('button.primary', { type: 'button', onclick: doDownload }, 'Download backup'),
    h('form', { onsubmit: doRestore }, h('label.field', null, h('span', null, 'Restore from a backup file'), file), h('button', { type: 'submit' }, 'Restore')),
    msg,
    other), { label: 'Backup' });
}
