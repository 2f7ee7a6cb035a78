//! End-to-end encrypted repositories through the real `ibexdb-server` over real WebSockets
//! (docs/design.md §6.8): members sync encrypted values through the server, which stores,
//! snapshots and relays them (initial sync of a later member included) without ever holding a
//! plaintext value: every byte of its data directory — and, on PostgreSQL, every row of its
//! tables and every file of the cluster — is searched for each test value, and none is found.
//! A plaintext repository on the same server is the control: its values are found.

mod common;
use common::pg::Postgres;
use common::*;
use ibexdb::{map, Client, MemStorage, Repo, RepoOptions, Role, Txn, Value};
use std::path::Path;
use std::time::{Duration, Instant};

fn peer(n: u8, repo: &str, encrypted: bool) -> Peer {
    let mut opts = RepoOptions::new(repo, Some(identity(n)), ibexdb::system_clock());
    opts.encrypted = encrypted;
    Peer {
        repo: Repo::open(MemStorage::new(), None, opts).unwrap(),
        client: Client::new(repo, "ws://unset.invalid/", 0, 0).unwrap(),
        ws: None,
        n,
        writes: 0,
        received: 0,
        acked: Vec::new(),
        pad: 0,
    }
}

/// The values written: distinctive strings in a title, a nested map, a list, a set, bytes.
fn canary(i: usize, who: &str) -> String {
    format!("canary-{who}-{i}-zq")
}

fn write(p: &mut Peer, who: &str, i: usize) {
    let mut t = Txn::new();
    let c = canary(i, who);
    t.put(
        &format!("notes/{who}{i}"),
        map! {
            "title" => c.as_str(),
            "n" => i as i64,
            "tags" => Value::set([format!("{c}-tag")]),
            "blob" => Value::from(format!("{c}-bytes").into_bytes()),
        }
        .as_map(),
    )
    .unwrap();
    p.repo.commit(t).unwrap();
}

/// Every file under `dir`, whole.
fn all_bytes(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let path = e.path();
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                stack.push(path);
            } else if ft.is_file() {
                if let Ok(b) = std::fs::read(&path) {
                    out.push((path.display().to_string(), b));
                }
            }
        }
    }
    out
}

fn find(files: &[(String, Vec<u8>)], needle: &str) -> Option<String> {
    let n = needle.as_bytes();
    files
        .iter()
        .find(|(_, b)| b.windows(n.len()).any(|w| w == n))
        .map(|(p, _)| p.clone())
}

async fn sync_until(peers: &mut [&mut Peer], total: usize) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while peers.iter().any(|p| p.repo.commit_count() < total) {
        assert!(
            Instant::now() < deadline,
            "the peers did not exchange their commits"
        );
        for p in peers.iter_mut() {
            p.step(Duration::from_millis(20)).await;
        }
    }
    for p in peers.iter_mut() {
        p.settle(total).await;
    }
}

fn title(p: &mut Peer, key: &str) -> Option<String> {
    match p.repo.get(key).unwrap()?.get("title")? {
        Value::String(s) => Some(s.as_str().to_string()),
        _ => None,
    }
}

/// Owner `a` and writer `b` exchange encrypted values through the server at `url`; a plaintext
/// repository's peer writes its control value. Returns the encrypted values written.
async fn run_team(url: &str, url2: &str) -> Vec<String> {
    const N: usize = 12;
    let mut a = peer(1, "secret", true);
    let mut b = peer(2, "secret", true);
    a.repo.grant(&identity(2).public(), Role::Writer).unwrap();
    for i in 0..N {
        write(&mut a, "a", i);
    }
    a.repo.seal().unwrap();
    a.connect(url).await;
    a.settle(1 + N).await;
    b.connect(url2).await;
    b.settle(1 + N).await;
    write(&mut b, "b", 0);
    b.repo.seal().unwrap();
    b.push().await;
    sync_until(&mut [&mut a, &mut b], N + 2).await;
    assert!(b.repo.decrypt_failures().is_empty());
    assert_eq!(title(&mut b, "notes/a3").unwrap(), canary(3, "a"));
    assert_eq!(title(&mut a, "notes/b0").unwrap(), canary(0, "b"));
    assert_eq!(a.repo.state_hash().unwrap(), b.repo.state_hash().unwrap());
    // A later member: granted (and given the keys) after the history was written, it reads
    // all of it from the server's initial sync.
    a.repo.grant(&identity(3).public(), Role::Reader).unwrap();
    a.repo.seal().unwrap();
    a.push().await;
    a.settle(N + 3).await;
    let mut c = peer(3, "secret", true);
    c.connect(url2).await;
    c.settle(N + 3).await;
    assert!(
        c.repo.decrypt_failures().is_empty(),
        "{:?}",
        c.repo.decrypt_failures()
    );
    for i in 0..N {
        assert_eq!(
            title(&mut c, &format!("notes/a{i}")).unwrap(),
            canary(i, "a")
        );
    }
    assert_eq!(title(&mut c, "notes/b0").unwrap(), canary(0, "b"));
    c.repo.verify().unwrap();
    // The control: a plaintext repository on the same server.
    let mut p = peer(4, "plain", false);
    let mut t = Txn::new();
    t.put("notes/x", map! {"title" => "control-plaintext-zq"}.as_map())
        .unwrap();
    p.repo.commit(t).unwrap();
    p.repo.seal().unwrap();
    p.connect(url).await;
    p.settle(1).await;
    let mut values = Vec::new();
    for i in 0..N {
        values.push(canary(i, "a"));
        values.push(format!("{}-tag", canary(i, "a")));
        values.push(format!("{}-bytes", canary(i, "a")));
    }
    values.push(canary(0, "b"));
    values.push("notes".into()); // the collection name is sealed too
    values.push("title".into()); // and the field names
    values
}

fn check_none(files: &[(String, Vec<u8>)], values: &[String]) {
    assert!(
        find(files, "control-plaintext-zq").is_some(),
        "the control value is not found: the search sees nothing"
    );
    for v in values {
        if v == "notes" || v == "title" {
            continue; // the control repository holds these in the clear
        }
        assert_eq!(find(files, v), None, "plaintext {v:?} found on the server");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_file_store_holds_no_plaintext_of_an_encrypted_repository() {
    // Snapshots after every push, so the server's snapshot files are searched too.
    let server = Server::fresh_with("e2e", &["--snapshot-tail-bytes", "1"]);
    let values = run_team(&server.url, &server.url).await;
    // A graceful stop writes the last snapshots; then every byte of the data directory.
    let mut server = server;
    unsafe { libc::kill(server.pid() as i32, libc::SIGTERM) };
    let _ = server.child.wait();
    let files = all_bytes(&server.data);
    assert!(
        files.iter().any(|(p, _)| p.ends_with("secret.snapshot")),
        "no snapshot of the encrypted repository was written: {:?}",
        files.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    check_none(&files, &values);
    // The encrypted repository's own files hold no collection or field name either.
    let own: Vec<_> = files
        .iter()
        .filter(|(p, _)| p.contains("secret."))
        .cloned()
        .collect();
    assert!(!own.is_empty());
    for v in ["notes", "title"] {
        assert_eq!(
            find(&own, v),
            None,
            "{v:?} in the encrypted repository's files"
        );
    }
    // After a restart, a newcomer's initial sync comes from the server's files alone.
    let server = server.restart();
    let mut d = peer(3, "secret", true);
    d.connect(&server.url).await;
    d.settle(15).await;
    assert_eq!(title(&mut d, "notes/a11").unwrap(), canary(11, "a"));
}

/// Every row of every table of the server's schema, as text (bytea as hex).
async fn all_rows(pg: &Postgres) -> String {
    let c = pg.client().await;
    let tables = c
        .query(
            "SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public'",
            &[],
        )
        .await
        .unwrap();
    let mut out = String::new();
    for t in tables {
        let name: String = t.get(0);
        let rows = c
            .query(&format!("SELECT t::text FROM {name} t"), &[])
            .await
            .unwrap();
        for r in rows {
            out.push_str(&r.get::<_, String>(0));
            out.push('\n');
        }
    }
    out
}

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgresql_holds_no_plaintext_of_an_encrypted_repository() {
    let pg = Postgres::start("e2e");
    let n1 = Server::node("e2e-1", &pg.url, &["--snapshot-tail-bytes", "1"]);
    let n2 = Server::node("e2e-2", &pg.url, &["--snapshot-tail-bytes", "1"]);
    let values = run_team(&n1.url, &n2.url).await;
    let mut n1 = n1;
    let mut n2 = n2;
    for n in [&mut n1, &mut n2] {
        unsafe { libc::kill(n.pid() as i32, libc::SIGTERM) };
        let _ = n.child.wait();
    }
    let rows = all_rows(&pg).await;
    assert!(
        rows.contains(&hex("control-plaintext-zq")),
        "the control value is not in the tables"
    );
    for v in &values {
        if v == "notes" || v == "title" {
            continue;
        }
        assert!(
            !rows.contains(&hex(v)) && !rows.contains(v.as_str()),
            "{v:?} in a table"
        );
    }
    let c = pg.client().await;
    c.batch_execute("CHECKPOINT").await.unwrap();
    let files = all_bytes(&pg.dir);
    check_none(&files, &values);
}

/// A writer of an encrypted repository pushes, bypassing its device, a commit whose data is
/// not sealed (§6.8): the server, which knows the flag from the root it stored, refuses it
/// (`DecryptError` `plaintext`) before storing or relaying anything, and the plaintext never
/// reaches its files. The same push to a plaintext repository is stored (the control).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_refuses_plaintext_data_in_an_encrypted_repository() {
    use ibexdb::{Commit, CommitId, Message, Seal};
    let server = Server::fresh("e2e-plain");
    for (repo, encrypted) in [("sealed", true), ("open", false)] {
        let mut a = peer(1, repo, encrypted);
        a.repo.grant(&identity(2).public(), Role::Writer).unwrap();
        a.repo.seal().unwrap();
        a.connect(&server.url).await;
        a.settle(1).await;
        let c = Commit {
            trusted: false,
            author: identity(2).public(),
            hlc: ibexdb::system_clock()() << 16,
            parents: a.repo.heads(),
            changes: vec![ibexdb::Change {
                collection: "notes".into(),
                id: "leak".into(),
                op: ibexdb::Op::Put(map! { "title" => "leaked-plaintext-zq" }.as_map()),
            }],
        };
        let bytes = c.encode();
        let id = CommitId::of(&bytes);
        let push = Message::Push {
            commits: vec![(id, bytes)],
            seals: vec![Seal::create(&identity(2), repo, &[id]).encode()],
        };
        let before = server.log_len(repo);
        let mut ws = socket(&server.url).await;
        hello_as(&mut ws, &server.url, repo, Some(&identity(2))).await;
        send(&mut ws, &push).await;
        if encrypted {
            let (_, text) = expect_error(&mut ws, Duration::from_secs(10)).await;
            assert!(
                text.contains("DecryptError") && text.contains("plaintext"),
                "{text}"
            );
            assert_eq!(
                server.log_len(repo),
                before,
                "the plaintext commit was stored"
            );
        } else {
            let deadline = Instant::now() + Duration::from_secs(10);
            while server.log_len(repo) == before {
                assert!(Instant::now() < deadline, "the control push was not stored");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
    let files = all_bytes(&server.data);
    let sealed: Vec<_> = files
        .into_iter()
        .filter(|(p, _)| p.contains("sealed."))
        .collect();
    assert!(!sealed.is_empty());
    assert_eq!(find(&sealed, "leaked-plaintext-zq"), None);
}
