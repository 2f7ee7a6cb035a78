// Type tests of bytes values (`make tsc`: tsc --noEmit -p tests/types). Never run. Every
// `@ts-expect-error` line must be an error.
import { open, type Bytes, type Collection, type FieldPath, type Value } from '../../www/ibexdb.js';

/** An item type with bytes fields. */
interface Photo {
  name: string;
  data: Uint8Array;
  thumb?: Uint8Array;
  meta?: { hash: Uint8Array };
}

export async function bytes(): Promise<void> {
  const db = await open('bytes');
  await db.put('files/a', { data: new Uint8Array([1, 2, 3]), raw: new ArrayBuffer(4), list: [new Uint8Array(1)] });
  await db.update('files/a', { data: new Uint8Array(0) });
  await db.transaction((tx) => tx.put('files/b', { data: new Uint8Array(2) }));
  const v: Value = new Uint8Array(3);
  const b: Bytes = new ArrayBuffer(1);
  await db.defineSchema('files', { fields: { data: { type: 'bytes', required: true } }, indexes: ['data'] });
  await db.query({ collection: 'files', where: { data: { gte: new Uint8Array([1]), lt: new Uint8Array([2]) } } });
  await db.query({ collection: 'files', where: { data: { in: [new Uint8Array([1])] } } });

  const photos: Collection<Photo> = db.collection<Photo>('photos');
  await photos.put('p', { name: 'x', data: new Uint8Array([9]) });
  const p = await photos.get('p');
  const data: Uint8Array | undefined = p?.data;
  await photos.query({ where: { data: new Uint8Array([9]), 'meta.hash': { gt: new Uint8Array(0) } } });
  const path: FieldPath<Photo> = 'meta.hash';
  // A bytes field is a leaf: no paths into the Uint8Array.
  // @ts-expect-error
  const inner: FieldPath<Photo> = 'data.byteLength';
  // @ts-expect-error a bytes field does not take a string
  await photos.put('q', { name: 'x', data: 'AAEC' });
  // @ts-expect-error prefix is for strings
  await photos.query({ where: { data: { prefix: 'a' } } });
  void [v, b, data, path, inner];
}
