//! Counters, gauges and the fsync histogram, rendered in the Prometheus text format for
//! `GET /metrics`. Every name starts with `ibexdb_`.

use ibexdb::ErrorCode;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds (seconds) of the latency histograms' buckets.
const FSYNC_BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 5.0,
];

/// Error codes in the order of their numbers (for the per-code counters).
const CODES: [ErrorCode; 13] = [
    ErrorCode::Other,
    ErrorCode::Protocol,
    ErrorCode::Signature,
    ErrorCode::Decode,
    ErrorCode::ClockSkew,
    ErrorCode::TooLarge,
    ErrorCode::Storage,
    ErrorCode::InvalidRepository,
    ErrorCode::Permission,
    ErrorCode::Auth,
    ErrorCode::Limit,
    ErrorCode::Unavailable,
    ErrorCode::Schema,
];

#[derive(Default)]
pub struct Histogram {
    counts: [AtomicU64; FSYNC_BUCKETS.len()],
    count: AtomicU64,
    sum_ns: AtomicU64,
}

impl Histogram {
    pub fn observe(&self, d: Duration) {
        let s = d.as_secs_f64();
        for (i, b) in FSYNC_BUCKETS.iter().enumerate() {
            if s <= *b {
                self.counts[i].fetch_add(1, Relaxed);
            }
        }
        self.count.fetch_add(1, Relaxed);
        self.sum_ns.fetch_add(d.as_nanos() as u64, Relaxed);
    }

    fn render(&self, out: &mut String, name: &str, help: &str) {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        for (i, b) in FSYNC_BUCKETS.iter().enumerate() {
            let n = self.counts[i].load(Relaxed);
            let _ = writeln!(out, "{name}_bucket{{le=\"{b}\"}} {n}");
        }
        let count = self.count.load(Relaxed);
        let sum = self.sum_ns.load(Relaxed) as f64 / 1e9;
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {count}");
        let _ = writeln!(out, "{name}_sum {sum}\n{name}_count {count}");
    }
}

/// The server's metrics (one instance, shared).
#[derive(Default)]
pub struct Metrics {
    pub connections: AtomicI64,
    pub connections_total: AtomicU64,
    pub repositories_open: AtomicI64,
    pub pushes: AtomicU64,
    pub commits_stored: AtomicU64,
    commits_refused: [AtomicU64; CODES.len()],
    refusals: Mutex<BTreeMap<String, u64>>,
    pub queue_drops: AtomicU64,
    pub snapshots: AtomicU64,
    pub repository_failures: AtomicU64,
    pub fsync: Histogram,
    /// PostgreSQL store: push transactions (begin to commit), failed ones, notices heard.
    pub pg_push: Histogram,
    pub pg_errors: AtomicU64,
    pub pg_notices: AtomicU64,
}

impl Metrics {
    /// Commits of a refused push, by the refusal's error code.
    pub fn commits_refused(&self, code: ErrorCode, n: usize) {
        self.commits_refused[code as usize].fetch_add(n as u64, Relaxed);
    }

    /// One refusal sent to a client, by what was refused (the limit's name or the error).
    pub fn refusal(&self, what: &str) {
        let mut m = self.refusals.lock().unwrap_or_else(|e| e.into_inner());
        *m.entry(what.to_string()).or_default() += 1;
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let gauge = |s: &mut String, name: &str, help: &str, v: i64| {
            let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
        };
        let counter = |s: &mut String, name: &str, help: &str, v: u64| {
            let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}");
        };
        gauge(
            &mut s,
            "ibexdb_connections",
            "WebSocket connections held now.",
            self.connections.load(Relaxed),
        );
        counter(
            &mut s,
            "ibexdb_connections_total",
            "Connections accepted.",
            self.connections_total.load(Relaxed),
        );
        gauge(
            &mut s,
            "ibexdb_repositories_open",
            "Repositories open now.",
            self.repositories_open.load(Relaxed),
        );
        counter(
            &mut s,
            "ibexdb_pushes_total",
            "Push messages processed.",
            self.pushes.load(Relaxed),
        );
        counter(
            &mut s,
            "ibexdb_commits_stored_total",
            "Commits verified and stored durably.",
            self.commits_stored.load(Relaxed),
        );
        counter(
            &mut s,
            "ibexdb_queue_drops_total",
            "Connections dropped because their outbound queue was full.",
            self.queue_drops.load(Relaxed),
        );
        counter(
            &mut s,
            "ibexdb_log_suppressed_total",
            "Log lines about a client left out past its address's log rate.",
            crate::log_limit::SUPPRESSED.load(Relaxed),
        );
        counter(
            &mut s,
            "ibexdb_snapshots_total",
            "Snapshots written.",
            self.snapshots.load(Relaxed),
        );
        counter(
            &mut s,
            "ibexdb_repository_failures_total",
            "Repositories that failed to open, failed storage or panicked.",
            self.repository_failures.load(Relaxed),
        );
        counter(
            &mut s,
            "ibexdb_pg_errors_total",
            "PostgreSQL store: pushes that failed for the database (not refusals).",
            self.pg_errors.load(Relaxed),
        );
        counter(
            &mut s,
            "ibexdb_pg_notices_total",
            "PostgreSQL store: notices of commits stored by any node.",
            self.pg_notices.load(Relaxed),
        );
        self.render_refused(&mut s);
        self.fsync.render(
            &mut s,
            "ibexdb_fsync_seconds",
            "Latency of fsync (sync_data) on repository files.",
        );
        self.pg_push.render(
            &mut s,
            "ibexdb_pg_push_seconds",
            "PostgreSQL store: latency of a push transaction, lock to commit.",
        );
        s
    }

    fn render_refused(&self, s: &mut String) {
        let name = "ibexdb_commits_refused_total";
        let _ = writeln!(
            s,
            "# HELP {name} Commits of refused pushes, by error code.\n# TYPE {name} counter"
        );
        for (i, code) in CODES.iter().enumerate() {
            let v = self.commits_refused[i].load(Relaxed);
            let _ = writeln!(
                s,
                "{name}{{code=\"{}\",reason=\"{code:?}\"}} {v}",
                *code as u8
            );
        }
        let name = "ibexdb_refusals_total";
        let _ = writeln!(s, "# HELP {name} Error messages sent to clients, by what was refused.\n# TYPE {name} counter");
        let m = self.refusals.lock().unwrap_or_else(|e| e.into_inner());
        for (what, v) in m.iter() {
            let what = what.replace(['"', '\\', '\n'], "_");
            let _ = writeln!(s, "{name}{{what=\"{what}\"}} {v}");
        }
    }
}
