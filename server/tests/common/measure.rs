//! What a hostile client cost the server, measured from outside: resident memory of the
//! process and bytes on disk under its data directory.

use std::path::Path;

/// Resident memory (VmRSS) of process `pid`, in bytes.
pub fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

/// Bytes of every file under `dir` (recursively; 0 if it does not exist).
pub fn disk_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => disk_bytes(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}

/// Memory and disk before an attack; `grew` says by how much each grew since.
pub struct Baseline {
    pid: u32,
    rss: u64,
    disk: u64,
}

impl Baseline {
    pub fn take(pid: u32, dir: &Path) -> Baseline {
        Baseline {
            pid,
            rss: rss(pid),
            disk: disk_bytes(dir),
        }
    }

    /// (RSS growth, disk growth) in bytes, never negative.
    pub fn grew(&self, dir: &Path) -> (u64, u64) {
        (
            rss(self.pid).saturating_sub(self.rss),
            disk_bytes(dir).saturating_sub(self.disk),
        )
    }
}
