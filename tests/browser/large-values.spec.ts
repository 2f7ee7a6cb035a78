// Large values off the heap (docs/design.md §6.6, issue 26 §4): top-level strings and bytes of
// 16 KiB or more stay in the OPFS log and are read back on demand. Written, read through get,
// getMany, a query, a filter on the large field, and read again after a close (which writes a
// snapshot) and a reopen from OPFS; the values are compared inside the page.
import { test, expect, gotoPlayground, uniqueName } from './ibexdb.fixtures';
import { installRunWorker } from './support/workers';

test('large strings and bytes round-trip through reads, queries and reopens from OPFS', async ({ page, watched }) => {
  void watched;
  const name = uniqueName('large');
  await gotoPlayground(page);
  const out = await page.evaluate(async (name) => {
    const { open } = (window as any).ibexdb;
    // Letters, and now and then what JSON escapes or UTF-8 spends several bytes on (long
    // strings cross from the worker as UTF-8 beside the JSON, src/value/json.rs).
    const special = ['"', '\\', '\n', 'é', '€', '😀', '\u0000', '\u2028', '\t'];
    const text = (i: number, n: number) => {
      let s = `${i}|`;
      while (s.length < n) {
        const k = s.length * 7 + i;
        s += k % 11 === 0 ? special[k % special.length] : String.fromCharCode(97 + (k % 26));
      }
      return s;
    };
    const bytes = (n: number) => {
      const b = new Uint8Array(n);
      for (let i = 0; i < n; i++) b[i] = (Math.imul(i, 2654435761) >>> 24) & 0xff;
      return b;
    };
    const same = (a: unknown, b: Uint8Array) => a instanceof Uint8Array && a.length === b.length && a.every((x, i) => x === b[i]);
    const r: Record<string, unknown> = {};
    let db = await open(name);
    for (let i = 0; i < 40; i++) await db.put(`docs/${String(i).padStart(2, '0')}`, { n: i, body: text(i, 20_000 + i * 1000), blob: bytes(17_000 + i), more: i < 3 ? { list: [text(100 + i, 17_000)] } : null });
    const check = async (what: string) => {
      let ok = 0;
      for (let i = 0; i < 40; i++) {
        const v = await db.get(`docs/${String(i).padStart(2, '0')}`);
        if (v.body === text(i, 20_000 + i * 1000) && same(v.blob, bytes(17_000 + i)) && v.n === i) ok++;
      }
      r[`${what}:get`] = ok;
      const rows = await db.query({ collection: 'docs' });
      r[`${what}:query`] = rows.filter((x: any, i: number) => x.value.body === text(i, 20_000 + i * 1000)).length;
      const many = await db.getMany(['docs/03', 'docs/39']);
      r[`${what}:many`] = many[0].body === text(3, 23_000) && same(many[1].blob, bytes(17_039));
      const hit = await db.query({ collection: 'docs', where: { body: text(7, 27_000) } });
      r[`${what}:filter`] = hit.map((x: any) => x.id).join(',');
      // Nested long strings, a live query's rows and changes, and history carry them whole.
      const nested = await db.get('docs/02');
      r[`${what}:nested`] = nested.more.list[0] === text(102, 17_000);
      let seen: any[] = [];
      const live = await db.live({ collection: 'docs', where: { n: { lt: 2 } } }, (rows: any[]) => { seen = rows; });
      const first = live.results.map((x: any) => x.value.body === text(x.value.n, 20_000 + x.value.n * 1000)).join(',');
      await db.update('docs/01', { body: text(501, 30_000) });
      for (let t = 0; t < 100 && !seen.some((x: any) => x.value.body === text(501, 30_000)); t++) await new Promise((f) => setTimeout(f, 20));
      r[`${what}:live`] = `${first};${seen.some((x: any) => x.id === '01' && x.value.body === text(501, 30_000))}`;
      live.close();
      await db.update('docs/01', { body: text(1, 21_000) });
      const h = await db.history('docs/01');
      r[`${what}:history`] = h.some((e: any) => e.op.type === 'patch' && e.op.fields.body?.assign === text(501, 30_000));
    };
    await check('written');
    await db.close();
    db = await open(name);
    await check('reopened');
    await db.close();
    return r;
  }, name);
  for (const what of ['written', 'reopened']) {
    expect(out[`${what}:get`], what).toBe(40);
    expect(out[`${what}:query`], what).toBe(40);
    expect(out[`${what}:many`], what).toBe(true);
    expect(out[`${what}:filter`], what).toBe('07');
    expect(out[`${what}:nested`], what).toBe(true);
    expect(out[`${what}:live`], what).toBe('true,true;true');
    expect(out[`${what}:history`], what).toBe(true);
  }
});

test('wasm memory: a repository of 300 MB of 200 KB texts opens and reads one in under 64 MiB (engine.js in a worker)', async ({ page, watched }) => {
  test.setTimeout(180_000);
  void watched;
  const name = uniqueName('large-memory');
  await gotoPlayground(page);
  await installRunWorker(page);
  const write = await page.evaluate(async (name) => {
    const body = `
      const eng = await E.openEngine(${JSON.stringify(name)}, { trusted: true });
      const mem = () => eng._memory.buffer.byteLength;
      const text = 'x'.repeat(200_000);
      for (let i = 0; i < 1500; i++) {
        eng.put('docs/' + String(i).padStart(5, '0'), { n: i, body: i + text.slice(String(i).length) });
        if (i % 20 === 19) eng.flush();
      }
      eng.flush();
      const after = mem();
      await eng.close();
      postMessage({ done: { after } });
    `;
    return (window as any).__runWorker(body, () => null).done;
  }, name);
  const read = await page.evaluate(async (name) => {
    const body = `
      const eng = await E.openEngine(${JSON.stringify(name)}, { trusted: true });
      const mem = () => eng._memory.buffer.byteLength;
      const v = eng.get('docs/00750');
      const ok = v.body.length === 200_000 && v.body.startsWith('750x') && v.n === 750;
      const after = mem();
      await eng.close();
      postMessage({ done: { after, ok } });
    `;
    return (window as any).__runWorker(body, () => null).done;
  }, name);
  console.log(`300 MB of 200 KB texts: wasm memory ${(write.after / 2 ** 20).toFixed(1)} MiB after writing, ${(read.after / 2 ** 20).toFixed(1)} MiB after a reopen and one read`);
  expect(read.ok).toBe(true);
  expect(read.after).toBeLessThanOrEqual(64 * 2 ** 20);
  expect(write.after).toBeLessThanOrEqual(128 * 2 ** 20);
});
