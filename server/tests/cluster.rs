//! The PostgreSQL store: several real `ibexdb-server` nodes on one real PostgreSQL of the
//! test's own (server/tests/common/pg.rs), clients spread over them.

mod common;
use common::pg::Postgres;
use common::*;
use std::time::{Duration, Instant};

/// Every commit stored in PostgreSQL for `repo`: (sequence, id), in sequence order.
async fn stored(pg: &Postgres, repo: &str) -> Vec<(i64, Vec<u8>)> {
    let c = pg.client().await;
    let rows = c
        .query(
            "SELECT c.seq, c.id FROM ibexdb_commits c JOIN ibexdb_repos r ON r.id = c.repo
             WHERE r.name = $1 ORDER BY c.seq",
            &[&repo],
        )
        .await
        .unwrap();
    rows.iter().map(|r| (r.get(0), r.get(1))).collect()
}

/// Sequences are 1..=n without a gap, each id once, and the head says n.
async fn assert_gapless(pg: &Postgres, repo: &str) -> usize {
    let rows = stored(pg, repo).await;
    for (i, (seq, _)) in rows.iter().enumerate() {
        assert_eq!(*seq, i as i64 + 1, "sequence gap in {repo}");
    }
    let ids: std::collections::HashSet<_> = rows.iter().map(|r| r.1.clone()).collect();
    assert_eq!(ids.len(), rows.len(), "a commit stored twice in {repo}");
    let c = pg.client().await;
    let head: i64 = c
        .query_one("SELECT head FROM ibexdb_repos WHERE name = $1", &[&repo])
        .await
        .unwrap()
        .get(0);
    assert_eq!(head as usize, rows.len(), "head of {repo}");
    rows.len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_through_one_node_reaches_a_client_of_another() {
    let pg = Postgres::start("relay");
    let n1 = Server::node("relay-1", &pg.url, &[]);
    let n2 = Server::node("relay-2", &pg.url, &[]);
    let mut team = Peer::team("r", &[1, 2]).into_iter();
    let (mut a, mut b) = (team.next().unwrap(), team.next().unwrap());
    a.connect(&n1.url).await;
    a.settle(1).await;
    b.connect(&n2.url).await;
    b.settle(1).await;
    let mut ms = Vec::new();
    for i in 0..20 {
        a.write();
        a.repo.seal().unwrap();
        let t = Instant::now();
        a.push().await;
        b.settle(2 + i).await;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
        a.settle(2 + i).await;
    }
    ms.sort_by(|x, y| x.total_cmp(y));
    println!("node 1 → node 2, push to live on the other node: p50 {:.1} ms", ms[10]);
    assert_eq!(a.repo.state_hash(), b.repo.state_hash());
    assert_eq!(assert_gapless(&pg, "r").await, 21);
    // The schema is at its version, applied once although two nodes started.
    let c = pg.client().await;
    let v: i64 = c
        .query_one("SELECT count(*) FROM ibexdb_migrations", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(v, 1);
    drop((n1, n2));
    let _ = Duration::ZERO;
}
