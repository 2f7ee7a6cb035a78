//! The benchmark's items (the DESIGN.md shape) and repositories, in memory or in files.

use ibexdb::FileStorage;
use ibexdb::{system_clock, Durability};
use ibexdb::{Identity, Map, Repo, RepoOptions, Storage, Txn, Value};
use serde_json::json;
use std::path::{Path, PathBuf};

pub const COLL: &str = "items";
pub const TXN: usize = 1000;

pub fn key(i: u64) -> String {
    format!("{COLL}/item{i:08}")
}

pub fn item(i: u64) -> Map {
    let mut m = Map::new();
    m.insert("title".into(), Value::from(format!("Item {i}")));
    m.insert("count".into(), Value::from(i as i64));
    m.insert(
        "tags".into(),
        Value::set([format!("tag {i}"), format!("category {}", i % 5)]),
    );
    m
}

/// The same item as plain JSON (the set as an array), as an app would hold it.
pub fn item_json_len(i: u64) -> usize {
    json!({"title": format!("Item {i}"), "count": i, "tags": [format!("tag {i}"), format!("category {}", i % 5)]})
        .to_string()
        .len()
}

pub fn ident() -> Identity {
    Identity::from_entropy(&[1; 48])
}

pub fn opts() -> RepoOptions {
    RepoOptions::new("bench", Some(ident()), system_clock())
}

pub struct Tmp(PathBuf);
impl Tmp {
    pub fn new(name: &str) -> Tmp {
        let p =
            std::env::temp_dir().join(format!("ibexdb-core-bench-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Tmp(p)
    }
    pub fn log(&self) -> FileStorage {
        FileStorage::open(self.0.join("log")).unwrap()
    }
    pub fn snap(&self) -> FileStorage {
        FileStorage::open(self.0.join("snapshot")).unwrap()
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
}
impl Drop for Tmp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn prebuilt(from: u64, n: u64) -> Vec<(String, Map)> {
    (from..from + n).map(|i| (key(i), item(i))).collect()
}

/// Commit `items` in transactions of `per`; flush after each when `flush`.
pub fn load<S: Storage>(repo: &mut Repo<S>, items: Vec<(String, Map)>, per: usize, flush: bool) {
    let mut it = items.into_iter().peekable();
    while it.peek().is_some() {
        let mut t = Txn::new();
        for (k, m) in it.by_ref().take(per) {
            t.put(&k, m).unwrap();
        }
        let d = if flush {
            Durability::Flush
        } else {
            Durability::Relaxed
        };
        repo.commit_with(t, d).unwrap();
    }
}
