//! Operating the server: `--help`, TLS (`wss://`), the health and metrics endpoints, and
//! graceful shutdown on SIGTERM during pushes.

mod common;
use common::*;
use ibexdb::{ClientEvent, ErrorCode};
use std::time::{Duration, Instant};

#[test]
fn help_documents_every_flag() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ibexdb-server"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for flag in [
        "--data",
        "--listen",
        "--tls-cert",
        "--max-connections",
        "--queue-bytes",
        "--idle-timeout-ms",
        "--max-repos",
        "--message-timeout-ms",
        "--reserved-connections",
        "--max-parked-bytes",
        "--session-unknown-sealed-bytes",
        "--max-waiting-ms",
    ] {
        assert!(text.contains(flag), "{flag} missing from --help:\n{text}");
    }
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_ibexdb-server"))
        .args(["--data", "x", "--no-such-flag"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wss_clients_sync_over_tls() {
    let dir = Server::dir("tls");
    std::fs::create_dir_all(&dir).unwrap();
    let key = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let (cert, keyfile) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, key.cert.pem()).unwrap();
    std::fs::write(&keyfile, key.signing_key.serialize_pem()).unwrap();
    let args = [
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        keyfile.to_str().unwrap(),
    ];
    let server = Server::start_with(dir.join("data"), &args);
    assert!(server.url.starts_with("wss://"));
    let tls = tls_connector(key.cert.der());
    let mut team = Peer::team("secure", &[1, 2]).into_iter();
    let (mut a, mut b) = (team.next().unwrap(), team.next().unwrap());
    for _ in 0..3 {
        a.write();
    }
    a.connect_tls(&server.url, &tls).await;
    a.settle(4).await;
    b.write();
    b.connect_tls(&server.url, &tls).await;
    b.settle(5).await;
    a.settle(5).await;
    assert_eq!(a.repo.state_hash().unwrap(), b.repo.state_hash().unwrap());
    // A plain ws:// client cannot speak to the TLS listener.
    assert!(try_socket(&server.url.replace("wss", "ws"), None)
        .await
        .is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_and_metrics_answer_over_plain_http() {
    let server = Server::fresh("http");
    let (status, body) = server.http_get("/healthz");
    assert_eq!(
        (status.as_str(), body.as_str()),
        ("HTTP/1.1 200 OK", "ok\n")
    );
    assert!(server.http_get("/nope").0.contains("404"));
    let mut a = Peer::new(1, "m");
    for _ in 0..4 {
        a.write();
    }
    a.connect(&server.url).await;
    a.settle(4).await;
    let (_, text) = server.http_get("/metrics");
    for name in [
        "ibexdb_connections 1",
        "ibexdb_repositories_open 1",
        "ibexdb_commits_stored_total 4",
        "ibexdb_queue_drops_total 0",
        "ibexdb_commits_refused_total{code=\"2\",reason=\"Signature\"} 0",
        "# TYPE ibexdb_fsync_seconds histogram",
    ] {
        assert!(text.contains(name), "{name} missing from\n{text}");
    }
    assert!(server.metric("ibexdb_fsync_seconds_count") >= 1.0);
    let log = server.log_text();
    assert!(
        log.contains("event=conn_open") && log.contains("event=repo_open repo=m"),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_during_pushes_keeps_acked_commits_and_exits_0() {
    let fast = ["--push-rate", "100000", "--push-burst", "100000"];
    let mut server = Server::fresh_with("sigterm", &fast);
    let url = server.url.clone();
    let mut tasks = Vec::new();
    for mut p in Peer::team("term", &[1, 2, 3]) {
        let url = url.clone();
        tasks.push(tokio::spawn(async move {
            p.connect(&url).await;
            let deadline = Instant::now() + Duration::from_secs(20);
            let told = loop {
                assert!(Instant::now() < deadline, "never told about the shutdown");
                p.write();
                if p.client.welcomed() {
                    p.push().await;
                }
                match p.event(Duration::from_millis(2)).await {
                    Some(ClientEvent::ServerError {
                        code,
                        name,
                        message,
                        ..
                    }) if code == ErrorCode::Unavailable => {
                        break (code, format!("{name}: {message}"))
                    }
                    _ => continue,
                }
            };
            (p, told)
        }));
    }
    tokio::time::sleep(Duration::from_millis(1000)).await;
    send_signal(server.pid(), "TERM");
    let status = server.child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "clean exit on SIGTERM");
    let mut acked = Vec::new();
    for t in tasks {
        let (p, (code, text)) = t.await.unwrap();
        assert_eq!(code, ErrorCode::Unavailable, "{text}");
        assert!(text.contains("server shutting down"), "{text}");
        acked.extend(p.acked);
    }
    assert!(!acked.is_empty());
    let log = server.log_text();
    assert!(
        log.contains("event=snapshot repo=term") || log.contains("event=repo_close repo=term"),
        "{log}"
    );
    let server = server.restart();
    let mut fresh = Peer::new(9, "term");
    fresh.catch_up(&server.url).await;
    for id in &acked {
        assert!(
            fresh.repo.has_commit(id),
            "acknowledged commit {} lost",
            id.to_hex()
        );
    }
    let open = server.log_text();
    assert!(
        open.contains("from_snapshot=true"),
        "the shutdown snapshot is used:\n{open}"
    );
}

/// Send a signal with kill(1).
fn send_signal(pid: u32, sig: &str) {
    let ok = std::process::Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

/// The load generator runs end to end on a small load and writes its JSON (the full run and
/// its figures: docs/design.md §12.3).
#[test]
fn load_generator_smoke() {
    let json = Server::dir("load").with_extension("json");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ibexdb-load"))
        .args([
            "--connections",
            "40",
            "--writers",
            "4",
            "--repos",
            "2",
            "--batch",
            "20",
        ])
        .args([
            "--seconds",
            "1",
            "--slow",
            "4",
            "--slow-seconds",
            "1",
            "--slow-rate",
            "400",
        ])
        .args(["--json", json.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("stored/s") && text.contains("slow-readers"),
        "{text}"
    );
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let rows = doc["results"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["connections_held"], 40);
    assert!(rows[0]["commits_stored"].as_u64().unwrap() > 0);
    assert!(rows[0]["commits_relayed"].as_u64().unwrap() > 0);
}
