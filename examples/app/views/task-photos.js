// A task's photos: its attachments (db.attachments / db.attachment / db.attach / db.detach),
// shown as thumbnails in the task dialog. The bytes live on this device (OPFS, content-addressed,
// written offline like any edit); the record of each photo is a signed commit that syncs with the
// board. A photo another device attached is fetched from the sync server when its thumbnail is
// first shown; until it can be (offline, or the server does not have it yet) it says so, and the
// dialog asks again every few seconds while it is open.
import { h, onUnmounted, ref, shallowRef, watch } from 'vue';
import { addPhotos, removePhoto } from '../lib/board.js';
import { confirmDialog } from '../lib/dom.js';
import { report } from './notices.js';

/** @typedef {typeof import('../app.js').app} App */
/** @typedef {{name: string, size: number, url: string | null, missing: string | null}} Shown */

/** How long a photo whose bytes are not here waits before it is asked for again. */
const RETRY_MS = 3000;

/** A byte count as people read it. @param {number} n */
const sizeText = (n) => (n < 1024 ? `${n} B` : n < 1 << 20 ? `${(n / 1024).toFixed(0)} KB` : `${(n / (1 << 20)).toFixed(1)} MB`);

export const TaskPhotos = {
  props: {
    app: { type: Object, required: true },
    id: { type: String, required: true },
    /** The task as the dialog follows it: each change reads the list again (another device's photo arrives as a change of the task). */
    task: { type: Object, default: null },
  },
  /** @param {{app: App, id: string, task: unknown}} props */
  setup(props) {
    const db = props.app.db;
    const key = `tasks/${props.id}`;
    /** @type {import('vue').ShallowRef<Shown[]>} */
    const shown = shallowRef([]);
    const busy = ref(false);
    const input = ref(/** @type {HTMLInputElement | null} */ (null));
    /** Object URLs handed out, by hash (a photo's bytes never change under its hash). @type {Map<string, string>} */
    const urls = new Map();

    let asked = 0;
    const load = async () => {
      const n = ++asked;
      const list = await db.attachments(key).catch(() => []);
      /** @type {Shown[]} */
      const next = [];
      for (const a of list) {
        let url = urls.get(a.hash) ?? null;
        let missing = null;
        if (!url) {
          try {
            url = URL.createObjectURL(await db.attachment(key, a.name));
            urls.set(a.hash, url);
          } catch (e) {
            missing = /** @type {any} */ (e)?.name === 'AttachmentUnavailableError' ? 'Not on this device yet' : 'Cannot be shown';
          }
        }
        next.push({ name: a.name, size: a.size, url, missing });
      }
      if (n !== asked) return;
      shown.value = next;
      // A photo whose bytes are not here yet (the other device has not uploaded them, or this one
      // is offline): asked again while the dialog is open.
      clearTimeout(retry);
      if (!gone && next.some((p) => p.missing)) retry = setTimeout(load, RETRY_MS);
    };
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    let retry;
    let gone = false;
    watch(() => props.task, load, { immediate: true });
    onUnmounted(() => {
      gone = true;
      clearTimeout(retry);
      urls.forEach((u) => URL.revokeObjectURL(u));
    });

    const add = async (/** @type {Event} */ e) => {
      const box = /** @type {HTMLInputElement} */ (e.target);
      const files = [...(box.files ?? [])];
      box.value = '';
      if (!files.length) return;
      busy.value = true;
      await report(addPhotos(db, props.id, files));
      busy.value = false;
      await load();
    };
    const remove = async (/** @type {string} */ name) => {
      if (!(await confirmDialog('Remove photo', `Remove the photo “${name}” from this task?`, 'Remove photo'))) return;
      await report(removePhoto(db, props.id, name));
      await load();
    };

    return () => {
      const off = !props.app.ui.editable;
      return h('div', { class: 'field photos' }, [
        h('span', null, 'Photos'),
        h('ul', { class: 'photo-strip', 'aria-label': 'Photos' }, shown.value.map((p) =>
          h('li', { key: p.name }, [
            p.url
              ? h('img', { src: p.url, alt: p.name, title: `${p.name} · ${sizeText(p.size)}` })
              : h('span', { class: 'photo-missing', role: 'img', 'aria-label': p.name, title: p.name }, p.missing ?? ''),
            h('button', { class: 'icon', type: 'button', 'aria-label': `Remove photo ${p.name}`, disabled: off, onClick: () => remove(p.name) }, '×'),
          ]))),
        h('label', { class: 'button-like', 'aria-disabled': String(off || busy.value) }, [
          busy.value ? 'Adding…' : 'Add photos',
          h('input', { ref: input, type: 'file', accept: 'image/*', multiple: true, hidden: true, 'aria-label': 'Add photos', disabled: off || busy.value, onChange: add }),
        ]),
      ]);
    };
  },
};
