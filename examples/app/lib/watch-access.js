// The access list, followed live: the `_acl` collection (docs/design.md §6.4) changes with every
// grant, role change or revocation, local or received; at each change the list is read again
// through db.members(), the public API's view of it.

/**
 * Call `cb(members)` now and after every change of the access list; returns a stop function.
 * @param {import('ibexdb').Database} db
 * @param {(m: import('ibexdb').Members) => void} cb
 * @returns {Promise<() => void>}
 */
export async function watchAccess(db, cb) {
  let stopped = false;
  let latest = 0;
  const read = async () => {
    const n = ++latest;
    const m = await db.members();
    if (!stopped && n === latest) cb(m);
  };
  const live = await db.live({ collection: '_acl' }, () => {
    read().catch(() => {}); // the database closed meanwhile
  });
  return () => {
    stopped = true;
    live.close();
  };
}
