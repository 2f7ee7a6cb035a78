// Helpers of the shipping specs (package.spec.ts, environments.spec.ts): the npm package built
// and packed from www/lib/ + pkg/, installed from its tarball into a scratch project outside
// the repository, served by plain static servers (no COOP/COEP), over https, under a
// Content-Security-Policy, or from a second origin standing for a CDN.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from '@playwright/test';
// @ts-ignore: plain ES modules of the repo's scripts
import { buildPackage, packPackage } from '../../../scripts/build-pkg.mjs';
// @ts-ignore
import { startServer } from '../../../scripts/serve.mjs';

export const SCRATCH_SOURCE = fileURLToPath(new URL('../scratch', import.meta.url));

export interface Scratch {
  /** The scratch project: index.html, main.js, vite/, node_modules/ibexdb (from the tarball). */
  dir: string;
  tarball: string;
  tarballBytes: number;
  remove(): void;
}

/** Build and pack the package, and install the tarball into a fresh scratch project in a temp dir. */
export function scratchProject(): Promise<Scratch> {
  return (async () => {
    const tmp = mkdtempSync(path.join(tmpdir(), 'ibexdb-ship-'));
    const built = await buildPackage({ out: path.join(tmp, 'package') });
    const packed = packPackage(built.dir, tmp);
    const dir = path.join(tmp, 'project');
    cpSync(SCRATCH_SOURCE, dir, { recursive: true });
    writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'scratch-notes', private: true, type: 'module' }, null, 2));
    // No registry access: the package's one dependency (`ws`, for ibexdb/node) is pinned to the
    // repository's dev dependency, which `npm ci` put in npm's cache.
    execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--loglevel=error', packed.tarball], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
    return { dir, tarball: packed.tarball, tarballBytes: packed.size, remove: () => rmSync(tmp, { recursive: true, force: true }) };
  })();
}

export interface Served {
  url: string;
  port: number;
  /** The Node HTTP(S) server (its 'request' events: what browsers asked it for). */
  server: import('node:http').Server;
  close(): Promise<void>;
}

/** A plain static server (no COOP/COEP) of `root` at `mount`, with extra headers; https with `tls`. */
export async function serve(root: string, opts: { mount?: string; headers?: Record<string, string>; tls?: { key: string; cert: string }; host?: string } = {}): Promise<Served> {
  return startServer({ root, port: 0, isolation: false, mount: opts.mount ?? '/', headers: opts.headers ?? {}, tls: opts.tls ?? null, host: opts.host ?? '127.0.0.1' });
}

/** A self-signed certificate for `host` (openssl), as PEM strings. */
export function selfSignedCert(dir: string, host: string): { key: string; cert: string } {
  const key = path.join(dir, 'key.pem');
  const cert = path.join(dir, 'cert.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2', '-subj', `/CN=${host}`, '-addext', `subjectAltName=DNS:${host}`, '-keyout', key, '-out', cert], { stdio: 'ignore' });
  return { key: readFileSync(key, 'utf8'), cert: readFileSync(cert, 'utf8') };
}

/** Write `<name>.html` into the project: the notes page with `ibexdb` mapped to `moduleUrl`. Returns the import map's CSP hash source. */
export function notesPage(dir: string, name: string, moduleUrl: string): string {
  const importMap = JSON.stringify({ imports: { ibexdb: moduleUrl } });
  writeFileSync(
    path.join(dir, `${name}.html`),
    `<!doctype html>\n<meta charset="utf-8">\n<link rel="icon" href="data:,">\n<title>notes</title>\n<script type="importmap">${importMap}</script>\n<ul id="notes"></ul>\n<script type="module" src="./main.js"></script>\n`,
  );
  return `'sha256-${createHash('sha256').update(importMap).digest('base64')}'`;
}

/** Wait for the notes page: resolves to null when it opened its database, else `{error, kind}`. */
export async function pageOpened(page: Page): Promise<null | { error: string; kind: string }> {
  await page.waitForSelector('body[data-ready]', { state: 'attached', timeout: 30_000 });
  return page.evaluate(() => (document.body.dataset.ready === '1' ? null : { error: document.body.dataset.error ?? '', kind: document.body.dataset.kind ?? '' }));
}

/** The notes listed (through evaluate, not a locator: the same in WebKit's page, support/webkit.ts). */
const listed = (page: Page) => page.evaluate(() => [...document.querySelectorAll('#notes li')].map((li) => li.textContent ?? ''));

/**
 * What a user does with the notes page: create, read, update and delete, watch the live query
 * render the list, then reload and find everything there. Returns what the page saw.
 */
export async function exerciseNotes(page: Page, url: string) {
  await page.goto(url);
  const failed = await pageOpened(page);
  if (failed) throw new Error(`open() failed at ${url}: ${failed.error} (kind ${failed.kind})`);
  const env = await page.evaluate(() => ({ secure: isSecureContext, isolated: crossOriginIsolated, role: (window as any).db.role }));
  const crud = await page.evaluate(async () => {
    const db = (window as any).db;
    await db.put('notes/a', { title: 'Alpha', tags: new Set(['x']) });
    await db.put('notes/b', { title: 'Bravo' });
    await db.put('notes/c', { title: 'Charlie' });
    await db.update('notes/a', { title: 'Alpha 2' });
    await db.delete('notes/b');
    const a = await db.get('notes/a');
    return { a: { title: a.title, tags: [...a.tags] }, b: (await db.get('notes/b')) ?? null, count: await db.count('notes') };
  });
  // The live query rendered the list; no reload needed.
  const live = await listed(page);
  await page.reload();
  const again = await pageOpened(page);
  if (again) throw new Error(`open() failed after reload at ${url}: ${again.error}`);
  await page.waitForFunction(() => document.querySelectorAll('#notes li').length === 2);
  const afterReload = await listed(page);
  const persisted = await page.evaluate(async () => {
    const db = (window as any).db;
    const a = await db.get('notes/a');
    return { title: a.title, tags: [...a.tags], verified: (await db.verify()).commits };
  });
  return { env, crud, live, afterReload, persisted };
}

/** What exerciseNotes must see everywhere. */
export const NOTES_EXPECTED = {
  crud: { a: { title: 'Alpha 2', tags: ['x'] }, b: null, count: 2 },
  live: ['Alpha 2', 'Charlie'],
  afterReload: ['Alpha 2', 'Charlie'],
  persisted: { title: 'Alpha 2', tags: ['x'], verified: 5 },
};

/** The real sync server (target/release/ibexdb-server, or $IBEXDB_SERVER), as startSyncServer started it. */
export interface SyncServer {
  url: string;
  /** Its data directory (kept by `terminate`, so a restart with `{ dir, listen }` resumes it). */
  dir: string;
  /** `127.0.0.1:<port>` it listens on. */
  listen: string;
  /** Kill it (SIGKILL) and remove its data. */
  stop(): Promise<void>;
  /** Shut it down as a deploy does (SIGTERM: it tells its clients, then exits); keeps its data. */
  terminate(): Promise<void>;
}

/**
 * Start the real ibexdb-server on 127.0.0.1 (a free port, or `listen`) with a temp data
 * directory (or `dir`, to restart one that was terminated), and `args` (more flags) if given.
 */
export async function startSyncServer(opts: { dir?: string; listen?: string; args?: string[] } = {}): Promise<SyncServer> {
  const { spawn } = await import('node:child_process');
  const { createInterface } = await import('node:readline');
  const bin = process.env.IBEXDB_SERVER ?? path.resolve('target/release/ibexdb-server');
  const dir = opts.dir ?? mkdtempSync(path.join(tmpdir(), 'ibexdb-sync-'));
  const proc = spawn(bin, ['--data', dir, '--listen', opts.listen ?? '127.0.0.1:0', ...(opts.args ?? [])], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const line = await new Promise<string>((resolve, reject) => {
    proc.once('error', reject);
    proc.once('exit', (code) => reject(new Error(`ibexdb-server exited with ${code} (built? ${bin})`)));
    createInterface({ input: proc.stdout! }).once('line', resolve);
  });
  const m = /listening on (\S+)/.exec(line);
  if (!m) throw new Error(`unexpected server output: ${line}`);
  return {
    url: `ws://${m[1]}`,
    dir,
    listen: m[1],
    stop: async () => {
      proc.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    },
    terminate: async () => {
      proc.kill('SIGTERM');
      await exited;
    },
  };
}
