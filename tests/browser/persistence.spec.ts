// Data survives a page reload and a browser restart on the same profile.
import { chromium } from '@playwright/test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CHROMIUM_ARGS } from '../../playwright.config';
import { test, expect, gotoPlayground, uniqueName, watch } from './ibexdb.fixtures';

test('write, reload the page, read back', async ({ page, watched }) => {
  void watched;
  const name = uniqueName('reload');
  await gotoPlayground(page);
  await page.evaluate(async (name) => {
    const db = await (window as any).ibexdb.open(name);
    await db.transaction((tx: any) => {
      for (let i = 0; i < 100; i++) tx.put(`items/${i}`, { i, tags: new Set([`t${i}`]) });
    });
    await db.put('items/last', { done: true }); // durability 'flush': on disk when this resolves
  }, name);
  await page.reload();
  await page.waitForSelector('body[data-ready="1"]');
  const out = await page.evaluate(async (name) => {
    const db = await (window as any).ibexdb.open(name);
    const r = { count: await db.count('items'), last: await db.get('items/last'), tag: [...(await db.get('items/42')).tags] };
    await db.close();
    return r;
  }, name);
  expect(out).toEqual({ count: 101, last: { done: true }, tag: ['t42'] });
});

test('close the browser, relaunch on the same profile, read back', async ({ baseURL }) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'ibexdb-profile-'));
  const name = uniqueName('restart');
  const launch = () =>
    chromium.launchPersistentContext(dir, { executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS, headless: true, baseURL });
  try {
    let ctx = await launch();
    let page = ctx.pages()[0] ?? (await ctx.newPage());
    let w = watch(page);
    await gotoPlayground(page);
    const identity = await page.evaluate(async (name) => {
      const db = await (window as any).ibexdb.open(name);
      for (let i = 0; i < 20; i++) await db.put(`items/${i}`, { i });
      await db.close();
      return db.identity;
    }, name);
    expect(w.problems, w.log.join('\n')).toEqual([]);
    await ctx.close();

    ctx = await launch();
    page = ctx.pages()[0] ?? (await ctx.newPage());
    w = watch(page);
    await gotoPlayground(page);
    const out = await page.evaluate(async (name) => {
      const db = await (window as any).ibexdb.open(name);
      const r = { count: await db.count('items'), nineteen: await db.get('items/19'), identity: db.identity, verify: await db.verify() };
      await db.close();
      return r;
    }, name);
    expect(w.problems, w.log.join('\n')).toEqual([]);
    await ctx.close();
    expect(out.count).toBe(20);
    expect(out.nineteen).toEqual({ i: 19 });
    expect(out.identity).toBe(identity); // the key pair is kept in OPFS
    expect(out.verify.commits).toBe(20);
    expect(out.verify.unsealed).toBe(0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
