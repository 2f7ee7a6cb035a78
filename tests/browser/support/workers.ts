// A worker of the test's own on the playground page, for tests of the engine API below the page
// API (engine.js, storage.js, the backends), where a test needs two workers or a worker that
// stays alive: `window.__runWorker(body, onMessage)`.
import type { Page } from '@playwright/test';

/**
 * Run `body` (a module body that sees engine.js, storage.js and the OPFS pool as `E`, `S` and
 * `P`, the IndexedDB backend as `I`, and `next()`, the page's next answer) in a worker of its own;
 * `onMessage` answers its messages until it posts `{done: result}` (or `{error}`).
 */
const RUN_WORKER = `
  window.__runWorker = (body, onMessage) => {
    const lib = location.origin + '/www/lib/';
    const src = "import * as E from '" + lib + "engine.js';" +
      "import * as S from '" + lib + "storage.js';" +
      "import * as P from '" + lib + "backends/opfs-pool.js';" +
      "import * as I from '" + lib + "backends/indexeddb.js';" +
      "const next = () => new Promise((r) => { self.onmessage = (ev) => r(ev.data); });" + body;
    const w = new Worker(URL.createObjectURL(new Blob([src], { type: 'text/javascript' })), { type: 'module' });
    const done = new Promise((resolve, reject) => {
      w.onmessage = async (ev) => {
        if (ev.data && 'done' in ev.data) resolve(ev.data.done);
        else if (ev.data && 'error' in ev.data) reject(new Error(ev.data.error));
        else w.postMessage(await onMessage(ev.data));
      };
      w.onerror = (ev) => reject(new Error(ev.message));
    });
    return { worker: w, done };
  };`;

/** Define `window.__runWorker` on the page. */
export async function installRunWorker(page: Page) {
  // Through evaluate (an indirect eval: a global definition), which every browser's page of the
  // fixtures has (WebKit's WebDriver page has no addScriptTag).
  await page.evaluate((src) => {
    (0, eval)(src);
  }, RUN_WORKER);
}
