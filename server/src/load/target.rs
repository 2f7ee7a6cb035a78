//! The servers under load: one node on the file store, or N nodes on one PostgreSQL
//! (`--store`), started from the binary beside this one (limits raised for the load, the
//! data directory temporary), or an existing server; their RSS and metrics, summed.

use crate::Scenario;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};

pub struct Target {
    pub url: String,
    pub addr: String,
    pub pid: u32,
    child: Option<Child>,
    data: Option<std::path::PathBuf>,
}

impl Target {
    pub fn existing(url: &str, pid: u32) -> Target {
        let addr = url.split("://").nth(1).unwrap_or(url).to_string();
        Target {
            url: url.to_string(),
            addr,
            pid,
            child: None,
            data: None,
        }
    }

    /// Start `ibexdb-server` from this executable's directory with limits sized for `s`: on
    /// PostgreSQL at `store`, else on files in a temporary directory.
    pub fn start(s: &Scenario, extra: &[String], store: Option<&str>, node: usize) -> Target {
        let exe = std::env::current_exe().expect("current exe");
        let bin = exe.with_file_name("ibexdb-server");
        let data = std::env::temp_dir().join(format!(
            "ibexdb-load-{}-{}-{node}",
            std::process::id(),
            s.name
        ));
        let _ = std::fs::remove_dir_all(&data);
        let conns = (s.connections + s.slow + 100).to_string();
        let at = match store {
            Some(url) => ["--store", url],
            None => ["--data", data.to_str().unwrap()],
        };
        let mut child = Command::new(&bin)
            .args(at)
            .args(["--listen", "127.0.0.1:0"])
            .args([
                "--max-connections",
                &conns,
                "--max-connections-per-ip",
                &conns,
                "--reserved-connections",
                "0",
            ])
            .args(["--push-rate", "100000", "--push-burst", "100000"])
            .args([
                "--push-bytes-rate",
                "1000000000",
                "--push-bytes-burst",
                "1000000000",
            ])
            .args(["--max-repos", &(s.repos + 10).to_string()])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start {}: {e} (build it: cargo build --release -p ibexdb-server)",
                    bin.display()
                )
            });
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line.trim().rsplit(' ').next().unwrap().to_string();
        assert!(
            !addr.is_empty(),
            "{} did not start (see its --help)",
            bin.display()
        );
        Target {
            url: format!("ws://{addr}"),
            addr,
            pid: child.id(),
            child: Some(child),
            data: Some(data),
        }
    }

    /// Resident memory in MiB (VmRSS).
    pub fn rss_mib(&self) -> f64 {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", self.pid)).unwrap_or_default();
        let kb: f64 = status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
        kb / 1024.0
    }

    /// One value from `GET /metrics` (0 when absent).
    pub fn metric(&self, name: &str) -> f64 {
        let Ok(mut s) = std::net::TcpStream::connect(&self.addr) else {
            return 0.0;
        };
        let _ = write!(s, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        let mut text = String::new();
        let _ = s.read_to_string(&mut text);
        text.lines()
            .find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0)
    }
}

/// The nodes of one scenario.
pub struct Cluster {
    pub nodes: Vec<Target>,
}

impl Cluster {
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.url.clone()).collect()
    }

    /// Resident memory of all nodes, MiB.
    pub fn rss_mib(&self) -> f64 {
        self.nodes.iter().map(Target::rss_mib).sum()
    }

    /// A metric summed over the nodes.
    pub fn metric(&self, name: &str) -> f64 {
        self.nodes.iter().map(|n| n.metric(name)).sum()
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            // SIGTERM: the server shuts down gracefully; then reap it.
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
            let _ = c.wait();
        }
        if let Some(d) = &self.data {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}
