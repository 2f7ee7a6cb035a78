// Types of the Node entry `ibexdb/node` (./index.js): the browser Database's methods (ibexdb.d.ts)
// over memory or files in a directory.
import type { Attachment, Migration, SchemaVersionError, AggregateQuery, Collection, HistoryEntry, Invite, Item, ItemShape, Key, LiveChange, LiveQuery, Members, Page, Query, ReceiveReport, Role, Row, Schema, SyncStatus, Transaction, Value, VerifyReport, Where } from '../ibexdb.js';

export { IbexError, SchemaError, InvalidSchemaError, SchemaVersionError, MigrationError, PassphraseError, NotFoundError, AttachmentNotFoundError, AttachmentUnavailableError, InvalidKeyError, InvalidValueError, TooLargeError, StorageError, QuotaExceededError, StorageUnavailableError, ClosedError, CorruptError, SignatureError, QueryError, VerifyError, PanicError, DecodeError, ClockSkewError, ProtocolError, PermissionError, AuthError, LimitError, UnavailableError } from '../ibexdb.js';

export interface NodeOpenOptions {
  /** 'memory' (the default without `directory`): gone at close(). 'disk': files in `directory`/<name>/. */
  storage?: 'memory' | 'disk';
  /** Where repositories are kept on disk (implies storage 'disk'); created if absent. */
  directory?: string;
  /**
   * One process at a time opens a repository on disk. While another process holds it, wait up to
   * this many milliseconds for it to close (default 0: refuse at once); then a
   * StorageUnavailableError with `kind: 'locked'` and the holder's `pid`.
   */
  lockTimeout?: number;
  /** 'flush' (default): a write resolves after fsync (the writes of one tick share it); 'relaxed': within ~50 ms. */
  durability?: 'flush' | 'relaxed';
  trusted?: boolean;
  /** An identity from `exportIdentity()`: wrapped (with `passphrase`), or in the clear. */
  identity?: string;
  /** The passphrase of a wrapped `identity`; a wrong one rejects with `PassphraseError`, nothing opened. */
  passphrase?: string;
  schemas?: Record<string, Schema>;
  /** The schema version this application understands (as the browser's `open`, docs/design.md §2.4). */
  version?: number;
  /** `{2: (item) => newItem, 3: {tasks: (item) => newItem}}`: run on upgrade, as commits. */
  migrations?: Record<number, Migration | Record<string, Migration>>;
  onMigrationProgress?: (progress: { version: number; done: number; total: number }) => void;
  recovery?: 'strict' | 'repair';
  quotaBytes?: number;
  acceptTrusted?: boolean;
  /** Found the repository end-to-end encrypted (as the browser's `open`; docs/design.md §6.8). */
  encrypted?: boolean;
  /** Sync with an ibexdb-server (not waited for; `sync()` resolves when synced). */
  sync?: string | string[];
  /** An invite link from `db.invite()` (needs `sync`): redeemed while the server keeps this new device waiting. */
  invite?: string;
  /**
   * The app's bearer token for a server with `--auth-jwks`, sent as `Authorization: Bearer`:
   * a string, or a function (sync or async) called before every dial (see the browser's
   * `OpenOptions.syncToken`).
   */
  syncToken?: string | (() => string | Promise<string>);
  onError?: (error: Error) => void;
}

export declare class NodeDatabase {
  readonly name: string;
  readonly publicKey: string | null;
  /** With `open(name, { sync, invite })`: 'redeemed', 'kept' (already had the role: the link unused) or the typed error; null without. */
  readonly invited: Promise<'redeemed' | 'kept' | Error> | null;
  readonly trusted: boolean;
  readonly durability: 'flush' | 'relaxed';
  readonly storage: 'memory' | 'disk';
  readonly role: 'owner';
  /** Null, or the SchemaVersionError this application's writes get (the stored schemas are newer). */
  readonly readOnly: SchemaVersionError | null;
  /** The repository's stored schema version as last read (0: none); null without `version`. */
  readonly schemaVersion: number | null;
  get<T extends Item = Item>(key: Key): Promise<T | undefined>;
  getMany<T extends Item = Item>(keys: Key[]): Promise<(T | undefined)[]>;
  put(key: Key, value: Item): Promise<void>;
  update(key: Key, fields: Item): Promise<void>;
  delete(key: Key): Promise<void>;
  transaction<R>(fn: (tx: Transaction) => R): Promise<R>;
  query<T extends Item = Item>(q: Query): Promise<Row<T>[]>;
  /** A page of a query and the cursor after its last row (`query({...q, after: cursor})`). */
  page<T extends Item = Item>(q: Query): Promise<Page<T>>;
  explain(q: Query): Promise<Record<string, unknown>>;
  count(collection: string, where?: Where): Promise<number>;
  keys(collection: string): Promise<string[]>;
  /** A handle on one collection, typed by its item type (as the browser's `db.collection`). */
  collection<T extends ItemShape<T> = Item>(name: string): Collection<T>;
  aggregate(q: AggregateQuery): Promise<Record<string, Value>>;
  history(key: Key): Promise<HistoryEntry[]>;
  live<T extends Item = Item>(q: Query, onChange?: (results: Row<T>[], change: LiveChange<T> | null) => void): Promise<LiveQuery<T>>;
  defineSchema(collection: string, schema: Schema): Promise<void>;
  flush(): Promise<void>;
  /** Seal, flush and snapshot now (the background work the timers would do later); resolves when durable. */
  settle(): Promise<void>;
  verify(): Promise<VerifyReport>;
  /** With `{passphrase}`: wrapped under it (as the browser's); without: the secret in the clear. */
  exportIdentity(options?: { passphrase: string }): Promise<string | null>;
  exportCommits(): Promise<Uint8Array<ArrayBuffer>>;
  receive(bundle: Uint8Array): Promise<ReceiveReport>;
  storageInfo(): Promise<{ repository: { logBytes: number; snapshotBytes: number; totalBytes: number; attachmentBytes: number; items: number; commits: number } }>;
  /** As the browser's (docs/design.md §6.7): files under `<directory>/<name>/attachments/`, or in memory. */
  attach(key: Key, name: string, data: Blob | ArrayBuffer | Uint8Array | ReadableStream<Uint8Array>, options?: { type?: string }): Promise<Attachment>;
  attachment(key: Key, name: string): Promise<Blob>;
  detach(key: Key, name: string): Promise<boolean>;
  attachments(key: Key): Promise<Attachment[]>;
  grant(publicKey: string, role: Role): Promise<void>;
  revoke(publicKey: string): Promise<void>;
  setPublic(flags: { read: boolean; write: boolean }): Promise<void>;
  members(): Promise<Members>;
  /** A one-time invite link (owners only); `base` defaults to `ibexdb:` in Node. */
  invite(options: { role: Role; expires?: Date | number; uses?: number; base?: string }): Promise<{ link: string; id: string }>;
  /** True when a redemption was written; false (the link's use kept) when this key already has the role or a higher one. */
  redeem(link: string): Promise<boolean>;
  invites(): Promise<Invite[]>;
  revokeInvite(id: string): Promise<void>;
  sync(url?: string | string[] | null): Promise<void>;
  syncStatus(): Promise<SyncStatus>;
  onSyncStatus(cb: (status: SyncStatus) => void): () => void;
  close(): Promise<void>;
}

/** Open (or create) repository `name` in Node >= 20. */
export declare function open(name: string, options?: NodeOpenOptions): Promise<NodeDatabase>;
