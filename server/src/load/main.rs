//! `ibexdb-load`: a native load generator for `ibexdb-server` (docs/design.md §12.3).
//!
//! It starts the server binary that sits beside it (or uses `--url` and `--pid`), opens
//! `--connections` WebSockets spread over `--repos` repositories, of which `--writers` push
//! signed commits made with the core (a `Repo` over `MemStorage` with its own `Identity`,
//! `--batch` commits sealed under one seal per push, made before the clock starts) and the rest
//! read; it measures commits stored per second (acknowledged), commits relayed per second
//! (delivered to readers), push→relay latency, and the server's resident memory. The
//! `slow-readers` scenario adds connections that subscribe and never read. Prints a table and
//! writes JSON (`--json`, default `bench-results/sync-load.json`).
//!
//! | file        | what                                               |
//! |-------------|----------------------------------------------------|
//! | `main.rs`   | flags, scenarios, the report                       |
//! | `gen.rs`    | signed pushes made ahead with the core             |
//! | `clients.rs`| writer, reader and slow-reader connections         |
//! | `target.rs` | the server process: start, RSS, metrics            |

mod clients;
mod gen;
mod target;

use std::time::Duration;

/// One scenario's settings.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub name: &'static str,
    pub connections: usize,
    pub writers: usize,
    pub repos: usize,
    pub batch: usize,
    pub pad: usize,
    pub slow: usize,
    pub seconds: f64,
    /// Commits per second pushed in all (0: as fast as acknowledged).
    pub rate: usize,
    /// Extra flags for the server started for this scenario.
    pub server_args: Vec<String>,
}

/// What one scenario measured.
#[derive(Debug, Default)]
pub struct Outcome {
    pub connections_held: usize,
    pub stored: u64,
    pub stored_per_s: f64,
    pub relayed: u64,
    pub relayed_per_s: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub ack_p50_ms: f64,
    pub rss_peak_mib: f64,
    pub rss_end_mib: f64,
    pub queue_drops: f64,
    pub refused_pushes: u64,
    pub seconds: f64,
}

struct Flags {
    base: Scenario,
    slow: usize,
    slow_pad: usize,
    slow_repos: usize,
    slow_queue: usize,
    slow_rate: usize,
    slow_seconds: f64,
    scenarios: Vec<String>,
    json: String,
    url: Option<String>,
    pid: Option<u32>,
    server_args: Vec<String>,
}

const HELP: &str = "ibexdb-load: load generator for ibexdb-server

usage: ibexdb-load [FLAGS]
  --connections N    WebSocket connections held (writers + readers) [1000]
  --writers N        connections that push [20]
  --repos N          repositories [10]
  --batch N          commits per push, sealed under one seal [100]
  --pad N            filler bytes per commit [64]
  --seconds S        measuring time per scenario [10]
  --slow N           slow readers (subscribe, never read) in the slow-readers scenario [50]
  --rate N           commits per second pushed in all, 0 = as fast as acknowledged [0]
  --slow-pad N       filler bytes per commit in the slow-readers scenario [1000]
  --slow-rate N      commits per second pushed in the slow-readers scenario [2000]
  --slow-seconds S   measuring time of the slow-readers scenario [15]
  --slow-repos N     repositories in the slow-readers scenario [10]
  --slow-queue N     the server's --queue-bytes in the slow-readers scenario [2200000]
  --scenarios LIST   comma-separated: baseline,slow-readers [both]
  --json FILE        where to write the results [bench-results/sync-load.json]
  --url URL --pid P  use a running server instead of starting one
  --server-arg ARG   extra flag for the started server (repeatable)
";

fn parse() -> Result<Flags, String> {
    let mut f = Flags {
        base: Scenario {
            name: "baseline",
            connections: 1000,
            writers: 20,
            repos: 10,
            batch: 100,
            pad: 64,
            slow: 0,
            seconds: 10.0,
            rate: 0,
            server_args: Vec::new(),
        },
        slow: 50,
        slow_pad: 1000,
        slow_repos: 10,
        slow_rate: 2000,
        slow_seconds: 15.0,
        slow_queue: 2_200_000,
        scenarios: vec!["baseline".into(), "slow-readers".into()],
        json: "bench-results/sync-load.json".into(),
        url: None,
        pid: None,
        server_args: Vec::new(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--help" {
            print!("{HELP}");
            std::process::exit(0);
        }
        let v = args.next().ok_or(format!("{a} needs a value"))?;
        let n = || {
            v.parse::<usize>()
                .map_err(|_| format!("{a}: bad number {v:?}"))
        };
        match a.as_str() {
            "--connections" => f.base.connections = n()?,
            "--writers" => f.base.writers = n()?,
            "--repos" => f.base.repos = n()?,
            "--batch" => f.base.batch = n()?,
            "--pad" => f.base.pad = n()?,
            "--seconds" => f.base.seconds = v.parse().map_err(|_| format!("bad {v}"))?,
            "--slow" => f.slow = n()?,
            "--slow-pad" => f.slow_pad = n()?,
            "--slow-repos" => f.slow_repos = n()?,
            "--rate" => f.base.rate = n()?,
            "--slow-rate" => f.slow_rate = n()?,
            "--slow-seconds" => f.slow_seconds = v.parse().map_err(|_| format!("bad {v}"))?,
            "--slow-queue" => f.slow_queue = n()?,
            "--scenarios" => f.scenarios = v.split(',').map(String::from).collect(),
            "--json" => f.json = v,
            "--url" => f.url = Some(v),
            "--pid" => f.pid = Some(n()? as u32),
            "--server-arg" => f.server_args.push(v),
            _ => return Err(format!("unknown flag {a} (see --help)")),
        }
    }
    if f.base.writers == 0 || f.base.repos == 0 || f.base.writers > f.base.connections {
        return Err("need 1 <= --writers <= --connections and --repos >= 1".into());
    }
    Ok(f)
}

fn scenarios(f: &Flags) -> Vec<Scenario> {
    let mut out = Vec::new();
    for name in &f.scenarios {
        match name.as_str() {
            "baseline" => out.push(f.base.clone()),
            "slow-readers" => out.push(Scenario {
                name: "slow-readers",
                slow: f.slow,
                pad: f.slow_pad,
                repos: f.slow_repos,
                rate: f.slow_rate,
                seconds: f.slow_seconds,
                server_args: vec!["--queue-bytes".into(), f.slow_queue.to_string()],
                ..f.base.clone()
            }),
            other => eprintln!("unknown scenario {other:?}, skipped"),
        }
    }
    out
}

fn main() {
    let flags = parse().unwrap_or_else(|e| {
        eprintln!("ibexdb-load: {e}");
        std::process::exit(2)
    });
    target::raise_fd_limit();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let mut results = Vec::new();
    for s in scenarios(&flags) {
        eprintln!("--- scenario {}: {s:?}", s.name);
        let server = match (&flags.url, flags.pid) {
            (Some(url), Some(pid)) => target::Target::existing(url, pid),
            _ => target::Target::start(
                &s,
                &[s.server_args.clone(), flags.server_args.clone()].concat(),
            ),
        };
        let outcome = rt.block_on(clients::run(&s, &server));
        drop(server);
        results.push((s, outcome));
        std::thread::sleep(Duration::from_millis(200));
    }
    print_table(&results);
    write_json(&flags.json, &results);
}

fn print_table(results: &[(Scenario, Outcome)]) {
    println!(
        "\n{:<13} {:>6} {:>5} {:>5} {:>10} {:>11} {:>8} {:>8} {:>8} {:>9} {:>6}",
        "scenario",
        "conns",
        "slow",
        "repos",
        "stored/s",
        "relayed/s",
        "p50 ms",
        "p95 ms",
        "ack p50",
        "RSS MiB",
        "drops"
    );
    for (s, o) in results {
        println!(
            "{:<13} {:>6} {:>5} {:>5} {:>10.0} {:>11.0} {:>8.1} {:>8.1} {:>8.1} {:>9.1} {:>6}",
            s.name,
            o.connections_held,
            s.slow,
            s.repos,
            o.stored_per_s,
            o.relayed_per_s,
            o.p50_ms,
            o.p95_ms,
            o.ack_p50_ms,
            o.rss_peak_mib,
            o.queue_drops
        );
    }
}

fn write_json(path: &str, results: &[(Scenario, Outcome)]) {
    let rows: Vec<serde_json::Value> = results
        .iter()
        .map(|(s, o)| {
            serde_json::json!({
                "scenario": s.name,
                "settings": {
                    "connections": s.connections, "writers": s.writers, "repos": s.repos,
                    "batch": s.batch, "pad_bytes": s.pad, "slow_readers": s.slow, "seconds": s.seconds, "rate": s.rate,
                    "server_args": s.server_args,
                },
                "connections_held": o.connections_held,
                "commits_stored": o.stored,
                "commits_stored_per_s": o.stored_per_s,
                "commits_relayed": o.relayed,
                "commits_relayed_per_s": o.relayed_per_s,
                "push_to_relay_ms": { "p50": o.p50_ms, "p95": o.p95_ms },
                "push_to_ack_p50_ms": o.ack_p50_ms,
                "server_rss_mib": { "peak": o.rss_peak_mib, "end": o.rss_end_mib },
                "queue_drops": o.queue_drops,
                "refused_pushes": o.refused_pushes,
                "elapsed_s": o.seconds,
            })
        })
        .collect();
    let doc = serde_json::json!({ "tool": "ibexdb-load", "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0), "results": rows });
    if let Some(dir) = std::path::Path::new(path).parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    match std::fs::write(path, serde_json::to_string_pretty(&doc).unwrap() + "\n") {
        Ok(()) => println!("\nwrote {path}"),
        Err(e) => eprintln!("cannot write {path}: {e}"),
    }
}
