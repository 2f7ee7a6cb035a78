// The banner between the header and the board that says what this device may do here: joining
// (fetching a shared board before editing it: views/join.js says how that goes), no access yet
// (with this device's key, to send to an owner), read only, removed, or the server's refusal.
// Once joined it follows the access list (a live query of `_acl`, read through db.members()) and
// the sync status (useSyncStatus) live, and decides whether the board's controls that write are
// enabled (`app.setEditable`): only for a device that may write by the access list it holds and
// that the server has not refused. A server that is unavailable (down, restarting) refuses
// nothing: the status says so, edits go on.
import { PermissionError } from 'ibexdb';
import { useLive, useSyncStatus } from 'ibexdb/vue';
import { h, reactive, shallowRef, watch, watchEffect } from 'vue';
import { accessOf, canWrite, explain } from '../lib/access.js';

/** @typedef {typeof import('../app.js').app} App */
/** @typedef {{text?: string, key?: boolean, again?: () => void, hint?: string}} Body */
/** @typedef {{kind: string, title: string} & Body} Shown */

/** What views/join.js shows while the board is fetched (null: nothing). */
export const banner = {
  state: reactive({ shown: /** @type {Shown | null} */ (null) }),
  /** @param {string} kind @param {string} title @param {Body} [body] */
  show(kind, title, body = {}) {
    this.state.shown = { kind, title, ...body };
  },
  hide() {
    this.state.shown = null;
  },
};

/** This device's key with a copy button, for "send it to an owner". @param {string} key */
function keyBox(key) {
  return h(KeyBox, { keyText: key });
}

const KeyBox = {
  props: { keyText: { type: String, required: true } },
  /** @param {{keyText: string}} props */
  setup(props) {
    const copied = shallowRef(false);
    const copy = () => navigator.clipboard?.writeText(props.keyText).then(() => (copied.value = true), () => {});
    return () => h('div', { class: 'keybox' }, [h('code', { class: 'key' }, props.keyText), h('button', { type: 'button', onClick: copy }, copied.value ? 'Copied' : 'Copy')]);
  },
};

/** @param {Shown} s @param {string} key */
function render(s, key) {
  return h('section', { class: 'access', 'aria-label': 'Access', role: 'status', 'data-kind': s.kind }, [
    h('strong', null, s.title),
    s.text !== undefined ? h('p', null, s.text) : null,
    s.key ? keyBox(key) : null,
    s.again ? h('div', { class: 'row' }, [h('button', { class: 'primary', type: 'button', onClick: s.again }, 'Check again'), h('span', { class: 'hint' }, s.hint ?? '')]) : null,
  ]);
}

/**
 * What the access list and the sync status say (null: nothing to say), and whether this device
 * may change the board.
 * @param {import('ibexdb').Database} db @param {import('ibexdb').Members | null} m @param {import('ibexdb').SyncStatus | null} st
 * @returns {[Shown | null, boolean]}
 */
function describeAccess(db, m, st) {
  const err = st?.state === 'error' ? st.lastError : null;
  // The access list this device holds; before it is read, the server's word at the handshake.
  const access = m && accessOf(m, db.publicKey);
  const mayWrite = access ? canWrite(access) : (st?.rights?.write ?? true);
  const refusedByServer = err instanceof PermissionError && (err.kind === 'cannot-read' || err.kind === 'cannot-write');
  const editable = mayWrite && !refusedByServer;
  const kept = 'Nothing on this device is deleted: changes made here before that the server did not take stay on this device, unsent.';
  if (err instanceof PermissionError && err.kind === 'cannot-read') {
    return [{ kind: 'refused', title: 'The server refuses this device access to this board.', text: `An owner removed your key, or never invited it: you can read what is on this device, not change it. ${kept} To get access again, send your key to an owner:`, key: true }, editable];
  }
  if (err instanceof PermissionError && err.kind === 'cannot-write') {
    return [{ kind: 'refused', title: 'The server refused your changes: you can only read this board.', text: 'Your changes stay on this device, unsent, and are sent if an owner makes you a writer again.' }, editable];
  }
  if (err) return [{ kind: 'refused', title: 'The server refused to sync.', text: explain(err) }, editable];
  if (access === 'none') {
    return [{ kind: 'refused', title: 'You were removed from this board.', text: `You can read what is on this device, not change it. ${kept} To get access again, send your key to an owner:`, key: true }, editable];
  }
  if (!mayWrite) return [{ kind: 'read-only', title: 'You can read this board, not change it.', text: 'Ask an owner to make you a writer (Share shows your key).' }, editable];
  return [null, editable];
}

export const AccessBanner = {
  props: { app: { type: Object, required: true } },
  /** @param {{app: App}} props */
  setup({ app }) {
    const status = useSyncStatus();
    // The access list: the `_acl` collection changes with every grant, role change or
    // revocation, local or received; at each change it is read again through db.members().
    const acl = useLive({ collection: '_acl' });
    /** @type {import('vue').ShallowRef<import('ibexdb').Members | null>} */
    const members = shallowRef(null);
    let latest = 0;
    watch([acl.rows, app.dbRef], ([, db]) => {
      const n = ++latest;
      members.value = null;
      if (!db) return;
      db.members().then((m) => {
        if (n === latest && app.dbRef.value === db) members.value = m;
      }, () => {}); // the database closed meanwhile
    });
    const said = shallowRef(/** @type {Shown | null} */ (null));
    watchEffect(() => {
      const db = app.dbRef.value;
      if (!db || app.ui.joining) return;
      const [shown, editable] = describeAccess(db, members.value, status.value);
      said.value = shown;
      app.setEditable(editable);
    });
    return () => {
      const key = app.dbRef.value?.publicKey ?? '';
      const shown = app.ui.joining ? banner.state.shown : said.value;
      return shown ? render(shown, key) : h('section', { class: 'access', hidden: true, 'aria-label': 'Access', role: 'status' });
    };
  },
};
