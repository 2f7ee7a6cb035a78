//! Storage behind a small synchronous trait. `FileSystemSyncAccessHandle` maps onto it almost
//! one to one (getSize, read {at}, write {at}, truncate, flush).

use crate::error::{StorageError, StorageErrorKind};

/// A byte array with positional reads and writes. All calls are synchronous.
pub trait Storage {
    /// Current length in bytes.
    fn len(&self) -> Result<u64, StorageError>;
    /// Fill `buf` from `offset`. Reading past the end is an `OutOfBounds` error.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), StorageError>;
    /// Write all of `data` at `offset`, extending the storage if needed.
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), StorageError>;
    /// Set the length to `len` (shrinking or zero-extending).
    fn truncate(&mut self, len: u64) -> Result<(), StorageError>;
    /// Make every write so far durable.
    fn flush(&mut self) -> Result<(), StorageError>;

    fn is_empty(&self) -> Result<bool, StorageError> {
        Ok(self.len()? == 0)
    }

    /// Read `len` bytes at `offset` into a new vector.
    fn read_vec(&self, offset: u64, len: usize) -> Result<Vec<u8>, StorageError> {
        let mut v = vec![0u8; len];
        self.read_at(offset, &mut v)?;
        Ok(v)
    }
}

impl<S: Storage + ?Sized> Storage for Box<S> {
    fn len(&self) -> Result<u64, StorageError> {
        (**self).len()
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), StorageError> {
        (**self).read_at(offset, buf)
    }
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), StorageError> {
        (**self).write_at(offset, data)
    }
    fn truncate(&mut self, len: u64) -> Result<(), StorageError> {
        (**self).truncate(len)
    }
    fn flush(&mut self) -> Result<(), StorageError> {
        (**self).flush()
    }
}

/// An in-memory backend. Cloning shares nothing.
#[derive(Debug, Default, Clone)]
pub struct MemStorage {
    data: Vec<u8>,
}

impl MemStorage {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn from_bytes(data: Vec<u8>) -> Self {
        MemStorage { data }
    }
    pub fn bytes(&self) -> &[u8] {
        &self.data
    }
    pub fn bytes_mut(&mut self) -> &mut Vec<u8> {
        &mut self.data
    }
}

fn range(offset: u64, len: usize, total: usize) -> Result<std::ops::Range<usize>, StorageError> {
    let start = usize::try_from(offset)
        .map_err(|_| StorageError::new(StorageErrorKind::OutOfBounds, "offset too large"))?;
    let end = start
        .checked_add(len)
        .ok_or_else(|| StorageError::new(StorageErrorKind::OutOfBounds, "offset overflow"))?;
    if end > total {
        return Err(StorageError::new(
            StorageErrorKind::OutOfBounds,
            format!("read of {len} bytes at {offset} past end {total}"),
        ));
    }
    Ok(start..end)
}

impl Storage for MemStorage {
    fn len(&self) -> Result<u64, StorageError> {
        Ok(self.data.len() as u64)
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), StorageError> {
        let r = range(offset, buf.len(), self.data.len())?;
        buf.copy_from_slice(&self.data[r]);
        Ok(())
    }
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), StorageError> {
        let start = offset as usize;
        let end = start + data.len();
        if self.data.len() < end {
            self.data.resize(end, 0);
        }
        self.data[start..end].copy_from_slice(data);
        Ok(())
    }
    fn truncate(&mut self, len: u64) -> Result<(), StorageError> {
        self.data.resize(len as usize, 0);
        Ok(())
    }
    fn flush(&mut self) -> Result<(), StorageError> {
        Ok(())
    }
}
