// The task board's search box on the text index (tests/browser/support/board.ts builds and serves
// the board): each task carries `search` (its title, notes and tags) under a `text` index, and a
// column's live query matches it (`{search: {match: words}}`), so a search finds a word of the
// notes with its accents folded, takes the last word as a prefix, and the columns follow edits
// live. A board made before `search` existed gets it from the schema upgrade's migration.
import { type Page } from '@playwright/test';
import { test, expect, uniqueName } from './ibexdb.fixtures';
import { useBoard, site, openBoard, column, card, startBoard, addTask, openTask, setField } from './support/board';

useBoard();

const search = (page: Page) => page.getByLabel('Search tasks');
const titles = (page: Page) => page.locator('.card .title');

/** The plan of the first column's query with `text` in the search box (the app's lib/board.js, imported from its versioned folder). */
async function explainColumn(page: Page, text: string) {
  return page.evaluate(async (text) => {
    const app = (document.querySelector('script[type=module]') as HTMLScriptElement).src;
    const board = await import(app.replace(/app\.js$/, 'lib/board.js'));
    const db = (window as any).taskboard.db;
    const [list] = await db.query({ collection: 'lists', limit: 1 });
    return db.explain(board.columnQuery(list.id, { search: text }));
  }, text);
}

/**
 * Edit the task titled `title` the way the app does (its lib/board.js `updateTask` or `addTag`),
 * while its card is hidden by the search (a card that is not shown cannot be clicked).
 */
async function edit(page: Page, title: string, fn: 'updateTask' | 'addTag', arg: unknown) {
  await page.evaluate(async ({ title, fn, arg }) => {
    const app = (document.querySelector('script[type=module]') as HTMLScriptElement).src;
    const board = await import(app.replace(/app\.js$/, 'lib/board.js'));
    const db = (window as any).taskboard.db;
    const [task] = await db.query({ collection: 'tasks', where: { title } });
    await board[fn](db, task.id, arg);
  }, { title, fn, arg });
}

test('search: a word of the notes with its accents folded, a prefix, tags; the columns follow edits live', async ({ page, watched }) => {
  void watched;
  await openBoard(page, uniqueName('search'), { local: true });
  await startBoard(page);
  await addTask(page, 'To do', 'Plan the offsite #travel');
  await addTask(page, 'To do', 'Buy milk');
  await addTask(page, 'Doing', 'Write the agenda');
  const d = await openTask(page, 'Plan the offsite');
  await setField(d, 'Notes', 'Réserver le café près de la gare.');
  await d.getByRole('button', { name: 'Close' }).click();

  // A word of the notes, typed without its accent; and with it.
  await search(page).fill('cafe');
  await expect(titles(page)).toHaveText(['Plan the offsite']);
  await search(page).fill('CAFÉ');
  await expect(titles(page)).toHaveText(['Plan the offsite']);
  // The last word as a prefix (a search box matches as the user types); every word must occur.
  await search(page).fill('gar');
  await expect(titles(page)).toHaveText(['Plan the offsite']);
  await search(page).fill('offsite pres');
  await expect(titles(page)).toHaveText(['Plan the offsite']);
  await search(page).fill('milk cafe');
  await expect(page.locator('.card')).toHaveCount(0);
  // A tag, with or without its #.
  await search(page).fill('#travel');
  await expect(titles(page)).toHaveText(['Plan the offsite']);
  // The column's query is served by the text index.
  expect(await explainColumn(page, 'gar')).toMatchObject({ access: 'index', index: 'search', op: 'match' });

  // Live: with "gar" in the box, tasks that come to match appear and those that stop leave.
  await search(page).fill('gar');
  await addTask(page, 'Doing', 'Clean the garden tools');
  await expect(titles(page)).toHaveText(['Plan the offsite', 'Clean the garden tools']);
  await edit(page, 'Buy milk', 'updateTask', { notes: 'At the garage on the way back' });
  await expect(titles(page)).toHaveText(['Plan the offsite', 'Buy milk', 'Clean the garden tools']);
  await expect(column(page, 'To do').locator('.count')).toHaveText('2');
  let t = await openTask(page, 'Plan the offsite');
  await setField(t, 'Notes', 'Réserver le café.');
  await t.getByRole('button', { name: 'Close' }).click();
  await expect(titles(page)).toHaveText(['Buy milk', 'Clean the garden tools']);
  // A tag added is searchable at once; one removed (in the dialog) is not.
  await search(page).fill('urgent');
  await expect(page.locator('.card')).toHaveCount(0);
  await edit(page, 'Write the agenda', 'addTag', 'urgent');
  await expect(titles(page)).toHaveText(['Write the agenda']);
  t = await openTask(page, 'Write the agenda');
  await t.getByLabel('Remove tag urgent').click();
  await t.getByRole('button', { name: 'Close' }).click();
  await expect(page.locator('.card')).toHaveCount(0);
  // A retitled task is found by its new title only.
  await search(page).fill('agenda');
  await expect(titles(page)).toHaveText(['Write the agenda']);
  t = await openTask(page, 'Write the agenda');
  await setField(t, 'Title', 'Write the programme');
  await t.getByRole('button', { name: 'Close' }).click();
  await expect(page.locator('.card')).toHaveCount(0);
  await search(page).fill('programme');
  await expect(titles(page)).toHaveText(['Write the programme']);
  await search(page).fill('');
  await expect(page.locator('.card')).toHaveCount(4);
});

test('search: a board made before the search field is upgraded, and its tasks are found', async ({ page, watched }) => {
  void watched;
  const board = uniqueName('before-search');
  // The board as the app before version 1 wrote it: no stored schemas, tasks without `search`.
  await openBoard(page, uniqueName('elsewhere'), { local: true });
  await page.evaluate(async (board) => {
    const app = (document.querySelector('script[type=module]') as HTMLScriptElement).src;
    const { open } = await import(app.replace(/app\.js$/, 'ibexdb/ibexdb.js'));
    const db = await open(board);
    const now = Date.now();
    await db.transaction((tx: any) => {
      tx.put('lists/l1', { name: 'To do', order: now });
      tx.put('tasks/t1', { id: 't1', title: 'Book the hotel', titleLc: 'book the hotel', notes: 'Près de la plage', notesLc: 'près de la plage', list: 'l1', done: false, due: null, hasDue: false, tags: new Set(['trip']), created: now, updated: now, createdBy: db.publicKey });
      tx.put('tasks/t2', { id: 't2', title: 'Buy sunscreen', titleLc: 'buy sunscreen', notes: '', notesLc: '', list: 'l1', done: false, due: null, hasDue: false, tags: new Set(), created: now + 1, updated: now + 1, createdBy: db.publicKey });
    });
    await db.close();
  }, board);

  await page.goto(`${site.url}/app/?board=${board}`);
  await expect(page.locator('body')).toHaveAttribute('data-state', 'ready', { timeout: 30_000 });
  await expect(column(page, 'To do').locator('.card')).toHaveCount(2);
  expect(await page.evaluate(() => (window as any).taskboard.db.schemaVersion)).toBe(1);
  await search(page).fill('plage');
  await expect(titles(page)).toHaveText(['Book the hotel']);
  await search(page).fill('trip');
  await expect(titles(page)).toHaveText(['Book the hotel']);
  await search(page).fill('sun');
  await expect(titles(page)).toHaveText(['Buy sunscreen']);
  await expect(card(page, 'Buy sunscreen')).toBeVisible();
});
