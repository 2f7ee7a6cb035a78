// Processes for tests/readme/commands.mjs: a README command run by bash in a process group of its
// own (so Ctrl-C can be sent to all of it, as a terminal does), its output kept, lines waited
// for; free loopback ports; plain HTTP requests that show the raw response.

import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { createServer, connect } from 'node:net';

/** Environment of a make that ran this test, which a newcomer's shell does not have. */
const MAKE_VARS = ['MAKEFLAGS', 'MFLAGS', 'MAKELEVEL', 'MAKEOVERRIDES', 'MAKE_TERMOUT', 'MAKE_TERMERR'];

/**
 * Run `line` with bash in `cwd`, in a new process group. Output (stdout and stderr, interleaved)
 * is kept; `waitFor` resolves with the first match of a pattern in it.
 * @param {string} line
 * @param {{cwd: string, env?: Record<string, string>}} options
 */
export function run(line, { cwd, env = {} }) {
  const base = { ...process.env };
  for (const k of MAKE_VARS) delete base[k];
  const child = spawn('bash', ['-c', line], { cwd, env: { ...base, ...env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  /** @type {{re: RegExp, resolve: (m: RegExpExecArray) => void}[]} */
  let waiting = [];
  const seen = (/** @type {Buffer} */ chunk) => {
    output += chunk.toString();
    waiting = waiting.filter((w) => {
      const m = w.re.exec(output);
      if (m) w.resolve(m);
      return !m;
    });
  };
  child.stdout.on('data', seen);
  child.stderr.on('data', seen);
  /** @type {Promise<{code: number | null, signal: NodeJS.Signals | null}>} */
  const exit = new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  const pgid = /** @type {number} */ (child.pid);
  return {
    pgid,
    exit,
    output: () => output,
    /**
     * The first match of `re` in the output, within `ms`; rejects if the command ends first.
     * @param {RegExp} re
     * @param {number} ms
     * @returns {Promise<RegExpExecArray>}
     */
    waitFor(re, ms) {
      const m = re.exec(output);
      if (m) return Promise.resolve(m);
      return new Promise((resolve, reject) => {
        const w = { re, resolve: (/** @type {RegExpExecArray} */ x) => { clearTimeout(timer); resolve(x); } };
        const timer = setTimeout(() => reject(new Error(`no ${re} in the output within ${ms / 1000} s`)), ms);
        waiting.push(w);
        exit.then(({ code, signal }) => {
          clearTimeout(timer);
          if (waiting.includes(w)) reject(new Error(`ended (${signal ?? `exit ${code}`}) before printing ${re}`));
        });
      });
    },
    /** Send `signal` to the whole group (Ctrl-C is SIGINT to the group). @param {NodeJS.Signals} signal */
    signal(signal) {
      try {
        process.kill(-pgid, signal);
      } catch {
        // already gone
      }
    },
  };
}

/** Whether any process of group `pgid` is alive. @param {number} pgid */
export function groupAlive(pgid) {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Resolves after `ms`. @param {number} ms */
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Resolve with `promise`, or reject after `ms` with `what`.
 * @template T @param {Promise<T>} promise @param {number} ms @param {string} what @returns {Promise<T>}
 */
export function within(promise, ms, what) {
  let timer;
  return Promise.race([promise, new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: not within ${ms / 1000} s`)), ms); })]).finally(() => clearTimeout(timer));
}

/** A loopback port that was free a moment ago. @returns {Promise<number>} */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = /** @type {import('node:net').AddressInfo} */ (s.address());
      s.close(() => resolve(port));
    });
  });
}

/** Whether something accepts connections on 127.0.0.1:port. @param {number} port @returns {Promise<boolean>} */
export function listening(port) {
  return new Promise((resolve) => {
    const c = connect(port, '127.0.0.1');
    c.once('connect', () => { c.destroy(); resolve(true); });
    c.once('error', () => resolve(false));
  });
}

/**
 * GET `url` with these request headers; the raw response (not decoded).
 * @param {string} url
 * @param {Record<string, string>} [headers]
 * @returns {Promise<{status: number, headers: import('node:http').IncomingHttpHeaders, body: Buffer}>}
 */
export function get(url, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.setTimeout(30_000, () => req.destroy(new Error(`GET ${url}: no answer within 30 s`)));
    req.on('error', reject);
    req.end();
  });
}
