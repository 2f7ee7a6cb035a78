// Backups: the whole repository (every signed commit) as one file from db.exportCommits(), and
// a restore with db.receive(bundle), which verifies every signature and merges: restoring into an
// empty browser brings the board back; restoring into a board that has moved on adds only what
// it lacks.
import { explain } from '../lib/access.js';
import { dialog, download, h } from '../lib/dom.js';

/** @param {typeof import('../app.js').app} app */
export function openBackupDialog(app) {
  const msg = h('p.msg', { role: 'status' });
  const file = /** @type {HTMLInputElement} */ (h('input', { type: 'file', accept: '.ibexdb,application/octet-stream', 'aria-label': 'Backup file' }));
  const doDownload = async () => {
    const bytes = await app.db.exportCommits();
    const stamp = new Date().toISOString().slice(0, 16).replace(/[:T]/g, '-');
    download(bytes, `${app.board}-${stamp}.ibexdb`, 'application/octet-stream');
    msg.className = 'msg ok';
    msg.textContent = `Downloaded ${(bytes.length / 1024).toFixed(1)} KiB.`;
  };
  const doRestore = async (/** @type {SubmitEvent} */ e) => {
    e.preventDefault();
    const f = file.files?.[0];
    if (!f) return;
    msg.className = 'msg';
    msg.textContent = 'Checking signatures…';
    try {
      const r = await app.db.receive(new Uint8Array(await f.arrayBuffer()));
      msg.className = 'msg ok';
      msg.textContent = `Restored: ${r.applied} changes added, ${r.duplicates} already here${r.pending ? `, ${r.pending} waiting for earlier ones` : ''}.`;
    } catch (err) {
      msg.className = 'msg error';
      msg.textContent = `Not restored (${/** @type {Error} */ (err).name}): ${explain(err)}`;
    }
  };
  dialog('Backup', h('div', null,
    h('p', null, 'A backup holds every change to this board, each signed by its author. It restores into any browser, even one that has never seen the board.'),
    h('button.primary', { type: 'button', onclick: doDownload }, 'Download backup'),
    h('form', { onsubmit: doRestore }, h('label.field', null, h('span', null, 'Restore from a backup file'), file), h('button', { type: 'submit' }, 'Restore')),
    msg), { label: 'Backup' });
}
