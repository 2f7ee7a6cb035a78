// Types of the public module, www/lib/ibexdb.js (re-exported by www/ibexdb.js and
// www/ibexdb.d.ts); hand-written, type-checked by `make tsc` against tests/types/app.ts, and the
// implementation (ibexdb.js, checkJs) against it.

/**
 * Bytes: a `Uint8Array` (a Node `Buffer` is one) or an `ArrayBuffer` when written, always a
 * `Uint8Array` when read. Compared byte-wise; at most 16 MiB in an item (TooLargeError). Other
 * typed arrays and `DataView`s are refused (wrap their bytes in a `Uint8Array`).
 */
export type Bytes = Uint8Array | ArrayBuffer;

/** A value that can be stored: JSON plus `Set<string>` (a set that merges element-wise) and bytes. */
export type Value = null | boolean | number | string | Bytes | Value[] | Set<string> | { [field: string]: Value | undefined };

/** An item: a plain object of values. */
export type Item = { [field: string]: Value | undefined };

/** `collection/id`: collection of `[A-Za-z0-9_-]{1,64}`, id of 1–512 bytes. */
export type Key = string;

/** One row of a query or live query. */
export interface Row<T = Item> {
  id: string;
  value: T;
}

/** A field condition: a literal means `eq`. */
export type Condition =
  | Value
  | {
      eq?: Value;
      ne?: Value;
      lt?: Value;
      lte?: Value;
      gt?: Value;
      gte?: Value;
      in?: Value[];
      /** A set (or list) field contains this element. */
      contains?: Value;
      /** A string starts with this prefix. */
      prefix?: string;
      /** A string contains this substring. */
      includes?: string;
      /**
       * Full-text search: the string holds every word of this search (case- and accent-folded),
       * the last one as a prefix. Ranked (BM25) when a `text` index serves it and there is no sort.
       * At most 1024 bytes and 32 words (else QueryError).
       */
      match?: string;
      [op: string]: unknown;
    };

/**
 * `$id` in a query's `where` (top level only): the item's id is this one, one of these, or
 * starts with this prefix. Served by lookups, not a scan: a live query with it is told only of
 * writes to those items.
 */
export type IdCondition = string | { eq: string } | { in: string[] } | { prefix: string };

/** A `where` clause: dotted field paths to conditions, combined with and/or/not. */
export interface Where {
  and?: Where[];
  or?: Where[];
  not?: Where;
  /** The item's id (only at the top level of a query's where; not in count). */
  $id?: IdCondition;
  [path: string]: Condition | Where[] | Where | undefined;
}

export interface SortKey {
  field: string;
  desc?: boolean;
}

export interface Query {
  collection: string;
  where?: Where;
  /** Sort keys; a bare path sorts ascending. Ties break by id. */
  sort?: (SortKey | string)[];
  limit?: number;
  offset?: number;
  /** Field paths to return (whole items when absent). */
  select?: string[];
  /**
   * Keyset paging: only rows strictly after this cursor (from `page()`); a cursor is valid for
   * the collection and sort it came with (else QueryError). Not with `offset`.
   */
  after?: string;
}

/** A page of a query (`db.page`): its rows and the cursor after the last (for `after`). */
export interface Page<T = Item> {
  rows: Row<T>[];
  /** null when the query has no limit or the page no rows. */
  cursor: string | null;
}

export type Aggregate = { count: true | string } | { sum: string } | { min: string } | { max: string } | { avg: string };

export interface AggregateQuery {
  collection: string;
  where?: Where;
  /** Output name -> function. */
  aggregates: Record<string, Aggregate>;
  groupBy?: string;
}

export type FieldType = 'any' | 'null' | 'boolean' | 'number' | 'integer' | 'string' | 'bytes' | 'list' | 'map' | 'set';

/** An index declared as an object: its field path and kind (default 'sorted'). */
export interface IndexSpec {
  field: string;
  kind?: 'sorted' | 'text';
}

export interface Schema {
  fields?: Record<string, { type?: FieldType; required?: boolean; nullable?: boolean; default?: Value }>;
  /**
   * Indexes: a field path (or `{field, kind: 'sorted'}`) gets a sorted secondary index (equality,
   * range, sort; set elements for `contains`); `{field, kind: 'text'}` a full-text index serving
   * `match` (tokens case- and accent-folded, ranked by BM25).
   */
  indexes?: (string | IndexSpec)[];
  /** Accept fields not listed in `fields` (default true). */
  allowOtherFields?: boolean;
}

export interface OpenOptions {
  /**
   * 'flush' (default): a write resolves after it is flushed to disk (OPFS; IndexedDB: its
   * transaction completed; calls of one tick share one flush). 'relaxed': a write resolves once applied in memory and is flushed within ~50 ms.
   */
  durability?: 'flush' | 'relaxed';
  /** Unsigned commits (no identity). Default false: commits are signed with ECDSA P-384. */
  trusted?: boolean;
  /**
   * An identity from `exportIdentity()` (e.g. from another device) to sign with and keep: wrapped
   * (`exportIdentity({passphrase})`, with `passphrase`), or in the clear.
   */
  identity?: string;
  /**
   * The passphrase of a wrapped `identity` (required with one, refused without one). A wrong
   * passphrase (or changed bytes) rejects with `PassphraseError`; nothing is opened or stored.
   */
  passphrase?: string;
  /**
   * Schemas to declare on open. Without `version` they are local (checked on this device's
   * writes only; declare them on every open). With `version` they are also the repository's
   * stored schemas at that version (docs/design.md §2.4): signed `_schema` items, checked by
   * every replica on every commit.
   */
  schemas?: Record<string, Schema>;
  /**
   * The schema version this application understands (a whole number from 1). An owner's
   * application newer than the stored schemas upgrades them on open (running `migrations`);
   * one older than the stored schemas opens read-only: `db.readOnly` is a SchemaVersionError
   * and so is every write (what it wrote before is kept, and migrated by upgraded devices).
   */
  version?: number;
  /**
   * `{2: (item, info) => newItem, 3: {tasks: (item) => newItem}}`: how an item of version
   * `n − 1` becomes one of version `n`, for every collection (a function) or per collection.
   * Run eagerly on upgrade, as commits, and again for items written by older applications
   * that arrive later. A migration must be a pure function of the item. One that throws, or
   * returns something that is not a plain object, fails open() with MigrationError and writes
   * nothing.
   */
  migrations?: Record<number, Migration | Record<string, Migration>>;
  /** Progress of a migration: after each commit of migrated items. */
  onMigrationProgress?: (progress: { version: number; done: number; total: number }) => void;
  /** Damage in the middle of the log: 'strict' (default) fails with CorruptError, 'repair' pads over it. */
  recovery?: 'strict' | 'repair';
  /**
   * A byte limit for this repository's files, log and snapshot together (QuotaExceededError
   * beyond it; the failed write is not kept). Deleting items frees nothing (every change is a
   * signed commit the history keeps); at the limit the snapshot gives its bytes to the log, and
   * close() still succeeds. A higher limit makes room (docs/design.md §11.5).
   */
  quotaBytes?: number;
  /**
   * Sync with an ibexdb-server at this URL (`ws://127.0.0.1:8787`), or with the nodes of one
   * deployment (`['wss://a.example', 'wss://b.example']`, at most 16, each at most 200
   * characters): the first is dialed, a failed dial, dropped connection or UnavailableError
   * moves to the next; see `Database.sync`.
   */
  sync?: string | string[];
  /**
   * An invite link from `db.invite()` (needs `sync`): while the server keeps this new device's
   * session waiting (its key is in no access list), the device redeems the invite and is
   * welcomed with the invite's role. A used-up, expired, revoked or forged invite is a
   * PermissionError (kind 'invite-used', 'invite-expired', 'invite-revoked', 'invite-invalid')
   * from `db.sync()`.
   */
  invite?: string;
  /**
   * The application's bearer token for a server started with `--auth-jwks` (its identity
   * provider's JWT): a string, or a function (sync or async) returning one, called before every
   * dial so a reconnect carries a fresh token (the server ends a session when its token expires,
   * and the next dial asks again). The browser offers it as the WebSocket subprotocol
   * `ibexdb.bearer.TOKEN`, Node as an `Authorization: Bearer` header. A function that throws,
   * returns no string or takes over 10 s: AuthError kind 'token-unavailable' in the sync
   * status (`db.sync()` rejects with it); a token the server refuses: its AuthError kind
   * ('token-expired', 'token-scope', ...). In the browser the tab that owns the files asks its
   * own page.
   */
  syncToken?: string | (() => string | Promise<string>);
  /**
   * The public key (`db.publicKey`, 98 hex digits) of the device that founds this repository.
   * A repository whose root was written by another key (a squatter who took the name first)
   * is refused with PermissionError kind 'wrong-founder' and nothing of it is applied; a
   * device with another key cannot found it either (its first write is refused alike).
   */
  owner?: string;
  /**
   * Found the repository end-to-end encrypted (docs/design.md §6.8): values, field names and
   * collection names are sealed (AES-256-GCM under an epoch key) before a commit is signed; the
   * sync server stores, verifies and relays ciphertext. Fixed at creation (recorded in the
   * root); ignored when the repository exists. `grant` wraps the keys to the new member,
   * `revoke` starts a new epoch. A member with no key for some data gets nothing of it (and
   * its writes are refused with DecryptError kind 'missing-key').
   */
  encrypted?: boolean;
  /** Errors of background work (a relaxed flush, a seal) — console.warn when absent. */
  onError?: (error: IbexError) => void;
  /**
   * Where the files live. 'auto' (default): OPFS where the browser's workers have sync access
   * handles, else IndexedDB (WebKitGTK, older Safari, some WebViews). 'opfs', 'indexeddb': that
   * one or a StorageUnavailableError. 'memory': in the worker's memory only, gone at close (a
   * private window that keeps no site data). `Database.storage` says which was used.
   */
  storage?: StorageOption;
  /**
   * Ask the browser for persistent storage in the background once open (default true). open()
   * never waits for the answer (Firefox answers only when the user answers its prompt). false:
   * the app asks itself with `db.persist()`, e.g. from a click. `db.persisted` tells the outcome.
   */
  persist?: boolean;
}

/** One migration step (`OpenOptions.migrations`): item of version `from` -> item of version `to`. */
export type Migration = (item: Item, info: { collection: string; id: string; key: string; from: number; to: number }) => Item;

/** What `open()`'s `storage` option accepts. */
export type StorageOption = 'auto' | 'opfs' | 'indexeddb' | 'memory';
/** Where an open database's files are (`Database.storage`). */
export type StorageKind = 'opfs' | 'indexeddb' | 'memory';

export interface LiveChangeRow<T = Item> {
  id: string;
  value: T;
  pos: number;
}

/** What changed in a live query's rows (positions index the new rows). */
export interface LiveChange<T = Item> {
  added: LiveChangeRow<T>[];
  removed: string[];
  changed: LiveChangeRow<T>[];
  moved: { id: string; from: number; to: number }[];
}

export interface LiveQuery<T = Item> {
  /** The latest rows; replaced (never mutated) on every change. */
  readonly results: Row<T>[];
  readonly closed: boolean;
  close(): void;
}

// ----- typed collections (`db.collection<T>(name)`) ------------------------------------------

/**
 * What an app's item type must be: an object whose fields are storable values (an interface
 * qualifies; a field of type Date or a function does not).
 */
export type ItemShape<T> = { [K in keyof T]: Value | undefined };

/** Depth limit of field paths (`a.b.c.d`). */
type PathDepth = [never, 0, 1, 2, 3];

/** The dotted field paths of an item type: `'title'`, `'meta.owner'`, ... (maps nested 4 deep). */
export type FieldPath<T, D extends number = 4> = [D] extends [never]
  ? never
  : {
      [K in keyof T & string]: NonNullable<T[K]> extends Value[] | Set<string> | Bytes
        ? K
        : NonNullable<T[K]> extends object
          ? K | `${K}.${FieldPath<NonNullable<T[K]>, PathDepth[D]>}`
          : K;
    }[keyof T & string];

/** The type at a dotted field path of an item type. */
export type PathValue<T, P extends string> = P extends keyof T
  ? T[P]
  : P extends `${infer K}.${infer R}`
    ? K extends keyof T
      ? PathValue<NonNullable<T[K]>, R>
      : never
    : never;

/** What `contains` takes for a field: an element of a set or list. */
type ElementOf<V> = V extends Set<infer E> ? E : V extends (infer E)[] ? E : never;

/** A condition on a field of type V: a literal (eq) or operators over V. */
export type FieldCondition<V> =
  | NonNullable<V>
  | null
  | {
      eq?: NonNullable<V> | null;
      ne?: NonNullable<V> | null;
      lt?: NonNullable<V>;
      lte?: NonNullable<V>;
      gt?: NonNullable<V>;
      gte?: NonNullable<V>;
      in?: (NonNullable<V> | null)[];
      contains?: ElementOf<NonNullable<V>>;
      prefix?: NonNullable<V> extends string ? string : never;
      includes?: NonNullable<V> extends string ? string : never;
      match?: NonNullable<V> extends string ? string : never;
    };

/** A `where` over an item type's field paths (the untyped `Where` for an index-signature type). */
export type TypedWhere<T> = string extends keyof T
  ? Where
  : { [P in FieldPath<T>]?: FieldCondition<PathValue<T, P>> } & { and?: TypedWhere<T>[]; or?: TypedWhere<T>[]; not?: TypedWhere<T>; $id?: IdCondition };

/** A sort key over an item type's field paths. */
export type TypedSortKey<T> = string extends keyof T ? SortKey | string : FieldPath<T> | { field: FieldPath<T>; desc?: boolean };

/** A query of a collection handle: the collection is the handle's; whole items (no `select`). */
export interface CollectionQuery<T> {
  where?: TypedWhere<T>;
  /** Sort keys; a bare path sorts ascending. Ties break by id. */
  sort?: TypedSortKey<T>[];
  limit?: number;
  offset?: number;
  /** Keyset paging: rows strictly after this cursor (from `page()`). */
  after?: string;
}

/** A query of one collection typed by its item type (what `useLive` of `ibexdb/react` takes). */
export interface TypedQuery<T> extends CollectionQuery<T> {
  collection: string;
}

/**
 * `db.collection<T>(name)`: one collection with ids instead of keys, typed by its item type.
 * Every method checks its arguments as the database's do (InvalidKeyError for an id that is not
 * a non-empty string, QueryError for a query that is not an object).
 */
export interface Collection<T extends ItemShape<T> = Item> {
  readonly name: string;
  /** The key `name/id`. */
  key(id: string): Key;
  get(id: string): Promise<T | undefined>;
  getMany(ids: string[]): Promise<(T | undefined)[]>;
  put(id: string, value: T): Promise<void>;
  update(id: string, fields: Partial<T>): Promise<void>;
  delete(id: string): Promise<void>;
  query(q?: CollectionQuery<T>): Promise<Row<T>[]>;
  live(q?: CollectionQuery<T>, onChange?: (results: Row<T>[], change: LiveChange<T> | null) => void): Promise<LiveQuery<T>>;
  /** A page and the cursor after it (`db.page`). */
  page(q?: CollectionQuery<T>): Promise<Page<T>>;
  count(where?: TypedWhere<T>): Promise<number>;
  /** Ids of the collection's items, in order. */
  keys(): Promise<string[]>;
}

export interface HistoryEntry {
  commit: string;
  /** Public key (hex) of the author. */
  author: string;
  /** Wall-clock milliseconds of the commit. */
  time: number;
  hlc: string;
  trusted: boolean;
  op:
    | { type: 'put'; value: Item }
    | { type: 'delete' }
    | {
        type: 'patch';
        fields: Record<string, { assign: Value } | { unset: true } | { add: string[]; remove: string[] }>;
        /** Attachments the commit attached or detached, by name (absent when none). */
        attachments?: Record<string, { attach: { hash: string; size: number; type: string } } | { detach: true }>;
      };
}

export interface VerifyReport {
  commits: number;
  seals: number;
  /** Seal signatures verified (every seal's). */
  signaturesVerified: number;
  /**
   * Who verified them: the browser's WebCrypto (while the engine ran every other check), or
   * the engine's own P-384 (no WebCrypto here, no seals, or a signature failed: then the
   * engine reports which).
   */
  signatureEngine: 'webcrypto' | 'core';
  trustedCommits: number;
  /** Local commits not sealed yet (they will be; not an error). */
  unsealed: number;
  items: number;
  logBytes: number;
  snapshotChecked: boolean;
}

export interface StorageInfo {
  /** `navigator.storage.estimate()` for the whole origin. */
  usage: number;
  quota: number;
  /** Whether the browser granted persistent storage (`navigator.storage.persisted()`). */
  persisted: boolean;
  /** `totalBytes` counts the attachment files too; `attachmentBytes` is theirs alone (files kept until the next open reclaims them). */
  repository: { logBytes: number; snapshotBytes: number; totalBytes: number; attachmentBytes: number; items: number; commits: number };
}

/** What a commit records of an attachment (docs/design.md §6.7). */
export interface Attachment {
  name: string;
  /** SHA-256 of the bytes, 64 lowercase hex digits. */
  hash: string;
  size: number;
  /** Media type (`''` when none was given). */
  type: string;
}

export interface ReceiveReport {
  applied: number;
  duplicates: number;
  /** Commits waiting for missing parents. */
  pending: number;
}

/**
 * Where sync stands (`db.syncStatus()`, `db.onSyncStatus`). `state`:
 * - `off`: sync was never started, or was stopped (`db.sync(null)`).
 * - `offline`: no connection to the server: dialing, or waiting before the next try (backoff
 *   with jitter; `lastError` says what failed). A server that answers `UnavailableError` (it is
 *   shutting down, e.g. for a deploy, or cannot serve now) is offline too, not `error`.
 * - `online`: connected; the handshake (challenge, signed Hello) is under way.
 * - `syncing`: the server welcomed this replica; it is still receiving what the server had at
 *   the Welcome, or local commits wait for the server's acknowledgement.
 * - `synced`: everything the server had at the Welcome is here (later commits arrive live) and
 *   the server acknowledged every local commit.
 * - `error`: the server refused this replica: its session at the handshake (`PermissionError`
 *   kind `cannot-read`, `AuthError`; asked again only every 10 s), or a push (`PermissionError`
 *   kind `cannot-write`: pushing pauses until a grant arrives; other refusals until the next
 *   acknowledgement or connection). `lastError` is the refusal.
 */
export interface SyncStatus {
  state: 'off' | 'offline' | 'online' | 'syncing' | 'synced' | 'error';
  /** The server dialed now (of `urls`), normalized (`new URL(url).href`), or null when off. */
  url: string | null;
  /** Every server of the deployment (normalized, in the order dialed), or null when off. */
  urls: string[] | null;
  /** Last server sequence received. */
  cursor: number;
  /**
   * Local commit-table entries before this one are known to the server (from the position
   * persisted with the repository as soon as sync starts, before any connection).
   */
  pushFrom: number;
  /** Local commits the server has not acknowledged yet (offline and after a reload too). */
  pending: number;
  /** The server's last sequence, as last heard. */
  serverHead: number | null;
  /** What the server's Welcome said this replica's session may do (null before it). */
  rights: { read: boolean; write: boolean; administer: boolean } | null;
  /** Connection attempts so far. */
  connects: number;
  /** Commits this worker received from the server (applied, or already held). */
  received: number;
  /** Push messages sent. */
  pushed: number;
  /** Commits the server acknowledged as stored. */
  acked: number;
  /**
   * The last failure: the server's refusal as its error class (`PermissionError`, `AuthError`,
   * `LimitError`, `UnavailableError`, `SignatureError`, ... with `code`, the protocol error
   * code), or a local/connection failure.
   */
  lastError: IbexError | null;
  /** The position last persisted with the repository (a reload or another tab resumes from it). */
  saved: { cursor: number; pushFrom: number } | null;
}

export type Role = 'owner' | 'writer' | 'reader';

/** The access list as a replica knows it (`db.members()`). */
export interface Members {
  /** Whether the repository has owners (a signed repository's first commit makes its author one). */
  owned: boolean;
  /** What anyone may do. */
  public: { read: boolean; write: boolean };
  members: { publicKey: string; role: Role }[];
}

/** An invite as the access list knows it (`db.invites()`). */
export interface Invite {
  id: string;
  /** Null once revoked. */
  role: Role | null;
  /** The last millisecond (since the epoch) a redemption may be stamped; null once revoked. */
  expires: number | null;
  uses: number | null;
  /** Redemptions that gave a role. */
  used: number;
  revoked: boolean;
}

export interface Transaction {
  put(key: Key, value: Item): this;
  update(key: Key, fields: Item): this;
  delete(key: Key): this;
  unset(key: Key, field: string): this;
  setAdd(key: Key, field: string, elements: Iterable<string> | string): this;
  setRemove(key: Key, field: string, elements: Iterable<string> | string): this;
}

export declare class Database {
  readonly name: string;
  /**
   * This device's public key for this repository (98 hex digits, a compressed P-384 point): it
   * signs the commits made here, and it is what another replica's owner passes to `grant`. Null
   * in trusted mode. (Its secret half is the identity: `exportIdentity()`, `options.identity`.)
   */
  readonly publicKey: string | null;
  /**
   * With `open(name, { sync, invite })`: what the link did once synced — 'redeemed' (this
   * device got the link's role: as a new device the server kept waiting, or as one that already
   * read with a lower role), 'kept' (it already had that role or a higher one: the link was not
   * used and keeps its use), or the typed error (a refused link: PermissionError 'invite-used',
   * …). Never rejects. Null without `invite`.
   */
  readonly invited: Promise<'redeemed' | 'kept' | Error> | null;
  readonly trusted: boolean;
  readonly durability: 'flush' | 'relaxed';
  /** Where the files are: what `storage: 'auto'` chose, or what was asked for. */
  readonly storage: StorageKind;
  /** 'owner' if this tab's worker holds the files, 'client' if it reaches another tab's. */
  readonly role: 'owner' | 'client';
  /**
   * Whether the browser has granted this origin persistent storage (it then does not evict the
   * data under storage pressure), as last known: read on open, updated when `persist()` or the
   * background request of `options.persist` is answered. False where the browser cannot say.
   */
  readonly persisted: boolean;
  /**
   * Null, or why this application may not write: the SchemaVersionError its writes get (the
   * repository's stored schemas are at `stored`, newer than `open()`'s `version`).
   */
  readonly readOnly: SchemaVersionError | null;
  /** The repository's stored schema version as last read (0: none); null without `open()`'s `version`. */
  readonly schemaVersion: number | null;

  get<T extends Item = Item>(key: Key): Promise<T | undefined>;
  getMany<T extends Item = Item>(keys: Key[]): Promise<(T | undefined)[]>;
  put(key: Key, value: Item): Promise<void>;
  update(key: Key, fields: Item): Promise<void>;
  delete(key: Key): Promise<void>;
  transaction<R>(fn: (tx: Transaction) => R): Promise<R>;

  /**
   * Store a file beside the item at `key` under `name` (the item must exist: NotFoundError).
   * The bytes are streamed into this device's storage, named by their SHA-256 (identical
   * bytes are stored once), then a commit records `{name, hash, size, type}`; a later attach
   * of the same name replaces it. `type` defaults to the Blob's. A full disk or `quotaBytes`
   * is QuotaExceededError with nothing written.
   */
  attach(key: Key, name: string, data: Blob | ArrayBuffer | Uint8Array | ReadableStream<Uint8Array>, options?: { type?: string }): Promise<Attachment>;
  /**
   * The bytes of attachment `name`, as a Blob of its type (read from the file when the Blob
   * is). AttachmentNotFoundError when the item has no such attachment;
   * AttachmentUnavailableError when this device has the record but not the bytes and cannot
   * fetch them (no sync connection, or the server does not hold them). Connected, missing
   * bytes are fetched from the sync server first and stored only if their SHA-256 is the
   * recorded one (SignatureError otherwise); the server's refusal (PermissionError, …) is thrown.
   */
  attachment(key: Key, name: string): Promise<Blob>;
  /** Remove attachment `name`; false when there was none. The file goes at the next open when no item refers to it. */
  detach(key: Key, name: string): Promise<boolean>;
  /** The item's attachments, by name (empty when none or no item). */
  attachments(key: Key): Promise<Attachment[]>;

  query<T extends Item = Item>(q: Query): Promise<Row<T>[]>;
  /** A page of a query and the cursor after its last row, for `query({...q, after: cursor})`. */
  page<T extends Item = Item>(q: Query): Promise<Page<T>>;
  explain(q: Query): Promise<Record<string, unknown>>;
  count(collection: string, where?: Where): Promise<number>;
  keys(collection: string): Promise<string[]>;
  /** `{name: value, ...}`; with `groupBy`, `{groups: [{key, name: value, ...}, ...]}` in key order. */
  aggregate(q: AggregateQuery): Promise<Record<string, Value>>;
  /** `onChange` gets the first results (change null), then every update; `results` is the latest snapshot. */
  live<T extends Item = Item>(q: Query, onChange?: (results: Row<T>[], change: LiveChange<T> | null) => void): Promise<LiveQuery<T>>;
  history(key: Key): Promise<HistoryEntry[]>;
  /** A handle on one collection, typed by its item type: `db.collection<Task>('tasks')`. */
  collection<T extends ItemShape<T> = Item>(name: string): Collection<T>;

  defineSchema(collection: string, schema: Schema): Promise<void>;
  flush(): Promise<void>;
  /** Seal, flush and snapshot (if due) now, what the worker's timers would do later; nothing left pending. */
  settle(): Promise<void>;
  verify(): Promise<VerifyReport>;
  /**
   * This device's identity (its secret key), for `open(name, {identity})` on another device; null
   * in trusted mode. With `{passphrase}`: wrapped under it (PBKDF2-SHA-256, 600,000 iterations;
   * AES-256-GCM), `"ibexdb-wrapped-identity-v1:"` + 128 base64url characters. Without: the
   * secret in the clear (`"ibexdb-identity-v1:"` + 96 hex digits), the advanced path: anyone who
   * reads it can sign as this device.
   */
  exportIdentity(options?: { passphrase: string }): Promise<string | null>;
  exportCommits(): Promise<Uint8Array<ArrayBuffer>>;
  receive(bundle: Uint8Array): Promise<ReceiveReport>;
  storageInfo(): Promise<StorageInfo>;
  /**
   * Ask the browser for persistent storage (`navigator.storage.persist()`); resolves to whether
   * it is granted (and sets `persisted`). Chromium decides at once from how the site is used
   * (installed, bookmarked); Firefox shows a prompt and resolves only when the user answers it
   * (call it from a click); false where the browser has no such request.
   */
  persist(): Promise<boolean>;
  /** Give a key a role (only an owner may; PermissionError otherwise). */
  grant(publicKey: string, role: Role): Promise<void>;
  /** Take a key's role away (PermissionError for the last owner). */
  revoke(publicKey: string): Promise<void>;
  /** What anyone may do (only an owner may change it). */
  setPublic(flags: { read: boolean; write: boolean }): Promise<void>;
  members(): Promise<Members>;
  /**
   * Invite a device (owners only): a one-time link (the secret in its `#ibexdb-invite=`
   * fragment, never sent to a server) that gives `role` to whoever opens it with
   * `open(name, { sync, invite: link })`, until `expires` (default 7 days), `uses` times
   * (default 1). `base` is the page the link opens (default `location.href`).
   */
  invite(options: { role: Role; expires?: Date | number; uses?: number; base?: string }): Promise<{ link: string; id: string }>;
  /**
   * Redeem an invite link on a device that already reads the repository (e.g. a reader given a
   * writer link): one commit giving this key the link's role (true); false, nothing written and
   * the link's use kept, when this key already has that role or a higher one;
   * PermissionError 'invite-used', 'invite-expired', 'invite-revoked' or 'invite-invalid'
   * otherwise (also 'invite-invalid' when an owner's grant or revocation sets this key's role,
   * which a link does not change), nothing written.
   */
  redeem(link: string): Promise<boolean>;
  /** The invites of the access list. */
  invites(): Promise<Invite[]>;
  /** Revoke an invite before it is used up (owners only). */
  revokeInvite(id: string): Promise<void>;
  /**
   * Sync with an ibexdb-server (`ws://host:port`) or the nodes of one deployment (a list, dialed
   * in turn), or the current one(s) without a URL; null stops.
   * Resolves when `synced` (everything local acknowledged by the server, the server's history
   * received); rejects with the server's refusal (e.g. PermissionError) at `error`.
   */
  sync(url?: string | string[] | null): Promise<void>;
  syncStatus(): Promise<SyncStatus>;
  /** Called at every change of sync's state, server or last error; returns an unsubscribe function. */
  onSyncStatus(cb: (status: SyncStatus) => void): () => void;
  close(): Promise<void>;
}

/** Open (or create) the repository `name` (1–128 of `[A-Za-z0-9_.-]`). */
export declare function open(name: string, options?: OpenOptions): Promise<Database>;

export declare class IbexError extends Error {
  constructor(message: string, details?: Record<string, unknown>);
}
export declare class SchemaError extends IbexError {
  readonly collection: string;
  readonly field: string;
  readonly rule: string;
}
export declare class InvalidSchemaError extends IbexError {
  readonly collection: string;
}
export declare class SchemaVersionError extends IbexError {
  /** The repository's stored schema version. */
  readonly stored: number;
  /** The version involved: the application's, or the one a stored schema would go down to. */
  readonly version: number;
}
export declare class MigrationError extends IbexError {
  /** The version the failed migration leads to. */
  readonly version: number;
  /** The item it failed on. */
  readonly key: string;
}
/** A passphrase does not unlock a wrapped identity (wrong, or the wrapped bytes were changed); nothing was opened. */
export declare class PassphraseError extends IbexError {
  readonly kind: 'wrong-passphrase';
}
export declare class NotFoundError extends IbexError {
  readonly key: string;
}
/** `attachment(key, name)`: the item has no attachment of that name. */
export declare class AttachmentNotFoundError extends IbexError {
  readonly key: string;
  /** The attachment's name. */
  readonly attachment: string;
}
/** `attachment(key, name)`: this device holds the attachment's record (received by sync) but not its bytes. */
export declare class AttachmentUnavailableError extends IbexError {
  readonly key: string;
  readonly attachment: string;
  readonly hash: string;
}
export declare class InvalidKeyError extends IbexError {
  readonly key: string;
}
export declare class InvalidValueError extends IbexError {
  readonly path: string;
}
export declare class TooLargeError extends IbexError {
  readonly size: number;
  readonly limit: number;
}
export declare class StorageError extends IbexError {
  readonly kind?: string;
}
export declare class QuotaExceededError extends StorageError {}
/**
 * ibexdb cannot work on this page; `kind` says why and the message what to do:
 * 'insecure-context' (not https:// or localhost), 'opaque-origin' (a sandboxed iframe, a data:
 * URL), 'no-opfs', 'storage-denied' (the browser keeps no data for this site: blocked site data,
 * a private window without storage), 'opfs', 'no-worker', 'no-locks', 'csp' (the
 * Content-Security-Policy forbids the wasm or the worker), 'wasm-load', 'worker-load'; absent
 * when another tab holds the files and does not answer. In Node (`ibexdb/node`): 'disk', and
 * 'locked' (another process has the repository open: its `pid`, the lock `file`).
 */
export declare class StorageUnavailableError extends StorageError {
  /** kind 'locked' (Node): the process holding the repository (null: not known yet). */
  readonly pid?: number | null;
  /** kind 'locked' (Node): the lock file. */
  readonly file?: string;
}
export declare class ClosedError extends IbexError {}
export declare class CorruptError extends IbexError {
  readonly offset: number;
  readonly nextValid?: number;
}
export declare class SignatureError extends IbexError {
  readonly kind: 'tampered' | 'bad-signature' | 'wrong-key' | 'missing' | 'malformed' | 'unsigned' | 'wrong-repository';
}
export declare class QueryError extends IbexError {}
export declare class VerifyError extends IbexError {}
export declare class PanicError extends IbexError {}
export declare class DecodeError extends IbexError {}
export declare class ClockSkewError extends IbexError {}
export declare class ProtocolError extends IbexError {
  /** The protocol error code when the sync server sent it. */
  readonly code?: number;
}
export declare class PermissionError extends IbexError {
  readonly kind: 'cannot-read' | 'cannot-write' | 'cannot-administer' | 'foreign-root' | 'cannot-create' | 'not-found' | 'wrong-founder' | 'invite-invalid' | 'invite-expired' | 'invite-used' | 'invite-revoked';
  /** The protocol error code (8) when the sync server refused. */
  readonly code?: number;
}
export declare class AuthError extends IbexError {
  readonly kind?: 'bad-signature' | 'replayed' | 'stale' | 'wrong-server' | 'malformed' | 'token-missing' | 'token-too-large' | 'token-invalid' | 'token-expired' | 'token-not-yet-valid' | 'wrong-audience' | 'wrong-issuer' | 'unknown-key' | 'token-scope' | 'token-cannot-create' | 'token-unavailable';
  readonly code?: number;
}
/** An encrypted repository's data could not be decrypted on this device. */
export declare class DecryptError extends IbexError {
  readonly kind: 'missing-key' | 'unwrap' | 'aead' | 'malformed' | 'plaintext';
}
export declare class LimitError extends IbexError {
  /** Which limit. */
  readonly limit?: string;
  readonly code?: number;
}
export declare class UnavailableError extends IbexError {
  readonly code?: number;
}
