//! What one connection costs the server, measured from outside (issue 23's figures): idle
//! subscribers, subscribers that stop reading while data is relayed to them, and hostile
//! clients holding a message begun and never finished. Each is bounded by the flags.

mod common;
use common::measure::rss;
use common::*;
use std::time::Duration;

const KIB: u64 = 1 << 10;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_per_connection_for_idle_slow_and_hostile_clients() {
    let args = [
        "--queue-bytes",
        "1048576",
        "--message-timeout-ms",
        "20000",
        "--push-rate",
        "100000",
        "--push-burst",
        "100000",
    ];
    let server = Server::fresh_with("permem", &args);
    let url = server.url.clone();
    let mut owner = team_founded(&url, "r").await;
    tokio::time::sleep(Duration::from_millis(200)).await;

    // Idle: subscribed, caught up, silent.
    let n = 200;
    let before = rss(server.pid());
    let mut idle = Vec::new();
    for _ in 0..n {
        let mut ws = socket(&url).await;
        hello(&mut ws, "r").await;
        idle.push(ws);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let per_idle = rss(server.pid()).saturating_sub(before) / n;

    // Slow readers: subscribed, then never read while 4 MiB is relayed to them.
    let n = 10u64;
    let before = rss(server.pid());
    let mut slow = Vec::new();
    for _ in 0..n {
        let mut ws = socket(&url).await;
        hello(&mut ws, "r").await;
        slow.push(ws);
    }
    owner.pad = 64 << 10;
    for _ in 0..64 {
        owner.write();
        owner.push().await;
        while owner.event(Duration::from_millis(2)).await.is_some() {}
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let per_slow = rss(server.pid()).saturating_sub(before) / n;

    // Hostile: the first 1 MiB fragment of a message that is never finished.
    let n = 8u64;
    let before = rss(server.pid());
    let mut hostile = Vec::new();
    for _ in 0..n {
        let mut raw = raw_ws::Raw::connect(&server.addr).await;
        raw.hello("r").await;
        raw.send(&raw_ws::first_fragment(2, &vec![0u8; 1 << 20]))
            .await;
        hostile.push(raw);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let per_hostile = rss(server.pid()).saturating_sub(before) / n;

    eprintln!(
        "RSS per connection: idle {} KiB, slow reader (4 MiB relayed, --queue-bytes 1 MiB) {} KiB, hostile (1 MiB of an unfinished message) {} KiB",
        per_idle / KIB,
        per_slow / KIB,
        per_hostile / KIB
    );
    assert!(per_idle < 64 * KIB, "idle: {per_idle}");
    // A slow reader's share includes the repository's own growth (4 MiB of new data, a tenth
    // each) and the allocator's retained pages; its queue is at most 1 MiB.
    assert!(per_slow < 3 * 1024 * KIB, "slow reader: {per_slow}");
    // The WebSocket layer holds an unfinished fragment twice (its read buffer and the message
    // being assembled), until --message-timeout-ms.
    assert!(per_hostile < 3 * 1024 * KIB, "hostile: {per_hostile}");
    drop((idle, slow, hostile));
}

/// §5: a commit the server accepts costs it a small multiple of its bytes while its
/// repository is open, however small its values: the server checks the items of a commit in
/// place and keeps only the access list (`RepoOptions::access_only`, docs/design.md §12.4).
/// Before, it built and kept every value: these four cost it 20.9 bytes of RSS per byte (2.3 now).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accepted_commits_of_tiny_values_cost_a_small_multiple_of_their_bytes() {
    use ibexdb::{map, Txn, Value};
    let server = Server::fresh("accepted");
    let url = server.url.clone();
    let mut owner = team_founded(&url, "r").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = rss(server.pid());
    let wide: ibexdb::Map = (0..1u32 << 18)
        .map(|i| (ibexdb::Name::from(format!("{i:05x}").as_str()), Value::Null))
        .collect();
    let shapes = [
        ("nulls", Value::List(vec![Value::Null; 4 << 20])),
        ("lists", Value::List(vec![Value::List(vec![]); 2 << 20])),
        ("strings", Value::List(vec![Value::from("x"); 1 << 20])),
        ("maps", Value::Map(wide)),
    ];
    for (i, (what, v)) in shapes.into_iter().enumerate() {
        let mut t = Txn::new();
        t.put(&format!("items/{what}"), map! { "l" => v }.as_map())
            .unwrap();
        owner.repo.commit(t).unwrap();
        owner.repo.seal().unwrap();
        owner.push().await;
        owner.settle(2 + i).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let grew = rss(server.pid()).saturating_sub(before);
    let (commits, _) = owner.repo.export().unwrap();
    let sent: u64 = commits[1..].iter().map(|(_, b)| b.len() as u64).sum();
    eprintln!(
        "4 accepted commits of tiny values ({} KiB): RSS +{} KiB (x{:.2} per byte)",
        sent / KIB,
        grew / KIB,
        grew as f64 / sent as f64
    );
    // What is left is buffers and the allocator's retained pages (the message read, its copy
    // for the log), not a cost per value.
    assert!(
        grew < 4 * sent,
        "RSS grew {grew} bytes for {sent} bytes stored"
    );
}
