// A tiny DOM helper: h('div.card', {onclick}, 'text', child) builds elements; no framework.

/**
 * @param {string} tag `name.class1.class2`
 * @param {Record<string, any> | null} [props] attributes, `on…` handlers, `class`, `dataset`
 * @param {...any} children strings, nodes, arrays, null/false (skipped)
 * @returns {HTMLElement}
 */
export function h(tag, props, ...children) {
  const [name, ...classes] = tag.split('.');
  const el = document.createElement(name || 'div');
  if (classes.length) el.className = classes.join(' ');
  for (const [k, v] of Object.entries(props ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.classList.add(...String(v).split(' ').filter(Boolean));
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k === 'value' || k === 'checked') /** @type {any} */ (el)[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

/** @param {HTMLElement} el @param {any[]} children */
function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

/** @param {string} hex @param {number} [n] */
export const shortKey = (hex, n = 8) => (hex ? `${hex.slice(0, n)}…${hex.slice(-4)}` : 'unsigned');

/** A relative time: "just now", "5 min ago", "yesterday 14:02", or a date. @param {number} ms */
export function when(ms) {
  const d = new Date(ms);
  const s = (Date.now() - ms) / 1000;
  if (s < 45) return 'just now';
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  const time = d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  if (s < 86400 && d.getDate() === new Date().getDate()) return `today ${time}`;
  return `${d.toLocaleDateString([], { month: 'short', day: 'numeric' })} ${time}`;
}

/** Download bytes or text as a file. @param {BlobPart} data @param {string} name @param {string} type */
export function download(data, name, type) {
  const url = URL.createObjectURL(new Blob([data], { type }));
  const a = h('a', { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/**
 * A modal <dialog> with a title and a close button (removed once closed).
 * @param {string} title
 * @param {HTMLElement} body
 * @param {{wide?: boolean, label?: string}} [options]
 * @returns {HTMLDialogElement}
 */
export function dialog(title, body, { wide = false, label = title } = {}) {
  const d = /** @type {HTMLDialogElement} */ (h('dialog.modal', { class: wide ? 'wide' : '', 'aria-label': label },
    h('header', null, h('h2', null, title), h('button.icon', { type: 'button', 'aria-label': 'Close', onclick: () => d.close() }, '×')),
    body));
  d.addEventListener('close', () => d.remove());
  document.body.append(d);
  d.showModal();
  return d;
}

/**
 * Ask before something that cannot be undone here: a modal dialog with Cancel and the action.
 * Resolves true when the user chose the action.
 * @param {string} title
 * @param {string} text
 * @param {string} action the label of the confirming button
 * @returns {Promise<boolean>}
 */
export function confirmDialog(title, text, action) {
  return new Promise((resolve) => {
    let chosen = false;
    const d = dialog(title, h('div.confirm', null,
      h('p', null, text),
      h('div.row.end', null,
        h('button', { type: 'button', onclick: () => d.close() }, 'Cancel'),
        h('button.danger', { type: 'button', onclick: () => ((chosen = true), d.close()) }, action))), { label: title });
    d.setAttribute('role', 'alertdialog');
    d.addEventListener('close', () => resolve(chosen));
  });
}

/**
 * A button that opens a small menu of actions (`aria-haspopup`); Escape, a click elsewhere or
 * choosing an item closes it.
 * @param {{label: string, text: string}} button its accessible name and its text
 * @param {{label: string, run: () => void, disabled?: () => boolean}[]} items
 * @returns {HTMLElement}
 */
export function menuButton(button, items) {
  const wrap = h('div.menu-wrap');
  const menu = h('div.menu', { role: 'menu', hidden: true, 'aria-label': button.label });
  const toggle = h('button.icon', { type: 'button', 'aria-label': button.label, 'aria-haspopup': 'menu', 'aria-expanded': 'false', onclick: () => (menu.hidden ? open() : close()) }, button.text);
  const close = () => {
    menu.hidden = true;
    toggle.setAttribute('aria-expanded', 'false');
    removeEventListener('pointerdown', outside, true);
    removeEventListener('keydown', onKey, true);
  };
  const outside = (/** @type {Event} */ e) => {
    if (!wrap.contains(/** @type {Node} */ (e.target))) close();
  };
  const onKey = (/** @type {KeyboardEvent} */ e) => {
    if (e.key === 'Escape') close();
  };
  const open = () => {
    menu.replaceChildren(...items.map((it) =>
      h('button', { type: 'button', role: 'menuitem', disabled: it.disabled?.() ?? false, onclick: () => (close(), it.run()) }, it.label)));
    menu.hidden = false;
    toggle.setAttribute('aria-expanded', 'true');
    addEventListener('pointerdown', outside, true);
    addEventListener('keydown', onKey, true);
    /** @type {HTMLElement | null} */ (menu.querySelector('button:not([disabled])'))?.focus();
  };
  wrap.append(toggle, menu);
  return wrap;
}
