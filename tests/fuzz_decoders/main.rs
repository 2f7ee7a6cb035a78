//! A bounded fuzz run in the normal test suite (issue 23): the wire decoder
//! (`Message::decode`), the commit and value decoder (`Commit::decode`) and `Repo::receive`
//! run on inputs mutated from a checked-in corpus (`tests/fuzz-corpus/`). A panic fails, and so
//! does a decode that allocates more than `FACTOR` times its input (plus `SLACK` for the
//! fixed costs), measured by a counting global allocator on this thread.
//!
//! `FUZZ_CASES=N` sets the mutations per corpus file (default 1000), `FUZZ_SEED=S` the seed
//! (each failure prints the seed and the input's file); `FUZZ_WRITE_CORPUS=1` rewrites the
//! corpus from the core (run it when a format changes).

mod alloc;
mod amplification;

use ibexdb::{
    map, system_clock, Commit, CommitId, Error, Identity, MemStorage, Message, Repo, RepoOptions,
    Rights, Seal, Txn,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

/// Most bytes allocated at the peak of a decode per byte of input.
const FACTOR: isize = 8;
/// Fixed costs of a decode (a repository's maps, an error's text…).
const SLACK: isize = 64 << 10;

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-corpus")
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The corpus as the core makes it: a real signed commit, its seal, and every message type.
fn make_corpus() -> Vec<(String, Vec<u8>)> {
    let id = Identity::from_entropy(&[3; 48]);
    let opts = RepoOptions::new("r", Some(id), system_clock());
    let mut repo = Repo::open(MemStorage::new(), None, opts).unwrap();
    let mut t = Txn::new();
    let list = ibexdb::Value::List(vec![ibexdb::Value::Null, ibexdb::Value::Bool(true)]);
    t.put(
        "items/a",
        map! { "n" => 1, "s" => "text", "l" => list }.as_map(),
    )
    .unwrap();
    repo.commit(t).unwrap();
    let mut t = Txn::new();
    let bytes = ibexdb::Value::from(&[0u8, 1, 0xff][..]);
    t.put("items/b", map! { "n" => 2.5, "b" => bytes }.as_map())
        .unwrap();
    repo.commit(t).unwrap();
    repo.seal().unwrap();
    let (commits, seals) = repo.export().unwrap();
    let mut out = vec![
        ("commit-1.bin".to_string(), commits[0].1.clone()),
        ("commit-2.bin".to_string(), commits[1].1.clone()),
        ("seal.bin".to_string(), seals[0].clone()),
    ];
    // A patch with an attach, a detach and a set edit (docs/design.md §6.7), and the root of
    // an encrypted repository (`_keys` items and a sealed `_e` chunk, §6.8).
    let mut t = Txn::new();
    let a = ibexdb::Attachment {
        hash: [7; 32],
        size: 1234,
        media_type: "image/png".into(),
    };
    t.attach("items/a", "photo.png", &a).unwrap();
    t.detach("items/a", "old.txt").unwrap();
    t.set_add("items/a", "tags", ["x", "y"]).unwrap();
    repo.commit(t).unwrap();
    repo.seal().unwrap();
    let (more, _) = repo.export().unwrap();
    out.push(("commit-attach.bin".to_string(), more[2].1.clone()));
    let mut eo = RepoOptions::new("r", Some(Identity::from_entropy(&[3; 48])), system_clock());
    eo.encrypted = true;
    let mut e = Repo::open(MemStorage::new(), None, eo).unwrap();
    let mut t = Txn::new();
    t.put("items/s", map! { "secret" => "text" }.as_map())
        .unwrap();
    e.commit(t).unwrap();
    let (ec, _) = e.export().unwrap();
    out.push(("commit-encrypted.bin".to_string(), ec[0].1.clone()));
    let ids: Vec<CommitId> = commits.iter().map(|c| c.0).collect();
    let msgs = [
        (
            "push",
            Message::Push {
                commits: commits.clone(),
                seals: seals.clone(),
            },
        ),
        (
            "commits",
            Message::Commits {
                from: 0,
                to: 2,
                commits,
                seals,
            },
        ),
        ("ack", Message::Ack { ids }),
        (
            "hello",
            Message::Hello {
                repo: "r".into(),
                cursor: 7,
                auth: None,
                create: true,
            },
        ),
        (
            "welcome",
            Message::Welcome {
                repo: "r".into(),
                head: 2,
                rights: Rights {
                    read: true,
                    write: true,
                    administer: false,
                },
            },
        ),
        (
            "challenge",
            Message::Challenge {
                nonce: [9; 32],
                server_time_ms: 1,
            },
        ),
        (
            "error",
            Message::error(&Error::Limit {
                what: "x".into(),
                detail: "y".into(),
            }),
        ),
    ];
    for (name, m) in msgs {
        out.push((format!("msg-{name}.bin"), m.encode()));
    }
    out
}

fn corpus() -> Vec<(String, Vec<u8>)> {
    let dir = corpus_dir();
    if std::env::var_os("FUZZ_WRITE_CORPUS").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        for (name, bytes) in make_corpus() {
            std::fs::write(dir.join(name), bytes).unwrap();
        }
    }
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .expect("tests/fuzz-corpus (FUZZ_WRITE_CORPUS=1 makes it)")
        .flatten()
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            (name, std::fs::read(e.path()).unwrap())
        })
        .collect();
    files.sort();
    assert!(files.len() >= 10, "the corpus has its files");
    files
}

/// One mutation of `b`: flip, set, insert, delete, duplicate a run, or write a large varint.
fn mutate(rng: &mut StdRng, b: &mut Vec<u8>) {
    let at = |rng: &mut StdRng, b: &Vec<u8>| rng.random_range(0..=b.len());
    match rng.random_range(0..7) {
        0 if !b.is_empty() => {
            let i = rng.random_range(0..b.len());
            b[i] ^= 1 << rng.random_range(0..8);
        }
        1 if !b.is_empty() => {
            let i = rng.random_range(0..b.len());
            b[i] = [0, 1, 0x7f, 0x80, 0xff, 5, 6][rng.random_range(0..7)];
        }
        2 => {
            let i = at(rng, b);
            b.insert(i, rng.random());
        }
        3 if !b.is_empty() => {
            let i = rng.random_range(0..b.len());
            let n = rng.random_range(1..=16).min(b.len() - i);
            b.drain(i..i + n);
        }
        4 if !b.is_empty() => {
            let i = rng.random_range(0..b.len());
            let n = rng.random_range(1..=64).min(b.len() - i);
            let run = b[i..i + n].to_vec();
            let j = at(rng, b);
            b.splice(j..j, run);
        }
        5 => {
            let i = at(rng, b);
            let v: u64 = rng.random::<u64>() >> rng.random_range(0..64);
            let mut var = Vec::new();
            let mut x = v;
            loop {
                let byte = (x & 0x7f) as u8;
                x >>= 7;
                if x == 0 {
                    var.push(byte);
                    break;
                }
                var.push(byte | 0x80);
            }
            b.splice(i..i, var);
        }
        _ => {
            let i = at(rng, b);
            let n = rng.random_range(1..=256);
            b.splice(i..i, std::iter::repeat_n(rng.random::<u8>() & 7, n));
        }
    }
}

/// Run `f` on `input`: it must not panic nor allocate past the bound.
fn check(what: &str, seed: u64, input: &[u8], f: &mut dyn FnMut(&[u8])) {
    let base = alloc::reset_peak();
    let r = catch_unwind(AssertUnwindSafe(|| f(input)));
    let grew = alloc::peak() - base;
    assert!(
        r.is_ok(),
        "{what}: panicked on input {:02x?} (seed {seed})",
        input
    );
    let bound = FACTOR * input.len() as isize + SLACK;
    assert!(
        grew <= bound,
        "{what}: allocated {grew} bytes for {} bytes of input (bound {bound}; seed {seed}): {:02x?}",
        input.len(),
        &input[..input.len().min(512)]
    );
}

/// The server's decode ([`Commit::decode_access_only`]): within the bound, and it accepts
/// exactly what the full decoder and a received commit's checks accept.
fn check_access_only(what: &str, seed: u64, input: &[u8]) {
    let name = format!("Commit::decode_access_only {what}");
    let mut got = None;
    check(&name, seed, input, &mut |b| {
        got = Some(Commit::decode_access_only(b).map(|(_, id)| id));
    });
    let full = Commit::decode(input).map(|(_, id)| id);
    // A commit the full decoder accepts may still break a received write's rules (a nested
    // field name, an item's size), which the access-only decode checks at once.
    match (got.unwrap(), full) {
        (Ok(a), Ok(f)) => assert_eq!(a, f, "{name}: the same id (seed {seed})"),
        (Err(e), Ok(_)) => assert!(
            !matches!(e, Error::Decode { .. }),
            "{name}: refused what decodes: {e} (seed {seed})"
        ),
        (Ok(_), Err(e)) => panic!("{name}: accepted what does not decode: {e} (seed {seed})"),
        (Err(_), Err(_)) => {}
    }
}

fn receiver() -> Repo<MemStorage> {
    let opts = RepoOptions::new("r", None, system_clock());
    Repo::open(MemStorage::new(), None, opts).unwrap()
}

#[test]
fn decoders_and_receive_survive_mutated_input_within_their_allocation_bound() {
    let cases = env_u64("FUZZ_CASES", 1000);
    let seed0 = env_u64("FUZZ_SEED", 23);
    let files = corpus();
    let (mut runs, mut received) = (0, 0);
    for (fi, (name, bytes)) in files.iter().enumerate() {
        let seed = seed0.wrapping_mul(1000).wrapping_add(fi as u64);
        let mut rng = StdRng::seed_from_u64(seed);
        let mut input = bytes.clone();
        for case in 0..cases {
            if case % 8 == 0 {
                input = bytes.clone();
            }
            // The first case of a commit file is the commit itself (the whole `receive` path,
            // storage included); the others are mutations.
            let whole = case == 0 && name.starts_with("commit");
            for _ in 0..rng.random_range(1..=4) {
                if !whole {
                    mutate(&mut rng, &mut input);
                }
            }
            let what = format!("{name} case {case}");
            check(&format!("Message::decode {what}"), seed, &input, &mut |b| {
                let _ = Message::decode(b);
            });
            check(&format!("Commit::decode {what}"), seed, &input, &mut |b| {
                let _ = Commit::decode(b);
            });
            check_access_only(&what, seed, &input);
            check(&format!("Seal::decode {what}"), seed, &input, &mut |b| {
                let _ = Seal::decode(b);
            });
            // A mutated commit that still decodes, sealed again by its key so that `receive`
            // goes past the signature checks (the first 40 per file: signing is slow).
            if name.starts_with("commit") && received < 40 * (fi as u64 + 1) {
                if let Ok((_, id)) = Commit::decode(&input) {
                    received += 1;
                    let seal = Seal::create(&Identity::from_entropy(&[3; 48]), "r", &[id]);
                    let (commits, seals) = (vec![(id, input.clone())], vec![seal.encode()]);
                    let mut repo = receiver();
                    check(&format!("Repo::receive {what}"), seed, &input, &mut |_| {
                        let _ = repo.receive(&commits, &seals);
                    });
                }
            }
            // `receive` of what a push carries (most mutations fail to decode first). Its
            // repository is made before the measurement.
            if let Ok(Message::Push { commits, seals }) = Message::decode(&input) {
                received += 1;
                let mut repo = receiver();
                check(&format!("Repo::receive {what}"), seed, &input, &mut |_| {
                    let _ = repo.receive(&commits, &seals);
                });
            }
            runs += 1;
        }
    }
    eprintln!(
        "{runs} mutated inputs over {} corpus files; {received} decoded as pushes and went through receive",
        files.len()
    );
}

/// Known bounds the fuzzer found: a list of empty seals, and seals shorter than the shortest.
#[test]
fn seal_lists_are_bounded_by_the_shortest_seal() {
    let m = Message::Push {
        commits: vec![],
        seals: vec![vec![]; 1 << 16],
    };
    let bytes = m.encode();
    check("empty seals", 0, &bytes, &mut |b| {
        assert!(Message::decode(b).is_err());
    });
    let m = Message::Push {
        commits: vec![],
        seals: vec![vec![2; Seal::MIN_BYTES - 1]; 100],
    };
    assert!(Message::decode(&m.encode()).is_err());
}
