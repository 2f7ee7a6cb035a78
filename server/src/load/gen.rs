//! Signed pushes made ahead of the measurement, with the core: each writer has its own
//! `Identity` and `Repo` over `MemStorage`; each push is `batch` commits sealed under one seal.

use bytes::Bytes;
use ibexdb::{map, system_clock, CommitId, Identity, MemStorage, Message, Repo, RepoOptions, Txn};

/// One encoded `Push` and the id of its first commit (the latency probe's key).
pub struct Push {
    pub first: CommitId,
    pub commits: usize,
    pub bytes: Bytes,
}

/// `pushes` pushes of `batch` commits for writer `w`.
pub fn pushes(w: usize, pushes: usize, batch: usize, pad: usize) -> Vec<Push> {
    let mut seed = [0u8; 48];
    seed[..8].copy_from_slice(&(w as u64 + 1).to_le_bytes());
    seed[8] = 0x4c;
    let opts = RepoOptions::new(Some(Identity::from_entropy(&seed)), system_clock());
    let mut repo = Repo::open(MemStorage::new(), None, opts).expect("memory repo");
    let filler = "x".repeat(pad);
    let mut out = Vec::with_capacity(pushes);
    for p in 0..pushes {
        let start = repo.commit_count();
        let mut ids = Vec::with_capacity(batch);
        for i in 0..batch {
            let mut t = Txn::new();
            let key = format!("items/w{w}-{p}-{i}");
            t.put(
                &key,
                map! { "w" => w as i64, "n" => i as i64, "pad" => filler.as_str() }.as_map(),
            )
            .expect("put");
            ids.push(repo.commit(t).expect("commit").expect("a change"));
        }
        repo.seal().expect("seal");
        let commits: Vec<(CommitId, Vec<u8>)> = (start..repo.commit_count())
            .zip(ids)
            .map(|(i, id)| (id, repo.commit_bytes_at(i).expect("bytes")))
            .collect();
        let seal = repo.seal_bytes(repo.seal_count() - 1).expect("seal bytes");
        let first = commits[0].0;
        let m = Message::Push {
            commits,
            seals: vec![seal],
        };
        out.push(Push {
            first,
            commits: batch,
            bytes: Bytes::from(m.encode()),
        });
    }
    out
}
