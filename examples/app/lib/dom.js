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
