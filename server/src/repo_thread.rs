//! The thread that owns one repository: it runs the core's `Hub` and serves the commands of
//! its connections in order (subscribe, push, leave, drained, close). Catch-up is streamed one
//! `Commits` batch at a time while the subscriber's queue has room; a live subscriber gets each
//! new range at once, and is dropped if its queue is full. A storage error reopens the
//! repository from disk; a panic ends the thread after telling every subscriber.

use crate::config::Config;
use crate::files::{open_hub, MeteredFile};
use crate::log;
use crate::metrics::Metrics;
use crate::outbox::Outbox;
use crate::refusal::Refusal;
use crate::session::Session;
use bytes::Bytes;
use ibexdb::{Admission, CommitId, Error, ErrorCode, Hub, Message, PermissionErrorKind};
use std::collections::{HashMap, HashSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::oneshot;

/// What a connection asks of its repository thread.
pub enum Cmd {
    Subscribe {
        session: Session,
        cursor: u64,
        out: Arc<Outbox>,
    },
    /// `done` fires once the push is stored, acknowledged and relayed (or refused).
    Push {
        session: Session,
        commits: Vec<(CommitId, Vec<u8>)>,
        seals: Vec<Vec<u8>>,
        done: oneshot::Sender<()>,
    },
    Leave {
        conn: u64,
    },
    /// The connection's queue drained under half: stream more catch-up.
    Drained {
        conn: u64,
    },
    /// Write a snapshot if the log grew, close the files and end the thread.
    Close,
}

/// How the thread ended.
pub enum Exit {
    Closed,
    Failed(String),
    Panicked,
}

struct Sub {
    session: Session,
    out: Arc<Outbox>,
    /// Every sequence up to this one is queued to the subscriber.
    sent: u64,
    /// Caught up: new ranges are queued as they are stored.
    live: bool,
}

struct Actor {
    name: String,
    hub: Hub<MeteredFile>,
    subs: HashMap<u64, Sub>,
    cfg: Arc<Config>,
    metrics: Arc<Metrics>,
}

/// Open the repository and serve `rx` until `Close`, a failure or a panic.
pub fn run(name: &str, cfg: &Arc<Config>, metrics: &Arc<Metrics>, rx: &Receiver<Cmd>) -> Exit {
    let t = Instant::now();
    let hub = match open_hub(cfg, name, metrics) {
        Ok(hub) => hub,
        Err(e) => return Exit::Failed(e.to_string()),
    };
    let report = hub.repo().open_report().clone();
    log::event(
        "repo_open",
        &[
            ("repo", &name),
            ("commits", &hub.head()),
            ("from_snapshot", &report.from_snapshot),
            ("replayed_frames", &report.replayed_frames),
            ("ms", &t.elapsed().as_millis()),
        ],
    );
    let mut actor = Actor {
        name: name.to_string(),
        hub,
        subs: HashMap::new(),
        cfg: cfg.clone(),
        metrics: metrics.clone(),
    };
    actor.serve(rx)
}

/// Answer the commands still queued to a thread that failed: subscribers get `Unavailable`.
pub fn refuse_rest(rx: &Receiver<Cmd>, why: &str) {
    let r = Refusal::unavailable(why.to_string());
    while let Ok(cmd) = rx.try_recv() {
        if let Cmd::Subscribe { out, .. } = cmd {
            out.abort(Bytes::from(r.encode()));
        }
    }
}

impl Actor {
    fn serve(&mut self, rx: &Receiver<Cmd>) -> Exit {
        while let Ok(cmd) = rx.recv() {
            if let Cmd::Close = cmd {
                break;
            }
            match catch_unwind(AssertUnwindSafe(|| self.handle(cmd))) {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    if let Err(why) = self.reopen(&e) {
                        self.fail_all(&why);
                        return Exit::Failed(why);
                    }
                }
                Err(_) => {
                    self.fail_all("the repository thread failed; reconnect");
                    return Exit::Panicked;
                }
            }
        }
        self.close();
        Exit::Closed
    }

    /// One command; an error is a storage failure (the repository must be reopened).
    fn handle(&mut self, cmd: Cmd) -> Result<(), Error> {
        match cmd {
            Cmd::Subscribe {
                session,
                cursor,
                out,
            } => self.subscribe(session, cursor, out),
            Cmd::Push {
                session,
                commits,
                seals,
                done,
            } => {
                let r = self.push(&session, &commits, &seals);
                let _ = done.send(());
                r
            }
            Cmd::Leave { conn } => {
                self.subs.remove(&conn);
                Ok(())
            }
            Cmd::Drained { conn } => self.pump(conn),
            Cmd::Close => Ok(()),
        }
    }

    fn subscribe(&mut self, session: Session, cursor: u64, out: Arc<Outbox>) -> Result<(), Error> {
        let conn = session.conn;
        match self.hub.subscribe(&self.name, cursor, session.key.as_ref()) {
            Ok((welcome, from)) => {
                out.force(Bytes::from(welcome.encode()));
                let sub = Sub {
                    session,
                    out,
                    sent: from,
                    live: false,
                };
                self.subs.insert(conn, sub);
                self.pump(conn)
            }
            Err(e) => {
                let r = Refusal::from(&e);
                self.metrics.refusal(&r.what);
                crate::connection::log_refusal(&session, &r, Some(&self.name));
                out.abort(Bytes::from(r.encode()));
                Ok(())
            }
        }
    }

    /// Queue catch-up batches to `conn` while its queue has room; live once caught up.
    fn pump(&mut self, conn: u64) -> Result<(), Error> {
        let head = self.hub.head();
        let Some(sub) = self.subs.get_mut(&conn) else {
            return Ok(());
        };
        while sub.sent < head && !sub.live {
            if !sub.out.has_room() {
                sub.out.want_drain();
                if !sub.out.has_room() {
                    return Ok(());
                }
            }
            let m = self
                .hub
                .batch(sub.sent, head, &HashSet::new(), self.cfg.batch_bytes)?;
            let Message::Commits { to, .. } = &m else {
                unreachable!("Hub::batch makes Commits")
            };
            let to = *to;
            if !sub.out.push(Bytes::from(m.encode())) {
                sub.out.want_drain();
                return Ok(());
            }
            sub.sent = to;
        }
        sub.live = sub.sent >= head;
        Ok(())
    }

    fn push(
        &mut self,
        session: &Session,
        commits: &[(CommitId, Vec<u8>)],
        seals: &[Vec<u8>],
    ) -> Result<(), Error> {
        panic_hook(&self.name);
        self.metrics.pushes.fetch_add(1, Relaxed);
        let Some(out) = self.subs.get(&session.conn).map(|s| s.out.clone()) else {
            return Ok(());
        };
        let admission = Admission::Server {
            session: session.key,
            allow_unowned: self.cfg.accept_trusted,
        };
        match self.hub.push(&admission, commits, seals) {
            Ok(done) => {
                let stored = done.to - done.from;
                self.metrics.commits_stored.fetch_add(stored, Relaxed);
                let ack = Message::Ack { ids: done.ack }.encode();
                if !out.push(Bytes::from(ack)) {
                    self.drop_slow(session.conn);
                }
                self.relay(done.from, done.to, session.conn, commits)?;
                if done.access_changed {
                    self.drop_readers_without_rights();
                }
                self.maybe_snapshot(false);
                Ok(())
            }
            Err(e) => {
                let r = Refusal::from(&e);
                self.metrics.commits_refused(r.code, commits.len());
                self.metrics.refusal(&r.what);
                crate::connection::log_refusal(session, &r, Some(&self.name));
                out.force(Bytes::from(r.encode()));
                match ErrorCode::of(&e) {
                    ErrorCode::Storage => Err(e),
                    _ => Ok(()),
                }
            }
        }
    }

    /// Queue the new range to every live subscriber (the pusher without its own commits);
    /// a live subscriber whose queue is full is dropped; others keep catching up.
    fn relay(
        &mut self,
        from: u64,
        to: u64,
        pusher: u64,
        commits: &[(CommitId, Vec<u8>)],
    ) -> Result<(), Error> {
        if to == from {
            return Ok(());
        }
        let mine: HashSet<CommitId> = commits.iter().map(|c| c.0).collect();
        let max = self.cfg.batch_bytes;
        let for_all = range_of(&self.hub, from, to, &HashSet::new(), max)?;
        let mut slow = Vec::new();
        let mut behind = Vec::new();
        for (&conn, sub) in self.subs.iter_mut() {
            if !sub.live || sub.sent != from {
                behind.push(conn);
                continue;
            }
            let own;
            let msgs = if conn == pusher {
                own = range_of(&self.hub, from, to, &mine, max)?;
                &own
            } else {
                &for_all
            };
            if msgs.iter().all(|m| sub.out.push(m.clone())) {
                sub.sent = to;
            } else {
                slow.push(conn);
            }
        }
        for conn in slow {
            self.drop_slow(conn);
        }
        for conn in behind {
            self.pump(conn)?;
        }
        Ok(())
    }

    /// After the access list changed: close the subscribers whose session may no longer read.
    fn drop_readers_without_rights(&mut self) {
        let lost: Vec<u64> = self
            .subs
            .iter()
            .filter(|(_, sub)| !self.hub.rights(sub.session.key.as_ref()).read)
            .map(|(&conn, _)| conn)
            .collect();
        for conn in lost {
            let Some(sub) = self.subs.remove(&conn) else {
                continue;
            };
            let r = Refusal::from(&Error::Permission {
                kind: PermissionErrorKind::CannotRead,
                detail: "this session's read access was revoked".into(),
            });
            self.metrics.refusal(&r.what);
            crate::connection::log_refusal(&sub.session, &r, Some(&self.name));
            sub.out.abort(Bytes::from(r.encode()));
        }
    }

    /// A subscriber whose queue is full: discard its queue, tell it, close it.
    fn drop_slow(&mut self, conn: u64) {
        let Some(sub) = self.subs.remove(&conn) else {
            return;
        };
        let r = Refusal::limit(
            "queue",
            format!(
                "the connection's outbound queue is full ({} bytes or {} messages, --queue-bytes, --queue-messages): it reads too slowly; reconnect with your cursor",
                self.cfg.queue_bytes, self.cfg.queue_messages
            ),
        );
        self.metrics.queue_drops.fetch_add(1, Relaxed);
        self.metrics.refusal(&r.what);
        crate::connection::log_refusal(&sub.session, &r, Some(&self.name));
        sub.out.abort(Bytes::from(r.encode()));
    }

    /// After a storage error: close every subscriber (they resume from their cursors) and
    /// reopen from disk (recovery drops a torn tail). Err when it cannot be reopened.
    fn reopen(&mut self, e: &Error) -> Result<(), String> {
        self.metrics.repository_failures.fetch_add(1, Relaxed);
        log::event("repo_storage_error", &[("repo", &self.name), ("error", e)]);
        let r = Refusal::unavailable(format!(
            "repository {} had a storage error; reconnect",
            self.name
        ));
        for (_, sub) in self.subs.drain() {
            sub.out.abort(Bytes::from(r.encode()));
        }
        let hub = open_hub(&self.cfg, &self.name, &self.metrics).map_err(|e| e.to_string())?;
        self.hub = hub;
        Ok(())
    }

    fn fail_all(&mut self, why: &str) {
        self.metrics.repository_failures.fetch_add(1, Relaxed);
        log::event("repo_failed", &[("repo", &self.name), ("error", &why)]);
        let r = Refusal::unavailable(format!("repository {}: {why}", self.name));
        for (_, sub) in self.subs.drain() {
            sub.out.abort(Bytes::from(r.encode()));
        }
    }

    /// Write the snapshot when the log grew past the threshold (or, closing, at all).
    fn maybe_snapshot(&mut self, closing: bool) {
        let tail = self.hub.repo().tail_bytes();
        if tail == 0 || (!closing && tail < self.cfg.snapshot_tail_bytes) {
            return;
        }
        let t = Instant::now();
        match self.hub.write_snapshot() {
            Ok(_) => {
                self.metrics.snapshots.fetch_add(1, Relaxed);
                let ms = t.elapsed().as_millis();
                log::event(
                    "snapshot",
                    &[("repo", &self.name), ("tail_bytes", &tail), ("ms", &ms)],
                );
            }
            Err(e) => log::event("snapshot_failed", &[("repo", &self.name), ("error", &e)]),
        }
    }

    fn close(&mut self) {
        self.maybe_snapshot(true);
        let r = Refusal::unavailable(format!("repository {} closed; reconnect", self.name));
        for (_, sub) in self.subs.drain() {
            sub.out.abort(Bytes::from(r.encode()));
        }
        log::event(
            "repo_close",
            &[("repo", &self.name), ("commits", &self.hub.head())],
        );
    }
}

/// Test hook: with `IBEXDB_SERVER_PANIC_ON_PUSH=NAME` in the environment, the first push to
/// repository NAME panics its thread (the tests check that the thread is replaced).
fn panic_hook(name: &str) {
    static FIRED: AtomicBool = AtomicBool::new(false);
    let armed = std::env::var_os("IBEXDB_SERVER_PANIC_ON_PUSH").is_some_and(|n| n == name);
    if armed && !FIRED.swap(true, Relaxed) {
        panic!("test hook: panic on a push to {name}");
    }
}

/// `Commits` messages for `from+1..=to` leaving out `skip`, each encoded once.
fn range_of(
    hub: &Hub<MeteredFile>,
    from: u64,
    to: u64,
    skip: &HashSet<CommitId>,
    max_bytes: usize,
) -> Result<Vec<Bytes>, Error> {
    let mut out = Vec::new();
    let mut at = from;
    while at < to {
        let m = hub.batch(at, to, skip, max_bytes)?;
        if let Message::Commits { to, .. } = &m {
            at = *to;
        }
        out.push(Bytes::from(m.encode()));
    }
    Ok(out)
}
