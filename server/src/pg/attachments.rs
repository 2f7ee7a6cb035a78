//! Attachment bytes in PostgreSQL (docs/design.md §12.5): `ibexdb_attachments` (one row per
//! repository and hash: its size) and `ibexdb_attachment_chunks` (the bytes in rows of
//! `ATTACH_CHUNK_BYTES`, by index). An upload is staged in a file of the node's own and
//! verified there; only a complete, verified one is written, in one transaction that locks the
//! repository's row and checks `--max-repo-attachment-bytes` against what every node stored.
//! A download reads one chunk row at a time.

use super::{unavailable, Pg};
use ibexdb::{Error, ATTACH_CHUNK_BYTES};
use std::io::Read;
use std::path::Path;
use tokio_postgres::types::Type;

/// What storing an upload found.
pub enum Put {
    Stored,
    /// Another upload stored these bytes first.
    Held,
    /// The repository would keep more than the limit: the bytes it holds.
    OverLimit(u64),
}

fn err(e: impl std::fmt::Display) -> Error {
    unavailable(e)
}

fn big(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl Pg {
    /// The size of the stored attachment `hash` of repository `repo`, if stored.
    pub async fn attachment_size(&self, repo: &str, hash: &[u8; 32]) -> Result<Option<u64>, Error> {
        let mut conn = self.pool.get().await?;
        let sql = "SELECT a.size FROM ibexdb_attachments a JOIN ibexdb_repos r ON r.id = a.repo
                   WHERE r.name = $1 AND a.hash = $2";
        let rows = conn
            .client()
            .query_typed(sql, &[(&repo, Type::TEXT), (&&hash[..], Type::BYTEA)])
            .await
            .map_err(err)?;
        conn.release();
        Ok(rows.first().map(|r| r.get::<_, i64>(0).max(0) as u64))
    }

    /// The attachment bytes repository `repo` keeps.
    pub async fn attachment_total(&self, repo: &str) -> Result<u64, Error> {
        let mut conn = self.pool.get().await?;
        let sql = "SELECT coalesce(sum(a.size), 0)::bigint FROM ibexdb_attachments a
                   JOIN ibexdb_repos r ON r.id = a.repo WHERE r.name = $1";
        let row = conn
            .client()
            .query_typed(sql, &[(&repo, Type::TEXT)])
            .await
            .map_err(err)?;
        conn.release();
        Ok(row.first().map_or(0, |r| r.get::<_, i64>(0).max(0) as u64))
    }

    /// Store the verified upload in `file` (`size` bytes of SHA-256 `hash`) in one
    /// transaction, if the repository's total stays within `max`.
    pub async fn put_attachment(
        &self,
        repo: &str,
        hash: &[u8; 32],
        size: u64,
        file: &Path,
        max: u64,
    ) -> Result<Put, Error> {
        let mut f = std::fs::File::open(file).map_err(err)?;
        let mut conn = self.pool.get().await?;
        let tx = conn.client().transaction().await.map_err(err)?;
        let lock = "SELECT id FROM ibexdb_repos WHERE name = $1 FOR UPDATE";
        let rows = tx
            .query_typed(lock, &[(&repo, Type::TEXT)])
            .await
            .map_err(err)?;
        let Some(id) = rows.first().map(|r| r.get::<_, i64>(0)) else {
            return Err(unavailable("the repository has no row"));
        };
        let sum = "SELECT coalesce(sum(size), 0)::bigint,
                          coalesce(bool_or(hash = $2), false) FROM ibexdb_attachments WHERE repo = $1";
        let row = tx
            .query_typed(sum, &[(&id, Type::INT8), (&&hash[..], Type::BYTEA)])
            .await
            .map_err(err)?;
        let (total, held) = row
            .first()
            .map_or((0, false), |r| (r.get::<_, i64>(0).max(0) as u64, r.get(1)));
        let refused = if held {
            Some(Put::Held)
        } else {
            (total.saturating_add(size) > max).then_some(Put::OverLimit(total))
        };
        if let Some(put) = refused {
            tx.rollback().await.map_err(err)?;
            conn.release();
            return Ok(put);
        }
        let ins = "INSERT INTO ibexdb_attachments (repo, hash, size) VALUES ($1, $2, $3)";
        let (h, s) = (&hash[..], big(size));
        tx.query_typed(
            ins,
            &[(&id, Type::INT8), (&h, Type::BYTEA), (&s, Type::INT8)],
        )
        .await
        .map_err(err)?;
        let chunk = "INSERT INTO ibexdb_attachment_chunks (repo, hash, idx, bytes)
                     VALUES ($1, $2, $3, $4)";
        let mut buf = vec![0u8; ATTACH_CHUNK_BYTES];
        let (mut at, mut idx) = (0u64, 0i32);
        while at < size {
            let n = (size - at).min(ATTACH_CHUNK_BYTES as u64) as usize;
            f.read_exact(&mut buf[..n]).map_err(err)?;
            let b = &buf[..n];
            let params = [
                (&id as _, Type::INT8),
                (&h as _, Type::BYTEA),
                (&idx as _, Type::INT4),
                (&b as _, Type::BYTEA),
            ];
            tx.query_typed(chunk, &params).await.map_err(err)?;
            at += n as u64;
            idx += 1;
        }
        tx.commit().await.map_err(err)?;
        conn.release();
        Ok(Put::Stored)
    }

    /// Chunk row `idx` of attachment `hash` of `repo` (`None`: no such row).
    pub async fn attachment_chunk(
        &self,
        repo: &str,
        hash: &[u8; 32],
        idx: u64,
    ) -> Result<Option<Vec<u8>>, Error> {
        let mut conn = self.pool.get().await?;
        let sql = "SELECT c.bytes FROM ibexdb_attachment_chunks c JOIN ibexdb_repos r
                   ON r.id = c.repo WHERE r.name = $1 AND c.hash = $2 AND c.idx = $3";
        let i = i32::try_from(idx).unwrap_or(i32::MAX);
        let rows = conn
            .client()
            .query_typed(
                sql,
                &[
                    (&repo, Type::TEXT),
                    (&&hash[..], Type::BYTEA),
                    (&i, Type::INT4),
                ],
            )
            .await
            .map_err(err)?;
        conn.release();
        Ok(rows.first().map(|r| r.get::<_, Vec<u8>>(0)))
    }
}
