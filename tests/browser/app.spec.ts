// The task board PWA driven through its UI, the way a person uses it (tests/browser/support/board.ts
// builds and serves it, and starts the real ibexdb-server on 127.0.0.1): creating and editing tasks
// and reading them back after a reload, the board offline, two devices converging on the same
// task, and an identity exported on one device and imported on another. The other flows:
// app-share.spec.ts (backups, sharing, installing, updating) and app-trouble.spec.ts (a deploy,
// storage full, bad key codes, the layout), at a desktop and a phone viewport.
import path from 'node:path';
import { type Page } from '@playwright/test';
import { test, expect, uniqueName } from './ibexdb.fixtures';
import { useBoard, shoot, tmp, sync, openBoard, column, card, dialogOf, startBoard, addTask, openTask, setField, setName, identityOf, device, offlineReady, joinAs } from './support/board';

useBoard();

test('create and edit tasks; reload; everything is there', async ({ page, watched, browserName }) => {
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
  if (browserName === 'firefox') {
    // Playwright's dragTo() over WebDriver BiDi starts no HTML drag and drop in Firefox: the card
    // moves the other way a person can move it, its dialog's List.
    d = await openTask(page, 'Write the release notes');
    await d.getByLabel('List', { exact: true }).selectOption('Doing');
    await d.getByRole('button', { name: 'Close' }).click();
  } else {
    await page.locator('.card', { hasText: 'Write the release notes' }).dragTo(column(page, 'Doing').locator('.cards'));
  }
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
  await expect(column(page, 'To do').locator('.card')).toHaveCount(1); // the done task is back

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
  await shoot(page, 'board.png');
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
    // Everything written before (the owner's grant too) was acknowledged: nothing to sync.
    await expect(page.getByRole('button', { name: 'Sync status' })).toHaveText('Offline');
    await addTask(page, 'Doing', 'Written offline #offline');
    const d = await openTask(page, 'Book the venue');
    await setField(d, 'Due date', '2031-03-14');
    await d.getByRole('button', { name: 'Close' }).click();
    await expect(page.getByRole('button', { name: 'Sync status' })).toHaveText('Offline · 2 to sync');
    await shoot(page, 'offline.png');
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
      await shoot(p, `history-${name}.png`);
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
  expect(code).toMatch(/^ibexdb-wrapped-identity-v1:[\w-]{128}$/);
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
    await shoot(b.page, 'identity-import.png');
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
