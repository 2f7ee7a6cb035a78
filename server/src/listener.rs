//! The accept loop: admits connections within the connection limits (a connection over them
//! is told why with a `LimitError`, a few at a time, then closed; a plain `GET /metrics` or
//! `/healthz` over them is still answered), backs off on accept errors
//! (e.g. out of file descriptors) instead of spinning, and stops at shutdown.

use crate::connection;
use crate::http::{self, Request};
use crate::log;
use crate::refusal::Refusal;
use crate::server::Server;
use crate::stream::{BoxIo, Prefixed};
use bytes::Bytes;
use futures_util::SinkExt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::Message as Ws;

const BACKOFF_MIN: Duration = Duration::from_millis(5);
const BACKOFF_MAX: Duration = Duration::from_secs(1);

/// Accept until shutdown.
pub async fn accept_loop(server: Arc<Server>, listener: TcpListener) {
    let mut backoff = BACKOFF_MIN;
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            _ = server.shutdown.wait() => return,
        };
        match accepted {
            Ok((tcp, peer)) => {
                backoff = BACKOFF_MIN;
                admit(&server, tcp, peer);
            }
            Err(e) => {
                log::event(
                    "accept_error",
                    &[("error", &e), ("backoff_ms", &backoff.as_millis())],
                );
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(BACKOFF_MAX);
            }
        }
    }
}

fn admit(server: &Arc<Server>, tcp: TcpStream, peer: SocketAddr) {
    match server.conns.admit(peer.ip()) {
        Ok(guard) => {
            tokio::spawn(connection::serve(server.clone(), tcp, peer, guard));
        }
        Err(refusal) => {
            server.metrics.refusal(&refusal.what);
            log::event_about(
                peer.ip(),
                "refusal",
                &[
                    ("peer", &peer),
                    ("code", &(refusal.code as u8)),
                    ("what", &refusal.what),
                    ("text", &refusal.text()),
                ],
            );
            // Telling costs a handshake: only a few at a time, the rest are just closed.
            if let Ok(permit) = server.refusing.clone().try_acquire_owned() {
                let server = server.clone();
                tokio::spawn(async move {
                    let limit = server.cfg.handshake_timeout.min(Duration::from_secs(2));
                    let _ = tokio::time::timeout(limit, refuse(&server, tcp, refusal)).await;
                    drop(permit);
                });
            }
        }
    }
}

/// Complete the WebSocket handshake only to send the refusal, then close. A plain HTTP
/// request (`GET /metrics`, `GET /healthz`) is answered: a full server is still observable.
async fn refuse(server: &Server, tcp: TcpStream, refusal: Refusal) {
    let mut io: BoxIo = match &server.tls {
        Some(acceptor) => match crate::tls::accept(acceptor, tcp).await {
            Some(tls) => tls,
            None => return,
        },
        None => Box::new(tcp),
    };
    let Ok((head, req)) = http::read_head(&mut io).await else {
        return;
    };
    if !matches!(req, Request::Upgrade) {
        let health = http::Health {
            shutting_down: server.shutdown.is_set(),
            store_reachable: server.backend.reachable(),
            metrics: &server.metrics,
        };
        http::respond(&mut io, req, &health).await;
        return;
    }
    let Ok(mut ws) = tokio_tungstenite::accept_async(Prefixed::new(head, io)).await else {
        return;
    };
    let _ = ws.send(Ws::Binary(Bytes::from(refusal.encode()))).await;
    let _ = ws.close(None).await;
}
