//! The embedded file store: a repository is `DIR/NAME.log` and `DIR/NAME.snapshot` over the
//! core's `FileStorage`, each fsync timed into the metrics; files and the data directory
//! fsynced when created, so a new repository survives a crash once its first push is
//! acknowledged. One node only: nothing else may write these files.

use crate::config::{Config, Store};
use crate::metrics::Metrics;
use crate::store::{server_options, Refreshed, RepoStore, StoreError, Stored};
use ibexdb::{system_clock, Admission, CommitId, Error, FileStorage, Hub, Repo};
use ibexdb::{Storage, StorageError};
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

/// Open repository `name` (its log and snapshot) as the server's hub.
fn open_hub(cfg: &Config, name: &str, metrics: &Arc<Metrics>) -> Result<Hub<MeteredFile>, Error> {
    let Store::Files(dir) = &cfg.store else {
        unreachable!("the file store is used only with --data")
    };
    let log = open_file(dir, &format!("{name}.log"), metrics)?;
    let snapshot = open_file(dir, &format!("{name}.snapshot"), metrics)?;
    let opts = server_options(cfg, name, system_clock());
    Hub::new(Repo::open(log, Some(snapshot), opts)?)
}

/// One repository in the file store.
pub struct FileRepo {
    hub: Hub<MeteredFile>,
    name: String,
    cfg: Arc<Config>,
    metrics: Arc<Metrics>,
}

impl FileRepo {
    pub fn open(cfg: &Arc<Config>, name: &str, metrics: &Arc<Metrics>) -> Result<FileRepo, Error> {
        Ok(FileRepo {
            hub: open_hub(cfg, name, metrics)?,
            name: name.to_string(),
            cfg: cfg.clone(),
            metrics: metrics.clone(),
        })
    }
}

impl RepoStore for FileRepo {
    type S = MeteredFile;

    fn hub(&self) -> &Hub<MeteredFile> {
        &self.hub
    }

    /// `Hub::push`: verified, appended and fsynced before it returns.
    fn push(
        &mut self,
        admission: &Admission,
        commits: &[(CommitId, Vec<u8>)],
        seals: &[Vec<u8>],
    ) -> Result<Stored, StoreError> {
        let done = self
            .hub
            .push(admission, commits, seals)
            .map_err(StoreError::from_push)?;
        Ok(Stored {
            ack: done.ack,
            relay_from: done.from,
            from: done.from,
            to: done.to,
        })
    }

    /// Nobody else writes these files.
    fn refresh(&mut self, _: Option<u64>) -> Result<Refreshed, StoreError> {
        let head = self.hub.head();
        Ok(Refreshed {
            from: head,
            to: head,
            access_changed: false,
        })
    }

    fn tail_bytes(&self) -> u64 {
        self.hub.repo().tail_bytes()
    }

    fn write_snapshot(&mut self) -> Result<(), Error> {
        self.hub.write_snapshot().map(|_| ())
    }

    fn remove_if_empty(&mut self) {
        let Store::Files(dir) = &self.cfg.store else {
            return;
        };
        if self.hub.head() == 0 {
            for ext in ["log", "snapshot"] {
                let _ = std::fs::remove_file(dir.join(format!("{}.{ext}", self.name)));
            }
        }
    }

    /// Reopen from disk: recovery drops a torn tail.
    fn reopen(&mut self) -> Result<(), Error> {
        self.hub = open_hub(&self.cfg, &self.name, &self.metrics)?;
        Ok(())
    }
}
