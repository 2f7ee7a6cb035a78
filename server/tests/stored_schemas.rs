//! The sync server checks the stored schemas (docs/design.md §2.4, §12.4) over real
//! WebSockets: a signed commit that breaks its collection's schema in its causal past is
//! refused with a typed `SchemaError` and nothing of it reaches the server's disk; a valid one
//! is stored; after a schema upgrade, a write valid only under the new version is stored on top
//! of the upgrade and refused on top of a history that has not seen it; the server decides the
//! same after a restart (its log replayed); a junk commit an honest replica vouches for is
//! stored without effect, as every replica has it (its grant does not count on the server); and
//! on PostgreSQL, a schema stored through one node binds another.

mod common;
use common::*;
use ibexdb::{
    map, member_value, Change, Commit, CommitId, ErrorCode, Identity, Message, Op, Role, Seal, Txn,
};
use serde_json::json;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// A signed commit by `who` on `parents` with `changes`, made without its replica's checks.
fn forged(who: &Identity, parents: Vec<CommitId>, changes: Vec<Change>) -> (CommitId, Vec<u8>) {
    let c = Commit {
        trusted: false,
        author: who.public(),
        hlc: now_ms() << 16,
        parents,
        changes,
    };
    let bytes = c.encode();
    (CommitId::of(&bytes), bytes)
}

fn put(key: &str, value: ibexdb::Map) -> Change {
    let (collection, id) = key.split_once('/').unwrap();
    Change {
        collection: collection.into(),
        id: id.into(),
        op: Op::Put(value),
    }
}

/// Push `commits` (each sealed by `who`) on a connection of `who`'s.
fn push_of(who: &Identity, repo: &str, commits: Vec<(CommitId, Vec<u8>)>) -> Message {
    let ids: Vec<CommitId> = commits.iter().map(|c| c.0).collect();
    Message::Push {
        commits,
        seals: vec![Seal::create(who, repo, &ids).encode()],
    }
}

/// A session of `who`'s on repository `repo`, welcomed.
async fn session(url: &str, repo: &str, who: &Identity) -> Socket {
    let mut ws = socket(url).await;
    hello_as(&mut ws, url, repo, Some(who)).await;
    ws
}

/// Read until the `Ack` of a push (skipping catch-up), or panic on an `Error`.
async fn expect_ack(ws: &mut Socket) -> Vec<CommitId> {
    loop {
        match recv(ws, WAIT).await {
            Some(Message::Ack { ids }) => return ids,
            Some(Message::Error { name, message, .. }) => panic!("refused: {name}: {message}"),
            Some(_) => continue,
            None => panic!("no Ack"),
        }
    }
}

fn tasks_v1() -> serde_json::Value {
    json!({"fields": {"title": {"type": "string", "required": true}, "n": {"type": "integer"}}})
}

/// Version 2: `n` becomes a required string (a write valid only under it).
fn tasks_v2() -> serde_json::Value {
    json!({"fields": {"title": {"type": "string", "required": true}, "n": {"type": "string", "required": true}}})
}

/// Founds `repo` as peer 1 (owner) with schema version 1 of `tasks` stored, settled on the
/// server: the owner.
async fn founded_with_schema(url: &str, repo: &str) -> Peer {
    let mut owner = Peer::new(1, repo);
    owner.write();
    owner
        .repo
        .store_schemas(1, &[("tasks".into(), tasks_v1())])
        .unwrap();
    owner.connect(url).await;
    owner.settle(2).await;
    owner
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_breaking_its_stored_schema_is_refused_typed_and_nothing_reaches_the_disk() {
    let mut server = Server::fresh("schema-refuse");
    let url = server.url.clone();
    let mut owner = founded_with_schema(&url, "r").await;
    let me = identity(1);
    let heads = owner.repo.heads();

    // A title that is a number, and a task without its required title: each refused whole.
    for bad in [
        map! { "title" => 5 },
        map! { "n" => 1 },
        map! { "title" => "ok", "n" => 1.5 },
    ] {
        let before = server.log_len("r");
        let mut ws = session(&url, "r", &me).await;
        let c = forged(&me, heads.clone(), vec![put("tasks/bad", bad.as_map())]);
        send(&mut ws, &push_of(&me, "r", vec![c])).await;
        let (code, text) = expect_error(&mut ws, WAIT).await;
        assert_eq!(code, ErrorCode::Schema, "{text}");
        assert!(
            text.starts_with("SchemaError") && text.contains("tasks"),
            "{text}"
        );
        assert_eq!(server.log_len("r"), before, "nothing stored: {text}");
    }
    // A junk commit hidden in a push with a valid one: the push is refused whole.
    let before = server.log_len("r");
    let mut ws = session(&url, "r", &me).await;
    let good = forged(
        &me,
        heads.clone(),
        vec![put("tasks/good", map! { "title" => "fine" }.as_map())],
    );
    let junk = forged(
        &me,
        vec![good.0],
        vec![put("tasks/junk", map! { "title" => false }.as_map())],
    );
    send(&mut ws, &push_of(&me, "r", vec![good.clone(), junk])).await;
    let (code, text) = expect_error(&mut ws, WAIT).await;
    assert_eq!(code, ErrorCode::Schema, "{text}");
    assert_eq!(server.log_len("r"), before);
    // Data in a collection without a stored schema, and a valid task: stored and acknowledged.
    let mut ws = session(&url, "r", &me).await;
    let other = forged(
        &me,
        vec![good.0],
        vec![put("notes/1", map! { "anything" => 1 }.as_map())],
    );
    send(
        &mut ws,
        &push_of(&me, "r", vec![good.clone(), other.clone()]),
    )
    .await;
    assert_eq!(expect_ack(&mut ws).await, vec![good.0, other.0]);
    assert!(server.log_len("r") > before);

    // The same after a restart: the server's log is replayed, its schemas with it.
    let before = server.log_len("r");
    server.kill();
    let server = server.restart();
    let mut ws = session(&server.url, "r", &me).await;
    let c = forged(
        &me,
        vec![other.0],
        vec![put("tasks/after", map! { "title" => 7 }.as_map())],
    );
    send(&mut ws, &push_of(&me, "r", vec![c])).await;
    let (code, text) = expect_error(&mut ws, WAIT).await;
    assert_eq!(code, ErrorCode::Schema, "{text}");
    assert_eq!(
        server.log_len("r"),
        before,
        "nothing stored after the restart either"
    );
    owner.disconnect();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_schema_upgrade_a_write_valid_only_under_the_new_version_needs_it_in_its_past() {
    let server = Server::fresh("schema-upgrade");
    let url = server.url.clone();
    let mut owner = founded_with_schema(&url, "r").await;
    let me = identity(1);
    let v1_heads = owner.repo.heads();
    owner
        .repo
        .store_schemas(2, &[("tasks".into(), tasks_v2())])
        .unwrap();
    owner.push().await;
    owner.settle(3).await;
    let v2_heads = owner.repo.heads();
    let v2_task = || map! { "title" => "t", "n" => "two" }.as_map();

    // On top of version 1 (its causal past has not seen the upgrade): `n` must be an integer.
    let before = server.log_len("r");
    let mut ws = session(&url, "r", &me).await;
    let stale = forged(&me, v1_heads.clone(), vec![put("tasks/a", v2_task())]);
    send(&mut ws, &push_of(&me, "r", vec![stale])).await;
    let (code, text) = expect_error(&mut ws, WAIT).await;
    assert_eq!(code, ErrorCode::Schema, "{text}");
    assert!(text.contains("tasks") && text.contains('n'), "{text}");
    assert_eq!(server.log_len("r"), before);
    // A version-1 write made concurrently with the upgrade is valid (its past is version 1).
    let mut ws = session(&url, "r", &me).await;
    let old = forged(
        &me,
        v1_heads,
        vec![put(
            "tasks/old",
            map! { "title" => "old", "n" => 1 }.as_map(),
        )],
    );
    send(&mut ws, &push_of(&me, "r", vec![old.clone()])).await;
    assert_eq!(expect_ack(&mut ws).await, vec![old.0]);
    // On top of the upgrade: stored; the version-1 shape there is refused.
    let mut ws = session(&url, "r", &me).await;
    let new = forged(&me, v2_heads.clone(), vec![put("tasks/b", v2_task())]);
    send(&mut ws, &push_of(&me, "r", vec![new.clone()])).await;
    assert_eq!(expect_ack(&mut ws).await, vec![new.0]);
    let before = server.log_len("r");
    let mut ws = session(&url, "r", &me).await;
    let v1_shape = forged(
        &me,
        vec![new.0],
        vec![put("tasks/c", map! { "title" => "t", "n" => 3 }.as_map())],
    );
    send(&mut ws, &push_of(&me, "r", vec![v1_shape])).await;
    let (code, text) = expect_error(&mut ws, WAIT).await;
    assert_eq!(code, ErrorCode::Schema, "{text}");
    assert_eq!(server.log_len("r"), before);
    // An honest replica receives what the server stored and agrees with it.
    let mut reader = Peer::new(1, "r");
    reader.catch_up(&url).await;
    assert!(reader.repo.get("tasks/b").unwrap().is_some());
    assert!(reader.repo.get("tasks/old").unwrap().is_some());
    assert!(reader.repo.get("tasks/a").unwrap().is_none());
    owner.disconnect();
}

/// A junk commit by the owner that also grants a key write access reaches an honest writer peer
/// to peer; every replica stores it without effect (§6.4, §2.4), so the grant does not count.
/// The writer builds on it and pushes both: the server accepts the push (the honest commit
/// vouches for its history) and judges the junk commit as the replicas do: the key it would
/// have granted still may not write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vouched_junk_commit_is_stored_without_effect_as_on_every_replica() {
    let server = Server::fresh("schema-vouched");
    let url = server.url.clone();
    let mut team = Peer::team("r", &[1, 2]).into_iter();
    let (mut owner, mut writer) = (team.next().unwrap(), team.next().unwrap());
    owner
        .repo
        .store_schemas(1, &[("tasks".into(), tasks_v1())])
        .unwrap();
    owner.connect(&url).await;
    owner.push().await;
    owner.settle(2).await;
    writer.connect(&url).await;
    writer.settle(2).await;
    let (me, stranger) = (identity(1), identity(9));
    let grant = Change {
        collection: "_acl".into(),
        id: stranger.public().to_hex(),
        op: Op::Put(member_value(Role::Writer)),
    };
    let junk = forged(
        &me,
        owner.repo.heads(),
        vec![grant, put("tasks/junk", map! { "title" => 1 }.as_map())],
    );
    let seal = Seal::create(&me, "r", &[junk.0]).encode();
    let report = writer
        .repo
        .receive(std::slice::from_ref(&junk), &[seal])
        .unwrap();
    assert_eq!(report.refused, 1, "stored without effect on the replica");
    let mut t = Txn::new();
    t.put("tasks/honest", map! { "title" => "on top" }.as_map())
        .unwrap();
    writer.repo.commit(t).unwrap();
    writer.push().await;
    writer.settle(4).await;
    assert!(server.log_len("r") > 0);
    // The grant of the junk commit does not count on the server either.
    let before = server.log_len("r");
    let mut ws = session(&url, "r", &stranger).await;
    let c = forged(
        &stranger,
        writer.repo.heads(),
        vec![put("notes/x", map! { "by" => "stranger" }.as_map())],
    );
    send(&mut ws, &push_of(&stranger, "r", vec![c])).await;
    let (code, text) = expect_error(&mut ws, WAIT).await;
    assert_eq!(code, ErrorCode::Permission, "{text}");
    assert_eq!(server.log_len("r"), before);
    // And a replica catching up holds the honest task, not the junk one.
    let mut reader = Peer::new(2, "r");
    reader.catch_up(&url).await;
    assert!(reader.repo.get("tasks/honest").unwrap().is_some());
    assert!(reader.repo.get("tasks/junk").unwrap().is_none());
    owner.disconnect();
}

/// The PostgreSQL store (docs/design.md §12.5): a schema stored through one node binds another
/// at once — node 2 takes in what node 1 stored (its replica keeps the `_schema` changes) before
/// it checks a push.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_stored_through_one_postgres_node_binds_another() {
    const FAST: [&str; 4] = ["--push-rate", "100000", "--push-burst", "100000"];
    let pg = common::pg::Postgres::start("schema");
    let n1 = Server::node("schema-1", &pg.url, &FAST);
    let n2 = Server::node("schema-2", &pg.url, &FAST);
    let mut owner = founded_with_schema(&n1.url, "r").await;
    let me = identity(1);
    let heads = owner.repo.heads();
    let mut ws = session(&n2.url, "r", &me).await;
    let bad = forged(
        &me,
        heads.clone(),
        vec![put("tasks/bad", map! { "title" => 5 }.as_map())],
    );
    send(&mut ws, &push_of(&me, "r", vec![bad])).await;
    let (code, text) = expect_error(&mut ws, WAIT).await;
    assert_eq!(code, ErrorCode::Schema, "{text}");
    let mut ws = session(&n2.url, "r", &me).await;
    let good = forged(
        &me,
        heads,
        vec![put("tasks/good", map! { "title" => "fine" }.as_map())],
    );
    send(&mut ws, &push_of(&me, "r", vec![good.clone()])).await;
    assert_eq!(expect_ack(&mut ws).await, vec![good.0]);
    // Node 1 relays the valid task to its client, and nothing else.
    owner.settle(3).await;
    assert!(owner.repo.get("tasks/good").unwrap().is_some());
    assert!(owner.repo.get("tasks/bad").unwrap().is_none());
}
