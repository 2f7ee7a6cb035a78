// The page's side of an engine worker (PROTOCOL.md §1): a dedicated module worker per engine,
// messages matched to their replies, load failures and dead workers reported clearly. Like the
// product's page API (www/lib/ibexdb.js), the page starts the ibexdb worker's verify() helper
// thread when the worker asks for it ({type: 'verify-thread'}) and hands it a MessagePort
// ({type: 'verify-port', port}): a worker started inside a worker sometimes never starts in
// Firefox, and the engine worker would wait for it frozen.

import { startVerifyThread } from '../../lib/loader.js';

const CALL_TIMEOUT_MS = 15 * 60 * 1000;

/** How many verify() helper threads this page started for engine workers (recorded in the results). */
export const verifyHelpers = { started: 0 };

/** A dedicated module worker for one engine, with request/reply matching and clear failures. */
export class EngineWorker {
  constructor(engine) {
    this.engine = engine;
    this.seq = 0;
    this.pending = new Map();
    this.dead = null;
    /** @type {{worker: Worker, stop: () => void} | null} verify()'s helper thread, started on the worker's ask */
    this.verifyThread = null;
    this.worker = new Worker(new URL(engine.worker, import.meta.url), { type: 'module', name: engine.id });
    this.worker.onmessage = (e) => this.#onMessage(e.data);
    this.worker.onerror = (e) => {
      // Module workers report load failures (404, syntax error, failed import) without much detail;
      // the browser console has the specifics.
      e.preventDefault?.();
      const where = e.filename ? ` at ${e.filename}:${e.lineno}` : '';
      this.#fail(new Error(`${engine.id} worker error${where}: ${e.message || 'script failed to load or threw at top level (see the browser console)'}`));
    };
    this.worker.onmessageerror = () => this.#fail(new Error(`${engine.id} worker sent a message that could not be deserialized`));
  }

  #onMessage(msg) {
    if (msg?.type === 'fatal') {
      console.error(`[bench] ${this.engine.id} worker fatal: ${msg.error?.name}: ${msg.error?.message}`);
      this.#fail(Object.assign(new Error(`${this.engine.id} worker: unhandled ${msg.error?.name}: ${msg.error?.message}`), { workerStack: msg.error?.stack }));
      return;
    }
    if (msg?.type === 'verify-thread') {
      this.#startVerifyThread();
      return;
    }
    const p = this.pending.get(msg?.id);
    if (!p) return;
    this.pending.delete(msg.id);
    clearTimeout(p.timer);
    if (msg.ok) p.resolve(msg);
    else {
      const err = Object.assign(new Error(`${this.engine.id}: ${msg.error?.name ?? 'Error'}: ${msg.error?.message ?? 'unknown error'}`), { workerStack: msg.error?.stack });
      p.reject(err);
    }
  }

  /**
   * The worker asks for verify()'s helper thread (www/lib/worker/crypto.js): start it here, with
   * the product's own loader, and hand the worker a port to it (or null: it verifies on its own
   * thread), as www/lib/ibexdb.js does. A helper that fails later is reported to the worker.
   * Messages without an `id` are notices: the worker's harness handles them at once, not queued
   * behind the row that is waiting for this answer.
   */
  #startVerifyThread() {
    this.verifyThread?.stop();
    const started = this.dead ? null : startVerifyThread();
    this.verifyThread = started;
    if (!started) {
      this.worker.postMessage({ type: 'verify-port', port: null });
      return;
    }
    verifyHelpers.started++;
    const channel = new MessageChannel();
    started.worker.onerror = (ev) => {
      ev.preventDefault?.();
      started.stop();
      if (this.verifyThread === started) this.verifyThread = null;
      if (!this.dead) this.worker.postMessage({ type: 'verify-failed' });
    };
    started.worker.postMessage({ port: channel.port1 }, [channel.port1]);
    this.worker.postMessage({ type: 'verify-port', port: channel.port2 }, [channel.port2]);
  }

  #fail(err) {
    if (!this.dead) this.dead = err;
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(err);
    }
    this.pending.clear();
  }

  /** Send one message and wait for its reply. */
  call(msg, timeoutMs = CALL_TIMEOUT_MS) {
    if (this.dead) return Promise.reject(this.dead);
    const id = ++this.seq;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${this.engine.id}: no reply to ${msg.type}${msg.row ? ` ${msg.row}` : ''} within ${timeoutMs / 1000} s`));
      }, timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      this.worker.postMessage({ ...msg, id });
    });
  }

  terminate() {
    this.verifyThread?.stop();
    this.verifyThread = null;
    this.worker.terminate();
    this.#fail(new Error(`${this.engine.id} worker terminated`));
  }
}

/** Ask the worker to release its storage, then terminate it. Errors here are secondary. */
export async function retire(w, { reset = false, final = false } = {}) {
  try {
    if (reset) await w.call({ type: 'reset', final }, 60_000);
    await w.call({ type: 'close' }, 60_000);
  } finally {
    w.terminate();
  }
}
