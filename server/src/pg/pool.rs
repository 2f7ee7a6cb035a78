//! A bounded pool of PostgreSQL connections: at most `--pg-connections` in use at once (a
//! repository thread waits for one at most `--pg-timeout-ms`). A connection goes back to the
//! pool only when the work on it finished cleanly (`Conn::release`); one that failed or timed
//! out mid-transaction is dropped, which closes it and makes PostgreSQL roll back.

use super::unavailable;
use ibexdb::Error;
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::{Semaphore, SemaphorePermit};
use tokio_postgres::{Client, NoTls};

pub struct Pool {
    config: tokio_postgres::Config,
    idle: Mutex<Vec<Client>>,
    permits: Semaphore,
    timeout: Duration,
}

/// A connection taken from the pool.
pub struct Conn<'a> {
    client: Option<Client>,
    pool: &'a Pool,
    clean: bool,
    _permit: SemaphorePermit<'a>,
}

impl Pool {
    pub fn new(config: tokio_postgres::Config, size: usize, timeout: Duration) -> Pool {
        Pool {
            config,
            idle: Mutex::new(Vec::new()),
            permits: Semaphore::new(size),
            timeout,
        }
    }

    /// A connection: an idle one that is still open, or a new one.
    pub async fn get(&self) -> Result<Conn<'_>, Error> {
        let permit = tokio::time::timeout(self.timeout, self.permits.acquire())
            .await
            .map_err(|_| unavailable("no connection of the pool came free in time"))?
            .map_err(unavailable)?;
        let reused = loop {
            let c = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
            match c {
                Some(c) if c.is_closed() => continue,
                other => break other,
            }
        };
        let client = match reused {
            Some(c) => c,
            None => connect(&self.config, self.timeout).await?,
        };
        Ok(Conn {
            client: Some(client),
            pool: self,
            clean: false,
            _permit: permit,
        })
    }
}

/// Open one connection (its I/O runs as a task of the runtime), with synchronous commit on:
/// a commit returns only once PostgreSQL has made it durable.
pub async fn connect(config: &tokio_postgres::Config, limit: Duration) -> Result<Client, Error> {
    let (client, connection) = tokio::time::timeout(limit, config.connect(NoTls))
        .await
        .map_err(|_| unavailable("connecting timed out"))?
        .map_err(unavailable)?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let ms = limit.as_millis();
    let setup = format!("SET synchronous_commit = on; SET statement_timeout = {ms}");
    tokio::time::timeout(limit, client.batch_execute(&setup))
        .await
        .map_err(|_| unavailable("setting up the session timed out"))?
        .map_err(unavailable)?;
    Ok(client)
}

impl Conn<'_> {
    pub fn client(&mut self) -> &mut Client {
        self.client.as_mut().expect("a pooled connection")
    }

    /// The work finished cleanly: the connection may serve again.
    pub fn release(mut self) {
        self.clean = true;
    }
}

impl Drop for Conn<'_> {
    fn drop(&mut self) {
        if let Some(c) = self.client.take() {
            if self.clean && !c.is_closed() {
                self.pool
                    .idle
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(c);
            }
        }
    }
}
