//! A repository's files: `DIR/NAME.log` and `DIR/NAME.snapshot` over the core's
//! `FileStorage`, each fsync timed into the metrics; files and the data directory fsynced
//! when created, so a new repository survives a crash once its first push is acknowledged.

use crate::config::Config;
use crate::metrics::Metrics;
use ibexdb::{system_clock, Error, FileStorage, Hub, Repo, RepoOptions, Storage, StorageError};
use std::fs::File;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// A file whose flushes (fsync) are timed into the `ibexdb_fsync_seconds` histogram.
pub struct MeteredFile {
    file: FileStorage,
    metrics: Arc<Metrics>,
}

impl Storage for MeteredFile {
    fn len(&self) -> Result<u64, StorageError> {
        self.file.len()
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), StorageError> {
        self.file.read_at(offset, buf)
    }
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), StorageError> {
        self.file.write_at(offset, data)
    }
    fn truncate(&mut self, len: u64) -> Result<(), StorageError> {
        self.file.truncate(len)
    }
    fn flush(&mut self) -> Result<(), StorageError> {
        let t = Instant::now();
        let r = self.file.flush();
        self.metrics.fsync.observe(t.elapsed());
        r
    }
}

/// fsync a directory, so that the entries created in it are durable.
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Create the data directory (and fsync it and its parent).
pub fn create_data_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    sync_dir(dir)?;
    match dir.canonicalize()?.parent() {
        Some(parent) => sync_dir(parent),
        None => Ok(()),
    }
}

/// Open or create one file; a new one is fsynced with its directory.
fn open_file(dir: &Path, file: &str, metrics: &Arc<Metrics>) -> Result<MeteredFile, Error> {
    let path = dir.join(file);
    let existed = path.exists();
    let storage = FileStorage::open(&path)?;
    if !existed {
        File::open(&path)
            .and_then(|f| f.sync_all())
            .and_then(|_| sync_dir(dir))
            .map_err(StorageError::from)?;
    }
    Ok(MeteredFile {
        file: storage,
        metrics: metrics.clone(),
    })
}

/// Open repository `name` (its log and snapshot) as the server's hub: trusted mode without an
/// identity (the server writes no commits of its own), with the configured bounds.
pub fn open_hub(
    cfg: &Config,
    name: &str,
    metrics: &Arc<Metrics>,
) -> Result<Hub<MeteredFile>, Error> {
    let log = open_file(&cfg.data, &format!("{name}.log"), metrics)?;
    let snapshot = open_file(&cfg.data, &format!("{name}.snapshot"), metrics)?;
    let mut opts = RepoOptions::new(name, None, system_clock());
    opts.trusted = true;
    opts.accept_trusted = cfg.accept_trusted;
    opts.max_pending = cfg.max_pending;
    opts.max_unknown_sealed = cfg.max_unknown_sealed;
    Hub::new(Repo::open(log, Some(snapshot), opts)?)
}
