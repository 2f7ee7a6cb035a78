// The verify row (suite `verify`): re-prove a history of single-item commits after a reopen
// (ibexdb: verify(); SQLite: PRAGMA integrity_check — not the same work, no ratio).

import { makeItem } from '../../shared/model.js';
import { repeat, settle } from '../loops.js';

/** @typedef {import('../harness.js').Session} Session */
/** @typedef {import('../harness.js').RowParams} RowParams */
/** @typedef {import('../harness.js').RowResult} RowResult */

/**
 * @param {Session} s
 * @returns {Record<string, (p: RowParams) => Promise<RowResult>>}
 */
export function verifyRows(s) {
  return {
    async verify(p) {
      await s.ensureClosed();
      await s.call('reset', { final: false });
      await s.ensureOpen();
      const { commits, sealEvery } = /** @type {{commits: number, sealEvery: number}} */ (p.verify);
      const items = Array.from({ length: commits }, (_, i) => makeItem(i));
      const setup = await s.call('verifySetup', { items, sealEvery });
      // Verify the repository as an app finds it at start-up: closed and reopened (not timed).
      await s.ensureClosed();
      await s.ensureOpen();
      /** @type {Record<string, any> | null} */
      let report = null;
      const m = await repeat(p, () => settle(/** @type {NonNullable<typeof s.adapter.verify>} */ (s.adapter.verify).call(s.adapter), (x) => { report = x; }));
      /** @type {Record<string, any>} */
      const r = report ?? {};
      /** @type {Record<string, unknown>} */
      const check = { ...r };
      if (r.commits !== undefined && r.commits !== setup.commits) check.wrong = `verified ${r.commits} commits, made ${setup.commits}`;
      if (r.ok === false) check.wrong = `integrity check failed: ${r.result}`;
      return { ...m, check, note: setup.note ?? '' };
    },
  };
}
