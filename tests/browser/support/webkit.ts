// The `webkit` project's browser, context and page (playwright.config.ts): Debian's WebKitGTK
// (MiniBrowser, driven by WebKitWebDriver over plain W3C WebDriver). Playwright's WebKit is a
// patched build that cannot be downloaded here, so the fixtures (ibexdb.fixtures.ts) hand the
// specs these objects instead of Playwright's: they implement the part of Playwright's Page the
// shared specs use (goto, evaluate, waitForFunction, waitForSelector, reload, close, url,
// waitForTimeout, context().newPage()), so the SAME test bodies run in Chromium, Firefox and
// WebKit. What they do not implement throws `WebKitUnsupported` naming it (a test needing it skips
// itself in WebKit with its reason). Console messages and uncaught errors are recorded in the page
// from just after each navigation and handed to `page.on('console' | 'pageerror')` listeners after
// each command (the fixtures' `watched` check); `addInitScript` runs after each navigation.
//
// A context is one MiniBrowser process with its own driver (separate processes: separate website
// data, as Playwright's contexts). MiniBrowser's automation session keeps its data in an
// ephemeral store: it lives as long as the process (a reload or a second window sees it), and
// nothing survives the process. A page is one window of it; WebDriver talks to one window at a
// time, so every command switches to its page's window first, one command at a time per context.
// `evaluate` runs the function in the page (an async script) and carries its result, or its
// error, as a tagged tree (undefined, NaN, ±Infinity, -0, bigint, Date, RegExp, Error, typed
// arrays, cycles), as Playwright's evaluate does.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
// @ts-ignore: plain ES module of the repo's scripts
import { MINIBROWSER, client, waitFor } from '../../../scripts/webkit/webdriver.mjs';

/**
 * JavaScriptCore's options for the browsers the specs start (docs/design.md §15.1a). WebKitGTK
 * 2.50.6's optimizing wasm tier (OMG) intermittently computes P-384 wrong: with it, 10 of 7,428
 * public keys derived or decompressed in fresh workers right after a compile were not points of
 * the curve (`open()` failed with "public key is not a P-384 point"; WebCrypto could not import
 * a seal's key, so verify() fell back to the core); with `useOMGJIT=0`, 0 of 7,056 in that
 * measure, though 4 bad keys were seen in one later run: rarer, not gone. A browser bug ibexdb
 * cannot work around from JavaScript; the specs test ibexdb on the other tiers.
 * `JSC_useOMGJIT=1` in the environment turns it back on.
 */
export const JSC_ENV = { JSC_useOMGJIT: process.env.JSC_useOMGJIT ?? '0' };

/** What the WebKit page does not do; the message names the Playwright API. */
export class WebKitUnsupported extends Error {
  constructor(what: string) {
    super(`not available in WebKitGTK over WebDriver (tests/browser/support/webkit.ts): ${what}`);
    this.name = 'WebKitUnsupported';
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as import('node:net').AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/** One command at a time per WebDriver session (it has one current window). */
class Queue {
  private tail: Promise<unknown> = Promise.resolve();
  run<T>(f: () => Promise<T>): Promise<T> {
    const r = this.tail.then(f, f);
    this.tail = r.catch(() => {});
    return r;
  }
}

// ----- values across the wire (the page side is serialized with toString) -------------------------

/** Page side: a value as a JSON-safe tagged tree. */
function encode(v: any, seen = new Map<any, number>()): any {
  if (v === undefined) return { t: 'u' };
  if (v === null || typeof v === 'boolean' || typeof v === 'string') return { t: 'p', v };
  if (typeof v === 'number') {
    if (Number.isNaN(v)) return { t: 'n', v: 'NaN' };
    if (v === Infinity) return { t: 'n', v: 'Infinity' };
    if (v === -Infinity) return { t: 'n', v: '-Infinity' };
    if (Object.is(v, -0)) return { t: 'n', v: '-0' };
    return { t: 'p', v };
  }
  if (typeof v === 'bigint') return { t: 'b', v: String(v) };
  if (typeof v === 'function' || typeof v === 'symbol') return { t: 'u' };
  if (seen.has(v)) return { t: 'ref', v: seen.get(v) };
  const id = seen.size;
  seen.set(v, id);
  if (v instanceof Date) return { t: 'd', v: v.toISOString() };
  if (v instanceof RegExp) return { t: 'r', v: v.source, f: v.flags };
  if (v instanceof Error) return { t: 'e', name: v.name, message: v.message, stack: v.stack ?? '' };
  if (ArrayBuffer.isView(v) && !(v instanceof DataView)) return { t: 'ta', k: v.constructor.name, v: Array.from(v as any, (x: any) => (typeof x === 'bigint' ? String(x) : x)), id };
  if (Array.isArray(v)) return { t: 'a', id, v: v.map((x) => encode(x, seen)) };
  if (typeof Window !== 'undefined' && v instanceof Window) return { t: 'p', v: 'ref: <Window>' };
  if (typeof Node !== 'undefined' && v instanceof Node) return { t: 'p', v: `ref: <Node>` };
  const o: Record<string, any> = {};
  for (const k of Object.keys(v)) o[k] = encode(v[k], seen);
  return { t: 'o', id, v: o };
}

/** Node side: the value of a tagged tree. */
function decode(x: any, refs = new Map<number, any>()): any {
  switch (x?.t) {
    case 'u':
      return undefined;
    case 'p':
      return x.v;
    case 'n':
      return x.v === '-0' ? -0 : Number(x.v);
    case 'b':
      return BigInt(x.v);
    case 'd':
      return new Date(x.v);
    case 'r':
      return new RegExp(x.v, x.f);
    case 'e': {
      const e = new Error(x.message);
      e.name = x.name;
      e.stack = `${x.name}: ${x.message}\n${x.stack}`;
      return e;
    }
    case 'ta': {
      const C = (globalThis as any)[x.k] ?? Uint8Array;
      return C === BigInt64Array || C === BigUint64Array ? new C(x.v.map(BigInt)) : new C(x.v);
    }
    case 'ref':
      return refs.get(x.v);
    case 'a': {
      const a: any[] = [];
      refs.set(x.id, a);
      for (const e of x.v) a.push(decode(e, refs));
      return a;
    }
    case 'o': {
      const o: Record<string, any> = {};
      refs.set(x.id, o);
      for (const k of Object.keys(x.v)) o[k] = decode(x.v[k], refs);
      return o;
    }
    default:
      throw new Error(`webkit: cannot decode ${JSON.stringify(x)}`);
  }
}

/** Node side: an argument as a tagged tree (the same encoding, done here). */
const encodeArg = (v: unknown) => JSON.stringify(encode(v));

// ----- browser, context, page ----------------------------------------------------------------------

/** A MiniBrowser process, its WebDriver and one session on it. */
class MiniBrowserSession {
  readonly queue = new Queue();
  private current = '';
  constructor(
    readonly wd: ReturnType<typeof client>,
    public sid: string,
    private readonly procs: ChildProcess[],
    readonly log: () => string,
  ) {}

  /** Starts one; a browser that dies or hangs while starting (seen under load) is started again, twice at most. */
  static async start(): Promise<MiniBrowserSession> {
    let last: Error | null = null;
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        return await MiniBrowserSession.startOnce();
      } catch (e) {
        last = e as Error;
      }
    }
    throw last;
  }

  private static async startOnce(): Promise<MiniBrowserSession> {
    if (!MINIBROWSER) throw new Error('webkit: MiniBrowser is not installed (make setup installs webkit2gtk-driver)');
    const [driverPort, inspectorPort] = [await freePort(), await freePort()];
    // The browser is started here with its remote inspector on a loopback port and the driver
    // pointed at it (--target): a session whose browser the driver starts itself never came up here.
    const browser = spawn(MINIBROWSER, ['--automation', '--features=+FileSystem,+AccessHandle,+StorageAPI'], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, ...JSC_ENV, WEBKIT_INSPECTOR_SERVER: `127.0.0.1:${inspectorPort}` },
    });
    const driver = spawn('/usr/bin/WebKitWebDriver', [`--port=${driverPort}`, `--target=127.0.0.1:${inspectorPort}`], { stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    for (const p of [browser, driver]) p.stderr!.on('data', (d) => (log = (log + d).slice(-8000)));
    const exited = new Promise<never>((_, reject) => {
      browser.once('exit', (code, sig) => reject(new Error(`MiniBrowser exited (${code ?? sig}) while starting`)));
      driver.once('exit', (code, sig) => reject(new Error(`WebKitWebDriver exited (${code ?? sig}) while starting`)));
    });
    exited.catch(() => {});
    const wd = client(`http://127.0.0.1:${driverPort}`);
    let session: any = null;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('no WebDriver session in 30 s')), 30_000)));
      await Promise.race([waitFor(async () => (session = await wd.post('/session', { capabilities: { alwaysMatch: {} } })), 20_000, 'a WebDriver session with MiniBrowser'), exited, timeout]);
    } catch (e) {
      driver.kill('SIGKILL');
      browser.kill('SIGKILL');
      throw new Error(`webkit: ${(e as Error).message}\n${log}`);
    } finally {
      clearTimeout(timer);
    }
    const s = new MiniBrowserSession(wd, session.sessionId, [driver, browser], () => log);
    await wd.post(`/session/${s.sid}/timeouts`, { script: 600_000, pageLoad: 60_000 });
    s.current = await wd.get(`/session/${s.sid}/window`);
    return s;
  }

  /** `path` under the session. */
  p(path: string) {
    return `/session/${this.sid}${path}`;
  }

  /** Run `f` with `handle` the current window, one at a time. */
  on<T>(handle: string, f: () => Promise<T>): Promise<T> {
    return this.queue.run(async () => {
      if (this.current !== handle) {
        await this.wd.post(this.p('/window'), { handle });
        this.current = handle;
      }
      return f();
    });
  }

  async newWindow(): Promise<string> {
    return this.queue.run(async () => (await this.wd.post(this.p('/window/new'), { type: 'window' })).handle);
  }

  async closeWindow(handle: string) {
    await this.on(handle, async () => {
      await this.wd.del(this.p('/window'));
      this.current = '';
    });
  }

  /**
   * Kill (SIGKILL) the browser's web content processes (pages and their workers), as a crash
   * does; its network process, which keeps the website data (IndexedDB), lives on. WebKitWebDriver
   * then deletes the session ("page crash or hang"): a new one is made on the same browser, its
   * window the context's next page.
   * @returns how many were killed
   */
  async killWebProcesses(): Promise<number> {
    const browserPid = this.procs[1].pid;
    let n = 0;
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      let stat: string;
      try {
        stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      } catch {
        continue;
      }
      // pid (comm) state ppid ...: comm may hold spaces, so split after its closing parenthesis.
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === browserPid && comm.startsWith('WebKitWebProces')) {
        process.kill(Number(entry), 'SIGKILL');
        n++;
      }
    }
    await this.queue.run(async () => {
      let session: any = null;
      // The driver lets go of the crashed session when a command on it finds the crash.
      const old = this.p('/window/handles');
      await waitFor(async () => {
        await this.wd.get(old).catch(() => {});
        return (session = await this.wd.post('/session', { capabilities: { alwaysMatch: {} } }));
      }, 20_000, 'a new WebDriver session after the crash');
      this.sid = session.sessionId;
      await this.wd.post(this.p('/timeouts'), { script: 600_000, pageLoad: 60_000 });
      this.current = await this.wd.get(this.p('/window'));
    });
    return n;
  }

  /** Ends the browser and its driver (the data store is ephemeral: nothing to keep). */
  async close() {
    for (const p of this.procs) p.kill('SIGKILL');
  }
}

type PageFunction = string | ((arg: any) => any);

/** Page side, after each navigation: record console messages and uncaught errors in `__wkEvents`. */
function WATCH_PAGE() {
  const w = window as any;
  if (w.__wkEvents) return;
  const events: any[] = (w.__wkEvents = []);
  const text = (a: unknown) => (a instanceof Error ? `${a.name}: ${a.message}` : typeof a === 'string' ? a : (() => { try { return JSON.stringify(a) ?? String(a); } catch { return String(a); } })());
  addEventListener('error', (e) => events.push({ t: 'pageerror', m: e.error?.message ?? e.message, s: e.error?.stack }));
  addEventListener('unhandledrejection', (e) => events.push({ t: 'pageerror', m: String(e.reason?.message ?? e.reason), s: e.reason?.stack }));
  for (const k of ['log', 'info', 'warn', 'error', 'debug'] as const) {
    const orig = console[k].bind(console);
    console[k] = (...a: unknown[]) => {
      events.push({ t: 'console', k: k === 'warn' ? 'warning' : k, m: a.map(text).join(' ') });
      orig(...a);
    };
  }
}

/**
 * A window of a WebKit context, with the part of Playwright's Page the specs use. Its window is
 * made at its first command (a test that skips itself in WebKit starts no browser).
 */
export class WebKitPage {
  private lastUrl = 'about:blank';
  private closed = false;
  private handle: Promise<string> | null = null;
  private listeners = new Map<string, Set<(...a: any[]) => void>>();
  private initScripts: [PageFunction, unknown][] = [];
  constructor(
    private readonly ctx: WebKitContext,
    private readonly makeWindow: (s: MiniBrowserSession) => Promise<string>,
  ) {}

  context() {
    return this.ctx;
  }
  url() {
    return this.lastUrl;
  }
  isClosed() {
    return this.closed;
  }
  /**
   * 'console' and 'pageerror' listeners. Classic WebDriver reports neither: after each navigation
   * the page's console, `error` and `unhandledrejection` are watched (what happens before, while
   * the page loads, is not seen), and what was recorded is handed over after each command.
   */
  on(event: string, f: (...a: any[]) => void) {
    if (!this.listeners.has(event)) this.listeners.set(event, new Set());
    this.listeners.get(event)!.add(f);
    return this;
  }
  off(event: string, f: (...a: any[]) => void) {
    this.listeners.get(event)?.delete(f);
    return this;
  }

  private emit(events: { t: string; k?: string; m: string; s?: string }[] | undefined) {
    for (const ev of events ?? []) {
      if (ev.t === 'console') {
        const msg = { type: () => ev.k ?? 'log', text: () => ev.m };
        for (const f of this.listeners.get('console') ?? []) f(msg);
      } else {
        const e = new Error(ev.m);
        // JavaScriptCore's stack lists the frames only: the message goes in front, as in V8's.
        e.stack = ev.s?.includes(ev.m) ? ev.s : `Error: ${ev.m}\n${ev.s ?? ''}`;
        for (const f of this.listeners.get('pageerror') ?? []) f(e);
      }
    }
  }

  /** Run `f` on this page's window (made first if need be), one command at a time per context. */
  private async cmd<T>(f: (s: MiniBrowserSession) => Promise<T>) {
    if (this.closed) throw new Error('webkit: the page is closed');
    const s = await this.ctx.session();
    this.handle ??= this.makeWindow(s);
    const handle = await this.handle;
    return s.on(handle, () => f(s));
  }

  async goto(url: string) {
    const abs = new URL(url, this.ctx.baseURL || undefined).href;
    await this.cmd((s) => s.wd.post(s.p('/url'), { url: abs }));
    this.lastUrl = await this.cmd((s) => s.wd.get(s.p('/url')));
    await this.afterNavigation();
    return null;
  }

  async reload() {
    await this.cmd((s) => s.wd.post(s.p('/refresh'), {}));
    await this.afterNavigation();
    return null;
  }

  /** Playwright's page.evaluate: a function (called with `arg`) or a script's source. */
  async evaluate<R = any>(fn: PageFunction, arg?: unknown): Promise<R> {
    const body = typeof fn === 'function' ? `(${fn.toString()})(__decode(${JSON.stringify(encodeArg(arg))}))` : `(0, eval)(${JSON.stringify(fn)})`; // a string: run as a script, its completion value
    const script = `const __done = arguments[arguments.length - 1];
      const __encode = ${encode.toString()};
      const __decode = (s) => (${decode.toString()})(JSON.parse(s));
      Promise.resolve().then(() => ${body}).then(
        (v) => __done(JSON.stringify({ ok: __encode(v), ev: (window.__wkEvents || []).splice(0) })),
        (e) => __done(JSON.stringify({ error: __encode(e instanceof Error ? e : new Error(String(e))), ev: (window.__wkEvents || []).splice(0) })));`;
    const raw = await this.cmd((s) => s.wd.post(s.p('/execute/async'), { script, args: [] }));
    const out = JSON.parse(raw);
    this.emit(out.ev);
    if (out.error) {
      const e = decode(out.error);
      const err = new Error(`page.evaluate: ${e.name}: ${e.message}`);
      err.stack = `${err.message}\n${e.stack}`;
      throw err;
    }
    return decode(out.ok);
  }

  /** Polls `fn(arg)` until truthy; its value as a handle (jsonValue()). */
  async waitForFunction(fn: PageFunction, arg?: unknown, opts: { timeout?: number; polling?: unknown } = {}) {
    const end = Date.now() + (opts.timeout ?? 30_000);
    for (;;) {
      const v = await this.evaluate(fn, arg);
      if (v) return { jsonValue: async () => v, dispose: async () => {} };
      if (Date.now() > end) throw new Error(`page.waitForFunction: timed out after ${opts.timeout ?? 30_000} ms`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async waitForSelector(selector: string, opts: { timeout?: number } = {}) {
    await this.waitForFunction((sel: string) => !!document.querySelector(sel), selector, opts);
    return null;
  }

  async waitForTimeout(ms: number) {
    await new Promise((r) => setTimeout(r, ms));
  }

  async close() {
    if (this.closed) return;
    if (this.handle) {
      const s = await this.ctx.session();
      await s.closeWindow(await this.handle);
    }
    this.closed = true;
  }

  /**
   * WebKit only (not Playwright's): kill the context's web content processes (crash.spec.ts).
   * Its pages are gone with them; the context's next newPage() is a window of the new session.
   */
  async killWebProcesses() {
    return this.ctx.killWebProcesses();
  }

  /**
   * Playwright runs an init script before the page's own scripts; classic WebDriver cannot, so here
   * it runs right after each navigation (goto, reload) has loaded the page, before the test's next
   * command. Enough for the specs' init scripts, which patch what open() and verify() use later
   * (a script that must see the page's own start-up would not see it here).
   */
  async addInitScript(script: PageFunction, arg?: unknown) {
    this.initScripts.push([script, arg]);
    if (this.lastUrl !== 'about:blank') await this.evaluate(script, arg);
  }

  private async afterNavigation() {
    await this.evaluate(WATCH_PAGE);
    for (const [script, arg] of this.initScripts) await this.evaluate(script, arg);
  }
  route(): never {
    throw new WebKitUnsupported('page.route');
  }
  locator(): never {
    throw new WebKitUnsupported('page.locator (the UI is driven through Playwright locators)');
  }
}

/**
 * A MiniBrowser process of its own (started at its pages' first command): its pages share its
 * (ephemeral) website data.
 */
export class WebKitContext {
  private started: Promise<MiniBrowserSession> | null = null;
  private firstFree = true;
  constructor(readonly baseURL: string | undefined) {}

  session(): Promise<MiniBrowserSession> {
    return (this.started ??= MiniBrowserSession.start());
  }

  async newPage(): Promise<WebKitPage> {
    // The session starts with one window: the first page is that one.
    const first = this.firstFree;
    this.firstFree = false;
    return new WebKitPage(this, (s) => (first ? s.wd.get(s.p('/window')) : s.newWindow()));
  }

  async killWebProcesses() {
    const n = await (await this.session()).killWebProcesses();
    this.firstFree = true;
    return n;
  }

  async close() {
    if (this.started) await (await this.started.catch(() => null))?.close();
  }
}

/** What the specs' `browser` fixture offers in WebKit: new contexts (MiniBrowser processes). */
export class WebKitBrowser {
  private contexts: WebKitContext[] = [];
  constructor(readonly baseURL: string | undefined) {}
  async newContext(opts: { baseURL?: string } = {}) {
    const c = new WebKitContext(opts.baseURL ?? this.baseURL);
    this.contexts.push(c);
    return c;
  }
  async newPage() {
    return (await this.newContext()).newPage();
  }
  version() {
    return 'WebKitGTK';
  }
  async close() {
    await Promise.all(this.contexts.map((c) => c.close()));
  }
}
