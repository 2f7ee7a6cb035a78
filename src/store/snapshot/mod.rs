//! Snapshots (docs/design.md §8): a derived, deletable checkpoint of the commit graph and the
//! materialized state, so opening does not replay all history. Anchored to the log by the
//! offset and checksum of the last frame it covers; a snapshot that does not match its log is
//! ignored.
//!
//! The file: a header, the items of every collection cut into blocks of ~32 KiB (each with
//! its own CRC), then the meta section (log length and anchor, the commit table, the field-name
//! table, each collection's block directory) and a footer pointing at it. Open reads only the
//! meta section; a block is read when a read, a write or a scan first needs its items
//! (`cold.rs`). `encode.rs` writes the file in one streaming pass, `decode.rs` reads the meta
//! section and `blocks.rs` the blocks, one function per section.

mod blocks;
mod decode;
mod encode;

pub use blocks::{load_all, load_changes, load_collection, load_key};
pub use decode::read;

use super::log::{probe_frame, HEADER_LEN};
use super::storage::Storage;
use crate::commit::{PublicKey, Stamp};
use crate::error::Result;
use crate::graph::{CommitInfo, Graph};

pub const SNAPSHOT_MAGIC: &[u8; 8] = b"IBEXSNP1";
/// Version 3 cut the items into blocks read on demand; version 2 added the access lists
/// (docs/design.md §8). A file of an older version is ignored (the log is replayed) and
/// rewritten at the next snapshot.
pub const SNAPSHOT_VERSION: u32 = 3;
/// Commit flags.
const F_TRUSTED: u8 = 1;
const F_SEALED: u8 = 2;
/// Item flags.
const I_DELETE: u8 = 1;
const I_META: u8 = 2;
/// Field-metadata flags: the field is a set (dots follow); `top` differs from `stamp`.
const M_SET: u8 = 1;
const M_TOP: u8 = 2;

/// A decoded snapshot.
pub struct SnapshotData {
    /// Log bytes covered (a frame boundary).
    pub log_len: u64,
    /// Offset and crc of the last frame covered (None when the log held no frames).
    pub anchor: Option<(u64, u32)>,
    pub graph: Graph,
}

/// Encode a snapshot of `graph`, which must be the result of replaying exactly the first
/// `log_len` bytes of `log`, anchored to the last frame it covers.
pub fn encode_for<S: Storage>(graph: &Graph, log_len: u64, log: &S) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    encode::encode(graph, log_len, anchor_of(graph, log)?, &mut |b| {
        bytes.extend_from_slice(b);
        Ok(())
    })?;
    Ok(bytes)
}

/// [`encode_for`] written to `dst` (truncated first) a chunk at a time, then flushed: the
/// encoded file is never in memory whole.
pub fn write_for<S: Storage, D: Storage>(
    graph: &Graph,
    log_len: u64,
    log: &S,
    dst: &mut D,
) -> Result<()> {
    let anchor = anchor_of(graph, log)?;
    dst.truncate(0)?;
    let mut at = 0u64;
    encode::encode(graph, log_len, anchor, &mut |b| {
        dst.write_at(at, b)?;
        at += b.len() as u64;
        Ok(())
    })?;
    dst.flush()?;
    Ok(())
}

/// The offset and CRC of the last log frame `graph` covers.
fn anchor_of<S: Storage>(graph: &Graph, log: &S) -> Result<Option<(u64, u32)>> {
    Ok(match last_frame(graph) {
        Some(off) => Some((off, probe_frame(log, off)?.1)),
        None => None,
    })
}

/// The offset of the last frame `graph` covers: its last commit or its last seal.
fn last_frame(graph: &Graph) -> Option<u64> {
    let c = graph.commits.last().map(|c| c.offset);
    let s = graph.seal_offsets.iter().max().copied();
    c.max(s)
}

/// Whether the snapshot's anchor matches `log`: the last covered frame is where the snapshot
/// says, with the same checksum, and ends exactly at `log_len`.
pub fn anchor_matches<S: Storage>(d: &SnapshotData, log: &S) -> bool {
    match d.anchor {
        None => d.log_len == HEADER_LEN,
        Some((off, crc)) => {
            matches!(probe_frame(log, off), Ok((_, c, end)) if c == crc && end == d.log_len)
        }
    }
}

/// Read the whole snapshot file.
pub fn read_bytes<S: Storage>(s: &S) -> Result<Vec<u8>> {
    let len = s.len()?;
    Ok(s.read_vec(0, len as usize)?)
}

/// The stamp of each commit of the table, by index: stamps are written as references to
/// them (`varint k ≥ 2` = commit `k − 2`).
fn commit_stamps(authors: &[PublicKey], commits: &[CommitInfo]) -> Vec<Stamp> {
    let tags: Vec<u64> = authors.iter().map(PublicKey::tag).collect();
    commits
        .iter()
        .map(|c| Stamp {
            hlc: c.hlc,
            author: tags[c.author as usize],
            commit: c.id.tag(),
        })
        .collect()
}
