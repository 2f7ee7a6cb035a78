//! Core benchmark (native, release): `cargo bench --bench core`. Prints a table and writes
//! target/bench-core.json.
//!
//! Environment:
//! - `CORE_BENCH_SIZES`: repository sizes for the open / size / memory suite (default
//!   `10000,100000,1000000`; e.g. `10000,100000` for a quick run).
//! - `CORE_BENCH_VERIFY_COMMITS`: commits in the `verify()` suite (default 50000).
//! - `CORE_BENCH_SKIP`: comma-separated suites to skip (`latency,bulk,open,verify,crypto`).
//!
//! Items have the DESIGN.md shape `{title: "Item i", count: i, tags: {"tag i", "category i%5"}}`
//! under keys `items/item{i:08}`. Repositories are signed (P-384); commits are sealed off the
//! write path, as the engine does. File rows use `FileStorage` in a temporary directory on the
//! real disk (`flush` = `fdatasync`); open rows read files that are in the page cache.
//! "open N from snapshot|log" is timed in this process, on a heap that earlier opens already
//! grew (repeated opens, like a long-lived worker); "..., fresh process" re-runs this binary
//! (`CORE_BENCH_CHILD_OPEN`) and times the first open there, page faults of a new heap included
//! (what a page load sees).
//! Micro-operations are timed as a loop of K and divided; latencies report p50/p95 (nearest
//! rank) over individually timed samples; bigger operations report the median of several runs.
//! Memory is counted by a counting global allocator (bytes requested from the allocator, live
//! after the operation; malloc's own per-block overhead is not included).

use ibexdb::CommitId;
use ibexdb::Durability;
use ibexdb::FileStorage;
use ibexdb::{MemStorage, Repo, RepoOptions, Storage, Txn};
use serde_json::json;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

mod alloc;
mod items;
mod report;
mod timing;

use alloc::*;
use items::*;
use report::*;
use timing::*;

// ----- suites -------------------------------------------------------------------------------

fn suite_latency(rep: &mut Report) {
    eprintln!("latency: single-item commit (+ flush)");
    const N: usize = 300;
    let mut i = 0u64;
    // FileStorage, real fsync.
    let tmp = Tmp::new("latency");
    let mut repo = Repo::open(tmp.log(), None, opts()).unwrap();
    for _ in 0..20 {
        i += 1;
        let mut t = Txn::new();
        t.put(&key(i), item(i)).unwrap();
        repo.commit_with(t, Durability::Flush).unwrap();
    }
    let mut v = Vec::new();
    for _ in 0..N {
        let mut t = Txn::new();
        i += 1;
        t.put(&key(i), item(i)).unwrap();
        let s = Instant::now();
        repo.commit_with(t, Durability::Flush).unwrap();
        v.push(s.elapsed());
    }
    rep.time(
        "latency",
        "commit 1 item + flush (FileStorage, fdatasync)",
        &stats(v),
        "µs",
    );
    // The same, relaxed (no flush): the in-memory part.
    let mut v = Vec::new();
    for _ in 0..N {
        let mut t = Txn::new();
        i += 1;
        t.put(&key(i), item(i)).unwrap();
        let s = Instant::now();
        repo.commit(t).unwrap();
        v.push(s.elapsed());
    }
    rep.time(
        "latency",
        "commit 1 item, relaxed (FileStorage, no flush)",
        &stats(v),
        "µs",
    );
    let s = Instant::now();
    repo.flush().unwrap();
    rep.value(
        "latency",
        format!("flush after {N} relaxed commits"),
        us(s.elapsed()),
        "µs",
    );
    // Sealing those commits (one signature).
    let s = Instant::now();
    let seals = repo.seal().unwrap();
    repo.flush().unwrap();
    rep.value(
        "latency",
        format!(
            "seal + flush ({} unsealed commits, {} seal)",
            2 * N + 20,
            seals.len()
        ),
        us(s.elapsed()),
        "µs",
    );
    drop(repo);
    drop(tmp);

    // MemStorage.
    let mut repo = Repo::open(MemStorage::new(), None, opts()).unwrap();
    for _ in 0..20 {
        i += 1;
        let mut t = Txn::new();
        t.put(&key(i), item(i)).unwrap();
        repo.commit_with(t, Durability::Flush).unwrap();
    }
    let mut v = Vec::new();
    for _ in 0..N * 10 {
        let mut t = Txn::new();
        i += 1;
        t.put(&key(i), item(i)).unwrap();
        let s = Instant::now();
        repo.commit_with(t, Durability::Flush).unwrap();
        v.push(s.elapsed());
    }
    rep.time(
        "latency",
        "commit 1 item + flush (MemStorage)",
        &stats(v),
        "µs",
    );
}

fn suite_bulk(rep: &mut Report) {
    eprintln!("bulk commit");
    // 100 items, one transaction.
    let s = sample(
        60,
        || {
            let repo = Repo::open(MemStorage::new(), None, opts()).unwrap();
            (repo, prebuilt(0, 100))
        },
        |(mut repo, items)| {
            load(&mut repo, items, 100, false);
            repo
        },
    );
    rep.time(
        "bulk",
        "bulk commit 100 (1 txn), MemStorage, no flush",
        &s,
        "µs",
    );
    let s = sample(
        30,
        || {
            let tmp = Tmp::new("bulk100");
            let repo = Repo::open(tmp.log(), None, opts()).unwrap();
            (tmp, repo, prebuilt(0, 100))
        },
        |(tmp, mut repo, items)| {
            load(&mut repo, items, 100, true);
            (tmp, repo)
        },
    );
    rep.time(
        "bulk",
        "bulk commit 100 (1 txn) + flush, FileStorage",
        &s,
        "µs",
    );

    // 10,000 items, transactions of 1,000.
    let s = sample(
        9,
        || {
            let repo = Repo::open(MemStorage::new(), None, opts()).unwrap();
            (repo, prebuilt(0, 10_000))
        },
        |(mut repo, items)| {
            load(&mut repo, items, TXN, false);
            repo
        },
    );
    rep.time(
        "bulk",
        "bulk commit 10,000 (txns of 1,000), no flush",
        &s,
        "ms",
    );
    rep.target(30.0, "< 30 ms");
    let s = sample(
        7,
        || {
            let tmp = Tmp::new("bulk10k");
            let repo = Repo::open(tmp.log(), None, opts()).unwrap();
            (tmp, repo, prebuilt(0, 10_000))
        },
        |(tmp, mut repo, items)| {
            load(&mut repo, items, TXN, true);
            (tmp, repo)
        },
    );
    rep.time(
        "bulk",
        "bulk commit 10,000 (txns of 1,000) + flush each, File",
        &s,
        "ms",
    );
    let s = sample(
        7,
        || {
            let tmp = Tmp::new("bulk10k1");
            let repo = Repo::open(tmp.log(), None, opts()).unwrap();
            (tmp, repo, prebuilt(0, 10_000))
        },
        |(tmp, mut repo, items)| {
            load(&mut repo, items, 10_000, true);
            (tmp, repo)
        },
    );
    rep.time("bulk", "bulk commit 10,000 (1 txn) + flush, File", &s, "ms");
    // Breakdown of the no-flush path: Txn building alone.
    let s = sample(
        9,
        || prebuilt(0, 10_000),
        |items| {
            let mut txns = Vec::new();
            let mut it = items.into_iter().peekable();
            while it.peek().is_some() {
                let mut t = Txn::new();
                for (k, m) in it.by_ref().take(TXN) {
                    t.put(&k, m).unwrap();
                }
                txns.push(t);
            }
            txns
        },
    );
    rep.time(
        "bulk",
        "  of which Txn::put x 10,000 (building the txns)",
        &s,
        "ms",
    );
}

fn get_loop<S: Storage>(repo: &mut Repo<S>, n: u64) -> (f64, f64) {
    // Keys in a pseudo-random order (a full-period LCG over n), precomputed.
    let m = n.min(100_000);
    let mut keys = Vec::with_capacity(m as usize);
    let mut x = 12345u64;
    for _ in 0..m {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        keys.push(key((x >> 17) % n));
    }
    let iters = 1_000_000usize;
    let mut best = f64::MAX;
    let mut runs = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let mut hit = 0usize;
        for j in 0..iters {
            let k = &keys[j % keys.len()];
            if repo.get(black_box(k)).unwrap().is_some() {
                hit += 1;
            }
        }
        let per = t.elapsed().as_secs_f64() * 1e9 / iters as f64;
        assert_eq!(hit, iters);
        best = best.min(per);
        runs.push(per);
    }
    runs.sort_by(f64::total_cmp);
    (runs[runs.len() / 2], best)
}

/// Gets of random keys right after an open from a snapshot, each timed alone: most of them
/// find their key in a block still in the file, which they read and decode (p50, p95 in µs).
fn cold_get_loop<S: Storage>(mut open: impl FnMut() -> Repo<S>, n: u64) -> (f64, f64) {
    let mut times = Vec::new();
    let mut x = 777u64;
    for _ in 0..5 {
        let mut repo = open();
        for _ in 0..200 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let k = key((x >> 17) % n);
            let t = Instant::now();
            assert!(repo.get(black_box(&k)).unwrap().is_some());
            times.push(t.elapsed());
        }
    }
    let s = stats(times);
    (us(s.p50), us(s.p95))
}

fn suite_open(rep: &mut Report, sizes: &[u64]) {
    for &n in sizes {
        eprintln!("open / size / memory at {n} items");
        let tmp = Tmp::new(&format!("open{n}"));
        // Build: transactions of 1,000, flush each, seal at the end, snapshot.
        let mut repo = Repo::open(tmp.log(), Some(tmp.snap()), opts()).unwrap();
        let mut built = Duration::ZERO;
        for from in (0..n).step_by(100_000) {
            let items = prebuilt(from, (n - from).min(100_000));
            let t = Instant::now();
            load(&mut repo, items, TXN, true);
            built += t.elapsed();
        }
        let t = Instant::now();
        repo.seal().unwrap();
        repo.flush().unwrap();
        let sealed = t.elapsed();
        rep.value(
            "open",
            format!("bulk load {n} (txns of 1,000, flush each) + seal"),
            ms(built + sealed),
            "ms",
        );
        let t = Instant::now();
        repo.write_snapshot().unwrap();
        rep.value(
            "open",
            format!("write_snapshot at {n}"),
            ms(t.elapsed()),
            "ms",
        );
        let log_bytes = repo.log_len();
        let snap_bytes = repo.snapshot_bytes().unwrap();
        drop(repo);
        let json: usize = (0..n).map(item_json_len).sum();
        let per = |b: u64| b as f64 / n as f64;
        rep.value(
            "size",
            format!("raw JSON per item at {n}"),
            json as f64 / n as f64,
            "B",
        );
        rep.value("size", format!("log per item at {n}"), per(log_bytes), "B");
        rep.value(
            "size",
            format!("snapshot per item at {n}"),
            per(snap_bytes),
            "B",
        );
        let ratio = (log_bytes + snap_bytes) as f64 / json as f64;
        rep.value(
            "size",
            format!("(log + snapshot) / raw JSON at {n}"),
            ratio,
            "x",
        );
        rep.target(2.0, "< 2x");
        rep.note(format!(
            "log {:.2}x, snapshot {:.2}x of JSON",
            log_bytes as f64 / json as f64,
            snap_bytes as f64 / json as f64
        ));

        let runs = if n >= 1_000_000 { 3 } else { 7 };
        // Open in a fresh process (what a page load sees: the heap starts empty, so every page
        // the state occupies is faulted in during the open).
        for (from_snap, label) in [(true, "snapshot"), (false, "log")] {
            let mut v = Vec::new();
            for _ in 0..runs.min(5) {
                v.push(child_open(tmp.path(), from_snap, n));
            }
            rep.time(
                "open",
                format!("open {n} from {label}, fresh process"),
                &stats(v),
                "ms",
            );
        }
        for (from_snap, label) in [(true, "snapshot"), (false, "log")] {
            // Files and options are prepared outside the timed part (deriving the key pair
            // is a scalar multiplication).
            let inputs = || (tmp.log(), from_snap.then(|| tmp.snap()), opts());
            let open = |(log, snap, o): (FileStorage, Option<FileStorage>, RepoOptions)| {
                let r = Repo::open(log, snap, o).unwrap();
                assert_eq!(r.open_report().from_snapshot, from_snap);
                r
            };
            // Memory: live bytes held by the opened repository, and the peak during open.
            // (The inputs are made first; the few hundred bytes they hold are not counted.)
            let x = inputs();
            let before = reset_peak();
            let blocks_before = blocks();
            let mut repo = open(x);
            let held_cold = live() - before;
            // Items opened from a snapshot load on first use: count them loaded.
            repo.load_all().unwrap();
            let held = live() - before;
            let held_blocks = blocks() - blocks_before;
            let pk = peak() - before;
            assert_eq!(repo.item_count() as u64, n);
            if from_snap {
                index_memory(rep, &mut repo, n, before);
                let (med, best) = get_loop(&mut repo, n);
                rep.value(
                    "get",
                    format!("get by key at {n} (random keys)"),
                    med / 1000.0,
                    "µs",
                );
                rep.target(1.0, "< 1 µs");
                rep.note(format!("best of 5: {:.0} ns", best));
                let (p50, p95) = cold_get_loop(|| open(inputs()), n);
                rep.value(
                    "get",
                    format!("first gets after an open at {n} (random keys, p50)"),
                    p50,
                    "µs",
                );
                rep.note(format!("p95 {p95:.1} µs: most read and decode their block"));
            }
            drop(repo);
            let s = sample(runs, inputs, open);
            rep.time("open", format!("open {n} from {label}"), &s, "ms");
            if from_snap && n == 100_000 {
                rep.target(50.0, "< 50 ms");
            }
            if from_snap {
                // What an open defers: loading every item (a scan's first cost).
                let s = sample(runs, inputs, |x| {
                    let mut r = open(x);
                    r.load_all().unwrap();
                    r
                });
                rep.time(
                    "open",
                    format!("open {n} from {label} + load every item"),
                    &s,
                    "ms",
                );
            }
            rep.value(
                "memory",
                format!("memory per item after open from {label} at {n}"),
                held as f64 / n as f64,
                "B",
            );
            rep.note(format!(
                "live {:.1} MB in {:.2} allocations per item ({:.1} MB before the items loaded), peak during open + load {:.1} MB",
                held as f64 / 1e6,
                held_blocks as f64 / n as f64,
                held_cold as f64 / 1e6,
                pk as f64 / 1e6
            ));
        }
    }
}

/// Memory once the `count` index is built by a first indexed query on the loaded items (what
/// the browser's "wasm memory after reopen + first indexed query" row holds): live, and the
/// peak during the build (wasm memory keeps its peak). `base`: live bytes before the open.
fn index_memory<S: Storage>(rep: &mut Report, repo: &mut Repo<S>, n: u64, base: usize) {
    let schema = ibexdb::Schema::from_json(COLL, &json!({"indexes": ["count"]})).unwrap();
    repo.define_schema(COLL, schema).unwrap();
    let q = ibexdb::Query::from_json(
        &json!({"collection": COLL, "where": {"count": {"gte": 10, "lt": 20}}}),
    )
    .unwrap();
    let peak_before = peak();
    reset_peak();
    let t = Instant::now();
    let rows = repo.query(&q).unwrap().rows.len();
    let ms = ms(t.elapsed());
    assert_eq!(rows, 10);
    let (held, pk) = (live() - base, peak().max(peak_before) - base);
    rep.value(
        "memory",
        format!("memory per item after open + first indexed query at {n}"),
        held as f64 / n as f64,
        "B",
    );
    rep.note(format!(
        "peak {:.1} B per item; the index build {ms:.1} ms",
        pk as f64 / n as f64
    ));
}

/// Open the repository in `dir` in a child process (this benchmark re-run with
/// `CORE_BENCH_CHILD_OPEN`) and return the time the open took there.
fn child_open(dir: &Path, from_snap: bool, n: u64) -> Duration {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .env(
            "CORE_BENCH_CHILD_OPEN",
            format!(
                "{}|{}|{n}",
                if from_snap { "snapshot" } else { "log" },
                dir.display()
            ),
        )
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ns: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    Duration::from_nanos(ns)
}

/// The child side of [`child_open`]: open once, print nanoseconds.
fn child_main(spec: &str) {
    let mut parts = spec.splitn(3, '|');
    let kind = parts.next().unwrap();
    let dir = PathBuf::from(parts.next().unwrap());
    let n: u64 = parts.next().unwrap().parse().unwrap();
    let log = FileStorage::open(dir.join("log")).unwrap();
    let snap = (kind == "snapshot").then(|| FileStorage::open(dir.join("snapshot")).unwrap());
    let o = opts();
    let t = Instant::now();
    let repo = Repo::open(log, snap, o).unwrap();
    let el = t.elapsed();
    assert_eq!(repo.open_report().from_snapshot, kind == "snapshot");
    assert_eq!(repo.item_count() as u64, n);
    println!("{}", el.as_nanos());
    // Skip freeing the state: the process ends here.
    std::process::exit(0);
}

fn suite_verify(rep: &mut Report, commits: u64) {
    for (per_seal, label) in [(1000u64, "1 seal / 1,000 commits"), (1, "1 seal / commit")] {
        eprintln!("verify at {commits} commits, {label}");
        let tmp = Tmp::new(&format!("verify{per_seal}"));
        let mut repo = Repo::open(tmp.log(), None, opts()).unwrap();
        let t = Instant::now();
        for i in 0..commits {
            let mut tx = Txn::new();
            tx.put(&key(i), item(i)).unwrap();
            repo.commit(tx).unwrap();
            if (i + 1) % per_seal == 0 {
                repo.seal().unwrap();
            }
        }
        repo.seal().unwrap();
        repo.flush().unwrap();
        rep.value(
            "verify",
            format!("build {commits} single-item commits, {label}"),
            ms(t.elapsed()),
            "ms",
        );
        let runs = if per_seal == 1 { 1 } else { 3 };
        let s = sample(
            runs,
            || (),
            |_| {
                let r = repo.verify().unwrap();
                assert_eq!(r.commits as u64, commits);
                r
            },
        );
        rep.time(
            "verify",
            format!("verify() at {commits} commits, {label}"),
            &s,
            "ms",
        );
        let r = repo.verify().unwrap();
        rep.note(format!(
            "{} seals, {} signatures verified",
            r.seals, r.signatures_verified
        ));
    }
}

fn suite_crypto(rep: &mut Report) {
    eprintln!("crypto");
    let id = ident();
    let pk = id.public();
    // A seal message over 1,000 commit ids (the common batch) and a short one.
    let ids: Vec<CommitId> = (0..1000u32)
        .map(|i| CommitId::of(&i.to_le_bytes()))
        .collect();
    for (msg, label) in [
        (
            ibexdb::Seal::message("bench", &pk, &ids),
            "seal msg, 1,000 ids",
        ),
        (b"hello, ibexdb".to_vec(), "13-byte msg"),
    ] {
        let k = 200;
        let mut sig = id.sign(&msg);
        let s = sample(
            5,
            || (),
            |_| {
                for _ in 0..k {
                    sig = id.sign(black_box(&msg));
                }
            },
        );
        let per = |d: Duration| d / k;
        let st = Stats {
            p50: per(s.p50),
            p95: per(s.p95),
            n: s.n * k as usize,
        };
        rep.time("crypto", format!("Identity::sign ({label})"), &st, "µs");
        let s = sample(
            5,
            || (),
            |_| {
                for _ in 0..k {
                    pk.verify(black_box(&msg), &sig).unwrap();
                }
            },
        );
        let st = Stats {
            p50: per(s.p50),
            p95: per(s.p95),
            n: s.n * k as usize,
        };
        rep.time("crypto", format!("PublicKey::verify ({label})"), &st, "µs");
    }
    let msg = vec![7u8; 1 << 20];
    let s = sample(20, || (), |_| CommitId::of(black_box(&msg)));
    rep.time("crypto", "SHA-256 of 1 MiB (commit id)", &s, "µs");
}

fn main() {
    if let Ok(spec) = std::env::var("CORE_BENCH_CHILD_OPEN") {
        return child_main(&spec);
    }
    // `cargo bench` passes `--bench`; ignore arguments.
    let sizes: Vec<u64> = std::env::var("CORE_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10_000, 100_000, 1_000_000]);
    let verify_commits: u64 = std::env::var("CORE_BENCH_VERIFY_COMMITS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(50_000);
    let skip = std::env::var("CORE_BENCH_SKIP").unwrap_or_default();
    let on = |s: &str| !skip.split(',').any(|x| x.trim() == s);
    let mut rep = Report::default();
    let t0 = Instant::now();
    if on("latency") {
        suite_latency(&mut rep);
    }
    if on("bulk") {
        suite_bulk(&mut rep);
    }
    if on("open") {
        suite_open(&mut rep, &sizes);
    }
    if on("verify") {
        suite_verify(&mut rep, verify_commits);
    }
    if on("crypto") {
        suite_crypto(&mut rep);
    }
    rep.print();
    let config = json!({
        "sizes": sizes,
        "verify_commits": verify_commits,
        "skipped": skip,
        "cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "os": std::env::consts::OS,
        "arch": std::env::consts::ARCH,
        "tmp_dir": std::env::temp_dir(),
        "total_seconds": t0.elapsed().as_secs_f64(),
        "unix_time": std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
    });
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench-core.json");
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    std::fs::write(
        &out,
        serde_json::to_string_pretty(&rep.json(config)).unwrap(),
    )
    .unwrap();
    println!("\nwrote {}", out.display());
}
