//! Writing a snapshot, one function per section of the format (docs/design.md §8).

use super::{commit_stamps, F_SEALED, F_TRUSTED, I_DELETE, I_META, M_SET, M_TOP};
use super::{SNAPSHOT_MAGIC, SNAPSHOT_VERSION};
use crate::access::{Acl, Role};
use crate::codec::Writer;
use crate::commit::{CommitId, PublicKey, Stamp};
use crate::graph::Graph;
use crate::state::{FieldMeta, Item, StampRef};
use crate::value::{Map, Name};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Encode `graph` as the snapshot of the first `log_len` log bytes, whose last frame is at
/// `anchor` = (offset, crc) (None when the log holds no frame).
pub(super) fn encode(graph: &Graph, log_len: u64, anchor: Option<(u64, u32)>) -> Vec<u8> {
    let mut w = Writer::with_capacity(64 + graph.state.len() * 64);
    header(&mut w, log_len, anchor);
    commit_table(&mut w, graph);
    let stamps = StampRefs::new(graph);
    let mut names = name_table(&mut w, graph);
    collections(&mut w, graph, &stamps, &mut names);
    let crc = crc32fast::hash(&w.buf);
    w.u32(crc);
    w.into_inner()
}

fn header(w: &mut Writer, log_len: u64, anchor: Option<(u64, u32)>) {
    w.bytes(SNAPSHOT_MAGIC);
    w.u32(SNAPSHOT_VERSION);
    w.u64(log_len);
    match anchor {
        Some((off, crc)) => {
            w.u8(1);
            w.u64(off);
            w.u32(crc);
        }
        None => w.u8(0),
    }
}

/// Authors, access lists, commits, seal offsets and the seal cover of commits not yet present.
fn commit_table(w: &mut Writer, graph: &Graph) {
    w.varint(graph.authors.len() as u64);
    for a in &graph.authors {
        w.bytes(&a.0);
    }
    access_lists(w, graph);
    w.varint(graph.commits.len() as u64);
    for c in &graph.commits {
        w.bytes(&c.id.0);
        w.varint(c.offset);
        w.u64(c.hlc);
        w.varint(u64::from(c.author));
        w.u8(if c.trusted { F_TRUSTED } else { 0 } | if c.sealed { F_SEALED } else { 0 });
        w.varint(c.parents.len() as u64);
        for p in &c.parents {
            w.varint(u64::from(*p));
        }
        w.varint(u64::from(c.acl));
    }
    w.varint(graph.seal_offsets.len() as u64);
    for o in &graph.seal_offsets {
        w.varint(*o);
    }
    let cover: BTreeMap<&CommitId, &Vec<PublicKey>> = graph.seal_cover.iter().collect();
    w.varint(cover.len() as u64);
    for (id, authors) in cover {
        w.bytes(&id.0);
        w.varint(authors.len() as u64);
        for a in authors {
            w.bytes(&a.0);
        }
    }
}

/// The interned access lists (index 0 is the empty list), then the whole graph's list.
fn access_lists(w: &mut Writer, graph: &Graph) {
    w.varint(graph.acls.len() as u64);
    for acl in graph.acls.lists() {
        access_list(w, acl);
    }
    w.varint(u64::from(graph.acl));
}

fn access_list(w: &mut Writer, acl: &Acl) {
    w.u8(u8::from(acl.owned));
    w.varint(acl.members.len() as u64);
    for (k, s) in &acl.members {
        w.bytes(&k.0);
        s.stamp.encode(w);
        w.u8(Role::code(s.value));
    }
    match acl.public {
        None => w.u8(0),
        Some(p) => {
            w.u8(1);
            p.stamp.encode(w);
            w.u8(u8::from(p.value.0));
            w.u8(u8::from(p.value.1));
        }
    }
}

/// Stamps are written as references: 0 = zero, 1 = raw (24 bytes follow), k ≥ 2 = the stamp of
/// commit k − 2.
struct StampRefs(HashMap<Stamp, u32>);

impl StampRefs {
    fn new(graph: &Graph) -> StampRefs {
        let stamps = commit_stamps(&graph.authors, &graph.commits);
        StampRefs(stamps.into_iter().zip(0u32..).collect())
    }

    fn write(&self, w: &mut Writer, s: &Stamp) {
        if *s == Stamp::ZERO {
            w.varint(0);
        } else if let Some(i) = self.0.get(s) {
            w.varint(u64::from(*i) + 2);
        } else {
            w.varint(1);
            s.encode(w);
        }
    }
}

/// A [`StampRef`] as a stamp reference of the format: 0 stays 0 (the zero stamp), commit
/// `k − 1` is written `k + 1`.
fn stamp_ref_code(r: StampRef) -> u64 {
    match r {
        0 => 0,
        r => u64::from(r) + 1,
    }
}

/// Whether two maps have the same field names, in order.
fn same_fields(a: &Map, b: &Map) -> bool {
    a.len() == b.len() && a.keys().zip(b.keys()).all(|(x, y)| x == y)
}

/// Every field name used in any item's value or metadata, ascending; returns each name's
/// index. Items with the same fields as the item before them (most items of a collection) add
/// nothing and are skipped.
fn name_table<'g>(w: &mut Writer, graph: &'g Graph) -> Names<'g> {
    let mut names: BTreeSet<&str> = BTreeSet::new();
    for c in graph.state.collections.values() {
        let mut prev: Option<&Map> = None;
        for it in c.items.values() {
            if !prev.is_some_and(|p| same_fields(p, &it.value)) {
                names.extend(it.value.keys().map(Name::as_str));
                prev = Some(&it.value);
            }
            if let Some(m) = &it.meta {
                names.extend(m.keys().map(Name::as_str));
            }
        }
    }
    w.varint(names.len() as u64);
    for n in &names {
        w.lp(n.as_bytes());
    }
    Names {
        index: names.into_iter().zip(0u64..).collect(),
        last: Vec::new(),
    }
}

/// Field-name indices, with the previous item's fields remembered by position: most items have
/// the fields of the item before them, found by comparing names instead of hashing them.
struct Names<'g> {
    index: HashMap<&'g str, u64>,
    last: Vec<(&'g Name, u64)>,
}

impl<'g> Names<'g> {
    /// The index of `k`, the field at `pos` of an item's value.
    fn field(&mut self, pos: usize, k: &'g Name) -> u64 {
        if let Some((n, i)) = self.last.get(pos) {
            if *n == k {
                return *i;
            }
        }
        let i = self.index[k.as_str()];
        self.last.truncate(pos);
        self.last.push((k, i));
        i
    }
}

fn collections<'g>(w: &mut Writer, graph: &'g Graph, stamps: &StampRefs, names: &mut Names<'g>) {
    w.varint(graph.state.collections.len() as u64);
    for (cname, c) in &graph.state.collections {
        w.lp(cname.as_bytes());
        w.varint(c.items.len() as u64);
        for (id, it) in &c.items {
            w.lp(id.as_bytes());
            item(w, it, stamps, names);
        }
    }
}

fn item<'g>(w: &mut Writer, it: &'g Item, stamps: &StampRefs, names: &mut Names<'g>) {
    // An item's reset and last write are commits of the table: `k ≥ 2` (or 0 for none).
    w.varint(stamp_ref_code(it.reset));
    w.varint(stamp_ref_code(it.last));
    w.u8(if it.reset_is_delete { I_DELETE } else { 0 } | if it.meta.is_some() { I_META } else { 0 });
    w.varint(it.value.len() as u64);
    for (pos, (k, v)) in it.value.iter().enumerate() {
        w.varint(names.field(pos, k));
        v.encode(w);
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
            w.varint(names.index[k.as_str()]);
            field_meta(w, fm, stamps);
        }
    }
}

fn field_meta(w: &mut Writer, fm: &FieldMeta, stamps: &StampRefs) {
    stamps.write(w, &fm.stamp);
    let has_top = fm.top != fm.stamp;
    w.u8(if fm.dots.is_some() { M_SET } else { 0 } | if has_top { M_TOP } else { 0 });
    if has_top {
        stamps.write(w, &fm.top);
    }
    if let Some(d) = &fm.dots {
        w.varint(d.len() as u64);
        for (e, ds) in d {
            w.lp(e.as_bytes());
            w.varint(ds.len() as u64);
            for s in ds {
                stamps.write(w, s);
            }
        }
    }
}
