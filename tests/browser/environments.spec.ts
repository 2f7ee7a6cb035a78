// Where the installed package runs and where it cannot: over https with a self-signed
// certificate on a host that is not localhost; under a strict Content-Security-Policy, with the
// module same-origin and from a CDN (and what breaks without 'wasm-unsafe-eval' or blob:
// workers); and the StorageUnavailableError a page gets where ibexdb cannot work: an insecure
// context, a browser that blocks site data (Chromium with cookies and site data blocked, as a
// private window that keeps no storage), and a sandboxed iframe.
//
// Host names under .ibexdb.test resolve to 127.0.0.1 (--host-resolver-rules), so a page can be
// served from a host that is not localhost: http:// there is not a secure context.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium } from '@playwright/test';
import { CHROMIUM_ARGS } from '../../playwright.config';
import { test, expect, watch } from './ibexdb.fixtures';
import { NOTES_EXPECTED, exerciseNotes, notesPage, pageOpened, scratchProject, selfSignedCert, serve, type Scratch } from './support/shipping';

const ARGS = [...CHROMIUM_ARGS, '--host-resolver-rules=MAP *.ibexdb.test 127.0.0.1'];
test.use({ launchOptions: { executablePath: '/usr/bin/chromium', args: ARGS } });
test.describe.configure({ mode: 'serial' });

let scratch: Scratch;
test.beforeAll(async () => {
  scratch = await scratchProject();
});
test.afterAll(() => scratch?.remove());

/** `http://127.0.0.1:PORT` -> `http://HOST.ibexdb.test:PORT`. */
const onHost = (url: string, host: string) => url.replace('127.0.0.1', `${host}.ibexdb.test`);

/** The CSP a careful site sends for the unbundled notes page (its import map allowed by hash). */
function strictCsp(importMapHash: string, { cdn = '', wasm = true, workerSrc = "'self'" } = {}) {
  return [
    "default-src 'none'",
    `script-src 'self' ${importMapHash}${cdn ? ` ${cdn}` : ''}${wasm ? " 'wasm-unsafe-eval'" : ''}`,
    `worker-src ${workerSrc}`,
    `connect-src 'self'${cdn ? ` ${cdn}` : ''}`,
    "img-src 'self' data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

test.describe('https', () => {
  test.use({ ignoreHTTPSErrors: true });
  test('over https with a self-signed certificate, on a host that is not localhost', async ({ page, watched }) => {
    void watched;
    const dir = mkdtempSync(path.join(tmpdir(), 'ibexdb-tls-'));
    try {
      const site = await serve(scratch.dir, { mount: '/apps/notes/', tls: selfSignedCert(dir, 'secure.ibexdb.test') });
      try {
        expect(site.url.startsWith('https://')).toBe(true);
        const seen = await exerciseNotes(page, `${onHost(site.url, 'secure')}/apps/notes/`);
        expect(seen.env).toEqual({ secure: true, isolated: false, role: 'owner' });
        expect(seen).toMatchObject(NOTES_EXPECTED);
      } finally {
        await site.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

test('a strict Content-Security-Policy: same-origin module', async ({ page, watched }) => {
  void watched;
  const hash = notesPage(scratch.dir, 'csp-self', './node_modules/ibexdb/ibexdb.js');
  const csp = strictCsp(hash);
  const site = await serve(scratch.dir, { mount: '/apps/notes/', headers: { 'Content-Security-Policy': csp } });
  try {
    const seen = await exerciseNotes(page, `${site.url}/apps/notes/csp-self.html`);
    expect(seen).toMatchObject(NOTES_EXPECTED);
    console.log(`CSP that works (same origin): ${csp}`);
  } finally {
    await site.close();
  }
});

test('a strict Content-Security-Policy: module from a CDN', async ({ page, watched }) => {
  void watched;
  const cdn = await serve(path.join(scratch.dir, 'node_modules'), { mount: '/npm/', headers: { 'Access-Control-Allow-Origin': '*' } });
  const hash = notesPage(scratch.dir, 'csp-cdn', `${cdn.url}/npm/ibexdb/ibexdb.js`);
  const csp = strictCsp(hash, { cdn: cdn.url, workerSrc: 'blob:' });
  const site = await serve(scratch.dir, { mount: '/apps/notes/', headers: { 'Content-Security-Policy': csp } });
  try {
    const seen = await exerciseNotes(page, `${site.url}/apps/notes/csp-cdn.html`);
    expect(seen).toMatchObject(NOTES_EXPECTED);
    console.log(`CSP that works (module from ${cdn.url}): ${csp}`);
  } finally {
    await site.close();
    await cdn.close();
  }
});

test('what a CSP without wasm-unsafe-eval or blob: workers gets', async ({ page }) => {
  const w = watch(page);
  const cdn = await serve(path.join(scratch.dir, 'node_modules'), { mount: '/npm/', headers: { 'Access-Control-Allow-Origin': '*' } });
  const selfHash = notesPage(scratch.dir, 'csp-nowasm', './node_modules/ibexdb/ibexdb.js');
  const cdnHash = notesPage(scratch.dir, 'csp-noblob', `${cdn.url}/npm/ibexdb/ibexdb.js`);
  const noWasm = await serve(scratch.dir, { mount: '/apps/notes/', headers: { 'Content-Security-Policy': strictCsp(selfHash, { wasm: false }) } });
  const noBlob = await serve(scratch.dir, { mount: '/apps/notes/', headers: { 'Content-Security-Policy': strictCsp(cdnHash, { cdn: cdn.url, workerSrc: "'self'" }) } });
  try {
    await page.goto(`${noWasm.url}/apps/notes/csp-nowasm.html`);
    const a = await pageOpened(page);
    expect(a?.kind).toBe('csp');
    expect(a?.error).toMatch(/^StorageUnavailableError: .*add 'wasm-unsafe-eval' to script-src/);
    await page.goto(`${noBlob.url}/apps/notes/csp-noblob.html`);
    const b = await pageOpened(page);
    expect(b?.kind).toBe('csp');
    expect(b?.error).toMatch(/^StorageUnavailableError: .*worker-src.*add blob:/);
    console.log(`without 'wasm-unsafe-eval': ${a?.error}\nwithout blob: workers: ${b?.error}`);
    // The only console errors are the browser's own reports of the violations.
    expect(w.problems.filter((p) => !/Content Security Policy/.test(p))).toEqual([]);
  } finally {
    await noWasm.close();
    await noBlob.close();
    await cdn.close();
  }
});

test('an insecure context: StorageUnavailableError that says to use https', async ({ page, watched }) => {
  void watched;
  const site = await serve(scratch.dir, { mount: '/apps/notes/' });
  try {
    await page.goto(`${onHost(site.url, 'plain')}/apps/notes/`);
    const failed = await pageOpened(page);
    expect(failed?.kind).toBe('insecure-context');
    expect(failed?.error).toMatch(/^StorageUnavailableError: ibexdb needs a secure context, and http:\/\/plain\.ibexdb\.test:\d+ is not one .*serve the page over https:\/\//);
  } finally {
    await site.close();
  }
});

test('a sandboxed iframe (opaque origin): StorageUnavailableError', async ({ page, watched }) => {
  void watched;
  writeFileSync(path.join(scratch.dir, 'sandboxed.html'), '<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><iframe sandbox="allow-scripts" src="./index.html"></iframe>\n');
  const site = await serve(scratch.dir, { mount: '/apps/notes/', headers: { 'Access-Control-Allow-Origin': '*' } });
  try {
    await page.goto(`${site.url}/apps/notes/sandboxed.html`);
    const frame = page.frames()[1];
    await frame.waitForSelector('body[data-ready]', { state: 'attached' });
    const failed = await frame.evaluate(() => ({ error: document.body.dataset.error, kind: document.body.dataset.kind }));
    expect(failed.kind).toBe('opaque-origin');
    expect(failed.error).toMatch(/^StorageUnavailableError: .*opaque origin.*allow-same-origin/);
  } finally {
    await site.close();
  }
});

test('a browser that blocks site data: StorageUnavailableError that says so', async () => {
  // Chromium with cookies and site data blocked for every site (the content setting a user
  // picks in Settings > Privacy; a private window that keeps no storage fails the same way).
  const profile = mkdtempSync(path.join(tmpdir(), 'ibexdb-profile-'));
  mkdirSync(path.join(profile, 'Default'));
  writeFileSync(path.join(profile, 'Default/Preferences'), JSON.stringify({ profile: { default_content_setting_values: { cookies: 2 } } }));
  const context = await chromium.launchPersistentContext(profile, { executablePath: '/usr/bin/chromium', args: ARGS });
  const site = await serve(scratch.dir, { mount: '/apps/notes/' });
  try {
    const page = await context.newPage();
    await page.goto(`${site.url}/apps/notes/`);
    const failed = await pageOpened(page);
    expect(failed?.kind).toBe('storage-denied');
    expect(failed?.error).toMatch(/^StorageUnavailableError: the browser does not let this site keep data .*Allow site data for this site/);
  } finally {
    await site.close();
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  }
});
