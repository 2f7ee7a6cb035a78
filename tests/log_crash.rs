//! Crash-consistency tests for the append-only log over the fault-injecting storage.

use ibexdb::testing::FaultStorage;
use ibexdb::testing::{
    header_bytes, Log, Scan, FRAME_COMMIT, FRAME_HEADER_LEN, FRAME_PAD, FRAME_SEAL, HEADER_LEN,
    MAX_FRAME_PAYLOAD,
};
use ibexdb::{Error, Recovery, Storage, StorageErrorKind};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// `(offset, kind, payload)` of one frame.
type Rec = (u64, u8, Vec<u8>);

fn recs(scan: &Scan) -> Vec<Rec> {
    scan.frames()
        .map(|f| (f.offset, f.kind, f.payload.to_vec()))
        .collect()
}

fn end_of(r: &Rec) -> u64 {
    r.0 + (FRAME_HEADER_LEN + r.2.len()) as u64
}

fn payload(rng: &mut StdRng, max: usize) -> Vec<u8> {
    let mut v = vec![0u8; rng.random_range(0..=max)];
    rng.fill(&mut v[..]);
    v
}

fn kind(rng: &mut StdRng) -> u8 {
    if rng.random_bool(0.8) {
        FRAME_COMMIT
    } else {
        FRAME_SEAL
    }
}

fn open(s: &FaultStorage, mode: Recovery) -> Result<(Log<FaultStorage>, Scan), Error> {
    Log::open(s.clone(), None, mode)
}

/// A flushed log of `n` frames with payloads of 1..=max bytes.
fn build(seed: u64, n: usize, max: usize) -> (FaultStorage, Vec<Rec>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let fs = FaultStorage::new();
    let (mut log, _) = open(&fs, Recovery::Strict).unwrap();
    let mut out = Vec::new();
    for _ in 0..n {
        let (k, mut p) = (kind(&mut rng), payload(&mut rng, max - 1));
        p.push(7);
        out.push((log.append(k, &p).unwrap(), k, p));
    }
    log.flush().unwrap();
    (fs, out)
}

fn expect_corrupt<T: std::fmt::Debug>(r: Result<T, Error>) -> (u64, Option<u64>) {
    match r {
        Err(Error::Corrupt {
            offset, next_valid, ..
        }) => (offset, next_valid),
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

fn storage_kind<T: std::fmt::Debug>(r: Result<T, Error>) -> StorageErrorKind {
    match r {
        Err(Error::Storage(e)) => e.kind,
        other => panic!("expected a storage error, got {other:?}"),
    }
}

#[test]
fn header_and_frame_bytes() {
    let fs = FaultStorage::new();
    let (mut log, scan) = open(&fs, Recovery::Strict).unwrap();
    assert_eq!(scan.end(), HEADER_LEN);
    assert!(log.is_empty());
    assert_eq!(log.append(FRAME_SEAL, b"abc").unwrap(), HEADER_LEN);
    log.flush().unwrap();
    let b = fs.durable_bytes();
    assert_eq!(&b[..8], b"IBEXLOG1");
    assert_eq!(&b[8..12], &1u32.to_le_bytes());
    assert_eq!(&b[12..16], &crc32fast::hash(&b[..12]).to_le_bytes());
    assert_eq!(&b[..16], &header_bytes());
    let crc = crc32fast::hash(&[3, 0, 0, 0, FRAME_SEAL, b'a', b'b', b'c']);
    assert_eq!(&b[16..20], &3u32.to_le_bytes());
    assert_eq!(&b[20..24], &crc.to_le_bytes());
    assert_eq!(&b[24..], &[FRAME_SEAL, b'a', b'b', b'c']);
}

#[test]
fn round_trip() {
    let mut rng = StdRng::seed_from_u64(1);
    let fs = FaultStorage::new();
    let (mut log, _) = open(&fs, Recovery::Strict).unwrap();
    let mut want = Vec::new();
    for i in 0..600 {
        let max = if i % 100 == 0 { 70_000 } else { 600 };
        let (k, p) = (kind(&mut rng), payload(&mut rng, max));
        want.push((log.append(k, &p).unwrap(), k, p));
        if rng.random_bool(0.05) {
            log.flush().unwrap();
        }
    }
    log.flush().unwrap();
    assert_eq!(log.durable_len(), log.len());
    let (log2, scan) = open(
        &FaultStorage::from_bytes(fs.durable_bytes()),
        Recovery::Strict,
    )
    .unwrap();
    assert_eq!(recs(&scan), want);
    assert_eq!(scan.truncated_tail(), None);
    assert_eq!(scan.end(), log.len());
    for (off, k, p) in &want {
        assert_eq!(log2.read_frame(*off).unwrap(), (*k, p.clone()));
    }
    // Scanning from a known frame boundary sees exactly the frames from there on.
    let (_, tail) = Log::open(fs.clone(), Some(want[300].0), Recovery::Strict).unwrap();
    assert_eq!(recs(&tail), want[300..]);
    let (_, none) = Log::open(fs.clone(), Some(log.len()), Recovery::Strict).unwrap();
    assert_eq!(none.frames().count(), 0);
    let past = Log::open(fs.clone(), Some(log.len() + 1), Recovery::Strict);
    assert_eq!(expect_corrupt(past).0, log.len() + 1);
}

#[test]
fn one_write_per_batch() {
    let fs = FaultStorage::new();
    let (mut log, _) = open(&fs, Recovery::Strict).unwrap();
    let (w, f) = (fs.write_count(), fs.flush_count());
    for i in 0..1000u32 {
        log.append(FRAME_COMMIT, &i.to_le_bytes()).unwrap();
    }
    assert_eq!(fs.write_count(), w, "append must not do I/O");
    log.flush().unwrap();
    assert_eq!((fs.write_count(), fs.flush_count()), (w + 1, f + 1));
    log.flush().unwrap(); // nothing pending: no write, one flush
    assert_eq!(fs.write_count(), w + 1);
    let (_, scan) = open(&fs, Recovery::Strict).unwrap();
    assert_eq!(scan.frames().count(), 1000);
}

/// Open a crash image strictly and check it holds exactly the appended frames that fit in it.
fn check_image(image: Vec<u8>, appended: &[Rec], durable: usize, what: &str) {
    let img_len = image.len() as u64;
    let want: Vec<Rec> = appended
        .iter()
        .take_while(|r| end_of(r) <= img_len)
        .cloned()
        .collect();
    assert!(want.len() >= durable, "{what}: image lost flushed frames");
    let end = want.last().map_or(HEADER_LEN, end_of).max(HEADER_LEN);
    let st = FaultStorage::from_bytes(image);
    let (mut log, scan) =
        open(&st, Recovery::Strict).unwrap_or_else(|e| panic!("{what}: open failed: {e}"));
    assert_eq!(recs(&scan), want, "{what}: frames differ");
    assert_eq!(scan.end(), end, "{what}: scan end");
    assert_eq!(st.len().unwrap(), end, "{what}: torn tail not truncated");
    let dropped = img_len.saturating_sub(end);
    let tail = (img_len > end).then_some((end, dropped));
    assert_eq!(scan.truncated_tail(), tail, "{what}: truncated_tail");
    // The recovered log takes new appends and reopens consistently.
    let off = log.append(FRAME_COMMIT, b"after crash").unwrap();
    assert_eq!(off, end);
    log.flush().unwrap();
    let (_, again) = open(
        &FaultStorage::from_bytes(st.durable_bytes()),
        Recovery::Strict,
    )
    .unwrap_or_else(|e| panic!("{what}: reopen failed: {e}"));
    let mut want = want;
    want.push((off, FRAME_COMMIT, b"after crash".to_vec()));
    assert_eq!(recs(&again), want, "{what}: frames after recovery");
}

fn crash_case(seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let fs = FaultStorage::new();
    let (mut log, _) = open(&fs, Recovery::Strict).unwrap();
    let mut appended: Vec<Rec> = Vec::new();
    let mut durable = 0;
    let append = |log: &mut Log<FaultStorage>, rng: &mut StdRng, appended: &mut Vec<Rec>| {
        let (k, p) = (kind(rng), payload(rng, 300));
        appended.push((log.append(k, &p).unwrap(), k, p));
    };
    // Phase 1: appends, partial writes, flushes, with the odd injected write failure.
    for _ in 0..rng.random_range(0..30) {
        match rng.random_range(0..10) {
            0..=5 => append(&mut log, &mut rng, &mut appended),
            6 | 7 => {
                if rng.random_bool(0.2) {
                    fs.fail_write_after(0);
                }
                let _ = log.write_pending();
            }
            _ => {
                if log.flush().is_ok() {
                    durable = appended.len();
                }
            }
        }
    }
    // Phase 2: unflushed batches (maybe failing, maybe hitting a power cut), then the crash.
    if rng.random_bool(0.3) {
        fs.power_cut_at_write(rng.random_range(0..3));
    }
    for _ in 0..rng.random_range(1..5) {
        for _ in 0..rng.random_range(1..6) {
            append(&mut log, &mut rng, &mut appended);
        }
        if rng.random_bool(0.2) {
            fs.fail_write_after(0);
        }
        let _ = log.write_pending();
    }
    if rng.random_bool(0.5) {
        append(&mut log, &mut rng, &mut appended); // still buffered at the crash
    }
    let n = fs.unflushed_writes();
    for keep in 0..=n {
        let what = format!("seed {seed}, keep {keep}");
        check_image(fs.crash_image(keep, None), &appended, durable, &what);
        let Some(len) = fs.unflushed_write_len(keep) else {
            continue;
        };
        let mut torn = vec![
            0,
            1,
            8,
            9,
            len / 2,
            len.saturating_sub(1),
            len.saturating_sub(9),
        ];
        torn.extend((0..3).map(|_| rng.random_range(0..=len)));
        for t in torn.into_iter().filter(|&t| t < len) {
            let what = format!("{what}, torn {t} of {len}");
            check_image(fs.crash_image(keep, Some(t)), &appended, durable, &what);
        }
    }
}

#[test]
fn crash_at_every_point() {
    let seeds: Vec<u64> = match std::env::var("IBEX_SEED") {
        Ok(s) => vec![s.parse().expect("IBEX_SEED must be a number")],
        Err(_) => (0..300).collect(),
    };
    for seed in seeds {
        if std::panic::catch_unwind(|| crash_case(seed)).is_err() {
            panic!("crash case failed; rerun with IBEX_SEED={seed}");
        }
    }
}

#[test]
fn torn_header_is_rewritten() {
    for n in 1..HEADER_LEN as usize {
        let st = FaultStorage::from_bytes(header_bytes()[..n].to_vec());
        let (mut log, scan) = open(&st, Recovery::Strict).unwrap();
        assert_eq!((scan.end(), scan.frames().count()), (HEADER_LEN, 0));
        assert_eq!(st.durable_bytes(), header_bytes());
        log.append(FRAME_COMMIT, b"x").unwrap();
        log.flush().unwrap();
        assert_eq!(open(&st, Recovery::Strict).unwrap().1.frames().count(), 1);
    }
}

#[test]
fn power_cut_mid_workload() {
    for cut in 0..6 {
        let (fs, mut frames) = build(cut as u64, 5, 100);
        let (mut log, _) = open(&fs, Recovery::Strict).unwrap();
        fs.power_cut_at_write(cut);
        let mut durable = frames.len();
        for i in 0..8u8 {
            frames.push((
                log.append(FRAME_COMMIT, &[i; 40]).unwrap(),
                FRAME_COMMIT,
                vec![i; 40],
            ));
            if i % 2 == 1 {
                match log.flush() {
                    Ok(()) => durable = frames.len(),
                    Err(e) => assert_eq!(storage_kind::<()>(Err(e)), StorageErrorKind::Io),
                }
            }
        }
        for keep in 0..=fs.unflushed_writes() {
            let what = format!("cut {cut}, keep {keep}");
            check_image(fs.crash_image(keep, None), &frames, durable, &what);
            check_image(fs.crash_image(keep, Some(13)), &frames, durable, &what);
        }
    }
}

#[test]
fn bit_flip_in_the_middle() {
    for trial in 0..40u64 {
        let (fs, frames) = build(100 + trial, 12, 200);
        let mut rng = StdRng::seed_from_u64(trial);
        let i = rng.random_range(0..frames.len() - 1);
        let (start, next) = (frames[i].0, frames[i + 1].0);
        let at = rng.random_range(start..next);
        fs.flip_bit(at, rng.random_range(0..8));
        let what = format!("trial {trial}: frame {i}, byte {at}");

        let damaged = fs.live_bytes();
        let (offset, next_valid) = expect_corrupt(open(&fs, Recovery::Strict));
        assert_eq!((offset, next_valid), (start, Some(next)), "{what}");
        assert_eq!(
            fs.live_bytes(),
            damaged,
            "{what}: strict open modified the log"
        );

        let mut rest = frames.clone();
        rest.remove(i);
        let (mut log, scan) = open(&fs, Recovery::Repair).unwrap();
        assert_eq!(scan.repaired(), &[(start, next)], "{what}");
        assert_eq!(recs(&scan), rest, "{what}");
        assert_eq!(
            fs.durable_bytes(),
            fs.live_bytes(),
            "{what}: repair not flushed"
        );
        assert_eq!(log.read_frame(start).unwrap().0, FRAME_PAD);
        assert_eq!(recs(&log.scan_all().unwrap()), rest);

        let (_, scan) = open(&fs, Recovery::Strict).unwrap();
        assert_eq!(recs(&scan), rest, "{what}");
        assert!(scan.repaired().is_empty() && scan.truncated_tail().is_none());
    }
}

#[test]
fn bit_flip_in_the_last_frame_is_a_torn_tail() {
    for trial in 0..20u64 {
        let (fs, frames) = build(200 + trial, 6, 150);
        let mut rng = StdRng::seed_from_u64(trial);
        let last = frames.last().unwrap();
        fs.flip_bit(
            rng.random_range(last.0..end_of(last)),
            rng.random_range(0..8),
        );
        let (_, scan) = open(&fs, Recovery::Strict).unwrap();
        assert_eq!(recs(&scan), frames[..frames.len() - 1]);
        assert_eq!(scan.truncated_tail(), Some((last.0, end_of(last) - last.0)));
        assert_eq!(fs.len().unwrap(), last.0);
        assert_eq!(fs.durable_bytes().len() as u64, last.0);
    }
}

#[test]
fn bit_flip_in_the_header() {
    let (fs, _) = build(3, 3, 50);
    for bit in 0..HEADER_LEN * 8 {
        let st = FaultStorage::from_bytes(fs.live_bytes());
        st.flip_bit(bit / 8, (bit % 8) as u8);
        for mode in [Recovery::Strict, Recovery::Repair] {
            assert_eq!(expect_corrupt(open(&st, mode)), (0, None), "bit {bit}");
        }
        assert_eq!(st.unflushed_writes(), 0);
    }
}

#[test]
fn scan_all_reports_without_mutating() {
    let (fs, frames) = build(5, 10, 100);
    let (mut log, _) = open(&fs, Recovery::Strict).unwrap();
    let off = log.append(FRAME_SEAL, b"buffered").unwrap();
    let scan = log.scan_all().unwrap();
    assert!(!log.has_pending());
    assert_eq!(
        recs(&scan).last().unwrap(),
        &(off, FRAME_SEAL, b"buffered".to_vec())
    );

    // Damage in the middle.
    let before = fs.live_bytes();
    fs.flip_bit(frames[4].0 + 10, 3);
    assert_eq!(
        expect_corrupt(log.scan_all()),
        (frames[4].0, Some(frames[5].0))
    );
    fs.flip_bit(frames[4].0 + 10, 3);
    // A torn tail is damage too, and is left in place.
    let mut h = fs.clone();
    h.truncate(before.len() as u64 - 1).unwrap();
    assert_eq!(expect_corrupt(log.scan_all()), (off, None));
    assert_eq!(fs.len().unwrap(), before.len() as u64 - 1);
    // Extra bytes beyond what the log wrote.
    h.write_at(before.len() as u64 - 1, &before[before.len() - 1..])
        .unwrap();
    assert!(log.scan_all().is_ok());
    h.write_at(before.len() as u64, &header_bytes()).unwrap();
    assert!(matches!(log.scan_all(), Err(Error::Corrupt { .. })));
}

#[test]
fn injected_errors_lose_nothing() {
    let (fs, mut frames) = build(9, 5, 100);
    let (mut log, _) = open(&fs, Recovery::Strict).unwrap();
    let push = |log: &mut Log<FaultStorage>, frames: &mut Vec<Rec>, n: usize| {
        for _ in 0..n {
            let p = vec![frames.len() as u8; 50 + frames.len()];
            frames.push((log.append(FRAME_COMMIT, &p).unwrap(), FRAME_COMMIT, p));
        }
    };

    // A write failure (with a partial write) during flush.
    push(&mut log, &mut frames, 4);
    let (written, durable) = (log.written_len(), log.durable_len());
    fs.fail_write_after(0);
    assert_eq!(storage_kind(log.flush()), StorageErrorKind::Io);
    assert_eq!((log.written_len(), log.durable_len()), (written, durable));
    assert!(log.has_pending());
    for (off, k, p) in &frames {
        assert_eq!(
            &log.read_frame(*off).unwrap(),
            &(*k, p.clone()),
            "buffered or written"
        );
    }
    push(&mut log, &mut frames, 2);
    log.flush().unwrap();
    assert_eq!(log.durable_len(), log.len());

    // The second write of two fails.
    push(&mut log, &mut frames, 2);
    fs.fail_write_after(1);
    log.write_pending().unwrap();
    push(&mut log, &mut frames, 2);
    assert_eq!(storage_kind(log.write_pending()), StorageErrorKind::Io);
    for (off, k, p) in &frames {
        assert_eq!(&log.read_frame(*off).unwrap(), &(*k, p.clone()));
    }
    log.flush().unwrap();

    // Quota exceeded: nothing written; lift the quota and retry.
    push(&mut log, &mut frames, 3);
    fs.set_quota(Some(log.written_len() + 20));
    let w = fs.live_bytes().len();
    assert_eq!(storage_kind(log.flush()), StorageErrorKind::QuotaExceeded);
    assert_eq!(fs.live_bytes().len(), w);
    assert!(log.has_pending());
    push(&mut log, &mut frames, 1);
    fs.set_quota(None);
    log.flush().unwrap();

    // A flush failure makes nothing durable; the retry does.
    push(&mut log, &mut frames, 1);
    fs.fail_flush_after(0);
    assert_eq!(storage_kind(log.flush()), StorageErrorKind::Io);
    assert!(log.durable_len() < log.written_len());
    assert_eq!(fs.durable_bytes().len() as u64, log.durable_len());
    log.flush().unwrap();
    assert_eq!(log.durable_len(), log.len());

    let (_, scan) = open(
        &FaultStorage::from_bytes(fs.durable_bytes()),
        Recovery::Strict,
    )
    .unwrap();
    assert_eq!(recs(&scan), frames, "every frame exactly once, in order");
}

#[test]
fn append_limits() {
    let fs = FaultStorage::new();
    let (mut log, _) = open(&fs, Recovery::Strict).unwrap();
    let big = vec![0u8; MAX_FRAME_PAYLOAD + 1];
    assert!(matches!(
        log.append(FRAME_COMMIT, &big),
        Err(Error::TooLarge { .. })
    ));
    for k in [0, FRAME_PAD, 4, 255] {
        assert!(log.append(k, b"x").is_err(), "kind {k}");
    }
    assert!(!log.has_pending());
    assert_eq!(log.pending_bytes(), 0);
    log.append(FRAME_COMMIT, b"ok").unwrap();
    assert_eq!(log.pending_bytes(), FRAME_HEADER_LEN + 2);
    assert!(log.read_frame(HEADER_LEN + 1).is_err());
    assert!(log.read_frame(log.len()).is_err());
    assert!(log.read_frame(0).is_err());
}

#[test]
fn zero_filled_tail_is_truncated() {
    for extra in [1u64, 5, 9, 100, 4096] {
        let (fs, frames) = build(11, 4, 60);
        let end = fs.len().unwrap();
        let mut h = fs.clone();
        h.truncate(end + extra).unwrap();
        h.flush().unwrap();
        let (_, scan) = open(&fs, Recovery::Strict).unwrap();
        assert_eq!(recs(&scan), frames);
        assert_eq!(scan.truncated_tail(), Some((end, extra)));
        assert_eq!(fs.len().unwrap(), end);
    }
    // Zeros after a torn frame go too.
    let (fs, frames) = build(12, 4, 60);
    let last = frames.last().unwrap();
    let mut h = fs.clone();
    h.truncate(end_of(last) - 3).unwrap();
    h.truncate(end_of(last) + 500).unwrap();
    let (_, scan) = open(&fs, Recovery::Repair).unwrap();
    assert_eq!(recs(&scan), frames[..3]);
    assert_eq!(
        scan.truncated_tail(),
        Some((last.0, end_of(last) + 500 - last.0))
    );
}

/// Encode a frame by hand, independently of the log's encoder.
fn frame_bytes(kind: u8, payload: &[u8]) -> Vec<u8> {
    let len = (payload.len() as u32).to_le_bytes();
    let mut crc = crc32fast::Hasher::new();
    crc.update(&len);
    crc.update(&[kind]);
    crc.update(payload);
    let mut f = len.to_vec();
    f.extend_from_slice(&crc.finalize().to_le_bytes());
    f.push(kind);
    f.extend_from_slice(payload);
    f
}

#[test]
fn damage_before_small_or_tight_frames() {
    // Damage followed only by an empty last frame: found, repaired.
    let mut img = header_bytes().to_vec();
    img.extend(frame_bytes(FRAME_COMMIT, b"first"));
    img.extend([0xAA; 20]);
    let last = img.len() as u64;
    img.extend(frame_bytes(FRAME_SEAL, b""));
    let st = FaultStorage::from_bytes(img.clone());
    assert_eq!(
        expect_corrupt(open(&st, Recovery::Strict)),
        (30, Some(last))
    );
    let (_, scan) = open(&st, Recovery::Repair).unwrap();
    assert_eq!(scan.repaired(), &[(30, last)]);
    assert_eq!(
        recs(&scan),
        vec![
            (16, FRAME_COMMIT, b"first".to_vec()),
            (last, FRAME_SEAL, vec![])
        ]
    );

    // A gap of fewer than 9 bytes cannot hold a PAD frame: Repair reports it too.
    let mut img = header_bytes().to_vec();
    img.extend([0xAA; 5]);
    img.extend(frame_bytes(FRAME_COMMIT, b"x"));
    let st = FaultStorage::from_bytes(img);
    for mode in [Recovery::Strict, Recovery::Repair] {
        assert_eq!(expect_corrupt(open(&st, mode)), (16, Some(21)));
    }
    assert_eq!(st.unflushed_writes(), 0);
}

/// The last written batch reads back from memory (sync pushes the commits it just flushed);
/// earlier frames from storage, as before.
#[test]
fn the_last_written_batch_reads_back_from_memory() {
    let fs = FaultStorage::new();
    let (mut log, _) = open(&fs, Recovery::Strict).unwrap();
    let a = log.append(FRAME_COMMIT, b"first batch").unwrap();
    log.flush().unwrap();
    let b = log.append(FRAME_COMMIT, b"second batch").unwrap();
    log.flush().unwrap();
    // Damage both frames in storage: the last batch still reads from memory, the first fails.
    fs.flip_bit(a + FRAME_HEADER_LEN as u64, 0);
    fs.flip_bit(b + FRAME_HEADER_LEN as u64, 0);
    assert_eq!(
        log.read_frame(b).unwrap(),
        (FRAME_COMMIT, b"second batch".to_vec())
    );
    assert!(matches!(log.read_frame(a), Err(Error::Corrupt { .. })));
    // Once another batch is written, the second is read from storage again.
    log.append(FRAME_COMMIT, b"third").unwrap();
    log.flush().unwrap();
    assert!(matches!(log.read_frame(b), Err(Error::Corrupt { .. })));
    // A batch over the limit is not kept.
    let big = vec![9u8; (256 << 10) + 1];
    let c = log.append(FRAME_COMMIT, &big).unwrap();
    log.flush().unwrap();
    fs.flip_bit(c + FRAME_HEADER_LEN as u64, 0);
    assert!(matches!(log.read_frame(c), Err(Error::Corrupt { .. })));
}
