// The task board's data, kept in ibexdb through its public API only. One repository per board
// (`open(board)`), synced through an ibexdb-server; every commit is signed by the device's key.
//
//   lists/<id>   {name, order}
//   tasks/<id>   {id, title, notes, list, done, due ('YYYY-MM-DD' | null), tags: Set<string>,
//                 created, updated, createdBy}  + derived fields written in the same commit:
//                 titleLc (sorting by title), hasDue (sorting: dated tasks first), search
//                 (title, notes and tags in one string, under a full-text index: the search box)
//   people/<key> {name}       the display name a user gave their public key
//
// The schemas are stored in the board at SCHEMA_VERSION (open(..., {schemas, version,
// migrations})): version 1 added `search`, and its migration writes it for the tasks of a board
// made before (by the board's owner when they open the upgraded app; an older app's task that
// arrives later is migrated by the first upgraded device that sees it).
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
      search: { type: 'string' },
      created: { type: 'number' },
      updated: { type: 'number' },
    },
    indexes: ['id', 'list', 'updated', { field: 'search', kind: 'text' }],
  },
  people: { fields: { name: { type: 'string', required: true } } },
};

/** The version of SCHEMAS (stored in the board; an older app opens a newer board read-only). */
export const SCHEMA_VERSION = 1;

/**
 * The text the search box searches: title, notes and tags. The full-text index folds case and
 * accents and splits words itself.
 * @param {{title?: unknown, notes?: unknown, tags?: Iterable<string>}} t
 */
export const searchText = (t) => [String(t.title ?? ''), String(t.notes ?? ''), ...[...(t.tags ?? [])].sort()].join(' ').trim();

/** How a task of a board made before version n becomes one of version n. @type {Record<number, Record<string, import('ibexdb').Migration>>} */
export const MIGRATIONS = {
  1: { tasks: (t) => ({ ...t, search: searchText(/** @type {any} */ (t)) }) },
};

/** The words of a search (at most 32, at most 1,024 bytes: what `match` accepts), '' for none. @param {string} text */
export function searchWords(text) {
  const words = text.split(/[^\p{L}\p{N}\p{M}]+/u).filter(Boolean).slice(0, 32);
  const enc = new TextEncoder();
  while (words.length && enc.encode(words.join(' ')).length > 1024) words.pop();
  return words.join(' ');
}

/** @typedef {'created' | 'due' | 'title' | 'updated'} SortName */

/** How a column can be sorted (each is a query `sort`). @type {Record<SortName, {label: string, sort: import('ibexdb').Query['sort']}>} */
export const SORTS = {
  created: { label: 'Oldest first', sort: ['created'] },
  due: { label: 'Due date', sort: [{ field: 'hasDue', desc: true }, 'due', 'created'] },
  title: { label: 'Title', sort: ['titleLc', 'created'] },
  updated: { label: 'Recently changed', sort: [{ field: 'updated', desc: true }] },
};

/** Fields the app derives; the history view does not show them. */
export const DERIVED = new Set(['titleLc', 'notesLc', 'hasDue', 'updated', 'search']);

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
  // Every word, the last one possibly a prefix, in the title, notes or tags (the text index).
  const words = searchWords(search);
  if (words) and.push({ search: { match: words } });
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

/**
 * The fields an edit writes, with the derived ones that go with them. `current`: the task as it
 * is here (its search text is rebuilt from it and the edit).
 * @param {Record<string, any>} fields @param {Record<string, any> | undefined} current
 */
function withDerived(fields, current) {
  /** @type {Record<string, any>} */
  const out = { ...fields, updated: Date.now() };
  if ('title' in fields) out.titleLc = String(fields.title).toLowerCase();
  if ('due' in fields) out.hasDue = !!fields.due;
  if (current && ('title' in fields || 'notes' in fields || 'tags' in fields)) out.search = searchText({ ...current, ...fields });
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
    search: searchText({ title, tags }),
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

/**
 * Change some fields of a task (with its search text when the title or notes change: read from
 * the task as it is here, so an edit of another field made concurrently on another device is in
 * it only once that device's edit has arrived; the next edit of the task brings it up to date).
 * @param {import('ibexdb').Database} db @param {string} id @param {Record<string, any>} fields
 */
export async function updateTask(db, id, fields) {
  const current = 'title' in fields || 'notes' in fields ? await db.get(`tasks/${id}`) : undefined;
  await db.update(`tasks/${id}`, withDerived(fields, current));
}

/** Add or remove a tag (a set edit: concurrent edits of other tags all apply), and the search text. @param {import('ibexdb').Database} db @param {string} id @param {string} tag @param {boolean} add */
async function editTag(db, id, tag, add) {
  const current = await db.get(`tasks/${id}`);
  const tags = new Set(/** @type {Iterable<string>} */ (current?.tags ?? []));
  if (add) tags.add(tag);
  else tags.delete(tag);
  await db.transaction((tx) => {
    if (add) tx.setAdd(`tasks/${id}`, 'tags', [tag]);
    else tx.setRemove(`tasks/${id}`, 'tags', [tag]);
    tx.update(`tasks/${id}`, { updated: Date.now(), ...(current ? { search: searchText({ ...current, tags }) } : {}) });
  });
}

/** @param {import('ibexdb').Database} db @param {string} id @param {string} tag */
export function addTag(db, id, tag) {
  const t = tag.trim().replace(/^#/, '').toLowerCase();
  if (!t) return Promise.resolve();
  return editTag(db, id, t, true);
}

/** @param {import('ibexdb').Database} db @param {string} id @param {string} tag */
export const removeTag = (db, id, tag) => editTag(db, id, tag, false);

/** @param {import('ibexdb').Database} db @param {string} id */
export const deleteTask = (db, id) => db.delete(`tasks/${id}`);

/**
 * A name for a photo among `taken`: the file's (its first 60 characters, control characters
 * dropped: an attachment name is at most 255 bytes of UTF-8), or with ` (2)`, ` (3)`… before the
 * extension when the task already has a photo of that name.
 * @param {string} name @param {Set<string>} taken
 */
export function photoName(name, taken) {
  const base = [...name.trim()].filter((c) => !/\p{Cc}/u.test(c)).slice(0, 60).join('') || 'photo';
  if (!taken.has(base)) return base;
  const dot = base.lastIndexOf('.');
  const [stem, ext] = dot > 0 ? [base.slice(0, dot), base.slice(dot)] : [base, ''];
  for (let i = 2; ; i++) {
    const next = `${stem} (${i})${ext}`;
    if (!taken.has(next)) return next;
  }
}

/**
 * Attach photos to a task (each file streamed to this device's storage, its hash, size and type
 * recorded in a signed commit), then mark the task changed.
 * @param {import('ibexdb').Database} db @param {string} id @param {File[]} files
 */
export async function addPhotos(db, id, files) {
  const key = `tasks/${id}`;
  const taken = new Set((await db.attachments(key)).map((a) => a.name));
  for (const f of files) {
    const name = photoName(f.name, taken);
    taken.add(name);
    await db.attach(key, name, f, { type: f.type || 'application/octet-stream' });
  }
  await db.update(key, { updated: Date.now() });
}

/** @param {import('ibexdb').Database} db @param {string} id @param {string} name */
export async function removePhoto(db, id, name) {
  if (await db.detach(`tasks/${id}`, name)) await db.update(`tasks/${id}`, { updated: Date.now() });
}

/** @param {import('ibexdb').Database} db @param {string} name */
export const setMyName = (db, name) => db.put(`people/${db.publicKey}`, { name: name.trim() });
