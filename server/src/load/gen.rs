//! Signed pushes made ahead of the measurement, with the core. Each repository `load-R` is
//! founded by an owner key of its own, which lets its writers write and anyone read (the
//! access list, docs/design.md §6.4); each writer has its own `Identity` and `Repo` over
//! `MemStorage` that starts from that founding history, and each push is `batch` commits
//! sealed under one seal.

use bytes::Bytes;
use ibexdb::{map, system_clock, CommitId, Identity, MemStorage, Message, Repo, RepoOptions};
use ibexdb::{Role, Txn};

/// One encoded `Push` and the id of its first commit (the latency probe's key).
pub struct Push {
    pub first: CommitId,
    pub commits: usize,
    pub bytes: Bytes,
}

/// A repository's founding history: its owner, and the commits and seals that found it.
pub struct Founding {
    pub owner: Identity,
    pub push: Bytes,
    commits: Vec<(CommitId, Vec<u8>)>,
    seals: Vec<Vec<u8>>,
}

/// Repository `r` of a run tagged `tag` (runs against one PostgreSQL keep apart by their tags).
pub fn repo_name(tag: &str, r: usize) -> String {
    if tag.is_empty() {
        format!("load-{r}")
    } else {
        format!("load-{tag}-{r}")
    }
}

fn identity(n: u64, tag: u8) -> Identity {
    let mut seed = [0u8; 48];
    seed[..8].copy_from_slice(&(n + 1).to_le_bytes());
    seed[8] = tag;
    Identity::from_entropy(&seed)
}

/// Writer `w`'s key.
pub fn writer_identity(w: usize) -> Identity {
    identity(w as u64, 0x4c)
}

fn repo(name: &str, who: Identity) -> Repo<MemStorage> {
    let opts = RepoOptions::new(name, Some(who), system_clock());
    Repo::open(MemStorage::new(), None, opts).expect("memory repo")
}

/// Repository `r`, founded by its owner: public read, and write for `writers`.
pub fn found(tag: &str, r: usize, writers: impl Iterator<Item = usize>) -> Founding {
    let owner = identity(r as u64, 0x0f);
    let mut repo = repo(&repo_name(tag, r), owner.clone());
    repo.set_public(true, false).expect("public read");
    for w in writers {
        repo.grant(&writer_identity(w).public(), Role::Writer)
            .expect("grant");
    }
    repo.seal().expect("seal");
    let (commits, seals) = repo.export().expect("export");
    let push = Message::Push {
        commits: commits.clone(),
        seals: seals.clone(),
    };
    Founding {
        owner,
        push: Bytes::from(push.encode()),
        commits,
        seals,
    }
}

/// `pushes` pushes of `batch` commits for writer `w` of repository `r`.
pub fn pushes(
    tag: &str,
    w: usize,
    r: usize,
    base: &Founding,
    pushes: usize,
    batch: usize,
    pad: usize,
) -> Vec<Push> {
    let mut repo = repo(&repo_name(tag, r), writer_identity(w));
    repo.receive(&base.commits, &base.seals)
        .expect("the founding history");
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
