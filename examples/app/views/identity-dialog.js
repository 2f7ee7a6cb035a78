// This device's identity: the public key its commits are signed with, the name shown for it,
// and moving the key pair to another device as a passphrase-protected code or file: the code
// is db.exportIdentity({passphrase}) and goes into open(board, {identity, passphrase})
// (lib/keyfile.js reads a pasted code, and the app's earlier ibexkey1. codes).
import { PassphraseError } from 'ibexdb';
import { setMyName } from '../lib/board.js';
import { dialog, download, h, shortKey } from '../lib/dom.js';
import { KeyCodeError, WRAPPED, WRONG_PASSPHRASE, checkNewPassphrase, readCode, unlockLegacy } from '../lib/keyfile.js';
import { report } from './notices.js';

/** @param {typeof import('../app.js').app} app @param {Map<string, string>} people */
export function openIdentityDialog(app, people) {
  const db = app.db;
  const key = db.publicKey ?? '';
  const name = /** @type {HTMLInputElement} */ (h('input', { value: people.get(key) ?? '', placeholder: 'Your name', 'aria-label': 'Your name' }));
  const saved = h('span.ok', { role: 'status' });

  // Export.
  const pass1 = /** @type {HTMLInputElement} */ (h('input', { type: 'password', autocomplete: 'new-password', 'aria-label': 'Passphrase' }));
  const pass2 = /** @type {HTMLInputElement} */ (h('input', { type: 'password', autocomplete: 'new-password', 'aria-label': 'Repeat passphrase' }));
  const exportMsg = h('p.msg', { role: 'alert' });
  const exported = h('div.exported', { hidden: true });
  const doExport = async (/** @type {SubmitEvent} */ e) => {
    e.preventDefault();
    exportMsg.textContent = '';
    if (pass1.value !== pass2.value) {
      exportMsg.textContent = 'The two passphrases differ.';
      return;
    }
    try {
      checkNewPassphrase(pass1.value);
      exportMsg.textContent = 'Encrypting…';
      // app.db, not db: an import reopens the board.
      const code = /** @type {string} */ (await app.db.exportIdentity({ passphrase: pass1.value }));
      exportMsg.textContent = '';
      const file = `taskboard-key-${key.slice(0, 8)}.txt`;
      exported.replaceChildren(
        h('label.field', null, h('span', null, 'Key code (keep it with the passphrase somewhere safe)'),
          h('textarea.code', { readonly: true, rows: '3', 'aria-label': 'Key code' }, code)),
        h('button', { type: 'button', onclick: () => download(`${code}\n`, file, 'text/plain') }, `Download ${file}`));
      exported.hidden = false;
    } catch (err) {
      exportMsg.textContent = /** @type {Error} */ (err).message;
    }
  };

  // Import.
  const code = /** @type {HTMLTextAreaElement} */ (h('textarea.code', { rows: '3', placeholder: `${WRAPPED}…`, 'aria-label': 'Key code to import' }));
  const file = /** @type {HTMLInputElement} */ (h('input', { type: 'file', accept: '.txt,text/plain', 'aria-label': 'Key file', onchange: async () => (code.value = (await file.files?.[0]?.text())?.trim() ?? '') }));
  const pass = /** @type {HTMLInputElement} */ (h('input', { type: 'password', autocomplete: 'current-password', 'aria-label': 'Passphrase of the key' }));
  const importMsg = h('p.msg', { role: 'alert' });
  const doImport = async (/** @type {SubmitEvent} */ e) => {
    e.preventDefault();
    importMsg.className = 'msg';
    importMsg.textContent = 'Unlocking…';
    try {
      const read = readCode(code.value);
      if (!pass.value) throw new KeyCodeError('Enter the passphrase of the key.');
      const identity = 'wrapped' in read ? { identity: read.wrapped, passphrase: pass.value } : { identity: await unlockLegacy(read.legacy, pass.value) };
      importMsg.textContent = 'Switching keys…';
      await app.reopen(identity);
    } catch (err) {
      importMsg.textContent = err instanceof PassphraseError ? WRONG_PASSPHRASE : /** @type {Error} */ (err).message;
      return;
    }
    importMsg.className = 'msg ok';
    importMsg.textContent = `This device now signs as ${shortKey(app.db.publicKey ?? '')}.`;
    keyView.textContent = app.db.publicKey ?? '';
  };

  const keyView = h('code.key', null, key);
  dialog('Your identity', h('div.identity', null,
    h('p', null, 'This device signs every change with its own key pair. Others see your changes under this public key:'),
    h('div.keybox', null, keyView, h('button', { type: 'button', onclick: () => navigator.clipboard?.writeText(key) }, 'Copy')),
    h('form.row', {
      onsubmit: (/** @type {SubmitEvent} */ e) => {
        e.preventDefault();
        if (app.joining) saved.textContent = 'Wait until the board has synced: your name is saved with it.';
        else if (!app.editable) saved.textContent = 'You cannot change this board, so your name is not saved with it.';
        else report(setMyName(app.db, name.value)).then((ok) => (saved.textContent = ok ? 'Saved' : ''));
      },
    }, h('label.field.grow', null, h('span', null, 'Your name (shown to people you share with)'), name), h('button', { type: 'submit' }, 'Save'), saved),
    h('details', null,
      h('summary', null, 'Use this identity on another device'),
      h('p', null, 'Export the key pair, protected by a passphrase (PBKDF2-SHA-256, 600,000 rounds; AES-256-GCM). Anyone with the code and the passphrase can sign as you.'),
      h('form', { onsubmit: doExport },
        h('div.grid', null, h('label.field', null, h('span', null, 'Passphrase'), pass1), h('label.field', null, h('span', null, 'Repeat it'), pass2)),
        h('button.primary', { type: 'submit' }, 'Export key'),
        exportMsg),
      exported),
    h('details', null,
      h('summary', null, 'Import a key from another device'),
      h('p', null, 'This device will sign as that identity from now on (its earlier changes keep their own signatures).'),
      h('form', { onsubmit: doImport },
        h('label.field', null, h('span', null, 'Key code, or a key file'), code, file),
        h('label.field', null, h('span', null, 'Passphrase'), pass),
        h('button.primary', { type: 'submit' }, 'Import key'),
        importMsg))), { label: 'Your identity' });
}
