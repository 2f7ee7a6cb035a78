// The OPFS handle pool: sync access handles a worker keeps after it closes a repository, so that
// its next open of the same repository takes them instead of asking the browser again (each file
// costs two browser round trips: its file handle, then its sync access handle; an open of a
// signed repository has three files). SQLite's opfs-sahpool VFS does the same for its whole
// pool, from the moment it is installed (docs/design.md §11.5.1).
//
// A sync access handle is exclusive: while a worker keeps one, no other context can open the
// file or remove it (the File System standard's locks). So a worker that keeps handles listens
// on the BroadcastChannel `ibexdb-files:<name>` and lets them go when another context asks
// (`askRelease`): a context whose open or removal is refused with NoModificationAllowedError
// asks, and retries. Handles are kept for at most POOL_REPOSITORIES repositories per worker
// (the least recently parked go first) and never outlive the worker.

/** Repositories whose handles one worker keeps at most. */
export const POOL_REPOSITORIES = 8;

/** The BroadcastChannel on which contexts ask for repository `name`'s files. @param {string} name */
export const releaseChannelName = (name) => `ibexdb-files:${name}`;

/**
 * Kept handles: repository -> (file -> sync access handle), in the order they were parked, and
 * the channel each repository's keeper listens on.
 * @type {Map<string, {files: Map<string, any>, channel: BroadcastChannel | null}>}
 */
const parked = new Map();

/** @param {any} h */
function closeQuietly(h) {
  try {
    h.close();
  } catch {
    // already closed
  }
}

/**
 * Close and forget every handle kept for repository `name` (another context asked for them, the
 * repository is being removed, or the pool is full).
 * @param {string} name
 */
export function dropParked(name) {
  const entry = parked.get(name);
  if (!entry) return;
  parked.delete(name);
  entry.channel?.close();
  for (const h of entry.files.values()) closeQuietly(h);
}

/**
 * Keep `handles` (file name -> open sync access handle) of repository `name` for the next open.
 * @param {string} name
 * @param {Map<string, any>} handles
 */
export function park(name, handles) {
  if (handles.size === 0) return;
  let entry = parked.get(name);
  if (entry) parked.delete(name); // re-inserted last: the most recently parked
  else {
    /** @type {BroadcastChannel | null} */
    let channel = null;
    if (typeof BroadcastChannel === 'function') {
      channel = new BroadcastChannel(releaseChannelName(name));
      channel.onmessage = (ev) => {
        if (ev.data?.type === 'release') dropParked(name);
      };
    }
    entry = { files: new Map(), channel };
  }
  for (const [file, h] of handles) {
    const old = entry.files.get(file);
    if (old && old !== h) closeQuietly(old);
    entry.files.set(file, h);
  }
  parked.set(name, entry);
  while (parked.size > POOL_REPOSITORIES) dropParked(/** @type {string} */ (parked.keys().next().value));
}

/**
 * Take the kept handle of `file` in repository `name`, if any (it is no longer kept: the caller
 * owns it).
 * @param {string} name
 * @param {string} file
 * @returns {any | undefined}
 */
export function takeParked(name, file) {
  const entry = parked.get(name);
  const h = entry?.files.get(file);
  if (!entry || !h) return undefined;
  entry.files.delete(file);
  if (entry.files.size === 0) {
    parked.delete(name);
    entry.channel?.close();
  }
  return h;
}

/**
 * The files of repository `name` whose handles this worker keeps (tests and the benchmark's notes).
 * @param {string} name
 * @returns {string[]}
 */
export const keptFiles = (name) => [...(parked.get(name)?.files.keys() ?? [])].sort();

/**
 * Ask every other context that keeps repository `name`'s handles to let them go (this context's
 * own are dropped at once).
 * @param {string} name
 */
export function askRelease(name) {
  dropParked(name);
  if (typeof BroadcastChannel !== 'function') return;
  const ch = new BroadcastChannel(releaseChannelName(name));
  ch.postMessage({ type: 'release' });
  ch.close();
}
