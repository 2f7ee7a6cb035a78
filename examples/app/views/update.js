// The service worker (sw.js): registered once the board is up; it caches the app, the ibexdb
// module, its worker and the wasm, all under one versioned folder, for starts with no network.
// A new version installs in the background and waits; the header offers to reload into it.
// Only then does it take over (a tab still on the old version keeps its old files: see sw.js).
import { reactive } from 'vue';

/** What the header shows: "Works offline", and a waiting new version's reload (null: none). */
export const serviceWorker = reactive({ ready: false, reload: /** @type {(() => void) | null} */ (null) });

export function registerServiceWorker() {
  if (!('serviceWorker' in navigator)) return;
  const sw = navigator.serviceWorker;
  let updating = false;
  // Ready for offline starts once a worker is active: it holds its version's files. Not "once
  // this page is controlled": a page loaded while the worker was activating stays uncontrolled
  // (its clients.claim() ran before the page existed) though the next start is served offline.
  const markReady = () => {
    serviceWorker.ready = true;
    document.body.dataset.offline = 'ready';
  };
  sw.addEventListener('controllerchange', () => {
    if (updating) location.reload();
    else markReady();
  });
  if (sw.controller) markReady();
  sw.ready.then(markReady, () => {});
  /** @param {ServiceWorker} waiting */
  const offer = (waiting) => {
    serviceWorker.reload = async () => {
      updating = true;
      await window.taskboard?.db?.close().catch(() => {});
      waiting.postMessage({ type: 'skip-waiting' });
    };
  };
  sw.register('./sw.js', { scope: './', updateViaCache: 'none' }).then((reg) => {
    if (reg.waiting && sw.controller) offer(reg.waiting);
    reg.addEventListener('updatefound', () => {
      const w = reg.installing;
      w?.addEventListener('statechange', () => {
        if (w.state === 'installed' && sw.controller) offer(w);
      });
    });
  }, (e) => console.warn('service worker not registered:', e));
}
