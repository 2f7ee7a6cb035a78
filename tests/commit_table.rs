//! The snapshot's commit table in segments (docs/design.md §8, *Commit table*): an appended
//! snapshot writes only the commits added since; commits written unsealed and sealed later
//! reopen sealed; many sessions leave few segments and always the graph a full replay gives;
//! a damaged segment makes the snapshot ignored, never a wrong graph.

mod common;
use common::*;
use ibexdb::testing::snapshot_table_segments;
use ibexdb::{Repo, Txn};

fn open(log: &Shared, snap: &Shared) -> Repo<Shared> {
    Repo::open(log.clone(), Some(snap.clone()), signed(1)).unwrap()
}

/// A repository replayed from a copy of `log` alone.
fn full_replay(log: &Shared) -> Repo<Shared> {
    let copy = Shared::default();
    copy.bytes
        .lock()
        .unwrap()
        .clone_from(&log.bytes.lock().unwrap());
    Repo::open(copy, None, signed(1)).unwrap()
}

/// `n` commits of one item each, ids from `from`.
fn single_commits(r: &mut Repo<Shared>, from: u64, n: u64) {
    for i in from..from + n {
        let mut t = Txn::new();
        t.put(&format!("items/{i:06}"), item(i)).unwrap();
        r.commit(t).unwrap();
    }
}

/// The graph `r` opened with is the one a full replay of the log gives: every commit with its
/// flags (sealed included), the heads, the seals, the state.
fn same_as_replay(r: &mut Repo<Shared>, log: &Shared, what: &str) {
    let mut full = full_replay(log);
    let (a, b) = (r.core(), full.core());
    assert!(a.commits == b.commits, "{what}: commit tables differ");
    assert_eq!(a.heads, b.heads, "{what}");
    assert_eq!(a.seal_offsets, b.seal_offsets, "{what}");
    assert_eq!(
        r.state_hash().unwrap(),
        full.state_hash().unwrap(),
        "{what}"
    );
}

#[test]
fn an_appended_snapshot_writes_only_the_commits_added_since() {
    let (log, snap) = (Shared::default(), Shared::default());
    let mut r = open(&log, &snap);
    single_commits(&mut r, 0, 3000);
    r.seal().unwrap();
    r.write_snapshot().unwrap();
    drop(r);
    let first = snapshot_table_segments(&snap).unwrap();
    assert_eq!(first.len(), 1);
    let (table_bytes, before) = (first[0].1 as usize, snap.len_now());
    let mut r = open(&log, &snap);
    assert!(r.open_report().from_snapshot);
    single_commits(&mut r, 3000, 5);
    r.seal().unwrap();
    r.write_snapshot().unwrap();
    drop(r);
    let grew = snap.len_now() - before;
    let now = snapshot_table_segments(&snap).unwrap();
    assert_eq!(now[0], first[0], "the first segment stays where it is");
    assert_eq!(now.len(), 2);
    assert_eq!(now[1].2, 5);
    assert!(
        grew < table_bytes / 4,
        "the append wrote {grew} B; the table alone is {table_bytes} B"
    );
    let mut r = open(&log, &snap);
    assert!(r.open_report().from_snapshot && r.open_report().replayed_frames == 0);
    same_as_replay(&mut r, &log, "after the append");
    r.verify().unwrap();
}

#[test]
fn commits_written_unsealed_and_sealed_later_reopen_sealed() {
    let (log, snap) = (Shared::default(), Shared::default());
    let mut r = open(&log, &snap);
    single_commits(&mut r, 0, 200);
    r.seal().unwrap();
    single_commits(&mut r, 200, 50);
    // Flushed, not sealed: the snapshot's segment holds 50 unsealed commits.
    r.flush().unwrap();
    r.write_snapshot().unwrap();
    drop(r);
    let mut r = open(&log, &snap);
    same_as_replay(&mut r, &log, "written unsealed");
    let segments = snapshot_table_segments(&snap).unwrap();
    // Sealed now: nothing new to write in the table, the flags change.
    r.seal().unwrap();
    r.write_snapshot().unwrap();
    drop(r);
    assert_eq!(snapshot_table_segments(&snap).unwrap(), segments);
    let mut r = open(&log, &snap);
    assert!(r.core().commits.iter().all(|c| c.sealed));
    same_as_replay(&mut r, &log, "sealed after");
    r.verify().unwrap();
}

#[test]
fn many_sessions_keep_few_segments_and_the_graph_of_a_full_replay() {
    for_seeds("commit-table sessions", 0..4, |seed| {
        let mut rng = Rng(seed);
        let (log, snap) = (Shared::default(), Shared::default());
        let (mut next, mut most_segments) = (0, 0);
        for session in 0..60 {
            let mut r = open(&log, &snap);
            let most = if rng.chance(10) { 400 } else { 40 };
            let n = 1 + rng.below(most);
            single_commits(&mut r, next, n);
            next += n;
            // Some sessions end unsealed: their commits are sealed in a later one.
            if rng.chance(70) {
                r.seal().unwrap();
            }
            r.flush().unwrap();
            r.write_snapshot().unwrap();
            drop(r);
            let segments = snapshot_table_segments(&snap).unwrap();
            let total: u64 = segments.iter().map(|s| u64::from(s.2)).sum();
            let bound = 2 * (64 - total.leading_zeros()) as usize + 2;
            most_segments = most_segments.max(segments.len());
            assert!(
                segments.len() <= bound,
                "session {session}: {} segments for {total} commits",
                segments.len()
            );
            let mut r = open(&log, &snap);
            assert!(r.open_report().from_snapshot);
            same_as_replay(&mut r, &log, &format!("seed {seed} session {session}"));
        }
        // The appends kept segments (a rewrite would always leave one).
        assert!(most_segments >= 3, "at most {most_segments} segments");
        let mut r = open(&log, &snap);
        r.verify().unwrap();
    });
}

#[test]
fn a_damaged_segment_makes_the_snapshot_ignored() {
    let (log, snap) = (Shared::default(), Shared::default());
    let mut r = open(&log, &snap);
    single_commits(&mut r, 0, 300);
    r.seal().unwrap();
    r.write_snapshot().unwrap();
    drop(r);
    let mut r = open(&log, &snap);
    single_commits(&mut r, 300, 3);
    r.seal().unwrap();
    r.write_snapshot().unwrap();
    drop(r);
    let segments = snapshot_table_segments(&snap).unwrap();
    assert_eq!(segments.len(), 2);
    for (off, len, _) in segments {
        let damaged = Shared::default();
        damaged
            .bytes
            .lock()
            .unwrap()
            .clone_from(&snap.bytes.lock().unwrap());
        damaged.flip(off as usize + len as usize / 2);
        let mut r = open(&log, &damaged);
        assert!(!r.open_report().from_snapshot, "segment at {off} damaged");
        same_as_replay(&mut r, &log, "damaged segment");
    }
}
