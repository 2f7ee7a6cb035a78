// The task board PWA (examples/app/, built by scripts/build-app.mjs into a temp dir) driven
// through its UI, the way a person uses it: served by a plain static server from /app/, synced
// through the real ibexdb-server on 127.0.0.1, in separate browser contexts (separate devices:
// separate OPFS, keys and service workers). Screenshots of the board, the history view and the
// share dialog go to test-results/screenshots/.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Locator, type Page } from '@playwright/test';
import { CHROMIUM_ARGS } from '../../playwright.config';
// @ts-ignore: plain ES module of the repo's scripts
import { buildApp } from '../../scripts/build-app.mjs';
import { test, expect, uniqueName, watch } from './ibexdb.fixtures';
import { serve, startSyncServer, type Served } from './support/shipping';

test.describe.configure({ mode: 'serial' });

const SHOTS = path.resolve('test-results/screenshots');
let tmp: string;
let site: Served;
let sync: { url: string; stop(): Promise<void> };

test.beforeAll(async () => {
  tmp = mkdtempSync(path.join(tmpdir(), 'ibexdb-app-'));
  await buildApp({ out: path.join(tmp, 'app'), packageDir: path.join(tmp, 'npm') });
  site = await serve(path.join(tmp, 'app'), { mount: '/app/' });
  sync = await startSyncServer();
  mkdirSync(SHOTS, { recursive: true });
});

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
async function openBoard(page: Page, board: string, { local = false, access = 'open' as 'open' | 'denied' } = {}) {
  const q = new URLSearchParams({ board });
  if (!local) q.set('sync', sync.url);
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

/** Type a new task that the board refuses: the text stays in the input. */
async function addTaskRefused(page: Page, list: string, text: string) {
  const input = column(page, list).getByLabel('New task');
  await input.fill(text);
  await input.press('Enter');
  await expect(page.getByRole('alert')).toBeVisible();
  await expect(input).toHaveValue(text);
  await expect(card(page, text)).toHaveCount(0);
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
const identityOf = (page: Page) => page.evaluate(() => (window as any).taskboard.db.identity as string);

/** A second device: a new context (its own OPFS, key and service worker). */
async function device(browser: import('@playwright/test').Browser, label: string): Promise<{ ctx: BrowserContext; page: Page; problems: string[] }> {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 860 } });
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

/** The owner's change has reached the server (its status says Synced). */
const ownerSynced = (owner: Page) => expect(owner.getByRole('button', { name: 'Sync status' })).toHaveText('Synced', { timeout: 20_000 });

/**
 * A second device joins a board it was not invited to yet, like a person: it is told it has no
 * access, its user sends the key it shows, the owner invites it under Share, and it checks again.
 */
async function joinAs(owner: Page, guest: Page, board: string, role: 'writer' | 'reader') {
  await openBoard(guest, board, { access: 'denied' });
  await expect(guest.getByRole('status', { name: 'Access' })).toContainText('You do not have access to this board yet.');
  const key = await keyShownBy(guest);
  const d = await invite(owner, key, role);
  await d.getByRole('button', { name: 'Close' }).click();
  await ownerSynced(owner);
  await guest.getByRole('button', { name: 'Check again' }).click();
  await expect(guest.locator('body')).toHaveAttribute('data-access', 'open', { timeout: 20_000 });
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

test('offline: the app starts from the service worker, accepts edits, and syncs when the network returns', async ({ browser, context, page, watched }) => {
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
    await expect(page.getByRole('button', { name: 'Sync status' })).toHaveText(/^Offline/);
    await addTask(page, 'Doing', 'Written offline #offline');
    const d = await openTask(page, 'Book the venue');
    await setField(d, 'Due date', '2031-03-14');
    await d.getByRole('button', { name: 'Close' }).click();
    await expect(page.getByRole('button', { name: 'Sync status' })).toHaveText(/^Offline · \d+ to sync$/);
    await page.screenshot({ path: path.join(SHOTS, 'offline.png') });
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

test('backup: download the repository, restore it into an empty browser', async ({ browser, page, watched }) => {
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
  const file = path.join(tmp, download.suggestedFilename());
  await download.saveAs(file);

  const fresh = await device(browser, 'empty browser');
  try {
    await openBoard(fresh.page, board, { local: true });
    await expect(fresh.page.getByText('This board has no lists yet')).toBeVisible();
    await fresh.page.getByRole('button', { name: 'Backup' }).click();
    d = dialogOf(fresh.page, 'Backup');
    await d.getByLabel('Backup file').setInputFiles(file);
    await d.getByRole('button', { name: 'Restore' }).click();
    await expect(d.getByRole('status')).toHaveText('Restored: 3 changes added, 0 already here.');
    await d.getByRole('button', { name: 'Close' }).click();
    await expect(fresh.page.locator('section.column h2')).toHaveText(['To do', 'Doing', 'Done']);
    await expect(card(fresh.page, 'Renew the domain').locator('.tag')).toHaveText(['#ops']);
    await expect(column(fresh.page, 'Done').locator('.card .title')).toHaveText(['Ship 1.0']);
    expect(fresh.problems).toEqual([]);
  } finally {
    await fresh.ctx.close();
  }
});

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

test('sharing: a reader sees the board but its edit is refused; made a writer, its edit reaches the owner; removed, its edits do not', async ({ browser, page, watched }) => {
  void watched;
  const board = uniqueName('share');
  await openBoard(page, board);
  await startBoard(page);
  await setName(page, 'Ada');
  await addTask(page, 'To do', 'Invite the team');
  const b = await device(browser, 'device B');
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
    const members = d.getByRole('list', { name: 'Members' });
    await expect(members.locator('li.member')).toHaveCount(2);
    await expect(members.locator('li.member').first()).toContainText('Ada (you)');
    await expect(members.locator('li.member').first()).toContainText('owner');
    await page.screenshot({ path: path.join(SHOTS, 'share.png') });
    await d.getByRole('button', { name: 'Close' }).click();
    await ownerSynced(page);
    await b.page.getByRole('button', { name: 'Check again' }).click();
    await expect(b.page.locator('body')).toHaveAttribute('data-access', 'open', { timeout: 20_000 });
    await expect(card(b.page, 'Invite the team')).toBeVisible();
    await expect(banner).toContainText('You can read this board, not change it.');
    await b.page.getByRole('button', { name: 'Share' }).click();
    const dB = dialogOf(b.page, 'Share this board');
    await expect(dB.getByText('Only owners can invite people; you are a reader here.')).toBeVisible();
    await expect(dB.getByLabel('Public key to invite')).toBeDisabled();
    await dB.getByRole('button', { name: 'Close' }).click();
    await addTaskRefused(b.page, 'To do', 'Written as a reader');
    await expect(b.page.getByRole('alert')).toContainText('You cannot change this board (you are a reader here, or an owner removed you): your change was not saved.');
    await b.page.screenshot({ path: path.join(SHOTS, 'reader-refused.png') });

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
    await expect(banner).toContainText('The server refuses this device access to this board.', { timeout: 15_000 });
    await b.page.getByLabel('New task').first().fill('Written after removal');
    await b.page.getByLabel('New task').first().press('Enter');
    await expect(b.page.getByRole('button', { name: 'Sync status' })).toHaveText(/^No access/);
    await expect(card(b.page, 'Written as a writer')).toBeVisible();
    await b.page.waitForTimeout(2000);
    await expect(card(page, 'Written after removal')).toHaveCount(0);
    expect(await page.evaluate(() => (window as any).taskboard.db.count('tasks'))).toBe(2);
    await b.page.screenshot({ path: path.join(SHOTS, 'removed.png') });
  } finally {
    await b.ctx.close();
  }
});

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
