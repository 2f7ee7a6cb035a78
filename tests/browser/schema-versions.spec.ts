// Versioned schemas and migrations (docs/design.md §2.4) through the public API in Chromium:
// open with version 1, reopen with version 2 and a migration, reopen; an application older than
// the stored schemas is read-only with a typed error; a migration that throws or returns a
// non-item fails open() with MigrationError and writes nothing; bad options are typed errors.
import { test, expect, gotoPlayground, uniqueName } from './ibexdb.fixtures';

test.beforeEach(async ({ page, watched }) => {
  void watched;
  await gotoPlayground(page);
});

test('open with version 1, upgrade to 2 with a migration, reopen; older apps read only', async ({ page }) => {
  const out = await page.evaluate(async (name) => {
    const { open, SchemaVersionError, MigrationError, SchemaError, InvalidValueError } = (window as any).ibexdb;
    const v1 = { tasks: { fields: { title: { type: 'string', required: true } } } };
    const v2 = { tasks: { fields: { name: { type: 'string', required: true }, done: { type: 'boolean', required: true } }, allowOtherFields: false } };
    const migrations = { 2: { tasks: ({ title, ...rest }: any) => ({ ...rest, name: title, done: false }) } };
    const errName = async (p: Promise<unknown>) => p.then(() => 'resolved', (e: any) => `${e?.name}${e instanceof Error ? '' : ' (not an Error)'}`);

    // Version 1: the first write stores the schema (open wrote nothing: `schemaVersion` was
    // read at open, before it).
    let db = await open(name, { schemas: v1, version: 1 });
    for (let i = 0; i < 2500; i++) void db.put(`tasks/${String(i).padStart(4, '0')}`, { title: `task ${i}` });
    await db.flush();
    const at1 = { version: db.schemaVersion, readOnly: db.readOnly, stored: (await db.get('_schema/tasks'))?.version, bad: await errName(db.put('tasks/x', { title: 3 })) };
    await db.close();

    // A migration that throws, one that returns a non-item: typed, nothing written.
    const throws = await errName(open(name, { schemas: v2, version: 2, migrations: { 2: () => { throw new Error('boom'); } } }));
    const nonItem = await open(name, { schemas: v2, version: 2, migrations: { 2: () => 42 } }).then(() => null, (e: any) => ({ name: e.name, isClass: e instanceof MigrationError, version: e.version, key: e.key }));
    const badShape = await open(name, { schemas: v2, version: 2, migrations: { 2: ({ title, ...rest }: any) => ({ ...rest, name: title, done: 'no' }) } }).then(() => null, (e: any) => ({ name: e.name, key: e.key, cause: e.cause?.name, field: e.cause?.field }));
    const badValue = await open(name, { schemas: v2, version: 2, migrations: { 2: (t: any) => ({ ...t, when: new Date() }) } }).then(() => null, (e: any) => ({ name: e.name, key: e.key, cause: e.cause?.name }));
    db = await open(name, { schemas: v1, version: 1 });
    const untouched = { version: db.schemaVersion, first: await db.get('tasks/0000') };
    await db.close();

    // Version 2 with the migration: progress reported, every item migrated once.
    const progress: any[] = [];
    db = await open(name, { schemas: v2, version: 2, migrations, onMigrationProgress: (p: any) => progress.push(p) });
    const at2 = {
      version: db.schemaVersion,
      first: await db.get('tasks/0000'),
      count: await db.count('tasks'),
      leftovers: await db.count('tasks', { title: { prefix: 'task' } }),
      history: (await db.history('_schema/tasks')).length,
      oldShape: await errName(db.put('tasks/new', { title: 'v1 shape' })),
    };
    await db.close();

    // Reopen at 2: nothing left to do, nothing written.
    const progress2: any[] = [];
    db = await open(name, { schemas: v2, version: 2, migrations, onMigrationProgress: (p: any) => progress2.push(p) });
    const reopened = { version: db.schemaVersion, count: await db.count('tasks'), readOnly: db.readOnly };
    await db.close();

    // An application at version 1 meets version 2: read only, typed, reads work.
    db = await open(name, { schemas: v1, version: 1 });
    const ro = db.readOnly;
    const old = {
      readOnly: ro && { name: ro.name, isClass: ro instanceof SchemaVersionError, stored: ro.stored, version: ro.version },
      write: await db.put('tasks/late', { title: 'x' }).then(() => 'resolved', (e: any) => ({ name: e.name, isClass: e instanceof SchemaVersionError, stored: e.stored })),
      read: await db.get('tasks/0001'),
    };
    await db.close();

    // Bad options: typed errors naming the option.
    const badVersion = await open(name, { version: 0 }).then(() => null, (e: any) => ({ name: e.name, path: e.path, isClass: e instanceof InvalidValueError }));
    const badMigrations = await open(name, { version: 2, migrations: { 3: () => ({}) } }).then(() => null, (e: any) => ({ name: e.name, path: e.path }));
    const badSchema = await errName(open(`${name}-bad`, { version: 1, schemas: { tasks: { fields: { a: { type: 'nope' } } } } }));
    void SchemaError;
    return { at1, throws, nonItem, badShape, badValue, untouched, at2, progress, progress2, reopened, old, badVersion, badMigrations, badSchema };
  }, uniqueName('schemaver'));
  expect(out.at1).toEqual({ version: 0, readOnly: null, stored: 1, bad: 'SchemaError' });
  expect(out.throws).toBe('MigrationError');
  expect(out.nonItem).toEqual({ name: 'MigrationError', isClass: true, version: 2, key: 'tasks/0000' });
  expect(out.badShape).toEqual({ name: 'MigrationError', key: 'tasks/0000', cause: 'SchemaError', field: 'done' });
  expect(out.badValue).toEqual({ name: 'MigrationError', key: 'tasks/0000', cause: 'InvalidValueError' });
  expect(out.untouched).toEqual({ version: 1, first: { title: 'task 0' } });
  expect(out.at2).toEqual({ version: 2, first: { name: 'task 0', done: false }, count: 2500, leftovers: 0, history: 2, oldShape: 'SchemaError' });
  expect(out.progress).toEqual([
    { version: 2, done: 1000, total: 2500 },
    { version: 2, done: 2000, total: 2500 },
    { version: 2, done: 2500, total: 2500 },
  ]);
  expect(out.progress2).toEqual([]);
  expect(out.reopened).toEqual({ version: 2, count: 2500, readOnly: null });
  expect(out.old).toEqual({
    readOnly: { name: 'SchemaVersionError', isClass: true, stored: 2, version: 1 },
    write: { name: 'SchemaVersionError', isClass: true, stored: 2 },
    read: { name: 'task 1', done: false },
  });
  expect(out.badVersion).toEqual({ name: 'InvalidValueError', path: 'options.version', isClass: true });
  expect(out.badMigrations).toEqual({ name: 'InvalidValueError', path: 'options.migrations.3' });
  expect(out.badSchema).toBe('InvalidSchemaError');
});
