// The task board's core flows in EVERY browser (Chromium, Firefox and WebKitGTK: playwright.config.ts
// lists this spec in all three projects), driven through the page's DOM with evaluate() (the
// WebKit page of support/webkit.ts has no Playwright locators, so app*.spec.ts, which drive the
// board through locators at two viewports, run in Chromium and Firefox only). The board is built
// from the packed npm package (scripts/build-app.mjs: `ibexdb` mapped to the package's files),
// served by a plain static server, synced through the real ibexdb-server on 127.0.0.1:
// create and edit a task and read it back after a reload; the board reloaded from its service
// worker with its static server stopped; two devices (browser contexts) syncing an edit.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Page } from '@playwright/test';
// @ts-ignore: plain ES module of the repo's scripts
import { buildApp } from '../../scripts/build-app.mjs';
import { test, expect, uniqueName, watch } from './ibexdb.fixtures';
import { serve, startSyncServer, type Served, type SyncServer } from './support/shipping';

test.describe.configure({ mode: 'serial' });

let tmp: string;
let site: Served;
let sync: SyncServer;

test.beforeAll(async () => {
  tmp = mkdtempSync(path.join(tmpdir(), 'ibexdb-app-core-'));
  await buildApp({ out: path.join(tmp, 'app'), packageDir: path.join(tmp, 'npm') });
  site = await serve(path.join(tmp, 'app'), { mount: '/app/' });
  sync = await startSyncServer();
});

test.afterAll(async () => {
  await site?.close();
  await sync?.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** Open the board `board` from `base` (with sync unless `local`); wait until ready and `access`. */
async function openBoard(page: Page, board: string, { base = site.url, local = false, access = 'open' } = {}) {
  const q = new URLSearchParams({ board });
  if (!local) q.set('sync', sync.url);
  await page.goto(`${base}/app/?${q}`);
  await page.waitForFunction((access) => document.body.dataset.state === 'ready' && document.body.dataset.access === access, access, { timeout: 30_000 });
}

/** Page side: the board's DOM helpers (set on `window.__board`), installed after each navigation. */
function BOARD_HELPERS() {
  const w = window as any;
  const until = async (f: () => any, what: string, ms = 20_000) => {
    const end = Date.now() + ms;
    for (;;) {
      const v = f();
      if (v) return v;
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  };
  const column = (name: string) => [...document.querySelectorAll('section.column')].find((c) => c.querySelector('h2')?.textContent === name) as HTMLElement | undefined;
  const card = (title: string) => [...document.querySelectorAll('.card')].find((c) => c.querySelector('.title')?.textContent === title) as HTMLElement | undefined;
  /** Set a field as a person leaves it: its value, then input and change events. */
  const set = (el: HTMLInputElement | HTMLTextAreaElement, value: string) => {
    el.value = value;
    el.dispatchEvent(new Event('input', { bubbles: true }));
    el.dispatchEvent(new Event('change', { bubbles: true }));
  };
  w.__board = {
    until,
    column,
    card,
    titles: () => [...document.querySelectorAll('section.column')].map((c) => [c.querySelector('h2')?.textContent, [...c.querySelectorAll('.card .title')].map((t) => t.textContent)]),
    async start() {
      const b = [...document.querySelectorAll('button')].find((x) => x.textContent?.startsWith('Start with To do'));
      (b as HTMLButtonElement).click();
      await until(() => document.querySelectorAll('section.column').length === 3, 'three lists');
    },
    async addTask(list: string, text: string, title: string) {
      const input = column(list)!.querySelector('input[aria-label="New task"]') as HTMLInputElement;
      input.value = text;
      (input.form as HTMLFormElement).requestSubmit();
      await until(() => card(title) && input.value === '', `the card "${title}"`);
    },
    /** Open a task's dialog, set its fields (by aria-label), close it. */
    async edit(title: string, fields: Record<string, string>) {
      (card(title)!.querySelector('.title') as HTMLElement).click();
      const d = await until(() => document.querySelector('dialog[open][aria-label="Task"]'), 'the task dialog');
      for (const [label, value] of Object.entries(fields)) set(d.querySelector(`[aria-label="${label}"]`), value);
      (d.querySelector('button[aria-label="Close"]') as HTMLButtonElement).click();
      await until(() => !document.querySelector('dialog[open]'), 'the dialog to close');
    },
    /** The stored task `title` (through the app's database handle). */
    async task(title: string) {
      const rows = await w.taskboard.db.query({ collection: 'tasks' });
      const t = rows.find((r: any) => r.value.title === title);
      return t ? { title: t.value.title, notes: t.value.notes ?? '', due: t.value.due ?? null, tags: [...(t.value.tags ?? [])].sort() } : null;
    },
  };
}

async function helpers(page: Page) {
  await page.evaluate(BOARD_HELPERS);
}

test('the board from the packed package: create and edit a task; a reload reads everything back', async ({ page, watched }) => {
  void watched;
  const board = uniqueName('core');
  await openBoard(page, board, { local: true });
  await helpers(page);
  const out = await page.evaluate(async () => {
    const b = (window as any).__board;
    await b.start();
    await b.addTask('To do', 'Write the release notes #docs', 'Write the release notes');
    await b.addTask('Doing', 'Fix the login bug #bug', 'Fix the login bug');
    await b.edit('Fix the login bug', { Title: 'Fix the Safari login bug', Notes: 'Logged out after a minute.', 'Due date': '2031-01-05' });
    await b.until(() => b.card('Fix the Safari login bug'), 'the renamed card');
    // The board's module is the packed package's (the import map points into the build's ibexdb/).
    const pkg = performance.getEntriesByType('resource').map((e) => e.name).filter((u) => /\/ibexdb\/ibexdb\.js$/.test(u));
    return { titles: b.titles(), task: await b.task('Fix the Safari login bug'), pkg };
  });
  expect(out.titles).toEqual([['To do', ['Write the release notes']], ['Doing', ['Fix the Safari login bug']], ['Done', []]]);
  expect(out.task).toEqual({ title: 'Fix the Safari login bug', notes: 'Logged out after a minute.', due: '2031-01-05', tags: ['bug'] });
  expect(out.pkg).toHaveLength(1);
  expect(out.pkg[0]).toMatch(/\/app\/v-[^/]+\/ibexdb\/ibexdb\.js$/);

  await page.reload();
  await page.waitForFunction(() => document.body.dataset.state === 'ready' && document.querySelectorAll('.card').length === 2, undefined, { timeout: 30_000 });
  await helpers(page);
  const back = await page.evaluate(async () => {
    const b = (window as any).__board;
    return { titles: b.titles(), task: await b.task('Fix the Safari login bug') };
  });
  expect(back).toEqual({ titles: out.titles, task: out.task });
});

test('offline: with its static server stopped, the board reloads from its service worker and takes an edit', async ({ page, watched }) => {
  void watched;
  // A static server of this test's own, stopped halfway.
  const own = await serve(path.join(tmp, 'app'), { mount: '/app/' });
  let stopped = false;
  try {
    const board = uniqueName('offline');
    await openBoard(page, board, { base: own.url, local: true });
    await helpers(page);
    await page.evaluate(async () => {
      const b = (window as any).__board;
      await b.start();
      await b.addTask('To do', 'Book the venue', 'Book the venue');
    });
    // The service worker is active (update.js sets data-offline once it is).
    await page.waitForFunction(() => document.body.dataset.offline === 'ready', undefined, { timeout: 60_000 });
    await own.close();
    stopped = true;
    // Nothing answers at the board's address now: only the service worker can start it.
    const refused = await fetch(`${own.url}/app/`).then((r) => `HTTP ${r.status}`, (e) => (e as Error).name);
    expect(refused).toBe('TypeError');
    await page.reload();
    await page.waitForFunction(() => document.body.dataset.state === 'ready' && document.querySelectorAll('.card').length === 1, undefined, { timeout: 30_000 });
    await helpers(page);
    const out = await page.evaluate(async () => {
      const b = (window as any).__board;
      await b.addTask('Doing', 'Written offline', 'Written offline');
      return { titles: b.titles(), controlled: !!navigator.serviceWorker.controller };
    });
    expect(out).toEqual({ titles: [['To do', ['Book the venue']], ['Doing', ['Written offline']], ['Done', []]], controlled: true });
  } finally {
    if (!stopped) await own.close();
  }
});

test('two devices sync through the real server: a grant opens the second, edits reach both', async ({ browser, page, watched }) => {
  void watched;
  const board = uniqueName('two');
  await openBoard(page, board);
  await helpers(page);
  await page.evaluate(async () => {
    const b = (window as any).__board;
    await b.start();
    await b.addTask('To do', 'Plan the offsite #team', 'Plan the offsite');
  });
  const ctx = await browser.newContext();
  try {
    const other = await ctx.newPage();
    const w = watch(other, 'device B');
    // Not invited yet: the board says so; the owner grants its key (as Share does), and it opens.
    await openBoard(other, board, { access: 'denied' });
    const key = await other.evaluate(() => (window as any).taskboard.db.publicKey as string);
    await page.evaluate((key) => (window as any).taskboard.db.grant(key, 'writer'), key);
    await other.waitForFunction(() => document.body.dataset.access === 'open', undefined, { timeout: 20_000 });
    await helpers(other);
    await other.evaluate(async () => {
      const b = (window as any).__board;
      await b.until(() => b.card('Plan the offsite'), 'the synced card');
      await b.edit('Plan the offsite', { Title: 'Plan the team offsite', Notes: 'Budget: 5k' });
    });
    const expected = { title: 'Plan the team offsite', notes: 'Budget: 5k', due: null, tags: ['team'] };
    const seen = await page.evaluate(async () => {
      const b = (window as any).__board;
      await b.until(() => b.card('Plan the team offsite'), "device B's edit");
      return b.task('Plan the team offsite');
    });
    expect(seen).toEqual(expected);
    expect(await other.evaluate(() => (window as any).__board.task('Plan the team offsite'))).toEqual(expected);
    expect(w.problems).toEqual([]);
  } finally {
    await ctx.close();
  }
});
