// Sharing the board: invite another user's public key as a writer or a reader, see the members,
// revoke. It needs permissions on the sync server and db.grant(publicKey, role),
// db.revoke(publicKey) and db.members() in ibexdb. Until the ibexdb in use has them, the dialog
// shows this device's public key (to send to whoever invites you) and says that invitations are
// not available, rather than pretending.
import { dialog, h } from '../lib/dom.js';

/** @param {typeof import('../app.js').app} app */
export function openShareDialog(app) {
  const db = /** @type {any} */ (app.db);
  const supported = ['grant', 'revoke', 'members'].every((m) => typeof db[m] === 'function');
  dialog('Share this board', h('div.share', null,
    h('p', null, 'Your public key, to send to people who invite you:'),
    h('div.keybox', null, h('code.key', null, app.db.identity ?? ''), h('button', { type: 'button', onclick: () => navigator.clipboard?.writeText(app.db.identity ?? '') }, 'Copy')),
    h('div.notice', { role: 'note' },
      h('strong', null, supported ? 'This version of the app cannot invite yet. ' : 'Invitations are not available yet. '),
      supported
        ? 'ibexdb now has db.grant(), db.revoke() and db.members(); the invite form is the next piece of this app.'
        : 'They need permissions on the sync server and db.grant(), db.revoke() and db.members() in ibexdb, which this version does not have. ',
      'Until then, anyone who knows the board’s name and the server can sync it; every change stays signed by its author.')),
    { label: 'Share this board' });
}
