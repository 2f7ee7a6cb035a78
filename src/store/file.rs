//! A native file backend for [`Storage`] (the sync server's repositories). Not built for
//! wasm32, where OPFS handles play this part (bindings/wasm/src/opfs.rs).

use super::storage::Storage;
use crate::error::StorageError;
use std::fs::{File, OpenOptions};
use std::path::Path;

/// A native file backend (`sync_data` on flush).
#[derive(Debug)]
pub struct FileStorage {
    file: File,
}

impl FileStorage {
    /// Open or create the file at `path`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StorageError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        Ok(FileStorage { file })
    }
}

impl Storage for FileStorage {
    fn len(&self) -> Result<u64, StorageError> {
        Ok(self.file.metadata()?.len())
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), StorageError> {
        use std::os::unix::fs::FileExt;
        self.file.read_exact_at(buf, offset)?;
        Ok(())
    }
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), StorageError> {
        use std::os::unix::fs::FileExt;
        self.file.write_all_at(data, offset)?;
        Ok(())
    }
    fn truncate(&mut self, len: u64) -> Result<(), StorageError> {
        self.file.set_len(len)?;
        Ok(())
    }
    fn flush(&mut self) -> Result<(), StorageError> {
        self.file.sync_data()?;
        Ok(())
    }
}
