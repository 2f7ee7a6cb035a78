// The task board's service worker. The build (scripts/build-app.mjs) fills in VERSION (a hash of
// every file below) and FILES. Everything but index.html, the manifest and the icons lives under
// v-<VERSION>/, so a page of one version only ever asks for that version's app code, Vue, ibexdb
// module, worker and wasm: an old page's ibexdb worker never meets a new wasm.
//
// - install: fetch every file of this version into the cache taskboard-<VERSION> (all or nothing).
//   A new version waits (no skipWaiting) until the page asks (the update button) or every tab of
//   the old version is gone.
// - activate: delete caches older than the previous version (a tab still on the previous version
//   keeps being served from its cache, even offline or after the server dropped those files),
//   then take control of open pages.
// - fetch: the app shell and this version's files from the cache, then the network; files of
//   another version from whichever cache holds them. The sync server's WebSocket never passes here.
const VERSION = '%VERSION%';
const FILES = %FILES%;
const PREFIX = 'taskboard-';
const CACHE = PREFIX + VERSION;
/** Caches kept: this version's and the previous one's. */
const KEEP = 2;

self.addEventListener('install', (event) => {
  event.waitUntil(caches.open(CACHE).then((cache) => cache.addAll(FILES.map((f) => new Request(f, { cache: 'reload' })))));
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    (async () => {
      // caches.keys() lists caches in the order they were created.
      const others = (await caches.keys()).filter((n) => n.startsWith(PREFIX) && n !== CACHE);
      await Promise.all(others.slice(0, Math.max(0, others.length - (KEEP - 1))).map((n) => caches.delete(n)));
      await self.clients.claim();
    })(),
  );
});

self.addEventListener('message', (event) => {
  if (event.data?.type === 'skip-waiting') self.skipWaiting();
});

self.addEventListener('fetch', (event) => {
  const req = event.request;
  if (req.method !== 'GET') return;
  const url = new URL(req.url);
  const scope = new URL(self.registration.scope);
  if (url.origin !== scope.origin || !url.pathname.startsWith(scope.pathname)) return;
  event.respondWith(respond(req, url, scope));
});

/** @param {Request} req @param {URL} url @param {URL} scope */
async function respond(req, url, scope) {
  const own = await caches.open(CACHE);
  // Versioned files: from any version's cache (the page that asks is of that version).
  const versioned = /^v-[0-9a-f]+\//.test(url.pathname.slice(scope.pathname.length));
  const hit = req.mode === 'navigate'
    ? (await own.match(req, { ignoreSearch: true })) ?? (await own.match(scope.href))
    : versioned
      ? await caches.match(req, { ignoreSearch: true })
      : await own.match(req, { ignoreSearch: true });
  if (hit) return hit;
  return fetch(req);
}
