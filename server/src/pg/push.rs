//! The push transaction of the PostgreSQL store (docs/design.md §12.5):
//!
//! 1. `BEGIN` and lock the repository's row (`SELECT … FOR UPDATE`; the row is made by the
//!    first push): pushes to one repository queue here, whichever node they reach;
//! 2. apply to the replica the rows other nodes stored since it last looked, in order;
//! 3. verify the push against the replica (`Hub::push`: seals, ids, the permission rule and
//!    the server's admission for the session), so a revocation stored through another node
//!    is seen; a refusal rolls back and stores nothing;
//! 4. insert the new commits at the next sequence numbers (a commit stored already violates
//!    the unique id and aborts everything) and the new seals, set the head, NOTIFY the other
//!    nodes (delivered at commit), and `COMMIT` (synchronous commit): only now is the push
//!    acknowledged.
//!
//! Statements of one step travel together (pipelined): two round trips per push when the
//! replica is up to date. From step 3 on the replica holds what is not committed: if
//! anything fails after it, the replica is dropped and rebuilt from PostgreSQL
//! (`StoreError::Broken`), so nothing that did not commit is acknowledged or relayed.

use super::replica::PgRepo;
use super::rows::Db;
use super::unavailable;
use crate::store::{StoreError, Stored};
use ibexdb::{Admission, CommitId, Error, PushOutcome};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;
use tokio_postgres::Client;

impl PgRepo {
    pub(super) fn push_in_transaction(
        &mut self,
        admission: &Admission,
        commits: &[(CommitId, Vec<u8>)],
        seals: &[Vec<u8>],
    ) -> Result<Stored, StoreError> {
        let pg = self.pg.clone();
        let t = Instant::now();
        let r = pg.run(async {
            let mut conn = pg.pool.get().await.map_err(StoreError::Unavailable)?;
            let db = Db::new(&*conn.client(), pg.timeout);
            let r = self.store_push(&db, admission, commits, seals).await;
            if let Err(StoreError::Refused(_)) = &r {
                db.simple("ROLLBACK").await?;
            }
            if matches!(r, Ok(_) | Err(StoreError::Refused(_))) {
                conn.release(); // any other failure drops the connection: PostgreSQL rolls back
            }
            r
        });
        self.pg.metrics.pg_push.observe(t.elapsed());
        if matches!(r, Err(StoreError::Unavailable(_) | StoreError::Broken(_))) {
            self.pg.metrics.pg_errors.fetch_add(1, Relaxed);
        }
        r
    }

    /// The whole transaction on `db`.
    async fn store_push(
        &mut self,
        db: &Db<'_, Client>,
        admission: &Admission,
        commits: &[(CommitId, Vec<u8>)],
        seals: &[Vec<u8>],
    ) -> Result<Stored, StoreError> {
        let (id, head) = db.begin_and_lock(&self.name).await?;
        if self.id.is_some_and(|known| known != id) {
            return Err(broken("the repository was re-created in the database"));
        }
        let caught = self.apply_rows(db, id, head).await?;
        let seals_before = self.hub.repo().seal_count();
        let done = self
            .hub
            .push(admission, commits, seals)
            .map_err(StoreError::from_push)?;
        self.write_and_commit(db, id, &done, seals_before)
            .await
            .map_err(|e| StoreError::Broken(e.error().clone()))?;
        self.id = Some(id);
        Ok(Stored {
            ack: done.ack,
            relay_from: caught.from,
            from: done.from,
            to: done.to,
        })
    }

    /// Step 4, in one round trip: the commits at replica positions `done.from..done.to`, the
    /// seals the push added, the head, the notice, `COMMIT`. Every statement must have
    /// succeeded: after a failed one PostgreSQL answers `COMMIT` by rolling back.
    async fn write_and_commit(
        &self,
        db: &Db<'_, Client>,
        id: i64,
        done: &PushOutcome,
        seals_before: usize,
    ) -> Result<(), StoreError> {
        let (new, seals) = self.new_rows(done, seals_before)?;
        let (from, to) = (done.from, done.to);
        let (inserted, sealed, head, told, committed) = futures_util::join!(
            db.insert_commits(id, from + 1, &new),
            db.insert_seals(id, from + 1, &seals),
            async {
                if to > from {
                    db.set_head(id, to).await
                } else {
                    Ok(())
                }
            },
            async {
                if to > from {
                    db.notify(&self.name, to).await
                } else {
                    Ok(())
                }
            },
            db.simple("COMMIT"),
        );
        let inserted = inserted?;
        sealed?;
        head?;
        told?;
        committed?;
        if inserted != new.len() {
            return Err(broken("fewer commits were inserted than were new"));
        }
        Ok(())
    }

    /// The bytes (and ids) of the commits and seals this push added to the replica.
    #[allow(clippy::type_complexity)]
    fn new_rows(
        &self,
        done: &PushOutcome,
        seals_before: usize,
    ) -> Result<(Vec<(CommitId, Vec<u8>)>, Vec<Vec<u8>>), StoreError> {
        let repo = self.hub.repo();
        let mut new = Vec::with_capacity((done.to - done.from) as usize);
        for p in done.from..done.to {
            let b = repo
                .commit_bytes_at(p as usize)
                .map_err(StoreError::Broken)?;
            new.push((CommitId::of(&b), b));
        }
        let seals = (seals_before..repo.seal_count())
            .map(|i| repo.seal_bytes(i))
            .collect::<Result<_, Error>>()
            .map_err(StoreError::Broken)?;
        Ok((new, seals))
    }
}

fn broken(why: &str) -> StoreError {
    StoreError::Broken(unavailable(why))
}
