//! The thread that owns one repository: it runs the core's `Hub` over its store (`store.rs`)
//! and serves the commands of its connections in order (subscribe, push, leave, drained,
//! refresh, close). Catch-up is streamed one `Commits` batch at a time while the subscriber's
//! queue has room; a live subscriber gets each new range at once, and is dropped if its queue
//! is full. New ranges come from this node's pushes and, with PostgreSQL, from other nodes'
//! (`Refresh`). A store failure that leaves this node's copy unsure reopens the repository
//! from the store; a panic ends the thread after telling every subscriber.

use crate::attach_index::AttachIndex;
use crate::backend::Backend;
use crate::config::Config;
use crate::files::FileRepo;
use crate::log;
use crate::metrics::Metrics;
use crate::outbox::Outbox;
use crate::pg::PgRepo;
use crate::refusal::Refusal;
use crate::session::Session;
use crate::store::{RepoStore, StoreError};
use crate::waiting::{Added, WaitLimiter, Waiter, Waiting};
use crate::wakeup::Wakeup;
use bytes::Bytes;
use ibexdb::{Admission, CommitId, Error, Hub, Message, PermissionErrorKind, Rights, Storage};
use std::collections::{HashMap, HashSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
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
    /// A founding session (its push verified on a scratch copy, `found.rs`, and already
    /// welcomed with head 0): store its push, then subscribe it. If the repository was created
    /// meanwhile, it subscribes like any session, then pushes. `done` fires when it is done.
    Create {
        session: Session,
        out: Arc<Outbox>,
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
    /// Attachment bytes (docs/design.md §12.2): the session's rights, and whether a stored
    /// commit records attachment `hash` of `size` bytes (`attach_index.rs`).
    AttachCheck {
        session: Session,
        hash: [u8; 32],
        size: u64,
        done: oneshot::Sender<Result<(Rights, bool), Error>>,
    },
    /// Another node stored commits (PostgreSQL's NOTIFY): take them in and relay them.
    Refresh,
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
    /// Ids this session's stored seals covered without their commits, at the time (bounded
    /// by `--session-unknown-sealed-bytes`, 32 bytes an id).
    unknown_sealed: usize,
}

struct Actor<R: RepoStore> {
    name: String,
    store: R,
    subs: HashMap<u64, Sub>,
    cfg: Arc<Config>,
    metrics: Arc<Metrics>,
    wakeup: Arc<Wakeup>,
    waits: Arc<WaitLimiter>,
    /// Sessions that may not read yet, kept until a grant lets them (`waiting.rs`).
    waiting: Waiting,
    attach_index: AttachIndex,
}

/// What a repository thread is given.
pub struct Setup {
    pub name: String,
    pub cfg: Arc<Config>,
    pub metrics: Arc<Metrics>,
    pub backend: Backend,
    pub wakeup: Arc<Wakeup>,
    /// Sessions waiting for a grant, per source address (shared by every repository).
    pub waits: Arc<WaitLimiter>,
}

/// Open the repository and serve `rx` until `Close`, a failure or a panic.
pub fn run(setup: &Setup, rx: &Receiver<Cmd>) -> Exit {
    let t = Instant::now();
    let (name, cfg, metrics) = (&setup.name, &setup.cfg, &setup.metrics);
    match &setup.backend {
        Backend::Files => match FileRepo::open(cfg, name, metrics) {
            Ok(store) => Actor::start(setup, store, t).serve(rx),
            Err(e) => Exit::Failed(e.to_string()),
        },
        Backend::Postgres(pg) => match PgRepo::open(pg, cfg, name) {
            Ok(store) => Actor::start(setup, store, t).serve(rx),
            Err(e) => Exit::Failed(e.to_string()),
        },
    }
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

impl<R: RepoStore> Actor<R> {
    fn start(setup: &Setup, store: R, t: Instant) -> Actor<R> {
        let report = store.hub().repo().open_report().clone();
        log::event(
            "repo_open",
            &[
                ("repo", &setup.name),
                ("commits", &store.hub().head()),
                ("from_snapshot", &report.from_snapshot),
                ("replayed_frames", &report.replayed_frames),
                ("ms", &t.elapsed().as_millis()),
            ],
        );
        Actor {
            name: setup.name.clone(),
            store,
            subs: HashMap::new(),
            cfg: setup.cfg.clone(),
            metrics: setup.metrics.clone(),
            wakeup: setup.wakeup.clone(),
            waits: setup.waits.clone(),
            waiting: Waiting::default(),
            attach_index: AttachIndex::default(),
        }
    }

    fn hub(&self) -> &Hub<R::S> {
        self.store.hub()
    }

    fn serve(&mut self, rx: &Receiver<Cmd>) -> Exit {
        self.wakeup.set_exists(self.hub().head() > 0);
        while let Some(cmd) = self.next_cmd(rx) {
            if let Cmd::Close = cmd {
                break;
            }
            let r = catch_unwind(AssertUnwindSafe(|| self.handle(cmd)));
            self.wakeup.set_exists(self.hub().head() > 0);
            match r {
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

    /// The next command (`None`: the channel closed), ending the waits that reach
    /// `--max-waiting-ms` meanwhile.
    fn next_cmd(&mut self, rx: &Receiver<Cmd>) -> Option<Cmd> {
        let max = self.cfg.max_waiting;
        loop {
            let Some(at) = self.waiting.next_deadline(max) else {
                return rx.recv().ok();
            };
            match rx.recv_timeout(at.saturating_duration_since(Instant::now())) {
                Ok(cmd) => return Some(cmd),
                Err(RecvTimeoutError::Disconnected) => return None,
                Err(RecvTimeoutError::Timeout) => {
                    for w in self.waiting.expired(Instant::now(), max) {
                        let ms = max.as_millis();
                        let detail = format!(
                            "waited {ms} ms for a grant to read repository {:?} (--max-waiting-ms); connect again to wait again",
                            self.name
                        );
                        self.end_wait(w, "waiting time", detail);
                    }
                }
            }
        }
    }

    /// Tell a waiting session it waits no more (`LimitError` `what`) and close it.
    fn end_wait(&self, w: Waiter, what: &str, detail: String) {
        let r = Refusal::limit(what, detail);
        self.metrics.refusal(&r.what);
        r.log(&w.session, Some(&self.name));
        w.out.abort(Bytes::from(r.encode()));
    }

    /// One command; an error means this node's copy may differ from the store (the repository
    /// must be reopened).
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
            Cmd::Create {
                session,
                out,
                commits,
                seals,
                done,
            } => {
                let r = self.create(session, out, &commits, &seals);
                let _ = done.send(());
                r
            }
            Cmd::Leave { conn } => {
                self.subs.remove(&conn);
                self.waiting.remove(conn);
                Ok(())
            }
            Cmd::Drained { conn } => self.pump(conn),
            Cmd::AttachCheck {
                session,
                hash,
                size,
                done,
            } => {
                let hub = self.store.hub();
                let rights = hub.rights(session.key.as_ref());
                let known = self.attach_index.refers(hub, hash, size);
                let _ = done.send(known.map(|k| (rights, k)));
                Ok(())
            }
            Cmd::Refresh => self.refresh(),
            Cmd::Close => Ok(()),
        }
    }

    /// Take in what other nodes stored and relay it. An unreachable store is left for the next
    /// notice (the listener asks every repository again when it reconnects).
    fn refresh(&mut self) -> Result<(), Error> {
        let Some(seen) = self.wakeup.take(self.hub().head()) else {
            return Ok(());
        };
        let known = (seen != u64::MAX).then_some(seen);
        match self.store.refresh(known) {
            Ok(r) => self.relay_new(r.from, r.to, None, &[]),
            Err(StoreError::Broken(e)) => Err(e),
            Err(e) => {
                log::event(
                    "refresh_failed",
                    &[("repo", &self.name), ("error", e.error())],
                );
                self.wakeup.failed();
                Ok(())
            }
        }
    }

    /// Relay a new range. First every subscriber's read right is checked against the access
    /// list that includes the new commits: a session that may no longer read is told
    /// `PermissionError` and dropped before anything of the range is queued to it (issue 23:
    /// a revocation and the data after it in one push must not reach the revoked reader).
    fn relay_new(
        &mut self,
        from: u64,
        to: u64,
        pusher: Option<u64>,
        commits: &[(CommitId, Vec<u8>)],
    ) -> Result<(), Error> {
        if from < to {
            self.drop_readers_without_rights();
        }
        self.relay(from, to, pusher, commits)?;
        if from < to {
            self.welcome_granted()?;
        }
        Ok(())
    }

    /// Welcome the waiting sessions the access list now lets read: `Welcome`, then catch-up.
    fn welcome_granted(&mut self) -> Result<(), Error> {
        let hub = self.store.hub();
        let granted = self.waiting.granted(|s| hub.rights(s.key.as_ref()).read);
        for w in granted {
            self.subscribe_from(w.session, w.cursor, w.out, true)?;
        }
        Ok(())
    }

    /// A founding session's push (see `Cmd::Create`): the founder is subscribed, live from
    /// sequence 0, only while its push is stored (its own commits are not sent back), and
    /// closed with the refusal if nothing was.
    fn create(
        &mut self,
        session: Session,
        out: Arc<Outbox>,
        commits: &[(CommitId, Vec<u8>)],
        seals: &[Vec<u8>],
    ) -> Result<(), Error> {
        if let Err(e) = self.store.refresh(None) {
            let r = Refusal::from(e.error());
            r.log(&session, Some(&self.name));
            out.abort(Bytes::from(r.encode()));
            return match e {
                StoreError::Broken(e) => Err(e),
                _ => Ok(()),
            };
        }
        let conn = session.conn;
        if self.hub().head() > 0 {
            // Created meanwhile: subscribe (its Welcome was sent), then push as usual.
            self.subscribe_from(session.clone(), 0, out, false)?;
            return self.push(&session, commits, seals);
        }
        let sub = Sub {
            session: session.clone(),
            out: out.clone(),
            sent: 0,
            live: true,
            unknown_sealed: 0,
        };
        self.subs.insert(conn, sub);
        let r = self.push(&session, commits, seals);
        if self.hub().head() == 0 {
            // Refused (told already): nothing was created; the founder is closed.
            self.subs.remove(&conn);
            out.close();
        }
        r
    }

    fn subscribe(&mut self, session: Session, cursor: u64, out: Arc<Outbox>) -> Result<(), Error> {
        self.subscribe_from(session, cursor, out, true)
    }

    /// Subscribe a session after checking its read right (`welcome`: send the `Welcome`).
    /// A repository without commits does not exist: nobody subscribes to it.
    fn subscribe_from(
        &mut self,
        session: Session,
        cursor: u64,
        out: Arc<Outbox>,
        welcome: bool,
    ) -> Result<(), Error> {
        // Another node may have stored more than this copy has seen: a cursor from it must
        // not look like one past the head.
        match self.store.refresh(None) {
            Ok(r) => self.relay_new(r.from, r.to, None, &[])?,
            Err(e) => {
                let r = Refusal::from(e.error());
                r.log(&session, Some(&self.name));
                out.abort(Bytes::from(r.encode()));
                return match e {
                    StoreError::Broken(e) => Err(e),
                    _ => Ok(()),
                };
            }
        }
        let conn = session.conn;
        let answer = if self.hub().head() == 0 {
            Err(crate::found::not_found(&self.name))
        } else {
            self.hub()
                .subscribe(&self.name, cursor, session.key.as_ref())
                .map_err(|e| Refusal::from(&e))
        };
        match answer {
            Ok((hello, from)) => {
                if welcome {
                    out.force(Bytes::from(hello.encode()));
                }
                let sub = Sub {
                    session,
                    out,
                    sent: from,
                    live: false,
                    unknown_sealed: 0,
                };
                self.subs.insert(conn, sub);
                self.pump(conn)
            }
            Err(r) => {
                self.metrics.refusal(&r.what);
                r.log(&session, Some(&self.name));
                if !(welcome && r.kind() == Some("cannot-read")) {
                    out.abort(Bytes::from(r.encode()));
                    return Ok(());
                }
                // Told at once, but kept: welcomed the moment a grant lets it read.
                let max = self.cfg.max_waiting_per_repo;
                let told = out.clone();
                match self.waiting.add(&self.waits, max, session, cursor, out) {
                    Added::Waits(taken) => {
                        told.force(Bytes::from(waiting_refusal(&self.name).encode()));
                        if let Some(w) = taken {
                            self.end_wait(w, "waiting places", format!(
                                "the {max} waiting places of repository {:?} are full (--max-waiting-per-repo); this session's place went to one from an address holding fewer", self.name
                            ));
                        }
                    }
                    Added::Refused => told.abort(Bytes::from(r.encode())),
                }
                Ok(())
            }
        }
    }

    /// Queue catch-up batches to `conn` while its queue has room; live once caught up.
    fn pump(&mut self, conn: u64) -> Result<(), Error> {
        let head = self.store.hub().head();
        let Some(sub) = self.subs.get(&conn) else {
            return Ok(());
        };
        if sub.sent < head && !self.store.hub().rights(sub.session.key.as_ref()).read {
            self.revoke(conn);
            return Ok(());
        }
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
            let m =
                self.store
                    .hub()
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
        let Some(sub) = self.subs.get(&session.conn) else {
            if self.waiting.has(session.conn) && redeems(session, commits) {
                return self.push_redemption(session, commits, seals);
            }
            if let Some(w) = self.waiting.remove(session.conn) {
                let r = Refusal::from(&Error::Permission {
                    kind: PermissionErrorKind::CannotWrite,
                    detail: "a session waiting for read access may not push".into(),
                });
                r.log(session, Some(&self.name));
                w.out.abort(Bytes::from(r.encode()));
            }
            return Ok(());
        };
        let out = sub.out.clone();
        let unknown = sub.unknown_sealed + self.hub().unknown_sealed(commits, seals);
        let stored = if unknown.saturating_mul(32) > self.cfg.session_unknown_sealed_bytes {
            Err(StoreError::Refused(Error::Limit {
                what: "sealed unknown commits per session".into(),
                detail: format!(
                    "this session's seals would cover {unknown} commits ({} bytes of ids) this repository does not have; a session may leave at most {} bytes (--session-unknown-sealed-bytes); nothing of this push was stored",
                    unknown * 32,
                    self.cfg.session_unknown_sealed_bytes
                ),
            }))
        } else {
            let admission = Admission::Server {
                session: session.key,
                allow_unowned: self.cfg.accept_trusted,
            };
            self.store.push(&admission, commits, seals)
        };
        match stored {
            Ok(done) => {
                if let Some(sub) = self.subs.get_mut(&session.conn) {
                    sub.unknown_sealed = unknown;
                }
                self.metrics
                    .commits_stored
                    .fetch_add(done.to - done.from, Relaxed);
                let ack = Message::Ack { ids: done.ack }.encode();
                if !out.push(Bytes::from(ack)) {
                    self.drop_slow(session.conn);
                }
                let (from, to) = (done.relay_from, done.to);
                self.relay_new(from, to, Some(session.conn), commits)?;
                self.maybe_snapshot(false);
                Ok(())
            }
            Err(e) => {
                let r = Refusal::from(e.error());
                self.metrics.commits_refused(r.code, commits.len());
                self.metrics.refusal(&r.what);
                r.log(session, Some(&self.name));
                match e {
                    StoreError::Refused(_) => out.force(Bytes::from(r.encode())),
                    StoreError::Unavailable(_) => {
                        // It re-pushes what was not acknowledged when it reconnects.
                        self.subs.remove(&session.conn);
                        out.abort(Bytes::from(r.encode()));
                    }
                    StoreError::Broken(e) => {
                        out.force(Bytes::from(r.encode()));
                        return Err(e);
                    }
                }
                Ok(())
            }
        }
    }

    /// A waiting session's push of its own invite redemption (docs/design.md §6.4 "Invites"):
    /// judged by the rule like any push (a redemption that does not count is refused with its
    /// typed error and nothing is stored); once stored, the grant it makes welcomes the
    /// session, and its catch-up follows.
    fn push_redemption(
        &mut self,
        session: &Session,
        commits: &[(CommitId, Vec<u8>)],
        seals: &[Vec<u8>],
    ) -> Result<(), Error> {
        let Some(out) = self.waiting.out(session.conn) else {
            return Ok(());
        };
        let admission = Admission::Server {
            session: session.key,
            allow_unowned: self.cfg.accept_trusted,
        };
        match self.store.push(&admission, commits, seals) {
            Ok(done) => {
                self.metrics
                    .commits_stored
                    .fetch_add(done.to - done.from, Relaxed);
                out.force(Bytes::from(Message::Ack { ids: done.ack }.encode()));
                self.relay_new(done.relay_from, done.to, None, commits)?;
                self.maybe_snapshot(false);
                Ok(())
            }
            Err(e) => {
                let r = Refusal::from(e.error());
                self.metrics.commits_refused(r.code, commits.len());
                self.metrics.refusal(&r.what);
                r.log(session, Some(&self.name));
                out.force(Bytes::from(r.encode()));
                match e {
                    StoreError::Broken(e) => Err(e),
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
        pusher: Option<u64>,
        commits: &[(CommitId, Vec<u8>)],
    ) -> Result<(), Error> {
        if to == from {
            return Ok(());
        }
        let mine: HashSet<CommitId> = commits.iter().map(|c| c.0).collect();
        let max = self.cfg.batch_bytes;
        let hub = self.store.hub();
        let for_all = range_of(hub, from, to, &HashSet::new(), max)?;
        let mut slow = Vec::new();
        let mut behind = Vec::new();
        for (&conn, sub) in self.subs.iter_mut() {
            if !sub.live || sub.sent != from {
                behind.push(conn);
                continue;
            }
            let own;
            let msgs = if Some(conn) == pusher {
                own = range_of(hub, from, to, &mine, max)?;
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
            .filter(|(_, sub)| !self.store.hub().rights(sub.session.key.as_ref()).read)
            .map(|(&conn, _)| conn)
            .collect();
        for conn in lost {
            self.revoke(conn);
        }
    }

    /// Close subscriber `conn`, which may no longer read: its queue is discarded and it is told
    /// `PermissionError` (`cannot-read`).
    fn revoke(&mut self, conn: u64) {
        let Some(sub) = self.subs.remove(&conn) else {
            return;
        };
        let r = Refusal::from(&Error::Permission {
            kind: PermissionErrorKind::CannotRead,
            detail: "this session's read access was revoked".into(),
        });
        self.metrics.refusal(&r.what);
        r.log(&sub.session, Some(&self.name));
        sub.out.abort(Bytes::from(r.encode()));
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
        r.log(&sub.session, Some(&self.name));
        sub.out.abort(Bytes::from(r.encode()));
    }

    /// After a storage error: close every subscriber (they resume from their cursors) and
    /// reopen from the store (the files' recovery drops a torn tail; PostgreSQL holds only
    /// what committed). Err when it cannot be reopened.
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
        for w in self.waiting.drain() {
            w.out.abort(Bytes::from(r.encode()));
        }
        self.attach_index.reset();
        self.store.reopen().map_err(|e| e.to_string())
    }

    fn fail_all(&mut self, why: &str) {
        self.metrics.repository_failures.fetch_add(1, Relaxed);
        log::event("repo_failed", &[("repo", &self.name), ("error", &why)]);
        let r = Refusal::unavailable(format!("repository {}: {why}", self.name));
        for (_, sub) in self.subs.drain() {
            sub.out.abort(Bytes::from(r.encode()));
        }
        for w in self.waiting.drain() {
            w.out.abort(Bytes::from(r.encode()));
        }
    }

    /// Write the snapshot when the log grew past the threshold (or, closing, at all).
    fn maybe_snapshot(&mut self, closing: bool) {
        let tail = self.store.tail_bytes();
        if tail == 0 || (!closing && tail < self.cfg.snapshot_tail_bytes) {
            return;
        }
        let t = Instant::now();
        match self.store.write_snapshot() {
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
        for w in self.waiting.drain() {
            w.out.abort(Bytes::from(r.encode()));
        }
        log::event(
            "repo_close",
            &[("repo", &self.name), ("commits", &self.hub().head())],
        );
        self.store.remove_if_empty();
    }
}

/// The refusal a waiting session is told: it may not read, and it waits for a grant.
fn waiting_refusal(name: &str) -> Refusal {
    Refusal::from(&Error::Permission {
        kind: PermissionErrorKind::CannotRead,
        detail: format!(
            "this session may not read repository {name:?}; the connection waits and is welcomed as soon as a grant lets it read"
        ),
    })
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
fn range_of<S: Storage>(
    hub: &Hub<S>,
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

/// Whether a push holds only `session`'s own invite redemptions (decoded here only to route
/// it; the store checks everything again).
fn redeems(session: &Session, commits: &[(CommitId, Vec<u8>)]) -> bool {
    let Some(key) = session.key else {
        return false;
    };
    !commits.is_empty()
        && commits.iter().all(|(_, b)| {
            ibexdb::Commit::decode(b).is_ok_and(|(c, _)| ibexdb::redeemer(&c) == Some(key))
        })
}
