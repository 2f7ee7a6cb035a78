//! Every SQL statement of the PostgreSQL store, each bounded by `--pg-timeout-ms` (and by
//! the session's `statement_timeout`). Statements are sent with their parameter types
//! (`query_typed`): no prepared statements to keep per connection, and statements awaited
//! together travel together (the client pipelines them: one round trip for several). What
//! comes back from the database is checked before it is used (lengths, sequences).

use super::{unavailable, CHANNEL};
use crate::store::StoreError;
use ibexdb::CommitId;
use sha2::{Digest, Sha256};
use std::time::Duration;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{GenericClient, Row};

type Params<'a> = [(&'a (dyn ToSql + Sync), Type)];

/// One stored commit: its sequence, id and bytes.
pub type CommitRow = (u64, CommitId, Vec<u8>);

/// Statements on a connection or inside a transaction.
pub struct Db<'a, C> {
    c: &'a C,
    limit: Duration,
}

/// Something read from the database that cannot be what this server stored.
fn damaged(what: &str) -> StoreError {
    StoreError::Broken(unavailable(format!("damaged row: {what}")))
}

fn seq_of(v: i64) -> Result<u64, StoreError> {
    u64::try_from(v).map_err(|_| damaged("a negative sequence"))
}

impl<'a, C: GenericClient + Sync> Db<'a, C> {
    pub fn new(c: &'a C, limit: Duration) -> Db<'a, C> {
        Db { c, limit }
    }

    async fn query(&self, sql: &str, params: &Params<'_>) -> Result<Vec<Row>, StoreError> {
        match tokio::time::timeout(self.limit, self.c.query_typed(sql, params)).await {
            Ok(Ok(rows)) => Ok(rows),
            Ok(Err(e)) => Err(StoreError::Unavailable(unavailable(e))),
            Err(_) => Err(self.late()),
        }
    }

    fn late(&self) -> StoreError {
        StoreError::Unavailable(unavailable(format!(
            "no answer within {} ms (--pg-timeout-ms)",
            self.limit.as_millis()
        )))
    }

    /// A statement without parameters or rows (`BEGIN`, `COMMIT`, `ROLLBACK`).
    pub async fn simple(&self, sql: &str) -> Result<(), StoreError> {
        match tokio::time::timeout(self.limit, self.c.batch_execute(sql)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(StoreError::Unavailable(unavailable(e))),
            Err(_) => Err(self.late()),
        }
    }

    /// The repository's row, (id, head), if it has one (its first push creates it).
    pub async fn repo(&self, name: &str) -> Result<Option<(i64, u64)>, StoreError> {
        let sql = "SELECT id, head FROM ibexdb_repos WHERE name = $1";
        let rows = self.query(sql, &[(&name, Type::TEXT)]).await?;
        match rows.first() {
            Some(r) => Ok(Some((r.get(0), seq_of(r.get(1))?))),
            None => Ok(None),
        }
    }

    /// Begin a transaction and lock the repository's row, creating it if needed: (id,
    /// head). Pushes to one repository queue here, whichever node they reach.
    pub async fn begin_and_lock(&self, name: &str) -> Result<(i64, u64), StoreError> {
        let select = "SELECT id, head FROM ibexdb_repos WHERE name = $1 FOR UPDATE";
        let params: &Params = &[(&name, Type::TEXT)];
        let (begun, rows) = futures_util::join!(self.simple("BEGIN"), self.query(select, params));
        begun?;
        if let Some(r) = rows?.first() {
            return Ok((r.get(0), seq_of(r.get(1))?));
        }
        let insert = "INSERT INTO ibexdb_repos (name) VALUES ($1) ON CONFLICT (name) DO NOTHING";
        self.query(insert, &[(&name, Type::TEXT)]).await?;
        let rows = self.query(select, &[(&name, Type::TEXT)]).await?;
        let r = rows
            .first()
            .ok_or_else(|| damaged("a repository row vanished"))?;
        Ok((r.get(0), seq_of(r.get(1))?))
    }

    /// Commits `after + 1 ..` (at most `rows` of them, and about `bytes` bytes, at least one),
    /// up to `upto`, in sequence order; a gap is an error.
    pub async fn commits(
        &self,
        repo: i64,
        after: u64,
        upto: u64,
        rows: u64,
        bytes: i64,
    ) -> Result<Vec<CommitRow>, StoreError> {
        let sql = "SELECT seq, id, bytes FROM (
                SELECT seq, id, bytes,
                       sum(octet_length(bytes)) OVER (ORDER BY seq) - octet_length(bytes) AS before
                FROM ibexdb_commits WHERE repo = $1 AND seq > $2 AND seq <= $3
            ) t WHERE before < $4 ORDER BY seq";
        let (lo, hi) = (after as i64, upto.min(after + rows) as i64);
        let params: &Params = &[
            (&repo, Type::INT8),
            (&lo, Type::INT8),
            (&hi, Type::INT8),
            (&bytes, Type::INT8),
        ];
        let mut out = Vec::new();
        for (i, r) in self.query(sql, params).await?.iter().enumerate() {
            let seq = seq_of(r.get(0))?;
            let id: &[u8] = r.get(1);
            let id = id.try_into().map_err(|_| damaged("a commit id"))?;
            if seq != after + 1 + i as u64 {
                return Err(damaged("a gap in the commits' sequence"));
            }
            out.push((seq, CommitId(id), r.get(2)));
        }
        Ok(out)
    }

    /// The seals stored by pushes that began at sequences `after + 1 ..= upto`.
    pub async fn seals(
        &self,
        repo: i64,
        after: u64,
        upto: u64,
    ) -> Result<Vec<Vec<u8>>, StoreError> {
        let sql = "SELECT bytes FROM ibexdb_seals
                   WHERE repo = $1 AND at_seq > $2 AND at_seq <= $3 ORDER BY at_seq";
        let (lo, hi) = (after as i64, upto as i64);
        let params: &Params = &[(&repo, Type::INT8), (&lo, Type::INT8), (&hi, Type::INT8)];
        Ok(self
            .query(sql, params)
            .await?
            .iter()
            .map(|r| r.get(0))
            .collect())
    }

    /// One step of catching up, both statements at once: commits `after + 1 ..` (as in
    /// `commits`) and the seals pushes stored before them (`seals` up to the step's last
    /// possible sequence + 1: a seal may arrive a step early, which is harmless).
    pub async fn step(
        &self,
        repo: i64,
        after: u64,
        head: u64,
        rows: u64,
        bytes: i64,
    ) -> Result<(Vec<CommitRow>, Vec<Vec<u8>>), StoreError> {
        let upto = head.min(after + rows);
        let (commits, seals) = futures_util::join!(
            self.commits(repo, after, upto, rows, bytes),
            self.seals(repo, after, upto + 1)
        );
        Ok((commits?, seals?))
    }

    /// Insert commits at sequences `first, first + 1, …`; how many were inserted. A commit
    /// stored already (at any sequence) violates the unique id and aborts the transaction:
    /// skipping it would leave a gap in the sequence.
    pub async fn insert_commits(
        &self,
        repo: i64,
        first: u64,
        commits: &[(CommitId, Vec<u8>)],
    ) -> Result<usize, StoreError> {
        let sql = "INSERT INTO ibexdb_commits (repo, seq, id, bytes)
                   SELECT $1, s, i, b FROM unnest($2::int8[], $3::bytea[], $4::bytea[]) AS t(s, i, b)
                   RETURNING seq";
        let seqs: Vec<i64> = (0..commits.len())
            .map(|i| (first + i as u64) as i64)
            .collect();
        let ids: Vec<&[u8]> = commits.iter().map(|(id, _)| &id.0[..]).collect();
        let bytes: Vec<&[u8]> = commits.iter().map(|(_, b)| &b[..]).collect();
        let params: &Params = &[
            (&repo, Type::INT8),
            (&seqs, Type::INT8_ARRAY),
            (&ids, Type::BYTEA_ARRAY),
            (&bytes, Type::BYTEA_ARRAY),
        ];
        Ok(self.query(sql, params).await?.len())
    }

    /// Insert seals stored by a push that began at sequence `at` (before that commit is
    /// applied, a replica applies them); a seal already stored is kept as it is.
    pub async fn insert_seals(
        &self,
        repo: i64,
        at: u64,
        seals: &[Vec<u8>],
    ) -> Result<(), StoreError> {
        let sql = "INSERT INTO ibexdb_seals (repo, hash, at_seq, bytes)
                   SELECT $1, h, $2, b FROM unnest($3::bytea[], $4::bytea[]) AS t(h, b)
                   ON CONFLICT DO NOTHING";
        let at = at as i64;
        let hashes: Vec<Vec<u8>> = seals.iter().map(|s| Sha256::digest(s).to_vec()).collect();
        let bytes: Vec<&[u8]> = seals.iter().map(|b| &b[..]).collect();
        let params: &Params = &[
            (&repo, Type::INT8),
            (&at, Type::INT8),
            (&hashes, Type::BYTEA_ARRAY),
            (&bytes, Type::BYTEA_ARRAY),
        ];
        self.query(sql, params).await.map(|_| ())
    }

    /// Set the head (the row is locked by this transaction): exactly one row.
    pub async fn set_head(&self, repo: i64, head: u64) -> Result<(), StoreError> {
        let h = head as i64;
        let sql = "UPDATE ibexdb_repos SET head = $2 WHERE id = $1 RETURNING id";
        let rows = self
            .query(sql, &[(&repo, Type::INT8), (&h, Type::INT8)])
            .await?;
        match rows.len() {
            1 => Ok(()),
            _ => Err(damaged("the repository row to advance")),
        }
    }

    /// Tell every node (the notice is delivered when the transaction commits, and only then).
    pub async fn notify(&self, name: &str, head: u64) -> Result<(), StoreError> {
        let payload = format!("{head} {name}");
        let notify = format!("SELECT pg_notify('{CHANNEL}', $1)");
        self.query(&notify, &[(&payload, Type::TEXT)])
            .await
            .map(|_| ())
    }

    /// The repository's snapshot: (sequence, log image, snapshot image).
    pub async fn snapshot(&self, repo: i64) -> Result<Option<(u64, Vec<u8>, Vec<u8>)>, StoreError> {
        let sql = "SELECT seq, log, snapshot FROM ibexdb_snapshots WHERE repo = $1";
        let rows = self.query(sql, &[(&repo, Type::INT8)]).await?;
        match rows.first() {
            Some(r) => Ok(Some((seq_of(r.get(0))?, r.get(1), r.get(2)))),
            None => Ok(None),
        }
    }

    /// The sequence the stored snapshot covers (0: none).
    pub async fn snapshot_seq(&self, repo: i64) -> Result<u64, StoreError> {
        let sql = "SELECT seq FROM ibexdb_snapshots WHERE repo = $1";
        let rows = self.query(sql, &[(&repo, Type::INT8)]).await?;
        rows.first().map_or(Ok(0), |r| seq_of(r.get(0)))
    }

    /// Store a snapshot unless one as recent is there.
    pub async fn save_snapshot(
        &self,
        repo: i64,
        seq: u64,
        log: &[u8],
        snapshot: &[u8],
    ) -> Result<(), StoreError> {
        let sql = "INSERT INTO ibexdb_snapshots (repo, seq, log, snapshot) VALUES ($1, $2, $3, $4)
                   ON CONFLICT (repo) DO UPDATE SET seq = EXCLUDED.seq, log = EXCLUDED.log,
                       snapshot = EXCLUDED.snapshot, written_at = now()
                   WHERE ibexdb_snapshots.seq < EXCLUDED.seq";
        let seq = seq as i64;
        let params: &Params = &[
            (&repo, Type::INT8),
            (&seq, Type::INT8),
            (&log, Type::BYTEA),
            (&snapshot, Type::BYTEA),
        ];
        self.query(sql, params).await.map(|_| ())
    }
}
