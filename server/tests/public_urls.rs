//! Session proofs in a deployment of several nodes (docs/design.md §12.5): a proof names the
//! URL the client dialed, and each node accepts the URLs it is reached under — its own address
//! and every `--public-url` (here a load balancer's, shared by all nodes) — and nothing else, so
//! a client moving along a list of node URLs signs for each node it dials, and a proof made for
//! one node is refused by another.

mod common;
use common::pg::Postgres;
use common::*;
use ibexdb::{ErrorCode, Message, SessionProof};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);
const LB: &str = "wss://sync.example.org/";

/// Dial `node`, answer its challenge with peer 1's proof naming `signed_for`: `None` for a
/// `Welcome`, else the refusal's code and text.
async fn hello_signed_for(node: &str, signed_for: &str) -> Option<(ErrorCode, String)> {
    let me = identity(1);
    let mut ws = socket(node).await;
    let nonce = challenge(&mut ws).await;
    let auth = Some(SessionProof::sign(&me, nonce, signed_for, "r"));
    send(
        &mut ws,
        &Message::Hello {
            repo: "r".into(),
            cursor: 0,
            auth,
            create: false,
        },
    )
    .await;
    match recv(&mut ws, WAIT).await {
        Some(Message::Welcome { .. }) => None,
        Some(Message::Error {
            code,
            name,
            message,
            ..
        }) => Some((code, format!("{name}: {message}"))),
        m => panic!("unexpected {m:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_node_accepts_its_own_url_and_the_shared_one_not_another_nodes() {
    let pg = Postgres::start("urls");
    let n1 = Server::node("urls-1", &pg.url, &["--public-url", LB]);
    let n2 = Server::node("urls-2", &pg.url, &["--public-url", LB]);
    let mut owner = Peer::new(1, "r");
    owner.write();
    owner.connect(&n1.url).await;
    owner.settle(1).await;
    // Distinct URLs: the proof names the node dialed.
    assert_eq!(hello_signed_for(&n2.url, &n2.url).await, None);
    // One load-balancer URL: every node accepts it (any port spelling of the default).
    assert_eq!(hello_signed_for(&n2.url, LB).await, None);
    assert_eq!(
        hello_signed_for(&n1.url, "wss://SYNC.example.org:443/x").await,
        None
    );
    // A proof made for node 1 is no good at node 2.
    let (code, text) = hello_signed_for(&n2.url, &n1.url).await.unwrap();
    assert_eq!(code, ErrorCode::Auth);
    assert!(text.contains("wrong-server"), "{text}");
    drop((n1, n2));
}
