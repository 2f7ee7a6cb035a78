// Messages at the bottom of the page: a refused or failed write says why (in words, from the
// typed error), instead of failing silently. The data on this device is never thrown away.
import { explain } from '../lib/access.js';
import { h } from '../lib/dom.js';

/**
 * Show a message (info for 6 s, errors for 20 s or until dismissed). It goes into the open modal
 * dialog if there is one: a modal dialog hides and blocks the rest of the page.
 * @param {string} text @param {'error' | 'info'} [kind]
 */
export function notify(text, kind = 'info') {
  const dialogs = document.querySelectorAll('dialog[open]');
  const host = dialogs.length ? dialogs[dialogs.length - 1] : document.body;
  let region = host.querySelector(':scope > .notices');
  if (!region) {
    region = h('div.notices', { 'aria-live': 'polite' });
    host.append(region);
  }
  for (const old of region.children) if (old.firstChild?.textContent === text) old.remove(); // said again: once, at the end
  const note = h(`div.notice.${kind}`, { role: kind === 'error' ? 'alert' : 'status' },
    h('span', null, text),
    h('button.icon', { type: 'button', 'aria-label': 'Dismiss', onclick: () => note.remove() }, '×'));
  region.append(note);
  setTimeout(() => note.remove(), kind === 'info' ? 6000 : 20_000);
}

/**
 * Wait for a write and show its refusal if it fails; true when it succeeded.
 * @param {Promise<unknown>} write
 * @returns {Promise<boolean>}
 */
export async function report(write) {
  try {
    await write;
    return true;
  } catch (err) {
    notify(explain(err), 'error');
    return false;
  }
}
