//! `ibexdb-server --data DIR --listen 127.0.0.1:PORT [--accept-trusted]`
//!
//! The sync server. Each repository is one log file `DIR/<name>.log` (the core's file storage)
//! owned by one thread that runs the core's [`Hub`]: it verifies pushes with `Repo::receive`,
//! flushes them (fsync) before acknowledging and before relaying them to the repository's other
//! subscribers. Each WebSocket connection subscribes to one repository with a `Hello`.
//!
//! On start it prints `ibexdb-server listening on ADDR` (with the real port when PORT is 0) on
//! stdout. Connection rules (design document §12): a message that does not decode, a message
//! before `Hello`, a second `Hello` or a text frame gets an `Error` (code 1) and the connection
//! is closed; a refused `Push` gets an `Error` naming the problem, nothing of it is stored, and
//! the connection stays usable.

use futures_util::{SinkExt, StreamExt};
use ibexdb::FileStorage;
use ibexdb::{check_repo_name, url_authority, ErrorCode, Expected, Hub, Message, SessionProof};
use ibexdb::{system_clock, RepoOptions};
use ibexdb::{Admission, PermissionErrorKind, PublicKey, MAX_MESSAGE_BYTES, NONCE_LEN};
use ibexdb::{CommitId, Error, ProtocolErrorKind, Repo};
use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message as Ws;

struct Config {
    data: PathBuf,
    listen: String,
    accept_trusted: bool,
    /// URLs clients use to reach this server (bound into their session proofs).
    public_urls: Vec<String>,
}

fn usage() -> ! {
    eprintln!("usage: ibexdb-server --data DIR --listen HOST:PORT [--public-url URL]... [--accept-trusted]");
    std::process::exit(2)
}

fn parse_args() -> Config {
    let mut data = None;
    let mut listen = None;
    let mut accept_trusted = false;
    let mut public_urls = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--data" => data = Some(PathBuf::from(args.next().unwrap_or_else(|| usage()))),
            "--listen" => listen = Some(args.next().unwrap_or_else(|| usage())),
            "--accept-trusted" => accept_trusted = true,
            "--public-url" => public_urls.push(args.next().unwrap_or_else(|| usage())),
            _ => usage(),
        }
    }
    Config {
        data: data.unwrap_or_else(|| usage()),
        listen: listen.unwrap_or_else(|| "127.0.0.1:8787".to_string()),
        accept_trusted,
        public_urls,
    }
}

/// The `host:port` forms clients may have dialed: the `--public-url`s, and the bound address
/// (with `localhost` for a loopback address, and both loopback names for an unspecified one).
fn accepted_hosts(cfg: &Config, addr: std::net::SocketAddr) -> Vec<String> {
    let mut hosts: Vec<String> = cfg
        .public_urls
        .iter()
        .filter_map(|u| url_authority(u))
        .collect();
    let port = addr.port();
    if addr.ip().is_unspecified() || addr.ip().is_loopback() {
        hosts.push(format!("localhost:{port}"));
        hosts.push(format!("127.0.0.1:{port}"));
        hosts.push(format!("[::1]:{port}"));
    } else {
        hosts.push(addr.to_string());
    }
    hosts
}

/// Outbound encoded messages of one connection; `None` asks the connection to close.
type Outbox = UnboundedSender<Option<Vec<u8>>>;

/// The key a session proved (`None`: anonymous).
type Session = Option<PublicKey>;

enum Cmd {
    Subscribe {
        conn: u64,
        cursor: u64,
        session: Session,
        out: Outbox,
    },
    Push {
        conn: u64,
        bytes: Vec<u8>,
    },
    Leave {
        conn: u64,
    },
}

/// The thread that owns one repository.
fn open_hub(dir: &Path, name: &str, accept_trusted: bool) -> Result<Hub<FileStorage>, Error> {
    let log = FileStorage::open(dir.join(format!("{name}.log")))?;
    let mut opts = RepoOptions::new(name, None, system_clock());
    opts.trusted = true; // the server writes no commits of its own
    opts.accept_trusted = accept_trusted;
    Hub::new(Repo::open(log, None, opts)?)
}

fn send(out: &Outbox, m: &Message) {
    let _ = out.send(Some(m.encode()));
}

/// After the access list changed, close the subscriptions whose session may no longer read.
fn drop_readers_without_rights(hub: &Hub<FileStorage>, subs: &mut HashMap<u64, (Session, Outbox)>) {
    subs.retain(|_, (session, out)| {
        if hub.rights(session.as_ref()).read {
            return true;
        }
        let e = Error::Permission {
            kind: PermissionErrorKind::CannotRead,
            detail: "this session's read access was revoked".into(),
        };
        send(out, &Message::error(&e));
        let _ = out.send(None);
        false
    });
}

fn repo_thread(name: String, mut hub: Hub<FileStorage>, cfg: Arc<Config>, rx: mpsc::Receiver<Cmd>) {
    let mut subs: HashMap<u64, (Session, Outbox)> = HashMap::new();
    while let Ok(cmd) = rx.recv() {
        match cmd {
            Cmd::Subscribe {
                conn,
                cursor,
                session,
                out,
            } => match hub.hello(&name, cursor, session.as_ref()) {
                Ok(msgs) => {
                    for m in &msgs {
                        send(&out, m);
                    }
                    subs.insert(conn, (session, out));
                }
                Err(e) => {
                    send(&out, &Message::error(&e));
                    let _ = out.send(None);
                }
            },
            Cmd::Leave { conn } => {
                subs.remove(&conn);
            }
            Cmd::Push { conn, bytes } => {
                let Some((session, out)) = subs.get(&conn).cloned() else {
                    continue;
                };
                let Ok(Message::Push { commits, seals }) = Message::decode(&bytes) else {
                    continue; // the connection decoded it already
                };
                let admission = Admission::Server {
                    session,
                    allow_unowned: cfg.accept_trusted,
                };
                match hub.push(&admission, &commits, &seals) {
                    Ok(done) => {
                        send(&out, &Message::Ack { ids: done.ack });
                        if done.to > done.from {
                            let mine: HashSet<CommitId> = commits.iter().map(|c| c.0).collect();
                            let relay = |skip: &HashSet<CommitId>| {
                                hub.range(done.from, done.to, skip).unwrap_or_default()
                            };
                            let for_pusher = relay(&mine);
                            let for_others = relay(&HashSet::new());
                            for (&c, (_, o)) in &subs {
                                let msgs = if c == conn { &for_pusher } else { &for_others };
                                for m in msgs {
                                    send(o, m);
                                }
                            }
                        }
                        if done.access_changed {
                            drop_readers_without_rights(&hub, &mut subs);
                        }
                    }
                    Err(e) => {
                        send(&out, &Message::error(&e));
                        if ErrorCode::of(&e) == ErrorCode::Storage {
                            // Frames may be half written: reopen from disk (recovery drops a
                            // torn tail) and make every subscriber resume from its cursor.
                            eprintln!("repository {name}: storage error {e}; reopening");
                            for (_, o) in subs.values() {
                                let _ = o.send(None);
                            }
                            subs.clear();
                            drop(hub);
                            match open_hub(&cfg.data, &name, cfg.accept_trusted) {
                                Ok(h) => hub = h,
                                Err(e) => {
                                    eprintln!("repository {name}: cannot reopen: {e}");
                                    return;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

struct Server {
    cfg: Arc<Config>,
    hosts: Vec<String>,
    repos: Mutex<HashMap<String, mpsc::Sender<Cmd>>>,
    next_conn: AtomicU64,
}

impl Server {
    /// The repository's command channel, opening the repository on first use.
    fn repo(&self, name: &str) -> Result<mpsc::Sender<Cmd>, Error> {
        let mut repos = self.repos.lock().unwrap();
        if let Some(tx) = repos.get(name) {
            return Ok(tx.clone());
        }
        let hub = tokio::task::block_in_place(|| {
            open_hub(&self.cfg.data, name, self.cfg.accept_trusted)
        })?;
        let (tx, rx) = mpsc::channel();
        let (n, cfg) = (name.to_string(), self.cfg.clone());
        std::thread::Builder::new()
            .name(format!("repo-{name}"))
            .spawn(move || repo_thread(n, hub, cfg, rx))
            .map_err(|e| Error::Storage(e.into()))?;
        repos.insert(name.to_string(), tx.clone());
        Ok(tx)
    }
}

/// This connection's challenge: a fresh random nonce, valid for [`HANDSHAKE_MS`].
struct Challenge {
    nonce: [u8; NONCE_LEN],
    issued_ms: u64,
}

/// How long a challenge stays valid.
const HANDSHAKE_MS: u64 = 10_000;

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Challenge {
    fn new() -> Challenge {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).expect("the OS random source");
        Challenge {
            nonce,
            issued_ms: now_ms(),
        }
    }

    fn message(&self) -> Message {
        Message::Challenge {
            nonce: self.nonce,
            server_time_ms: self.issued_ms,
        }
    }

    /// The session a `Hello` proves for `repo` (anonymous without a proof).
    fn check(
        &self,
        auth: Option<&SessionProof>,
        repo: &str,
        hosts: &[String],
    ) -> Result<Session, Error> {
        check_repo_name(repo)?;
        let Some(proof) = auth else {
            return Ok(None);
        };
        let expect = Expected {
            nonce: &self.nonce,
            issued_ms: self.issued_ms,
            now_ms: now_ms(),
            max_age_ms: HANDSHAKE_MS,
            hosts,
        };
        proof.verify(&expect, repo).map(Some)
    }
}

fn protocol_error(detail: &str) -> Vec<u8> {
    Message::error(&Error::Protocol {
        kind: ProtocolErrorKind::Unexpected,
        detail: detail.to_string(),
    })
    .encode()
}

async fn connection(server: Arc<Server>, stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let config = WebSocketConfig::default()
        .max_message_size(Some(MAX_MESSAGE_BYTES))
        .max_frame_size(Some(MAX_MESSAGE_BYTES));
    let Ok(ws) = tokio_tungstenite::accept_async_with_config(stream, Some(config)).await else {
        return;
    };
    let (mut sink, mut source) = ws.split();
    let conn = server.next_conn.fetch_add(1, Ordering::Relaxed);
    let (out_tx, mut out_rx) = unbounded_channel::<Option<Vec<u8>>>();
    let mut repo: Option<mpsc::Sender<Cmd>> = None;
    let challenge = Challenge::new();
    let _ = out_tx.send(Some(challenge.message().encode()));
    // Writer: everything queued for this connection, in order; `None` closes.
    let writer = tokio::spawn(async move {
        while let Some(m) = out_rx.recv().await {
            match m {
                Some(b) => {
                    if sink.send(Ws::binary(b)).await.is_err() {
                        break;
                    }
                }
                None => break,
            }
        }
        let _ = sink.close().await;
    });
    while let Some(Ok(frame)) = source.next().await {
        let bytes = match frame {
            Ws::Binary(b) => b.to_vec(),
            Ws::Text(_) => {
                let _ = out_tx.send(Some(protocol_error(
                    "text frames are not part of the protocol",
                )));
                break;
            }
            Ws::Close(_) => break,
            _ => continue,
        };
        let msg = match Message::decode(&bytes) {
            Ok(m) => m,
            Err(e) => {
                let _ = out_tx.send(Some(Message::error(&e).encode()));
                break;
            }
        };
        match (msg, &repo) {
            (
                Message::Hello {
                    repo: name,
                    cursor,
                    auth,
                },
                None,
            ) => {
                let session = match challenge.check(auth.as_ref(), &name, &server.hosts) {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = out_tx.send(Some(Message::error(&e).encode()));
                        break;
                    }
                };
                match server.repo(&name) {
                    Ok(tx) => {
                        let _ = tx.send(Cmd::Subscribe {
                            conn,
                            cursor,
                            session,
                            out: out_tx.clone(),
                        });
                        repo = Some(tx);
                    }
                    Err(e) => {
                        let _ = out_tx.send(Some(Message::error(&e).encode()));
                        break;
                    }
                }
            }
            (Message::Push { .. }, Some(tx)) => {
                // The repository thread decodes again; cheap next to verifying and fsync.
                if tx.send(Cmd::Push { conn, bytes }).is_err() {
                    break;
                }
            }
            (m, _) => {
                let what = match m {
                    Message::Hello { .. } => "a second Hello on one connection",
                    Message::Push { .. } => "Push before Hello",
                    _ => "a server-to-client message sent to the server",
                };
                let _ = out_tx.send(Some(protocol_error(what)));
                break;
            }
        }
    }
    if let Some(tx) = repo {
        let _ = tx.send(Cmd::Leave { conn });
    }
    let _ = out_tx.send(None);
    let _ = writer.await;
}

#[tokio::main]
async fn main() {
    let cfg = parse_args();
    if let Err(e) = std::fs::create_dir_all(&cfg.data) {
        eprintln!("cannot create {}: {e}", cfg.data.display());
        std::process::exit(1);
    }
    let listener = match TcpListener::bind(&cfg.listen).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("cannot listen on {}: {e}", cfg.listen);
            std::process::exit(1);
        }
    };
    let addr = listener.local_addr().expect("bound address");
    println!("ibexdb-server listening on {addr}");
    let _ = std::io::stdout().flush();
    let server = Arc::new(Server {
        hosts: accepted_hosts(&cfg, addr),
        cfg: Arc::new(cfg),
        repos: Mutex::new(HashMap::new()),
        next_conn: AtomicU64::new(1),
    });
    loop {
        tokio::select! {
            r = listener.accept() => {
                if let Ok((stream, _)) = r {
                    tokio::spawn(connection(server.clone(), stream));
                }
            }
            _ = tokio::signal::ctrl_c() => break,
        }
    }
}
