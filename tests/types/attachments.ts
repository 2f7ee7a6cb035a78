// Type tests of attachments (`make tsc`: tsc --noEmit -p tests/types). Never run. Every
// `@ts-expect-error` line must be an error.
import { open, AttachmentNotFoundError, AttachmentUnavailableError, type Attachment } from '../../www/ibexdb.js';

export async function attachments(): Promise<void> {
  const db = await open('files');
  const a: Attachment = await db.attach('tasks/1', 'photo.jpg', new Blob([new Uint8Array(3)]), { type: 'image/jpeg' });
  const hash: string = a.hash;
  await db.attach('tasks/1', 'raw', new ArrayBuffer(8));
  await db.attach('tasks/1', 'bytes', new Uint8Array(8));
  await db.attach('tasks/1', 'stream', new Blob([]).stream());
  const blob: Blob = await db.attachment('tasks/1', 'photo.jpg');
  const had: boolean = await db.detach('tasks/1', 'photo.jpg');
  const list: Attachment[] = await db.attachments('tasks/1');
  try {
    await db.attachment('tasks/1', 'x');
  } catch (e) {
    if (e instanceof AttachmentNotFoundError) console.log(e.key, e.attachment);
    if (e instanceof AttachmentUnavailableError) console.log(e.hash);
  }
  // @ts-expect-error a string is not bytes
  await db.attach('tasks/1', 'x', 'text');
  // @ts-expect-error the type is a string
  await db.attach('tasks/1', 'x', new Blob([]), { type: 5 });
  void [hash, blob, had, list];
}
