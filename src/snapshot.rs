//! Snapshots: a derived, deletable checkpoint of the commit table and materialized state, so
//! opening does not replay all history. Anchored to the log by the offset and checksum of the
//! last frame it covers; a snapshot that does not match its log is ignored. Layout in
//! docs/design.md ("Snapshot file").

use crate::codec::{Reader, Writer};
use crate::commit::{CommitId, Stamp};
use crate::commit::{PublicKey, PUBLIC_KEY_LEN};
use crate::error::{Error, Result};
use crate::log::{probe_frame, HEADER_LEN};
use crate::repo::{CommitInfo, Core};
use crate::state::{Collection, FieldMeta, History, Item, ItemId};
use crate::storage::Storage;
use crate::value::{Map, Name, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};

pub const SNAPSHOT_MAGIC: &[u8; 8] = b"IBEXSNP1";
pub const SNAPSHOT_VERSION: u32 = 1;
const F_TRUSTED: u8 = 1;
const F_SEALED: u8 = 2;
const I_DELETE: u8 = 1;
const I_META: u8 = 2;

/// A decoded snapshot.
pub struct SnapshotData {
    /// Log bytes covered (a frame boundary).
    pub log_len: u64,
    /// Offset and crc of the last frame covered (None when the log held no frames).
    pub anchor: Option<(u64, u32)>,
    pub core: Core,
}

/// Encode `core`, which must be the result of replaying exactly the first `log_len` bytes of
/// the log held by the caller.
pub fn encode(core: &Core, log_len: u64) -> Vec<u8> {
    encode_with_anchor(core, log_len, None)
}

fn last_frame(core: &Core) -> Option<u64> {
    let c = core.commits.last().map(|c| c.offset);
    let s = core.seal_offsets.iter().max().copied();
    c.max(s)
}

fn encode_with_anchor(core: &Core, log_len: u64, anchor_crc: Option<u32>) -> Vec<u8> {
    let mut w = Writer::with_capacity(64 + core.state.len() * 64);
    w.bytes(SNAPSHOT_MAGIC);
    w.u32(SNAPSHOT_VERSION);
    w.u64(log_len);
    match (last_frame(core), anchor_crc) {
        (Some(off), crc) => {
            w.u8(1);
            w.u64(off);
            w.u32(crc.unwrap_or(0));
        }
        (None, _) => w.u8(0),
    }
    // Authors and commits.
    w.varint(core.authors.len() as u64);
    for a in &core.authors {
        w.bytes(&a.0);
    }
    w.varint(core.commits.len() as u64);
    for c in &core.commits {
        w.bytes(&c.id.0);
        w.varint(c.offset);
        w.u64(c.hlc);
        w.varint(u64::from(c.author));
        w.u8(if c.trusted { F_TRUSTED } else { 0 } | if c.sealed { F_SEALED } else { 0 });
        w.varint(c.parents.len() as u64);
        for p in &c.parents {
            w.varint(u64::from(*p));
        }
    }
    w.varint(core.seal_offsets.len() as u64);
    for o in &core.seal_offsets {
        w.varint(*o);
    }
    let cover: BTreeMap<&CommitId, &Vec<PublicKey>> = core.seal_cover.iter().collect();
    w.varint(cover.len() as u64);
    for (id, authors) in cover {
        w.bytes(&id.0);
        w.varint(authors.len() as u64);
        for a in authors {
            w.bytes(&a.0);
        }
    }
    // Stamp references: 0 = ZERO, 1 = raw, k >= 2 = commit k - 2.
    let tags: Vec<u64> = core.authors.iter().map(PublicKey::tag).collect();
    let stamps: HashMap<Stamp, u32> = core
        .commits
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let s = Stamp {
                hlc: c.hlc,
                author: tags[c.author as usize],
                commit: u64::from_be_bytes(c.id.0[..8].try_into().unwrap()),
            };
            (s, i as u32)
        })
        .collect();
    let stamp = |w: &mut Writer, s: &Stamp| {
        if *s == Stamp::ZERO {
            w.varint(0);
        } else if let Some(i) = stamps.get(s) {
            w.varint(u64::from(*i) + 2);
        } else {
            w.varint(1);
            s.encode(w);
        }
    };
    // Field-name table.
    let mut names: BTreeSet<&str> = BTreeSet::new();
    for c in core.state.collections.values() {
        for it in c.items.values() {
            names.extend(it.value.keys().map(Name::as_str));
            if let Some(m) = &it.meta {
                names.extend(m.keys().map(Name::as_str));
            }
        }
    }
    let name_idx: HashMap<&str, u64> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (*n, i as u64))
        .collect();
    w.varint(names.len() as u64);
    for n in &names {
        w.lp(n.as_bytes());
    }
    w.varint(core.state.collections.len() as u64);
    for (cname, c) in &core.state.collections {
        w.lp(cname.as_bytes());
        w.varint(c.items.len() as u64);
        for (id, it) in &c.items {
            w.lp(id.as_bytes());
            stamp(&mut w, &it.reset);
            stamp(&mut w, &it.last);
            w.u8(if it.reset_is_delete { I_DELETE } else { 0 }
                | if it.meta.is_some() { I_META } else { 0 });
            w.varint(it.value.len() as u64);
            for (k, v) in &it.value {
                w.varint(name_idx[k.as_str()]);
                v.encode(&mut w);
            }
            w.varint(it.history.len() as u64);
            let mut prev = 0u32;
            for &h in &it.history {
                w.varint(u64::from(h - prev));
                prev = h;
            }
            if let Some(m) = &it.meta {
                w.varint(m.len() as u64);
                for (k, fm) in m.iter() {
                    w.varint(name_idx[k.as_str()]);
                    stamp(&mut w, &fm.stamp);
                    // Flags: bit 0 = the field is a set (dots follow), bit 1 = `top` differs
                    // from `stamp` (its stamp follows first).
                    let has_top = fm.top != fm.stamp;
                    w.u8(u8::from(fm.dots.is_some()) | if has_top { 2 } else { 0 });
                    if has_top {
                        stamp(&mut w, &fm.top);
                    }
                    match &fm.dots {
                        None => {}
                        Some(d) => {
                            w.varint(d.len() as u64);
                            for (e, ds) in d {
                                w.lp(e.as_bytes());
                                w.varint(ds.len() as u64);
                                for s in ds {
                                    stamp(&mut w, s);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    let crc = crc32fast::hash(&w.buf);
    w.u32(crc);
    w.into_inner()
}

/// Encode a snapshot anchored to the last frame of `log` it covers.
pub fn encode_for<S: Storage>(core: &Core, log_len: u64, log: &S) -> Result<Vec<u8>> {
    let crc = match last_frame(core) {
        Some(off) => Some(probe_frame(log, off)?.1),
        None => None,
    };
    Ok(encode_with_anchor(core, log_len, crc))
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

/// Read and decode a snapshot file.
pub fn read<S: Storage>(s: &S) -> Result<SnapshotData> {
    decode(&read_bytes(s)?)
}

/// Decode a snapshot, checking its magic, version and checksum.
pub fn decode(bytes: &[u8]) -> Result<SnapshotData> {
    if bytes.len() < 8 + 4 + 8 + 1 + 4 {
        return Err(Error::decode("snapshot", "too short"));
    }
    let (body, trailer) = bytes.split_at(bytes.len() - 4);
    if crc32fast::hash(body) != u32::from_le_bytes(trailer.try_into().unwrap()) {
        return Err(Error::decode("snapshot", "checksum mismatch"));
    }
    let mut r = Reader::new(body, "snapshot");
    if r.take(8)? != SNAPSHOT_MAGIC {
        return Err(r.err("bad magic"));
    }
    let v = r.u32()?;
    if v != SNAPSHOT_VERSION {
        return Err(r.err(format!("unsupported version {v}")));
    }
    let log_len = r.u64()?;
    let anchor = match r.u8()? {
        0 => None,
        1 => Some((r.u64()?, r.u32()?)),
        _ => return Err(r.err("bad anchor flag")),
    };
    let mut core = Core::default();
    let na = r.count(PUBLIC_KEY_LEN, u32::MAX as usize)?;
    for _ in 0..na {
        let pk = PublicKey(r.array()?);
        core.author_index(pk);
    }
    let nc = r.count(32 + 11, u32::MAX as usize)?;
    core.commits.reserve(nc);
    let mut has_child = vec![false; nc];
    for i in 0..nc {
        let id = CommitId(r.array()?);
        let offset = r.varint()?;
        let hlc = r.u64()?;
        let author = r.varint()?;
        if author >= na as u64 {
            return Err(r.err("author index out of range"));
        }
        let flags = r.u8()?;
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
        core.by_id.insert(id, i as u32);
        core.commits.push(CommitInfo {
            id,
            offset,
            hlc,
            author: author as u32,
            trusted: flags & F_TRUSTED != 0,
            sealed: flags & F_SEALED != 0,
            parents,
        });
    }
    core.heads = core
        .commits
        .iter()
        .zip(&has_child)
        .filter(|(_, c)| !**c)
        .map(|(c, _)| c.id)
        .collect();
    let ns = r.count(1, usize::MAX)?;
    for _ in 0..ns {
        core.seal_offsets.push(r.varint()?);
    }
    let ncov = r.count(33, usize::MAX)?;
    for _ in 0..ncov {
        let id = CommitId(r.array()?);
        let n = r.count(PUBLIC_KEY_LEN, usize::MAX)?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(PublicKey(r.array()?));
        }
        core.seal_cover.insert(id, v);
    }
    let tags: Vec<u64> = core.authors.iter().map(PublicKey::tag).collect();
    let stamp_of: Vec<Stamp> = core
        .commits
        .iter()
        .map(|c| Stamp {
            hlc: c.hlc,
            author: tags[c.author as usize],
            commit: u64::from_be_bytes(c.id.0[..8].try_into().unwrap()),
        })
        .collect();
    let read_stamp = |r: &mut Reader<'_>| -> Result<Stamp> {
        match r.varint()? {
            0 => Ok(Stamp::ZERO),
            1 => Stamp::decode(r),
            k => stamp_of
                .get((k - 2) as usize)
                .copied()
                .ok_or_else(|| r.err("stamp reference out of range")),
        }
    };
    let nn = r.count(1, usize::MAX)?;
    let mut names: Vec<Name> = Vec::with_capacity(nn);
    for _ in 0..nn {
        let n = Name::new(r.str()?);
        // The encoder writes a sorted set; field decoding below relies on it.
        if names.last().is_some_and(|l| *l >= n) {
            return Err(r.err("field names not strictly ascending"));
        }
        names.push(n);
    }
    let name = |r: &mut Reader<'_>| -> Result<Name> {
        let i = r.varint()?;
        names
            .get(i as usize)
            .cloned()
            .ok_or_else(|| r.err("name index out of range"))
    };
    let ncoll = r.count(2, usize::MAX)?;
    for _ in 0..ncoll {
        let cname = r.str()?.to_owned();
        let ni = r.count(4, usize::MAX)?;
        let mut items: Vec<(ItemId, Item)> = Vec::with_capacity(ni);
        for _ in 0..ni {
            let id = ItemId::new(r.str()?);
            // `ItemId`'s order is `str`'s; between inline ids it is two word compares.
            if items.last().is_some_and(|(l, _)| *l >= id) {
                return Err(r.err("item ids not strictly ascending"));
            }
            let reset = read_stamp(&mut r)?;
            let last = read_stamp(&mut r)?;
            let flags = r.u8()?;
            let nf = r.count(2, usize::MAX)?;
            let mut value = Map::with_capacity(nf);
            let mut last_name = None;
            for _ in 0..nf {
                let i = r.varint()?;
                let k = names
                    .get(i as usize)
                    .ok_or_else(|| r.err("name index out of range"))?
                    .clone();
                let v = Value::decode(&mut r)?;
                // The name table is sorted and the encoder writes fields in name order, so
                // ascending indices are ascending names: append without comparing names.
                if last_name.is_none_or(|l| l < i) {
                    value.push_ordered(k, v);
                } else {
                    value.insert(k, v);
                }
                last_name = Some(i);
            }
            let nh = r.count(1, u32::MAX as usize)?;
            let mut history = History::default();
            let mut prev = 0u64;
            for _ in 0..nh {
                prev += r.varint()?;
                if prev >= nc as u64 {
                    return Err(r.err("history index out of range"));
                }
                history.push(prev as u32);
            }
            let meta = if flags & I_META != 0 {
                let nm = r.count(2, usize::MAX)?;
                let mut m = BTreeMap::new();
                for _ in 0..nm {
                    let k = name(&mut r)?;
                    let stamp = read_stamp(&mut r)?;
                    let flags = r.u8()?;
                    if flags > 3 {
                        return Err(r.err("bad field flags"));
                    }
                    let top = if flags & 2 != 0 {
                        read_stamp(&mut r)?
                    } else {
                        stamp
                    };
                    let dots = match flags & 1 {
                        0 => None,
                        _ => {
                            let ne = r.count(2, usize::MAX)?;
                            let mut d = BTreeMap::new();
                            for _ in 0..ne {
                                let e = Name::new(r.str()?);
                                let nd = r.count(1, usize::MAX)?;
                                let mut ds = Vec::with_capacity(nd);
                                for _ in 0..nd {
                                    ds.push(read_stamp(&mut r)?);
                                }
                                d.insert(e, ds);
                            }
                            Some(d)
                        }
                    };
                    m.insert(k, FieldMeta { stamp, top, dots });
                }
                Some(Box::new(m))
            } else {
                None
            };
            items.push((
                id,
                Item {
                    value,
                    reset,
                    reset_is_delete: flags & I_DELETE != 0,
                    last,
                    meta,
                    history,
                },
            ));
        }
        core.state
            .collections
            .insert(cname, Collection::from_sorted(items));
    }
    r.finish()?;
    Ok(SnapshotData {
        log_len,
        anchor,
        core,
    })
}
