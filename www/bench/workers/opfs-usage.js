// How much OPFS an engine uses: every file under its directory, recursively. Both adapters report
// it in `stats` (opfsBytes, opfsFiles, or opfsError when the directory cannot be read).

/**
 * Bytes and file count under `dir`, recursively.
 * @param {FileSystemDirectoryHandle} dir
 * @returns {Promise<{bytes: number, files: number}>}
 */
async function walk(dir) {
  let bytes = 0;
  let files = 0;
  for await (const h of /** @type {any} */ (dir).values()) {
    if (h.kind === 'directory') {
      const sub = await walk(h);
      bytes += sub.bytes;
      files += sub.files;
    } else {
      bytes += (await h.getFile()).size;
      files++;
    }
  }
  return { bytes, files };
}

/**
 * `{opfsBytes, opfsFiles}` of the directory `getDir()` returns, or `{opfsBytes: null, opfsError}`.
 * @param {() => Promise<FileSystemDirectoryHandle>} getDir
 */
export async function opfsUsage(getDir) {
  try {
    const { bytes, files } = await walk(await getDir());
    return { opfsBytes: bytes, opfsFiles: files };
  } catch (err) {
    const e = /** @type {any} */ (err);
    return { opfsBytes: null, opfsError: `${e.name}: ${e.message}` };
  }
}
