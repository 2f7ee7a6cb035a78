//! A snapshot's commit table (docs/design.md §8, *Commit table*): the commits are written in
//! **table segments**, blocks of consecutive commits between the file's other blocks, and the
//! meta section lists the segments and which commits are sealed. An appended snapshot keeps
//! the file's segments where they are and writes only the commits added since (merged with
//! the last segments while those are no larger than what is written, so a file holds few
//! segments and each commit is rewritten a logarithmic number of times): the close of a
//! session of single-item writes no longer rewrites a table of every commit the repository
//! ever had.
//!
//! The only field of a commit that changes after it is written is `sealed` (a seal arrives
//! later): segments do not carry it; the meta section lists the sealed flags of every commit
//! as runs.

use super::out::Out;
use super::{F_SEALED, F_TRUSTED, F_VOID};
use crate::codec::{Reader, Writer};
use crate::commit::CommitId;
use crate::error::{Error, Result};
use crate::graph::{CommitInfo, Graph};
use crate::store::Storage;

/// Where a run of consecutive commits of the table is in the snapshot file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableSegment {
    pub offset: u64,
    pub len: u32,
    /// Commits it holds (≥ 1).
    pub count: u32,
    /// Checksum of its bytes (`hashing::block_sum`).
    pub crc: u32,
}

/// A segment holds at most this many commits (a few MiB): an open reads a table of a million
/// commits in a few reads, and no segment is one huge buffer.
pub(super) const SEGMENT_MAX_COMMITS: usize = 1 << 16;

/// The fewest bytes a commit takes in a segment: id, offset, hlc, author, flags, parents, list.
const MIN_COMMIT_BYTES: u64 = 32 + 1 + 8 + 1 + 1 + 1 + 1;

/// How many of the file's segments `kept` (covering the table's first commits) an appended
/// snapshot of a table of `total` commits lists as they are: the last ones are merged into
/// the new segment while each is no larger than what that segment would hold (and not full).
/// None is kept if they do not describe a prefix of the table.
pub(super) fn kept_prefix(kept: &[TableSegment], total: usize) -> usize {
    let covered: usize = kept.iter().map(|s| s.count as usize).sum();
    if covered > total {
        return 0;
    }
    let (mut keep, mut acc) = (kept.len(), total - covered);
    while keep > 0 {
        let n = kept[keep - 1].count as usize;
        if acc == 0 || n >= SEGMENT_MAX_COMMITS || n > acc {
            break;
        }
        acc += n;
        keep -= 1;
    }
    keep
}

/// Write the commits not in `kept` (a prefix of the table's segments, as [`kept_prefix`]
/// chose) as new segments through `f`; returns every segment of the new table.
pub(super) fn write_segments(
    f: &mut Out<'_>,
    commits: &[CommitInfo],
    kept: &[TableSegment],
) -> Result<Vec<TableSegment>> {
    let mut out = kept.to_vec();
    let from: usize = kept.iter().map(|s| s.count as usize).sum();
    let mut buf = Writer::new();
    for chunk in commits[from..].chunks(SEGMENT_MAX_COMMITS) {
        buf.buf.clear();
        for c in chunk {
            commit(&mut buf, c);
        }
        out.push(TableSegment {
            offset: f.offset(),
            len: u32::try_from(buf.buf.len()).expect("a segment is a few MiB"),
            count: chunk.len() as u32,
            crc: crate::hashing::block_sum(&buf.buf),
        });
        f.block(&buf.buf)?;
    }
    Ok(out)
}

/// One commit in a segment: id, log offset, hlc, author index, flags (sealed is not here),
/// parent indices, access-list index.
fn commit(w: &mut Writer, c: &CommitInfo) {
    w.bytes(&c.id.0);
    w.varint(c.offset);
    w.u64(c.hlc);
    w.varint(u64::from(c.author));
    let flags = if c.trusted { F_TRUSTED } else { 0 } | if c.counts { 0 } else { F_VOID };
    w.u8(flags);
    w.varint(c.parents.len() as u64);
    for p in &c.parents {
        w.varint(u64::from(*p));
    }
    w.varint(u64::from(c.acl));
}

/// The meta section's commit table: the number of commits, the segments, then the sealed
/// flags as runs of equal flags, alternating, the first run unsealed (it may be empty).
pub(super) fn directory(w: &mut Writer, graph: &Graph, segments: &[TableSegment]) {
    w.varint(graph.commits.len() as u64);
    w.varint(segments.len() as u64);
    for s in segments {
        w.varint(s.offset);
        w.varint(u64::from(s.len));
        w.varint(u64::from(s.count));
        w.u32(s.crc);
    }
    let mut runs = Vec::new();
    let (mut sealed, mut run) = (false, 0u64);
    for c in &graph.commits {
        if c.sealed != sealed {
            runs.push(run);
            (sealed, run) = (c.sealed, 0);
        }
        run += 1;
    }
    runs.push(run);
    w.varint(runs.len() as u64);
    for r in runs {
        w.varint(r);
    }
}

/// Read the commit table: its directory from the meta section (`r`), each segment from `src`
/// (inside `bounds`, between the header and the meta section, checked against its checksum; its
/// span is added to `spans`, which must not overlap), into `graph` (its authors and access
/// lists are read). Returns the segments.
pub(super) fn read<S: Storage>(
    r: &mut Reader<'_>,
    src: &S,
    (start, meta_offset): (u64, u64),
    graph: &mut Graph,
    spans: &mut Vec<(u64, u64)>,
) -> Result<Vec<TableSegment>> {
    let nc = usize::try_from(r.varint()?).map_err(|_| r.err("too many commits"))?;
    if nc > u32::MAX as usize {
        return Err(r.err("too many commits"));
    }
    let nseg = r.count(4 + 4, nc)?;
    let mut segments = Vec::with_capacity(nseg);
    let mut covered = 0usize;
    for _ in 0..nseg {
        let s = TableSegment {
            offset: r.varint()?,
            len: u32::try_from(r.varint()?).map_err(|_| r.err("segment too long"))?,
            count: u32::try_from(r.varint()?).map_err(|_| r.err("bad segment count"))?,
            crc: r.u32()?,
        };
        let end = s.offset.checked_add(u64::from(s.len));
        let inside = s.offset >= start && end.is_some_and(|e| e <= meta_offset);
        let sane = s.count >= 1 && u64::from(s.count) * MIN_COMMIT_BYTES <= u64::from(s.len);
        if !inside || !sane {
            return Err(r.err("bad commit segment entry"));
        }
        covered += s.count as usize;
        spans.push((s.offset, s.offset + u64::from(s.len)));
        segments.push(s);
    }
    if covered != nc {
        return Err(r.err("commit segments do not hold the table"));
    }
    let sealed = sealed_runs(r, nc)?;
    let na = graph.authors.len();
    let nl = graph.acls.len();
    graph.commits.reserve(nc);
    let mut has_child = vec![false; nc];
    for s in &segments {
        let bytes = src.read_vec(s.offset, s.len as usize)?;
        if crate::hashing::block_sum(&bytes) != s.crc {
            return Err(Error::decode(
                "snapshot",
                "commit segment checksum mismatch",
            ));
        }
        let mut sr = Reader::new(&bytes, "snapshot commit segment");
        for _ in 0..s.count {
            let i = graph.commits.len();
            let mut c = read_commit(&mut sr, i, (na, nl), &mut has_child)?;
            c.sealed = sealed[i];
            graph.by_id.insert(c.id, i as u32);
            graph.commits.push(c);
        }
        sr.finish()?;
    }
    graph.heads = graph
        .commits
        .iter()
        .zip(&has_child)
        .filter(|(_, c)| !**c)
        .map(|(c, _)| c.id)
        .collect();
    Ok(segments)
}

/// The sealed flag of each of `nc` commits, from its runs.
fn sealed_runs(r: &mut Reader<'_>, nc: usize) -> Result<Vec<bool>> {
    let nr = r.count(1, nc + 1)?;
    let mut out = Vec::with_capacity(nc);
    for k in 0..nr {
        let n = usize::try_from(r.varint()?).map_err(|_| r.err("bad sealed run"))?;
        if (k > 0 && n == 0) || n > nc - out.len() {
            return Err(r.err("bad sealed run"));
        }
        out.resize(out.len() + n, k % 2 == 1);
    }
    if out.len() != nc {
        return Err(r.err("sealed runs do not cover the table"));
    }
    Ok(out)
}

/// Commit `i` of the table (`na` authors, `nl` access lists); marks its parents in
/// `has_child`. Its sealed flag comes from the meta section's runs.
fn read_commit(
    r: &mut Reader<'_>,
    i: usize,
    (na, nl): (usize, usize),
    has_child: &mut [bool],
) -> Result<CommitInfo> {
    let id = CommitId(r.array()?);
    let offset = r.varint()?;
    let hlc = r.u64()?;
    let author = r.varint()?;
    if author >= na as u64 {
        return Err(r.err("author index out of range"));
    }
    let flags = r.u8()?;
    if flags & !(F_TRUSTED | F_VOID) != 0 || flags & F_SEALED != 0 {
        return Err(r.err("bad commit flags"));
    }
    let np = r.count(1, i)?;
    let mut parents = Vec::with_capacity(np);
    for _ in 0..np {
        let p = r.varint()?;
        if p >= i as u64 {
            return Err(r.err("parent index out of range"));
        }
        has_child[p as usize] = true;
        parents.push(p as u32);
    }
    let acl = r.varint()?;
    if acl >= nl as u64 {
        return Err(r.err("access-list index out of range"));
    }
    Ok(CommitInfo {
        id,
        offset,
        hlc,
        author: author as u32,
        trusted: flags & F_TRUSTED != 0,
        sealed: false,
        parents,
        acl: acl as u32,
        counts: flags & F_VOID == 0,
    })
}
