//! A real PostgreSQL server of the test's own: a fresh cluster in a temporary directory
//! (`initdb`), listening on a free loopback port, run as the unprivileged user `postgres`
//! when the tests run as root (PostgreSQL refuses to run as root). Stopped and removed on
//! drop. The binaries are found in `IBEXDB_PG_BIN`, else the newest
//! `/usr/lib/postgresql/*/bin` (`make setup` installs Debian's `postgresql`).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub struct Postgres {
    pub dir: PathBuf,
    pub port: u16,
    /// `postgres://postgres@127.0.0.1:PORT/postgres`
    pub url: String,
    bin: PathBuf,
}

static CLUSTERS: AtomicU64 = AtomicU64::new(0);

/// The directory of `initdb`, `pg_ctl`, `postgres`.
pub fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("IBEXDB_PG_BIN") {
        return PathBuf::from(dir);
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((v, bin))
        })
        .collect();
    found.sort();
    found
        .pop()
        .map(|(_, b)| b)
        .expect("PostgreSQL not found: run `make setup` (Debian's postgresql) or set IBEXDB_PG_BIN")
}

fn is_root() -> bool {
    // SAFETY: getuid has no preconditions.
    unsafe { libc::getuid() == 0 }
}

/// A command run as `postgres` when we are root, else as ourselves.
fn as_owner(program: &Path) -> Command {
    if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

fn run(mut cmd: Command, what: &str) {
    let out = cmd.stdin(Stdio::null()).output().expect(what);
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

impl Postgres {
    /// initdb and start a new cluster.
    pub fn start(tag: &str) -> Postgres {
        let n = CLUSTERS.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("ibexdb-pg-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        if is_root() {
            run(
                {
                    let mut c = Command::new("chown");
                    c.args(["postgres:postgres", dir.to_str().unwrap()]);
                    c
                },
                "chown the cluster directory",
            );
        }
        let bin = bin_dir();
        let mut initdb = as_owner(&bin.join("initdb"));
        initdb.args(["-D", dir.join("data").to_str().unwrap()]);
        initdb.args(["-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync"]);
        run(initdb, "initdb");
        let port = free_port();
        let pg = Postgres {
            url: format!("postgres://postgres@127.0.0.1:{port}/postgres"),
            dir,
            port,
            bin,
        };
        pg.resume();
        pg
    }

    fn ctl(&self) -> Command {
        let mut c = as_owner(&self.bin.join("pg_ctl"));
        c.args(["-D", self.dir.join("data").to_str().unwrap()]);
        c
    }

    /// Start (again) on the same port and data; waits until it accepts connections.
    pub fn resume(&self) {
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c max_connections=200",
            self.port,
            self.dir.display()
        );
        let t = Instant::now();
        loop {
            let mut c = self.ctl();
            c.args([
                "-w",
                "-t",
                "30",
                "-l",
                self.dir.join("log").to_str().unwrap(),
            ]);
            c.args(["-o", &opts, "start"]);
            let ok = c
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .status()
                .unwrap();
            if ok.success() {
                return;
            }
            assert!(
                t.elapsed() < Duration::from_secs(30),
                "PostgreSQL did not start: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Stop now: connections are cut (as when the database goes away under load).
    pub fn stop(&self) {
        let mut c = self.ctl();
        c.args(["-w", "-m", "fast", "stop"]);
        run(c, "pg_ctl stop");
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
    }

    /// A client connection of the test's own.
    pub async fn client(&self) -> tokio_postgres::Client {
        let (client, conn) = tokio_postgres::connect(&self.url, tokio_postgres::NoTls)
            .await
            .expect("connect to the test's PostgreSQL");
        tokio::spawn(conn);
        client
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let mut c = self.ctl();
        c.args(["-m", "immediate", "stop"]);
        let _ = c
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
