// The share dialog's invite links (owners only): choose a role, an expiry and a number of uses,
// get a link (`db.invite`) and its QR code (lib/qr.js) to send or show; the pending invites
// (`db.invites()`: not revoked, not used up, not expired) with Revoke (`db.revokeInvite`). The
// link carries a one-time secret in its fragment (`#ibexdb-invite=…`), which the board keeps
// nowhere: it is shown once, here. Opening it on another device joins the board with the role
// (app.js reads it, then removes it from the address bar).
import { explain } from '../lib/access.js';
import { h } from '../lib/dom.js';
import { paintQr } from '../lib/qr.js';

/** @typedef {typeof import('../app.js').app} App */
/** @typedef {import('ibexdb').Role} Role */

const HOUR = 3600 * 1000;
const EXPIRIES = [
  ['1 hour', HOUR],
  ['1 day', 24 * HOUR],
  ['7 days', 7 * 24 * HOUR],
  ['30 days', 30 * 24 * HOUR],
];

/**
 * The page a link opens: this app, on this board, with this server (the invite is redeemed there).
 * @param {App} app
 */
export function linkBase(app) {
  return `${location.origin}${location.pathname}?${new URLSearchParams({ board: app.board, sync: app.syncUrl })}`;
}

/**
 * The invite-link form, the link and QR code once made, and the pending invites.
 * @param {App} app @param {(text: string, kind: 'ok' | 'error') => void} say
 */
export function inviteLinks(app, say) {
  const role = /** @type {HTMLSelectElement} */ (h('select', { 'aria-label': 'Link role' },
    h('option', { value: 'writer' }, 'Writer — can edit'), h('option', { value: 'reader' }, 'Reader — can only read'), h('option', { value: 'owner' }, 'Owner — can also invite')));
  const expiry = /** @type {HTMLSelectElement} */ (h('select', { 'aria-label': 'Link expires after' },
    EXPIRIES.map(([label, ms]) => h('option', { value: String(ms) }, label))));
  expiry.value = String(7 * 24 * HOUR);
  const uses = /** @type {HTMLInputElement} */ (h('input', { type: 'number', min: '1', max: '100', value: '1', 'aria-label': 'Uses', class: 'uses' }));
  const create = /** @type {HTMLButtonElement} */ (h('button.primary', { type: 'submit' }, 'Create invite link'));
  const fieldset = /** @type {HTMLFieldSetElement} */ (h('fieldset.invite', null,
    h('span', null, 'Invite by link: whoever opens it joins with this role'),
    h('div.row.wrap', null, role, h('label.inline', null, 'expires after ', expiry), h('label.inline', null, 'uses ', uses), create)));
  const linkText = /** @type {HTMLTextAreaElement} */ (h('textarea.code', { rows: '3', readonly: true, 'aria-label': 'Invite link' }));
  const qr = /** @type {HTMLCanvasElement} */ (h('canvas.qr', { role: 'img', 'aria-label': 'QR code of the invite link' }));
  const about = h('p.hint');
  const copy = h('button', { type: 'button', onclick: () => navigator.clipboard?.writeText(linkText.value).then(() => (copy.textContent = 'Copied'), () => (copy.textContent = 'Select and copy')) }, 'Copy link');
  const out = h('div.invite-link', { hidden: true }, h('div.row', null, linkText, copy), qr, about);
  const pending = h('ul.invites', { 'aria-label': 'Pending invites' });
  /** The id of the invite whose link is shown. */
  let shown = '';
  const pendingBox = h('div.pending', { hidden: true }, h('h3', null, 'Pending invites'), pending);

  const form = h('form', {
    onsubmit: async (/** @type {SubmitEvent} */ e) => {
      e.preventDefault();
      const n = Number(uses.value);
      if (!Number.isInteger(n) || n < 1 || n > 100) return say('A link can be used from 1 to 100 times.', 'error');
      const expires = Date.now() + Number(expiry.value);
      create.disabled = true;
      try {
        const { link, id } = await app.db.invite({ role: /** @type {Role} */ (role.value), expires, uses: n, base: linkBase(app) });
        linkText.value = link;
        shown = id;
        paintQr(qr, link, 4);
        out.hidden = false;
        const times = n === 1 ? 'once' : `${n} times`;
        about.textContent = `Anyone who opens this link (or scans the code) joins as a ${role.value}, ${times}, until ${until(expires)}. It is shown only now: send it privately.`;
        say(`Invite link created. ${app.syncUrl ? 'It works as soon as this change reaches the server.' : ''}`, 'ok');
        await refresh();
      } catch (err) {
        say(explain(err), 'error');
      } finally {
        create.disabled = false;
      }
    },
  }, fieldset);

  /** Read the pending invites again (after a change to the access list). */
  async function refresh() {
    let all;
    try {
      all = await app.db.invites();
    } catch {
      return; // the board was closed or reopened meanwhile
    }
    const now = Date.now();
    const open = all.filter((i) => !i.revoked && i.role && i.uses !== null && i.used < i.uses && (i.expires ?? 0) >= now);
    pendingBox.hidden = open.length === 0;
    pending.replaceChildren(...open.map((i) => h('li.invite', { dataset: { id: i.id } },
      h('span.what', null, `${i.role} link · ${(i.uses ?? 0) - i.used} of ${i.uses} ${i.uses === 1 ? 'use' : 'uses'} left · until ${until(i.expires ?? 0)}`),
      h('button.danger', { type: 'button', 'aria-label': `Revoke the ${i.role} link ${i.id.slice(0, 8)}`, onclick: () => revoke(i.id) }, 'Revoke'))));
  }

  /** @param {string} id */
  async function revoke(id) {
    try {
      await app.db.revokeInvite(id);
      say('The invite was revoked: its link no longer works once this change reaches the server.', 'ok');
      if (id === shown) out.hidden = true;
      await refresh();
    } catch (err) {
      say(explain(err), 'error');
    }
  }

  const el = h('div.invite-links', null, form, out, pendingBox);
  return {
    el,
    refresh,
    /** @param {boolean} owner */
    enable(owner) {
      fieldset.disabled = !owner || !app.syncUrl;
      el.hidden = !owner;
    },
  };
}

/** A moment to come, short: "Dec 5, 14:02". @param {number} ms */
const until = (ms) => new Date(ms).toLocaleString([], { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
