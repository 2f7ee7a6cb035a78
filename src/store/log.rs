//! The append-only log: a file header followed by self-checking frames.
//!
//! # Format (all integers little-endian)
//!
//! File header, [`HEADER_LEN`] = 16 bytes:
//!
//! | bytes  | field                                        |
//! |--------|----------------------------------------------|
//! | 0..8   | magic `b"IBEXLOG1"`                          |
//! | 8..12  | `u32` format version, [`FORMAT_VERSION`] = 1 |
//! | 12..16 | `u32` CRC-32 (IEEE) of bytes 0..12           |
//!
//! Then frames, back to back, [`FRAME_HEADER_LEN`] = 9 bytes of header each:
//!
//! | bytes  | field                                                      |
//! |--------|------------------------------------------------------------|
//! | 0..4   | `u32` payload length, at most [`MAX_FRAME_PAYLOAD`]        |
//! | 4..8   | `u32` CRC-32 (IEEE) over bytes 0..4, the kind byte and the payload |
//! | 8      | `u8` kind: [`FRAME_COMMIT`], [`FRAME_SEAL`] or [`FRAME_PAD`] |
//! | 9..    | payload                                                    |
//!
//! PAD frames (zero payload) are written only by [`Recovery::Repair`] over damaged ranges and
//! are skipped by readers. Any other kind byte makes the frame invalid.
//!
//! # Recovery
//!
//! Appends are buffered in memory and issued as one `write_at` per batch, so a crash can leave
//! a torn (partially written) tail. On open, a bad frame with no valid frame anywhere after it
//! is such a tail and is truncated away. A bad frame followed by a valid one is damage in the
//! middle of the log: [`Recovery::Strict`] reports it as [`Error::Corrupt`],
//! [`Recovery::Repair`] pads over it and carries on.

use std::fmt;

use crate::error::{Error, Result};
use crate::store::Storage;

/// The file magic.
pub const MAGIC: &[u8; 8] = b"IBEXLOG1";
/// The file format version written in the header.
pub const FORMAT_VERSION: u32 = 1;
/// Length of the file header; the first frame starts here.
pub const HEADER_LEN: u64 = 16;
/// Length of a frame's header (length, crc, kind).
pub const FRAME_HEADER_LEN: usize = 9;
/// The largest payload a frame may carry (128 MiB).
pub const MAX_FRAME_PAYLOAD: usize = 128 << 20;
/// A frame holding a commit.
pub const FRAME_COMMIT: u8 = 1;
/// A frame holding a seal.
pub const FRAME_SEAL: u8 = 2;
/// Filler written by repair over a damaged range; skipped by readers.
pub const FRAME_PAD: u8 = 3;

/// Write buffers that grew beyond this are released after a write instead of kept for reuse.
const KEEP_BUFFER_CAPACITY: usize = 4 << 20;
/// A written batch up to this size stays readable from memory until the next one (see
/// `Log::recent`).
const RECENT_MAX: usize = 256 << 10;

/// The 16 header bytes every log starts with.
pub fn header_bytes() -> [u8; 16] {
    let mut h = [0u8; 16];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    let crc = crate::hashing::crc32(&h[..12]);
    h[12..].copy_from_slice(&crc.to_le_bytes());
    h
}

fn le32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

fn corrupt(offset: u64, next_valid: Option<u64>, reason: impl Into<String>) -> Error {
    Error::Corrupt {
        offset,
        next_valid,
        reason: reason.into(),
    }
}

fn check_header(h: &[u8; 16]) -> Result<()> {
    if &h[..8] != MAGIC {
        return Err(corrupt(0, None, "not an ibexdb log (bad magic)"));
    }
    if le32(&h[12..]) != crate::hashing::crc32(&h[..12]) {
        return Err(corrupt(0, None, "file header checksum mismatch"));
    }
    match le32(&h[8..12]) {
        FORMAT_VERSION => Ok(()),
        v => Err(corrupt(
            0,
            None,
            format!("unsupported log format version {v}"),
        )),
    }
}

/// Encode one frame onto `out`.
fn push_frame(out: &mut Vec<u8>, kind: u8, payload: &[u8]) {
    let start = out.len();
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.push(kind);
    out.extend_from_slice(payload);
    seal_frame(out, start);
}

/// Fill in the crc of the frame that occupies `out[start..]`.
fn seal_frame(out: &mut [u8], start: usize) {
    let f = &out[start..];
    let mut h = crc32fast::Hasher::new();
    h.update(&f[..4]);
    crate::hashing::crc32_update(&mut h, &f[8..]);
    let crc = h.finalize();
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

/// PAD frames covering exactly `n >= FRAME_HEADER_LEN` bytes (one frame unless `n` is huge).
fn pad_frames(mut n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n);
    while n > 0 {
        let take = if n > MAX_FRAME_PAYLOAD + FRAME_HEADER_LEN {
            MAX_FRAME_PAYLOAD
        } else {
            n
        };
        let start = out.len();
        out.extend_from_slice(&((take - FRAME_HEADER_LEN) as u32).to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        out.push(FRAME_PAD);
        out.resize(start + take, 0);
        seal_frame(&mut out, start);
        n -= take;
    }
    out
}

/// Check the frame at `buf[pos..]`. Returns its kind and payload length. The kind is checked
/// first and the crc last, so probing every byte position during recovery stays cheap.
fn check_frame(buf: &[u8], pos: usize) -> std::result::Result<(u8, usize), &'static str> {
    let h = buf
        .get(pos..pos.saturating_add(FRAME_HEADER_LEN))
        .ok_or("incomplete frame header")?;
    let kind = h[8];
    if !(FRAME_COMMIT..=FRAME_PAD).contains(&kind) {
        return Err("unknown frame kind");
    }
    let len = le32(h) as usize;
    if len > MAX_FRAME_PAYLOAD {
        return Err("frame length over the limit");
    }
    let body = pos + FRAME_HEADER_LEN;
    let payload = buf
        .get(body..body + len)
        .ok_or("frame extends past the end of the log")?;
    let mut c = crc32fast::Hasher::new();
    c.update(&h[..4]);
    c.update(&[kind]);
    crate::hashing::crc32_update(&mut c, payload);
    if c.finalize() != le32(&h[4..8]) {
        return Err("frame checksum mismatch");
    }
    Ok((kind, len))
}

/// One frame seen by a [`Scan`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    /// Offset of the frame's first byte in the log.
    pub offset: u64,
    pub kind: u8,
    pub payload: &'a [u8],
}

/// Recovery policy for damage in the middle of the log (a torn tail is always truncated).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recovery {
    /// Report mid-log damage as [`Error::Corrupt`] and change nothing.
    Strict,
    /// Overwrite each damaged range with a PAD frame and keep every intact frame.
    Repair,
}

/// Bytes a scan reads at once (docs/design.md §7.4): a longer range is checked in windows of
/// this size and its frames are read again, a window at a time, as they are replayed, so an
/// open never holds more than a window (or one larger frame) of the log.
pub const SCAN_WINDOW: usize = 16 << 20;

/// The result of scanning the log on open or for verification. Owns the bytes it read when
/// they fit in [`SCAN_WINDOW`]; else only where the frames are.
pub struct Scan {
    /// Log offset of `data[0]`.
    base: u64,
    /// Empty when the range was scanned in windows.
    data: Vec<u8>,
    windowed: bool,
    /// `(log offset, kind, payload length)` of each non-PAD frame.
    index: Vec<(u64, u8, usize)>,
    truncated: Option<(u64, u64)>,
    repaired: Vec<(u64, u64)>,
    end: u64,
}

impl Scan {
    /// Hand `f` every frame in log order, PAD frames excluded, until it returns `false`.
    /// A scan in windows reads them again with `read` (the log's storage), a window at a time,
    /// each frame's checksum checked again.
    pub fn each(
        &self,
        read: &dyn Fn(u64, &mut [u8]) -> Result<()>,
        f: &mut dyn FnMut(Frame<'_>) -> Result<bool>,
    ) -> Result<()> {
        if !self.windowed {
            for &(offset, kind, len) in &self.index {
                let p = (offset - self.base) as usize + FRAME_HEADER_LEN;
                let payload = &self.data[p..p + len];
                if !f(Frame {
                    offset,
                    kind,
                    payload,
                })? {
                    return Ok(());
                }
            }
            return Ok(());
        }
        let end_of = |&(o, _, l): &(u64, u8, usize)| o + (FRAME_HEADER_LEN + l) as u64;
        let mut buf = Vec::new();
        let mut i = 0;
        while i < self.index.len() {
            let start = self.index[i].0;
            let mut j = i + 1;
            while j < self.index.len() && end_of(&self.index[j]) - start <= SCAN_WINDOW as u64 {
                j += 1;
            }
            let need = (end_of(&self.index[j - 1]) - start) as usize;
            buf.clear();
            if buf.capacity() < need {
                // Not `resize`: its amortized growth would double the window; and the old
                // buffer goes before the new one comes.
                drop(std::mem::take(&mut buf));
                buf.reserve_exact(need.max(SCAN_WINDOW));
            }
            buf.resize(need, 0);
            read(start, &mut buf)?;
            for &(offset, kind, len) in &self.index[i..j] {
                let p = (offset - start) as usize;
                check_frame(&buf, p).map_err(|r| corrupt(offset, None, r))?;
                let payload = &buf[p + FRAME_HEADER_LEN..p + FRAME_HEADER_LEN + len];
                if !f(Frame {
                    offset,
                    kind,
                    payload,
                })? {
                    return Ok(());
                }
            }
            i = j;
        }
        Ok(())
    }

    /// The frames of a scan that fit in one window, in log order, PAD frames excluded. (a test
    /// hook)
    #[cfg(feature = "testing")]
    pub fn frames(&self) -> impl Iterator<Item = Frame<'_>> {
        assert!(!self.windowed, "a scan in windows holds no bytes");
        self.index.iter().map(|&(offset, kind, len)| {
            let p = (offset - self.base) as usize + FRAME_HEADER_LEN;
            Frame {
                offset,
                kind,
                payload: &self.data[p..p + len],
            }
        })
    }

    /// `(offset, bytes dropped)` if a torn tail was truncated away.
    pub fn truncated_tail(&self) -> Option<(u64, u64)> {
        self.truncated
    }

    /// The damaged ranges `[start, end)` that Repair mode padded over.
    pub fn repaired(&self) -> &[(u64, u64)] {
        &self.repaired
    }

    /// The offset just after the last whole frame. (a test hook)
    #[cfg(feature = "testing")]
    pub fn end(&self) -> u64 {
        self.end
    }
}

impl fmt::Debug for Scan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scan")
            .field("start", &self.base)
            .field("end", &self.end)
            .field("frames", &self.index.len())
            .field("truncated_tail", &self.truncated)
            .field("repaired", &self.repaired)
            .finish()
    }
}

/// What a scan may do about damage.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Opening: truncate a torn tail, and per the policy fail on or repair mid-log damage.
    Open(Recovery),
    /// Verifying: change nothing, report any damage (torn tail included) as Corrupt.
    Verify,
}

/// Scan the frames from `base` (a frame boundary) to the end with one `read_at` call.
fn scan_frames<S: Storage>(storage: &mut S, base: u64, mode: Mode) -> Result<Scan> {
    let len = storage.len()?;
    if base < HEADER_LEN || base > len {
        return Err(corrupt(
            base,
            None,
            format!("scan start outside the log (length {len})"),
        ));
    }
    if len - base > SCAN_WINDOW as u64 {
        return scan_windows(storage, base, mode);
    }
    let data = storage.read_vec(base, (len - base) as usize)?;
    scan_bytes(storage, (base, data), Vec::new(), mode)
}

/// Check the frames of a range longer than [`SCAN_WINDOW`] a window at a time, keeping only
/// where they are. At the first frame that does not check, the rest of the log is read whole
/// and handed to [`scan_bytes`], which decides (a torn tail: a few writes at most).
fn scan_windows<S: Storage>(storage: &mut S, base: u64, mode: Mode) -> Result<Scan> {
    let len = storage.len()?;
    let mut index = Vec::new();
    let (mut win, mut win_at) = (Vec::new(), base);
    let mut pos = base;
    while pos < len {
        let covers = |w: &Vec<u8>, at: u64, n: u64| pos + n <= at + w.len() as u64;
        if !covers(&win, win_at, FRAME_HEADER_LEN as u64) {
            drop(std::mem::take(&mut win)); // one window at a time
            win = storage.read_vec(pos, SCAN_WINDOW.min((len - pos) as usize))?;
            win_at = pos;
        }
        let p = (pos - win_at) as usize;
        if p + FRAME_HEADER_LEN <= win.len() {
            let total = (FRAME_HEADER_LEN + le32(&win[p..]) as usize) as u64;
            if total <= (FRAME_HEADER_LEN + MAX_FRAME_PAYLOAD) as u64
                && pos + total <= len
                && !covers(&win, win_at, total)
            {
                drop(std::mem::take(&mut win));
                win = storage.read_vec(
                    pos,
                    total.max(SCAN_WINDOW.min((len - pos) as usize) as u64) as usize,
                )?;
                win_at = pos;
            }
        }
        match check_frame(&win, (pos - win_at) as usize) {
            Ok((kind, n)) => {
                if kind != FRAME_PAD {
                    index.push((pos, kind, n));
                }
                pos += (FRAME_HEADER_LEN + n) as u64;
            }
            Err(_) => {
                drop(win);
                let rest = storage.read_vec(pos, (len - pos) as usize)?;
                let mut scan = scan_bytes(storage, (pos, rest), index, mode)?;
                scan.base = base;
                scan.data = Vec::new();
                scan.windowed = true;
                return Ok(scan);
            }
        }
    }
    Ok(Scan {
        base,
        data: Vec::new(),
        windowed: true,
        index,
        truncated: None,
        repaired: Vec::new(),
        end: pos,
    })
}

/// Check the frames of `data` (the log from offset `base` to its end), after those already in
/// `index`: truncate a torn tail, and per `mode` fail on or repair damage in the middle.
fn scan_bytes<S: Storage>(
    storage: &mut S,
    (base, mut data): (u64, Vec<u8>),
    mut index: Vec<(u64, u8, usize)>,
    mode: Mode,
) -> Result<Scan> {
    let (mut truncated, mut repaired) = (None, Vec::new());
    let mut pos = 0;
    while pos < data.len() {
        let reason = match check_frame(&data, pos) {
            Ok((kind, len)) => {
                if kind != FRAME_PAD {
                    index.push((base + pos as u64, kind, len));
                }
                pos += FRAME_HEADER_LEN + len;
                continue;
            }
            Err(reason) => reason,
        };
        let at = base + pos as u64;
        let last = data.len().saturating_sub(FRAME_HEADER_LEN);
        let next = (pos + 1..=last).find(|&y| check_frame(&data, y).is_ok());
        match (next, mode) {
            (None, Mode::Open(_)) => {
                truncated = Some((at, (data.len() - pos) as u64));
                storage.truncate(at)?;
                data.truncate(pos);
            }
            (Some(y), Mode::Open(Recovery::Repair)) if y - pos >= FRAME_HEADER_LEN => {
                let pad = pad_frames(y - pos);
                storage.write_at(at, &pad)?;
                data[pos..y].copy_from_slice(&pad);
                repaired.push((at, base + y as u64));
                pos = y;
            }
            (next, _) => return Err(corrupt(at, next.map(|y| base + y as u64), reason)),
        }
    }
    if truncated.is_some() || !repaired.is_empty() {
        storage.flush()?;
    }
    Ok(Scan {
        base,
        data,
        windowed: false,
        index,
        truncated,
        repaired,
        end: base + pos as u64,
    })
}

/// An append-only log of frames over a [`Storage`], with an in-memory write buffer.
///
/// Offsets: `durable_len() <= written_len() <= len()`. Frames below `written_len()` were handed
/// to `write_at`; those below `durable_len()` were also flushed. A failed write or flush leaves
/// the buffer intact, so a retry writes everything at the right offset and nothing is lost.
pub struct Log<S: Storage> {
    storage: S,
    buf: Vec<u8>,
    written: u64,
    durable: u64,
    /// The last batch handed to `write_at` (if at most [`RECENT_MAX`] bytes), at offset
    /// `recent_at`: `read_frame` serves it from memory (sync reads back the commits it just
    /// flushed to push them; a storage read costs far more than keeping a small copy).
    recent: Vec<u8>,
    recent_at: u64,
    /// The write buffer holds a commit frame (else only seals, or nothing).
    buf_commits: bool,
}

impl<S: Storage + fmt::Debug> fmt::Debug for Log<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Log")
            .field("storage", &self.storage)
            .field("len", &self.len())
            .field("written_len", &self.written)
            .field("durable_len", &self.durable)
            .finish()
    }
}

impl<S: Storage> Log<S> {
    /// Open the log: check (or, on an empty or torn-header storage, write) the file header,
    /// then scan frames from `from` to the end with one `read_at` call. `from` is `None` for
    /// "just after the header", or an offset known to be a frame boundary (e.g. where a
    /// snapshot ended); frames before it are not read.
    ///
    /// A bad frame at `X` with no valid frame after it is a torn tail: the storage is truncated
    /// to `X` and flushed, and the scan reports it in [`Scan::truncated_tail`]. A bad frame
    /// followed by a valid one at `Y` is mid-log damage: `Strict` returns
    /// `Error::Corrupt { offset: X, next_valid: Some(Y), .. }`; `Repair` overwrites `[X, Y)`
    /// with a PAD frame (or fails with that error if `Y - X < 9`), flushes, and records it in
    /// [`Scan::repaired`].
    pub fn open(mut storage: S, from: Option<u64>, mode: Recovery) -> Result<(Self, Scan)> {
        if storage.len()? < HEADER_LEN {
            // Empty, or a header torn by a crash while the log was being created.
            storage.write_at(0, &header_bytes())?;
            storage.flush()?;
        } else {
            let mut h = [0u8; 16];
            storage.read_at(0, &mut h)?;
            check_header(&h)?;
        }
        let scan = scan_frames(&mut storage, from.unwrap_or(HEADER_LEN), Mode::Open(mode))?;
        let end = scan.end;
        let log = Log {
            storage,
            buf: Vec::new(),
            written: end,
            durable: end,
            recent: Vec::new(),
            recent_at: end,
            buf_commits: false,
        };
        Ok((log, scan))
    }

    /// Queue a frame in the write buffer and return the offset it will have. No I/O.
    /// `kind` must be [`FRAME_COMMIT`] or [`FRAME_SEAL`].
    pub fn append(&mut self, kind: u8, payload: &[u8]) -> Result<u64> {
        if payload.len() > MAX_FRAME_PAYLOAD {
            return Err(Error::TooLarge {
                what: "log frame payload".into(),
                size: payload.len() as u64,
                limit: MAX_FRAME_PAYLOAD as u64,
            });
        }
        if kind != FRAME_COMMIT && kind != FRAME_SEAL {
            return Err(Error::invalid_value(
                "frame kind",
                format!("{kind} is not an appendable frame kind"),
            ));
        }
        let offset = self.len();
        push_frame(&mut self.buf, kind, payload);
        self.buf_commits |= kind == FRAME_COMMIT;
        Ok(offset)
    }

    /// Issue all buffered frames as one `write_at` call (no flush). No-op if nothing is
    /// buffered. On error the frames stay buffered for a retry.
    pub fn write_pending(&mut self) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        self.storage.write_at(self.written, &self.buf)?;
        let at = self.written;
        self.written += self.buf.len() as u64;
        if self.buf.len() <= RECENT_MAX {
            // Keep the batch readable from memory; its old buffer becomes the write buffer.
            std::mem::swap(&mut self.buf, &mut self.recent);
            self.recent_at = at;
        } else {
            self.recent.clear();
            self.recent_at = self.written;
        }
        if self.buf.capacity() > KEEP_BUFFER_CAPACITY {
            self.buf = Vec::new();
        } else {
            self.buf.clear();
        }
        self.buf_commits = false;
        Ok(())
    }

    /// Whether the write buffer holds seal frames only (nothing else waits to be written):
    /// dropping them loses no commit, whose seal can be made again.
    pub fn pending_seals_only(&self) -> bool {
        !self.buf.is_empty() && !self.buf_commits
    }

    /// Drop the buffered frames (the log is being closed without room for them: only
    /// [`Log::pending_seals_only`] makes that safe).
    pub fn discard_pending(&mut self) {
        self.buf.clear();
        self.buf_commits = false;
    }

    /// [`write_pending`](Self::write_pending), then flush the storage. After `Ok`, everything
    /// appended so far is durable. Nothing written since the last flush (or since the open,
    /// whose frames count as durable): no flush, which costs an OPFS round trip and an
    /// `fsync` (a close after reads only, an idle timer).
    pub fn flush(&mut self) -> Result<()> {
        self.write_pending()?;
        if self.durable == self.written {
            return Ok(());
        }
        self.storage.flush()?;
        self.durable = self.written;
        Ok(())
    }

    /// The logical end of the log, buffered frames included.
    pub fn len(&self) -> u64 {
        self.written + self.buf.len() as u64
    }

    /// True if the log holds no frames (not even buffered ones). (a test hook)
    #[cfg(feature = "testing")]
    pub fn is_empty(&self) -> bool {
        self.len() == HEADER_LEN
    }

    /// The end of what was handed to `write_at`.
    pub fn written_len(&self) -> u64 {
        self.written
    }

    /// The end of what was flushed.
    pub fn durable_len(&self) -> u64 {
        self.durable
    }

    /// True if frames are waiting in the write buffer.
    pub fn has_pending(&self) -> bool {
        !self.buf.is_empty()
    }

    /// Bytes waiting in the write buffer. (a test hook)
    #[cfg(feature = "testing")]
    pub fn pending_bytes(&self) -> usize {
        self.buf.len()
    }

    /// Bytes of frames appended and not yet handed to storage.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Fill `buf` with the log's bytes from `offset` (from storage or the write buffer): a
    /// large value's content (docs/design.md §6.6), which lies inside one frame.
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let end = offset + buf.len() as u64;
        if offset < HEADER_LEN || end > self.len() {
            return Err(corrupt(offset, None, "read_at: range outside the log"));
        }
        if offset >= self.written {
            let at = (offset - self.written) as usize;
            buf.copy_from_slice(&self.buf[at..at + buf.len()]);
        } else if end <= self.written {
            self.storage.read_at(offset, buf)?;
        } else {
            let split = (self.written - offset) as usize;
            self.storage.read_at(offset, &mut buf[..split])?;
            let rest = buf.len() - split;
            buf[split..].copy_from_slice(&self.buf[..rest]);
        }
        Ok(())
    }

    /// Read back the frame at `offset` (from storage or the write buffer), checking its crc.
    /// Returns `(kind, payload)`; an offset that holds no valid frame is [`Error::Corrupt`].
    pub fn read_frame(&self, offset: u64) -> Result<(u8, Vec<u8>)> {
        let bad = |reason: &str| corrupt(offset, None, format!("read_frame: {reason}"));
        if offset < HEADER_LEN || offset >= self.len() {
            return Err(bad("offset outside the log"));
        }
        let recent_end = self.recent_at + self.recent.len() as u64;
        let (frame, pos) = if offset >= self.written {
            (None, (offset - self.written) as usize)
        } else if offset >= self.recent_at && offset < recent_end {
            let pos = (offset - self.recent_at) as usize;
            let (kind, len) = check_frame(&self.recent, pos).map_err(bad)?;
            let body = pos + FRAME_HEADER_LEN;
            return Ok((kind, self.recent[body..body + len].to_vec()));
        } else {
            let mut h = [0u8; FRAME_HEADER_LEN];
            let avail = self.written - offset;
            if avail < FRAME_HEADER_LEN as u64 {
                return Err(bad("incomplete frame header"));
            }
            self.storage.read_at(offset, &mut h)?;
            let total = FRAME_HEADER_LEN as u64 + u64::from(le32(&h));
            if le32(&h) as usize > MAX_FRAME_PAYLOAD || total > avail {
                return Err(bad("frame extends past the end of the log"));
            }
            let mut f = vec![0u8; total as usize];
            f[..FRAME_HEADER_LEN].copy_from_slice(&h);
            self.storage
                .read_at(offset + FRAME_HEADER_LEN as u64, &mut f[FRAME_HEADER_LEN..])?;
            (Some(f), 0)
        };
        let buf = frame.as_deref().unwrap_or(&self.buf);
        let (kind, len) = check_frame(buf, pos).map_err(bad)?;
        let body = pos + FRAME_HEADER_LEN;
        Ok((kind, buf[body..body + len].to_vec()))
    }

    /// Re-scan the whole log strictly without modifying it (for `verify()`), after issuing any
    /// buffered frames with [`write_pending`](Self::write_pending). Any damage, a torn tail
    /// included, is [`Error::Corrupt`], as is a storage length other than
    /// [`written_len`](Self::written_len).
    pub fn scan_all(&mut self) -> Result<Scan> {
        self.write_pending()?;
        if self.storage.len()? < HEADER_LEN {
            return Err(corrupt(0, None, "file header missing"));
        }
        let mut h = [0u8; 16];
        self.storage.read_at(0, &mut h)?;
        check_header(&h)?;
        let scan = scan_frames(&mut self.storage, HEADER_LEN, Mode::Verify)?;
        if scan.end != self.written {
            let reason = format!("log is {} bytes long, expected {}", scan.end, self.written);
            return Err(corrupt(scan.end.min(self.written), None, reason));
        }
        Ok(scan)
    }

    pub fn storage(&self) -> &S {
        &self.storage
    }

    pub fn into_storage(self) -> S {
        self.storage
    }
}

/// Check that a whole, valid frame starts at `offset` in `storage`, without a [`Log`].
/// Returns `(kind, crc, end offset)`. Used to anchor a snapshot to the log it was taken from.
pub fn probe_frame<S: Storage>(storage: &S, offset: u64) -> Result<(u8, u32, u64)> {
    let bad = |reason: &str| corrupt(offset, None, format!("probe_frame: {reason}"));
    let len = storage.len()?;
    if offset < HEADER_LEN || offset + FRAME_HEADER_LEN as u64 > len {
        return Err(bad("offset outside the log"));
    }
    let mut h = [0u8; FRAME_HEADER_LEN];
    storage.read_at(offset, &mut h)?;
    let plen = le32(&h) as usize;
    let end = offset + (FRAME_HEADER_LEN + plen) as u64;
    if plen > MAX_FRAME_PAYLOAD || end > len {
        return Err(bad("frame extends past the end of the log"));
    }
    let mut f = vec![0u8; FRAME_HEADER_LEN + plen];
    storage.read_at(offset, &mut f)?;
    let (kind, _) = check_frame(&f, 0).map_err(bad)?;
    Ok((kind, le32(&h[4..8]), end))
}
