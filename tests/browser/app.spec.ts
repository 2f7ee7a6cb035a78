// The task board PWA (examples/app/, built by scripts/build-app.mjs into a temp dir) driven
// through its UI, the way a person uses it: served by a plain static server from /app/, synced
// through the real ibexdb-server on 127.0.0.1, in separate browser contexts (separate devices:
// separate OPFS, keys and service workers). What the board tells its user (sync status, access,
// storage, backups, layout) is checked at a desktop and a phone viewport (390×844); screenshots go to test-results/screenshots/.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Locator, type Page } from '@playwright/test';
import { CHROMIUM_ARGS } from '../../playwright.config';
// @ts-ignore: plain ES module of the repo's scripts
import { buildApp } from '../../scripts/build-app.mjs';
import { test, expect, firefoxAppSkip, uniqueName, watch } from './ibexdb.fixtures';
import { serve, startSyncServer, type Served, type SyncServer } from './support/shipping';

test.describe.configure({ mode: 'serial' });

const SHOTS = path.resolve('test-results/screenshots');
let tmp: string;
let site: Served;
let sync: SyncServer;

/** The viewports of the checks of what the board says: a desktop, and a phone. */
interface Viewport {
  name: string;
  viewport: { width: number; height: number };
  isMobile: boolean;
  hasTouch: boolean;
  deviceScaleFactor: number;
}
const DESKTOP: Viewport = { name: 'desktop', viewport: { width: 1280, height: 860 }, isMobile: false, hasTouch: false, deviceScaleFactor: 1 };
const PHONE: Viewport = { name: 'phone', viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 };
const VIEWPORTS: Viewport[] = [DESKTOP, PHONE];

test.beforeAll(async () => {
  tmp = mkdtempSync(path.join(tmpdir(), 'ibexdb-app-'));
  await buildApp({ out: path.join(tmp, 'app'), packageDir: path.join(tmp, 'npm') });
  site = await serve(path.join(tmp, 'app'), { mount: '/app/' });
  sync = await startSyncServer();
  mkdirSync(SHOTS, { recursive: true });
});

// In Firefox only the board offline runs (the shared subset); the rest skip with their reasons.
test.beforeEach(({ browserName }, testInfo) => test.skip(browserName === 'firefox' && !!firefoxAppSkip(testInfo.title), firefoxAppSkip(testInfo.title)));

test.afterAll(async () => {
  await site?.close();
  await sync?.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

// ----- driving the UI ----------------------------------------------------------------------------

/**
 * Open the board (with sync unless `local`), wait until it is ready and, by default, editable
 * (`access: 'denied'`: until it says this device has no access yet).
 */
async function openBoard(page: Page, board: string, { local = false, access = 'open' as 'open' | 'denied', server = '' } = {}) {
  const q = new URLSearchParams({ board });
  if (!local) q.set('sync', server || sync.url);
  await page.goto(`${site.url}/app/?${q}`);
  await expect(page.locator('body')).toHaveAttribute('data-state', 'ready', { timeout: 30_000 });
  await expect(page.locator('body')).toHaveAttribute('data-access', access, { timeout: 20_000 });
}

const column = (page: Page, name: string) => page.locator('section.column', { has: page.locator('h2', { hasText: new RegExp(`^${name}$`) }) });
const card = (page: Page, title: string | RegExp) => page.locator('.card', { has: page.locator('.title', { hasText: title }) });
const dialogOf = (page: Page, name: string) => page.getByRole('dialog', { name });

async function startBoard(page: Page) {
  await page.getByRole('button', { name: /Start with To do/ }).click();
  await expect(page.locator('section.column')).toHaveCount(3);
}

async function addTask(page: Page, list: string, text: string) {
  const input = column(page, list).getByLabel('New task');
  await input.fill(text);
  await input.press('Enter');
  await expect(input).toHaveValue('');
}

/**
 * This device may not change the board: every control that writes is disabled (new task, new
 * list, done boxes, the list menu's actions), and the task `title` opens to be read with its
 * fields disabled.
 */
async function expectReadOnly(page: Page, title: string) {
  await expect(page.locator('body')).toHaveAttribute('data-edit', 'no');
  for (const input of await page.getByLabel('New task').all()) await expect(input).toBeDisabled();
  await expect(page.getByLabel('New list name')).toBeDisabled();
  await expect(page.getByRole('button', { name: 'Add list' })).toBeDisabled();
  await expect(card(page, title).getByRole('checkbox')).toBeDisabled();
  await expect(card(page, title)).toHaveAttribute('draggable', 'false');
  const firstList = page.locator('section.column').first();
  await firstList.getByRole('button', { name: 'List actions' }).click();
  await expect(page.getByRole('menuitem', { name: 'Rename list…' })).toBeDisabled();
  await expect(page.getByRole('menuitem', { name: 'Delete list…' })).toBeDisabled();
  await page.keyboard.press('Escape');
  await expect(page.getByRole('menu')).toBeHidden();
  const d = await openTask(page, title);
  for (const label of ['Title', 'Notes', 'Due date', 'List', 'Add tag']) await expect(d.getByLabel(label, { exact: true })).toBeDisabled();
  await expect(d.getByRole('button', { name: 'Delete task' })).toBeDisabled();
  await d.getByRole('tab', { name: 'History' }).click();
  await expect(d.getByRole('list', { name: 'History' }).locator(':scope > li')).not.toHaveCount(0);
  await d.getByRole('button', { name: 'Close' }).click();
}

/** Open a task's dialog; returns it. */
async function openTask(page: Page, title: string | RegExp): Promise<Locator> {
  await card(page, title).locator('.title').click();
  const d = dialogOf(page, 'Task');
  await expect(d).toBeVisible();
  return d;
}

/** Set a field of the open task dialog and leave it, as a person does (its change event commits it). */
async function setField(d: Locator, label: string, value: string) {
  const f = d.getByLabel(label, { exact: true });
  await f.fill(value);
  await f.blur();
}

async function setName(page: Page, name: string) {
  await page.getByRole('button', { name: 'Your identity' }).click();
  const d = dialogOf(page, 'Your identity');
  await d.getByLabel('Your name').fill(name);
  await d.getByRole('button', { name: 'Save' }).click();
  await expect(d.getByText('Saved')).toBeVisible();
  await d.getByRole('button', { name: 'Close' }).click();
  await expect(page.getByRole('button', { name: 'Your identity' })).toContainText(name);
}

/** The app's database handle (for assertions the UI does not show in full, like whole keys). */
const identityOf = (page: Page) => page.evaluate(() => (window as any).taskboard.db.publicKey as string);

/** A second device: a new context (its own OPFS, key and service worker), a desktop unless `vp`. */
async function device(browser: import('@playwright/test').Browser, label: string, vp: Viewport = DESKTOP): Promise<{ ctx: BrowserContext; page: Page; problems: string[] }> {
  const ctx = await browser.newContext({ viewport: vp.viewport, isMobile: vp.isMobile, hasTouch: vp.hasTouch, deviceScaleFactor: vp.deviceScaleFactor });
  const page = await ctx.newPage();
  return { ctx, page, problems: watch(page, label).problems };
}

/** Wait until the service worker controls the page (the app then starts with no network). */
async function offlineReady(page: Page) {
  await expect(page.locator('body')).toHaveAttribute('data-offline', 'ready', { timeout: 30_000 });
  await expect(page.getByText('Works offline')).toBeVisible();
}

/** The public key a device shows under Share, as its user would copy it. */
async function keyShownBy(page: Page): Promise<string> {
  await page.getByRole('button', { name: 'Share' }).click();
  const d = dialogOf(page, 'Share this board');
  const key = (await d.locator('code.key').first().textContent()) ?? '';
  await d.getByRole('button', { name: 'Close' }).click();
  return key;
}

/** In the owner's share dialog (left open, returned): invite `key` as `role`, wait for the member row. */
async function invite(owner: Page, key: string, role: 'writer' | 'reader'): Promise<Locator> {
  await owner.getByRole('button', { name: 'Share' }).click();
  const d = dialogOf(owner, 'Share this board');
  await d.getByLabel('Public key to invite').fill(key);
  await d.getByLabel('Role', { exact: true }).selectOption(role);
  await d.getByRole('button', { name: 'Invite' }).click();
  await expect(d.getByRole('alert')).toHaveText(new RegExp(`is now a ${role}\\.`));
  await expect(d.locator(`li.member[data-key="${key}"]`)).toHaveAttribute('data-role', role);
  return d;
}

/** The header's sync status button. */
const statusOf = (page: Page) => page.getByRole('button', { name: 'Sync status' });

/** The library's sync status, as the app's database reports it. */
const syncStatusOf = (page: Page) =>
  page.evaluate(async () => {
    const st = await (window as any).taskboard.db.syncStatus();
    return { state: st.state as string, pending: st.pending as number, pushFrom: st.pushFrom as number, lastError: st.lastError ? { name: st.lastError.name as string, message: st.lastError.message as string } : null };
  });

/**
 * Record every text the sync status and the access banner show from now on (until a reload):
 * `seen()` returns them, to check what was never said.
 */
async function recordMessages(page: Page) {
  await page.evaluate(() => {
    const w = window as any;
    w.__said = w.__said ?? [];
    const note = () => {
      for (const el of document.querySelectorAll('button.status, section.access:not([hidden])')) w.__said.push(el.textContent);
    };
    new MutationObserver(note).observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
    note();
  });
  return { seen: () => page.evaluate(() => (window as any).__said as string[]) };
}

/** The rectangle of `el` is inside the viewport's width (nothing cut off at the right). */
async function expectOnScreen(page: Page, el: Locator) {
  await expect(el).toBeVisible();
  const box = (await el.boundingBox())!;
  const width = page.viewportSize()!.width;
  expect(box.x, `${el} starts on screen`).toBeGreaterThanOrEqual(0);
  expect(box.x + box.width, `${el} ends on screen`).toBeLessThanOrEqual(width);
}

/** The owner's change has reached the server (its status says Synced). */
const ownerSynced = (owner: Page) => expect(owner.getByRole('button', { name: 'Sync status' })).toHaveText('Synced', { timeout: 20_000 });

/** The guest's board opens by itself within 2 s of the grant (`t0`; it used to re-check every 10 s). */
async function opensOnGrant(guest: Page, t0: number) {
  await expect(guest.locator('body')).toHaveAttribute('data-access', 'open', { timeout: 10_000 });
  const ms = Date.now() - t0;
  console.log(`grant -> the guest's board is open: ${ms} ms`);
  expect(ms, 'the joining device learns of its grant within 2 s').toBeLessThan(2_000);
}

/**
 * A second device joins a board it was not invited to yet, like a person: it is told it has no
 * access, its user sends the key it shows, the owner invites it under Share, and it opens.
 */
async function joinAs(owner: Page, guest: Page, board: string, role: 'writer' | 'reader') {
  await openBoard(guest, board, { access: 'denied' });
  await expect(guest.getByRole('status', { name: 'Access' })).toContainText('You do not have access to this board yet.');
  const key = await keyShownBy(guest);
  const d = await invite(owner, key, role);
  const t0 = Date.now();
  await d.getByRole('button', { name: 'Close' }).click();
  await opensOnGrant(guest, t0);
}

// ----- tests -------------------------------------------------------------------------------------

test('create and edit tasks; reload; everything is there', async ({ page, watched }) => {
  void watched;
  await openBoard(page, uniqueName('board'), { local: true });
  await expect(page.getByText('This board has no lists yet')).toBeVisible();
  await startBoard(page);
  await addTask(page, 'To do', 'Write the release notes #docs');
  await addTask(page, 'To do', 'Buy milk #home');
  await addTask(page, 'Doing', 'Fix the login bug #bug #urgent');
  await expect(column(page, 'To do').locator('.card')).toHaveCount(2);
  await expect(card(page, 'Fix the login bug').locator('.tag')).toHaveText(['#bug', '#urgent']);

  let d = await openTask(page, 'Fix the login bug');
  await setField(d, 'Title', 'Fix the Safari login bug');
  await setField(d, 'Due date', '2020-01-05');
  await setField(d, 'Notes', 'Users on Safari 17 get logged out after a minute.');
  await d.getByLabel('Add tag').fill('backend');
  await d.getByLabel('Add tag').press('Enter');
  await d.getByLabel('Remove tag urgent').click();
  await d.getByRole('button', { name: 'Close' }).click();
  const fixed = card(page, 'Fix the Safari login bug');
  await expect(fixed.locator('.tag')).toHaveText(['#backend', '#bug']);
  await expect(fixed.locator('.due')).toHaveClass(/overdue/);
  await card(page, 'Buy milk').getByRole('checkbox').check();
  await expect(card(page, 'Buy milk')).toHaveClass(/done/);
  await page.locator('.card', { hasText: 'Write the release notes' }).dragTo(column(page, 'Doing').locator('.cards'));
  await expect(column(page, 'Doing').locator('.card')).toHaveCount(2);
  await page.getByLabel('New list name').fill('Later');
  await page.getByRole('button', { name: 'Add list' }).click();
  await expect(page.locator('section.column')).toHaveCount(4);

  // Search, tag filter and sort are live queries too.
  await page.getByLabel('Search tasks').fill('safari');
  await expect(page.locator('.card')).toHaveCount(1);
  await page.getByLabel('Search tasks').fill('');
  await page.getByRole('button', { name: '#docs' }).click();
  await expect(page.locator('.card .title')).toHaveText(['Write the release notes']);
  await page.getByRole('button', { name: '#docs' }).click();
  await page.getByLabel('Sort tasks').selectOption('title');
  await expect(column(page, 'Doing').locator('.card .title')).toHaveText(['Fix the Safari login bug', 'Write the release notes']);
  await page.getByLabel('Hide done').check();
  await expect(column(page, 'To do').locator('.card')).toHaveCount(0);
  await page.getByLabel('Hide done').uncheck();

  const before = await page.locator('.column').evaluateAll((cols) => cols.map((c) => c.textContent));
  await page.reload();
  await expect(page.locator('body')).toHaveAttribute('data-state', 'ready');
  await expect(page.locator('section.column')).toHaveCount(4);
  await expect(page.locator('.card')).toHaveCount(3);
  expect(await page.locator('.column').evaluateAll((cols) => cols.map((c) => c.textContent))).toEqual(before);
  d = await openTask(page, 'Fix the Safari login bug');
  await expect(d.getByLabel('Notes', { exact: true })).toHaveValue('Users on Safari 17 get logged out after a minute.');
  await expect(d.getByLabel('Due date')).toHaveValue('2020-01-05');
  await d.getByRole('button', { name: 'Close' }).click();
  await page.screenshot({ path: path.join(SHOTS, 'board.png') });
});

test('offline: the app starts from the service worker, accepts edits, and syncs when the network returns', async ({ browser, browserName, context, page, watched }) => {
  void watched;
  const board = uniqueName('offline');
  await openBoard(page, board);
  await startBoard(page);
  await addTask(page, 'To do', 'Book the venue');
  await offlineReady(page);
  await expect(page.getByRole('button', { name: 'Sync status' })).toHaveText('Synced');

  const other = await device(browser, 'device B');
  try {
    await joinAs(page, other.page, board, 'writer');
    await expect(card(other.page, 'Book the venue')).toBeVisible({ timeout: 15_000 });

    await context.setOffline(true);
    await page.reload();
    await expect(page.locator('body')).toHaveAttribute('data-state', 'ready');
    // Everything written before (the owner's grant too) was acknowledged: nothing to sync.
    await expect(page.getByRole('button', { name: 'Sync status' })).toHaveText('Offline');
    await addTask(page, 'Doing', 'Written offline #offline');
    const d = await openTask(page, 'Book the venue');
    await setField(d, 'Due date', '2031-03-14');
    await d.getByRole('button', { name: 'Close' }).click();
    await expect(page.getByRole('button', { name: 'Sync status' })).toHaveText('Offline · 2 to sync');
    // Not in Firefox: Playwright's screenshot there injects an inline style the app's CSP refuses (a page error).
    if (browserName !== 'firefox') await page.screenshot({ path: path.join(SHOTS, 'offline.png') });
    await page.waitForTimeout(1000);
    await expect(card(other.page, 'Written offline')).toHaveCount(0);

    await context.setOffline(false);
    await expect(card(other.page, 'Written offline')).toBeVisible({ timeout: 20_000 });
    await expect(card(other.page, 'Book the venue').locator('.due')).toHaveText('Due 2031-03-14');
    await expect(page.getByRole('button', { name: 'Sync status' })).toHaveText('Synced', { timeout: 20_000 });
    expect(other.problems).toEqual([]);
  } finally {
    await other.ctx.close();
  }
});

test('two devices edit the same task at once; both converge to the same result', async ({ browser, page, watched }) => {
  void watched;
  const board = uniqueName('conflict');
  await openBoard(page, board);
  await startBoard(page);
  await setName(page, 'Ada');
  await addTask(page, 'To do', 'Plan the offsite #team');
  const b = await device(browser, 'device B');
  try {
    await joinAs(page, b.page, board, 'writer');
    await setName(b.page, 'Ben');
    await expect(card(b.page, 'Plan the offsite')).toBeVisible({ timeout: 15_000 });

    // Both offline, both edit the task: a true concurrent edit. Ada first, Ben a moment later.
    await page.context().setOffline(true);
    await b.ctx.setOffline(true);
    let d = await openTask(page, 'Plan the offsite');
    await setField(d, 'Title', 'Plan the offsite in May');
    await setField(d, 'Due date', '2031-05-01');
    await d.getByLabel('Add tag').fill('travel');
    await d.getByLabel('Add tag').press('Enter');
    await expect(d.locator('.tag-editor .tag', { hasText: '#travel' })).toBeVisible();
    await d.getByRole('button', { name: 'Close' }).click();
    await b.page.waitForTimeout(50);
    d = await openTask(b.page, 'Plan the offsite');
    await setField(d, 'Title', 'Plan the team offsite');
    await setField(d, 'Notes', 'Budget: 5k');
    await d.getByLabel('Remove tag team').click();
    await d.getByLabel('Add tag').fill('budget');
    await d.getByLabel('Add tag').press('Enter');
    await expect(d.locator('.tag-editor .tag', { hasText: '#budget' })).toBeVisible();
    await d.getByRole('button', { name: 'Close' }).click();

    await page.context().setOffline(false);
    await b.ctx.setOffline(false);
    // The documented result (examples/app/README.md, Conflicts): per field, the later edit wins
    // (Ben's title); fields only one side changed keep that change (Ada's due date, Ben's notes);
    // tags merge as a set (Ben removed #team, Ada added #travel, Ben added #budget).
    const expected = { title: 'Plan the team offsite', due: '2031-05-01', notes: 'Budget: 5k', tags: ['budget', 'travel'] };
    for (const p of [page, b.page]) {
      await expect(card(p, expected.title).locator('.tag')).toHaveText(['#budget', '#travel'], { timeout: 20_000 });
      await expect(card(p, expected.title).locator('.due')).toHaveText('Due 2031-05-01');
    }
    const read = (p: Page) =>
      p.evaluate(async () => {
        const db = (window as any).taskboard.db;
        const [t] = await db.query({ collection: 'tasks' });
        return { title: t.value.title, due: t.value.due, notes: t.value.notes, tags: [...t.value.tags].sort() };
      });
    expect(await read(page)).toEqual(expected);
    expect(await read(b.page)).toEqual(expected);

    // The history shows who changed what, on both devices.
    for (const [p, name] of [[page, 'ada'], [b.page, 'ben']] as const) {
      d = await openTask(p, expected.title);
      await d.getByRole('tab', { name: 'History' }).click();
      const history = d.getByRole('list', { name: 'History' });
      await expect(history.locator(':scope > li')).toHaveCount(8);
      await expect(history).toContainText('Ada (this device)'.replace('Ada', p === page ? 'Ada' : 'Ben'));
      await expect(history).toContainText(p === page ? 'Ben' : 'Ada');
      await expect(history).toContainText('renamed it to “Plan the team offsite”');
      await expect(history).toContainText('removed tag #team');
      await expect(history).toContainText('set the due date to 2031-05-01');
      await p.screenshot({ path: path.join(SHOTS, `history-${name}.png`) });
      await d.getByRole('button', { name: 'Close' }).click();
    }
    expect(b.problems).toEqual([]);
  } finally {
    await b.ctx.close();
  }
});

test('identity: export on one device, import on another with the passphrase; a wrong passphrase is refused', async ({ browser, page, watched }) => {
  void watched;
  const board = uniqueName('identity');
  await openBoard(page, board);
  await startBoard(page);
  await setName(page, 'Ada');
  await addTask(page, 'To do', 'Review the budget');
  const keyA = await identityOf(page);

  await page.getByRole('button', { name: 'Your identity' }).click();
  let d = dialogOf(page, 'Your identity');
  await expect(d.locator('code.key')).toHaveText(keyA);
  await d.getByText('Use this identity on another device').click();
  await d.getByLabel('Passphrase', { exact: true }).fill('correct horse battery staple');
  await d.getByLabel('Repeat passphrase').fill('correct horse battery staple');
  await d.getByRole('button', { name: 'Export key' }).click();
  const code = await d.getByLabel('Key code', { exact: true }).inputValue();
  expect(code).toMatch(/^ibexkey1\.[\w-]+\.[\w-]+\.[\w-]+$/);
  expect(code).not.toContain(keyA.slice(0, 16));
  const [download] = await Promise.all([page.waitForEvent('download'), d.getByRole('button', { name: /^Download taskboard-key-/ }).click()]);
  const keyFile = path.join(tmp, download.suggestedFilename());
  await download.saveAs(keyFile);
  await d.getByRole('button', { name: 'Close' }).click();

  const b = await device(browser, 'device B');
  try {
    await joinAs(page, b.page, board, 'writer');
    await expect(card(b.page, 'Review the budget')).toBeVisible({ timeout: 15_000 });
    const keyB = await identityOf(b.page);
    expect(keyB).not.toBe(keyA);
    await b.page.getByRole('button', { name: 'Your identity' }).click();
    d = dialogOf(b.page, 'Your identity');
    await d.getByText('Import a key from another device').click();
    await d.getByLabel('Key file').setInputFiles(keyFile);
    await expect(d.getByLabel('Key code to import')).toHaveValue(code);
    await d.getByLabel('Passphrase of the key').fill('correct horse battery stapler');
    await d.getByRole('button', { name: 'Import key' }).click();
    await expect(d.getByRole('alert').filter({ hasText: 'Wrong passphrase' })).toHaveText(/^Wrong passphrase: the key could not be unlocked\./);
    expect(await identityOf(b.page)).toBe(keyB);

    await d.getByLabel('Passphrase of the key').fill('correct horse battery staple');
    await d.getByRole('button', { name: 'Import key' }).click();
    await expect(d.getByText(/^This device now signs as /)).toHaveText(`This device now signs as ${keyA.slice(0, 8)}…${keyA.slice(-4)}.`);
    await expect(d.locator('code.key')).toHaveText(keyA);
    expect(await identityOf(b.page)).toBe(keyA);
    await b.page.screenshot({ path: path.join(SHOTS, 'identity-import.png') });
    await d.getByRole('button', { name: 'Close' }).click();
    await expect(b.page.getByRole('button', { name: 'Your identity' })).toContainText('Ada');

    // B writes as Ada: A sees the change signed by its own key.
    const t = await openTask(b.page, 'Review the budget');
    await setField(t, 'Notes', 'Written on the second device');
    await t.getByRole('button', { name: 'Close' }).click();
    const a = await openTask(page, 'Review the budget');
    await expect(a.getByLabel('Notes', { exact: true })).toHaveValue('Written on the second device', { timeout: 15_000 });
    const authors = await page.evaluate(async () => {
      const db = (window as any).taskboard.db;
      const [task] = await db.query({ collection: 'tasks' });
      return (await db.history(`tasks/${task.id}`)).map((h: any) => h.author);
    });
    expect(authors).toEqual([keyA, keyA]);
    expect(b.problems).toEqual([]);
  } finally {
    await b.ctx.close();
  }
});

for (const vp of VIEWPORTS) {
  test(`backup: a backup restores its own board into any browser, from whichever board is open (${vp.name})`, async ({ browser, page, watched }) => {
    void watched;
    const board = uniqueName('backup');
    await openBoard(page, board, { local: true });
    await startBoard(page);
    await addTask(page, 'To do', 'Renew the domain #ops');
    await addTask(page, 'Done', 'Ship 1.0');
    await page.getByRole('button', { name: 'Backup' }).click();
    let d = dialogOf(page, 'Backup');
    const [download] = await Promise.all([page.waitForEvent('download'), d.getByRole('button', { name: 'Download backup' }).click()]);
    expect(download.suggestedFilename()).toMatch(new RegExp(`^${board}-.*\\.ibexdb$`));
    const file = path.join(tmp, `${vp.name}-${download.suggestedFilename()}`);
    await download.saveAs(file);
    await d.getByRole('button', { name: 'Close' }).click();
    // A bare bundle (a backup from before the file named its board), named as downloads are.
    const bare = path.join(tmp, `${board}-2020-01-02-03-04.ibexdb`);
    writeFileSync(bare, Buffer.from(await page.evaluate(async () => Array.from(await (window as any).taskboard.db.exportCommits()))));

    const fresh = await device(browser, 'empty browser', vp);
    try {
      // The empty browser has another board open: the dialog says whose backup it is, and opens that board.
      await openBoard(fresh.page, uniqueName('other'), { local: true });
      await expect(fresh.page.getByText('This board has no lists yet')).toBeVisible();
      await fresh.page.getByRole('button', { name: 'Backup' }).click();
      d = dialogOf(fresh.page, 'Backup');
      await expect(d).toContainText('A backup of another board restores into that board');
      await d.getByLabel('Backup file').setInputFiles(file);
      await d.getByRole('button', { name: 'Restore' }).click();
      await expect(d.getByRole('status')).toContainText(`This is a backup of the board “${board}”, not of “other-`);
      await d.getByRole('button', { name: `Open “${board}” and restore it there` }).click();
      await expect(d.getByRole('status')).toHaveText(`Restored into “${board}”: 3 changes added, 0 already here.`);
      await d.getByRole('button', { name: 'Close' }).click();
      await expect(fresh.page.locator('.board-name')).toHaveText(board);
      expect(new URL(fresh.page.url()).searchParams.get('board')).toBe(board);
      await expect(fresh.page.locator('section.column h2')).toHaveText(['To do', 'Doing', 'Done']);
      await expect(card(fresh.page, 'Renew the domain').locator('.tag')).toHaveText(['#ops']);
      await expect(column(fresh.page, 'Done').locator('.card .title')).toHaveText(['Ship 1.0']);

      // Into its own board it adds what is missing; the board stays open after a reload.
      await fresh.page.reload();
      await expect(fresh.page.locator('.board-name')).toHaveText(board);
      await fresh.page.getByRole('button', { name: 'Backup' }).click();
      d = dialogOf(fresh.page, 'Backup');
      await d.getByLabel('Backup file').setInputFiles(file);
      await d.getByRole('button', { name: 'Restore' }).click();
      await expect(d.getByRole('status')).toHaveText(`Restored into “${board}”: 0 changes added, 3 already here.`);
      await d.getByRole('button', { name: 'Close' }).click();
      expect(fresh.problems).toEqual([]);
    } finally {
      await fresh.ctx.close();
    }

    // A bare bundle into another board: ibexdb refuses it (its seals name the board); the
    // dialog says so in words and offers the board the file is named after.
    const third = await device(browser, 'third browser', vp);
    try {
      await openBoard(third.page, uniqueName('third'), { local: true });
      await third.page.getByRole('button', { name: 'Backup' }).click();
      d = dialogOf(third.page, 'Backup');
      await d.getByLabel('Backup file').setInputFiles(bare);
      await d.getByRole('button', { name: 'Restore' }).click();
      await expect(d.getByRole('status')).toHaveText(new RegExp(`^This backup is of another board, not of “third-[^”]+”: a backup restores only into the board it was made from \\(every change in it is signed for that board\\)\\. Its file name says “${board}”\\.$`));
      await expect(d.getByRole('status')).not.toContainText('SignatureError');
      await d.getByRole('button', { name: `Open “${board}” and restore it there` }).click();
      await expect(d.getByRole('status')).toHaveText(`Restored into “${board}”: 3 changes added, 0 already here.`);
      await d.getByRole('button', { name: 'Close' }).click();
      await expect(card(third.page, 'Ship 1.0')).toBeVisible();
      expect(third.problems).toEqual([]);
    } finally {
      await third.ctx.close();
    }
  });
}

test('installable: manifest and service worker pass the installability checks of Chromium', async () => {
  // A normal (not incognito) profile: Chromium does not offer installs in incognito contexts.
  const profile = mkdtempSync(path.join(tmpdir(), 'ibexdb-profile-'));
  const ctx = await chromium.launchPersistentContext(profile, { executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
  try {
    const page = ctx.pages()[0] ?? (await ctx.newPage());
    const w = watch(page, 'installable');
    await openBoard(page, uniqueName('pwa'), { local: true });
    await offlineReady(page);
    const cdp = await ctx.newCDPSession(page);
    const manifest = await cdp.send('Page.getAppManifest');
    expect(manifest.errors).toEqual([]);
    const { installabilityErrors } = await cdp.send('Page.getInstallabilityErrors');
    expect(installabilityErrors).toEqual([]);
    expect(w.problems).toEqual([]);
  } finally {
    await ctx.close();
    rmSync(profile, { recursive: true, force: true });
  }
});

for (const vp of VIEWPORTS) {
test(`sharing: a reader sees the board with its controls disabled; made a writer, its edit reaches the owner; removed, it is told once, coherently (${vp.name})`, async ({ browser, page, watched }) => {
  void watched;
  const board = uniqueName('share');
  await openBoard(page, board);
  await startBoard(page);
  await setName(page, 'Ada');
  await addTask(page, 'To do', 'Invite the team');
  const b = await device(browser, 'device B', vp);
  try {
    // B opens the shared board: nothing is written until the owner lets it in.
    await openBoard(b.page, board, { access: 'denied' });
    const banner = b.page.getByRole('status', { name: 'Access' });
    await expect(banner).toContainText('You do not have access to this board yet.');
    await expect(b.page.getByRole('button', { name: 'Sync status' })).toHaveText('No access');
    const keyB = await keyShownBy(b.page);
    expect(await banner.locator('code.key').textContent()).toBe(keyB);
    await b.page.screenshot({ path: path.join(SHOTS, 'join-denied.png') });

    // The owner's dialog checks the key before anything is written.
    await page.getByRole('button', { name: 'Share' }).click();
    let d = dialogOf(page, 'Share this board');
    await expect(d.getByText('You own this board')).toBeVisible();
    await d.getByLabel('Public key to invite').fill(keyB.slice(0, 40));
    await d.getByRole('button', { name: 'Invite' }).click();
    await expect(d.getByRole('alert')).toHaveText('A public key has 98 characters; this one has 40.');
    await d.getByRole('button', { name: 'Close' }).click();

    // Reader: B sees the tasks, is told it can only read, and its edit is refused.
    d = await invite(page, keyB, 'reader');
    const granted = Date.now();
    const members = d.getByRole('list', { name: 'Members' });
    await expect(members.locator('li.member')).toHaveCount(2);
    await expect(members.locator('li.member').first()).toContainText('Ada (you)');
    await expect(members.locator('li.member').first()).toContainText('owner');
    await page.screenshot({ path: path.join(SHOTS, 'share.png') });
    await d.getByRole('button', { name: 'Close' }).click();
    await opensOnGrant(b.page, granted);
    await expect(card(b.page, 'Invite the team')).toBeVisible();
    await expect(banner).toContainText('You can read this board, not change it.');
    await b.page.getByRole('button', { name: 'Share' }).click();
    const dB = dialogOf(b.page, 'Share this board');
    await expect(dB.getByText('Only owners can invite people; you are a reader here.')).toBeVisible();
    await expect(dB.getByLabel('Public key to invite')).toBeDisabled();
    await dB.getByRole('button', { name: 'Close' }).click();
    // Every control that writes is disabled, from the access list the library reports; the
    // task opens to be read, its fields disabled, its history there.
    await expectReadOnly(b.page, 'Invite the team');
    expect(await b.page.evaluate(async () => (await (window as any).taskboard.db.members()).members.length)).toBe(2);
    await b.page.screenshot({ path: path.join(SHOTS, `reader-${vp.name}.png`) });

    // Writer: the banner goes away live, and B's edit reaches the owner.
    d = await invite(page, keyB, 'writer');
    await d.getByRole('button', { name: 'Close' }).click();
    await expect(banner).toBeHidden({ timeout: 15_000 });
    await addTask(b.page, 'Doing', 'Written as a writer');
    await expect(card(page, 'Written as a writer')).toBeVisible({ timeout: 15_000 });
    await expect(card(page, 'Written as a reader')).toHaveCount(0);

    // Removed: the server shuts B out; what B writes next stays on B and never reaches the owner.
    await page.getByRole('button', { name: 'Share' }).click();
    d = dialogOf(page, 'Share this board');
    await d.getByRole('button', { name: 'Remove Someone' }).click();
    await expect(d.getByRole('alert')).toContainText('was removed');
    await expect(d.locator('li.member')).toHaveCount(1);
    await d.getByRole('button', { name: 'Close' }).click();
    await ownerSynced(page);
    // Removed: one message, that agrees with what the board lets B do (nothing), and nothing
    // saying a change was lost.
    await expect(banner).toContainText('The server refuses this device access to this board.', { timeout: 15_000 });
    await expect(banner).toContainText('you can read what is on this device, not change it.');
    await expect(b.page.getByRole('button', { name: 'Sync status' })).toHaveText(/^No access/);
    await expectReadOnly(b.page, 'Written as a writer');
    await expect(b.page.getByRole('alert')).toHaveCount(0);
    await expect(b.page.getByText('was not saved')).toHaveCount(0);
    await expect(card(b.page, 'Written as a writer')).toBeVisible();
    expect(await page.evaluate(() => (window as any).taskboard.db.count('tasks'))).toBe(2);
    await b.page.screenshot({ path: path.join(SHOTS, `removed-${vp.name}.png`) });
    expect(b.problems).toEqual([]);
  } finally {
    await b.ctx.close();
  }
});
}

test('update: a new version waits, the page reloads into it; a tab still on the old version keeps its own files', async ({ context, page, watched }) => {
  void watched;
  const dir = path.join(tmp, 'update');
  const v1 = await buildApp({ out: dir, buildId: 'update-1', packageDir: path.join(tmp, 'npm') });
  const server = await serve(dir, { mount: '/app/' });
  try {
    const url = `${server.url}/app/?board=${uniqueName('update')}`;
    await page.goto(url);
    await expect(page.locator('body')).toHaveAttribute('data-state', 'ready');
    await startBoard(page);
    await addTask(page, 'To do', 'Written on v1');
    await offlineReady(page);
    const old = await context.newPage();
    const wOld = watch(old, 'old tab');
    await old.goto(url);
    await expect(card(old, 'Written on v1')).toBeVisible();
    await expect(old.locator('.foot')).toContainText(`build ${v1.version.slice(0, 7)}`);

    // Deploy v2: the server now has only v2's files.
    const v2 = await buildApp({ out: dir, buildId: 'update-2', packageDir: path.join(tmp, 'npm') });
    expect(v2.version).not.toBe(v1.version);
    expect((await fetch(`${server.url}/app/v-${v1.version}/ibexdb/wasm/ibexdb_bg.wasm`)).status).toBe(404);

    // The browser finds the new service worker (on a navigation, or asked); it waits for the user.
    await page.evaluate(() => navigator.serviceWorker.getRegistration().then((r) => r?.update()));
    await expect(page.getByText('A new version of the app is ready.')).toBeVisible({ timeout: 20_000 });
    await page.getByRole('button', { name: 'Reload to update' }).click();
    await expect(page.locator('.foot')).toContainText(`build ${v2.version.slice(0, 7)}`, { timeout: 20_000 });
    await expect(page.locator('body')).toHaveAttribute('data-state', 'ready');
    await expect(card(page, 'Written on v1')).toBeVisible();

    // The old tab still runs v1. Its files come from v1's cache (the server has dropped them), so a
    // new ibexdb worker it starts gets v1's worker and v1's wasm, never v2's.
    const fromOld = await old.evaluate(async (v) => {
      const wasm = await fetch(`v-${v}/ibexdb/wasm/ibexdb_bg.wasm`);
      const mod = await import(`./v-${v}/ibexdb/ibexdb.js`);
      const db = await mod.open('another-repository');
      await db.put('notes/1', { from: 'v1' });
      const got = await db.get('notes/1');
      await db.close();
      return { wasm: wasm.status, got };
    }, v1.version);
    expect(fromOld).toEqual({ wasm: 200, got: { from: 'v1' } });
    await addTask(old, 'To do', 'Written on v1 after the update');
    await expect(card(page, 'Written on v1 after the update')).toBeVisible();
    expect(wOld.problems).toEqual([]);
  } finally {
    await server.close();
  }
});

for (const vp of VIEWPORTS) {
  test(`a deploy (the server stopped by SIGTERM) shows "Server unavailable", not a refusal; the count to sync survives a reload (${vp.name})`, async ({ browser }) => {
    const server = await startSyncServer();
    const a = await device(browser, 'device A', vp);
    let restarted: SyncServer | null = null;
    try {
      await openBoard(a.page, uniqueName('deploy'), { server: server.url });
      await startBoard(a.page);
      await addTask(a.page, 'To do', 'Before the deploy');
      await expect(statusOf(a.page)).toHaveText('Synced', { timeout: 20_000 });
      let said = await recordMessages(a.page);

      // The server shuts down gracefully (it sends UnavailableError and closes): offline, retrying.
      await server.terminate();
      await expect(statusOf(a.page)).toHaveText('Server unavailable', { timeout: 15_000 });
      expect(await syncStatusOf(a.page)).toMatchObject({ state: 'offline', pending: 0, lastError: { name: 'UnavailableError' } });
      await addTask(a.page, 'Doing', 'During the deploy');
      await addTask(a.page, 'Doing', 'Still during the deploy');
      await expect(statusOf(a.page)).toHaveText('Server unavailable · 2 to sync');
      await expect(a.page.getByRole('status', { name: 'Access' })).toBeHidden();
      const before = await said.seen();

      // A reload while the server is down: the count is what the server has not acknowledged,
      // from the position persisted with the board, before any connection.
      await a.page.reload();
      await expect(a.page.locator('body')).toHaveAttribute('data-state', 'ready', { timeout: 30_000 });
      const st = await syncStatusOf(a.page);
      expect(st.pending).toBe(2);
      expect(st.pushFrom).toBeGreaterThan(0);
      await expect(statusOf(a.page)).toHaveText(/^Server (unavailable|unreachable) · 2 to sync$/);
      said = await recordMessages(a.page);
      await a.page.waitForTimeout(1500);
      await expect(statusOf(a.page)).toHaveText(/^Server (unavailable|unreachable) · 2 to sync$/);
      await a.page.screenshot({ path: path.join(SHOTS, `deploy-${vp.name}.png`) });

      // The server is back (same port, same data): the two changes go, and it says Synced.
      restarted = await startSyncServer({ dir: server.dir, listen: server.listen });
      await expect(statusOf(a.page)).toHaveText('Synced', { timeout: 30_000 });
      expect((await syncStatusOf(a.page)).pending).toBe(0);
      for (const text of [...before, ...(await said.seen())]) expect(text).not.toMatch(/refus|No access|Read only/);
      expect(a.problems).toEqual([]);
    } finally {
      await a.ctx.close();
      await (restarted ?? server).stop();
    }
  });

  test(`storage full: said in words with what to do; a refused tick is undone; close succeeds (${vp.name})`, async ({ browser }) => {
    const a = await device(browser, 'device A', vp);
    try {
      await openBoard(a.page, uniqueName('full'), { local: true });
      await startBoard(a.page);
      await addTask(a.page, 'To do', 'Fits');
      await offlineReady(a.page); // the service worker's cache is written before the quota shrinks
      // The origin's quota (the browser's, as when the disk is full): a little above what it uses.
      const cdp = await a.ctx.newCDPSession(a.page);
      const usage = await a.page.evaluate(async () => (await navigator.storage.estimate()).usage ?? 0);
      await cdp.send('Storage.overrideQuotaForOrigin', { origin: new URL(site.url).origin, quotaSize: usage + 30_000 });
      const input = column(a.page, 'To do').getByLabel('New task');
      let added = 1;
      for (; added < 200; added++) {
        await input.fill(`Task ${added} ${'with a long description '.repeat(40)}`);
        await input.press('Enter');
        await expect(input).toHaveValue('', { timeout: 3000 }).catch(() => {});
        if ((await input.inputValue()) !== '') break;
      }
      expect(added).toBeLessThan(200);
      const alert = a.page.getByRole('alert');
      await expect(alert).toContainText('This device has no room left for the board: your change was not saved (nothing saved before is lost).');
      await expect(alert).toContainText('Deleting tasks does not free space');
      await expect(alert).not.toContainText(/OPFS|QuotaExceeded|storage error/);
      await expect(column(a.page, 'To do').locator('.card')).toHaveCount(added);
      await a.page.screenshot({ path: path.join(SHOTS, `storage-full-${vp.name}.png`) });
      await alert.getByRole('button', { name: 'Dismiss' }).click();

      // Ticking a task needs room too (a small change may still fit: tick until one does not).
      // The refused tick is undone: the box shows what the task is.
      const box = card(a.page, 'Fits').getByRole('checkbox');
      let ticks = 0;
      for (; ticks < 100; ticks++) {
        const was = await box.isChecked();
        await box.click();
        const refused = await a.page.getByRole('alert').waitFor({ timeout: 2000 }).then(() => true, () => false);
        if (refused) {
          await expect(box).toBeChecked({ checked: was });
          await expect(card(a.page, 'Fits')).toHaveClass(was ? /done/ : /^((?!done).)*$/);
          break;
        }
        await expect(box).toBeChecked({ checked: !was });
      }
      expect(ticks).toBeLessThan(100);
      await expect(a.page.getByRole('alert')).toContainText('no room left');

      // Closing at the quota succeeds, and every acknowledged task is there after a reload.
      expect(await a.page.evaluate(() => (window as any).taskboard.db.close().then(() => 'closed', (e: any) => `${e.name}: ${e.message}`))).toBe('closed');
      await a.page.reload();
      await expect(a.page.locator('body')).toHaveAttribute('data-state', 'ready', { timeout: 30_000 });
      await expect(column(a.page, 'To do').locator('.card')).toHaveCount(added);
      expect(a.problems).toEqual([]);
    } finally {
      await a.ctx.close();
    }
  });

  test(`identity: a cut-short or foreign key code is told what is wrong with it (${vp.name})`, async ({ browser }) => {
    const a = await device(browser, 'device A', vp);
    try {
      await openBoard(a.page, uniqueName('keycode'), { local: true });
      await a.page.getByRole('button', { name: 'Your identity' }).click();
      const d = dialogOf(a.page, 'Your identity');
      await d.getByText('Use this identity on another device').click();
      await d.getByLabel('Passphrase', { exact: true }).fill('correct horse battery staple');
      await d.getByLabel('Repeat passphrase').fill('correct horse battery staple');
      await d.getByRole('button', { name: 'Export key' }).click();
      const code = await d.getByLabel('Key code', { exact: true }).inputValue();
      expect(code).toHaveLength(224);
      await d.getByText('Import a key from another device').click();
      const importMsg = d.locator('details').nth(1).getByRole('alert');
      const tryCode = async (text: string) => {
        await d.getByLabel('Key code to import').fill(text);
        await d.getByLabel('Passphrase of the key').fill('correct horse battery staple');
        await d.getByRole('button', { name: 'Import key' }).click();
        return importMsg;
      };
      for (const cut of [code.slice(0, -20), code.slice(0, 60), code.slice(0, 12)]) {
        await expect(await tryCode(cut)).toHaveText(`The key code is cut short: it has ${cut.length} of its 224 characters. Copy the whole code (or use the key file) and try again.`);
      }
      await expect(await tryCode(`${code}.extra`)).toHaveText(/^The key code is damaged/);
      await expect(await tryCode('hello')).toHaveText('This is not a key code from this app (a key code starts with "ibexkey1.").');
      // The whole code with a line break (as copied from a mail) still unlocks.
      await expect(await tryCode(`${code.slice(0, 100)}\n${code.slice(100)}`)).toHaveText(/^This device now signs as /, { timeout: 15_000 });
      expect(a.problems).toEqual([]);
    } finally {
      await a.ctx.close();
    }
  });

  test(`layout: every header control is on screen, "⋯" opens a menu and deleting a list asks first, long names keep columns' width (${vp.name})`, async ({ browser }) => {
    const a = await device(browser, 'device A', vp);
    try {
      await openBoard(a.page, uniqueName('layout-with-a-long-board-name'), { local: true });
      await startBoard(a.page);
      for (const el of [
        a.page.getByLabel('Search tasks'),
        a.page.getByLabel('Sort tasks'),
        a.page.locator('label.toggle', { hasText: 'Hide done' }),
        statusOf(a.page),
        a.page.getByRole('button', { name: 'Your identity' }),
        a.page.getByRole('button', { name: 'Share' }),
        a.page.getByRole('button', { name: 'Backup' }),
      ]) await expectOnScreen(a.page, el);
      expect(await a.page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(vp.viewport.width);
      await a.page.getByLabel('Hide done').check();
      await a.page.getByLabel('Hide done').uncheck();

      // "⋯" opens a menu; nothing is deleted until the user confirms.
      const doing = column(a.page, 'Doing');
      await addTask(a.page, 'Doing', 'Keep me');
      await doing.getByRole('button', { name: 'List actions' }).click();
      await expect(a.page.getByRole('menu')).toBeVisible();
      await expect(a.page.locator('section.column')).toHaveCount(3);
      await a.page.getByRole('menuitem', { name: 'Delete list…' }).click();
      let ask = a.page.getByRole('alertdialog', { name: 'Delete list' });
      await expect(ask).toContainText('Delete the list “Doing”? Its task is deleted with it.');
      await ask.getByRole('button', { name: 'Cancel' }).click();
      await expect(a.page.locator('section.column')).toHaveCount(3);
      await expect(card(a.page, 'Keep me')).toBeVisible();

      // Long names: the list's name is cut with an ellipsis, a task's title wraps; the column keeps its width.
      const todo = a.page.locator('section.column').first();
      const width = (await todo.boundingBox())!.width;
      await todo.getByRole('button', { name: 'List actions' }).click();
      await a.page.getByRole('menuitem', { name: 'Rename list…' }).click();
      const rename = dialogOf(a.page, 'Rename list');
      const long = `A${'very'.repeat(35)}LongListName`;
      await rename.getByLabel('List name').fill(long);
      await rename.getByRole('button', { name: 'Rename' }).click();
      await expect(todo.locator('h2')).toHaveText(long);
      await addTask(a.page, long, `Unbroken${'x'.repeat(300)} and a title with many words ${'word '.repeat(60)}`);
      const col = (await todo.boundingBox())!;
      expect(col.width).toBeCloseTo(width, 0);
      for (const inner of [todo.locator('h2'), todo.locator('.card').first(), todo.locator('.card .title').first()]) {
        const box = (await inner.boundingBox())!;
        expect(box.x).toBeGreaterThanOrEqual(col.x);
        expect(box.x + box.width).toBeLessThanOrEqual(col.x + col.width + 0.5);
      }
      expect(await todo.locator('h2').evaluate((e) => e.scrollWidth > e.clientWidth && getComputedStyle(e).textOverflow === 'ellipsis')).toBe(true);
      await a.page.screenshot({ path: path.join(SHOTS, `layout-${vp.name}.png`) });

      // Confirmed, the list and its task go.
      await doing.getByRole('button', { name: 'List actions' }).click();
      await a.page.getByRole('menuitem', { name: 'Delete list…' }).click();
      ask = a.page.getByRole('alertdialog', { name: 'Delete list' });
      await ask.getByRole('button', { name: 'Delete list' }).click();
      await expect(a.page.locator('section.column')).toHaveCount(2);
      await expect(card(a.page, 'Keep me')).toHaveCount(0);
      expect(a.problems).toEqual([]);
    } finally {
      await a.ctx.close();
    }
  });
}
