// Live queries on the page: the latest rows of each, kept by applying the changes the worker
// sends (docs/design.md §11.1). `Database.live()` (ibexdb.js) makes them.

/** @typedef {import('./ibexdb.js').Item} Item */
/** @typedef {import('./ibexdb.js').Row} Row */
/**
 * @template {Item} [T=Item]
 * @typedef {import('./ibexdb.js').LiveQuery<T>} PublicLiveQuery
 */

/**
 * A live-query change as the engine sends it: `[id, value, pos]` rows, `[id, from, to]` moves.
 * @typedef {object} WireChange
 * @property {[string, any, number][]} added
 * @property {string[]} removed
 * @property {[string, any, number][]} changed
 * @property {[string, number, number][]} moved
 */

/**
 * Apply one live-query change to the previous rows (see LiveChange in the core): replace the
 * values of `changed`, drop `removed` and `moved`, insert `added` and `moved` at their new
 * positions in ascending order.
 * @param {Row[]} rows
 * @param {WireChange} ch
 * @returns {Row[]}
 */
export function applyChange(rows, ch) {
  const changed = new Map();
  for (const [id, value] of ch.changed) changed.set(id, value);
  const removed = new Set(ch.removed);
  const moved = new Set();
  for (const [id] of ch.moved) moved.add(id);
  /** @type {Row[]} */
  const out = [];
  /** @type {Map<string, Row>} */
  const moving = new Map();
  for (const r of rows) {
    const row = changed.has(r.id) ? { id: r.id, value: changed.get(r.id) } : r;
    if (moved.has(r.id)) moving.set(r.id, row);
    else if (!removed.has(r.id)) out.push(row);
  }
  /** @type {[number, Row][]} */
  const ins = [];
  for (const [id, value, pos] of ch.added) ins.push([pos, { id, value }]);
  for (const [id, , to] of ch.moved) ins.push([to, moving.get(id) ?? { id, value: changed.get(id) }]);
  ins.sort((a, b) => a[0] - b[0]);
  for (const [p, row] of ins) out.splice(Math.min(p, out.length), 0, row);
  return out;
}

/**
 * The public form of a wire change.
 * @param {WireChange} ch
 * @returns {import('./ibexdb.js').LiveChange}
 */
export function publicChange(ch) {
  return {
    added: ch.added.map(([id, value, pos]) => ({ id, value, pos })),
    removed: ch.removed,
    changed: ch.changed.map(([id, value, pos]) => ({ id, value, pos })),
    moved: ch.moved.map(([id, from, to]) => ({ id, from, to })),
  };
}

/**
 * A live query: `results` is always the latest snapshot (replaced, never mutated).
 * @template {Item} [T=Item]
 * @implements {PublicLiveQuery<T>}
 */
export class LiveQuery {
  /**
   * @param {() => void} onClose tells the database (it stops the worker's live query)
   * @param {((rows: import('./ibexdb.js').Row<T>[], change: import('./ibexdb.js').LiveChange<T> | null) => void) | undefined} onChange
   */
  constructor(onClose, onChange) {
    this._onClose = onClose;
    this._onChange = onChange;
    /** @type {import('./ibexdb.js').Row<T>[]} */
    this.results = [];
    /** The engine instance its live id belongs to (changes of another epoch are not its). */
    this._epoch = '';
    this._liveId = -1;
    this.closed = false;
  }

  /** @param {import('./ibexdb.js').Row<T>[]} rows @param {import('./ibexdb.js').LiveChange<T> | null} change */
  _set(rows, change) {
    this.results = rows;
    if (this._onChange) {
      try {
        this._onChange(rows, change);
      } catch (e) {
        // An app callback error must not break delivery to other live queries.
        queueMicrotask(() => {
          throw e;
        });
      }
    }
  }

  /** Stop receiving updates. */
  close() {
    if (this.closed) return;
    this.closed = true;
    this._onClose();
  }
}
