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
