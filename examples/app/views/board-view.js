// The board: one column per list (a live query of the lists, useLive), each column a live query of
// its tasks with the header's search, tag, sort and "hide done" applied (re-run when they change).
// Cards open the task dialog; drag a card onto another column to move it. A list's "⋯" menu
// renames or deletes it (deleting asks first). Every control that writes carries `data-writes`
// and is disabled while this device may not change the board (`app.ui.editable`: a reader, a
// removed member); the board is inert while a shared board is fetched (`app.ui.joining`).
import { useLive } from 'ibexdb/vue';
import { h, nextTick, onUnmounted, ref, watchEffect } from 'vue';
import { addDefaultLists, addList, addTask, columnQuery, deleteList, renameList, updateTask } from '../lib/board.js';
import { confirmDialog, dialog, h as el } from '../lib/dom.js';
import { report } from './notices.js';

/** @typedef {typeof import('../app.js').app} App */
/** @typedef {{id: string, title: string, done: boolean, due: string | null, tags?: Set<string>, notes?: string}} Task */

const today = () => new Date().toISOString().slice(0, 10);

export const BoardView = {
  props: { app: { type: Object, required: true } },
  emits: ['ready'],
  /** @param {{app: App}} props @param {{emit: (e: 'ready') => void}} ctx */
  setup({ app }, { emit }) {
    const lists = useLive(/** @type {import('ibexdb').TypedQuery<{name: string, order: number}>} */ ({ collection: 'lists', sort: ['order'] }));
    // Ready once the lists are known (and rendered): the page says so (body[data-state]).
    let ready = false;
    watchEffect(() => {
      if (ready || lists.loading.value) return;
      ready = true;
      nextTick(() => emit('ready'));
    });
    /** @param {SubmitEvent} e */
    const submitList = (e) => {
      e.preventDefault();
      const input = /** @type {HTMLInputElement} */ (/** @type {HTMLElement} */ (e.target).querySelector('input'));
      if (input.value.trim()) report(addList(app.db, input.value)).then((ok) => ok && (input.value = ''));
    };
    return () => {
      const editable = app.ui.editable;
      return h('main', { class: 'board', inert: app.ui.joining }, [
        h('section', { class: 'empty', hidden: lists.loading.value || lists.rows.value.length > 0 }, [
          h('h2', null, 'This board has no lists yet'),
          h('p', null, 'Start with the usual three, or add your own. (Joining someone else’s board? Its lists arrive as soon as it syncs.)'),
          h('button', { class: 'primary', type: 'button', 'data-writes': '', disabled: !editable, onClick: () => report(addDefaultLists(app.db)) }, 'Start with To do · Doing · Done'),
        ]),
        h('div', { class: 'scroller' }, [
          h('div', { class: 'columns' }, lists.rows.value.map((r) => h(Column, { key: r.id, app, id: r.id, name: /** @type {string} */ (r.value.name) }))),
          h('form', { class: 'new-list', onSubmit: submitList }, [
            h('input', { placeholder: 'Add a list…', 'aria-label': 'New list name', 'data-writes': '', disabled: !editable }),
            h('button', { type: 'submit', 'data-writes': '', disabled: !editable }, 'Add list'),
          ]),
        ]),
      ]);
    };
  },
};

const Column = {
  props: { app: { type: Object, required: true }, id: { type: String, required: true }, name: { type: String, required: true } },
  /** @param {{app: App, id: string, name: string}} props */
  setup(props) {
    const { app, id } = props;
    const tasks = useLive(() => columnQuery(id, app.filters));
    const drop = ref(false);
    const rename = () => {
      if (!app.editable) return;
      const input = /** @type {HTMLInputElement} */ (el('input', { value: props.name, 'aria-label': 'List name', maxlength: '200' }));
      const d = dialog('Rename list', el('form', {
        onsubmit: (/** @type {SubmitEvent} */ e) => {
          e.preventDefault();
          const name = input.value.trim();
          if (name) report(renameList(app.db, id, name)).then((ok) => ok && d.close());
        },
      }, el('label.field', null, el('span', null, 'Name'), input), el('div.row.end', null, el('button.primary', { type: 'submit' }, 'Rename'))));
      input.select();
    };
    /** Delete the list and its tasks, once the user confirmed (naming how many tasks go with it). */
    const remove = async () => {
      const db = app.db;
      const n = await db.count('tasks', { list: id });
      const what = n === 0 ? 'It has no tasks.' : n === 1 ? 'Its task is deleted with it.' : `Its ${n} tasks are deleted with it.`;
      const ok = await confirmDialog('Delete list', `Delete the list “${props.name}”? ${what}`, 'Delete list');
      if (ok) report(deleteList(db, id));
    };
    // The count is blank until the first results; a filter's change keeps the old one meanwhile.
    let loaded = false;
    const counted = () => (loaded ||= !tasks.loading.value);
    const input = ref(/** @type {HTMLInputElement | null} */ (null));
    /** @param {SubmitEvent} e */
    const add = (e) => {
      e.preventDefault();
      const box = input.value;
      if (box?.value.trim()) report(addTask(app.db, id, box.value)).then((ok) => ok && (box.value = ''));
    };
    return () => h('section', {
      class: ['column', drop.value && 'drop'],
      'data-list': id,
      'aria-label': props.name,
      onDragover: (/** @type {DragEvent} */ e) => {
        e.preventDefault();
        drop.value = true;
      },
      onDragleave: () => (drop.value = false),
      onDrop: (/** @type {DragEvent} */ e) => {
        e.preventDefault();
        drop.value = false;
        const task = e.dataTransfer?.getData('text/x-task');
        if (task && app.editable) report(updateTask(app.db, task, { list: id }));
      },
    }, [
      h('header', null, [
        h('h2', { title: `${props.name} (double-click to rename)`, onDblclick: rename }, props.name),
        h('span', { class: 'count' }, counted() ? String(tasks.rows.value.length) : ''),
        h(MenuButton, { label: 'List actions', text: '⋯', items: [
          { label: 'Rename list…', run: rename, disabled: () => !app.editable },
          { label: 'Delete list…', run: remove, disabled: () => !app.editable },
        ] }),
      ]),
      h('div', { class: 'cards', role: 'list' }, tasks.rows.value.map((r) => h(Card, { key: r.id, app, task: /** @type {any} */ (r.value) }))),
      h('form', { class: 'add', onSubmit: add }, [
        h('input', { ref: input, placeholder: 'Add a task… (#tags)', 'aria-label': 'New task', 'data-writes': '', disabled: !app.ui.editable }),
      ]),
    ]);
  },
};

/**
 * Mark a task done or not; a refused or failed write puts the box back as it was (the task did
 * not change), and the notice says why.
 * @param {App} app @param {Task} t @param {HTMLInputElement} box
 */
async function tick(app, t, box) {
  const done = box.checked;
  if (!(await report(updateTask(app.db, t.id, { done })))) box.checked = !done;
}

const Card = {
  props: { app: { type: Object, required: true }, task: { type: Object, required: true } },
  /** @param {{app: App, task: Task}} props */
  setup(props) {
    const { app } = props;
    const open = () => (app.ui.task = props.task.id);
    return () => {
      const t = props.task;
      const editable = app.ui.editable;
      const overdue = t.due && !t.done && t.due < today();
      return h('article', {
        class: ['card', t.done && 'done'],
        role: 'listitem',
        tabindex: '0',
        draggable: String(editable),
        'data-task': t.id,
        onDragstart: (/** @type {DragEvent} */ e) => e.dataTransfer?.setData('text/x-task', t.id),
        onClick: (/** @type {MouseEvent} */ e) => {
          if (!(/** @type {HTMLElement} */ (e.target).closest('input'))) open();
        },
        onKeydown: (/** @type {KeyboardEvent} */ e) => {
          if (e.key === 'Enter') open();
        },
      }, [
        h('label', { class: 'check', title: t.done ? 'Reopen' : 'Mark done' }, [
          h('input', { type: 'checkbox', checked: t.done, disabled: !editable, 'data-writes': '', 'aria-label': `Done: ${t.title}`, onChange: (/** @type {Event} */ e) => tick(app, t, /** @type {HTMLInputElement} */ (e.target)) }),
        ]),
        h('div', { class: 'body' }, [
          h('div', { class: 'title' }, t.title),
          (t.due || t.tags?.size || t.notes)
            ? h('div', { class: 'meta' }, [
              t.due ? h('span', { class: ['due', overdue && 'overdue'], title: overdue ? 'Overdue' : 'Due date' }, `${overdue ? 'Overdue' : 'Due'} ${t.due}`) : null,
              ...[...(t.tags ?? [])].sort().map((tag) => h('span', { class: 'tag' }, `#${tag}`)),
              t.notes ? h('span', { class: 'has-notes', title: 'Has notes' }, '✎') : null,
            ])
            : null,
        ]),
      ]);
    };
  },
};

/**
 * A button that opens a small menu of actions (`aria-haspopup`); Escape, a click elsewhere or
 * choosing an item closes it.
 */
const MenuButton = {
  props: { label: { type: String, required: true }, text: { type: String, required: true }, items: { type: Array, required: true } },
  /** @param {{label: string, text: string, items: {label: string, run: () => void, disabled?: () => boolean}[]}} props */
  setup(props) {
    const open = ref(false);
    /** The items' disabled states, read when the menu opens. */
    const disabled = ref(/** @type {boolean[]} */ ([]));
    const wrap = ref(/** @type {HTMLElement | null} */ (null));
    const menu = ref(/** @type {HTMLElement | null} */ (null));
    const outside = (/** @type {Event} */ e) => {
      if (!wrap.value?.contains(/** @type {Node} */ (e.target))) close();
    };
    const onKey = (/** @type {KeyboardEvent} */ e) => {
      if (e.key === 'Escape') close();
    };
    const close = () => {
      open.value = false;
      removeEventListener('pointerdown', outside, true);
      removeEventListener('keydown', onKey, true);
    };
    const show = async () => {
      disabled.value = props.items.map((it) => it.disabled?.() ?? false);
      open.value = true;
      addEventListener('pointerdown', outside, true);
      addEventListener('keydown', onKey, true);
      await nextTick();
      /** @type {HTMLElement | null | undefined} */ (menu.value?.querySelector('button:not([disabled])'))?.focus();
    };
    onUnmounted(close);
    return () => h('div', { class: 'menu-wrap', ref: wrap }, [
      h('button', { class: 'icon', type: 'button', 'aria-label': props.label, 'aria-haspopup': 'menu', 'aria-expanded': String(open.value), onClick: () => (open.value ? close() : show()) }, props.text),
      h('div', { class: 'menu', role: 'menu', hidden: !open.value, 'aria-label': props.label, ref: menu }, open.value
        ? props.items.map((it, i) => h('button', { type: 'button', role: 'menuitem', disabled: disabled.value[i], onClick: () => (close(), it.run()) }, it.label))
        : []),
    ]);
  },
};
