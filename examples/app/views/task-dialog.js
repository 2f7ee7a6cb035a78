// One task: its fields (edited in place; each change is one signed commit) and its history from
// db.history — who changed what and when. The dialog follows the task with a live query, so an
// edit from another device shows up here at once (fields being edited here are left alone).
// While this device may not change the board (a reader, a removed member) every field is
// disabled; the history stays readable.
import { addTag, deleteTask, removeTag, updateTask } from '../lib/board.js';
import { describeChange } from '../lib/describe.js';
import { confirmDialog, dialog, h, shortKey, when } from '../lib/dom.js';
import { paintAvatar } from './header.js';
import { report } from './notices.js';

/**
 * @param {typeof import('../app.js').app} app
 * @param {string} id
 * @param {Map<string, string>} listNames
 * @param {Map<string, string>} people
 */
export async function openTaskDialog(app, id, listNames, people) {
  const db = app.db;
  const key = `tasks/${id}`;
  const title = /** @type {HTMLInputElement} */ (h('input.title', { 'aria-label': 'Title', onchange: () => title.value.trim() && report(updateTask(db, id, { title: title.value.trim() })) }));
  const notes = /** @type {HTMLTextAreaElement} */ (h('textarea', { rows: '4', 'aria-label': 'Notes', placeholder: 'Notes', onchange: () => report(updateTask(db, id, { notes: notes.value })) }));
  const due = /** @type {HTMLInputElement} */ (h('input', { type: 'date', 'aria-label': 'Due date', onchange: () => report(updateTask(db, id, { due: due.value || null })) }));
  const done = /** @type {HTMLInputElement} */ (h('input', { type: 'checkbox', onchange: () => report(updateTask(db, id, { done: done.checked })) }));
  const list = /** @type {HTMLSelectElement} */ (h('select', { 'aria-label': 'List', onchange: () => report(updateTask(db, id, { list: list.value })) },
    [...listNames].map(([lid, name]) => h('option', { value: lid }, name))));
  const tags = h('div.tag-editor');
  const newTag = /** @type {HTMLInputElement} */ (h('input', { placeholder: 'add tag', 'aria-label': 'Add tag', size: '10' }));
  const tagForm = h('form.inline', {
    onsubmit: (/** @type {SubmitEvent} */ e) => {
      e.preventDefault();
      report(addTag(db, id, newTag.value)).then((ok) => ok && (newTag.value = ''));
    },
  }, newTag);
  const gone = h('p.gone', { hidden: true, role: 'status' }, 'This task was deleted.');
  const details = h('section.details', null,
    gone,
    h('label.field', null, h('span', null, 'Title'), title),
    h('div.grid', null,
      h('label.field', null, h('span', null, 'List'), list),
      h('label.field', null, h('span', null, 'Due'), due),
      h('label.field.inline', null, done, h('span', null, 'Done'))),
    h('div.field', null, h('span', null, 'Tags'), h('div.tags-row', null, tags, tagForm)),
    h('label.field', null, h('span', null, 'Notes'), notes),
    h('footer', null,
      h('button.danger', {
        type: 'button',
        onclick: async () => {
          if (await confirmDialog('Delete task', `Delete the task “${title.value}”?`, 'Delete task')) report(deleteTask(db, id)).then((ok) => ok && d.close());
        },
      }, 'Delete task')));
  /** Disable the fields while this device may not write (tag buttons are made by `fill`). */
  const applyEditable = () => {
    const controls = [title, notes, due, done, list, newTag, ...details.querySelectorAll('button')];
    for (const c of controls) /** @type {HTMLInputElement} */ (c).disabled = !app.editable;
  };
  const history = h('ol.history', { 'aria-label': 'History' });
  const historyTab = h('section.history-tab', { hidden: true }, h('p.hint', null, 'Every change is a commit signed by its author’s key.'), history);
  const tabs = h('div.tabs', { role: 'tablist' },
    h('button', { type: 'button', role: 'tab', 'aria-selected': 'true', onclick: () => show('details') }, 'Details'),
    h('button', { type: 'button', role: 'tab', 'aria-selected': 'false', onclick: () => show('history') }, 'History'));
  /** @param {'details' | 'history'} which */
  const show = (which) => {
    details.hidden = which !== 'details';
    historyTab.hidden = which !== 'history';
    for (const b of tabs.querySelectorAll('button')) b.setAttribute('aria-selected', String(b.textContent?.toLowerCase() === which));
  };
  const d = dialog('Task', h('div', null, tabs, details, historyTab), { wide: true, label: 'Task' });

  /** @param {any} t */
  const fill = (t) => {
    const focused = document.activeElement;
    if (focused !== title) title.value = t.title;
    if (focused !== notes) notes.value = t.notes ?? '';
    if (focused !== due) due.value = t.due ?? '';
    done.checked = !!t.done;
    list.value = t.list;
    tags.replaceChildren(...[...(t.tags ?? [])].sort().map((/** @type {string} */ tag) =>
      h('span.tag', null, `#${tag}`, h('button.icon', { type: 'button', 'aria-label': `Remove tag ${tag}`, onclick: () => report(removeTag(db, id, tag)) }, '×'))));
    applyEditable();
  };

  const renderHistory = async () => {
    const entries = await db.history(key);
    // db.history lists commits in the order this device applied them; show them newest first by
    // their time (a device that was offline applies older edits from others later).
    history.replaceChildren(...entries
      .map((e, i) => ({ e, i, lines: describeChange(e, { listName: (l) => listNames.get(l) ?? 'a deleted list', first: i === 0 }) }))
      .sort((a, b) => b.e.time - a.e.time || b.i - a.i)
      .map(({ e, lines }) => {
        const who = e.author === db.publicKey ? `${people.get(e.author) ?? 'You'} (this device)` : people.get(e.author) ?? 'Someone';
        const avatar = h('span.avatar');
        paintAvatar(avatar, e.author);
        return h('li', null,
          avatar,
          h('div', null,
            h('div.who', null, h('strong', null, who), ' ', h('code', { title: e.author }, shortKey(e.author)), ' · ', h('time', { datetime: new Date(e.time).toISOString(), title: new Date(e.time).toLocaleString() }, when(e.time))),
            h('ul', null, lines.map((l) => h('li', null, l)))));
      }));
  };

  const live = await db.live({ collection: 'tasks', where: { id } }, (rows) => {
    if (rows.length) fill(rows[0].value);
    gone.hidden = rows.length > 0;
    renderHistory();
  });
  applyEditable();
  app.onEditable.add(applyEditable);
  d.addEventListener('close', () => {
    live.close();
    app.onEditable.delete(applyEditable);
  });
  return d;
}
