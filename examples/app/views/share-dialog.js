// Sharing the board. Owners invite by link (views/invite-link.js: a role, an expiry and a number
// of uses; the link and its QR code; the pending invites with Revoke). The key exchange stays as
// the advanced path: this device's public key (to send to an owner) and inviting another
// person's key as a writer or a reader (db.grant). Then the members with their roles, followed
// live (lib/watch-access.js), role changes and removal (db.revoke). A grant, an invite and a
// redemption are signed commits: they reach the server with the next sync, and the server and
// every device enforce them.
import { accessOf, explain, parsePublicKey, sortedMembers } from '../lib/access.js';
import { dialog, h, shortKey } from '../lib/dom.js';
import { watchAccess } from '../lib/watch-access.js';
import { paintAvatar } from './header.js';
import { inviteLinks } from './invite-link.js';

/** @typedef {typeof import('../app.js').app} App */
/** @typedef {import('ibexdb').Role} Role */

/** @param {App} app @param {Map<string, string>} people public key -> name */
export async function openShareDialog(app, people) {
  const db = app.db;
  const me = db.publicKey ?? '';
  const msg = h('p.msg', { role: 'alert' });
  const links = inviteLinks(app, (text, kind) => say(msg, text, kind));
  const invite = inviteForm(app, msg);
  const intro = h('p.role');
  const list = h('ul.members', { 'aria-label': 'Members' });
  const advanced = /** @type {HTMLDetailsElement} */ (h('details.advanced', null,
    h('summary', null, 'Advanced: exchange public keys'),
    h('p', null, 'Your public key — send it to an owner of a board you want to join:'),
    h('div.keybox', null, h('code.key', null, me), copyButton(me)),
    invite.el));
  const d = dialog('Share this board', h('div.share', null,
    intro,
    links.el,
    msg,
    h('h3', null, 'Members'),
    list,
    advanced,
    app.syncUrl ? null : h('p.hint', null, 'This board syncs with no server: set one under the sync status to share it.')),
  { label: 'Share this board' });

  let first = true;
  const stop = await watchAccess(db, (m) => {
    const owner = accessOf(m, me) === 'owner';
    intro.textContent = roleIntro(m, me);
    links.enable(owner);
    links.refresh();
    invite.enable(owner, m);
    // Someone who cannot invite came here for their key: the advanced part starts open.
    if (first) advanced.open = !owner;
    first = false;
    list.replaceChildren(...memberRows(app, m, people, { owner, msg }));
  });
  d.addEventListener('close', stop);
}

/** What this device may do here, in a sentence. @param {import('ibexdb').Members} m @param {string} me */
function roleIntro(m, me) {
  const a = accessOf(m, me);
  if (a === 'anyone') return 'Nobody owns this board yet: your first change makes you its owner; then you can invite people.';
  if (a === 'owner') return 'You own this board: send a person an invite link (or let them scan its QR code); it gives their device the role you choose.';
  const why = {
    writer: 'you are a writer here',
    reader: 'you are a reader here',
    'public-writer': 'anyone may edit this board, but you are not a member',
    'public-reader': 'anyone may read this board, but you are not a member',
    none: 'this board is not shared with your key',
  }[a];
  return `Only owners can invite people; ${why}.`;
}

/**
 * The invite form: a key and a role; owners only (others see it disabled, with the reason above).
 * @param {App} app @param {HTMLElement} msg
 */
function inviteForm(app, msg) {
  const key = /** @type {HTMLTextAreaElement} */ (h('textarea.code', { rows: '2', placeholder: '02… or 03… (98 characters)', 'aria-label': 'Public key to invite' }));
  const role = /** @type {HTMLSelectElement} */ (h('select', { 'aria-label': 'Role' },
    h('option', { value: 'writer' }, 'Writer — can edit'), h('option', { value: 'reader' }, 'Reader — can only read')));
  const submit = /** @type {HTMLButtonElement} */ (h('button.primary', { type: 'submit' }, 'Invite'));
  const fieldset = /** @type {HTMLFieldSetElement} */ (h('fieldset.invite', null,
    h('label.field', null, h('span', null, 'Invite a person by their public key'), key),
    h('div.row', null, role, submit)));
  const el = h('form', {
    onsubmit: async (/** @type {SubmitEvent} */ e) => {
      e.preventDefault();
      const parsed = parsePublicKey(key.value);
      if ('error' in parsed) return say(msg, parsed.error, 'error');
      if (await grant(app, parsed.key, /** @type {Role} */ (role.value), msg)) key.value = '';
    },
  }, fieldset);
  return {
    el,
    /** @param {boolean} owner @param {import('ibexdb').Members} m */
    enable(owner, m) {
      fieldset.disabled = !owner;
      el.hidden = !m.owned && !owner;
    },
  };
}

/**
 * Grant a role and say what happens next; true when done.
 * @param {App} app @param {string} key @param {Role} role @param {HTMLElement} msg
 */
async function grant(app, key, role, msg) {
  try {
    await app.db.grant(key, role);
  } catch (err) {
    say(msg, explain(err), 'error');
    return false;
  }
  const when = app.syncUrl ? 'They get access as soon as this change reaches the server.' : 'They get access once this board syncs with a server.';
  say(msg, `${shortKey(key)} is now a ${role}. ${when}`, 'ok');
  return true;
}

/**
 * One row per member: avatar, name, key, role (a select for owners) and Remove (owners, not for themselves).
 * @param {App} app @param {import('ibexdb').Members} m @param {Map<string, string>} people
 * @param {{owner: boolean, msg: HTMLElement}} opts
 */
function memberRows(app, m, people, { owner, msg }) {
  const me = app.db.publicKey;
  const rows = sortedMembers(m).map(({ publicKey, role }) => {
    const name = publicKey === me ? `${people.get(publicKey) ?? 'You'} (you)` : people.get(publicKey) ?? 'Someone';
    const avatar = h('span.avatar');
    paintAvatar(avatar, publicKey);
    return h('li.member', { dataset: { key: publicKey, role } },
      avatar,
      h('span.who', null, h('span.name', null, name), h('code', { title: publicKey }, shortKey(publicKey, 10))),
      owner && publicKey !== me ? roleSelect(app, publicKey, role, msg) : h('span.role-badge', null, role),
      owner && publicKey !== me ? h('button.danger', { type: 'button', 'aria-label': `Remove ${name}`, onclick: () => remove(app, publicKey, name, msg) }, 'Remove') : null);
  });
  if (m.public.read || m.public.write) rows.push(h('li.member.public', null, h('span.who', null, 'Everyone'), h('span.role-badge', null, m.public.write ? 'writer' : 'reader')));
  return rows.length ? rows : [h('li.hint', null, 'No members yet.')];
}

/** @param {App} app @param {string} key @param {Role} role @param {HTMLElement} msg */
function roleSelect(app, key, role, msg) {
  const sel = /** @type {HTMLSelectElement} */ (h('select', { 'aria-label': `Role of ${shortKey(key)}`, onchange: () => grant(app, key, /** @type {Role} */ (sel.value), msg) },
    ['owner', 'writer', 'reader'].map((r) => h('option', { value: r }, r))));
  sel.value = role;
  return sel;
}

/** @param {App} app @param {string} key @param {string} name @param {HTMLElement} msg */
async function remove(app, key, name, msg) {
  try {
    await app.db.revoke(key);
    say(msg, `${name} (${shortKey(key)}) was removed: their later changes are refused.`, 'ok');
  } catch (err) {
    say(msg, explain(err), 'error');
  }
}

/** @param {HTMLElement} msg @param {string} text @param {'ok' | 'error'} kind */
function say(msg, text, kind) {
  msg.className = `msg ${kind === 'ok' ? 'ok' : ''}`;
  msg.textContent = text;
}

/** @param {string} text */
function copyButton(text) {
  const b = h('button', { type: 'button', onclick: () => navigator.clipboard?.writeText(text).then(() => (b.textContent = 'Copied'), () => (b.textContent = 'Select and copy')) }, 'Copy');
  return b;
}
