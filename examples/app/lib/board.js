// The task board's data, kept in ibexdb through its public API only. One repository per board
// (`open(board)`), synced through an ibexdb-server; every commit is signed by the device's key.
//
//   lists/<id>   {name, order}
//   tasks/<id>   {id, title, notes, list, done, due ('YYYY-MM-DD' | null), tags: Set<string>,
//                 created, updated, createdBy}  + derived fields written in the same commit:
//                 titleLc, notesLc (search), hasDue (sorting: dated tasks first)
//   people/<key> {name}       the display name a user gave their public key
//
// Concurrent edits merge per field (the later edit of a field wins, by the commits' hybrid
// clocks); tags are a set, so concurrent additions and removals of different tags all apply.
// Derived fields are written together with their source field, so they always agree with it.

/** @type {Record<string, import('ibexdb').Schema>} */
export const SCHEMAS = {
  lists: {
    fields: { name: { type: 'string', required: true }, order: { type: 'number', required: true } },
    indexes: ['order'],
  },
  tasks: {
    fields: {
      id: { type: 'string', required: true },
      title: { type: 'string', required: true },
      list: { type: 'string', required: true },
      done: { type: 'boolean' },
      due: { type: 'string', nullable: true },
      tags: { type: 'set' },
      notes: { type: 'string' },
      created: { type: 'number' },
      updated: { type: 'number' },
    },
    indexes: ['id', 'list', 'updated'],
  },
  people: { fields: { name: { type: 'string', required: true } } },
};

/** @typedef {'created' | 'due' | 'title' | 'updated'} SortName */

/** How a column can be sorted (each is a query `sort`). @type {Record<SortName, {label: string, sort: import('ibexdb').Query['sort']}>} */
export const SORTS = {
  created: { label: 'Oldest first', sort: ['created'] },
  due: { label: 'Due date', sort: [{ field: 'hasDue', desc: true }, 'due', 'created'] },
  title: { label: 'Title', sort: ['titleLc', 'created'] },
  updated: { label: 'Recently changed', sort: [{ field: 'updated', desc: true }] },
};

/** Fields the app derives; the history view does not show them. */
export const DERIVED = new Set(['titleLc', 'notesLc', 'hasDue', 'updated']);

/** A new id: time-ordered, unique across devices. */
export const newId = () => `${Date.now().toString(36)}-${crypto.getRandomValues(new Uint32Array(1))[0].toString(36)}`;

/**
 * The live query of one column: the tasks of `list`, filtered and sorted.
 * @param {string} list
 * @param {{search?: string, tag?: string | null, sort?: SortName, hideDone?: boolean}} f
 */
export function columnQuery(list, { search = '', tag = null, sort = 'created', hideDone = false } = {}) {
  /** @type {Record<string, any>[]} */
  const and = [{ list }];
  const q = search.trim().toLowerCase();
  if (q) and.push({ or: [{ titleLc: { includes: q } }, { notesLc: { includes: q } }, { tags: { contains: q.replace(/^#/, '') } }] });
  if (tag) and.push({ tags: { contains: tag } });
  if (hideDone) and.push({ done: false });
  return { collection: 'tasks', where: { and }, sort: (SORTS[sort] ?? SORTS.created).sort };
}

/** `title #tag1 #tag2` -> { title, tags } (tags in lower case). @param {string} text */
export function parseQuickAdd(text) {
  const tags = new Set();
  const title = text
    .replace(/(^|\s)#([\p{L}\p{N}_-]+)/gu, (_, sp, t) => {
      tags.add(t.toLowerCase());
      return sp;
    })
    .replace(/\s+/g, ' ')
    .trim();
  return { title: title || text.trim(), tags };
}

/** The fields an edit writes, with the derived ones that go with them. @param {Record<string, any>} fields */
function withDerived(fields) {
  /** @type {Record<string, any>} */
  const out = { ...fields, updated: Date.now() };
  if ('title' in fields) out.titleLc = String(fields.title).toLowerCase();
  if ('notes' in fields) out.notesLc = String(fields.notes).toLowerCase();
  if ('due' in fields) out.hasDue = !!fields.due;
  return out;
}

/** @param {import('ibexdb').Database} db @param {string} name */
export async function addList(db, name) {
  const id = newId();
  await db.put(`lists/${id}`, { name: name.trim(), order: Date.now() });
  return id;
}

/** @param {import('ibexdb').Database} db */
export async function addDefaultLists(db) {
  const now = Date.now();
  await db.transaction((tx) => {
    ['To do', 'Doing', 'Done'].forEach((name, i) => tx.put(`lists/${newId()}-${i}`, { name, order: now + i }));
  });
}

/** @param {import('ibexdb').Database} db @param {string} id @param {string} name */
export const renameList = (db, id, name) => db.update(`lists/${id}`, { name: name.trim() });

/** Delete a list and its tasks, in one commit. @param {import('ibexdb').Database} db @param {string} id */
export async function deleteList(db, id) {
  const tasks = await db.query({ collection: 'tasks', where: { list: id }, select: ['id'] });
  await db.transaction((tx) => {
    for (const t of tasks) tx.delete(`tasks/${t.id}`);
    tx.delete(`lists/${id}`);
  });
}

/**
 * @param {import('ibexdb').Database} db
 * @param {string} list
 * @param {string} text the quick-add text (`#tags` become tags)
 */
export async function addTask(db, list, text) {
  const { title, tags } = parseQuickAdd(text);
  const id = newId();
  const now = Date.now();
  await db.put(`tasks/${id}`, {
    id,
    title,
    titleLc: title.toLowerCase(),
    notes: '',
    notesLc: '',
    list,
    done: false,
    due: null,
    hasDue: false,
    tags,
    created: now,
    updated: now,
    createdBy: db.publicKey ?? '',
  });
  return id;
}

/** Change some fields of a task. @param {import('ibexdb').Database} db @param {string} id @param {Record<string, any>} fields */
export const updateTask = (db, id, fields) => db.update(`tasks/${id}`, withDerived(fields));

/** @param {import('ibexdb').Database} db @param {string} id @param {string} tag */
export function addTag(db, id, tag) {
  const t = tag.trim().replace(/^#/, '').toLowerCase();
  if (!t) return Promise.resolve();
  return db.transaction((tx) => {
    tx.setAdd(`tasks/${id}`, 'tags', [t]);
    tx.update(`tasks/${id}`, { updated: Date.now() });
  });
}

/** @param {import('ibexdb').Database} db @param {string} id @param {string} tag */
export const removeTag = (db, id, tag) =>
  db.transaction((tx) => {
    tx.setRemove(`tasks/${id}`, 'tags', [tag]);
    tx.update(`tasks/${id}`, { updated: Date.now() });
  });

/** @param {import('ibexdb').Database} db @param {string} id */
export const deleteTask = (db, id) => db.delete(`tasks/${id}`);

/** @param {import('ibexdb').Database} db @param {string} name */
export const setMyName = (db, name) => db.put(`people/${db.publicKey}`, { name: name.trim() });
