// The memory backend (`open(name, {storage: 'memory'})`): the repository's files live in this
// worker's memory and die with it (close(), the tab going away). For private windows where the
// browser keeps no site data, for tests, and for Node (www/lib/node/). `flush()` has nothing to
// make durable. The files stay in this context until `removeRepository` or the context ends, so
// a reopen here after a panic (`recover()`) or a close finds them; another context (another tab's
// worker) never sees them, which is why the page API gives each memory open its own Web Lock and
// channel instead of sharing ownership (worker/ownership.js).

import { forgetMemoryAttachments } from './memory-attachments.js';
import { MemFile } from './mem-file.js';

/**
 * A memory backend with repositories of its own (the Node entry makes one per open, so that two
 * opens of a name in one process do not share files).
 * @returns {import('../storage.js').StorageBackend}
 */
export function createMemoryBackend() {
  /** @type {Map<string, Map<string, Uint8Array>>} repository -> file -> bytes as of its last close */
  const repositories = new Map();
  return {
    kind: 'memory',
    shared: false,
    available: () => true,
    async checkAccess() {},
    async openFiles(name, files) {
      let repo = repositories.get(name);
      if (!repo) repositories.set(name, (repo = new Map()));
      const store = repo;
      return files.map((f) => {
        const file = new MemFile(f, store.get(f) ?? new Uint8Array(0), {
          flush: (m) => m.dirty.clear(),
          // The engine writes only when it flushes (its log batches frames until then), so what a
          // closed file holds is what was flushed.
          close: (m) => store.set(f, m.buf.subarray(0, m.size)),
        });
        return file;
      });
    },
    async removeRepository(name) {
      repositories.delete(name);
      forgetMemoryAttachments(name);
    },
    async durable() {},
    failure: () => null,
  };
}

/** This context's memory backend (a page's worker: one per open anyway). */
export const memoryBackend = createMemoryBackend();
