//! Writing a snapshot, one function per section of the format (docs/design.md §8).

use super::commits::{self, TableSegment};
use super::indexes::{self, Persist, BLOCK_BYTES};
use super::out::{Out, CHUNK_BYTES};
use super::{commit_stamps, I_DELETE, I_META, M_SET, M_TOP};
use super::{SNAPSHOT_MAGIC, SNAPSHOT_VERSION};
use crate::access::{Acl, Register, Role};
use crate::codec::Writer;
use crate::cold::{ColdBlock, ColdIndex, ColdTables};
use crate::commit::{CommitId, PublicKey, Stamp};
use crate::error::Result;
use crate::graph::Graph;
use crate::item::{FieldMeta, Item, ItemId, StampRef};
use crate::state::Collection;
use crate::value::{Map, Name, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Items are cut into blocks: one block is what a read of a cold key reads and decodes, and
/// one directory entry that an open reads. A block is closed at the first item that ends at or
/// past [`ITEM_BLOCK_BYTES`] once it holds [`ITEM_BLOCK_ITEMS`] items, or past
/// [`ITEM_BLOCK_MAX`] (docs/design.md §8, *Block size*).
pub(super) const ITEM_BLOCK_BYTES: usize = 4 << 10;
pub(super) const ITEM_BLOCK_ITEMS: u32 = 32;
pub(super) const ITEM_BLOCK_MAX: usize = 32 << 10;

/// What a written snapshot's directory lists besides the cold blocks (every other block holds
/// loaded items, unchanged since: the state's clean blocks), and the tables its items refer to.
pub struct Written {
    pub blocks: BTreeMap<String, Vec<ColdBlock>>,
    pub tables: ColdTables,
    /// The commit table's segments.
    pub table: Vec<TableSegment>,
}

/// Encode `graph` as the snapshot of the first `log_len` log bytes, whose last frame is at
/// `anchor` = (offset, crc) (None when the log holds no frame), handing the bytes to `out` in
/// order, a chunk at a time: the file is never in memory whole.
///
/// Without `append`, every item must be loaded and the whole file is written. With `append`
/// = the length of the snapshot file the graph's cold and clean blocks are in, only what
/// follows it is written: the loaded items outside clean blocks as new blocks, then a new meta
/// section whose directory lists the cold and clean blocks where they are (docs/design.md §8,
/// "When written").
pub(super) fn encode(
    graph: &Graph,
    (log_len, anchor): (u64, Option<(u64, u32)>),
    (append, kept_table): (Option<u64>, &[TableSegment]),
    persist: &[Persist<'_>],
    out: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<(Vec<(String, ColdIndex)>, Written)> {
    let rewrite = append.is_none();
    let clean = || {
        graph
            .state
            .collections
            .values()
            .any(|c| !c.clean().is_empty())
    };
    debug_assert!(
        !rewrite || (!graph.state.has_cold() && !clean()),
        "a rewrite keeps no block"
    );
    let mut f = Out::new(append.unwrap_or(0), CHUNK_BYTES + BLOCK_BYTES, out);
    if append.is_none() {
        f.w.bytes(SNAPSHOT_MAGIC);
        f.w.u32(SNAPSHOT_VERSION);
    }
    let keep = commits::kept_prefix(kept_table, graph.commits.len());
    let segments = commits::write_segments(&mut f, &graph.commits, &kept_table[..keep])?;
    let stamps = StampRefs::new(graph);
    let (table, mut names) = names_of(graph);
    let dir = collections(&mut f, graph, &stamps, &mut names)?;
    let written = indexes::write(&mut f, persist)?;
    let meta_offset = f.offset();
    let meta_start = f.w.buf.len();
    header(&mut f.w, log_len, anchor);
    commit_table(&mut f.w, graph, &segments);
    name_table(&mut f.w, &table);
    directory(&mut f.w, &dir);
    indexes::directory(&mut f.w, &written);
    // The meta section is written whole into the buffer (nothing is handed out meanwhile).
    let crc = crate::hashing::block_sum(&f.w.buf[meta_start..]);
    f.w.u64(meta_offset);
    f.w.u32(crc);
    f.flush()?;
    let tables = ColdTables {
        names: table.iter().map(|n| Name::from(*n)).collect(),
        commits: graph.commits.len(),
        log_len,
    };
    let blocks = dir
        .iter()
        .map(|(c, bs, _)| {
            let kept = bs.iter().filter(|b| !b.cold).map(BlockEntry::to_block);
            ((*c).to_owned(), kept.collect())
        })
        .collect();
    let w = Written {
        blocks,
        tables,
        table: segments,
    };
    Ok((written, w))
}

/// One directory entry: where a block is and what it holds (docs/design.md §8).
struct BlockEntry<'g> {
    first: &'g str,
    last: &'g str,
    offset: u64,
    len: usize,
    count: u32,
    live: u32,
    crc: u32,
    /// A cold block (its items are not loaded).
    cold: bool,
}

impl<'g> BlockEntry<'g> {
    /// A block already in the file, listed where it is: a cold one, or a clean one (loaded,
    /// unchanged).
    fn kept(b: &'g ColdBlock, cold: bool) -> BlockEntry<'g> {
        BlockEntry {
            first: b.first.as_str(),
            last: b.last.as_str(),
            offset: b.offset,
            len: b.len as usize,
            count: b.count,
            live: b.live,
            crc: b.crc,
            cold,
        }
    }

    fn to_block(&self) -> ColdBlock {
        ColdBlock {
            first: ItemId::from(self.first),
            last: ItemId::from(self.last),
            offset: self.offset,
            len: self.len as u32,
            count: self.count,
            live: self.live,
            crc: self.crc,
        }
    }
}

/// Each collection's name, blocks, and far values per field (`Collection::far`).
type Directory<'g> = Vec<(&'g str, Vec<BlockEntry<'g>>, &'g BTreeMap<String, usize>)>;

/// Write every collection's loaded items as blocks, between the blocks kept where they are:
/// the cold ones, and the clean ones, whose items (loaded, unchanged) are skipped; returns the
/// directory.
fn collections<'g>(
    f: &mut Out<'_>,
    graph: &'g Graph,
    stamps: &StampRefs,
    names: &mut Names<'g>,
) -> Result<Directory<'g>> {
    let mut dir = Vec::with_capacity(graph.state.collections.len());
    let mut block = Writer::with_capacity(2 * BLOCK_BYTES);
    for (cname, c) in &graph.state.collections {
        let mut blocks = Vec::new();
        let mut items = c.items.iter().peekable();
        for kept in kept_blocks(c).map(Some).chain([None]) {
            // The loaded items before this kept block (all that remain after the last one).
            let before = |id: &ItemId| kept.is_none_or(|(b, _)| *id < b.first);
            while items.peek().is_some_and(|(id, _)| before(id)) {
                let b = new_block(f, &mut block, &mut items, before, stamps, names)?;
                blocks.push(b);
            }
            if let Some((b, cold)) = kept {
                // A clean block's items are loaded: they are in the block already.
                while items.next_if(|(id, _)| !cold && **id <= b.last).is_some() {}
                blocks.push(BlockEntry::kept(b, cold));
            }
        }
        dir.push((cname.as_str(), blocks, &c.far));
    }
    Ok(dir)
}

/// A collection's cold and clean blocks merged in id order, each with whether it is cold.
fn kept_blocks(c: &Collection) -> impl Iterator<Item = (&ColdBlock, bool)> {
    let mut cold = c.cold().iter().peekable();
    let mut clean = c.clean().iter().peekable();
    std::iter::from_fn(move || match (cold.peek(), clean.peek()) {
        (Some(a), Some(b)) if a.first < b.first => cold.next().map(|x| (x, true)),
        (Some(_), Some(_)) | (None, Some(_)) => clean.next().map(|x| (x, false)),
        (Some(_), None) => cold.next().map(|x| (x, true)),
        (None, None) => None,
    })
}

/// Encode the next block from `items` (those `before` allows, up to the block size) into
/// `block`, hand it to the output and return its directory entry. Not inlined into the
/// snapshot's loop (V8 tiering: src/hashing.rs).
#[inline(never)]
fn new_block<'g, I: Iterator<Item = (&'g ItemId, &'g Item)>>(
    f: &mut Out<'_>,
    block: &mut Writer,
    items: &mut std::iter::Peekable<I>,
    before: impl Fn(&ItemId) -> bool,
    stamps: &StampRefs,
    names: &mut Names<'g>,
) -> Result<BlockEntry<'g>> {
    block.buf.clear();
    let (mut first, mut last, mut count, mut live) = ("", "", 0u32, 0u32);
    let open = |len: usize, count: u32| {
        len < ITEM_BLOCK_MAX && (len < ITEM_BLOCK_BYTES || count < ITEM_BLOCK_ITEMS)
    };
    while let Some((id, it)) = items.next_if(|(id, _)| open(block.buf.len(), count) && before(id)) {
        if count == 0 {
            first = id.as_str();
        }
        last = id.as_str();
        count += 1;
        live += u32::from(it.is_live());
        block.lp(id.as_bytes());
        item(block, it, stamps, names);
    }
    let entry = BlockEntry {
        first,
        last,
        offset: f.offset(),
        len: block.buf.len(),
        count,
        live,
        crc: crate::hashing::block_sum(&block.buf),
        cold: false,
    };
    f.block(&block.buf)?;
    Ok(entry)
}

/// The collections' block directory.
fn directory(w: &mut Writer, dir: &Directory<'_>) {
    w.varint(dir.len() as u64);
    for (cname, blocks, far) in dir {
        w.lp(cname.as_bytes());
        w.varint(blocks.len() as u64);
        for b in blocks {
            w.lp(b.first.as_bytes());
            w.lp(b.last.as_bytes());
            w.varint(b.offset);
            w.varint(b.len as u64);
            w.varint(u64::from(b.count));
            w.varint(u64::from(b.live));
            w.u32(b.crc);
        }
        w.varint(far.len() as u64);
        for (field, n) in *far {
            w.lp(field.as_bytes());
            w.varint(*n as u64);
        }
    }
}

fn header(w: &mut Writer, log_len: u64, anchor: Option<(u64, u32)>) {
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

/// Authors, access lists, the commit table's directory (`commits.rs`), seal offsets and the
/// seal cover of commits not yet present.
fn commit_table(w: &mut Writer, graph: &Graph, segments: &[TableSegment]) {
    w.varint(graph.authors.len() as u64);
    for a in &graph.authors {
        w.bytes(&a.0);
    }
    access_lists(w, graph);
    commits::directory(w, graph, segments);
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
    match &acl.founder {
        None => w.u8(0),
        Some(k) => {
            w.u8(1);
            w.bytes(&k.0);
        }
    }
    w.varint(acl.members.len() as u64);
    for (k, reg) in &acl.members {
        w.bytes(&k.0);
        register(w, reg, |w, v| w.u8(Role::code(*v)));
    }
    register(w, &acl.public, |w, (read, write)| {
        w.u8(u8::from(*read));
        w.u8(u8::from(*write));
    });
    // Version 7: the stored schemas (docs/design.md §2.4), by collection name.
    w.varint(acl.schemas.len() as u64);
    for (c, reg) in &acl.schemas {
        w.lp(c.as_bytes());
        register(w, reg, |w, s| w.lp(&s.bytes));
    }
    invites(w, acl);
}

/// Version 8: the invites (docs/design.md §6.4 "Invites"), by id: each one's definition
/// register (0 revoked; 1, key, role, expiry, uses) and its counted redemptions by commit id.
fn invites(w: &mut Writer, acl: &Acl) {
    w.varint(acl.invites.len() as u64);
    for (id, st) in &acl.invites {
        w.bytes(id);
        register(w, &st.def, |w, d| match d {
            None => w.u8(0),
            Some(d) => {
                w.u8(1);
                w.bytes(&d.key.0);
                w.u8(Role::code(Some(d.role)));
                w.u64(d.expires);
                w.varint(u64::from(d.uses));
            }
        });
        w.varint(st.redeemed.len() as u64);
        for (c, r) in &st.redeemed {
            w.bytes(&c.0);
            w.bytes(&r.key.0);
            w.u8(Role::code(Some(r.role)));
            w.varint(u64::from(r.uses));
        }
    }
}

/// An entry's uncovered writes: count, then each one's commit id, value and covered ids.
fn register<T>(w: &mut Writer, reg: &Register<T>, value: impl Fn(&mut Writer, &T)) {
    w.varint(reg.heads.len() as u64);
    for h in &reg.heads {
        w.bytes(&h.id.0);
        value(w, &h.value);
        w.varint(h.covers.len() as u64);
        for c in h.covers.iter() {
            w.bytes(&c.0);
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

/// The field-name table and each name's index: every field name used in any loaded item's
/// value or metadata, ascending, after the names cold blocks refer to (kept in their order, so
/// the blocks' indices stay valid). Items with the same fields as the item before them (most
/// items of a collection) add nothing and are skipped.
fn names_of(graph: &Graph) -> (Vec<&str>, Names<'_>) {
    let kept: Vec<&str> = graph
        .state
        .cold_tables()
        .map_or(Vec::new(), |t| t.names.iter().map(Name::as_str).collect());
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
    let mut index: HashMap<&str, u64> = kept.iter().copied().zip(0u64..).collect();
    let mut table = kept;
    for n in names {
        if !index.contains_key(n) {
            index.insert(n, table.len() as u64);
            table.push(n);
        }
    }
    (
        table,
        Names {
            index,
            last: Vec::new(),
        },
    )
}

/// The field-name table: every name items refer to.
fn name_table(w: &mut Writer, table: &[&str]) {
    w.varint(table.len() as u64);
    for n in table {
        w.lp(n.as_bytes());
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

fn item<'g>(w: &mut Writer, it: &'g Item, stamps: &StampRefs, names: &mut Names<'g>) {
    // An item's reset and last write are commits of the table: `k ≥ 2` (or 0 for none).
    w.varint(stamp_ref_code(it.reset));
    w.varint(stamp_ref_code(it.last));
    w.u8(if it.reset_is_delete { I_DELETE } else { 0 } | if it.meta.is_some() { I_META } else { 0 });
    w.varint(it.value.len() as u64);
    for (pos, (k, v)) in it.value.iter().enumerate() {
        w.varint(names.field(pos, k));
        match v {
            // Kept in the log: the snapshot holds where (docs/design.md §6.6). Its frame is
            // among those the snapshot covers (the graph replays exactly them).
            Value::Far(f) => crate::large::write_ref(w, f),
            v => v.encode(w),
        }
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
