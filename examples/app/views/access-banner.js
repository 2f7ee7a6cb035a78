// The banner between the header and the board that says what this device may do here: joining
// (fetching a shared board before editing it), no access yet (with this device's key, to send
// to an owner), read only, removed, or the server's refusal. It follows the access list
// (lib/watch-access.js) and the sync status (db.onSyncStatus) live, and decides whether the
// board's controls that write are enabled (`app.setEditable`): only for a device that may
// write by the access list it holds and that the server has not refused. A server that is
// unavailable (down, restarting) refuses nothing: the status says so, edits go on.
import { PermissionError } from 'ibexdb';
import { accessOf, canWrite, explain } from '../lib/access.js';
import { h } from '../lib/dom.js';
import { watchAccess } from '../lib/watch-access.js';

/** @typedef {typeof import('../app.js').app} App */

export class AccessBanner {
  /** @param {App} app */
  constructor(app) {
    this.app = app;
    this.el = h('section.access', { hidden: true, 'aria-label': 'Access', role: 'status' });
    /** @type {() => void} */
    this._stop = () => {};
  }

  /** @param {string} kind @param {string} title @param {...any} body */
  show(kind, title, ...body) {
    this.el.hidden = false;
    this.el.dataset.kind = kind;
    this.el.replaceChildren(h('strong', null, title), ...body);
  }

  hide() {
    this.el.hidden = true;
    this.el.replaceChildren();
  }

  /** This device's key with a copy button, for "send it to an owner". */
  keyBox() {
    const key = this.app.db.publicKey ?? '';
    const copy = h('button', { type: 'button', onclick: () => navigator.clipboard?.writeText(key).then(() => (copy.textContent = 'Copied'), () => {}) }, 'Copy');
    return h('div.keybox', null, h('code.key', null, key), copy);
  }

  /** After joining: show read-only access and refusals until the next reopen. */
  async follow() {
    this._stop();
    const db = this.app.db;
    /** @type {import('ibexdb').Members | null} */
    let members = null;
    /** @type {import('ibexdb').SyncStatus | null} */
    let status = await db.syncStatus();
    const render = () => {
      if (this.app.db === db) this._render(db, members, status); // else closed for a reopen
    };
    const stopAccess = await watchAccess(db, (m) => {
      members = m;
      render();
    });
    const stopSync = db.onSyncStatus((s) => {
      status = s;
      render();
    });
    this._stop = () => {
      stopAccess();
      stopSync();
    };
  }

  /** @param {import('ibexdb').Database} db @param {import('ibexdb').Members | null} m @param {import('ibexdb').SyncStatus | null} st */
  _render(db, m, st) {
    const err = st?.state === 'error' ? st.lastError : null;
    // The access list this device holds; before it is read, the server's word at the handshake.
    const access = m && accessOf(m, db.publicKey);
    const mayWrite = access ? canWrite(access) : (st?.rights?.write ?? true);
    const refusedByServer = err instanceof PermissionError && (err.kind === 'cannot-read' || err.kind === 'cannot-write');
    this.app.setEditable(mayWrite && !refusedByServer);
    const kept = 'Nothing on this device is deleted: changes made here before that the server did not take stay on this device, unsent.';
    if (err instanceof PermissionError && err.kind === 'cannot-read') {
      return this.show('refused', 'The server refuses this device access to this board.',
        h('p', null, `An owner removed your key, or never invited it: you can read what is on this device, not change it. ${kept} To get access again, send your key to an owner:`),
        this.keyBox());
    }
    if (err instanceof PermissionError && err.kind === 'cannot-write') {
      return this.show('refused', 'The server refused your changes: you can only read this board.',
        h('p', null, 'Your changes stay on this device, unsent, and are sent if an owner makes you a writer again.'));
    }
    if (err) return this.show('refused', 'The server refused to sync.', h('p', null, explain(err)));
    if (access === 'none') {
      return this.show('refused', 'You were removed from this board.',
        h('p', null, `You can read what is on this device, not change it. ${kept} To get access again, send your key to an owner:`),
        this.keyBox());
    }
    if (!mayWrite) {
      return this.show('read-only', 'You can read this board, not change it.',
        h('p', null, 'Ask an owner to make you a writer (Share shows your key).'));
    }
    this.hide();
  }
}
