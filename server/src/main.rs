//! `ibexdb-server --data DIR | --store postgres://… [--listen HOST:PORT] [FLAGS]` (`--help`
//! lists every flag).
//!
//! The sync server. Each open repository is owned by one thread that runs the core's `Hub`:
//! it verifies pushes with `Repo::receive` and makes them durable before acknowledging and
//! relaying them to the repository's other subscribers. With `--data DIR` (the default
//! deployment: one node, nothing to install) a repository is the log file `DIR/<name>.log`
//! plus its snapshot `DIR/<name>.snapshot`; with `--store` it lives in PostgreSQL, and any
//! number of nodes serve it, each holding a replica as a cache (docs/design.md §12.5). Each WebSocket connection subscribes to one repository with
//! its handshake (`Hello`). Everything a client can make the server hold is bounded, and each
//! refusal is an `Error` message naming the limit (docs/design.md §12.3).
//!
//! On start it prints `ibexdb-server listening on ADDR` (with the real port when PORT is 0) on
//! stdout; log lines (`key=value`) go to stderr.
//!
//! | module        | what                                                                   |
//! |---------------|------------------------------------------------------------------------|
//! | `addr`        | a source address as limits count it: IPv4, or an IPv6 /64              |
//! | `config`      | flags, defaults, `--help`                                              |
//! | `start`       | start, serve until a signal, graceful shutdown                         |
//! | `server`      | what every connection shares                                           |
//! | `listener`    | the accept loop: connection limits, back-off on accept errors          |
//! | `auth`        | bearer tokens (`--auth-jwks`): JWT checks, claims to repositories      |
//! | `jwks_fetch`  | a JWKS URL's GET over HTTP(S), bounded in time and bytes               |
//! | `tls`         | the rustls acceptor for `wss://`; the bytes a handshake may read       |
//! | `stream`      | TCP or TLS behind one type; replaying the request head                 |
//! | `http`        | the request head: WebSocket upgrade, or `GET /healthz`, `GET /metrics` |
//! | `connection`  | one connection: upgrade, session, pushes with back-pressure, idle pings |
//! | `handshake`   | the first message (`Hello`)                                            |
//! | `frame_watch` | bytes read against whole messages: the deadline of a message begun    |
//! | `frames`      | a WebSocket frame as the protocol sees it; read errors as refusals     |
//! | `session`     | what the repository thread knows of a connection                       |
//! | `outbox`      | a connection's bounded outbound queue and its writer                   |
//! | `registry`    | open repositories: open on use, idle close, LRU cap, failures          |
//! | `wakeup`      | notices of other nodes' commits, coalesced per repository              |
//! | `repo_thread` | one repository's thread: subscribe, catch-up in steps, push, relay     |
//! | `attach_index`| which attachments a repository's stored commits record                 |
//! | `attach_store`| attachment bytes: uploads checked and hashed to a file, downloads      |
//! | `backend`     | which store this server uses (files or PostgreSQL)                     |
//! | `store`       | the seam between a repository thread and its store                     |
//! | `files`       | the file store: the repository's files, fsync on create, timed fsync   |
//! | `pg/`         | the PostgreSQL store: replicas, the push transaction, LISTEN/NOTIFY    |
//! | `limits`      | connection counts, push token buckets                                  |
//! | `refusal`     | refusals as `Error` messages, and their log line                       |
//! | `metrics`     | counters, gauges, the fsync histogram; Prometheus text                 |
//! | `log`         | `key=value` log lines                                                  |
//! | `log_limit`   | log lines bounded in length and rate-limited per source address        |
//! | `shutdown`    | the shutdown flag and the signals that set it                          |
//!
//! Imports go one way (tests/structure checks that no two modules name each other, directly
//! or through others): `start` → `listener` → `connection` → `handshake`, `http`, `registry`,
//! `attach_store` → `repo_thread` → `backend` → `files`, `pg` → `store`; the leaves (`config`,
//! `refusal`, `attach_index`,
//! `session`, `outbox`, `metrics`, `log`, …) name none of them.

mod addr;
mod attach_index;
mod attach_store;
mod auth;
mod backend;
mod config;
mod connection;
mod fd_limit;
mod files;
mod found;
mod frame_watch;
mod frames;
mod handshake;
mod http;
mod jwks_fetch;
mod limits;
mod listener;
mod log;
mod log_limit;
mod metrics;
mod outbox;
mod pg;
mod refusal;
mod registry;
mod repo_thread;
mod server;
mod session;
mod shutdown;
mod start;
mod store;
mod stream;
mod tls;
mod waiting;
mod wakeup;

fn main() {
    let cfg = match config::Config::parse(std::env::args().skip(1)) {
        Ok(Some(cfg)) => cfg,
        Ok(None) => {
            print!("{}", config::help());
            return;
        }
        Err(e) => {
            eprintln!("ibexdb-server: {e}");
            std::process::exit(2);
        }
    };
    fd_limit::raise_fd_limit();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let code = runtime.block_on(start::run(cfg));
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    std::process::exit(code);
}
