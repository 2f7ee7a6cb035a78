//! Crash consistency of a repository: a fault-injecting backend separates written from flushed
//! bytes; for every point a power cut could hit, the image it leaves must reopen with every
//! flushed commit present, nothing corrupt, the torn tail gone, and the state equal to the
//! state the writer had after exactly the commits that survived. Also: snapshots torn
//! mid-write, bit flips, repair, and snapshot + tail == full replay.

mod common;
use common::*;
use ibexdb::testing::FaultStorage;
use ibexdb::{map, Error, MemStorage, Recovery, Repo, RepoOptions, Txn};

fn opts(signed_mode: bool) -> RepoOptions {
    if signed_mode {
        signed(1)
    } else {
        trusted(1)
    }
}

fn random_txn(rng: &mut Rng, r: &mut Repo<FaultStorage>) -> Txn {
    let mut t = Txn::new();
    for _ in 0..1 + rng.below(4) {
        let i = rng.below(20);
        let key = format!("items/{i}");
        match rng.below(6) {
            0 => {
                t.delete(&key).unwrap();
            }
            1 if r.get(&key).unwrap().is_some() => {
                t.update(&key, map! {"count" => rng.below(1000) as i64}.as_map())
                    .unwrap();
            }
            2 if matches!(
                r.get(&key).unwrap().and_then(|m| m.get("tags")),
                Some(ibexdb::Value::Set(_))
            ) =>
            {
                t.set_add(&key, "tags", [format!("x{}", rng.below(4))])
                    .unwrap();
            }
            _ => {
                // Values of varied size so frames straddle write boundaries differently.
                let mut m = item(i);
                m.insert("pad".into(), "p".repeat(rng.below(3000) as usize).into());
                t.put(&key, m).unwrap();
            }
        }
    }
    t
}

struct Run {
    log: FaultStorage,
    snap: FaultStorage,
    /// State hash after n commits.
    hashes: Vec<[u8; 32]>,
    /// Commits known durable (flushed).
    durable: usize,
}

/// Run the seeded workload. `cut`: the log's flush number `n` fails, as a power cut between
/// the write and the flush would leave it; the workload stops there.
fn workload(seed: u64, signed_mode: bool, cut: Option<usize>) -> Run {
    let mut rng = Rng(seed);
    let log = FaultStorage::new();
    let snap = FaultStorage::new();
    let mut r = Repo::open(log.clone(), Some(snap.clone()), opts(signed_mode)).unwrap();
    let mut hashes = vec![r.state_hash().unwrap()];
    let mut durable = 0;
    if let Some(n) = cut {
        log.fail_flush_after(n);
    }

    for _ in 0..40 {
        let t = random_txn(&mut rng, &mut r);
        if r.commit(t).unwrap().is_some() {
            hashes.push(r.state_hash().unwrap());
        }
        let res = match rng.below(10) {
            0..=2 => r.flush(),
            3 if signed_mode => r.seal().map(|_| ()),
            4 => r.write_snapshot().map(|_| ()),
            _ => Ok(()),
        };
        match res {
            Ok(()) => {
                if !r.has_unflushed() {
                    durable = r.commit_count();
                }
            }
            Err(Error::Storage(_)) => break, // the device is gone; the crash comes now
            Err(e) => panic!("unexpected error {e:?}"),
        }
    }
    Run {
        log,
        snap,
        hashes,
        durable,
    }
}

fn check_image(
    run: &Run,
    log_img: Vec<u8>,
    snap_img: Option<Vec<u8>>,
    signed_mode: bool,
    what: &str,
) {
    let mut r = Repo::open(
        MemStorage::from_bytes(log_img),
        snap_img.map(MemStorage::from_bytes),
        opts(signed_mode),
    )
    .unwrap_or_else(|e| panic!("{what}: reopen failed: {e}"));
    let n = r.commit_count();
    assert!(
        n >= run.durable,
        "{what}: {n} commits survived, {} were flushed",
        run.durable
    );
    assert_eq!(
        r.state_hash().unwrap(),
        run.hashes[n],
        "{what}: state after {n} commits differs"
    );
    assert_eq!(r.pending(), 0, "{what}");
    r.verify()
        .unwrap_or_else(|e| panic!("{what}: verify failed: {e}"));
    // The recovered repository accepts new writes and reopens again.
    let mut t = Txn::new();
    t.put("items/after", item(7)).unwrap();
    r.commit(t).unwrap();
    r.flush().unwrap();
    let hash = r.state_hash().unwrap();
    let (log, snap) = r.close().unwrap();
    let mut r = Repo::open(log, snap, opts(signed_mode)).unwrap();
    assert_eq!(r.state_hash().unwrap(), hash, "{what}: second reopen");
}

fn crash_everywhere(seed: u64, signed_mode: bool) {
    // Every flush of the workload is a crash point: rerun it (it is deterministic) with
    // that flush failing, then try every image the unflushed writes could leave.
    let flushes = workload(seed, signed_mode, None).log.flush_count();
    let mut images = 0;
    for cut in 0..=flushes {
        images += crash_at(seed, signed_mode, cut);
    }
    assert!(
        images > flushes,
        "seed {seed}: only {images} images for {flushes} flushes"
    );
}

fn crash_at(seed: u64, signed_mode: bool, cut: usize) -> usize {
    let run = workload(seed, signed_mode, Some(cut));
    let mut images = 0;
    let mut rng = Rng(seed ^ 0xabcdef);
    let snap_full = run.snap.live_bytes();
    for keep in 0..=run.log.unflushed_writes() {
        let torn: Vec<Option<usize>> = match run.log.unflushed_write_len(keep) {
            Some(len) if len > 0 => vec![None, Some(1), Some(9), Some(len / 2), Some(len - 1)],
            _ => vec![None],
        };
        for t in torn {
            let img = run.log.crash_image(keep, t);
            // The snapshot file: as durable, or as last written, or torn mid-write.
            let snap_img = match rng.below(3) {
                0 => run.snap.durable_bytes(),
                1 => snap_full.clone(),
                _ => run
                    .snap
                    .crash_image(run.snap.unflushed_writes(), Some(rng.below(64) as usize)),
            };
            let what = format!("seed {seed} cut {cut} keep {keep} torn {t:?}");
            check_image(&run, img, Some(snap_img), signed_mode, &what);
            images += 1;
        }
    }
    images
}

#[test]
fn every_crash_point_recovers_trusted() {
    for_seeds("every_crash_point_recovers_trusted", 0..40, |s| {
        crash_everywhere(s, false)
    });
}

#[test]
fn every_crash_point_recovers_signed() {
    for_seeds("every_crash_point_recovers_signed", 500..508, |s| {
        crash_everywhere(s, true)
    });
}

fn build(n: u64) -> Repo<MemStorage> {
    let mut r = Repo::open(MemStorage::new(), Some(MemStorage::new()), signed(1)).unwrap();
    for i in 0..n {
        let mut t = Txn::new();
        t.put(&format!("items/{i}"), item(i)).unwrap();
        r.commit(t).unwrap();
    }
    r.seal().unwrap();
    r.flush().unwrap();
    r
}

#[test]
fn bit_flips_are_detected_and_repair_keeps_every_intact_frame() {
    let mut original = build(10);
    let (full_commits, seals) = original.export().unwrap();
    let hash = original.state_hash().unwrap();
    let (log, _) = original.close().unwrap();
    let bytes = log.bytes().to_vec();
    // Flip a bit inside the payload of the 5th commit.
    let target = {
        let r = Repo::open(MemStorage::from_bytes(bytes.clone()), None, signed(1)).unwrap();
        r.core().commits[4].offset
    };
    let mut damaged = bytes.clone();
    damaged[target as usize + 20] ^= 0x10;
    match Repo::open(MemStorage::from_bytes(damaged.clone()), None, signed(1)) {
        Err(Error::Corrupt {
            offset, next_valid, ..
        }) => {
            assert_eq!(offset, target);
            assert!(next_valid.is_some());
        }
        other => panic!("expected Corrupt, got {:?}", other.map(|_| ())),
    }
    let mut o = signed(1);
    o.recovery = Recovery::Repair;
    let mut r = Repo::open(MemStorage::from_bytes(damaged), None, o).unwrap();
    assert_eq!(r.open_report().repaired.len(), 1);
    assert_eq!(r.commit_count(), 4);
    assert_eq!(
        r.pending(),
        5,
        "commits after the hole wait for their parent"
    );
    // The lost commit comes back from a peer; everything after it applies.
    r.receive(&full_commits[4..5], &seals).unwrap();
    assert_eq!(r.pending(), 0);
    assert_eq!(r.state_hash().unwrap(), hash);
    r.flush().unwrap();
    r.verify().unwrap();
    let (log, _) = r.close().unwrap();
    let mut again = Repo::open(log, None, signed(1)).unwrap();
    assert_eq!(again.state_hash().unwrap(), hash);
}

#[test]
fn verify_finds_damage_made_after_open() {
    let r = build(5);
    let (log, snap) = r.close().unwrap();
    let mut r = Repo::open(log, snap, signed(1)).unwrap();
    r.verify().unwrap();
    let off = r.core().commits[2].offset as usize;
    let (mut log, snap) = r.close().unwrap();
    log.bytes_mut()[off + 30] ^= 1;
    // A fresh open must refuse; verify on an open repo must too.
    assert!(matches!(
        Repo::open(log.clone(), snap, signed(1)),
        Err(Error::Corrupt { .. })
    ));
}

/// Random histories with merges (so items carry explicit metadata), a snapshot at a random
/// point, then more history: snapshot + tail equals a full replay, and verify proves it.
#[test]
fn snapshot_plus_tail_equals_full_replay() {
    for_seeds("snapshot_plus_tail_equals_full_replay", 0..40, |seed| {
        let mut rng = Rng(seed);
        let mut a = Repo::open(MemStorage::new(), Some(MemStorage::new()), trusted(1)).unwrap();
        let mut b = Repo::open(MemStorage::new(), None, trusted(2)).unwrap();
        let snap_at = rng.below(30);
        for step in 0..40 {
            for r in [&mut a, &mut b] {
                let mut t = Txn::new();
                let key = format!("items/{}", rng.below(8));
                match rng.below(4) {
                    0 => {
                        t.put(&key, item(rng.below(50))).unwrap();
                    }
                    1 => {
                        t.delete(&key).unwrap();
                    }
                    2 => {
                        t.set_add(&key, "tags", [format!("e{}", rng.below(4))])
                            .unwrap();
                    }
                    _ => {
                        t.set_remove(
                            &key,
                            "tags",
                            [format!("e{}", rng.below(4)), "category 1".into()],
                        )
                        .unwrap();
                    }
                }
                let _ = r.commit(t);
            }
            if rng.chance(30) {
                let (c, s) = b.export().unwrap();
                a.receive(&c, &s).unwrap();
            }
            if step == snap_at {
                assert!(a.write_snapshot().unwrap());
            }
        }
        a.flush().unwrap();
        let (log, snap) = a.close().unwrap();
        let mut from_snap = Repo::open(log.clone(), snap.clone(), trusted(1)).unwrap();
        assert!(from_snap.open_report().from_snapshot, "seed {seed}");
        let full = Repo::open(log.clone(), None, trusted(1)).unwrap();
        assert_eq!(
            from_snap.core(),
            full.core(),
            "seed {seed}: snapshot + tail != full replay"
        );
        let rep = from_snap.verify().unwrap();
        assert!(rep.snapshot_checked);
        // A damaged snapshot is ignored, never trusted.
        let mut bad = snap.unwrap();
        let n = bad.bytes().len();
        bad.bytes_mut()[n / 2] ^= 0x40;
        let r = Repo::open(log, Some(bad), trusted(1)).unwrap();
        assert!(!r.open_report().from_snapshot);
        assert_eq!(r.core(), full.core());
    });
}

#[test]
fn a_snapshot_of_another_log_is_ignored() {
    let mut a = build(3);
    a.write_snapshot().unwrap();
    let (_, snap_a) = a.close().unwrap();
    let mut b = build(4);
    let hash = b.state_hash().unwrap();
    let (log_b, _) = b.close().unwrap();
    let mut r = Repo::open(log_b, snap_a, signed(1)).unwrap();
    assert!(!r.open_report().from_snapshot);
    assert_eq!(r.state_hash().unwrap(), hash);
}

/// A close after reads only, or a flush with nothing new, asks the storage for no flush (an
/// OPFS round trip and an fsync); a write is flushed as before, and survives a cut after it.
#[test]
fn a_flush_with_nothing_new_since_the_last_one_or_the_open_does_not_reach_the_storage() {
    let log = FaultStorage::new();
    let mut r = Repo::open(log.clone(), None, opts(false)).unwrap();
    let mut t = Txn::new();
    t.put("items/a", ibexdb::map! {"n" => 1i64}.as_map())
        .unwrap();
    r.commit(t).unwrap();
    let before = log.flush_count();
    r.flush().unwrap();
    assert_eq!(log.flush_count(), before + 1, "a commit is flushed");
    r.flush().unwrap();
    assert_eq!(log.flush_count(), before + 1, "nothing new: no flush");
    r.close().unwrap();
    assert_eq!(
        log.flush_count(),
        before + 1,
        "closed after a flush: no flush"
    );

    let opened = log.flush_count();
    let mut r = Repo::open(log.clone(), None, opts(false)).unwrap();
    assert!(r.get("items/a").unwrap().is_some());
    r.close().unwrap();
    assert_eq!(log.flush_count(), opened, "open, read, close: no flush");

    let mut r = Repo::open(log.clone(), None, opts(false)).unwrap();
    let mut t = Txn::new();
    t.put("items/b", ibexdb::map! {"n" => 2i64}.as_map())
        .unwrap();
    r.commit(t).unwrap();
    r.close().unwrap();
    assert_eq!(
        log.flush_count(),
        opened + 1,
        "a write before close is flushed by it"
    );
    let reopened = Repo::open(
        FaultStorage::from_bytes(log.durable_bytes()),
        None,
        opts(false),
    );
    assert!(
        reopened.unwrap().get("items/b").unwrap().is_some(),
        "and is durable"
    );
}
