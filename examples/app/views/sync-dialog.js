// The sync server: where this board syncs, and how it stands (db.syncStatus()).
import { dialog, h } from '../lib/dom.js';

/** @param {typeof import('../app.js').app} app */
export function openSyncDialog(app) {
  const url = /** @type {HTMLInputElement} */ (h('input', { value: app.syncUrl, placeholder: 'ws://127.0.0.1:8787', 'aria-label': 'Sync server' }));
  const msg = h('p.msg', { role: 'alert' });
  const facts = h('dl.facts');
  const render = async () => {
    const st = await app.db.syncStatus();
    const rows = [
      ['State', navigator.onLine ? st.state : `${st.state} (the browser is offline)`],
      ['Server', st.url ?? '—'],
      ['Received', `${st.received} changes`],
      ['Sent', `${st.acked} acknowledged`],
      ['Last error', st.lastError?.message ?? '—'],
    ];
    facts.replaceChildren(...rows.flatMap(([k, v]) => [h('dt', null, k), h('dd', null, v)]));
  };
  const timer = setInterval(render, 1000);
  render();
  const d = dialog('Sync', h('div', null,
    h('p', null, 'Changes are saved on this device first and sent to the server when it can be reached.'),
    h('form.row', {
      onsubmit: async (/** @type {SubmitEvent} */ e) => {
        e.preventDefault();
        const v = url.value.trim();
        if (v && !/^wss?:\/\//.test(v)) {
          msg.textContent = 'The server URL starts with ws:// or wss://';
          return;
        }
        msg.textContent = '';
        await app.setSync(v);
        render();
      },
    }, h('label.field.grow', null, h('span', null, 'Server (empty: this device only)'), url), h('button.primary', { type: 'submit' }, 'Save')),
    msg,
    facts), { label: 'Sync' });
  d.addEventListener('close', () => clearInterval(timer));
}
