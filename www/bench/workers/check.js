// Checking what a row did (PROTOCOL.md "Checks"): every write row reads back what it wrote,
// untimed, through the adapter's `getMany`, and compares each item field by field. A missing or
// different item is counted in `wrong`, which the page reports as an error on the row.

/** @typedef {import('./harness.js').Item} Item */

/** @param {unknown} a @param {string[]} b */
const sameTags = (a, b) => Array.isArray(a) && a.length === b.length && b.every((t) => a.includes(t));

/**
 * Whether an item read back has the fields that were written (`tags` as a set).
 * @param {any} got @param {{title: string, count: number, tags: string[]}} want
 */
export const sameItem = (got, want) => !!got && got.title === want.title && got.count === want.count && sameTags(got.tags, want.tags);

/**
 * Read back every item of `expected` (id → the fields last written) in calls of 1,000 ids.
 * @param {import('./harness.js').Session} s
 * @param {Map<string, {title: string, count: number, tags: string[]}>} expected
 * @returns {Promise<{written: number, readBack: number, wrong?: number}>}
 */
export async function readBack(s, expected) {
  const ids = [...expected.keys()];
  let found = 0;
  let wrong = 0;
  for (let i = 0; i < ids.length; i += 1000) {
    const chunk = ids.slice(i, i + 1000);
    /** @type {Item[]} */
    const got = await s.call('getMany', chunk);
    const byId = new Map(got.map((x) => [x.id, x]));
    for (const id of chunk) {
      const g = byId.get(id);
      if (g) found++;
      if (!sameItem(g, /** @type {any} */ (expected.get(id)))) wrong++;
    }
  }
  return wrong ? { written: ids.length, readBack: found, wrong } : { written: ids.length, readBack: found };
}

/**
 * Items by id.
 * @param {Item[]} items
 * @returns {Map<string, Item>}
 */
export const byId = (items) => new Map(items.map((it) => [it.id, it]));
