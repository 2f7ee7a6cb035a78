//! The push transaction of the PostgreSQL store (docs/design.md §12.5):
//!
//! 1. `BEGIN`; lock the repository's row (`SELECT … FOR UPDATE`, the row made on the first
//!    push): pushes to one repository queue here, whichever node they reach;
//! 2. apply to the replica the rows other nodes stored since it last looked, in order;
//! 3. verify the push against the replica (`Hub::push`: seals, ids, the permission rule and
//!    the server's admission for the session), so a revocation stored through another node
//!    is seen; a refusal rolls back and stores nothing;
//! 4. insert the new commits at the next sequence numbers and the new seals (a commit already
//!    stored is caught by the unique id, and the whole push is undone), set the head, and
//!    NOTIFY the other nodes (delivered at commit);
//! 5. `COMMIT` (synchronous commit): only now is the push acknowledged.
//!
//! From step 3 on the replica holds what is not committed: if anything fails after it, the
//! replica is dropped and rebuilt from PostgreSQL (`StoreError::Broken`), so nothing that
//! did not commit is ever acknowledged or relayed.

use super::replica::PgRepo;
use super::rows::Db;
use super::unavailable;
use crate::store::{StoreError, Stored};
use ibexdb::{Admission, CommitId, PushOutcome};
use std::time::Instant;
use tokio_postgres::Transaction;

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
            let tx = conn
                .client()
                .transaction()
                .await
                .map_err(|e| StoreError::Unavailable(unavailable(e)))?;
            let r = self.store_push(&tx, admission, commits, seals).await;
            match &r {
                Ok((id, _)) => {
                    let limit = pg.timeout;
                    match tokio::time::timeout(limit, tx.commit()).await {
                        Ok(Ok(())) => self.id = Some(*id),
                        Ok(Err(e)) => return Err(broken(unavailable(e))),
                        Err(_) => return Err(broken(unavailable("COMMIT did not answer in time"))),
                    }
                }
                Err(_) => {
                    let _ = tokio::time::timeout(pg.timeout, tx.rollback()).await;
                }
            }
            let r = r.map(|(_, stored)| stored);
            if matches!(r, Ok(_) | Err(StoreError::Refused(_))) {
                conn.release();
            }
            r
        });
        self.pg.metrics.pg_push.observe(t.elapsed());
        if r.is_err() {
            self.pg.metrics.pg_errors.fetch_add(
                u64::from(!matches!(r, Err(StoreError::Refused(_)))),
                std::sync::atomic::Ordering::Relaxed,
            );
        }
        r
    }

    /// Steps 1-4 inside the transaction `tx`; the repository's row id and what was stored.
    async fn store_push(
        &mut self,
        tx: &Transaction<'_>,
        admission: &Admission,
        commits: &[(CommitId, Vec<u8>)],
        seals: &[Vec<u8>],
    ) -> Result<(i64, Stored), StoreError> {
        let db = Db::new(tx, self.pg.timeout);
        let (id, head) = db.lock(&self.name).await?;
        if self.id.is_some_and(|known| known != id) {
            return Err(broken(unavailable(
                "the repository was re-created in the database",
            )));
        }
        let caught = self.apply_rows(&db, id, head).await?;
        let seals_before = self.hub.repo().seal_count();
        let done = self
            .hub
            .push(admission, commits, seals)
            .map_err(StoreError::from_push)?;
        self.insert_new(&db, id, &done, seals_before)
            .await
            .map_err(|e| broken(e.error().clone()))?;
        let stored = Stored {
            ack: done.ack,
            relay_from: caught.from,
            from: done.from,
            to: done.to,
            access_changed: caught.access_changed || done.access_changed,
        };
        Ok((id, stored))
    }

    /// Step 4: the commits at replica positions `done.from..done.to`, the seals the push
    /// added, the head and the notice.
    async fn insert_new(
        &self,
        db: &Db<'_, Transaction<'_>>,
        id: i64,
        done: &PushOutcome,
        seals_before: usize,
    ) -> Result<(), StoreError> {
        let repo = self.hub.repo();
        let read = |e: ibexdb::Error| StoreError::Broken(e);
        let mut new = Vec::with_capacity((done.to - done.from) as usize);
        for p in done.from..done.to {
            let b = repo.commit_bytes_at(p as usize).map_err(read)?;
            new.push((CommitId::of(&b), b));
        }
        let seals: Vec<Vec<u8>> = (seals_before..repo.seal_count())
            .map(|i| repo.seal_bytes(i))
            .collect::<Result<_, _>>()
            .map_err(read)?;
        if new.is_empty() && seals.is_empty() {
            return Ok(());
        }
        if db.insert_commits(id, done.from + 1, &new).await? != new.len() {
            return Err(broken(unavailable(
                "a commit of this push was already stored under another sequence",
            )));
        }
        db.insert_seals(id, done.from + 1, &seals).await?;
        if done.to > done.from {
            db.advance(id, &self.name, done.to).await?;
        }
        Ok(())
    }
}

fn broken(e: ibexdb::Error) -> StoreError {
    StoreError::Broken(e)
}
