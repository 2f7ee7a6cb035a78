//! The core's [`Storage`] trait over OPFS's `FileSystemSyncAccessHandle` (dedicated workers
//! only): `getSize`, `read(buf, {at})`, `write(buf, {at})`, `truncate`, `flush`.
//!
//! Buffers cross as `Uint8Array` views of wasm memory (no copy): no wasm code runs while the
//! handle reads or writes, so memory cannot grow and detach the view during the call.
//!
//! The log batches frames itself (one `write` per flush), so nothing is buffered here. An
//! optional [`Quota`] shared by a repository's files enforces a byte limit in the engine (tests
//! use it to provoke `QuotaExceededError`; the browser's own quota maps to the same error).

use ibexdb::{Storage, StorageError, StorageErrorKind};
use js_sys::{Object, Reflect, Uint8Array};
use std::cell::Cell;
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

#[wasm_bindgen]
extern "C" {
    /// A `FileSystemSyncAccessHandle` (bound structurally; never checked with `instanceof`).
    #[derive(Clone)]
    pub type SyncHandle;

    #[wasm_bindgen(method, catch, js_name = getSize)]
    fn get_size(this: &SyncHandle) -> Result<f64, JsValue>;
    #[wasm_bindgen(method, catch, js_name = read)]
    fn read_js(this: &SyncHandle, buf: &Uint8Array, opts: &Object) -> Result<f64, JsValue>;
    #[wasm_bindgen(method, catch, js_name = write)]
    fn write_js(this: &SyncHandle, buf: &Uint8Array, opts: &Object) -> Result<f64, JsValue>;
    #[wasm_bindgen(method, catch, js_name = truncate)]
    fn truncate_js(this: &SyncHandle, len: f64) -> Result<(), JsValue>;
    #[wasm_bindgen(method, catch, js_name = flush)]
    fn flush_js(this: &SyncHandle) -> Result<(), JsValue>;
}

/// A byte limit shared by the files of one repository.
#[derive(Debug)]
pub struct Quota {
    limit: u64,
    used: Cell<u64>,
}

impl Quota {
    pub fn new(limit: u64) -> Rc<Quota> {
        Rc::new(Quota {
            limit,
            used: Cell::new(0),
        })
    }

    /// Count `n` more bytes (an attachment file's), or refuse them: QuotaExceeded.
    pub fn charge(&self, n: u64) -> Result<(), StorageError> {
        let used = self.used.get() + n;
        if used > self.limit {
            return Err(StorageError::new(
                StorageErrorKind::QuotaExceeded,
                format!(
                    "the repository's byte limit ({} bytes) would be exceeded ({used} bytes)",
                    self.limit
                ),
            ));
        }
        self.used.set(used);
        Ok(())
    }

    /// Give back `n` bytes counted by [`Quota::charge`].
    pub fn release(&self, n: u64) {
        self.used.set(self.used.get().saturating_sub(n));
    }
}

/// One OPFS file opened for synchronous access.
pub struct OpfsStorage {
    handle: SyncHandle,
    /// Cached length: the engine owns the file exclusively (sync access handles are exclusive).
    size: Cell<u64>,
    /// Reused `{at}` options object and its key.
    opts: Object,
    at: JsValue,
    quota: Option<Rc<Quota>>,
}

impl std::fmt::Debug for OpfsStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OpfsStorage({} bytes)", self.size.get())
    }
}

/// Turn a thrown DOMException (or anything else) into a storage error.
fn storage_err(what: &str, e: JsValue) -> StorageError {
    let name = Reflect::get(&e, &JsValue::from_str("name"))
        .ok()
        .and_then(|v| v.as_string())
        .unwrap_or_else(|| "Error".into());
    let message = Reflect::get(&e, &JsValue::from_str("message"))
        .ok()
        .and_then(|v| v.as_string())
        .unwrap_or_else(|| format!("{e:?}"));
    let kind = match name.as_str() {
        "QuotaExceededError" => StorageErrorKind::QuotaExceeded,
        _ => StorageErrorKind::Io,
    };
    StorageError::new(kind, format!("OPFS {what} failed: {name}: {message}"))
}

/// A write that reports fewer bytes than asked. Chromium's in-memory OPFS (private windows)
/// out of quota returns its negative file error as the count, read as an unsigned 32-bit
/// number: `-8` (`FILE_ERROR_NO_SPACE`) is the quota, as the `QuotaExceededError` a disk-backed
/// OPFS throws.
fn short_write(n: f64, len: usize, offset: u64) -> StorageError {
    const FILE_ERROR_NO_SPACE: i32 = -8;
    let code = (n > len as f64 && n <= u32::MAX as f64).then_some(n as u32 as i32);
    if code == Some(FILE_ERROR_NO_SPACE) {
        return StorageError::new(
            StorageErrorKind::QuotaExceeded,
            format!("OPFS write failed: no space for {len} bytes at {offset} (the origin's storage quota is used up)"),
        );
    }
    StorageError::io(format!("short write: {n} of {len} bytes at {offset}"))
}

impl OpfsStorage {
    /// Wrap an open handle. `quota` (if any) is charged with the file's current size.
    pub fn new(handle: JsValue, quota: Option<Rc<Quota>>) -> Result<OpfsStorage, StorageError> {
        if handle.is_undefined() || handle.is_null() {
            return Err(StorageError::new(
                StorageErrorKind::Unavailable,
                "no FileSystemSyncAccessHandle was given",
            ));
        }
        let handle: SyncHandle = handle.unchecked_into();
        let size = handle.get_size().map_err(|e| storage_err("getSize", e))? as u64;
        if let Some(q) = &quota {
            q.used.set(q.used.get() + size);
        }
        Ok(OpfsStorage {
            handle,
            size: Cell::new(size),
            opts: Object::new(),
            at: JsValue::from_str("at"),
            quota,
        })
    }

    fn set_at(&self, offset: u64) {
        // Setting a data property on a plain object cannot throw.
        let _ = Reflect::set(&self.opts, &self.at, &JsValue::from_f64(offset as f64));
    }

    /// The handle (so the worker can close it).
    pub fn handle(&self) -> &SyncHandle {
        &self.handle
    }

    fn charge(&self, new_size: u64) -> Result<(), StorageError> {
        let old = self.size.get();
        if let Some(q) = &self.quota {
            let used = q.used.get() - old + new_size;
            if new_size > old && used > q.limit {
                return Err(StorageError::new(
                    StorageErrorKind::QuotaExceeded,
                    format!(
                        "the repository's byte limit ({} bytes) would be exceeded ({used} bytes)",
                        q.limit
                    ),
                ));
            }
        }
        Ok(())
    }

    fn resized(&self, new_size: u64) {
        let old = self.size.get();
        if let Some(q) = &self.quota {
            q.used.set(q.used.get() - old + new_size);
        }
        self.size.set(new_size);
    }
}

impl Drop for OpfsStorage {
    fn drop(&mut self) {
        if let Some(q) = &self.quota {
            q.used.set(q.used.get().saturating_sub(self.size.get()));
        }
    }
}

impl Storage for OpfsStorage {
    fn len(&self) -> Result<u64, StorageError> {
        Ok(self.size.get())
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), StorageError> {
        let end = offset.checked_add(buf.len() as u64);
        if end.is_none_or(|e| e > self.size.get()) {
            return Err(StorageError::new(
                StorageErrorKind::OutOfBounds,
                format!(
                    "read of {} bytes at {offset} past the end ({})",
                    buf.len(),
                    self.size.get()
                ),
            ));
        }
        if buf.is_empty() {
            return Ok(());
        }
        self.set_at(offset);
        // SAFETY: the view lives only for this call, during which no wasm code runs (so wasm
        // memory cannot grow and detach it), and `buf` is exclusively borrowed.
        let view = unsafe { Uint8Array::view_mut_raw(buf.as_mut_ptr(), buf.len()) };
        let n = self
            .handle
            .read_js(&view, &self.opts)
            .map_err(|e| storage_err("read", e))?;
        if n as usize != buf.len() {
            return Err(StorageError::new(
                StorageErrorKind::OutOfBounds,
                format!("short read: {n} of {} bytes at {offset}", buf.len()),
            ));
        }
        Ok(())
    }

    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), StorageError> {
        let end = offset + data.len() as u64;
        let new_size = end.max(self.size.get());
        self.charge(new_size)?;
        if data.is_empty() {
            return Ok(());
        }
        self.set_at(offset);
        // SAFETY: as in read_at; the view is only read by the handle during this call.
        let view = unsafe { Uint8Array::view(data) };
        let res = self.handle.write_js(&view, &self.opts);
        match res {
            Ok(n) if n as usize == data.len() => {
                self.resized(new_size);
                Ok(())
            }
            Ok(n) => {
                // Part of the data may be on disk: the real size is unknown until asked.
                let real = self.handle.get_size().unwrap_or(new_size as f64) as u64;
                self.resized(real);
                Err(short_write(n, data.len(), offset))
            }
            Err(e) => {
                if let Ok(real) = self.handle.get_size() {
                    self.resized(real as u64);
                }
                Err(storage_err("write", e))
            }
        }
    }

    fn truncate(&mut self, len: u64) -> Result<(), StorageError> {
        self.charge(len)?;
        self.handle
            .truncate_js(len as f64)
            .map_err(|e| storage_err("truncate", e))?;
        self.resized(len);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), StorageError> {
        self.handle.flush_js().map_err(|e| storage_err("flush", e))
    }
}
