// The disk backend of the Node entry (./index.js): a repository is a directory
// `<directory>/<name>/` holding the same files as in OPFS (`log`, `snapshot`, `identity`, `sync`),
// byte for byte. Every call is synchronous (node:fs's *Sync functions on a file descriptor), like a
// sync access handle's; `flush()` is fsync, so a flush is durable when it returns.
//
// One process at a time: `<name>/lock` is created exclusively and holds the owner's pid; a lock
// whose process is gone (a crash) is taken over. Two processes on one directory would corrupt it.

import { closeSync, fstatSync, fsyncSync, ftruncateSync, mkdirSync, openSync, readFileSync, readSync, rmSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
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

/**
 * The disk backend for repositories under `directory`.
 * @param {string} directory
 * @returns {import('../storage.js').StorageBackend & {lock(name: string): () => void}}
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
    /** Take the repository's lock file (StorageUnavailableError while a live process holds it); returns its release. */
    lock(name) {
      mkdirSync(dir(name), { recursive: true });
      const file = path.join(dir(name), 'lock');
      for (let attempt = 0; ; attempt++) {
        try {
          writeFileSync(file, String(process.pid), { flag: 'wx' });
          return () => rmSync(file, { force: true });
        } catch (e) {
          if (/** @type {any} */ (e)?.code !== 'EEXIST' || attempt > 0) throw new StorageUnavailableError(`repository ${name} in ${root} is open in another process (${file})`, { kind: 'locked' });
          const pid = Number(readFileSync(file, 'utf8'));
          if (Number.isSafeInteger(pid) && pid > 0 && alive(pid)) {
            throw new StorageUnavailableError(`repository ${name} in ${root} is open in process ${pid} (${file})`, { kind: 'locked' });
          }
          unlinkSync(file); // left by a process that is gone
        }
      }
    },
  };
}
