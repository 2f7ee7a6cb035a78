// The task board PWA through its UI (tests/browser/support/board.ts) when things go wrong, at a
// desktop and a phone viewport: a deploy (the sync server stopped by SIGTERM), storage full, a
// cut-short or foreign key code, and a layout that keeps every control on screen.
import { test, expect, uniqueName } from './ibexdb.fixtures';
import { startSyncServer } from './support/shipping';
import { useBoard, shoot, site, sync, VIEWPORTS, openBoard, column, card, dialogOf, startBoard, addTask, device, offlineReady, statusOf, syncStatusOf, recordMessages, expectOnScreen } from './support/board';

useBoard();

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
      await shoot(a.page, `deploy-${vp.name}.png`);

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
      await shoot(a.page, `storage-full-${vp.name}.png`);
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
      expect(code).toMatch(/^ibexdb-wrapped-identity-v1:[\w-]{128}$/);
      await d.getByText('Import a key from another device').click();
      const importMsg = d.locator('details').nth(1).getByRole('alert');
      const tryCode = async (text: string) => {
        await d.getByLabel('Key code to import').fill(text);
        await d.getByLabel('Passphrase of the key').fill('correct horse battery staple');
        await d.getByRole('button', { name: 'Import key' }).click();
        return importMsg;
      };
      for (const cut of [code.slice(0, -20), code.slice(0, 60), code.slice(0, 12)]) {
        await expect(await tryCode(cut)).toHaveText(`The key code is cut short: it has ${cut.length} of its 155 characters. Copy the whole code (or use the key file) and try again.`);
      }
      await expect(await tryCode(`${code}.extra`)).toHaveText(/^The key code is damaged/);
      await expect(await tryCode(`${code}AAAA`)).toHaveText(/^The key code is damaged: it has 159 characters, not 155\./);
      await expect(await tryCode('hello')).toHaveText('This is not a key code from this app (a key code starts with "ibexdb-wrapped-identity-v1:").');
      // A code exported by the app before the library wrapped identities (ibexkey1.) still
      // imports; its wrong passphrase and its cut-short text are told as before.
      const legacy = await legacyCode(await a.page.evaluate(() => (window as any).taskboard.db.exportIdentity()), 'correct horse battery staple');
      expect(legacy).toHaveLength(224);
      await expect(await tryCode(legacy.slice(0, -20))).toHaveText('The key code is cut short: it has 204 of its 224 characters. Copy the whole code (or use the key file) and try again.');
      await d.getByLabel('Key code to import').fill(legacy);
      await d.getByLabel('Passphrase of the key').fill('wrong horse battery staple');
      await d.getByRole('button', { name: 'Import key' }).click();
      await expect(importMsg).toHaveText(/^Wrong passphrase: the key could not be unlocked\./, { timeout: 15_000 });
      await expect(await tryCode(legacy)).toHaveText(/^This device now signs as /, { timeout: 15_000 });
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
      await shoot(a.page, `layout-${vp.name}.png`);

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

/**
 * A key code as the task board exported it before 2026-11-28 (`ibexkey1.<salt>.<iv>.<ct>`: the
 * identity's text under PBKDF2-SHA-256 600,000 + AES-256-GCM, the format tag as additional data).
 */
async function legacyCode(identity: string, passphrase: string): Promise<string> {
  const { subtle } = globalThis.crypto;
  const enc = new TextEncoder();
  const salt = globalThis.crypto.getRandomValues(new Uint8Array(16));
  const iv = globalThis.crypto.getRandomValues(new Uint8Array(12));
  const base = await subtle.importKey('raw', enc.encode(passphrase.normalize('NFC')), 'PBKDF2', false, ['deriveKey']);
  const key = await subtle.deriveKey({ name: 'PBKDF2', hash: 'SHA-256', salt, iterations: 600_000 }, base, { name: 'AES-GCM', length: 256 }, false, ['encrypt']);
  const ct = new Uint8Array(await subtle.encrypt({ name: 'AES-GCM', iv, additionalData: enc.encode('ibexkey1') }, key, enc.encode(identity)));
  const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64url');
  return ['ibexkey1', b64(salt), b64(iv), b64(ct)].join('.');
}
