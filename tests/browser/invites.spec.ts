// Invite links (docs/design.md §6.4 "Invites") through the real ibexdb-server binary: an owner
// makes links and goes offline; new devices (separate browser contexts: separate OPFS, separate
// keys) open the repository with a link and read or write per the invite's role. Reuse, expiry
// and revocation are each a typed PermissionError. The server binary is
// target/release/ibexdb-server or $IBEXDB_SERVER.
import type { Browser } from '@playwright/test';
import { test, expect, gotoPlayground, uniqueName } from './ibexdb.fixtures';
import { startSyncServer } from './support/shipping';

/**
 * A new device (its own context) opens `name` with `link`, waits until synced or refused, then
 * reads `items/a` and tries to write `items/<tag>`.
 */
async function join(browser: Browser, name: string, url: string, link: string, tag: string, upgrade: string | null = null) {
  const ctx = await browser.newContext();
  try {
    const page = await ctx.newPage();
    await gotoPlayground(page);
    return await page.evaluate(
      async ([name, url, link, tag, upgrade]) => {
        const db = await (window as any).ibexdb.open(name, { sync: url, invite: link });
        const deadline = Date.now() + 20_000;
        let st = await db.syncStatus();
        // Told cannot-read first (kept waiting), then welcomed once the redemption is stored,
        // or refused with the redemption's own kind.
        while (Date.now() < deadline && st.state !== 'synced' && !(st.state === 'error' && st.lastError?.kind !== 'cannot-read')) {
          await new Promise((r) => setTimeout(r, 100));
          st = await db.syncStatus();
        }
        const out: any = { state: st.state, kind: st.lastError?.kind ?? null, error: st.lastError?.name ?? null };
        if (st.state === 'synced') {
          out.read = (await db.get('items/a')) ?? null;
          out.role = db.role ?? null;
          try {
            await db.put(`items/${tag}`, { by: tag });
            await db.sync();
            out.wrote = true;
          } catch (e: any) {
            out.wrote = `${e.name}:${e.kind}`;
          }
          if (upgrade) {
            // A device that already reads redeems a writer link with db.redeem: then writes.
            out.first = await db.redeem(upgrade);
            await db.put(`items/${tag}2`, { by: tag });
            await db.sync();
            out.upgraded = (await db.members()).members.find((m: any) => m.publicKey === db.publicKey)?.role;
            // Again: it is a writer already, so nothing is written and the link is not used.
            out.again = await db.redeem(upgrade).then((w: boolean) => w, (e: any) => `${e.name}:${e.kind}`);
          }
        }
        await db.close();
        return out;
      },
      [name, url, link, tag, upgrade],
    );
  } finally {
    await ctx.close();
  }
}

test('invite links: a new device joins with the role of its link, the owner offline; reuse, expiry and revocation are typed errors', async ({ browser, page }) => {
  test.setTimeout(120_000);
  const server = await startSyncServer();
  try {
    const name = uniqueName('invite');
    await gotoPlayground(page);
    const links = await page.evaluate(
      async ([name, url]) => {
        const db = await (window as any).ibexdb.open(name, { sync: url });
        await db.put('items/a', { v: 1 });
        const bad: string[] = [];
        for (const o of [{ role: 'admin' }, { role: 'reader', uses: 0 }, { role: 'reader', expires: 'soon' }, null]) {
          try {
            await db.invite(o);
          } catch (e: any) {
            bad.push(e.name);
          }
        }
        const writer = await db.invite({ role: 'writer', base: 'https://app.example/board' });
        const reader = await db.invite({ role: 'reader', uses: 1 });
        const expired = await db.invite({ role: 'reader', expires: Date.now() - 1000 });
        const revoked = await db.invite({ role: 'reader' });
        const upgrade = await db.invite({ role: 'writer' });
        await db.revokeInvite(revoked.id);
        const list = await db.invites();
        await db.sync();
        await db.close();
        return { writer, reader, expired, revoked, upgrade, list, bad };
      },
      [name, server.url],
    );
    expect(links.bad).toEqual(['InvalidValueError', 'InvalidValueError', 'InvalidValueError', 'InvalidValueError']);
    expect(links.writer.link).toMatch(/^https:\/\/app\.example\/board#ibexdb-invite=/);
    expect(links.writer.link.startsWith(`https://app.example/board#ibexdb-invite=${name}.`)).toBe(true);
    expect(links.list.map((i: any) => [i.id, i.revoked]).sort()).toEqual(
      [links.writer.id, links.reader.id, links.expired.id, links.revoked.id, links.upgrade.id].map((id) => [id, id === links.revoked.id]).sort(),
    );
    // The owner is offline now.
    const w = await join(browser, name, server.url, links.writer.link, 'w');
    expect(w).toMatchObject({ state: 'synced', read: { v: 1 }, wrote: true });
    const r = await join(browser, name, server.url, links.reader.link, 'r', links.upgrade.link);
    expect(r).toMatchObject({ state: 'synced', read: { v: 1 }, wrote: 'PermissionError:cannot-write', upgraded: 'writer', first: true, again: false });
    const again = await join(browser, name, server.url, links.writer.link, 'x');
    expect(again).toEqual({ state: 'error', kind: 'invite-used', error: 'PermissionError' });
    const late = await join(browser, name, server.url, links.expired.link, 'x');
    expect(late).toEqual({ state: 'error', kind: 'invite-expired', error: 'PermissionError' });
    const gone = await join(browser, name, server.url, links.revoked.link, 'x');
    expect(gone).toEqual({ state: 'error', kind: 'invite-revoked', error: 'PermissionError' });
    // A link for another repository is refused before anything opens.
    const other = await page.evaluate(async (link) => {
      try {
        await (window as any).ibexdb.open('elsewhere', { sync: 'ws://127.0.0.1:1', invite: link });
        return null;
      } catch (e: any) {
        return e.name;
      }
    }, links.writer.link);
    expect(other).toBe('InvalidValueError');
    // The owner, back, sees the writer's write.
    const seen = await page.evaluate(
      async ([name, url]) => {
        const db = await (window as any).ibexdb.open(name, { sync: url });
        await db.sync();
        const got = (await db.get('items/w')) ?? null;
        const members = (await db.members()).members.map((m: any) => m.role).sort();
        await db.close();
        return { got, members };
      },
      [name, server.url],
    );
    expect(seen).toEqual({ got: { by: 'w' }, members: ['owner', 'writer', 'writer'] });
  } finally {
    await server.stop();
  }
});

test('open with an invite on a device that already reads: the link is kept when it gives no more, redeemed when it gives more, refused with nothing written when an owner set the role', async ({ browser, page }) => {
  test.setTimeout(120_000);
  const server = await startSyncServer();
  try {
    const name = uniqueName('invite-again');
    await gotoPlayground(page);
    const links = await page.evaluate(
      async ([name, url]) => {
        const db = await (window as any).ibexdb.open(name, { sync: url });
        (window as any).owner = db;
        await db.put('items/a', { v: 1 });
        const out: Record<string, { link: string; id: string }> = {};
        for (const [k, role] of [['r1', 'reader'], ['r2', 'reader'], ['w1', 'writer'], ['w2', 'writer']]) out[k] = await db.invite({ role });
        await db.sync();
        return out;
      },
      [name, server.url],
    );
    /** Open `name` on the device of `page` (with `link` if given): what the link did, and the role after. */
    const openOn = (p: typeof page, link: string | null) =>
      p.evaluate(
        async ([name, url, link]) => {
          const db = await (window as any).ibexdb.open(name, link ? { sync: url, invite: link } : { sync: url });
          const did = link ? await db.invited : null;
          const role = (await db.members()).members.find((m: any) => m.publicKey === db.publicKey)?.role ?? null;
          const key = db.publicKey;
          await db.close();
          return { did: did instanceof Error ? `${did.name}:${(did as any).kind}` : did, role, key };
        },
        [name, server.url, link] as const,
      );
    const ctx = await browser.newContext();
    const ctx2 = await browser.newContext();
    try {
      const b = await ctx.newPage();
      await gotoPlayground(b);
      expect(await openOn(b, links.r1.link)).toMatchObject({ did: 'redeemed', role: 'reader' });
      // A reader opening another reader link: nothing written, the link keeps its use.
      expect(await openOn(b, links.r2.link)).toMatchObject({ did: 'kept', role: 'reader' });
      // A writer link gives more: redeemed, now a writer.
      expect(await openOn(b, links.w1.link)).toMatchObject({ did: 'redeemed', role: 'writer' });
      // A device the owner granted reader: a writer link would not change its role (the owner's
      // entry rules), so it is refused before anything is written; the open itself succeeds.
      const c = await ctx2.newPage();
      await gotoPlayground(c);
      const { key } = await c.evaluate(async (name) => {
        const db = await (window as any).ibexdb.open(name);
        const key = db.publicKey;
        await db.close();
        return { key };
      }, name);
      await page.evaluate(async (key) => {
        const db = (window as any).owner;
        await db.grant(key, 'reader');
        await db.sync();
      }, key);
      expect(await openOn(c, links.w2.link)).toMatchObject({ did: 'PermissionError:invite-invalid', role: 'reader' });
      const used = await page.evaluate(async () => {
        const db = (window as any).owner;
        await new Promise((r) => setTimeout(r, 500));
        await db.sync();
        return Object.fromEntries((await db.invites()).map((i: any) => [i.id, i.used]));
      });
      expect([used[links.r1.id], used[links.r2.id], used[links.w1.id], used[links.w2.id]]).toEqual([1, 0, 1, 0]);
    } finally {
      await ctx.close();
      await ctx2.close();
    }
  } finally {
    await server.stop();
  }
});
