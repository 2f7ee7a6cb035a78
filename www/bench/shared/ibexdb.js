// What the ibexdb benchmark worker (workers/ibexdb.js) and the page-side client (page/clients.js) must
// agree on: the repository name per engine and the `items` schema. Dependency-free.

/** OPFS repository (`/ibexdb/<name>/`) of a benchmark engine. */
export const repoName = (engineId) => `bench-${engineId}`;

/**
 * The `items` collection: typed fields and a sorted secondary index on `count` (SQLite: the
 * items_count index). No index on `tags`: see workers/ibexdb.js (the planner answers the complex
 * query with a backwards walk of the `count` index; a `tags` index only slows writes down).
 */
export const ITEMS_SCHEMA = {
  fields: { title: { type: 'string' }, count: { type: 'number' }, tags: { type: 'set' } },
  indexes: ['count'],
};

/** The benchmark item as the public API stores it (tags as a Set). */
export const ibexValue = (it) => ({ title: it.title, count: it.count, tags: new Set(it.tags) });
