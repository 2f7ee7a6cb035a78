// One task: its fields (edited in place; each change is one signed commit), its photos
// (task-photos.js) and its history from db.history — who changed what and when. The dialog follows the task with useItem, so an edit
// from another device shows up here at once (fields being edited here are left alone). While
// this device may not change the board (a reader, a removed member) every field is disabled; the
// history stays readable. It is a modal <dialog> in the body (a Teleport), open while
// `app.ui.task` names the task.
import { useItem, useLive } from 'ibexdb/vue';
import { h, onMounted, ref, shallowRef, Teleport, watch } from 'vue';
import { addTag, deleteTask, removeTag, updateTask } from '../lib/board.js';
import { describeChange } from '../lib/describe.js';
import { confirmDialog, shortKey, when } from '../lib/dom.js';
import { usePeople } from './header.js';
import { report } from './notices.js';
import { TaskPhotos } from './task-photos.js';

/** @typedef {typeof import('../app.js').app} App */

export const TaskDialog = {
  props: { app: { type: Object, required: true }, id: { type: String, required: true } },
  emits: ['close'],
  /** @param {{app: App, id: string}} props @param {{emit: (e: 'close') => void}} ctx */
  setup({ app, id }, { emit }) {
    const key = `tasks/${id}`;
    const task = useItem(key);
    const lists = useLive(/** @type {import('ibexdb').TypedQuery<{name: string, order: number}>} */ ({ collection: 'lists', sort: ['order'] }));
    const people = usePeople();
    const tab = ref(/** @type {'details' | 'history'} */ ('details'));
    /** @type {import('vue').ShallowRef<{e: import('ibexdb').HistoryEntry, lines: string[]}[]>} */
    const history = shallowRef([]);
    const d = ref(/** @type {HTMLDialogElement | null} */ (null));
    const title = ref(/** @type {HTMLInputElement | null} */ (null));
    const notes = ref(/** @type {HTMLTextAreaElement | null} */ (null));
    const due = ref(/** @type {HTMLInputElement | null} */ (null));
    const list = ref(/** @type {HTMLSelectElement | null} */ (null));
    const newTag = ref(/** @type {HTMLInputElement | null} */ (null));
    const db = app.db;

    // The fields follow the task, but not while being edited here (the one with the focus).
    watch([task.value, lists.rows, title], ([t]) => {
      if (!t || !title.value || !notes.value || !due.value || !list.value) return;
      const focused = document.activeElement;
      if (focused !== title.value) title.value.value = /** @type {string} */ (t.title);
      if (focused !== notes.value) notes.value.value = /** @type {string} */ (t.notes ?? '');
      if (focused !== due.value) due.value.value = /** @type {string} */ (t.due ?? '');
      list.value.value = /** @type {string} */ (t.list);
    }, { flush: 'post', immediate: true });

    // The history, read again at every change of the task.
    let asked = 0;
    watch(task.value, async () => {
      const n = ++asked;
      const entries = await db.history(key).catch(() => null);
      if (!entries || n !== asked) return;
      const listNames = new Map(lists.rows.value.map((r) => [r.id, /** @type {string} */ (r.value.name)]));
      // db.history lists commits in the order this device applied them; show them newest first by
      // their time (a device that was offline applies older edits from others later).
      history.value = entries
        .map((e, i) => ({ e, i, lines: describeChange(e, { listName: (l) => listNames.get(l) ?? 'a deleted list', first: i === 0 }) }))
        .sort((a, b) => b.e.time - a.e.time || b.i - a.i);
    }, { immediate: true });

    onMounted(() => d.value?.showModal());
    const close = () => d.value?.close();
    const change = (/** @type {Record<string, any>} */ fields) => report(updateTask(db, id, fields));
    const remove = async () => {
      if (await confirmDialog('Delete task', `Delete the task “${title.value?.value}”?`, 'Delete task')) report(deleteTask(db, id)).then((ok) => ok && close());
    };

    const details = () => {
      const t = task.value.value;
      const off = !app.ui.editable;
      return h('section', { class: 'details', hidden: tab.value !== 'details' }, [
        h('p', { class: 'gone', hidden: task.loading.value || !!t, role: 'status' }, 'This task was deleted.'),
        h('label', { class: 'field' }, [h('span', null, 'Title'),
          h('input', { ref: title, class: 'title', 'aria-label': 'Title', disabled: off, onChange: (/** @type {Event} */ e) => {
            const v = /** @type {HTMLInputElement} */ (e.target).value.trim();
            if (v) change({ title: v });
          } })]),
        h('div', { class: 'grid' }, [
          h('label', { class: 'field' }, [h('span', null, 'List'),
            h('select', { ref: list, 'aria-label': 'List', disabled: off, onChange: (/** @type {Event} */ e) => change({ list: /** @type {HTMLSelectElement} */ (e.target).value }) },
              lists.rows.value.map((r) => h('option', { value: r.id }, /** @type {string} */ (r.value.name))))]),
          h('label', { class: 'field' }, [h('span', null, 'Due'),
            h('input', { ref: due, type: 'date', 'aria-label': 'Due date', disabled: off, onChange: (/** @type {Event} */ e) => change({ due: /** @type {HTMLInputElement} */ (e.target).value || null }) })]),
          h('label', { class: 'field inline' }, [
            h('input', { type: 'checkbox', checked: !!t?.done, disabled: off, onChange: (/** @type {Event} */ e) => change({ done: /** @type {HTMLInputElement} */ (e.target).checked }) }),
            h('span', null, 'Done')]),
        ]),
        h('div', { class: 'field' }, [h('span', null, 'Tags'), h('div', { class: 'tags-row' }, [
          // Keyed by tag: a new tag arriving re-renders the list, and an unkeyed span would be
          // patched in place, so a click in flight on "Remove tag urgent" could land on the
          // button that had just become "Remove tag bug" (seen in app.spec.ts under load).
          h('div', { class: 'tag-editor' }, [.../** @type {Iterable<string>} */ (t?.tags ?? [])].sort().map((tag) =>
            h('span', { key: tag, class: 'tag' }, [`#${tag}`, h('button', { class: 'icon', type: 'button', 'aria-label': `Remove tag ${tag}`, disabled: off, onClick: () => report(removeTag(db, id, tag)) }, '×')]))),
          h('form', { class: 'inline', onSubmit: (/** @type {SubmitEvent} */ e) => {
            e.preventDefault();
            const box = newTag.value;
            if (box) report(addTag(db, id, box.value)).then((ok) => ok && (box.value = ''));
          } }, [h('input', { ref: newTag, placeholder: 'add tag', 'aria-label': 'Add tag', size: '10', disabled: off })]),
        ])]),
        h('label', { class: 'field' }, [h('span', null, 'Notes'),
          h('textarea', { ref: notes, rows: '4', 'aria-label': 'Notes', placeholder: 'Notes', disabled: off, onChange: (/** @type {Event} */ e) => change({ notes: /** @type {HTMLTextAreaElement} */ (e.target).value }) })]),
        t ? h(TaskPhotos, { app, id, task: t }) : null,
        h('footer', null, [h('button', { class: 'danger', type: 'button', disabled: off, onClick: remove }, 'Delete task')]),
      ]);
    };

    const historyTab = () => h('section', { class: 'history-tab', hidden: tab.value !== 'history' }, [
      h('p', { class: 'hint' }, 'Every change is a commit signed by its author’s key.'),
      h('ol', { class: 'history', 'aria-label': 'History' }, history.value.map(({ e, lines }) => {
        const who = e.author === db.publicKey ? `${people.value.get(e.author) ?? 'You'} (this device)` : people.value.get(e.author) ?? 'Someone';
        const hue = parseInt(e.author.slice(2, 8) || '0', 16) % 360;
        return h('li', null, [
          h('span', { class: 'avatar', style: { '--hue': String(hue) } }),
          h('div', null, [
            h('div', { class: 'who' }, [h('strong', null, who), ' ', h('code', { title: e.author }, shortKey(e.author)), ' · ', h('time', { datetime: new Date(e.time).toISOString(), title: new Date(e.time).toLocaleString() }, when(e.time))]),
            h('ul', null, lines.map((l) => h('li', null, l))),
          ]),
        ]);
      })),
    ]);

    /** @param {'details' | 'history'} which @param {string} label */
    const tabButton = (which, label) => h('button', { type: 'button', role: 'tab', 'aria-selected': String(tab.value === which), onClick: () => (tab.value = which) }, label);

    return () => h(Teleport, { to: 'body' }, [
      h('dialog', { ref: d, class: 'modal wide', 'aria-label': 'Task', onClose: () => emit('close') }, [
        h('header', null, [h('h2', null, 'Task'), h('button', { class: 'icon', type: 'button', 'aria-label': 'Close', onClick: close }, '×')]),
        h('div', null, [h('div', { class: 'tabs', role: 'tablist' }, [tabButton('details', 'Details'), tabButton('history', 'History')]), details(), historyTab()]),
      ]),
    ]);
  },
};
