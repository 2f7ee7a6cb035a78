// The Node entry's public types (www/lib/node/index.d.ts, `ibexdb/node`) used as a test or a
// script uses them. Type-checked by `make tsc` with app.ts.
import { open, NotFoundError, PassphraseError, type NodeDatabase } from '../../www/lib/node/index.js';

interface Note {
  [field: string]: string | boolean | Set<string> | undefined;
  title: string;
  done: boolean;
}

export async function nodeExample(directory: string): Promise<number> {
  const db: NodeDatabase = await open('notes', { directory, durability: 'flush' });
  const mem = await open('scratch', { storage: 'memory', trusted: true });
  await db.put('notes/1', { title: 'Buy milk', done: false, tags: new Set(['home']) });
  const n = await db.get<Note>('notes/1');
  const rows = await db.query<Note>({ collection: 'notes', where: { done: false } });
  await db.update('notes/2', { done: true }).catch((e) => {
    if (!(e instanceof NotFoundError)) throw e;
  });
  await mem.transaction((tx) => tx.put('a/1', { x: 1 }));
  const lq = await db.live<Note>({ collection: 'notes' }, (rows) => rows.map((r) => r.value.title));
  lq.close();
  const storage: 'memory' | 'disk' = db.storage;
  const wrapped = await db.exportIdentity({ passphrase: 'correct horse' });
  if (wrapped) {
    await open('notes-copy', { directory, identity: wrapped, passphrase: 'correct horse' }).catch((e) => {
      if (!(e instanceof PassphraseError)) throw e;
    });
  }
  await db.sync('ws://127.0.0.1:8787');
  const backend = await open('notes-server', { storage: 'memory', sync: 'wss://sync.example.org', syncToken: async () => 'eyJ.a.b' });
  await backend.close();
  await db.close();
  await mem.close();
  return rows.length + (n?.title.length ?? 0) + storage.length;
}
