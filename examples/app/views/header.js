// The header: board name, search, sort, tag filter, the sync status, and the buttons for this
// device's identity, sharing and backups.
import { SORTS } from '../lib/board.js';
import { h, shortKey } from '../lib/dom.js';
import { openBackupDialog } from './backup-dialog.js';
import { openIdentityDialog } from './identity-dialog.js';
import { openShareDialog } from './share-dialog.js';
import { openSyncDialog } from './sync-dialog.js';
import { followSyncStatus } from './sync-status.js';

/** @typedef {typeof import('../app.js').app} App */

export class Header {
  /** @param {App} app */
  constructor(app) {
    this.app = app;
    /** @type {{search: string, tag: string | null, sort: import('../lib/board.js').SortName, hideDone: boolean}} */
    this.filters = { search: '', tag: null, sort: /** @type {any} */ (app.settings.get('sort') ?? 'created'), hideDone: false };
    if (!(this.filters.sort in SORTS)) this.filters.sort = 'created';
    /** @type {Set<() => void>} */
    this.onFilters = new Set();
    /** @type {Map<string, string>} public key -> name */
    this.people = new Map();
    /** @type {string[] | undefined} */
    this._allTags = undefined;

    this.search = /** @type {HTMLInputElement} */ (h('input.search', { type: 'search', placeholder: 'Search tasks', 'aria-label': 'Search tasks', oninput: () => this._set({ search: this.search.value }) }));
    this.sort = /** @type {HTMLSelectElement} */ (h('select', { 'aria-label': 'Sort tasks', onchange: () => this._set({ sort: /** @type {any} */ (this.sort.value) }) },
      Object.entries(SORTS).map(([k, s]) => h('option', { value: k }, s.label))));
    this.sort.value = this.filters.sort;
    this.hideDone = h('input', { type: 'checkbox', onchange: () => this._set({ hideDone: /** @type {HTMLInputElement} */ (this.hideDone).checked }) });
    this.status = h('button.status', { type: 'button', 'aria-label': 'Sync status', onclick: () => openSyncDialog(app) }, '…');
    this.me = h('button.me', { type: 'button', 'aria-label': 'Your identity', onclick: () => openIdentityDialog(app, this.people) });
    this.tags = h('nav.tags', { 'aria-label': 'Filter by tag' });
    this.offlineReady = h('span.offline-ready', { hidden: true }, 'Works offline');
    this.update = h('div.update', { hidden: true, role: 'status' });
    this.boardName = h('div.board-name', null, app.board);

    this.el = h('header.top', null,
      h('div.row', null,
        h('div.brand', null, h('span.logo', { 'aria-hidden': 'true' }), h('div', null, h('h1', null, 'Task board'), this.boardName)),
        h('div.tools', null, this.search, this.sort, h('label.toggle', null, this.hideDone, 'Hide done')),
        h('div.actions', null,
          this.status,
          this.me,
          h('button', { type: 'button', onclick: () => openShareDialog(app, this.people) }, 'Share'),
          h('button', { type: 'button', onclick: () => openBackupDialog(app) }, 'Backup'))),
      h('div.row.sub', null, this.tags, this.offlineReady),
      this.update);
  }

  /** @param {Partial<Header['filters']>} change */
  _set(change) {
    Object.assign(this.filters, change);
    if ('sort' in change) this.app.settings.set('sort', this.filters.sort);
    for (const f of this.onFilters) f();
    this._renderTags(this._allTags ?? []);
  }

  start() {
    this._bind();
    this.app.onOpen.add(() => this._bind());
    followSyncStatus(this.app, this.status);
  }

  /** Live queries of the header: people's names (for the identity button) and every tag in use. */
  async _bind() {
    const db = this.app.db;
    this.boardName.textContent = this.app.board;
    this._renderMe();
    await db.live({ collection: 'people' }, (rows) => {
      this.people = new Map(rows.map((r) => [r.id, /** @type {string} */ (r.value.name)]));
      this._renderMe();
    });
    await db.live({ collection: 'tasks', select: ['tags'] }, (rows) => {
      const all = new Set();
      for (const r of rows) for (const t of /** @type {Set<string>} */ (r.value.tags ?? [])) all.add(t);
      this._allTags = [...all].sort();
      this._renderTags(this._allTags);
    });
  }

  _renderMe() {
    const key = this.app.db?.publicKey ?? '';
    const name = this.people.get(key);
    this.me.replaceChildren(h('span.avatar', { dataset: { key: key.slice(0, 6) } }), h('span', null, name ?? 'You'), h('code', null, shortKey(key, 6)));
    paintAvatar(this.me.querySelector('.avatar'), key);
    this.me.title = `This device signs as ${key}`;
  }

  /** @param {string[]} tags */
  _renderTags(tags) {
    const chip = (/** @type {string | null} */ t) =>
      h('button.chip', { type: 'button', 'aria-pressed': String(this.filters.tag === t), onclick: () => this._set({ tag: this.filters.tag === t ? null : t }) }, t === null ? 'All tags' : `#${t}`);
    this.tags.replaceChildren(...(tags.length ? [chip(null), ...tags.map(chip)] : [h('span.hint', null, 'Tag tasks with #words to filter them here')]));
  }
}

/** A colour per public key, for avatars. @param {Element | null} el @param {string} key */
export function paintAvatar(el, key) {
  if (!el) return;
  const hue = parseInt(key.slice(2, 8) || '0', 16) % 360; // after the 02/03 prefix of a compressed key
  /** @type {HTMLElement} */ (el).style.setProperty('--hue', String(hue));
}
