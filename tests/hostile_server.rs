//! A hostile sync server against a client (attack34): the core's `Client` and a `Repo` opened
//! with the options a browser or Node replica gets (`RepoOptions::new`, as
//! `bindings/wasm/src/engine/mod.rs` opens it), fed `Commits` messages the way a server sends
//! them. An honest server sends commits in sequence order, each after its parents; a hostile
//! one can send commits whose parents never come (signed by keys it made up: a seal verifies
//! for any key), which the replica parks in memory, encoded, waiting for those parents.

use ibexdb::{
    map, system_clock, Change, Client, Commit, CommitId, Identity, MemStorage, Message, Op, Repo,
    RepoOptions, Seal,
};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            LIVE.fetch_add(l.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            LIVE.fetch_sub(l.size(), Ordering::Relaxed);
            LIVE.fetch_add(new, Ordering::Relaxed);
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// A `Commits` message (sequences `from + 1 ..= from + n`) of `n` commits by a key the server
/// made up, each with a parent that exists nowhere and ~`pad` bytes of value, with their seal.
fn orphans(repo: &str, from: u64, n: usize, pad: usize, tag: u64) -> Message {
    let forger = Identity::from_entropy(&[0x5a; 48]);
    let mut commits = Vec::new();
    for i in 0..n {
        let mut missing = [0u8; 32];
        missing[..8].copy_from_slice(&tag.to_le_bytes());
        missing[8..16].copy_from_slice(&(i as u64).to_le_bytes());
        let c = Commit {
            trusted: false,
            author: forger.public(),
            hlc: now_ms() << 16,
            parents: vec![CommitId(missing)],
            changes: vec![Change {
                collection: "items".into(),
                id: format!("o{tag}-{i}"),
                op: Op::Put(map! { "pad" => "x".repeat(pad).as_str() }.as_map()),
            }],
        };
        let bytes = c.encode();
        commits.push((CommitId::of(&bytes), bytes));
    }
    let ids: Vec<CommitId> = commits.iter().map(|(id, _)| *id).collect();
    Message::Commits {
        from,
        to: from + n as u64,
        commits,
        seals: vec![Seal::create(&forger, repo, &ids).encode()],
    }
}

/// A hostile server cannot make a replica hold everything it sends: 96 messages of 1 MiB of
/// orphans (commits whose parents never come). Before, all 96 MiB were parked in the replica's
/// memory (`RepoOptions::new` left `max_pending_bytes` unbounded, and the wasm engine of the
/// browser and Node opens its repository with it); now at most
/// `DEFAULT_MAX_PENDING_BYTES` (64 MiB) are, and the messages past it are refused with a
/// `LimitError` (the sync driver drops the connection).
#[test]
fn a_hostile_server_cannot_make_a_replica_hold_unbounded_orphans() {
    let name = "victim";
    let me = Identity::from_entropy(&[3; 48]);
    let mut repo = Repo::open(
        MemStorage::new(),
        None,
        RepoOptions::new(name, Some(me), system_clock()),
    )
    .unwrap();
    let mut client = Client::new(name, "ws://hostile.invalid/", 0, 0).unwrap();
    client.connect();
    client
        .handle(
            &mut repo,
            Message::Challenge {
                nonce: [7; ibexdb::NONCE_LEN],
                server_time_ms: now_ms(),
            },
        )
        .unwrap();
    assert!(matches!(
        client.outgoing(&mut repo).unwrap(),
        Some(Message::Hello { .. })
    ));
    client
        .handle(
            &mut repo,
            Message::Welcome {
                repo: name.into(),
                head: 1 << 40,
                rights: ibexdb::Rights {
                    read: true,
                    write: false,
                    administer: false,
                },
            },
        )
        .unwrap();
    let before = LIVE.load(Ordering::Relaxed);
    let (mut sent, mut cursor, mut refused) = (0usize, 0u64, 0usize);
    for m in 0..96u64 {
        let msg = orphans(name, cursor, 64, 16 << 10, m);
        sent += msg.encode().len();
        match client.handle(&mut repo, msg) {
            Ok(_) => cursor = client.cursor(),
            Err(_) => refused += 1,
        }
    }
    let grew = LIVE.load(Ordering::Relaxed).saturating_sub(before);
    eprintln!(
        "a hostile server sent {sent} bytes of orphans: the replica holds {grew} bytes more, {refused} messages refused"
    );
    assert_eq!(repo.commit_count(), 0, "no orphan was applied");
    assert!(refused > 0, "past the bound, messages are refused");
    let bound = ibexdb::DEFAULT_MAX_PENDING_BYTES;
    assert!(
        grew < bound + bound / 4 + (4 << 20),
        "the replica parks what a hostile server sends: {grew} bytes for {sent} sent"
    );
}
