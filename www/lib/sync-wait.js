// Waiting for sync to complete: what `db.sync()` resolves on, shared by the browser's Database
// (ibexdb.js, statuses posted by the worker) and Node's (node/index.js, statuses from its own
// SyncManager).

import { ClosedError, IbexError } from './errors.js';

/**
 * Resolve at the first `synced` status from `st` on; reject at `error` or `off`. Later statuses
 * arrive through `listeners` (the Database calls each with every status; a listener that
 * returns true is done and removes itself).
 * @param {Set<(s: any) => unknown>} listeners
 * @param {{state: string, lastError?: any}} st the status when the wait starts
 * @returns {Promise<void>}
 */
export function waitSynced(listeners, st) {
  return new Promise((resolve, reject) => {
    /** @param {{state: string, lastError?: any}} s */
    const check = (s) => {
      if (s.state === 'synced') resolve();
      else if (s.state === 'error') reject(s.lastError ?? new IbexError('sync failed'));
      else if (s.state === 'off') reject(new ClosedError('sync was stopped before it completed'));
      else return false;
      listeners.delete(check);
      return true;
    };
    if (!check(st)) listeners.add(check);
  });
}
