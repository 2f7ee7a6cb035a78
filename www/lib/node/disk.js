// The disk backend of the Node entry (./index.js): a repository is a directory
// `<directory>/<name>/` holding the same files as in OPFS (`log`, `snapshot`, `identity`, `sync`),
// byte for byte. Every call is synchronous (node:fs's *Sync functions on a file descriptor), like a
// sync access handle's; `flush()` is fsync, so a flush is durable when it returns.
//
// One process at a time: `<name>/lock` is created exclusively and holds the owner's pid; a lock
// whose process is gone (a crash) is taken over. Two processes on one directory would corrupt it.
// A second process is refused with StorageUnavailableError kind 'locked' naming the holder (`pid`,
// `file`), at once or, with open()'s `lockTimeout`, once the holder has not let go in that time.
// Taking over a dead process's lock goes through `<name>/lock.takeover` (created exclusively):
// two processes that find the same dead pid cannot both take it (the second would remove the
// first's new lock).

import { closeSync, fstatSync, fsyncSync, ftruncateSync, mkdirSync, openSync, readFileSync, readSync, rmSync, statSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { StorageUnavailableError } from '../errors.js';

/** A file on disk with a sync access handle's interface. */
class DiskFile {
  /** @param {string} file */
  constructor(file) {
    this.fd = openSync(file, 'a+');
    // 'a+' appends on every write on Linux: reopen read-write (the file exists now).
    closeSync(this.fd);
    this.fd = openSync(file, 'r+');
  }
  getSize() {
    return fstatSync(this.fd).size;
  }
  /** @param {Uint8Array} buf @param {{at?: number}} [o] */
  read(buf, { at = 0 } = {}) {
    let n = 0;
    while (n < buf.length) {
      const r = readSync(this.fd, buf, n, buf.length - n, at + n);
      if (r === 0) break;
      n += r;
    }
    return n;
  }
  /** @param {Uint8Array} buf @param {{at?: number}} [o] */
  write(buf, { at = 0 } = {}) {
    let n = 0;
    while (n < buf.length) n += writeSync(this.fd, buf, n, buf.length - n, at + n);
    return n;
  }
  /** @param {number} len */
  truncate(len) {
    ftruncateSync(this.fd, len);
  }
  flush() {
    fsyncSync(this.fd);
  }
  close() {
    if (this.fd < 0) return;
    closeSync(this.fd);
    this.fd = -1;
  }
}

/** @param {number} pid */
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return /** @type {any} */ (e)?.code === 'EPERM';
  }
}

/** @param {string} file @returns {number} the pid a lock file holds (0: unreadable, being written) */
function holderOf(file) {
  try {
    const pid = Number(readFileSync(file, 'utf8'));
    return Number.isSafeInteger(pid) && pid > 0 ? pid : 0;
  } catch {
    return 0;
  }
}

/**
 * Create lock `file` holding this process's pid, taking it over from a process that is gone.
 * @param {string} file
 * @returns {number | null} null: taken; else the live holder's pid (0: not known yet)
 */
function tryLock(file) {
  try {
    writeFileSync(file, String(process.pid), { flag: 'wx' });
    return null;
  } catch (e) {
    if (/** @type {any} */ (e)?.code !== 'EEXIST') throw new StorageUnavailableError(`cannot create ${file}: ${/** @type {any} */ (e)?.message ?? e}`, { kind: 'disk' });
  }
  const pid = holderOf(file);
  if (pid === 0) {
    // Being written this instant, or left empty by a crash between create and write: gone after 2 s.
    if (!stale(file, 2000)) return 0;
  } else if (alive(pid)) {
    return pid;
  }
  // Left by a process that is gone: one taker at a time, and only while it still names that pid.
  const takeover = `${file}.takeover`;
  try {
    writeFileSync(takeover, String(process.pid), { flag: 'wx' });
  } catch {
    // Another process is taking it over (or crashed doing so: its file is removed after 2 s).
    const other = holderOf(takeover);
    if ((other > 0 && !alive(other)) || stale(takeover, 2000)) rmSync(takeover, { force: true });
    return pid;
  }
  try {
    if (holderOf(file) !== pid) return holderOf(file);
    unlinkSync(file);
    writeFileSync(file, String(process.pid), { flag: 'wx' });
    return null;
  } catch {
    return holderOf(file);
  } finally {
    rmSync(takeover, { force: true });
  }
}

/** @param {string} file @param {number} ms whether `file` was last changed over `ms` ago */
function stale(file, ms) {
  try {
    return Date.now() - statSync(file).mtimeMs > ms;
  } catch {
    return true;
  }
}

/**
 * The disk backend for repositories under `directory`.
 * @param {string} directory
 * @returns {import('../storage.js').StorageBackend & {lock(name: string, timeoutMs?: number): Promise<() => void>}}
 */
export function diskBackend(directory) {
  const root = path.resolve(directory);
  const dir = (/** @type {string} */ name) => path.join(root, name);
  return {
    kind: /** @type {any} */ ('disk'),
    shared: false,
    available: () => true,
    async checkAccess() {
      try {
        mkdirSync(root, { recursive: true });
      } catch (e) {
        throw new StorageUnavailableError(`cannot create ${root}: ${/** @type {any} */ (e)?.message ?? e}`, { kind: 'disk' });
      }
    },
    async openFiles(name, files) {
      mkdirSync(dir(name), { recursive: true });
      /** @type {DiskFile[]} */
      const open = [];
      try {
        for (const f of files) open.push(new DiskFile(path.join(dir(name), f)));
      } catch (e) {
        for (const h of open) h.close();
        throw new StorageUnavailableError(`cannot open ${name}'s files in ${root}: ${/** @type {any} */ (e)?.message ?? e}`, { kind: 'disk' });
      }
      return open;
    },
    async removeRepository(name) {
      rmSync(dir(name), { recursive: true, force: true });
    },
    async durable() {},
    failure: () => null,
    /**
     * Take the repository's lock file; returns its release. While a live process holds it, wait
     * up to `timeoutMs` (polling every 25 ms) for it to let go, then StorageUnavailableError kind
     * 'locked' with the holder's `pid` and the lock `file`.
     * @param {string} name
     * @param {number} [timeoutMs]
     */
    async lock(name, timeoutMs = 0) {
      mkdirSync(dir(name), { recursive: true });
      const file = path.join(dir(name), 'lock');
      const end = Date.now() + timeoutMs;
      for (;;) {
        const holder = tryLock(file);
        if (holder === null) return () => rmSync(file, { force: true });
        if (Date.now() >= end) {
          const waited = timeoutMs > 0 ? ` (waited ${timeoutMs} ms: options.lockTimeout)` : ' (options.lockTimeout waits for it)';
          throw new StorageUnavailableError(`repository ${name} in ${root} is open in process ${holder || '?'}${waited}; one process at a time (${file})`, { kind: 'locked', pid: holder || null, file });
        }
        await new Promise((r) => setTimeout(r, Math.min(25, Math.max(1, end - Date.now()))));
      }
    },
  };
}
