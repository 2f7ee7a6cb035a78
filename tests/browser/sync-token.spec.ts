// The application's own login at the server door from the browser (issue 27 §4; docs/design.md
// §12.4): `open(name, { sync, syncToken })` against the real ibexdb-server started with
// `--auth-jwks` (a JWKS of a P-256 key made here for this run; tokens signed by it with
// node:crypto, ES256). The token travels as the `ibexdb.bearer.TOKEN` subprotocol; the page's
// function is asked before every dial. A good token syncs; an expired one, a function that
// throws or returns no string, and a token for another repository are each a typed AuthError in
// the sync status and from `db.sync()`; a token refreshed by the function on the next dial
// works; a session whose token expires is ended by the server and dialed again with a fresh one;
// with two tabs the owner tab's page is asked, and the tab that takes over asks its own.
// The server binary is target/release/ibexdb-server (`make test` builds it first) or
// $IBEXDB_SERVER.
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Page } from '@playwright/test';
import { test, expect, gotoPlayground, uniqueName, watch } from './ibexdb.fixtures';
import { startSyncServer } from './support/shipping';

const AUD = 'notes-app';

/** The test's identity provider: one P-256 key, published as kid `k1`. */
class Provider {
  key: { privateKey: KeyObject; publicKey: KeyObject } = generateKeyPairSync('ec', { namedCurve: 'P-256' });

  jwks() {
    const jwk = this.key.publicKey.export({ format: 'jwk' });
    return { keys: [{ ...jwk, kid: 'k1', alg: 'ES256' }] };
  }

  /** An ES256 JWT for `repos`, expiring `ttl` seconds from now (negative: already expired). */
  token(repos: string[], ttl: number, create = true) {
    const now = Math.floor(Date.now() / 1000);
    const b64 = (v: object) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const input = `${b64({ alg: 'ES256', typ: 'JWT', kid: 'k1' })}.${b64({ sub: 'u1', aud: AUD, iat: now, exp: now + ttl, ibexdb_repos: repos, ibexdb_create: create })}`;
    const sig = sign('sha256', Buffer.from(input), { key: this.key.privateKey, dsaEncoding: 'ieee-p1363' });
    return `${input}.${sig.toString('base64url')}`;
  }
}

interface Server {
  url: string;
  stop(): Promise<void>;
}

/** The real server (support/shipping.ts) requiring tokens of `idp` for the audience AUD. */
async function startServer(idp: Provider, more: string[] = []): Promise<Server> {
  const keys = mkdtempSync(path.join(tmpdir(), 'ibexdb-token-'));
  const jwks = path.join(keys, 'jwks.json');
  writeFileSync(jwks, JSON.stringify(idp.jwks()));
  const server = await startSyncServer({ args: ['--auth-jwks', jwks, '--auth-audience', AUD, ...more] });
  return {
    url: server.url,
    stop: async () => {
      await server.stop();
      rmSync(keys, { recursive: true, force: true });
    },
  };
}

function stopServer(server: Server) {
  return server.stop();
}

/**
 * Open `name` as `window.dbs[name]` syncing with `url`; its syncToken function hands out
 * `window.tokens[name]` one by one (the last one again when they run out) and counts its calls
 * in `window.asked[name]`; a token `'throw'` throws, `'number'` returns 42.
 */
async function openWithTokens(page: Page, name: string, url: string, tokens: string[]) {
  await page.evaluate(
    async ([name, url, tokens]) => {
      const w = window as any;
      w.dbs ??= {};
      w.tokens ??= {};
      w.asked ??= {};
      w.events ??= {};
      w.tokens[name] = tokens;
      w.asked[name] = 0;
      w.events[name] = [];
      const syncToken = async () => {
        w.asked[name]++;
        const list = w.tokens[name];
        const t = list.length > 1 ? list.shift() : list[0];
        if (t === 'throw') throw new Error('the login expired');
        if (t === 'number') return 42;
        return t;
      };
      const db = await w.ibexdb.open(name, { sync: url, syncToken });
      w.dbs[name] = db;
      db.onSyncStatus((s: any) => w.events[name].push({ state: s.state, kind: s.lastError?.kind ?? null, connects: s.connects }));
    },
    [name, url, tokens] as const,
  );
}

/** Write one item and wait for `db.sync()`: 'synced', or the error's `name:kind`. */
const writeAndSync = (page: Page, name: string) =>
  page.evaluate(async (name) => {
    const db = (window as any).dbs[name];
    await db.put(`items/${Date.now()}`, { n: 1 });
    try {
      await db.sync();
      return 'synced';
    } catch (e: any) {
      return `${e?.constructor?.name}:${e?.name}:${e?.kind}`;
    }
  }, name);

const syncAgain = (page: Page, name: string) =>
  page.evaluate(async (name) => {
    try {
      await (window as any).dbs[name].sync();
      return 'synced';
    } catch (e: any) {
      return `${e?.constructor?.name}:${e?.name}:${e?.kind}`;
    }
  }, name);

/** What the syncToken function of `name` hands out from now on. */
const setTokens = (page: Page, name: string, tokens: string[]) => page.evaluate(([name, tokens]) => ((window as any).tokens[name] = tokens), [name, tokens] as const);

/** Wait for `name`'s sync status to report the error state with `kind`. */
const errorKind = (page: Page, name: string, kind: string) =>
  expect.poll(() => page.evaluate((n) => (window as any).dbs[n].syncStatus().then((s: any) => `${s.state}:${s.lastError?.name}:${s.lastError?.kind}`), name), { timeout: 15_000 }).toBe(`error:AuthError:${kind}`);

const asked = (page: Page, name: string) => page.evaluate((name) => (window as any).asked[name] as number, name);

test('syncToken: a good token syncs, bad ones are typed AuthErrors, a refreshed one works', async ({ page, watched }) => {
  void watched;
  const idp = new Provider();
  const server = await startServer(idp);
  try {
    await gotoPlayground(page);
    const good = idp.token(['tok-*'], 3600);

    // A good token (from an async function): synced.
    const a = uniqueName('tok-a');
    await openWithTokens(page, a, server.url, [good]);
    expect(await writeAndSync(page, a)).toBe('synced');
    expect(await asked(page, a)).toBeGreaterThanOrEqual(1);

    // An expired token: the server's AuthError token-expired in the status and from
    // db.sync() (which dials again at once, asking the function again); then the function
    // returns a fresh one and the next dial is welcomed.
    const b = uniqueName('tok-b');
    await openWithTokens(page, b, server.url, [idp.token(['tok-*'], -3600)]);
    await errorKind(page, b, 'token-expired');
    expect(await writeAndSync(page, b)).toBe('AuthError:AuthError:token-expired');
    await setTokens(page, b, [good]);
    const before = await asked(page, b);
    expect(await syncAgain(page, b)).toBe('synced');
    expect(await asked(page, b)).toBe(before + 1);

    // A function that throws, and one that returns no string: token-unavailable, no dial.
    const c = uniqueName('tok-c');
    await openWithTokens(page, c, server.url, ['throw']);
    await errorKind(page, c, 'token-unavailable');
    expect(await writeAndSync(page, c)).toBe('AuthError:AuthError:token-unavailable');
    const d = uniqueName('tok-d');
    await openWithTokens(page, d, server.url, ['number']);
    await errorKind(page, d, 'token-unavailable');
    expect(await writeAndSync(page, d)).toBe('AuthError:AuthError:token-unavailable');
    await setTokens(page, d, [good]);
    expect(await syncAgain(page, d)).toBe('synced');

    // A token for other repositories: token-scope.
    const e = uniqueName('tok-e');
    await openWithTokens(page, e, server.url, [idp.token(['other-*'], 3600)]);
    await errorKind(page, e, 'token-scope');
    expect(await writeAndSync(page, e)).toBe('AuthError:AuthError:token-scope');

    // A plain string token works too; a wrong type is refused by open().
    const f = uniqueName('tok-f');
    const got = await page.evaluate(
      async ([f, url, good]) => {
        const w = window as any;
        const db = await w.ibexdb.open(f, { sync: url, syncToken: good });
        await db.put('items/1', { n: 1 });
        await db.sync();
        const bad = await w.ibexdb.open(`${f}-x`, { sync: url, syncToken: 5 }).then(
          () => 'opened',
          (e: any) => `${e.name}:${e.path}`,
        );
        return bad;
      },
      [f, server.url, good] as const,
    );
    expect(got).toBe('InvalidValueError:options.syncToken');
  } finally {
    await page.evaluate(async () => {
      for (const db of Object.values((window as any).dbs ?? {})) await (db as any).close();
    }).catch(() => {});
    await stopServer(server);
  }
});

test('syncToken: a session whose token expires is ended and dialed again with a fresh token', async ({ page, watched }) => {
  void watched;
  const idp = new Provider();
  // No leeway: the server ends a session at its token's exp.
  const server = await startServer(idp, ['--auth-leeway-s', '0']);
  try {
    await gotoPlayground(page);
    const name = uniqueName('tok-exp');
    const short = idp.token(['tok-*'], 4);
    await openWithTokens(page, name, server.url, [short]);
    expect(await writeAndSync(page, name)).toBe('synced');
    // From now on the function hands out a token good for an hour.
    const n0 = await asked(page, name);
    await setTokens(page, name, [idp.token(['tok-*'], 3600)]);
    // The server ends the session at exp (3-4 s from the token's making): the worker asks the
    // page again and is welcomed with the fresh token.
    await expect.poll(() => asked(page, name), { timeout: 15_000 }).toBe(n0 + 1);
    await expect.poll(() => page.evaluate((n) => (window as any).dbs[n].syncStatus().then((s: any) => s.state), name), { timeout: 15_000 }).toBe('synced');
    const kinds = await page.evaluate((n) => (window as any).events[n].map((e: any) => e.kind), name);
    expect(kinds).toContain('token-expired');
    expect(await writeAndSync(page, name)).toBe('synced');
  } finally {
    await page.evaluate(async () => {
      for (const db of Object.values((window as any).dbs ?? {})) await (db as any).close();
    }).catch(() => {});
    await stopServer(server);
  }
});

test('syncToken with two tabs: the owner tab is asked; the tab that takes over asks its own page', async ({ context, page, watched }) => {
  void watched;
  const idp = new Provider();
  const server = await startServer(idp);
  const pageB = await context.newPage();
  const wB = watch(pageB, 'tab B');
  try {
    await gotoPlayground(page);
    await gotoPlayground(pageB);
    const name = uniqueName('tok-tabs');
    const good = idp.token(['tok-*'], 3600);
    await openWithTokens(page, name, server.url, [good]);
    await openWithTokens(pageB, name, server.url, [good]);
    expect(await page.evaluate((n) => (window as any).dbs[n].role, name)).toBe('owner');
    expect(await pageB.evaluate((n) => (window as any).dbs[n].role, name)).toBe('client');
    // B's write and sync() go through A's worker, which asks A's page.
    expect(await writeAndSync(pageB, name)).toBe('synced');
    expect(await asked(page, name)).toBeGreaterThanOrEqual(1);
    expect(await asked(pageB, name)).toBe(0);
    await page.close();
    // B takes over the files and resumes sync, asking its own page.
    await expect.poll(() => pageB.evaluate((n) => (window as any).dbs[n].role, name), { timeout: 15_000 }).toBe('owner');
    expect(await writeAndSync(pageB, name)).toBe('synced');
    expect(await asked(pageB, name)).toBeGreaterThanOrEqual(1);
    expect(wB.problems, wB.log.join('\n')).toEqual([]);
  } finally {
    await pageB.evaluate(async () => {
      for (const db of Object.values((window as any).dbs ?? {})) await (db as any).close();
    }).catch(() => {});
    await stopServer(server);
  }
});
