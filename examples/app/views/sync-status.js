// The sync status button of the header, in words: Local only, Synced, Syncing n, Offline · n to
// sync, Server unreachable, Server unavailable (it is shutting down or restarting: a deploy),
// No access, Read only. n is `pending`: the local changes the server has not acknowledged (the
// library knows it from the persisted sync position, offline and after a reload too). Updated
// at every sync event (db.onSyncStatus) and every second (n moves with every write).
import { PermissionError, UnavailableError } from 'ibexdb';

/**
 * @param {import('ibexdb').SyncStatus} st
 * @param {{hasServer: boolean, online: boolean, waiting: number}} ctx waiting: local changes the server has not acknowledged
 * @returns {[state: string, text: string]}
 */
export function describeSync(st, { hasServer, online, waiting }) {
  const n = waiting ? ` · ${waiting} to sync` : '';
  if (!hasServer || st.state === 'off') return ['local', 'Local only'];
  if (!online) return ['offline', `Offline${n}`];
  if (st.state === 'error') return refusal(st.lastError, waiting);
  if (st.state === 'synced') return ['synced', 'Synced'];
  if (st.state === 'syncing') return ['syncing', waiting ? `Syncing ${waiting}…` : 'Syncing…'];
  if (st.state === 'online') return ['connecting', 'Connecting…'];
  if (st.lastError instanceof UnavailableError) return ['offline', `Server unavailable${n}`];
  return ['offline', `Server unreachable${n}`];
}

/** @param {import('ibexdb').IbexError | null} err @param {number} waiting @returns {[string, string]} */
function refusal(err, waiting) {
  const kept = waiting ? ` · ${waiting} kept here` : '';
  if (err instanceof PermissionError && err.kind === 'cannot-read') return ['refused', `No access${kept}`];
  if (err instanceof PermissionError && err.kind === 'cannot-write') return ['refused', `Read only${kept}`];
  return ['refused', `Sync refused${kept}`];
}

/**
 * Follow the database's sync status into `button`.
 * @param {typeof import('../app.js').app} app
 * @param {HTMLElement} button
 */
export function followSyncStatus(app, button) {
  const render = async () => {
    const db = app.db;
    if (!db) return; // being reopened
    const st = await db.syncStatus();
    const waiting = st.pending;
    const [state, text] = describeSync(st, { hasServer: !!app.syncUrl, online: navigator.onLine, waiting });
    button.dataset.state = state;
    button.dataset.waiting = String(waiting);
    button.textContent = text;
    button.title = st.lastError ? `Last error: ${st.lastError.message}` : `${st.url ?? 'no server'} · ${waiting} changes not on the server yet`;
  };
  const safe = () => render().catch(() => {}); // the database is being reopened
  for (const ev of ['online', 'offline']) addEventListener(ev, safe);
  /** @type {() => void} */
  let unsubscribe = () => {};
  const bind = () => {
    unsubscribe();
    unsubscribe = app.db.onSyncStatus(safe);
    safe();
  };
  app.onOpen.add(bind);
  bind();
  setInterval(safe, 1000);
}
