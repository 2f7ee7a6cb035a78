//! `PgRepo`: one repository on a node of the PostgreSQL store. Its replica is a core `Repo`
//! over `MemStorage` (with the access list and the server's admission rules), opened from
//! the stored snapshot if there is one and brought up to date from the rows in sequence
//! order, so its commit-table positions are PostgreSQL's sequence numbers. Rows go through
//! the core's receive as the deployment's own storage (`Hub::push_stored`): the node that
//! stored them verified their seals' signatures, so those are not verified again, but ids,
//! parents and the permission rule are; a row the replica does not take at its sequence means
//! the replica cannot follow the database, which is an error, never a silent divergence.

use super::rows::Db;
use super::{unavailable, Pg};
use crate::config::Config;
use crate::store::{server_options, Refreshed, RepoStore, StoreError, Stored};
use ibexdb::{Admission, CommitId, Error, Hub, MemStorage, Repo};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use tokio_postgres::GenericClient;

/// Rows taken in per step while catching up: at most this many commits…
const STEP_ROWS: u64 = 1000;
/// …and about this many bytes (at least one commit).
const STEP_BYTES: i64 = 4 << 20;
/// A snapshot larger than this is not written (PostgreSQL's `bytea` holds 1 GiB at most).
const MAX_SNAPSHOT_BYTES: usize = 512 << 20;

/// One repository of the PostgreSQL store on this node.
pub struct PgRepo {
    pub(super) pg: Arc<Pg>,
    cfg: Arc<Config>,
    pub(super) name: String,
    /// Its row in `ibexdb_repos`, once it has one.
    pub(super) id: Option<i64>,
    pub(super) hub: Hub<MemStorage>,
    /// While rows are applied, the replica's clock reads "the end of time": rows were
    /// checked for clock skew by the node that stored them, against its own clock.
    replaying: Arc<AtomicBool>,
}

/// An empty replica, or one opened from a stored log image and snapshot.
fn replica(
    cfg: &Config,
    name: &str,
    image: Option<(Vec<u8>, Vec<u8>)>,
    replaying: &Arc<AtomicBool>,
) -> Result<Hub<MemStorage>, Error> {
    let flag = replaying.clone();
    let mut system = ibexdb::system_clock();
    let clock = Box::new(move || {
        if flag.load(SeqCst) {
            u64::MAX
        } else {
            system()
        }
    });
    let mut opts = server_options(cfg, name, clock);
    // Commits whose parents are missing are refused, not held: a commit held in one node's
    // memory would take a sequence number no other node knows of once its parents arrive.
    opts.max_pending = 0;
    let (log, snap) = image.unwrap_or_default();
    let snap = MemStorage::from_bytes(snap);
    Hub::new(Repo::open(MemStorage::from_bytes(log), Some(snap), opts)?)
}

impl PgRepo {
    /// Build the replica of repository `name` from PostgreSQL.
    pub fn open(pg: &Arc<Pg>, cfg: &Arc<Config>, name: &str) -> Result<PgRepo, Error> {
        let replaying = Arc::new(AtomicBool::new(false));
        let mut me = PgRepo {
            pg: pg.clone(),
            cfg: cfg.clone(),
            name: name.to_string(),
            id: None,
            hub: replica(cfg, name, None, &replaying)?,
            replaying,
        };
        me.rebuild().map_err(|e| e.error().clone())?;
        Ok(me)
    }

    /// Drop the replica and build it again: the snapshot, then the rows after it.
    fn rebuild(&mut self) -> Result<(), StoreError> {
        let pg = self.pg.clone();
        pg.run(async {
            let mut conn = pg.pool.get().await.map_err(StoreError::Unavailable)?;
            let db = Db::new(&*conn.client(), pg.timeout);
            self.id = None;
            self.hub = replica(&self.cfg, &self.name, None, &self.replaying)
                .map_err(StoreError::Broken)?;
            let Some((id, head)) = db.repo(&self.name).await? else {
                conn.release();
                return Ok(());
            };
            self.id = Some(id);
            if let Some((seq, log, snap)) = db.snapshot(id).await? {
                self.use_image(seq, log, snap);
            }
            self.apply_rows(&db, id, head).await?;
            conn.release();
            Ok(())
        })
    }

    /// Start from a stored snapshot (if it opens and covers `seq` commits; otherwise the
    /// rows are replayed from the start).
    fn use_image(&mut self, seq: u64, log: Vec<u8>, snap: Vec<u8>) {
        match replica(&self.cfg, &self.name, Some((log, snap)), &self.replaying) {
            Ok(hub) if hub.head() == seq => self.hub = hub,
            Ok(_) | Err(_) => crate::log::event(
                "pg_snapshot_ignored",
                &[("repo", &self.name), ("seq", &seq)],
            ),
        }
    }

    /// Apply the rows after the replica's head up to `head`, in steps, through the core's
    /// receive; how far it got and whether the access list changed.
    pub(super) async fn apply_rows<C: GenericClient + Sync>(
        &mut self,
        db: &Db<'_, C>,
        id: i64,
        head: u64,
    ) -> Result<Refreshed, StoreError> {
        let from = self.hub.head();
        let before = self.hub.repo().access().clone();
        while self.hub.head() < head {
            let after = self.hub.head();
            let (rows, seals) = db.step(id, after, head, STEP_ROWS, STEP_BYTES).await?;
            if rows.is_empty() {
                break; // a notice named a head not (or not yet) visible here
            }
            let upto = after + rows.len() as u64;
            let commits: Vec<(CommitId, Vec<u8>)> =
                rows.into_iter().map(|(_, id, b)| (id, b)).collect();
            self.replaying.store(true, SeqCst);
            let r = self.hub.push_stored(&commits, &seals);
            self.replaying.store(false, SeqCst);
            let why = match r {
                Ok(_) if self.hub.head() == upto => continue,
                Ok(_) => "rows were not taken at their sequence numbers".to_string(),
                Err(e) => e.to_string(),
            };
            return Err(StoreError::Broken(unavailable(format!(
                "repository {} does not replay from sequence {}: {why}",
                self.name,
                after + 1
            ))));
        }
        Ok(Refreshed {
            from,
            to: self.hub.head(),
            access_changed: *self.hub.repo().access() != before,
        })
    }

    /// Write the replica's snapshot and store it with its log image (unless PostgreSQL
    /// already has one as recent).
    fn save_snapshot(&mut self) -> Result<(), StoreError> {
        let Some(id) = self.id else {
            return Ok(());
        };
        self.hub.write_snapshot().map_err(StoreError::Unavailable)?;
        let repo = self.hub.repo();
        let log = repo.storage().bytes();
        let snap = repo.snapshot_storage().map(|s| s.bytes()).unwrap_or(&[]);
        if log.len() + snap.len() > MAX_SNAPSHOT_BYTES {
            return Err(StoreError::Unavailable(unavailable(
                "the snapshot is too large for one row",
            )));
        }
        let (pg, head) = (self.pg.clone(), self.hub.head());
        pg.run(async {
            let mut conn = pg.pool.get().await.map_err(StoreError::Unavailable)?;
            let db = Db::new(&*conn.client(), pg.timeout);
            if db.snapshot_seq(id).await? < head {
                db.save_snapshot(id, head, log, snap).await?;
            }
            conn.release();
            Ok(())
        })
    }
}

impl RepoStore for PgRepo {
    type S = MemStorage;

    fn hub(&self) -> &Hub<MemStorage> {
        &self.hub
    }

    fn push(
        &mut self,
        admission: &Admission,
        commits: &[(CommitId, Vec<u8>)],
        seals: &[Vec<u8>],
    ) -> Result<Stored, StoreError> {
        self.push_in_transaction(admission, commits, seals)
    }

    /// Take in the rows other nodes stored since the replica's head: up to the head a notice
    /// named (one query fewer), else up to the repository row's head.
    fn refresh(&mut self, known: Option<u64>) -> Result<Refreshed, StoreError> {
        let pg = self.pg.clone();
        pg.run(async {
            let mut conn = pg.pool.get().await.map_err(StoreError::Unavailable)?;
            let db = Db::new(&*conn.client(), pg.timeout);
            let head = self.hub.head();
            if let (Some(id), Some(at)) = (self.id, known) {
                let r = self.apply_rows(&db, id, at).await?;
                conn.release();
                return Ok(r);
            }
            let Some((id, at)) = db.repo(&self.name).await? else {
                conn.release();
                return Ok(Refreshed {
                    from: head,
                    to: head,
                    access_changed: false,
                });
            };
            self.check_id(id)?;
            let r = self.apply_rows(&db, id, at).await?;
            conn.release();
            Ok(r)
        })
    }

    fn tail_bytes(&self) -> u64 {
        self.hub.repo().tail_bytes()
    }

    fn write_snapshot(&mut self) -> Result<(), Error> {
        self.save_snapshot().map_err(|e| e.error().clone())
    }

    fn reopen(&mut self) -> Result<(), Error> {
        self.rebuild().map_err(|e| e.error().clone())
    }
}

impl PgRepo {
    /// The repository's row id: learnt once, then it must not change.
    pub(super) fn check_id(&mut self, id: i64) -> Result<(), StoreError> {
        match self.id {
            Some(known) if known != id => Err(StoreError::Broken(unavailable(format!(
                "repository {} was re-created in the database",
                self.name
            )))),
            _ => {
                self.id = Some(id);
                Ok(())
            }
        }
    }
}
