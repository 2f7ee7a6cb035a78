// What the WebKitGTK runners share (run.mjs: the probe; tests/browser/support/webkit.ts: the specs; bench.mjs: the headline rows):
// where MiniBrowser is, a W3C WebDriver client, and a poll.
import { existsSync } from 'node:fs';

/** WebKitGTK's MiniBrowser (Debian's webkit2gtk-driver pulls it in), or undefined. */
export const MINIBROWSER = ['/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser', '/usr/lib/aarch64-linux-gnu/webkit2gtk-4.1/MiniBrowser'].find((p) => existsSync(p));

/** A W3C WebDriver client (JSON over HTTP; `value` unwrapped; errors thrown). @param {string} base */
export function client(base) {
  /** @param {string} method @param {string} p @param {unknown} [body] */
  const call = async (method, p, body) => {
    const res = await fetch(base + p, { method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const json = await res.json().catch(() => ({}));
    if (!res.ok || json.value?.error) throw new Error(`${method} ${p}: ${json.value?.error ?? res.status} ${json.value?.message ?? ''}`);
    return json.value;
  };
  return { get: (/** @type {string} */ p) => call('GET', p), post: (/** @type {string} */ p, /** @type {unknown} */ b) => call('POST', p, b ?? {}), del: (/** @type {string} */ p) => call('DELETE', p) };
}

/** Poll `f` every 200 ms until it returns truthy; throw after `ms` naming `what`. */
export async function waitFor(f, ms, what) {
  const end = Date.now() + ms;
  for (;;) {
    try {
      if (await f()) return;
    } catch (e) {
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${e.message}`);
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
