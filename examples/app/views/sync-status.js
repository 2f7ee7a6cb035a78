// The sync status button of the header, in words: Local only, Synced, Syncing n, Offline · n to
// sync, Server unreachable, Server unavailable (it is shutting down or restarting: a deploy),
// No access, Read only. n is `pending`: the local changes the server has not acknowledged (the
// library knows it from the persisted sync position, offline and after a reload too). Updated
// at every sync event (useSyncStatus) and every second (n moves with every write).
import { PermissionError, UnavailableError } from 'ibexdb';
import { useSyncStatus } from 'ibexdb/vue';
import { h, onMounted, onUnmounted, ref, watch } from 'vue';

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
 * The header's sync status button: the status from useSyncStatus (every sync event), and
 * `pending` and `navigator.onLine` read again every second (`pending` moves with every local
 * write, which is no sync event; Firefox may not tell when the browser goes back online).
 * @param {{app: typeof import('../app.js').app, onClick: () => void}} props
 */
export const SyncStatusButton = {
  props: { app: { type: Object, required: true }, onClick: { type: Function, required: true } },
  /** @param {{app: typeof import('../app.js').app, onClick: () => void}} props */
  setup(props) {
    const status = useSyncStatus();
    const online = ref(navigator.onLine);
    const waiting = ref(0);
    const onlineNow = () => (online.value = navigator.onLine);
    const count = async () => {
      onlineNow(); // Firefox may change navigator.onLine without an online/offline event
      const db = props.app.dbRef.value;
      if (db) waiting.value = (await db.syncStatus()).pending;
    };
    watch(status, (st) => st && (waiting.value = st.pending));
    /** @type {ReturnType<typeof setInterval> | undefined} */
    let timer;
    onMounted(() => {
      for (const ev of ['online', 'offline']) addEventListener(ev, onlineNow);
      timer = setInterval(() => count().catch(() => {}), 1000); // the database is being reopened
    });
    onUnmounted(() => {
      for (const ev of ['online', 'offline']) removeEventListener(ev, onlineNow);
      clearInterval(timer);
    });
    return () => {
      const st = status.value;
      if (!st) return h('button', { class: 'status', type: 'button', 'aria-label': 'Sync status', onClick: props.onClick }, '…');
      const [state, text] = describeSync(st, { hasServer: !!props.app.syncUrl, online: online.value, waiting: waiting.value });
      return h('button', {
        class: 'status',
        type: 'button',
        'aria-label': 'Sync status',
        'data-state': state,
        'data-waiting': String(waiting.value),
        title: st.lastError ? `Last error: ${st.lastError.message}` : `${st.url ?? 'no server'} · ${waiting.value} changes not on the server yet`,
        onClick: props.onClick,
      }, text);
    };
  },
};
