// What a history entry (db.history) did to a task, in words.
import { DERIVED } from './board.js';

/**
 * @param {import('ibexdb').HistoryEntry} entry
 * @param {{listName: (id: string) => string, first: boolean}} ctx
 * @returns {string[]} one line per change
 */
export function describeChange(entry, { listName, first }) {
  const op = entry.op;
  if (op.type === 'delete') return ['deleted the task'];
  if (op.type === 'put') {
    const v = /** @type {Record<string, any>} */ (op.value);
    const lines = [first ? `created “${v.title}” in ${listName(v.list)}` : `replaced the task with “${v.title}”`];
    if (v.tags?.size) lines.push(`tagged it ${[...v.tags].map((t) => `#${t}`).join(' ')}`);
    if (v.due) lines.push(`set the due date to ${v.due}`);
    return lines;
  }
  /** @type {string[]} */
  const lines = [];
  for (const [field, change] of Object.entries(op.fields)) {
    if (DERIVED.has(field)) continue;
    if ('unset' in change) {
      lines.push(`removed the ${field}`);
      continue;
    }
    if ('add' in change) {
      for (const t of change.add) lines.push(`added tag #${t}`);
      for (const t of change.remove) lines.push(`removed tag #${t}`);
      continue;
    }
    const v = /** @type {any} */ (change.assign);
    switch (field) {
      case 'title':
        lines.push(`renamed it to “${v}”`);
        break;
      case 'notes':
        lines.push(v ? `edited the notes: “${v.length > 80 ? `${v.slice(0, 80)}…` : v}”` : 'cleared the notes');
        break;
      case 'done':
        lines.push(v ? 'marked it done' : 'reopened it');
        break;
      case 'due':
        lines.push(v ? `set the due date to ${v}` : 'removed the due date');
        break;
      case 'list':
        lines.push(`moved it to ${listName(v)}`);
        break;
      default:
        lines.push(`set ${field} to ${JSON.stringify(v instanceof Set ? [...v] : v)}`);
    }
  }
  for (const [name, change] of Object.entries(op.attachments ?? {})) lines.push('detach' in change ? `removed the photo “${name}”` : `added the photo “${name}”`);
  return lines.length ? lines : ['touched it'];
}
