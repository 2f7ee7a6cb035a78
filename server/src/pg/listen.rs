//! Fan-out between nodes: one connection per node LISTENs on `ibexdb_commits`. Each notice
//! ("HEAD NAME", sent by the transaction that stored the commits, delivered when it
//! committed) goes to repository NAME's thread if it is open here, which takes the new rows in
//! and relays them to its subscribers. Notices sent while this node was not listening are
//! lost, so after every (re)connection each open repository looks for itself. A ping every
//! second finds a connection that died quietly; reconnection backs off from 100 ms to 1 s.
//! While this connection is down, `/healthz` answers 503 (a load balancer sends clients to
//! other nodes).

use super::{Pg, CHANNEL};
use crate::log;
use futures_util::future::poll_fn;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::AsyncMessage;

/// What the listener tells the repositories.
pub enum Notice<'a> {
    /// Another node stored repository `name` up to sequence `head`.
    Stored { name: &'a str, head: u64 },
    /// Notices may have been missed (the connection was re-made): every open repository looks.
    Missed,
}

/// Where notices go (the registry routes them to the open repositories' threads).
pub type OnNotice = Arc<dyn Fn(Notice<'_>) + Send + Sync>;

/// Listen until the process ends.
pub async fn run(pg: Arc<Pg>, on_notice: OnNotice) {
    let mut backoff = Duration::from_millis(100);
    loop {
        let why = listen(&pg, &on_notice, &mut backoff).await;
        pg.listening
            .store(false, std::sync::atomic::Ordering::SeqCst);
        log::event("pg_listen_lost", &[("error", &why)]);
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(1));
    }
}

/// One connection's life: LISTEN, then notices until it fails; why it ended.
async fn listen(pg: &Arc<Pg>, on_notice: &OnNotice, backoff: &mut Duration) -> String {
    let (client, mut connection) =
        match tokio::time::timeout(pg.timeout, pg.config.connect(tokio_postgres::NoTls)).await {
            Ok(Ok(pair)) => pair,
            Ok(Err(e)) => return e.to_string(),
            Err(_) => return "connecting timed out".into(),
        };
    let (notify, metrics) = (on_notice.clone(), pg.metrics.clone());
    let mut driver = tokio::spawn(async move {
        loop {
            match poll_fn(|cx| connection.poll_message(cx)).await {
                Some(Ok(AsyncMessage::Notification(n))) => {
                    metrics.pg_notices.fetch_add(1, Relaxed);
                    if let Some((head, name)) = parse(n.payload()) {
                        notify(Notice::Stored { name, head });
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return e.to_string(),
                None => return "connection closed".to_string(),
            }
        }
    });
    let listen = format!("LISTEN {CHANNEL}");
    match tokio::time::timeout(pg.timeout, client.batch_execute(&listen)).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return e.to_string(),
        Err(_) => return "LISTEN timed out".into(),
    }
    log::event("pg_listening", &[("channel", &CHANNEL)]);
    pg.listening
        .store(true, std::sync::atomic::Ordering::SeqCst);
    *backoff = Duration::from_millis(100);
    on_notice(Notice::Missed);
    loop {
        tokio::select! {
            r = &mut driver => return r.unwrap_or_else(|e| e.to_string()),
            _ = tokio::time::sleep(Duration::from_secs(1)) => {
                match tokio::time::timeout(pg.timeout, client.simple_query("")).await {
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => return e.to_string(),
                    Err(_) => return "ping timed out".into(),
                }
            }
        }
    }
}

/// A notice's payload: "HEAD NAME".
fn parse(payload: &str) -> Option<(u64, &str)> {
    let (head, name) = payload.split_once(' ')?;
    Some((head.parse().ok()?, name))
}
