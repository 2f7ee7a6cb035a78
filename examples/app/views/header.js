// The header: board name, search, sort, tag filter, the sync status, and the buttons for this
// device's identity, sharing and backups. People's names (for the identity button) and every tag
// in use are live queries (useLive); the filters are reactive state the board's columns follow.
import { useLive } from 'ibexdb/vue';
import { computed, h } from 'vue';
import { SORTS } from '../lib/board.js';
import { shortKey } from '../lib/dom.js';
import { openBackupDialog } from './backup-dialog.js';
import { openIdentityDialog } from './identity-dialog.js';
import { openShareDialog } from './share-dialog.js';
import { openSyncDialog } from './sync-dialog.js';
import { SyncStatusButton } from './sync-status.js';
import { serviceWorker } from './update.js';

/** @typedef {typeof import('../app.js').app} App */
/** @typedef {{search: string, tag: string | null, sort: import('../lib/board.js').SortName, hideDone: boolean}} Filters */

/** People's names by public key, from a live query of `people`. */
export function usePeople() {
  const people = useLive({ collection: 'people' });
  return computed(() => new Map(people.rows.value.map((r) => [r.id, /** @type {string} */ (r.value.name)])));
}

export const Header = {
  props: { app: { type: Object, required: true } },
  /** @param {{app: App}} props */
  setup({ app }) {
    const filters = app.filters;
    const people = usePeople();
    const tagRows = useLive(/** @type {any} */ ({ collection: 'tasks', select: ['tags'] })) // (TypedQuery has no `select`; useLive passes it on);
    const allTags = computed(() => {
      const all = new Set();
      for (const r of tagRows.rows.value) for (const t of /** @type {Set<string>} */ (r.value.tags ?? [])) all.add(t);
      return /** @type {string[]} */ ([...all].sort());
    });
    /** @param {Partial<Filters>} change */
    const set = (change) => {
      Object.assign(filters, change);
      if ('sort' in change) app.settings.set('sort', filters.sort);
    };
    /** @param {string | null} t */
    const chip = (t) => h('button', { class: 'chip', type: 'button', 'aria-pressed': String(filters.tag === t), onClick: () => set({ tag: filters.tag === t ? null : t }) }, t === null ? 'All tags' : `#${t}`);
    const me = () => {
      const key = app.dbRef.value?.publicKey ?? '';
      const hue = parseInt(key.slice(2, 8) || '0', 16) % 360;
      return h('button', { class: 'me', type: 'button', 'aria-label': 'Your identity', title: `This device signs as ${key}`, onClick: () => openIdentityDialog(app, people.value) }, [
        h('span', { class: 'avatar', 'data-key': key.slice(0, 6), style: { '--hue': String(hue) } }),
        h('span', null, people.value.get(key) ?? 'You'),
        h('code', null, shortKey(key, 6)),
      ]);
    };
    return () => h('header', { class: 'top' }, [
      h('div', { class: 'row' }, [
        h('div', { class: 'brand' }, [h('span', { class: 'logo', 'aria-hidden': 'true' }), h('div', null, [h('h1', null, 'Task board'), h('div', { class: 'board-name' }, app.ui.board)])]),
        h('div', { class: 'tools' }, [
          h('input', { class: 'search', type: 'search', placeholder: 'Search tasks', 'aria-label': 'Search tasks', value: filters.search, onInput: (/** @type {Event} */ e) => set({ search: /** @type {HTMLInputElement} */ (e.target).value }) }),
          h('select', { 'aria-label': 'Sort tasks', value: filters.sort, onChange: (/** @type {Event} */ e) => set({ sort: /** @type {any} */ (e.target).value }) },
            Object.entries(SORTS).map(([k, s]) => h('option', { value: k }, s.label))),
          h('label', { class: 'toggle' }, [h('input', { type: 'checkbox', checked: filters.hideDone, onChange: (/** @type {Event} */ e) => set({ hideDone: /** @type {HTMLInputElement} */ (e.target).checked }) }), 'Hide done']),
        ]),
        h('div', { class: 'actions' }, [
          h(SyncStatusButton, { app, onClick: () => openSyncDialog(app) }),
          me(),
          h('button', { type: 'button', onClick: () => openShareDialog(app, people.value) }, 'Share'),
          h('button', { type: 'button', onClick: () => openBackupDialog(app) }, 'Backup'),
        ]),
      ]),
      h('div', { class: 'row sub' }, [
        h('nav', { class: 'tags', 'aria-label': 'Filter by tag' }, allTags.value.length ? [chip(null), ...allTags.value.map(chip)] : [h('span', { class: 'hint' }, 'Tag tasks with #words to filter them here')]),
        h('span', { class: 'offline-ready', hidden: !serviceWorker.ready }, 'Works offline'),
      ]),
      h('div', { class: 'update', role: 'status', hidden: !serviceWorker.reload }, serviceWorker.reload
        ? ['A new version of the app is ready. ', h('button', { type: 'button', onClick: serviceWorker.reload }, 'Reload to update')]
        : []),
    ]);
  },
};

/** A colour per public key, for avatars. @param {Element | null} el @param {string} key */
export function paintAvatar(el, key) {
  if (!el) return;
  const hue = parseInt(key.slice(2, 8) || '0', 16) % 360; // after the 02/03 prefix of a compressed key
  /** @type {HTMLElement} */ (el).style.setProperty('--hue', String(hue));
}
