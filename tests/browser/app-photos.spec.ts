// The task board's photos (issue 26: attachments on tasks, tested offline). A task's dialog lists
// its attachments as thumbnails (examples/app/views/task-photos.js): photos added with the
// network gone are streamed to this device's OPFS and recorded in signed commits, shown at once,
// still there after a reload served by the service worker, named apart when two files share a
// name, listed in the task's history, and removed with a confirmation. A second device that
// joins the board sees the photo: its bytes fetched from the sync server when the thumbnail is
// first shown (issue 26 §3).
import { type Locator } from '@playwright/test';
import { test, expect, uniqueName } from './ibexdb.fixtures';
import { useBoard, openBoard, startBoard, addTask, openTask, offlineReady, device, joinAs, ownerSynced } from './support/board';

useBoard();

/** A PNG of `w` × `h` pixels of one colour (stored, so no compression library is needed). */
function png(w: number, h: number, rgb: [number, number, number]): Buffer {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (b: Buffer) => {
    let c = 0xffffffff;
    for (const x of b) c = crcTable[(c ^ x) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const sum = Buffer.alloc(4);
    sum.writeUInt32BE(crc(body));
    return Buffer.concat([len, body, sum]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr.set([8, 2, 0, 0, 0], 8); // 8-bit RGB
  const row = Buffer.concat([Buffer.from([0]), Buffer.from(Array.from({ length: w }, () => rgb).flat())]);
  const raw = Buffer.concat(Array.from({ length: h }, () => row));
  // zlib stream of stored blocks (at most 65,535 bytes each) and the Adler-32 of the data.
  const blocks: Buffer[] = [Buffer.from([0x78, 0x01])];
  for (let at = 0; at < raw.length; at += 65535) {
    const part = raw.subarray(at, at + 65535);
    const head = Buffer.alloc(5);
    head[0] = at + 65535 >= raw.length ? 1 : 0;
    head.writeUInt16LE(part.length, 1);
    head.writeUInt16LE(~part.length & 0xffff, 3);
    blocks.push(head, part);
  }
  let a = 1;
  let b = 0;
  for (const x of raw) {
    a = (a + x) % 65521;
    b = (b + a) % 65521;
  }
  const adler = Buffer.alloc(4);
  adler.writeUInt32BE(((b << 16) | a) >>> 0);
  blocks.push(adler);
  const sig = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([sig, chunk('IHDR', ihdr), chunk('IDAT', Buffer.concat(blocks)), chunk('IEND', Buffer.alloc(0))]);
}

/** The names of the photos the dialog shows as decoded images (an image that failed has no width). */
const shownPhotos = (d: Locator) =>
  d.getByRole('list', { name: 'Photos' }).locator('img').evaluateAll((imgs) =>
    (imgs as HTMLImageElement[]).map((i) => `${i.alt}:${i.complete && i.naturalWidth > 0 ? `${i.naturalWidth}x${i.naturalHeight}` : 'broken'}`));

test('photos: added offline, shown, named apart, in the history, kept across an offline reload, removed', async ({ page, watched }) => {
  void watched;
  await openBoard(page, uniqueName('photos'), { local: true });
  await offlineReady(page);
  await startBoard(page);
  await addTask(page, 'To do', 'Fix the sink');
  await page.context().setOffline(true);
  try {
    let d = await openTask(page, 'Fix the sink');
    await d.getByLabel('Add photos').setInputFiles([
      { name: 'sink.png', mimeType: 'image/png', buffer: png(40, 30, [200, 30, 30]) },
      { name: 'sink.png', mimeType: 'image/png', buffer: png(300, 200, [30, 30, 200]) },
    ]);
    await expect.poll(() => shownPhotos(d)).toEqual(['sink (2).png:300x200', 'sink.png:40x30']);
    await d.getByRole('tab', { name: 'History' }).click();
    const history = d.getByRole('list', { name: 'History' });
    await expect(history).toContainText('added the photo “sink.png”');
    await expect(history).toContainText('added the photo “sink (2).png”');
    await d.getByRole('button', { name: 'Close' }).click();

    // Reloaded with the network still gone: the board comes from its service worker, the photos
    // from this device's storage.
    await page.reload();
    await expect(page.locator('body')).toHaveAttribute('data-state', 'ready', { timeout: 30_000 });
    d = await openTask(page, 'Fix the sink');
    await expect.poll(() => shownPhotos(d)).toEqual(['sink (2).png:300x200', 'sink.png:40x30']);

    // Removed after a confirmation; the other stays, after another reload too.
    await d.getByRole('button', { name: 'Remove photo sink.png' }).click();
    const confirm = page.getByRole('alertdialog', { name: 'Remove photo' });
    await confirm.getByRole('button', { name: 'Remove photo' }).click();
    await expect.poll(() => shownPhotos(d)).toEqual(['sink (2).png:300x200']);
    await d.getByRole('button', { name: 'Close' }).click();
    await page.reload();
    await expect(page.locator('body')).toHaveAttribute('data-state', 'ready', { timeout: 30_000 });
    d = await openTask(page, 'Fix the sink');
    await expect.poll(() => shownPhotos(d)).toEqual(['sink (2).png:300x200']);
    expect(await page.evaluate(async () => {
      const db = (window as any).taskboard.db;
      const [t] = await db.query({ collection: 'tasks', where: { title: 'Fix the sink' } });
      return (await db.attachments(`tasks/${t.id}`)).map((a: any) => `${a.name} ${a.type} ${a.size}`);
    })).toEqual([`sink (2).png image/png ${png(300, 200, [30, 30, 200]).length}`]);
  } finally {
    await page.context().setOffline(false);
  }
});

test('photos: a device that joins the board sees a photo, its bytes fetched from the sync server', async ({ browser, page, watched }) => {
  void watched;
  const board = uniqueName('photos-sync');
  await openBoard(page, board);
  await startBoard(page);
  await addTask(page, 'To do', 'Paint the fence');
  const d = await openTask(page, 'Paint the fence');
  await d.getByLabel('Add photos').setInputFiles([{ name: 'fence.png', mimeType: 'image/png', buffer: png(120, 80, [20, 160, 60]) }]);
  await expect.poll(() => shownPhotos(d)).toEqual(['fence.png:120x80']);
  await d.getByRole('button', { name: 'Close' }).click();
  await ownerSynced(page);
  const b = await device(browser, 'device B');
  try {
    await joinAs(page, b.page, board, 'writer');
    const t = await openTask(b.page, 'Paint the fence');
    await expect.poll(() => shownPhotos(t), { timeout: 20_000 }).toEqual(['fence.png:120x80']);
    expect(b.problems).toEqual([]);
  } finally {
    await b.ctx.close();
  }
});
