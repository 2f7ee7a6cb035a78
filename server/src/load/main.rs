//! `ibexdb-load`: a native load generator for `ibexdb-server` (docs/design.md §12.4, §12.5).
//!
//! It starts the server binary that sits beside it (or uses `--url` and `--pid`): one node on
//! the file store, or with `--store postgres://…` one run per count in `--nodes` (e.g.
//! `1,2,3`) of that many nodes on one PostgreSQL, connections spread over them. It opens
//! `--connections` WebSockets spread over `--repos` repositories, of which `--writers` push
//! signed commits made with the core (a `Repo` over `MemStorage` with its own `Identity`,
//! `--batch` commits sealed under one seal per push, made before the clock starts) and the rest
//! read; it measures commits stored per second (acknowledged), commits relayed per second
//! (delivered to readers), push→relay latency (apart for a reader on the pusher's node and on
//! another node), and the servers' resident memory. The
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
#[path = "../fd_limit.rs"]
mod fd_limit;
mod gen;
mod target;

use std::time::Duration;

/// One scenario's settings.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub name: &'static str,
    /// Names this run's repositories apart from other runs' (one PostgreSQL serves them all).
    pub tag: String,
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
    pub nodes: usize,
    pub connections_held: usize,
    pub stored: u64,
    pub stored_per_s: f64,
    pub relayed: u64,
    pub relayed_per_s: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    /// Push → relay to a reader of another node than the pusher's (0: one node).
    pub cross_p50_ms: f64,
    pub cross_p95_ms: f64,
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
    store: Option<String>,
    nodes: Vec<usize>,
    paced_rate: usize,
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
  --scenarios LIST   comma-separated: baseline,slow-readers,paced [baseline,slow-readers]
                     (paced: at most 100 connections and 10 writers, --paced-rate commits/s:
                     latency below saturation)
  --paced-rate N     commits per second pushed in the paced scenario [2000]
  --json FILE        where to write the results [bench-results/sync-load.json]
  --url URL --pid P  use a running server instead of starting one
  --server-arg ARG   extra flag for the started server (repeatable)
  --store URL        start the nodes on PostgreSQL at URL (postgres://…) instead of files
  --nodes LIST       with --store: node counts to run each scenario with, e.g. 1,2,3 [1]
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
            tag: String::new(),
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
        store: None,
        nodes: vec![1],
        paced_rate: 2000,
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
            "--store" => f.store = Some(v),
            "--paced-rate" => f.paced_rate = n()?,
            "--nodes" => {
                f.nodes = v
                    .split(',')
                    .map(|n| n.parse().map_err(|_| format!("--nodes: bad count {n:?}")))
                    .collect::<Result<_, _>>()?
            }
            _ => return Err(format!("unknown flag {a} (see --help)")),
        }
    }
    if f.base.writers == 0 || f.base.repos == 0 || f.base.writers > f.base.connections {
        return Err("need 1 <= --writers <= --connections and --repos >= 1".into());
    }
    if f.nodes
        .iter()
        .any(|&n| n == 0 || (n > 1 && f.store.is_none()))
    {
        return Err("--nodes counts must be >= 1, and above 1 only with --store".into());
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
            "paced" => out.push(Scenario {
                name: "paced",
                connections: f.base.connections.min(100),
                writers: f.base.writers.min(10),
                rate: f.paced_rate,
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
    fd_limit::raise_fd_limit();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let mut results = Vec::new();
    for base in scenarios(&flags) {
        for &nodes in &flags.nodes {
            let s = Scenario {
                tag: format!("{}-{}-{nodes}", std::process::id(), base.name),
                ..base.clone()
            };
            eprintln!("--- scenario {} on {nodes} node(s): {s:?}", s.name);
            let cluster = start(&flags, &s, nodes);
            let outcome = rt.block_on(clients::run(&s, &cluster));
            drop(cluster);
            results.push((s, outcome));
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    print_table(&results);
    write_json(&flags.json, flags.store.is_some(), &results);
}

/// The nodes for one run: an existing server, or `nodes` started on the store.
fn start(flags: &Flags, s: &Scenario, nodes: usize) -> target::Cluster {
    if let (Some(url), Some(pid)) = (&flags.url, flags.pid) {
        return target::Cluster {
            nodes: vec![target::Target::existing(url, pid)],
        };
    }
    let args = [s.server_args.clone(), flags.server_args.clone()].concat();
    let nodes = (0..nodes)
        .map(|i| target::Target::start(s, &args, flags.store.as_deref(), i))
        .collect();
    target::Cluster { nodes }
}

fn print_table(results: &[(Scenario, Outcome)]) {
    println!(
        "\n{:<13} {:>5} {:>6} {:>5} {:>5} {:>10} {:>11} {:>8} {:>8} {:>9} {:>9} {:>8} {:>9} {:>6}",
        "scenario",
        "nodes",
        "conns",
        "slow",
        "repos",
        "stored/s",
        "relayed/s",
        "p50 ms",
        "p95 ms",
        "x-p50 ms",
        "x-p95 ms",
        "ack p50",
        "RSS MiB",
        "drops"
    );
    for (s, o) in results {
        println!(
            "{:<13} {:>5} {:>6} {:>5} {:>5} {:>10.0} {:>11.0} {:>8.1} {:>8.1} {:>9.1} {:>9.1} {:>8.1} {:>9.1} {:>6}",
            s.name,
            o.nodes,
            o.connections_held,
            s.slow,
            s.repos,
            o.stored_per_s,
            o.relayed_per_s,
            o.p50_ms,
            o.p95_ms,
            o.cross_p50_ms,
            o.cross_p95_ms,
            o.ack_p50_ms,
            o.rss_peak_mib,
            o.queue_drops
        );
    }
}

fn write_json(path: &str, store: bool, results: &[(Scenario, Outcome)]) {
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
                "nodes": o.nodes,
                "push_to_relay_ms": { "p50": o.p50_ms, "p95": o.p95_ms },
                "push_to_relay_other_node_ms": { "p50": o.cross_p50_ms, "p95": o.cross_p95_ms },
                "push_to_ack_p50_ms": o.ack_p50_ms,
                "server_rss_mib": { "peak": o.rss_peak_mib, "end": o.rss_end_mib },
                "queue_drops": o.queue_drops,
                "refused_pushes": o.refused_pushes,
                "elapsed_s": o.seconds,
            })
        })
        .collect();
    let doc = serde_json::json!({ "tool": "ibexdb-load", "store": if store { "postgres" } else { "files" }, "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0), "results": rows });
    if let Some(dir) = std::path::Path::new(path).parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    match std::fs::write(path, serde_json::to_string_pretty(&doc).unwrap() + "\n") {
        Ok(()) => println!("\nwrote {path}"),
        Err(e) => eprintln!("cannot write {path}: {e}"),
    }
}
