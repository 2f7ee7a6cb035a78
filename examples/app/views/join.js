// Joining a shared board. A board that syncs and has nothing on this device yet is fetched from
// the server before anything is written: the first write of an empty board founds it (it makes
// this device its owner), and a second, foreign founding could never merge with the board on the
// server. So the board stays read-only (inert) until `db.sync()` resolves, and the banner says
// what is happening: connecting, waiting for the server, or no access yet (with this device's
// key to send to an owner, and a "Check again" button; the server keeps the session waiting
// and lets it in the moment a grant lands, so the board opens within about a second).
import { ClosedError, PermissionError } from 'ibexdb';
import { explain } from '../lib/access.js';

const RECHECK_MS = 10_000;

/** Why the invite link this page was opened with was refused (null: none was, or none given). */
/** @type {string | null} */
let inviteRefusal = null;

/**
 * Resolve once writing is safe: at once for a local board or one with data here, otherwise after
 * the first sync. False when the database was replaced meanwhile (a new join runs for it).
 * @param {typeof import('../app.js').app} app
 * @param {typeof import('./access-banner.js').banner} banner
 * @returns {Promise<boolean>}
 */
export async function joinBoard(app, banner) {
  const db = app.db;
  if (!app.syncUrl || (await db.storageInfo()).repository.commits > 0) return true;
  document.body.dataset.access = 'joining';
  const unsubscribe = db.onSyncStatus((st) => waiting(banner, st));
  waiting(banner, await db.syncStatus());
  try {
    for (;;) {
      try {
        // The invite link this page was opened with, refused before this loop asked: say so
        // (asking db.sync() now would dial again, and the answer would be cannot-read).
        const st = await db.syncStatus();
        if (!inviteRefusal && st.lastError instanceof PermissionError && st.lastError.kind?.startsWith('invite-')) throw st.lastError;
        await db.sync();
        return app.db === db;
      } catch (err) {
        if (err instanceof ClosedError || app.db !== db) return app.db === db; // sync stopped (local only now), or reopened
        // The server has no board of this name: it is new, and the first write here founds it.
        if (err instanceof PermissionError && err.kind === 'not-found') return app.db === db;
        await refused(banner, err, db);
        banner.show('joining', 'Checking again…');
      }
    }
  } finally {
    unsubscribe();
  }
}

/** @param {typeof import('./access-banner.js').banner} banner @param {import('ibexdb').SyncStatus} st */
function waiting(banner, st) {
  if (st.state === 'error') return; // refused() shows it
  const reach = !navigator.onLine || st.state === 'offline';
  banner.show('joining', 'Fetching this board from the server before you can edit it…', {
    text: reach
      ? 'The server cannot be reached right now; the board opens as soon as it can. (To keep a board on this device only, clear the server under the sync status.)'
      : 'Its lists and tasks arrive first, so that your changes go into the same board as everyone else’s.',
  });
}

/**
 * Show the refusal; resolve when the user asks to check again, after RECHECK_MS, or as soon
 * as the server welcomes this device (it keeps a refused session waiting and lets it in the
 * moment an owner grants its key a role).
 * @param {typeof import('./access-banner.js').banner} banner @param {unknown} err
 * @param {import('ibexdb').Database} db
 */
function refused(banner, err, db) {
  document.body.dataset.access = 'denied';
  return new Promise((resolve) => {
    let stop = () => {};
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    let timer;
    const done = () => (clearTimeout(timer), stop(), resolve(undefined));
    timer = setTimeout(done, RECHECK_MS);
    stop = db.onSyncStatus((st) => {
      if (st.state === 'syncing' || st.state === 'synced') done();
      // The invite link's redemption, refused while the session waits: say why.
      else if (st.lastError instanceof PermissionError && st.lastError.kind?.startsWith('invite-')) show(st.lastError);
    });
    show(err);
    /** @param {unknown} err */
    function show(err) {
      const noRead = err instanceof PermissionError && err.kind === 'cannot-read';
      // A refused invite link stays said (the session then waits like any other without access).
      if (err instanceof PermissionError && err.kind?.startsWith('invite-')) inviteRefusal = explain(err);
      const title = inviteRefusal ? 'This invite link cannot be used.' : noRead ? 'You do not have access to this board yet.' : 'The server refused this device.';
      banner.show('denied', title, {
        text: inviteRefusal ?? (noRead ? 'Send your public key to an owner of the board; once they invite you (Share → Invite), it opens here.' : explain(err)),
        key: true,
        again: done,
        hint: 'It opens here as soon as you are invited.',
      });
    }
  });
}
