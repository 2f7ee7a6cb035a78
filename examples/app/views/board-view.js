// The board: one column per list (a live query of the lists), each column a live query of its
// tasks with the header's search, tag, sort and "hide done" applied. Cards open the task dialog;
// drag a card onto another column to move it. A list's "⋯" menu renames or deletes it (deleting
// asks first). Every control that writes carries `data-writes` and is disabled while this device
// may not change the board (`app.editable`: a reader, a removed member).
import { addDefaultLists, addList, addTask, columnQuery, deleteList, renameList, updateTask } from '../lib/board.js';
import { confirmDialog, dialog, h, menuButton } from '../lib/dom.js';
import { report } from './notices.js';
import { openTaskDialog } from './task-dialog.js';

/** @typedef {typeof import('../app.js').app} App */
/** @typedef {import('./header.js').Header} Header */

const today = () => new Date().toISOString().slice(0, 10);

export class BoardView {
  /** @param {App} app @param {Header} header */
  constructor(app, header) {
    this.app = app;
    this.header = header;
    /** @type {Map<string, Column>} */
    this.columns = new Map();
    /** @type {Map<string, string>} list id -> name */
    this.listNames = new Map();
    this.cols = h('div.columns');
    this.empty = h('section.empty', { hidden: true },
      h('h2', null, 'This board has no lists yet'),
      h('p', null, 'Start with the usual three, or add your own. (Joining someone else’s board? Its lists arrive as soon as it syncs.)'),
      h('button.primary', { type: 'button', 'data-writes': true, onclick: () => report(addDefaultLists(this.app.db)) }, 'Start with To do · Doing · Done'));
    this.newList = h('form.new-list', {
      onsubmit: (/** @type {SubmitEvent} */ e) => {
        e.preventDefault();
        const input = /** @type {HTMLInputElement} */ (this.newList.querySelector('input'));
        if (input.value.trim()) report(addList(this.app.db, input.value)).then((ok) => ok && (input.value = ''));
      },
    }, h('input', { placeholder: 'Add a list…', 'aria-label': 'New list name', 'data-writes': true }), h('button', { type: 'submit', 'data-writes': true }, 'Add list'));
    this.el = h('main.board', null, this.empty, h('div.scroller', null, this.cols, this.newList));
    header.onFilters.add(() => {
      for (const c of this.columns.values()) c.bind();
    });
    app.onEditable.add(() => this._applyEditable());
  }

  /** Enable or disable every control that writes (cards rendered later read `app.editable`). */
  _applyEditable() {
    const editable = this.app.editable;
    for (const el of this.el.querySelectorAll('[data-writes]')) /** @type {HTMLInputElement} */ (el).disabled = !editable;
    for (const el of this.el.querySelectorAll('.card')) el.setAttribute('draggable', String(editable));
  }

  async start() {
    await this._bind();
    this.app.onOpen.add(() => this._bind());
  }

  async _bind() {
    await this.app.db.live({ collection: 'lists', sort: ['order'] }, (rows) => this._renderLists(rows));
    for (const c of this.columns.values()) c.bind();
  }

  /** @param {import('ibexdb').Row[]} rows */
  _renderLists(rows) {
    this.listNames = new Map(rows.map((r) => [r.id, /** @type {string} */ (r.value.name)]));
    const seen = new Set();
    for (const r of rows) {
      seen.add(r.id);
      let col = this.columns.get(r.id);
      if (!col) {
        col = new Column(this, r.id);
        this.columns.set(r.id, col);
        col.bind();
      }
      col.setName(/** @type {string} */ (r.value.name));
      this.cols.append(col.el); // in order
    }
    for (const [id, col] of this.columns) {
      if (!seen.has(id)) {
        col.close();
        col.el.remove();
        this.columns.delete(id);
      }
    }
    this.empty.hidden = rows.length > 0;
  }
}

class Column {
  /** @param {BoardView} board @param {string} id */
  constructor(board, id) {
    this.board = board;
    this.id = id;
    /** @type {import('ibexdb').LiveQuery | null} */
    this.live = null;
    this.title = h('h2', { title: 'Double-click to rename', ondblclick: () => this._rename() });
    this.count = h('span.count');
    this.list = h('div.cards', { role: 'list' });
    this.input = /** @type {HTMLInputElement} */ (h('input', { placeholder: 'Add a task… (#tags)', 'aria-label': 'New task' }));
    this.el = h('section.column', {
      dataset: { list: id },
      ondragover: (/** @type {DragEvent} */ e) => {
        e.preventDefault();
        this.el.classList.add('drop');
      },
      ondragleave: () => this.el.classList.remove('drop'),
      ondrop: (/** @type {DragEvent} */ e) => {
        e.preventDefault();
        this.el.classList.remove('drop');
        const task = e.dataTransfer?.getData('text/x-task');
        if (task && board.app.editable) report(updateTask(board.app.db, task, { list: id }));
      },
    },
    h('header', null, this.title, this.count,
      menuButton({ label: 'List actions', text: '⋯' }, [
        { label: 'Rename list…', run: () => this._rename(), disabled: () => !board.app.editable },
        { label: 'Delete list…', run: () => this._delete(), disabled: () => !board.app.editable },
      ])),
    this.list,
    h('form.add', {
      onsubmit: (/** @type {SubmitEvent} */ e) => {
        e.preventDefault();
        if (this.input.value.trim()) report(addTask(board.app.db, id, this.input.value)).then((ok) => ok && (this.input.value = ''));
      },
    }, this.input));
    this.input.dataset.writes = '';
    this.input.disabled = !board.app.editable;
  }

  /** @param {string} name */
  setName(name) {
    this.name = name;
    this.title.textContent = name;
    this.title.title = `${name} (double-click to rename)`;
    this.el.setAttribute('aria-label', name);
  }

  /** (Re)start the live query with the current filters. */
  async bind() {
    const db = this.board.app.db;
    const q = columnQuery(this.id, this.board.header.filters);
    const previous = this.live;
    this.live = await db.live(q, (rows) => this._render(rows));
    previous?.close();
  }

  close() {
    this.live?.close();
    this.live = null;
  }

  /** @param {import('ibexdb').Row[]} rows */
  _render(rows) {
    this.count.textContent = String(rows.length);
    this.list.replaceChildren(...rows.map((r) => card(this.board, /** @type {any} */ (r.value))));
  }

  _rename() {
    if (!this.board.app.editable) return;
    const input = /** @type {HTMLInputElement} */ (h('input', { value: this.name ?? '', 'aria-label': 'List name', maxlength: '200' }));
    const d = dialog('Rename list', h('form', {
      onsubmit: (/** @type {SubmitEvent} */ e) => {
        e.preventDefault();
        const name = input.value.trim();
        if (name) report(renameList(this.board.app.db, this.id, name)).then((ok) => ok && d.close());
      },
    }, h('label.field', null, h('span', null, 'Name'), input), h('div.row.end', null, h('button.primary', { type: 'submit' }, 'Rename'))));
    input.select();
  }

  /** Delete the list and its tasks, once the user confirmed (naming how many tasks go with it). */
  async _delete() {
    const db = this.board.app.db;
    const n = await db.count('tasks', { list: this.id });
    const tasks = n === 0 ? 'It has no tasks.' : n === 1 ? 'Its task is deleted with it.' : `Its ${n} tasks are deleted with it.`;
    const ok = await confirmDialog('Delete list', `Delete the list “${this.name}”? ${tasks}`, 'Delete list');
    if (ok) report(deleteList(db, this.id));
  }
}

/**
 * Mark a task done or not; a refused or failed write puts the box back as it was (the task did
 * not change), and the notice says why.
 * @param {BoardView} board @param {{id: string}} t @param {HTMLInputElement} box
 */
async function tick(board, t, box) {
  const done = box.checked;
  if (!(await report(updateTask(board.app.db, t.id, { done })))) box.checked = !done;
}

/** @param {BoardView} board @param {{id: string, title: string, done: boolean, due: string | null, tags?: Set<string>, notes?: string}} t */
function card(board, t) {
  const overdue = t.due && !t.done && t.due < today();
  const el = h('article.card', {
    role: 'listitem',
    tabindex: '0',
    draggable: String(board.app.editable),
    class: t.done ? 'done' : '',
    dataset: { task: t.id },
    ondragstart: (/** @type {DragEvent} */ e) => e.dataTransfer?.setData('text/x-task', t.id),
    onclick: (/** @type {MouseEvent} */ e) => {
      if (!(/** @type {HTMLElement} */ (e.target).closest('input'))) openTaskDialog(board.app, t.id, board.listNames, board.header.people);
    },
    onkeydown: (/** @type {KeyboardEvent} */ e) => {
      if (e.key === 'Enter') openTaskDialog(board.app, t.id, board.listNames, board.header.people);
    },
  },
  h('label.check', { title: t.done ? 'Reopen' : 'Mark done' },
    h('input', { type: 'checkbox', checked: t.done, disabled: !board.app.editable, 'data-writes': true, 'aria-label': `Done: ${t.title}`, onchange: (/** @type {Event} */ e) => tick(board, t, /** @type {HTMLInputElement} */ (e.target)) })),
  h('div.body', null,
    h('div.title', null, t.title),
    (t.due || t.tags?.size || t.notes) &&
      h('div.meta', null,
        t.due && h('span.due', { class: overdue ? 'overdue' : '', title: overdue ? 'Overdue' : 'Due date' }, `${overdue ? 'Overdue' : 'Due'} ${t.due}`),
        [...(t.tags ?? [])].sort().map((tag) => h('span.tag', null, `#${tag}`)),
        t.notes && h('span.has-notes', { title: 'Has notes' }, '✎'))));
  return el;
}
