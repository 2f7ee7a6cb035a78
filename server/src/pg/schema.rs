//! The schema, as numbered migrations applied in order at start-up (docs/design.md §12.5
//! lists the tables). `ibexdb_migrations` records the versions applied; a node takes an
//! advisory lock while migrating, so nodes starting together apply each migration once. A
//! database migrated by a newer server (a version this one does not know) is refused.

use super::pool::Pool;
use super::unavailable;
use ibexdb::Error;

/// Migration `i + 1` is `MIGRATIONS[i]`. Append only: never edit one that shipped.
const MIGRATIONS: &[&str] = &[
    // 1: repositories, commits by sequence, seals by the sequence they precede, snapshots.
    "CREATE TABLE ibexdb_repos (
        id         bigserial PRIMARY KEY,
        name       text NOT NULL UNIQUE,
        head       bigint NOT NULL DEFAULT 0 CHECK (head >= 0),
        created_at timestamptz NOT NULL DEFAULT now()
     );
     CREATE TABLE ibexdb_commits (
        repo  bigint NOT NULL REFERENCES ibexdb_repos (id),
        seq   bigint NOT NULL CHECK (seq >= 1),
        id    bytea  NOT NULL CHECK (octet_length(id) = 32),
        bytes bytea  NOT NULL,
        PRIMARY KEY (repo, seq),
        UNIQUE (repo, id)
     );
     CREATE TABLE ibexdb_seals (
        repo   bigint NOT NULL REFERENCES ibexdb_repos (id),
        hash   bytea  NOT NULL CHECK (octet_length(hash) = 32),
        at_seq bigint NOT NULL CHECK (at_seq >= 1),
        bytes  bytea  NOT NULL,
        PRIMARY KEY (repo, hash)
     );
     CREATE INDEX ibexdb_seals_at ON ibexdb_seals (repo, at_seq);
     CREATE TABLE ibexdb_snapshots (
        repo       bigint PRIMARY KEY REFERENCES ibexdb_repos (id),
        seq        bigint NOT NULL,
        log        bytea  NOT NULL,
        snapshot   bytea  NOT NULL,
        written_at timestamptz NOT NULL DEFAULT now()
     );",
    // 2: attachment bytes (docs/design.md §12.2): one row per stored file, its bytes in
    // chunk rows; a file's rows are written in one transaction, complete and verified.
    "CREATE TABLE ibexdb_attachments (
        repo bigint NOT NULL REFERENCES ibexdb_repos (id),
        hash bytea  NOT NULL CHECK (octet_length(hash) = 32),
        size bigint NOT NULL CHECK (size >= 0),
        PRIMARY KEY (repo, hash)
     );
     CREATE TABLE ibexdb_attachment_chunks (
        repo  bigint  NOT NULL,
        hash  bytea   NOT NULL,
        idx   integer NOT NULL CHECK (idx >= 0),
        bytes bytea   NOT NULL,
        PRIMARY KEY (repo, hash, idx),
        FOREIGN KEY (repo, hash) REFERENCES ibexdb_attachments (repo, hash)
     );",
];

/// Any fixed number: the advisory lock nodes take while migrating.
const LOCK: i64 = 0x6962_6578_6462;

/// Apply the migrations this database lacks.
pub async fn migrate(pool: &Pool) -> Result<(), Error> {
    let mut conn = pool.get().await?;
    let c = conn.client();
    c.execute("SELECT pg_advisory_lock($1)", &[&LOCK])
        .await
        .map_err(unavailable)?;
    let r = apply_missing(c).await;
    c.execute("SELECT pg_advisory_unlock($1)", &[&LOCK])
        .await
        .map_err(unavailable)?;
    r?;
    conn.release();
    Ok(())
}

async fn apply_missing(c: &mut tokio_postgres::Client) -> Result<(), Error> {
    c.batch_execute(
        "CREATE TABLE IF NOT EXISTS ibexdb_migrations (
            version    integer PRIMARY KEY,
            applied_at timestamptz NOT NULL DEFAULT now()
         )",
    )
    .await
    .map_err(unavailable)?;
    let row = c
        .query_one(
            "SELECT coalesce(max(version), 0) FROM ibexdb_migrations",
            &[],
        )
        .await
        .map_err(unavailable)?;
    let have: i32 = row.get(0);
    if have as usize > MIGRATIONS.len() {
        return Err(unavailable(format!(
            "the database is at schema version {have}, newer than this server's {}",
            MIGRATIONS.len()
        )));
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(have as usize) {
        let version = i as i32 + 1;
        let tx = c.transaction().await.map_err(unavailable)?;
        tx.batch_execute(sql).await.map_err(unavailable)?;
        tx.execute(
            "INSERT INTO ibexdb_migrations (version) VALUES ($1)",
            &[&version],
        )
        .await
        .map_err(unavailable)?;
        tx.commit().await.map_err(unavailable)?;
        crate::log::event("pg_migrated", &[("version", &version)]);
    }
    Ok(())
}
