//! The open repositories: one thread each, opened on first use, closed when idle (and their
//! files released), at most `--max-repos` at once (the least recently used idle one is closed
//! to make room). A repository that failed to open answers `Unavailable` until its retry time;
//! a thread that ended (closed, failed, panicked) is replaced on the next use, after its files
//! are closed. Notices that other nodes stored commits (PostgreSQL) are routed to the open
//! repository's thread, at most one queued per repository.

use crate::addr::AddrKey;
use crate::backend::Backend;
use crate::config::Config;
use crate::log;
use crate::metrics::Metrics;
use crate::refusal::Refusal;
use crate::repo_thread::{self, Cmd, Exit, Setup};
use crate::waiting::WaitLimiter;
use crate::wakeup::Wakeup;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

enum Entry {
    Open {
        tx: Sender<Cmd>,
        users: usize,
        last_used: Instant,
        gen: u64,
        done: watch::Receiver<bool>,
        wakeup: Arc<Wakeup>,
    },
    /// Told to close; its thread still holds the files until `done`.
    Closing {
        gen: u64,
        done: watch::Receiver<bool>,
    },
    Failed {
        until: Instant,
        why: String,
    },
}

pub struct Registry {
    cfg: Arc<Config>,
    metrics: Arc<Metrics>,
    backend: Backend,
    entries: Mutex<HashMap<String, Entry>>,
    next_gen: AtomicU64,
    /// The repositories each source address uses now (name → its connections there): one
    /// address may use at most `--max-repos-per-ip` (never all of `--max-repos`).
    /// Names in use per client (an IPv4 address or an IPv6 /64: `AddrKey`).
    by_ip: Mutex<HashMap<AddrKey, HashMap<String, usize>>>,
    /// Sessions waiting for a grant, per source address (`--max-waiting-per-ip`).
    waits: Arc<WaitLimiter>,
}

/// A connection's use of one repository thread; dropping it marks the use ended.
pub struct RepoHandle {
    registry: Arc<Registry>,
    name: String,
    gen: u64,
    tx: Sender<Cmd>,
    ip: IpAddr,
}

impl RepoHandle {
    /// Send a command; false when the thread is gone.
    pub fn send(&self, cmd: Cmd) -> bool {
        self.tx.send(cmd).is_ok()
    }

    /// The repository's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn sender(&self) -> Sender<Cmd> {
        self.tx.clone()
    }
}

impl Drop for RepoHandle {
    fn drop(&mut self) {
        self.registry.release(&self.name, self.gen);
        self.registry.release_ip(self.ip, &self.name);
    }
}

/// Ends a repository thread's registration whatever way it ends (a panic included).
struct ExitGuard {
    registry: Arc<Registry>,
    name: String,
    gen: u64,
    exit: Option<Exit>,
    done: watch::Sender<bool>,
}

impl Drop for ExitGuard {
    fn drop(&mut self) {
        let exit = self.exit.take().unwrap_or(Exit::Panicked);
        self.registry.exited(&self.name, self.gen, &exit);
        let _ = self.done.send(true);
    }
}

impl Registry {
    pub fn new(cfg: Arc<Config>, metrics: Arc<Metrics>, backend: Backend) -> Arc<Registry> {
        Arc::new(Registry {
            metrics,
            backend,
            entries: Mutex::new(HashMap::new()),
            next_gen: AtomicU64::new(1),
            by_ip: Mutex::new(HashMap::new()),
            waits: WaitLimiter::new(cfg.max_waiting_per_ip),
            cfg,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether repository `name` exists: open here, or holding a commit in the store. Nothing
    /// is opened or created to find out.
    pub async fn exists(&self, name: &str) -> Result<bool, Refusal> {
        if let Some(Entry::Open { wakeup, .. }) = self.lock().get(name) {
            if wakeup.exists() {
                return Ok(true);
            }
        }
        self.backend
            .exists(&self.cfg, name)
            .await
            .map_err(|e| Refusal::from(&e))
    }

    /// Count a use of `name` by `ip`, or refuse it past `--max-repos-per-ip` distinct names.
    fn use_ip(&self, ip: IpAddr, name: &str) -> Result<(), Refusal> {
        let mut by_ip = self.by_ip.lock().unwrap_or_else(|e| e.into_inner());
        let names = by_ip.entry(AddrKey::of(ip)).or_default();
        let max = self.cfg.max_repos_per_ip;
        if !names.contains_key(name) && names.len() >= max {
            let detail =
                format!("{ip} uses its maximum of {max} repositories at once (--max-repos-per-ip)");
            return Err(Refusal::limit("repositories per ip", detail));
        }
        *names.entry(name.to_string()).or_default() += 1;
        Ok(())
    }

    fn release_ip(&self, ip: IpAddr, name: &str) {
        let mut by_ip = self.by_ip.lock().unwrap_or_else(|e| e.into_inner());
        let Some(names) = by_ip.get_mut(&AddrKey::of(ip)) else {
            return;
        };
        if let Some(n) = names.get_mut(name) {
            *n -= 1;
            if *n == 0 {
                names.remove(name);
            }
        }
        if names.is_empty() {
            by_ip.remove(&AddrKey::of(ip));
        }
    }

    /// The repository's thread for a connection from `ip`, opening it if needed; waits while
    /// an earlier thread of the same repository is closing.
    pub async fn acquire(self: &Arc<Self>, name: &str, ip: IpAddr) -> Result<RepoHandle, Refusal> {
        self.use_ip(ip, name)?;
        let handle = self.acquire_thread(name, ip).await;
        if handle.is_err() {
            self.release_ip(ip, name);
        }
        handle
    }

    async fn acquire_thread(
        self: &Arc<Self>,
        name: &str,
        ip: IpAddr,
    ) -> Result<RepoHandle, Refusal> {
        loop {
            let mut done = match self.try_acquire(name, ip)? {
                Ok(handle) => return Ok(handle),
                Err(done) => done,
            };
            while !*done.borrow_and_update() {
                if done.changed().await.is_err() {
                    break;
                }
            }
        }
    }

    /// A handle, or the closing thread to wait for.
    #[allow(clippy::type_complexity)]
    fn try_acquire(
        self: &Arc<Self>,
        name: &str,
        ip: IpAddr,
    ) -> Result<Result<RepoHandle, watch::Receiver<bool>>, Refusal> {
        let mut entries = self.lock();
        match entries.get_mut(name) {
            Some(Entry::Open { tx, users, gen, .. }) => {
                *users += 1;
                return Ok(Ok(self.handle(name, *gen, tx.clone(), ip)));
            }
            Some(Entry::Closing { done, .. }) => return Ok(Err(done.clone())),
            Some(Entry::Failed { until, why }) if Instant::now() < *until => {
                let detail = format!("repository {name} cannot be opened ({why}); try again later");
                return Err(Refusal::unavailable(detail));
            }
            _ => {}
        }
        self.make_room(&mut entries)?;
        self.spawn(&mut entries, name, ip).map(Ok)
    }

    fn handle(self: &Arc<Self>, name: &str, gen: u64, tx: Sender<Cmd>, ip: IpAddr) -> RepoHandle {
        RepoHandle {
            registry: self.clone(),
            name: name.to_string(),
            gen,
            tx,
            ip,
        }
    }

    /// Below `--max-repos` open, or close the least recently used idle one, or refuse.
    fn make_room(&self, entries: &mut HashMap<String, Entry>) -> Result<(), Refusal> {
        let open = entries
            .values()
            .filter(|e| matches!(e, Entry::Open { .. }))
            .count();
        if open < self.cfg.max_repos {
            return Ok(());
        }
        let lru = entries
            .iter()
            .filter_map(|(n, e)| match e {
                Entry::Open {
                    users: 0,
                    last_used,
                    ..
                } => Some((*last_used, n.clone())),
                _ => None,
            })
            .min();
        let Some((_, victim)) = lru else {
            let detail = format!(
                "{} repositories are open and in use (--max-repos)",
                self.cfg.max_repos
            );
            return Err(Refusal::limit("open repositories", detail));
        };
        close_entry(entries, &victim, "evicted");
        Ok(())
    }

    fn spawn(
        self: &Arc<Self>,
        entries: &mut HashMap<String, Entry>,
        name: &str,
        ip: IpAddr,
    ) -> Result<RepoHandle, Refusal> {
        let gen = self.next_gen.fetch_add(1, Relaxed);
        let (tx, rx) = channel();
        let (done_tx, done) = watch::channel(false);
        let guard = ExitGuard {
            registry: self.clone(),
            name: name.to_string(),
            gen,
            exit: None,
            done: done_tx,
        };
        let wakeup = Arc::new(Wakeup::default());
        let setup = Setup {
            name: name.to_string(),
            cfg: self.cfg.clone(),
            metrics: self.metrics.clone(),
            backend: self.backend.clone(),
            wakeup: wakeup.clone(),
            waits: self.waits.clone(),
        };
        let n = name.to_string();
        std::thread::Builder::new()
            .name(format!("repo-{name}"))
            .spawn(move || {
                let mut guard = guard;
                let exit = repo_thread::run(&setup, &rx);
                let why = match &exit {
                    Exit::Failed(why) => Some(why.clone()),
                    _ => None,
                };
                guard.exit = Some(exit);
                drop(guard);
                if let Some(why) = why {
                    repo_thread::refuse_rest(
                        &rx,
                        &format!("repository {n} cannot be opened ({why}); try again later"),
                    );
                }
            })
            .map_err(|e| Refusal::unavailable(format!("cannot start a repository thread: {e}")))?;
        self.metrics.repositories_open.fetch_add(1, Relaxed);
        let entry = Entry::Open {
            tx: tx.clone(),
            users: 1,
            last_used: Instant::now(),
            gen,
            done,
            wakeup,
        };
        entries.insert(name.to_string(), entry);
        Ok(self.handle(name, gen, tx, ip))
    }

    fn release(&self, name: &str, gen: u64) {
        if let Some(Entry::Open {
            users,
            last_used,
            gen: g,
            ..
        }) = self.lock().get_mut(name)
        {
            if *g == gen {
                *users = users.saturating_sub(1);
                *last_used = Instant::now();
            }
        }
    }

    /// A thread ended: forget it (a failure is remembered until the retry time).
    fn exited(&self, name: &str, gen: u64, exit: &Exit) {
        self.metrics.repositories_open.fetch_sub(1, Relaxed);
        let mut entries = self.lock();
        let ours = match entries.get(name) {
            Some(Entry::Open { gen: g, .. }) | Some(Entry::Closing { gen: g, .. }) => *g == gen,
            _ => false,
        };
        match exit {
            Exit::Failed(why) => {
                self.metrics.repository_failures.fetch_add(1, Relaxed);
                log::event("repo_unavailable", &[("repo", &name), ("error", why)]);
                let until = Instant::now() + self.cfg.repo_retry;
                if ours {
                    entries.insert(
                        name.to_string(),
                        Entry::Failed {
                            until,
                            why: why.clone(),
                        },
                    );
                }
            }
            Exit::Panicked | Exit::Closed => {
                if ours {
                    entries.remove(name);
                }
            }
        }
    }

    /// Another node stored repository `name` up to `head`: if it is open here, its thread
    /// takes the new commits in and relays them.
    pub fn notify(&self, name: &str, head: u64) {
        if let Some(Entry::Open { tx, wakeup, .. }) = self.lock().get(name) {
            if wakeup.notice(head) {
                let _ = tx.send(Cmd::Refresh);
            }
        }
    }

    /// Notices may have been missed (the listener reconnected): every open repository looks.
    pub fn notify_all(&self) {
        for entry in self.lock().values() {
            if let Entry::Open { tx, wakeup, .. } = entry {
                if wakeup.notice(u64::MAX) {
                    let _ = tx.send(Cmd::Refresh);
                }
            }
        }
    }

    /// Repositories whose last look at the store failed look again.
    pub fn retry_stale(&self) {
        for entry in self.lock().values() {
            if let Entry::Open { tx, wakeup, .. } = entry {
                if wakeup.take_stale() && wakeup.notice(u64::MAX) {
                    let _ = tx.send(Cmd::Refresh);
                }
            }
        }
    }

    /// Close the repositories no connection used for `--repo-idle-ms`.
    pub fn close_idle(&self) {
        let mut entries = self.lock();
        let idle: Vec<String> = entries
            .iter()
            .filter(|(_, e)| {
                matches!(e, Entry::Open { users: 0, last_used, .. }
                    if last_used.elapsed() >= self.cfg.repo_idle)
            })
            .map(|(n, _)| n.clone())
            .collect();
        for name in idle {
            close_entry(&mut entries, &name, "idle");
        }
    }

    /// Close every repository (snapshots written) and wait for their threads, at most `limit`.
    pub async fn close_all(&self, limit: Duration) {
        let waits: Vec<watch::Receiver<bool>> = {
            let mut entries = self.lock();
            let names: Vec<String> = entries.keys().cloned().collect();
            for name in &names {
                close_entry(&mut entries, name, "shutdown");
            }
            entries
                .values()
                .filter_map(|e| match e {
                    Entry::Closing { done, .. } => Some(done.clone()),
                    _ => None,
                })
                .collect()
        };
        let all = async {
            for mut done in waits {
                while !*done.borrow_and_update() {
                    if done.changed().await.is_err() {
                        break;
                    }
                }
            }
        };
        let _ = tokio::time::timeout(limit, all).await;
    }
}

/// Tell an open repository's thread to close; the entry waits for it.
fn close_entry(entries: &mut HashMap<String, Entry>, name: &str, why: &str) {
    if let Some(Entry::Open { tx, gen, done, .. }) = entries.get(name) {
        let _ = tx.send(Cmd::Close);
        log::event("repo_closing", &[("repo", &name), ("why", &why)]);
        let closing = Entry::Closing {
            gen: *gen,
            done: done.clone(),
        };
        entries.insert(name.to_string(), closing);
    }
}
