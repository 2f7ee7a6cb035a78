//! The connections of one scenario: writers push their prepared batches one at a time (the
//! next after the `Ack`), readers count the commits relayed to them (one reader per repository
//! also times push→relay, apart for pushes through its own node and through another), slow
//! readers subscribe and never read again. Connections are spread over the nodes.

use crate::gen::{self, Founding, Push};
use crate::target::Cluster;
use crate::{Outcome, Scenario};
use futures_util::{SinkExt, StreamExt};
use ibexdb::{CommitId, Identity, Message, SessionProof};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message as Ws;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Commits prepared per writer and second of measurement (an upper bound on the rate).
const PREPARED_PER_S: usize = 20_000;

#[derive(Default)]
struct Shared {
    /// Each push's first commit: when it was sent, and through which node.
    sent: Mutex<HashMap<CommitId, (Instant, usize)>>,
    /// Push → relay to a reader of the same node, and of another node.
    relay_ms: Mutex<Vec<f64>>,
    cross_ms: Mutex<Vec<f64>>,
    ack_ms: Mutex<Vec<f64>>,
    stored: AtomicU64,
    relayed: AtomicU64,
    refused: AtomicU64,
    /// Writers stop pushing.
    stop: AtomicBool,
    /// Readers stop reading (after the last relays had time to arrive).
    done: AtomicBool,
}

/// The next protocol message (skipping pings), `None` on close or error.
async fn next_message(ws: &mut Socket) -> Option<Message> {
    loop {
        match ws.next().await? {
            Ok(Ws::Binary(b)) => return Message::decode(&b).ok(),
            Ok(_) => continue,
            Err(_) => return None,
        }
    }
}

/// Connect and subscribe to `repo`: answer the server's challenge with a proof of `who`'s key
/// (anonymous without one) and wait for the `Welcome`.
/// `create`: it founds the repository (its first push carries the root).
async fn open(url: &str, repo: &str, who: Option<&Identity>, create: bool) -> Option<Socket> {
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await.ok()?;
    let Message::Challenge { nonce, .. } = next_message(&mut ws).await? else {
        return None;
    };
    let hello = Message::Hello {
        repo: repo.into(),
        cursor: 0,
        auth: who.map(|id| SessionProof::sign(id, nonce, url, repo)),
        create,
    };
    ws.send(Ws::binary(hello.encode())).await.ok()?;
    match next_message(&mut ws).await? {
        Message::Welcome { .. } => Some(ws),
        _ => None,
    }
}

/// Push each repository's founding history as its owner (which creates it on the server).
pub async fn found_all(url: &str, tag: &str, founded: &[Founding]) -> bool {
    for (r, f) in founded.iter().enumerate() {
        let Some(mut ws) = open(url, &gen::repo_name(tag, r), Some(&f.owner), true).await else {
            return false;
        };
        if ws.send(Ws::Binary(f.push.clone())).await.is_err() {
            return false;
        }
        loop {
            match next_message(&mut ws).await {
                Some(Message::Ack { .. }) => break,
                Some(Message::Error { name, message, .. }) => {
                    eprintln!("founding load-{r} refused: {name}: {message}");
                    return false;
                }
                Some(_) => continue,
                None => return false,
            }
        }
    }
    true
}

/// One connection: its index, repository and node.
struct Conn {
    i: usize,
    repo: usize,
    node: usize,
    ws: Socket,
}

/// Open `n` connections, `i` to repository `i % repos`, many at a time; the first
/// `ids.len()` prove those keys (the writers, on node `i % nodes`), the rest are anonymous
/// readers (on node `(i / repos) % nodes`, so every repository has readers on every node).
async fn open_many(
    urls: &[String],
    tag: &str,
    n: usize,
    repos: usize,
    ids: &[Identity],
) -> Vec<Conn> {
    let mut out = Vec::with_capacity(n);
    for chunk in (0..n).collect::<Vec<_>>().chunks(100) {
        let opens = chunk.iter().map(|&i| async move {
            let n = urls.len();
            let node = if i < ids.len() {
                i % n
            } else {
                (i / repos) % n
            };
            let repo = i % repos;
            open(&urls[node], &gen::repo_name(tag, repo), ids.get(i), false)
                .await
                .map(|ws| Conn { i, repo, node, ws })
        });
        out.extend(
            futures_util::future::join_all(opens)
                .await
                .into_iter()
                .flatten(),
        );
    }
    out
}

/// Each repository's founding history: writer `w` writes to repository `w % repos`.
fn found(s: &Scenario) -> Vec<Founding> {
    (0..s.repos)
        .map(|r| gen::found(&s.tag, r, (0..s.writers).filter(move |w| w % s.repos == r)))
        .collect()
}

fn prepare(s: &Scenario, founded: &[Founding]) -> Vec<Vec<Push>> {
    let per_writer =
        (PREPARED_PER_S as f64 * s.seconds / s.writers as f64 / s.batch as f64).ceil() as usize;
    let per_writer = per_writer.clamp(1, 2000);
    let t = Instant::now();
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2);
    let mut out: Vec<Vec<Push>> = Vec::new();
    let ws: Vec<usize> = (0..s.writers).collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = ws
            .chunks(s.writers.div_ceil(threads))
            .map(|chunk| {
                scope.spawn(move || {
                    chunk
                        .iter()
                        .map(|&w| {
                            let r = w % s.repos;
                            gen::pushes(&s.tag, w, r, &founded[r], per_writer, s.batch, s.pad)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for h in handles {
            out.extend(h.join().expect("generator thread"));
        }
    });
    eprintln!(
        "prepared {} pushes of {} commits per writer in {:.1} s",
        per_writer,
        s.batch,
        t.elapsed().as_secs_f64()
    );
    out
}

/// Push one batch at a time through `node`; with `every`, no faster than one push per `every`.
async fn writer(
    mut ws: Socket,
    node: usize,
    pushes: Vec<Push>,
    every: Option<Duration>,
    shared: Arc<Shared>,
) {
    let mut next = tokio::time::Instant::now();
    for p in pushes {
        if shared.stop.load(Relaxed) {
            break;
        }
        if let Some(every) = every {
            tokio::time::sleep_until(next).await;
            next += every;
        }
        let t = Instant::now();
        shared.sent.lock().unwrap().insert(p.first, (t, node));
        if ws.send(Ws::Binary(p.bytes)).await.is_err() {
            return;
        }
        loop {
            let Ok(Some(Ok(frame))) =
                tokio::time::timeout(Duration::from_secs(30), ws.next()).await
            else {
                return;
            };
            let Ws::Binary(b) = frame else { continue };
            match Message::decode(&b) {
                Ok(Message::Ack { ids }) => {
                    shared.stored.fetch_add(ids.len() as u64, Relaxed);
                    shared
                        .ack_ms
                        .lock()
                        .unwrap()
                        .push(t.elapsed().as_secs_f64() * 1e3);
                    break;
                }
                Ok(Message::Error { .. }) => {
                    shared.refused.fetch_add(1, Relaxed);
                    break;
                }
                _ => continue,
            }
        }
        let _ = p.commits;
    }
}

/// Count relayed commits; a probe (on `node`) also times each push it sees relayed.
async fn reader(mut ws: Socket, node: usize, probe: bool, shared: Arc<Shared>) -> bool {
    loop {
        let frame = tokio::select! {
            f = ws.next() => f,
            _ = tokio::time::sleep(Duration::from_millis(50)) => {
                if shared.done.load(Relaxed) { return true; }
                continue;
            }
        };
        let Some(Ok(frame)) = frame else { return false };
        let Ws::Binary(b) = frame else { continue };
        if let Some((n, first)) = peek_commits(&b) {
            shared.relayed.fetch_add(n as u64, Relaxed);
            let sent = first.filter(|_| probe).and_then(|id| {
                let sent = shared.sent.lock().unwrap();
                sent.get(&id).copied()
            });
            if let Some((t, via)) = sent {
                let ms = t.elapsed().as_secs_f64() * 1e3;
                let list = if via == node {
                    &shared.relay_ms
                } else {
                    &shared.cross_ms
                };
                list.lock().unwrap().push(ms);
            }
        }
    }
}

fn varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at)?;
        *at += 1;
        v |= ((byte & 0x7f) as u64) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// The commit count and first id of a `Commits` message, without decoding the commits (the
/// generator must not be slower than the server it measures).
fn peek_commits(b: &[u8]) -> Option<(usize, Option<CommitId>)> {
    if b.len() < 2 || b[1] != 2 {
        return None;
    }
    let mut at = 2;
    varint(b, &mut at)?;
    varint(b, &mut at)?;
    let n = varint(b, &mut at)? as usize;
    let first = b
        .get(at..at + 32)
        .map(|id| CommitId(id.try_into().unwrap()));
    Some((n, first.filter(|_| n > 0)))
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() - 1) as f64 * p).round() as usize]
}

/// Run one scenario against the nodes of `t`.
pub async fn run(s: &Scenario, t: &Cluster) -> Outcome {
    let founded = found(s);
    let pushes = tokio::task::block_in_place(|| prepare(s, &founded));
    assert!(
        found_all(&t.urls()[0], &s.tag, &founded).await,
        "the server refused the founding pushes"
    );
    let ids: Vec<Identity> = (0..s.writers).map(gen::writer_identity).collect();
    let urls = t.urls();
    let conns = open_many(&urls, &s.tag, s.connections, s.repos, &ids).await;
    let slow = open_many(&urls, &s.tag, s.slow, s.repos, &[]).await;
    let held_at_start = conns.len();
    eprintln!(
        "holding {} connections and {} slow readers on {} node(s); RSS {:.1} MiB",
        held_at_start,
        slow.len(),
        urls.len(),
        t.rss_mib()
    );
    let shared = Arc::new(Shared::default());
    let start = Instant::now();
    let mut writers = Vec::new();
    let mut readers = Vec::new();
    let mut pushes = pushes.into_iter();
    let mut probed = vec![false; s.repos];
    let every =
        (s.rate > 0).then(|| Duration::from_secs_f64((s.writers * s.batch) as f64 / s.rate as f64));
    for c in conns {
        if c.i < s.writers {
            let p = pushes.next().unwrap_or_default();
            writers.push(tokio::spawn(writer(c.ws, c.node, p, every, shared.clone())));
        } else {
            // One probe per repository, on node 0: pushes through node 0 time the relay on
            // one node, pushes through the others the relay across nodes.
            let probe = c.node == 0 && !std::mem::replace(&mut probed[c.repo], true);
            readers.push(tokio::spawn(reader(c.ws, c.node, probe, shared.clone())));
        }
    }
    let mut rss_peak = t.rss_mib();
    let deadline = start + Duration::from_secs_f64(s.seconds);
    while Instant::now() < deadline && !writers.iter().all(|w| w.is_finished()) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        rss_peak = rss_peak.max(t.rss_mib());
    }
    shared.stop.store(true, Relaxed);
    for w in writers {
        let _ = w.await;
    }
    let elapsed = start.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_millis(500)).await; // the last relays arrive
    rss_peak = rss_peak.max(t.rss_mib());
    shared.done.store(true, Relaxed);
    let mut alive = s.writers;
    for r in readers {
        alive += r.await.unwrap_or(false) as usize;
    }
    let stored = shared.stored.load(Relaxed);
    let relayed = shared.relayed.load(Relaxed);
    let mut relay = shared.relay_ms.lock().unwrap().clone();
    let mut cross = shared.cross_ms.lock().unwrap().clone();
    let mut ack = shared.ack_ms.lock().unwrap().clone();
    drop(slow);
    Outcome {
        nodes: urls.len(),
        connections_held: alive.min(held_at_start),
        stored,
        stored_per_s: stored as f64 / elapsed,
        relayed,
        relayed_per_s: relayed as f64 / elapsed,
        p50_ms: percentile(&mut relay, 0.5),
        p95_ms: percentile(&mut relay, 0.95),
        cross_p50_ms: percentile(&mut cross, 0.5),
        cross_p95_ms: percentile(&mut cross, 0.95),
        ack_p50_ms: percentile(&mut ack, 0.5),
        rss_peak_mib: rss_peak,
        rss_end_mib: t.rss_mib(),
        queue_drops: t.metric("ibexdb_queue_drops_total"),
        refused_pushes: shared.refused.load(Relaxed),
        seconds: elapsed,
    }
}
