//! Attachment records (the attach op, docs/design.md §4.1 and §6.7) through the real
//! `ibexdb-server` over real WebSockets on 127.0.0.1: the server's checks of received commits
//! accept the op, store it, and hand it to other peers and to a newcomer after a restart. The
//! bytes travel in messages of their own: attachment_bytes.rs.

mod common;
use common::*;
use ibexdb::{Attachment, Map, Sha256Stream, Txn, Value};
use std::time::{Duration, Instant};

fn att(bytes: &[u8], t: &str) -> Attachment {
    let mut h = Sha256Stream::new();
    h.update(bytes);
    Attachment {
        size: h.len(),
        hash: h.finish(),
        media_type: t.into(),
    }
}

fn put_and_attach(repo: &mut ibexdb::Repo<ibexdb::MemStorage>, key: &str, a: &Attachment) {
    let mut t = Txn::new();
    t.put(key, Map::from([("title", Value::from(key))]))
        .unwrap();
    repo.commit(t).unwrap();
    let mut t = Txn::new();
    t.attach(key, "photo.jpg", a).unwrap();
    repo.commit(t).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attachment_records_sync_through_the_server_and_survive_a_restart() {
    let server = Server::fresh("attachments");
    let mut team = Peer::team("files", &[1, 2]).into_iter();
    let (mut a, mut b) = (team.next().unwrap(), team.next().unwrap());
    let (x, y) = (
        att(b"photo of a", "image/jpeg"),
        att(b"photo of b", "image/png"),
    );
    put_and_attach(&mut a.repo, "tasks/a", &x);
    put_and_attach(&mut b.repo, "tasks/b", &y);
    let total = 1 + 2 + 2;
    a.connect(&server.url).await;
    b.connect(&server.url).await;
    let deadline = Instant::now() + Duration::from_secs(120);
    while a.repo.commit_count() < total || b.repo.commit_count() < total {
        assert!(Instant::now() < deadline, "a and b did not exchange");
        a.step(Duration::from_millis(20)).await;
        b.step(Duration::from_millis(20)).await;
    }
    a.settle(total).await;
    b.settle(total).await;
    assert_eq!(a.repo.state_hash().unwrap(), b.repo.state_hash().unwrap());
    let want = |a: &Attachment| vec![("photo.jpg".to_string(), a.clone())];
    assert_eq!(b.repo.attachments("tasks/a").unwrap(), want(&x));
    assert_eq!(a.repo.attachments("tasks/b").unwrap(), want(&y));
    drop(a);
    drop(b);
    let mut server = server;
    server.kill();
    let server = server.restart();
    let mut late = Peer::new(9, "files");
    late.connect(&server.url).await;
    late.settle(total).await;
    assert_eq!(late.repo.attachments("tasks/a").unwrap(), want(&x));
    assert_eq!(late.repo.attachments("tasks/b").unwrap(), want(&y));
}
