//! Bytes values (`Value::Bytes`, docs/design.md §2.2) through the real `ibexdb-server` over
//! real WebSockets on 127.0.0.1: pushed by one peer, checked and stored by the server (its
//! `check_value` of received commits), kept across a restart, and fetched by another peer
//! byte for byte.

mod common;
use common::*;
use ibexdb::{Map, Txn, Value};
use std::time::{Duration, Instant};

/// The values the test writes: 0 B, 1 B, bytes that are not UTF-8, and 5 MB.
fn payloads() -> Vec<(&'static str, Vec<u8>)> {
    let big: Vec<u8> = (0..5_000_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    vec![
        ("empty", vec![]),
        ("one", vec![0xff]),
        ("odd", vec![0xc3, 0x28, 0, 0x80]),
        ("big", big),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bytes_values_sync_through_the_server_and_survive_a_restart() {
    let server = Server::fresh("bytes");
    let mut team = Peer::team("files", &[1, 2]).into_iter();
    let (mut a, mut b) = (team.next().unwrap(), team.next().unwrap());
    for (name, data) in payloads() {
        let mut t = Txn::new();
        let mut m = Map::new();
        m.insert("data".into(), Value::from(data));
        m.insert("name".into(), Value::from(name));
        t.put(&format!("files/{name}"), m).unwrap();
        a.repo.commit(t).unwrap();
    }
    // b writes bytes of its own meanwhile.
    let mut t = Txn::new();
    t.put(
        "files/from-b",
        Map::from([("data", Value::from(vec![7u8; 3]))]),
    )
    .unwrap();
    b.repo.commit(t).unwrap();
    let total = 1 + payloads().len() + 1;
    a.connect(&server.url).await;
    b.connect(&server.url).await;
    // Both answer their challenge and push; each waits for the other's commits.
    let deadline = Instant::now() + Duration::from_secs(120);
    while a.repo.commit_count() < total || b.repo.commit_count() < total {
        assert!(
            Instant::now() < deadline,
            "a and b did not exchange their commits"
        );
        a.step(Duration::from_millis(20)).await;
        b.step(Duration::from_millis(20)).await;
    }
    a.settle(total).await;
    b.settle(total).await;
    assert_eq!(a.repo.state_hash().unwrap(), b.repo.state_hash().unwrap());
    for (name, data) in payloads() {
        let got = b.repo.get(&format!("files/{name}")).unwrap().unwrap();
        assert_eq!(got.get("data"), Some(&Value::from(data)), "{name}");
    }
    // The server kept them: after a restart, a newcomer gets them from the server alone.
    drop(a);
    drop(b);
    let mut server = server;
    server.kill();
    let server = server.restart();
    let mut late = Peer::new(9, "files");
    late.connect(&server.url).await;
    late.settle(total).await;
    for (name, data) in payloads() {
        let got = late.repo.get(&format!("files/{name}")).unwrap().unwrap();
        assert_eq!(got.get("data"), Some(&Value::from(data)), "{name}");
    }
    let got = late.repo.get("files/from-b").unwrap().unwrap();
    assert_eq!(got.get("data"), Some(&Value::from(vec![7u8; 3])));
}
