//! A repository out of room (the browser's quota, or `quotaBytes`): writes fail with
//! `QuotaExceeded` and lose nothing; close still succeeds when what it cannot write is only
//! seals (made again at the next open); a snapshot that does not fit takes no room; and the
//! snapshot, which only saves replaying the log, gives its bytes to the log when the log needs
//! them. The log and the snapshot share one byte limit, as in a browser.

mod common;
use common::*;
use ibexdb::testing::{FaultStorage, QuotaPool};
use ibexdb::{Error, MemStorage, Repo, StorageErrorKind, Txn};

fn is_quota(e: &Error) -> bool {
    matches!(e, Error::Storage(se) if se.kind == StorageErrorKind::QuotaExceeded)
}

fn put(r: &mut Repo<FaultStorage>, i: u64) -> Result<(), Error> {
    let mut t = Txn::new();
    let mut m = item(i);
    m.insert("pad".into(), "p".repeat(300).into());
    t.put(&format!("items/{i:04}"), m).unwrap();
    r.commit(t)?;
    r.flush()
}

/// A signed repository whose log and snapshot share a pool, filled with `n` flushed, sealed
/// commits and a snapshot of them; the pool's limit is then set to what they hold (no room).
fn full_repo(
    n: u64,
) -> (
    Repo<FaultStorage>,
    FaultStorage,
    FaultStorage,
    std::rc::Rc<QuotaPool>,
) {
    let (log, snap) = (FaultStorage::new(), FaultStorage::new());
    let mut r = Repo::open(log.clone(), Some(snap.clone()), signed(1)).unwrap();
    for i in 0..n {
        put(&mut r, i).unwrap();
    }
    r.seal().unwrap();
    r.flush().unwrap();
    r.write_snapshot().unwrap();
    let used = log.live_bytes().len() as u64 + snap.live_bytes().len() as u64;
    let pool = QuotaPool::new(used);
    log.share_quota(&pool);
    snap.share_quota(&pool);
    assert_eq!(pool.used(), used);
    (r, log, snap, pool)
}

/// The state a replay of `log` alone gives.
fn replayed(log: &FaultStorage) -> (Repo<MemStorage>, [u8; 32]) {
    let mut r = Repo::open(MemStorage::from_bytes(log.durable_bytes()), None, signed(1)).unwrap();
    let h = r.state_hash().unwrap();
    (r, h)
}

#[test]
fn the_snapshot_gives_its_room_to_the_log() {
    let (mut r, log, snap, _pool) = full_repo(20);
    let snap_bytes = snap.live_bytes().len() as u64;
    assert!(snap_bytes > 1000, "{snap_bytes}");
    // The next write needs more than the pool has: the snapshot is dropped and it fits.
    put(&mut r, 100).unwrap();
    assert_eq!(snap.live_bytes().len(), 0, "the snapshot was emptied");
    let mut n = 101;
    while put(&mut r, n).is_ok() {
        n += 1;
    }
    assert!(
        n > 101,
        "the snapshot's bytes made room for more than one write"
    );
    // Everything acknowledged is on storage and reads back; the failed write is not there
    // (the host reopens after a failed flush, as the browser worker does).
    let (mut again, h) = replayed(&log);
    assert!(again.get(&format!("items/{:04}", n - 1)).unwrap().is_some());
    assert!(again.get(&format!("items/{n:04}")).unwrap().is_none());
    assert_eq!(again.commit_count(), 20 + (n - 100) as usize);
    again.verify().unwrap();
    // A repository opened on the emptied snapshot replays the log.
    let mut reopened = Repo::open(
        MemStorage::from_bytes(log.durable_bytes()),
        Some(MemStorage::from_bytes(snap.durable_bytes())),
        signed(1),
    )
    .unwrap();
    assert!(!reopened.open_report().from_snapshot);
    assert_eq!(reopened.state_hash().unwrap(), h);
}

#[test]
fn a_snapshot_that_does_not_fit_takes_no_room() {
    let (log, snap) = (FaultStorage::new(), FaultStorage::new());
    let mut r = Repo::open(log.clone(), Some(snap.clone()), signed(1)).unwrap();
    for i in 0..30 {
        put(&mut r, i).unwrap();
    }
    r.seal().unwrap();
    r.flush().unwrap();
    snap.set_quota(Some(512));
    let e = r.write_snapshot().unwrap_err();
    assert!(is_quota(&e), "{e:?}");
    assert_eq!(
        snap.live_bytes().len(),
        0,
        "the partial snapshot was cut away"
    );
    // Nothing is lost, and the next snapshot with room is complete.
    snap.set_quota(None);
    put(&mut r, 30).unwrap();
    assert!(r.write_snapshot().unwrap());
    let h = r.state_hash().unwrap();
    let mut again = Repo::open(
        MemStorage::from_bytes(log.durable_bytes()),
        Some(MemStorage::from_bytes(snap.durable_bytes())),
        signed(1),
    )
    .unwrap();
    assert!(again.open_report().from_snapshot);
    assert_eq!(again.state_hash().unwrap(), h);
}

#[test]
fn close_without_room_for_the_seal_succeeds_and_the_next_open_seals_again() {
    let (log, snap) = (FaultStorage::new(), FaultStorage::new());
    let mut r = Repo::open(log.clone(), Some(snap.clone()), signed(1)).unwrap();
    for i in 0..5 {
        put(&mut r, i).unwrap();
    }
    // The five commits are durable; their seal does not fit.
    log.set_quota(Some(log.live_bytes().len() as u64));
    assert_eq!(r.seal().unwrap().len(), 1);
    assert!(is_quota(&r.flush().unwrap_err()));
    r.close().expect("close drops the seal it cannot write");
    log.set_quota(None);
    let mut again = Repo::open(log.clone(), Some(snap.clone()), signed(1)).unwrap();
    assert_eq!(again.commit_count(), 5);
    assert_eq!(again.unsealed(), 5, "the commits wait for a seal again");
    assert_eq!(again.seal().unwrap().len(), 1);
    again.flush().unwrap();
    assert_eq!(again.verify().unwrap().unsealed, 0);
}

#[test]
fn close_without_room_for_a_commit_is_an_error() {
    let (log, snap) = (FaultStorage::new(), FaultStorage::new());
    let mut r = Repo::open(log.clone(), Some(snap), signed(1)).unwrap();
    put(&mut r, 0).unwrap();
    log.set_quota(Some(log.live_bytes().len() as u64));
    // A commit buffered (relaxed durability) that cannot be written is lost: close says so.
    let mut t = Txn::new();
    t.put("items/x", item(1)).unwrap();
    r.commit(t).unwrap();
    assert!(is_quota(&r.close().unwrap_err()));
    assert_eq!(replayed(&log).0.commit_count(), 1);
}
