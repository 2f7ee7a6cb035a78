// Task board: a collaborative, offline-first PWA on ibexdb (the npm package's public API only).
//
//   ?board=NAME   the board (one ibexdb repository; default "my-board")
//   ?sync=URL     the ibexdb-server to sync with (ws:// or wss://; remembered on this device)
//   #ibexdb-invite=…  an invite link's secret (Share → invite link): redeemed, then removed
//
// The views are Vue components (render functions, no build step) that read the board through
// ibexdb/vue's composables: every view is a live query; edits are signed commits in OPFS, so the
// app works with no network and syncs when it returns. The dialogs that only ask for input
// (identity, share, backup, sync server, rename, confirm) stay plain DOM (lib/dom.js). The
// service worker (sw.js) keeps the app, Vue, the module, its worker and the wasm for offline starts.
import { open, StorageUnavailableError } from 'ibexdb';
import { databaseKey } from 'ibexdb/vue';
import { createApp, h as v, reactive, shallowRef } from 'vue';
import { MIGRATIONS, SCHEMA_VERSION, SCHEMAS, SORTS } from './lib/board.js';
import { h } from './lib/dom.js';
import { AccessBanner, banner } from './views/access-banner.js';
import { BoardView } from './views/board-view.js';
import { Header } from './views/header.js';
import { joinBoard } from './views/join.js';
import { TaskDialog } from './views/task-dialog.js';
import { registerServiceWorker } from './views/update.js';

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/** localStorage that may be unavailable (blocked site data). */
const settings = {
  get: (/** @type {string} */ k) => {
    try {
      return localStorage.getItem(`taskboard:${k}`);
    } catch {
      return null;
    }
  },
  set: (/** @type {string} */ k, /** @type {string | null} */ v) => {
    try {
      if (v === null) localStorage.removeItem(`taskboard:${k}`);
      else localStorage.setItem(`taskboard:${k}`, v);
    } catch {
      // not remembered
    }
  },
};

// An invite link (views/invite-link.js): `?board=…&sync=…#ibexdb-invite=SECRET…`. Its secret
// is taken from the address at once, before anything else runs, so it stays neither in the
// address bar nor in the history (nor in a bookmark or a shared screenshot); the first open
// of the board redeems it at the server.
/** @type {string | null} */
let inviteLink = location.hash.startsWith('#ibexdb-invite=') ? location.href : null;
if (inviteLink) history.replaceState(history.state, '', `${location.pathname}${location.search}`);
// A link pasted into this tab while the board is open changes only the fragment: load it anew.
addEventListener('hashchange', () => {
  if (location.hash.startsWith('#ibexdb-invite=')) location.reload();
});

const params = new URLSearchParams(location.search);
if (params.has('sync')) settings.set('sync', params.get('sync') || null);
const requested = params.get('board') ?? settings.get('board') ?? 'my-board';
const boardName = NAME_RE.test(requested) ? requested : 'my-board';
settings.set('board', boardName);

/**
 * The app's state: the open database and what the views need. `reopen` closes and opens the
 * board again (with an imported identity, or after the sync server changed).
 */
export const app = {
  board: boardName,
  /** @type {import('ibexdb').Database} */
  db: /** @type {any} */ (null),
  /** `db` for the views (null while the board reopens): the database ibexdb/vue's composables use. */
  dbRef: shallowRef(/** @type {import('ibexdb').Database | null} */ (null)),
  /**
   * What the views follow: `editable` (below), `joining`, and the task whose dialog is open.
   */
  ui: reactive({ board: boardName, editable: true, joining: true, task: /** @type {string | null} */ (null) }),
  /** The header's search, tag, sort and "hide done", which every column's live query applies. */
  filters: reactive({
    search: '',
    tag: /** @type {string | null} */ (null),
    sort: /** @type {import('./lib/board.js').SortName} */ ((settings.get('sort') ?? '') in SORTS ? settings.get('sort') : 'created'),
    hideDone: false,
  }),
  syncUrl: settings.get('sync') ?? '',
  /** True while a shared board is fetched before the first write (views/join.js). */
  joining: false,
  /**
   * Whether this device may change the board, from the access list (`db.members()`) and the
   * server's refusals (`db.syncStatus()`): views/access-banner.js decides, and every control
   * that writes is disabled while it is false.
   */
  editable: true,
  /** @param {boolean} editable */
  setEditable(editable) {
    if (editable === this.editable) return;
    this.editable = editable;
    this.ui.editable = editable;
    document.body.dataset.edit = editable ? 'yes' : 'no';
  },
  settings,
  /** @type {Set<() => void>} called after every (re)open */
  onOpen: new Set(),
  /** @param {{identity?: string, passphrase?: string}} [opts] */
  async reopen(opts = {}) {
    const old = this.db;
    this.db = /** @type {any} */ (null);
    this.dbRef.value = null;
    if (old) await old.close();
    const options = { schemas: SCHEMAS, version: SCHEMA_VERSION, migrations: MIGRATIONS, sync: this.syncUrl || undefined };
    /** @type {unknown} */
    let refused = null;
    try {
      // The invite link this page was opened with, on the first open with a server only.
      const invite = inviteLink && this.syncUrl ? inviteLink : undefined;
      inviteLink = null;
      this.db = await open(this.board, { ...options, identity: opts.identity, passphrase: opts.passphrase, invite });
    } catch (e) {
      // A key that does not unlock (PassphraseError) opened nothing: open the board as it was.
      if (opts.identity === undefined) throw e;
      refused = e;
      this.db = await open(this.board, options);
    }
    window.taskboard = this;
    this.dbRef.value = this.db;
    for (const f of this.onOpen) f();
    if (refused) throw refused;
  },
  /**
   * Open another board in this page (a backup restores into the board it was made from).
   * @param {string} name
   */
  async openBoard(name) {
    if (!NAME_RE.test(name)) throw new RangeError(`not a board name: ${name}`);
    this.board = name;
    this.ui.board = name;
    settings.set('board', name);
    const q = new URLSearchParams(location.search);
    q.set('board', name);
    history.replaceState(null, '', `?${q}`);
    await this.reopen();
  },
  /** Change the sync server ('' = local only): the board reopens with it (and joins it if empty). @param {string} url */
  async setSync(url) {
    this.syncUrl = url;
    settings.set('sync', url || null);
    await this.reopen();
  },
};

async function main() {
  const root = /** @type {HTMLElement} */ (document.querySelector('#app'));
  try {
    await app.reopen();
  } catch (e) {
    const err = /** @type {any} */ (e);
    root.replaceChildren(
      h('section.fatal', { role: 'alert' },
        h('h1', null, 'The board cannot open here'),
        h('p', null, err instanceof StorageUnavailableError ? err.message : `${err.name}: ${err.message}`)),
    );
    document.body.dataset.state = 'failed';
    return;
  }
  // One Vue app: the header, the access banner, the board, and the task dialog when one is open.
  const ui = createApp({
    render: () => [
      v(Header, { app }),
      v(AccessBanner, { app }),
      v(BoardView, {
        app,
        onReady: () => {
          document.body.dataset.state = 'ready';
          registerServiceWorker();
        },
      }),
      app.ui.task && v(TaskDialog, { app, id: app.ui.task, key: app.ui.task, onClose: () => (app.ui.task = null) }),
    ],
  });
  ui.provide(databaseKey, app.dbRef);
  root.replaceChildren();
  ui.mount(root);
  app.onOpen.add(() => enter());
  enter();
  // Back online: reconnect now rather than at the next backoff step (up to 10 s away).
  addEventListener('online', () => {
    if (app.syncUrl) app.db.sync(app.syncUrl).catch(() => {});
  });
}

/** Make the board editable once writing is safe (views/join.js), then follow this device's access. */
async function enter() {
  app.joining = true;
  app.ui.joining = true;
  if (!(await joinBoard(app, banner))) return; // reopened meanwhile: the next enter() takes over
  app.joining = false;
  app.ui.joining = false;
  banner.hide();
  document.body.dataset.access = 'open';
}

main();
