//! Helpers shared by the server tests: the real `ibexdb-server` binary as a child process,
//! WebSocket clients (plain or TLS), and peers that each hold an in-memory signed core `Repo`
//! and the core's sync `Client`.
#![allow(dead_code)]

pub mod measure;
pub mod pg;
pub mod raw_ws;

use futures_util::{SinkExt, StreamExt};
use ibexdb::system_clock;
use ibexdb::MemStorage;
use ibexdb::{map, member_value, public_value, CommitId, Identity, Repo, RepoOptions, Role, Txn};
use ibexdb::{Client, ClientEvent, ErrorCode, Message};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message as Ws;
use tokio_tungstenite::WebSocketStream;

/// A duplex byte stream: TCP or TLS.
pub trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

pub type Socket = WebSocketStream<Box<dyn Io>>;

/// A running server process; killed (SIGKILL) on drop.
pub struct Server {
    pub child: Child,
    pub url: String,
    pub addr: String,
    pub data: PathBuf,
    pub args: Vec<String>,
    /// The server's stderr (its log lines).
    pub log: PathBuf,
}

static STARTS: AtomicU64 = AtomicU64::new(0);

impl Server {
    pub fn start(data: PathBuf) -> Server {
        Server::start_with(data, &[])
    }

    /// Start on an ephemeral port with extra flags; waits for the "listening" line.
    pub fn start_with(data: PathBuf, args: &[&str]) -> Server {
        Server::spawn(
            Command::new(env!("CARGO_BIN_EXE_ibexdb-server")),
            data,
            args,
        )
    }

    /// Start with at most `fds` open files (soft and hard limit), through `sh -c ulimit`.
    pub fn start_with_fds(data: PathBuf, fds: u32, args: &[&str]) -> Server {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", &format!("ulimit -n {fds} && exec \"$0\" \"$@\"")]);
        cmd.arg(env!("CARGO_BIN_EXE_ibexdb-server"));
        Server::spawn(cmd, data, args)
    }

    /// Start with one extra environment variable.
    pub fn start_with_env(data: PathBuf, var: (&str, &str), args: &[&str]) -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_ibexdb-server"));
        cmd.env(var.0, var.1);
        Server::spawn(cmd, data, args)
    }

    /// A node of the PostgreSQL store at `url` (`tag` names its log file).
    pub fn node(tag: &str, url: &str, args: &[&str]) -> Server {
        let args = [&["--store", url][..], args].concat();
        Server::start_with(Server::dir(tag), &args)
    }

    fn spawn(mut cmd: Command, data: PathBuf, args: &[&str]) -> Server {
        let n = STARTS.fetch_add(1, Ordering::Relaxed);
        let log = PathBuf::from(format!("{}.stderr-{n}", data.display()));
        // With --store the data path only names the log file.
        if !args.contains(&"--store") {
            cmd.args(["--data", data.to_str().unwrap()]);
        }
        let mut child = cmd
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("start ibexdb-server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("ibexdb-server listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_string();
        let tls = args.contains(&"--tls-cert");
        Server {
            child,
            url: format!("{}://{addr}", if tls { "wss" } else { "ws" }),
            addr,
            data,
            args: args.iter().map(|s| s.to_string()).collect(),
            log,
        }
    }

    pub fn dir(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "ibexdb-server-test-{tag}-{}-{}",
            std::process::id(),
            Instant::now().elapsed().as_nanos()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    pub fn fresh(tag: &str) -> Server {
        Server::start(Server::dir(tag))
    }

    pub fn fresh_with(tag: &str, args: &[&str]) -> Server {
        Server::start_with(Server::dir(tag), args)
    }

    /// The same data directory and flags, after a kill or a shutdown.
    pub fn restart(&self) -> Server {
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        Server::start_with(self.data.clone(), &args)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn log_len(&self, repo: &str) -> u64 {
        std::fs::metadata(self.data.join(format!("{repo}.log")))
            .map(|m| m.len())
            .unwrap_or(0)
    }

    /// The server's resident memory (VmRSS) in bytes.
    pub fn rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
        let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        kb * 1024
    }

    /// A plain HTTP GET on the server's listener: (status line, body).
    pub fn http_get(&self, path: &str) -> (String, String) {
        let mut s = std::net::TcpStream::connect(&self.addr).unwrap();
        write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        (head.lines().next().unwrap().to_string(), body.to_string())
    }

    /// One metric's value from `/metrics` (the first line that starts with `name`).
    pub fn metric(&self, name: &str) -> f64 {
        let (_, body) = self.http_get("/metrics");
        let line = body
            .lines()
            .find(|l| l.starts_with(name) && !l.starts_with('#'))
            .unwrap_or_else(|| panic!("no metric {name} in\n{body}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A WebSocket over TCP from the default source address.
pub async fn socket(url: &str) -> Socket {
    try_socket(url, None).await.expect("connect")
}

/// A WebSocket over TCP, from `source` (a loopback address) if given.
pub async fn try_socket(url: &str, source: Option<&str>) -> Option<Socket> {
    let addr = url.split("://").nth(1).unwrap().parse().unwrap();
    let sock = tokio::net::TcpSocket::new_v4().unwrap();
    if let Some(ip) = source {
        sock.bind(format!("{ip}:0").parse().unwrap()).unwrap();
    }
    let tcp: TcpStream = sock.connect(addr).await.ok()?;
    let io: Box<dyn Io> = Box::new(tcp);
    Some(tokio_tungstenite::client_async(url, io).await.ok()?.0)
}

pub async fn send(ws: &mut Socket, m: &Message) {
    ws.send(Ws::binary(m.encode())).await.unwrap();
}

/// The next protocol message, `None` on close or after `wait` with nothing.
pub async fn recv(ws: &mut Socket, wait: Duration) -> Option<Message> {
    loop {
        match tokio::time::timeout(wait, ws.next()).await {
            Ok(Some(Ok(Ws::Binary(b)))) => return Some(Message::decode(&b).unwrap()),
            Ok(Some(Ok(Ws::Close(_)))) | Ok(None) | Ok(Some(Err(_))) | Err(_) => return None,
            Ok(Some(Ok(_))) => continue,
        }
    }
}

/// What one read found.
#[allow(clippy::large_enum_variant)]
pub enum Recv {
    Message(Message),
    Idle,
    Closed,
}

/// The next protocol message, or that nothing came within `wait`, or that the socket closed.
pub async fn recv_or_closed(ws: &mut Socket, wait: Duration) -> Recv {
    loop {
        match tokio::time::timeout(wait, ws.next()).await {
            Ok(Some(Ok(Ws::Binary(b)))) => return Recv::Message(Message::decode(&b).unwrap()),
            Ok(Some(Ok(Ws::Close(_)))) | Ok(None) | Ok(Some(Err(_))) => return Recv::Closed,
            Err(_) => return Recv::Idle,
            Ok(Some(Ok(_))) => continue,
        }
    }
}

/// Read until an `Error` arrives (skipping other messages); its code and "ErrorName: text".
pub async fn expect_error(ws: &mut Socket, wait: Duration) -> (ErrorCode, String) {
    let deadline = Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match recv(ws, left).await {
            Some(Message::Error {
                code,
                name,
                message,
                ..
            }) => return (code, format!("{name}: {message}")),
            Some(_) => continue,
            None => panic!("no Error before the close or within {wait:?}"),
        }
    }
}

/// Read the server's `Challenge`: its nonce.
pub async fn challenge(ws: &mut Socket) -> [u8; ibexdb::NONCE_LEN] {
    match recv(ws, Duration::from_secs(10)).await {
        Some(Message::Challenge { nonce, .. }) => nonce,
        m => panic!("expected Challenge, got {m:?}"),
    }
}

/// Answer the challenge with a `Hello` for `repo` from cursor 0 proving `who`'s key (anonymous
/// without one), dialed as `url`, and wait for the `Welcome`; the server's head. It offers to
/// create the repository: on a name the server does not hold, its first push must found it.
pub async fn hello_as(ws: &mut Socket, url: &str, repo: &str, who: Option<&Identity>) -> u64 {
    let nonce = challenge(ws).await;
    let m = Message::Hello {
        repo: repo.into(),
        cursor: 0,
        auth: who.map(|id| ibexdb::SessionProof::sign(id, nonce, url, repo)),
        create: true,
    };
    send(ws, &m).await;
    match recv(ws, Duration::from_secs(10)).await {
        Some(Message::Welcome { head, .. }) => head,
        m => panic!("expected Welcome, got {m:?}"),
    }
}

/// Answer the challenge with an anonymous `Hello` for `repo` from cursor 0 and wait for the
/// `Welcome`; the server's head. (The repository must exist and be readable by anyone: see
/// `public_repo`.)
pub async fn hello(ws: &mut Socket, repo: &str) -> u64 {
    challenge(ws).await;
    let m = Message::Hello {
        repo: repo.into(),
        cursor: 0,
        auth: None,
        create: false,
    };
    send(ws, &m).await;
    match recv(ws, Duration::from_secs(10)).await {
        Some(Message::Welcome { head, .. }) => head,
        m => panic!("expected Welcome, got {m:?}"),
    }
}

/// Found `repo` as peer 1 of `Peer::team` (owner; the team's members may read): the owner, settled.
pub async fn team_founded(url: &str, repo: &str) -> Peer {
    let mut owner = Peer::team(repo, &[1]).remove(0);
    owner.connect(url).await;
    owner.push().await;
    owner.settle(1).await;
    owner
}

/// Found `repo` on the server as peer `n`, open to anyone (public read and write), so that
/// anonymous sessions may subscribe to it; the founder, settled.
pub async fn public_repo(url: &str, repo: &str, n: u8) -> Peer {
    let mut p = Peer::new(n, repo);
    p.repo.set_public(true, true).unwrap();
    p.connect(url).await;
    p.settle(1).await;
    p
}

/// A client: an in-memory signed repository plus the core's sync state machine.
pub struct Peer {
    pub repo: Repo<MemStorage>,
    pub client: Client,
    pub ws: Option<Socket>,
    pub n: u8,
    pub writes: u64,
    /// Commits that arrived in `Commits` messages (for the resume test).
    pub received: usize,
    /// Every id the server acknowledged.
    pub acked: Vec<CommitId>,
    /// The value size of each write (bytes of filler).
    pub pad: usize,
}

pub fn identity(n: u8) -> Identity {
    Identity::from_entropy(&[n; 48])
}

/// Every peer holds the first peer's state (the seeded run's seed is in the message).
pub fn assert_converged(peers: &mut [Peer], seed: u64) {
    let h = peers[0].repo.state_hash().unwrap();
    for p in peers.iter_mut() {
        let mine = p.repo.state_hash().unwrap();
        assert_eq!(mine, h, "seed {seed}: peer {} differs", p.n);
    }
}

impl Peer {
    /// Peer `n` with repository `repo_name` of its own (its first write founds it).
    pub fn new(n: u8, repo_name: &str) -> Peer {
        let opts = RepoOptions::new(repo_name, Some(identity(n)), system_clock());
        Peer {
            repo: Repo::open(MemStorage::new(), None, opts).unwrap(),
            client: Client::new(repo_name, "ws://unset.invalid/", 0, 0).unwrap(),
            ws: None,
            n,
            writes: 0,
            received: 0,
            acked: Vec::new(),
            pad: 0,
        }
    }

    /// Peers `ns` sharing repository `repo_name`: `ns[0]` founds it with one commit (itself
    /// owner, the others writers, anyone may read) and the others start from that history, as
    /// invited members would (docs/design.md §6.4).
    pub fn team(repo_name: &str, ns: &[u8]) -> Vec<Peer> {
        let mut peers: Vec<Peer> = ns.iter().map(|&n| Peer::new(n, repo_name)).collect();
        let mut t = Txn::new();
        for (i, &n) in ns.iter().enumerate() {
            let role = if i == 0 { Role::Owner } else { Role::Writer };
            let key = format!("_acl/{}", identity(n).public().to_hex());
            t.put(&key, member_value(role)).unwrap();
        }
        t.put("_acl/public", public_value(true, false)).unwrap();
        peers[0].repo.commit(t).unwrap();
        peers[0].repo.seal().unwrap();
        let (commits, seals) = peers[0].repo.export().unwrap();
        for p in &mut peers[1..] {
            p.repo.receive(&commits, &seals).unwrap();
        }
        peers
    }

    pub fn write(&mut self) {
        self.writes += 1;
        let mut t = Txn::new();
        let (n, w) = (self.n as i64, self.writes as i64);
        let pad = "x".repeat(self.pad);
        t.put(
            &format!("items/p{}-{}", self.n, self.writes),
            map! { "by" => n, "i" => w, "pad" => pad.as_str() }.as_map(),
        )
        .unwrap();
        // Every peer overwrites the same item: concurrent writes that must merge alike.
        t.put("items/shared", map! { "by" => n, "i" => w }.as_map())
            .unwrap();
        self.repo.commit(t).unwrap();
    }

    /// Connect: the server's challenge comes first; `event` answers it (a signed `Hello`).
    pub async fn connect(&mut self, url: &str) {
        let ws = socket(url).await;
        self.client.set_url(url);
        self.client.connect();
        self.ws = Some(ws);
    }

    /// Connect from source address `ip` (a loopback address).
    pub async fn connect_from(&mut self, url: &str, ip: &str) {
        let ws = try_socket(url, Some(ip)).await.expect("connect");
        self.client.set_url(url);
        self.client.connect();
        self.ws = Some(ws);
    }

    pub async fn connect_tls(&mut self, url: &str, tls: &tokio_rustls::TlsConnector) {
        let ws = tls_socket(url, tls).await;
        self.client.set_url(&url.replace("127.0.0.1", "localhost"));
        self.client.connect();
        self.ws = Some(ws);
    }

    pub fn disconnect(&mut self) {
        self.ws = None;
    }

    /// Send the `Hello` answering the challenge, then push whatever the server lacks.
    pub async fn push(&mut self) {
        while let Some(m) = self.client.outgoing(&mut self.repo).unwrap() {
            let ws = self.ws.as_mut().unwrap();
            if ws.send(Ws::binary(m.encode())).await.is_err() {
                return; // closed: a reconnection pushes it again
            }
        }
    }

    /// Handle one incoming message if one arrives within `wait`: its event, `None` when none
    /// came (or the socket closed).
    pub async fn event(&mut self, wait: Duration) -> Option<ClientEvent> {
        let m = recv(self.ws.as_mut()?, wait).await?;
        Some(self.handle(m).await)
    }

    /// Count and apply one server message, then push what it allows (not after a server error).
    async fn handle(&mut self, m: Message) -> ClientEvent {
        match &m {
            Message::Commits { commits, .. } => self.received += commits.len(),
            Message::Ack { ids } => self.acked.extend(ids.iter().copied()),
            _ => {}
        }
        let ev = self.client.handle(&mut self.repo, m).unwrap();
        if !matches!(ev, ClientEvent::ServerError { .. }) {
            self.push().await;
        }
        ev
    }

    /// Like `event`, but a closed socket is told apart (and forgotten: `ws` becomes `None`);
    /// server errors are events, not failures.
    pub async fn poll(&mut self, wait: Duration) -> Polled {
        let Some(ws) = self.ws.as_mut() else {
            return Polled::Closed;
        };
        let m = match recv_or_closed(ws, wait).await {
            Recv::Message(m) => m,
            Recv::Idle => return Polled::Idle,
            Recv::Closed => {
                self.ws = None;
                return Polled::Closed;
            }
        };
        Polled::Event(self.handle(m).await)
    }

    /// Handle one incoming message if one arrives within `wait`. False when none did. A server
    /// error fails the test.
    pub async fn step(&mut self, wait: Duration) -> bool {
        match self.event(wait).await {
            Some(ClientEvent::ServerError {
                code,
                name,
                message,
                ..
            }) => {
                panic!("server error {code:?}: {name}: {message}")
            }
            Some(_) => true,
            None => false,
        }
    }

    /// Write and push `writes` commits one by one, draining this peer's and `reader`'s sockets
    /// between pushes (so neither backs up; a third connection that never reads does).
    pub async fn write_past(&mut self, reader: &mut Peer, writes: usize) {
        for _ in 0..writes {
            self.write();
            self.push().await;
            while self.event(Duration::from_millis(1)).await.is_some() {}
            while reader.event(Duration::from_millis(1)).await.is_some() {}
        }
    }

    /// Exchange until the server holds all our commits and we hold `total`.
    pub async fn settle(&mut self, total: usize) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !(self.client.cursor() == total as u64
            && self.repo.commit_count() == total
            && self.client.push_from() == total)
        {
            assert!(Instant::now() < deadline, "peer {} did not settle", self.n);
            self.step(Duration::from_millis(200)).await;
        }
    }

    /// Connect and receive until our cursor reaches the server's head at connect time.
    pub async fn catch_up(&mut self, url: &str) -> u64 {
        self.connect(url).await;
        let deadline = Instant::now() + Duration::from_secs(60);
        let head = loop {
            assert!(Instant::now() < deadline, "no Hello");
            if let Some(ClientEvent::Welcome { head, .. }) =
                self.event(Duration::from_secs(1)).await
            {
                break head;
            }
        };
        while self.client.cursor() < head {
            assert!(
                Instant::now() < deadline,
                "peer {} did not catch up",
                self.n
            );
            self.step(Duration::from_millis(200)).await;
        }
        head
    }
}

/// What `Peer::poll` found.
#[allow(clippy::large_enum_variant)]
pub enum Polled {
    Event(ClientEvent),
    Idle,
    Closed,
}

/// A TLS client configuration that trusts `cert_der` only.
pub fn tls_connector(cert_der: &[u8]) -> tokio_rustls::TlsConnector {
    use tokio_rustls::rustls::{
        crypto::ring, pki_types::CertificateDer, ClientConfig, RootCertStore,
    };
    let mut roots = RootCertStore::empty();
    roots.add(CertificateDer::from(cert_der.to_vec())).unwrap();
    let config = ClientConfig::builder_with_provider(Arc::new(ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

/// A `wss://` WebSocket, the server's name checked as "localhost".
pub async fn tls_socket(url: &str, tls: &tokio_rustls::TlsConnector) -> Socket {
    let addr = url.split("://").nth(1).unwrap();
    let tcp = TcpStream::connect(addr).await.unwrap();
    let name = tokio_rustls::rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let stream = tls.connect(name, tcp).await.expect("TLS handshake");
    let io: Box<dyn Io> = Box::new(stream);
    let url = url.replace("127.0.0.1", "localhost");
    tokio_tungstenite::client_async(url, io).await.unwrap().0
}

/// splitmix64
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The seed of a seeded test: `IBEXDB_SIM_SEED`, else the clock (printed, to replay).
pub fn seed(test: &str) -> u64 {
    let seed = std::env::var("IBEXDB_SIM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    println!("{test} seed = {seed} (IBEXDB_SIM_SEED={seed} to replay)");
    seed
}
