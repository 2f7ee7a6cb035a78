// Type-checks www/ibexdb.d.ts the way an app uses it (`make tsc`: tsc --noEmit -p tests/types). Never run.
import {
  open,
  type Database,
  type Item,
  type LiveQuery,
  type Row,
  type SyncStatus,
  type Role,
  type Members,
  ProtocolError,
  PermissionError,
  AuthError,
  LimitError,
  UnavailableError,
  NotFoundError,
  QuotaExceededError,
  SchemaError,
  StorageError,
  IbexError,
  SchemaVersionError,
  MigrationError,
  PassphraseError,
  type Migration,
} from '../../www/ibexdb.js';

interface Note extends Item {
  title: string;
  done: boolean;
  tags?: Set<string>;
}

export async function example(): Promise<void> {
  const db: Database = await open('notes', {
    durability: 'relaxed',
    schemas: { notes: { fields: { title: { type: 'string', required: true } }, indexes: ['title'] } },
    onError: (e) => console.warn(e.name),
    persist: false,
  });
  await db.put('notes/1', { title: 'Hello', done: false, tags: new Set(['inbox']) });
  await db.update('notes/1', { done: true });
  const note = await db.get<Note>('notes/1');
  const title: string | undefined = note?.title;
  const many: (Note | undefined)[] = await db.getMany<Note>(['notes/1', 'notes/2']);
  const n: number = await db.transaction((tx) => {
    tx.put('notes/2', { title: 'World', done: false }).setAdd('notes/2', 'tags', ['a', 'b']).setRemove('notes/2', 'tags', 'a');
    tx.delete('notes/3');
    return 2;
  });
  const rows: Row<Note>[] = await db.query<Note>({
    collection: 'notes',
    where: { done: false, title: { prefix: 'W' }, or: [{ tags: { contains: 'b' } }, { not: { done: true } }] },
    sort: [{ field: 'title', desc: true }, 'done'],
    limit: 10,
  });
  const c: number = await db.count('notes', { done: { eq: true } });
  const keys: string[] = await db.keys('notes');
  const agg = await db.aggregate({ collection: 'notes', aggregates: { n: { count: true }, s: { sum: 'count' } } });
  const lq: LiveQuery<Note> = await db.live<Note>({ collection: 'notes' }, (results, change) => {
    const first: string | undefined = results[0]?.value.title;
    void first;
    void change?.added.length;
  });
  const snapshot: Row<Note>[] = lq.results;
  lq.close();
  const hist = await db.history('notes/1');
  if (hist[0]?.op.type === 'put') void hist[0].op.value;
  await db.flush();
  const report = await db.verify();
  const info = await db.storageInfo();
  const persistent: boolean = db.persisted || (await db.persist());
  void persistent;
  const id: string | null = db.publicKey;
  const exported = await db.exportIdentity();
  if (exported) await open('notes-copy', { identity: exported, trusted: false, recovery: 'repair', quotaBytes: 1 << 20 });
  const wrapped: string | null = await db.exportIdentity({ passphrase: 'correct horse' });
  try {
    if (wrapped) await open('notes-elsewhere', { identity: wrapped, passphrase: 'correct horse' });
  } catch (e) {
    if (e instanceof PassphraseError) {
      const kind: 'wrong-passphrase' = e.kind;
      void kind;
    }
  }
  // @ts-expect-error the passphrase is a string
  await db.exportIdentity({ passphrase: 42 });
  // @ts-expect-error exportIdentity takes only a passphrase
  await db.exportIdentity({ passphrase: 'p', iterations: 1 });
  const bundle: Uint8Array = await db.exportCommits();
  const rep = await db.receive(bundle);
  const synced = await open('notes-synced', { sync: 'ws://127.0.0.1:8787' });
  await synced.sync(null);
  await synced.sync('ws://127.0.0.1:8788');
  await synced.sync(['wss://a.example.org', 'wss://b.example.org']);
  const cluster = await open('notes-cluster', { sync: ['ws://127.0.0.1:8787', 'ws://127.0.0.1:8788'] });
  const withLogin = await open('notes-login', { sync: 'wss://sync.example.org', syncToken: async () => 'eyJ.a.b' });
  await open('notes-login2', { sync: 'wss://sync.example.org', syncToken: 'eyJ.a.b' });
  // @ts-expect-error the token is a string or a function returning one
  await open('notes-login3', { syncToken: 42 });
  const lastAuth = (await withLogin.syncStatus()).lastError;
  if (lastAuth instanceof AuthError && (lastAuth.kind === 'token-expired' || lastAuth.kind === 'token-unavailable')) void lastAuth.message;
  const urls: string[] | null = (await cluster.syncStatus()).urls;
  void urls;
  const st: SyncStatus = await synced.syncStatus();
  if (st.state === 'synced' && st.lastError === null) void [st.cursor, st.pushFrom, st.pending, st.serverHead, st.acked, st.saved?.cursor];
  if (st.rights?.write) void st.rights.administer;
  await synced.sync();
  const stopListening: () => void = synced.onSyncStatus((s: SyncStatus) => {
    if (s.state === 'error' && s.lastError instanceof PermissionError) void [s.lastError.kind, s.lastError.code];
    else if (s.lastError instanceof AuthError || s.lastError instanceof LimitError || s.lastError instanceof UnavailableError) void s.lastError.message;
    else if (s.state === 'offline' || s.state === 'online' || s.state === 'syncing' || s.state === 'off') void s.url;
  });
  stopListening();
  const key: string | null = synced.publicKey;
  if (key) await db.grant(key, 'writer');
  if (key) await db.revoke(key);
  const role: Role = 'reader';
  if (key) await db.grant(key, role);
  await db.setPublic({ read: true, write: false });
  const acl: Members = await db.members();
  void [acl.owned, acl.public.read, acl.members.map((m) => [m.publicKey, m.role])];
  await db.defineSchema('tasks', { fields: { due: { type: 'number', nullable: true } }, allowOtherFields: false });
  try {
    await db.update('notes/missing', { done: true });
  } catch (e) {
    if (e instanceof NotFoundError) void e.key;
    else if (e instanceof SchemaError) void e.field;
    else if (e instanceof ProtocolError) void e.message;
    else if (e instanceof PermissionError && e.kind === 'cannot-write') void e.message;
    else if (e instanceof QuotaExceededError && e instanceof StorageError && e instanceof IbexError) void e.message;
  }
  await db.close();
  void [title, many, n, rows, c, keys, agg, snapshot, report.commits, info.quota, info.repository.totalBytes, id, rep.applied];
}

/** Versioned schemas and migrations (docs/design.md §2.4). */
export async function versions(): Promise<void> {
  const toV2: Migration = (item, info) => ({ ...item, name: item.title, from: info.from });
  const db = await open('tasks', {
    schemas: { tasks: { fields: { name: { type: 'string', required: true } } } },
    version: 3,
    migrations: { 2: toV2, 3: { tasks: (item) => ({ ...item, done: false }) } },
    onMigrationProgress: ({ version, done, total }) => console.log(version, done / total),
  });
  const ro: SchemaVersionError | null = db.readOnly;
  const stored: number | undefined = ro?.stored;
  const v: number | null = db.schemaVersion;
  try {
    await open('tasks', { version: 1 });
  } catch (e) {
    if (e instanceof MigrationError) console.log(e.version, e.key);
  }
  // @ts-expect-error a version is a number
  await open('tasks', { version: '2' });
  // @ts-expect-error a migration returns an item
  await open('tasks', { version: 2, migrations: { 2: () => 42 } });
  void stored;
  void v;
}
