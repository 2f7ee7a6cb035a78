//! One client connection: TLS and the HTTP request (a plain GET is answered by `http`), the
//! WebSocket upgrade, the handshake, then the session: pushes are read one at a time and the
//! socket is not read again until the repository thread has stored, acknowledged and relayed
//! the last one (back-pressure), within the connection's push budget; silence is met with a
//! ping, then closed. Every refusal is sent as an `Error` before the close.

use crate::attach_store::{self, Upload};
use crate::auth::{self, Bearer, Grant};
use crate::found;
use crate::frame_watch::{Watch, Watched};
use crate::frames;
use crate::handshake::{self, Hello};
use crate::http::{self, Request};
use crate::limits::ConnGuard;
use crate::log;
use crate::outbox::Outbox;
use crate::refusal::{Ended, Refusal};
use crate::registry::RepoHandle;
use crate::repo_thread::Cmd;
use crate::server::Server;
use crate::session::Session;
use crate::stream::{BoxIo, Prefixed};
use bytes::Bytes;
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{Stream, StreamExt};
use ibexdb::{ErrorCode, Message};
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::time::{sleep_until, timeout_at, Instant};
use tokio_tungstenite::tungstenite::handshake::server::{
    Request as WsRequest, Response as WsResponse,
};
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Error as WsError, Message as Ws};
use tokio_tungstenite::WebSocketStream;

type Socket = WebSocketStream<Watched<Prefixed<BoxIo>>>;

/// The WebSocket layer's read buffer per connection (it reads in chunks of this size).
const READ_BUFFER: usize = 8 << 10;

/// How long a closing connection waits for the peer to take its last message (`linger`).
const LINGER: std::time::Duration = std::time::Duration::from_secs(1);

/// TLS, then the HTTP request; `None` when it was plain HTTP (answered) or failed. Also the
/// bearer token the request offered (`auth`).
async fn upgrade(server: &Server, tcp: TcpStream) -> Option<(Socket, Watch, Bearer)> {
    let mut io: BoxIo = match &server.tls {
        Some(acceptor) => crate::tls::accept(acceptor, tcp).await?,
        None => Box::new(tcp),
    };
    let (head, req) = http::read_head(&mut io).await.ok()?;
    if !matches!(req, Request::Upgrade) {
        let health = http::Health {
            shutting_down: server.shutdown.is_set(),
            store_reachable: server.backend.reachable(),
            metrics: &server.metrics,
        };
        http::respond(&mut io, req, &health).await;
        return None;
    }
    let max = server.cfg.max_message_bytes;
    // Small read buffers: an idle connection costs kilobytes, not the default 128 KiB.
    let config = WebSocketConfig::default()
        .read_buffer_size(READ_BUFFER)
        .write_buffer_size(0)
        .max_message_size(Some(max))
        .max_frame_size(Some(max));
    let (io, watch) = Watched::new(Prefixed::new(head, io));
    let mut bearer = Bearer::Missing;
    // The error type is tungstenite's (an HTTP response); this callback never returns one.
    #[allow(clippy::result_large_err)]
    let read_token = |req: &WsRequest, mut resp: WsResponse| {
        let (b, offered) = auth::bearer(req.headers());
        bearer = b;
        if offered {
            // A browser offering `ibexdb` (beside `ibexdb.bearer.TOKEN`) wants one answered.
            let v = HeaderValue::from_static(auth::PROTOCOL);
            resp.headers_mut().insert("sec-websocket-protocol", v);
        }
        Ok(resp)
    };
    let ws = tokio_tungstenite::accept_hdr_async_with_config(io, read_token, Some(config))
        .await
        .ok()?;
    Some((ws, watch, bearer))
}

/// Serve one accepted TCP connection to its end.
pub async fn serve(server: Arc<Server>, tcp: TcpStream, peer: SocketAddr, guard: ConnGuard) {
    let _ = tcp.set_nodelay(true);
    let deadline = Instant::now() + server.cfg.handshake_timeout;
    let Ok(Some((ws, mut watch, bearer))) = timeout_at(deadline, upgrade(&server, tcp)).await
    else {
        return;
    };
    let mut session = Session {
        conn: server.next_conn(),
        peer,
        key: None,
    };
    server.metrics.connections.fetch_add(1, Relaxed);
    server.metrics.connections_total.fetch_add(1, Relaxed);
    log::event_about(
        peer.ip(),
        "conn_open",
        &[("conn", &session.conn), ("peer", &peer)],
    );
    let (sink, mut source) = ws.split();
    let out = Arc::new(Outbox::new(
        server.cfg.queue_bytes,
        server.cfg.queue_messages,
    ));
    let writer = {
        let (out, idle) = (out.clone(), server.cfg.idle_timeout);
        tokio::spawn(async move { out.write(sink, idle).await })
    };
    let (ended, repo) = session_run(
        &server,
        &mut source,
        &mut watch,
        &out,
        &mut session,
        (deadline, &bearer),
    )
    .await;
    let why = match &ended {
        Ended::Refused(r) => {
            tell(&server, &session, &out, r, repo.as_deref());
            r.what.clone()
        }
        Ended::Closed(why) => why.to_string(),
    };
    out.close();
    linger(source, writer).await;
    server.metrics.connections.fetch_sub(1, Relaxed);
    let repo = repo.unwrap_or_else(|| "-".into());
    log::event_about(
        peer.ip(),
        "conn_close",
        &[
            ("conn", &session.conn),
            ("peer", &peer),
            ("repo", &repo),
            ("why", &why),
        ],
    );
    drop(guard);
}

/// Close without destroying the last message: let the writer send what is queued (the refusal,
/// then the Close frame) while reading and dropping whatever the peer still sends; then shut
/// our side down and keep reading and dropping raw bytes until the peer closes, for at most
/// `LINGER` in all. Dropping a socket with unread input makes the kernel reset the connection,
/// and a reset makes the peer's kernel discard what its application has not read yet: the
/// refusal, for a peer that was still pushing, or still sending a message over the size limit
/// (the WebSocket layer stops reading at its header; the rest is drained here, unparsed).
async fn linger(
    mut source: SplitStream<Socket>,
    writer: tokio::task::JoinHandle<SplitSink<Socket, Ws>>,
) {
    let until = Instant::now() + LINGER;
    let drain = async { while let Some(Ok(_)) = source.next().await {} };
    let (sink, _) = tokio::join!(writer, timeout_at(until, drain));
    let Ok(sink) = sink else { return };
    let Ok(mut ws) = source.reunite(sink) else {
        return;
    };
    let io = ws.get_mut();
    let raw = async {
        let _ = io.shutdown().await;
        let mut buf = [0u8; 4096];
        while let Ok(n) = io.read(&mut buf).await {
            if n == 0 {
                break;
            }
        }
    };
    let _ = timeout_at(until, raw).await;
}

fn tell(server: &Server, session: &Session, out: &Outbox, r: &Refusal, repo: Option<&str>) {
    r.log(session, repo);
    server.metrics.refusal(&r.what);
    out.force(Bytes::from(r.encode()));
}

/// Handshake, subscribe, then read until the session ends. Also returns the repository name.
async fn session_run<S>(
    server: &Arc<Server>,
    source: &mut S,
    watch: &mut Watch,
    out: &Arc<Outbox>,
    session: &mut Session,
    (deadline, bearer): (Instant, &Bearer),
) -> (Ended, Option<String>)
where
    S: Stream<Item = Result<Ws, WsError>> + Unpin,
{
    // The bearer token first (`--auth-jwks`): a refused one ends the connection before the
    // handshake, with nothing read, opened or stored.
    let grant = match &server.auth {
        Some(auth) => match auth.check_fresh(bearer, now_s).await {
            Ok(g) => Some(g),
            Err(r) => return (Ended::Refused(r), None),
        },
        None => None,
    };
    let max = server.cfg.max_message_bytes;
    let expect = handshake::Expect {
        hosts: &server.hosts,
        max_age: server.cfg.handshake_timeout,
        max,
    };
    let hello = match timeout_at(
        deadline,
        handshake::handshake(source, out, session, &expect),
    )
    .await
    {
        Ok(Ok(hello)) => hello,
        Ok(Err(ended)) => return (ended, None),
        Err(_) => {
            let ms = server.cfg.handshake_timeout.as_millis();
            let detail = format!("no Hello within {ms} ms of connecting (--handshake-timeout-ms)");
            return (
                Ended::Refused(Refusal::limit("handshake timeout", detail)),
                None,
            );
        }
    };
    let name = hello.repo.clone();
    if let Some(Err(r)) = grant.as_ref().map(|g| g.may_open(&name)) {
        return (Ended::Refused(r), Some(name));
    }
    // A session ends when its token does (`exp` plus the leeway), told `token-expired` first:
    // the client dials again with a fresh token.
    let ends = grant.as_ref().map(|g| (until_s(g.ends_s), g.expired()));
    let ended = match subscribe(server, source, out, session, hello, grant.as_ref()).await {
        Ok(repo) => {
            let ended = read_loop(server, source, watch, out, (&repo, session), ends).await;
            repo.send(Cmd::Leave { conn: session.conn });
            ended
        }
        Err(ended) => ended,
    };
    (ended, Some(name))
}

/// Subscribe the session to its repository. A name the store does not hold is refused
/// (`not-found`) unless the session creates it: then its founding push is read and verified
/// before anything is opened (`found.rs`).
async fn subscribe<S>(
    server: &Arc<Server>,
    source: &mut S,
    out: &Arc<Outbox>,
    session: &Session,
    hello: Hello,
    grant: Option<&Grant>,
) -> Result<RepoHandle, Ended>
where
    S: Stream<Item = Result<Ws, WsError>> + Unpin,
{
    if server.shutdown.is_set() {
        return Err(shutting_down());
    }
    let exists = server
        .registry
        .exists(&hello.repo)
        .await
        .map_err(Ended::Refused)?;
    let founding = match (exists, hello.create) {
        (true, _) => None,
        (false, false) => return Err(Ended::Refused(found::not_found(&hello.repo))),
        (false, true) => {
            if let Some(Err(r)) = grant.map(|g| g.may_create(&hello.repo)) {
                return Err(Ended::Refused(r));
            }
            let f = found::read_founding(
                &server.cfg,
                &server.budgets,
                source,
                out,
                session,
                &hello.repo,
            )
            .await?;
            // A verified root: it counts against its address's creations.
            server
                .creates
                .take(session.peer.ip())
                .map_err(Ended::Refused)?;
            Some(f)
        }
    };
    let repo = server
        .registry
        .acquire(&hello.repo, session.peer.ip())
        .await
        .map_err(Ended::Refused)?;
    let (tx, conn) = (repo.sender(), session.conn);
    out.set_drain_hook(Box::new(move || {
        let _ = tx.send(Cmd::Drained { conn });
    }));
    let Some(f) = founding else {
        let cmd = Cmd::Subscribe {
            session: session.clone(),
            cursor: hello.cursor,
            out: out.clone(),
        };
        return if repo.send(cmd) {
            Ok(repo)
        } else {
            Err(gone())
        };
    };
    let (done, created) = oneshot::channel();
    let cmd = Cmd::Create {
        session: session.clone(),
        out: out.clone(),
        commits: f.commits,
        seals: f.seals,
        done,
    };
    if !repo.send(cmd) {
        return Err(gone());
    }
    let _ = created.await;
    Ok(repo)
}

/// The instant Unix time `at_s` is reached (now, if it has passed; at most a year ahead: a
/// token whose `exp` is further away ends its session after a year).
fn until_s(at_s: u64) -> Instant {
    const YEAR: Duration = Duration::from_secs(365 * 86400);
    let left = std::time::UNIX_EPOCH
        .checked_add(Duration::from_secs(at_s))
        .map_or(YEAR, |at| {
            at.duration_since(std::time::SystemTime::now())
                .unwrap_or_default()
        });
    Instant::now() + left.min(YEAR)
}

fn now_s() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn shutting_down() -> Ended {
    Ended::Refused(Refusal::unavailable("server shutting down".into()))
}

fn gone() -> Ended {
    Ended::Refused(Refusal::unavailable(
        "the repository closed; reconnect".into(),
    ))
}

/// Read messages until the session ends: pushes one at a time, pings on silence; a message
/// begun must be complete within `--message-timeout-ms` (pongs do not extend it); at `ends`
/// (the bearer token's expiry, if any) the session ends with its refusal.
async fn read_loop<S>(
    server: &Arc<Server>,
    source: &mut S,
    watch: &mut Watch,
    out: &Arc<Outbox>,
    (repo, session): (&RepoHandle, &Session),
    ends: Option<(Instant, Refusal)>,
) -> Ended
where
    S: Stream<Item = Result<Ws, WsError>> + Unpin,
{
    let cfg = &server.cfg;
    let (mut heard, mut pinged) = (Instant::now(), false);
    let check = (cfg.message_timeout / 4).clamp(Duration::from_millis(10), Duration::from_secs(1));
    let mut next_check = Instant::now() + check;
    // An attachment upload under way (removed with its file when the connection ends).
    let mut upload: Option<Upload> = None;
    watch.message();
    // Without a token, a deadline that never comes (a year: `sleep_until` wants an instant).
    let (ends_at, mut expired) = match ends {
        Some((at, r)) => (at, Some(r)),
        None => (Instant::now() + Duration::from_secs(365 * 86400), None),
    };
    loop {
        let wake = heard
            + if pinged {
                cfg.idle_timeout
            } else {
                cfg.idle_timeout / 2
            };
        let frame = tokio::select! {
            f = source.next() => f,
            _ = sleep_until(next_check) => {
                next_check = Instant::now() + check;
                if let Some(ended) = message_late(watch, cfg) {
                    return ended;
                }
                // An upload that stalls keeps its file and its reservation of the repository's
                // attachment bytes: not for longer than a message may take.
                if let Some(ended) = upload.as_ref().and_then(|u| u.late(cfg.message_timeout)) {
                    return ended;
                }
                continue;
            }
            _ = sleep_until(wake) => {
                if pinged {
                    let ms = cfg.idle_timeout.as_millis();
                    let detail = format!("no message or pong for {ms} ms (--idle-timeout-ms)");
                    return Ended::Refused(Refusal::limit("idle timeout", detail));
                }
                out.ping();
                pinged = true;
                continue;
            }
            _ = out.closed() => return Ended::Closed("closed by the server"),
            _ = server.shutdown.wait() => return shutting_down(),
            _ = sleep_until(ends_at), if expired.is_some() => {
                if let Some(r) = expired.take() {
                    return Ended::Refused(r);
                }
                continue;
            }
        };
        (heard, pinged) = (Instant::now(), false);
        match &frame {
            Some(Ok(Ws::Ping(p) | Ws::Pong(p))) => {
                watch.control(p.len());
                if let Some(ended) = message_late(watch, cfg) {
                    return ended;
                }
            }
            Some(Ok(_)) => watch.message(),
            _ => {}
        }
        let bytes = match frames::message(frame, cfg.max_message_bytes, "closed by the peer") {
            Ok(Some(b)) => b,
            Ok(None) => continue,
            Err(ended) => return ended,
        };
        if let Err(ended) = on_message(server, &bytes, out, (repo, session), &mut upload).await {
            return ended;
        }
    }
}

/// The refusal for a message begun longer than `--message-timeout-ms` ago, if one is.
fn message_late(watch: &mut Watch, cfg: &crate::config::Config) -> Option<Ended> {
    let late = watch
        .pending_for(Instant::now())
        .is_some_and(|d| d >= cfg.message_timeout);
    late.then(|| {
        let ms = cfg.message_timeout.as_millis();
        let detail =
            format!("a message was begun but not completed within {ms} ms (--message-timeout-ms)");
        Ended::Refused(Refusal::limit("message timeout", detail))
    })
}

/// One message after the handshake: `Push`, or an attachment upload or download
/// (`attach_store`).
async fn on_message(
    server: &Arc<Server>,
    bytes: &[u8],
    out: &Arc<Outbox>,
    (repo, session): (&RepoHandle, &Session),
    upload: &mut Option<Upload>,
) -> Result<(), Ended> {
    let (commits, seals) = match Message::decode(bytes) {
        Ok(Message::Push { commits, seals }) => (commits, seals),
        Ok(Message::AttachOffer { hash, size }) => {
            let at = (&**out, repo, session);
            return attach_store::offer(server, at, upload, hash, size).await;
        }
        Ok(Message::AttachChunk {
            hash,
            offset,
            bytes: chunk,
        }) => {
            // Uploaded bytes count against the address's push budget; over it the socket is
            // not read until it allows them (back-pressure, not a refusal).
            while let Err(wait) = server.budgets.take(session.peer.ip(), bytes.len()) {
                tokio::time::sleep(wait).await;
            }
            return attach_store::chunk((out, session), upload, hash, offset, &chunk).await;
        }
        Ok(Message::AttachGet {
            hash,
            size,
            offset,
            length,
        }) => {
            let at = (&**out, repo, session);
            let window = (offset, length);
            return attach_store::get(server, at, hash, size, window).await;
        }
        Ok(Message::Hello { .. }) => {
            return Err(Ended::protocol("a second Hello on one connection"))
        }
        Ok(_) => {
            return Err(Ended::protocol(
                "a server-to-client message sent to the server",
            ))
        }
        Err(e) => return Err(Ended::Refused(Refusal::from(&e))),
    };
    if let Err(wait) = server.budgets.take(session.peer.ip(), bytes.len()) {
        let cfg = &server.cfg;
        let detail = format!(
            "over {} pushes or {} bytes per second from this address (--push-rate, --push-bytes-rate); nothing of this push was stored; retry in {} ms",
            cfg.push_rate, cfg.push_bytes_rate, wait.as_millis()
        );
        let r = Refusal::limit("push rate", detail);
        server
            .metrics
            .commits_refused(ErrorCode::Limit, commits.len());
        tell(server, session, out, &r, None);
        tokio::time::sleep(wait).await; // back-pressure: the socket is not read meanwhile
        return Ok(());
    }
    let (done, stored) = oneshot::channel();
    let cmd = Cmd::Push {
        session: session.clone(),
        commits,
        seals,
        done,
    };
    if !repo.send(cmd) {
        return Err(gone());
    }
    let _ = stored.await; // back-pressure: one push at a time per connection
    Ok(())
}
