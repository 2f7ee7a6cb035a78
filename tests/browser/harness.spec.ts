// The test harness itself, in every browser project: what the specs rely on of `page` behaves
// the same in Chromium and Firefox (Playwright's own Page) and in WebKitGTK (the WebDriver page of
// support/webkit.ts): values carried back and forth by evaluate(), a page's error rejecting it,
// a string evaluated as a script, waitForFunction's value, and the `watched` check seeing console
// errors and uncaught errors of the page (so a spec's "no page errors" means something there too).
import { test, expect, gotoPlayground, watch } from './ibexdb.fixtures';

test('evaluate carries values as Playwright does; page errors reject it; console and uncaught errors reach watch()', async ({ page }) => {
  await gotoPlayground(page);
  const w = watch(page, 'harness');
  const back = await page.evaluate(
    (arg) => ({
      arg,
      undef: undefined,
      nan: NaN,
      negZero: -0,
      inf: -Infinity,
      big: 2n ** 70n,
      date: new Date(Date.UTC(2024, 1, 29, 12)),
      re: /a+b/gi,
      nested: { list: [1, 'two', null, { deep: true }], empty: {} },
      unicode: 'ñ 日本 😀',
    }),
    { n: 1, s: 'x', l: [1, 2], u: undefined, nan: NaN, big: 5n },
  );
  expect(back.arg).toEqual({ n: 1, s: 'x', l: [1, 2], u: undefined, nan: NaN, big: 5n });
  expect('undef' in back && back.undef === undefined).toBe(true);
  expect(back.nan).toBeNaN();
  expect(Object.is(back.negZero, -0)).toBe(true);
  expect(back.inf).toBe(-Infinity);
  expect(back.big).toBe(2n ** 70n);
  expect(back.date).toEqual(new Date(Date.UTC(2024, 1, 29, 12)));
  expect(String(back.re)).toBe('/a+b/gi');
  expect(back.nested).toEqual({ list: [1, 'two', null, { deep: true }], empty: {} });
  expect(back.unicode).toBe('ñ 日本 😀');

  // A rejection in the page rejects evaluate() with its name and message.
  await expect(page.evaluate(() => (window as any).ibexdb.open(''))).rejects.toThrow(/InvalidKeyError/);
  // A string is run as a script; its completion value comes back.
  expect(await page.evaluate('window.harnessSeen = 41; window.harnessSeen + 1')).toBe(42);
  // waitForFunction hands back the truthy value it waited for.
  await page.evaluate(() => setTimeout(() => ((window as any).later = { ok: 7 }), 300));
  const handle = await page.waitForFunction(() => (window as any).later, null, { timeout: 10_000 });
  expect(await handle.jsonValue()).toEqual({ ok: 7 });

  // The page's console errors and uncaught errors reach the listeners (the fixtures' `watched`).
  expect(w.problems).toEqual([]);
  await page.evaluate(() => {
    console.error('harness: a console error');
    // Thrown by the page's own code (a script element), as an app's error would be.
    const script = document.createElement('script');
    script.textContent = "setTimeout(() => { throw new Error('harness: an uncaught error'); }, 0);";
    document.head.append(script);
  });
  await page.waitForTimeout(200);
  await expect.poll(async () => (await page.evaluate(() => 1), w.problems.join('\n'))).toMatch(/harness: a console error[\s\S]*harness: an uncaught error|harness: an uncaught error[\s\S]*harness: a console error/);
});
