// The task board PWA through its UI (tests/browser/support/board.ts): backups restored into any
// browser, sharing (a reader, made a writer, removed), its installability in Chromium, and an
// update of the app waiting for its tabs; at a desktop and a phone viewport where it matters.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type Page } from '@playwright/test';
import { CHROMIUM_ARGS } from '../../playwright.config';
// @ts-ignore: plain ES module of the repo's scripts
import { buildApp } from '../../scripts/build-app.mjs';
import { test, expect, uniqueName, watch } from './ibexdb.fixtures';
import { serve } from './support/shipping';
import { useBoard, shoot, tmp, VIEWPORTS, openBoard, column, card, dialogOf, startBoard, addTask, expectReadOnly, setName, device, offlineReady, keyShownBy, invite, ownerSynced, opensOnGrant, openAdvanced } from './support/board';

useBoard();

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
    await shoot(b.page, 'join-denied.png');

    // The owner's dialog checks the key before anything is written.
    await page.getByRole('button', { name: 'Share' }).click();
    let d = dialogOf(page, 'Share this board');
    await expect(d.getByText('You own this board')).toBeVisible();
    await openAdvanced(d);
    await d.getByLabel('Public key to invite').fill(keyB.slice(0, 40));
    await d.getByRole('button', { name: 'Invite', exact: true }).click();
    await expect(d.getByRole('alert')).toHaveText('A public key has 98 characters; this one has 40.');
    await d.getByRole('button', { name: 'Close' }).click();

    // Reader: B sees the tasks, is told it can only read, and its edit is refused.
    d = await invite(page, keyB, 'reader');
    const granted = Date.now();
    const members = d.getByRole('list', { name: 'Members' });
    await expect(members.locator('li.member')).toHaveCount(2);
    await expect(members.locator('li.member').first()).toContainText('Ada (you)');
    await expect(members.locator('li.member').first()).toContainText('owner');
    await shoot(page, 'share.png');
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
    await shoot(b.page, `reader-${vp.name}.png`);

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
    await shoot(b.page, `removed-${vp.name}.png`);
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
