//! Reading a snapshot, one function per section of the format (docs/design.md §8). Every
//! count, index and order the encoder guarantees is checked: a damaged or foreign file is a
//! `DecodeError`, never a wrong graph.

use super::{commit_stamps, SnapshotData, F_SEALED, F_TRUSTED, I_DELETE, I_META, M_SET, M_TOP};
use super::{SNAPSHOT_MAGIC, SNAPSHOT_VERSION};
use crate::access::{Acl, Role, Stamped};
use crate::codec::Reader;
use crate::commit::{CommitId, PublicKey, Stamp, PUBLIC_KEY_LEN};
use crate::error::{Error, Result};
use crate::graph::{CommitInfo, Graph};
use crate::state::{Collection, FieldMeta, History, Item, ItemId, StampRef, State};
use crate::value::{Map, Name, Value};
use std::collections::BTreeMap;

/// Decode a snapshot, checking its magic, version and checksum. The bytes are dropped as soon
/// as every item is decoded, before the collections' trees are built: the file and the trees
/// are never in memory together (a high-water mark that wasm memory keeps).
pub fn decode(bytes: Vec<u8>) -> Result<SnapshotData> {
    if bytes.len() < 8 + 4 + 8 + 1 + 4 {
        return Err(Error::decode("snapshot", "too short"));
    }
    let (body, trailer) = bytes.split_at(bytes.len() - 4);
    if crc32fast::hash(body) != u32::from_le_bytes(trailer.try_into().unwrap()) {
        return Err(Error::decode("snapshot", "checksum mismatch"));
    }
    let mut r = Reader::new(body, "snapshot");
    let (log_len, anchor) = header(&mut r)?;
    let mut graph = Graph::default();
    commit_table(&mut r, &mut graph)?;
    let tables = Tables {
        stamps: commit_stamps(&graph.authors, &graph.commits),
        names: name_table(&mut r)?,
    };
    let ncoll = r.count(2, usize::MAX)?;
    let mut decoded = Vec::with_capacity(ncoll);
    for _ in 0..ncoll {
        decoded.push(collection(&mut r, &tables)?);
    }
    r.finish()?;
    drop(bytes);
    let collections = decoded
        .into_iter()
        .map(|(name, items)| (name, Collection::from_sorted(items)))
        .collect();
    graph.state = State::from_parts(collections, tables.stamps);
    Ok(SnapshotData {
        log_len,
        anchor,
        graph,
    })
}

/// Magic, version, `log_len` and the anchor.
fn header(r: &mut Reader<'_>) -> Result<(u64, Option<(u64, u32)>)> {
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
    Ok((log_len, anchor))
}

/// Authors, commits (heads are derived: the commits no other names as a parent), seal
/// offsets and the seal cover.
fn commit_table(r: &mut Reader<'_>, graph: &mut Graph) -> Result<()> {
    let na = r.count(PUBLIC_KEY_LEN, u32::MAX as usize)?;
    for _ in 0..na {
        let pk = PublicKey(r.array()?);
        graph.author_index(pk);
    }
    access_lists(r, graph)?;
    let nl = graph.acls.len();
    let nc = r.count(32 + 12, u32::MAX as usize)?;
    graph.commits.reserve(nc);
    let mut has_child = vec![false; nc];
    for i in 0..nc {
        let c = commit(r, i, (na, nl), &mut has_child)?;
        graph.by_id.insert(c.id, i as u32);
        graph.commits.push(c);
    }
    graph.heads = graph
        .commits
        .iter()
        .zip(&has_child)
        .filter(|(_, c)| !**c)
        .map(|(c, _)| c.id)
        .collect();
    let ns = r.count(1, usize::MAX)?;
    for _ in 0..ns {
        graph.seal_offsets.push(r.varint()?);
    }
    let ncov = r.count(33, usize::MAX)?;
    for _ in 0..ncov {
        let id = CommitId(r.array()?);
        let n = r.count(PUBLIC_KEY_LEN, usize::MAX)?;
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            v.push(PublicKey(r.array()?));
        }
        graph.seal_cover.insert(id, v);
    }
    Ok(())
}

/// The interned access lists: list 0 is the empty list and no list appears twice (the table
/// is rebuilt by interning); then the index of the whole graph's list.
fn access_lists(r: &mut Reader<'_>, graph: &mut Graph) -> Result<()> {
    let nl = r.count(2, u32::MAX as usize)?;
    if nl == 0 {
        return Err(r.err("the access-list table lacks the empty list"));
    }
    for i in 0..nl {
        let acl = access_list(r)?;
        if (i == 0) != (acl == Acl::default()) || graph.acls.intern(acl) as usize != i {
            return Err(r.err("access lists out of order or repeated"));
        }
    }
    graph.acl = r.varint()? as u32;
    if graph.acl as usize >= nl {
        return Err(r.err("access-list index out of range"));
    }
    Ok(())
}

fn access_list(r: &mut Reader<'_>) -> Result<Acl> {
    let mut acl = Acl {
        owned: flag(r)?,
        ..Acl::default()
    };
    let nm = r.count(PUBLIC_KEY_LEN + 25, usize::MAX)?;
    for _ in 0..nm {
        let k = PublicKey(r.array()?);
        let stamp = Stamp::decode(r)?;
        let value = Role::from_code(r.u8()?).ok_or_else(|| r.err("bad role"))?;
        if acl.members.last_key_value().is_some_and(|(l, _)| *l >= k) {
            return Err(r.err("access-list members not strictly ascending"));
        }
        acl.members.insert(k, Stamped { stamp, value });
    }
    if flag(r)? {
        let stamp = Stamp::decode(r)?;
        let value = (flag(r)?, flag(r)?);
        acl.public = Some(Stamped { stamp, value });
    }
    Ok(acl)
}

/// A byte that must be 0 or 1.
fn flag(r: &mut Reader<'_>) -> Result<bool> {
    match r.u8()? {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(r.err("bad flag byte")),
    }
}

/// Commit `i` of the table (`na` authors, `nl` access lists); marks its parents in
/// `has_child`.
fn commit(
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
        sealed: flags & F_SEALED != 0,
        parents,
        acl: acl as u32,
    })
}

/// The field names, strictly ascending (field decoding relies on it).
fn name_table(r: &mut Reader<'_>) -> Result<Vec<Name>> {
    let nn = r.count(1, usize::MAX)?;
    let mut names: Vec<Name> = Vec::with_capacity(nn);
    for _ in 0..nn {
        let n = Name::new(r.str()?);
        if names.last().is_some_and(|l| *l >= n) {
            return Err(r.err("field names not strictly ascending"));
        }
        names.push(n);
    }
    Ok(names)
}

/// What items refer to by index: the commits' stamps and the field names.
struct Tables {
    stamps: Vec<Stamp>,
    names: Vec<Name>,
}

impl Tables {
    fn stamp(&self, r: &mut Reader<'_>) -> Result<Stamp> {
        match r.varint()? {
            0 => Ok(Stamp::ZERO),
            1 => Stamp::decode(r),
            k => self
                .stamps
                .get((k - 2) as usize)
                .copied()
                .ok_or_else(|| r.err("stamp reference out of range")),
        }
    }

    /// A stamp that must be a commit's (or zero): an item's reset and last write.
    fn stamp_ref(&self, r: &mut Reader<'_>) -> Result<StampRef> {
        match r.varint()? {
            0 => Ok(0),
            k if k >= 2 && k - 2 < self.stamps.len() as u64 => Ok((k - 1) as StampRef),
            _ => Err(r.err("item stamp is not a commit's")),
        }
    }

    /// A field name by its index; returns the index too.
    fn name(&self, r: &mut Reader<'_>) -> Result<(u64, Name)> {
        let i = r.varint()?;
        let n = self.names.get(i as usize).cloned();
        Ok((i, n.ok_or_else(|| r.err("name index out of range"))?))
    }
}

/// One collection: its name and its items, ids strictly ascending.
type Decoded = (String, Vec<(ItemId, Item)>);

fn collection(r: &mut Reader<'_>, t: &Tables) -> Result<Decoded> {
    let cname = r.str()?.to_owned();
    let ni = r.count(4, usize::MAX)?;
    let mut items: Vec<(ItemId, Item)> = Vec::with_capacity(ni);
    for _ in 0..ni {
        let id = ItemId::new(r.str()?);
        // `ItemId`'s order is `str`'s; between inline ids it is two word compares.
        if items.last().is_some_and(|(l, _)| *l >= id) {
            return Err(r.err("item ids not strictly ascending"));
        }
        items.push((id, item(r, t)?));
    }
    Ok((cname, items))
}

fn item(r: &mut Reader<'_>, t: &Tables) -> Result<Item> {
    let reset = t.stamp_ref(r)?;
    let last = t.stamp_ref(r)?;
    let flags = r.u8()?;
    let value = fields(r, t)?;
    let history = history(r, t.stamps.len())?;
    let meta = match flags & I_META {
        0 => None,
        _ => Some(Box::new(item_meta(r, t)?)),
    };
    Ok(Item {
        value,
        reset,
        reset_is_delete: flags & I_DELETE != 0,
        last,
        meta,
        history,
    })
}

/// An item's visible fields.
fn fields(r: &mut Reader<'_>, t: &Tables) -> Result<Map> {
    let nf = r.count(2, usize::MAX)?;
    let mut value = Map::with_capacity(nf);
    let mut last_name = None;
    for _ in 0..nf {
        let (i, k) = t.name(r)?;
        let v = Value::decode(r)?;
        // The name table is sorted and the encoder writes fields in name order, so
        // ascending indices are ascending names: append without comparing names.
        if last_name.is_none_or(|l| l < i) {
            value.push_ordered(k, v);
        } else {
            value.insert(k, v);
        }
        last_name = Some(i);
    }
    Ok(value)
}

/// The commit-table indices of an item's history, delta-encoded; `nc` commits exist.
fn history(r: &mut Reader<'_>, nc: usize) -> Result<History> {
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
    Ok(history)
}

/// An item's per-field merge metadata.
fn item_meta(r: &mut Reader<'_>, t: &Tables) -> Result<BTreeMap<Name, FieldMeta>> {
    let nm = r.count(2, usize::MAX)?;
    let mut m = BTreeMap::new();
    for _ in 0..nm {
        let (_, k) = t.name(r)?;
        m.insert(k, field_meta(r, t)?);
    }
    Ok(m)
}

fn field_meta(r: &mut Reader<'_>, t: &Tables) -> Result<FieldMeta> {
    let stamp = t.stamp(r)?;
    let flags = r.u8()?;
    if flags > (M_SET | M_TOP) {
        return Err(r.err("bad field flags"));
    }
    let top = match flags & M_TOP {
        0 => stamp,
        _ => t.stamp(r)?,
    };
    let dots = match flags & M_SET {
        0 => None,
        _ => Some(dots(r, t)?),
    };
    Ok(FieldMeta { stamp, top, dots })
}

/// A set field's elements, each with the stamps of the adds that put it there.
fn dots(r: &mut Reader<'_>, t: &Tables) -> Result<BTreeMap<Name, Vec<Stamp>>> {
    let ne = r.count(2, usize::MAX)?;
    let mut d = BTreeMap::new();
    for _ in 0..ne {
        let e = Name::new(r.str()?);
        let nd = r.count(1, usize::MAX)?;
        let mut ds = Vec::with_capacity(nd);
        for _ in 0..nd {
            ds.push(t.stamp(r)?);
        }
        d.insert(e, ds);
    }
    Ok(d)
}
