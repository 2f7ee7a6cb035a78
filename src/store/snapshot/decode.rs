//! Reading a snapshot's meta section, one function per section of the format (docs/design.md
//! §8); the item blocks are read by `blocks.rs` when needed. Every
//! count, index and order the encoder guarantees is checked: a damaged or foreign file is a
//! `DecodeError`, never a wrong graph.

use super::commits::{self, TableSegment};
use super::indexes;
use super::{commit_stamps, SnapshotData};
use super::{SNAPSHOT_MAGIC, SNAPSHOT_VERSION};
use crate::access::{
    Acl, InviteDef, InviteId, InviteState, Redemption, Register, Role, Write, INVITE_ID_LEN,
};
use crate::codec::Reader;
use crate::cold::{ColdBlock, ColdTables};
use crate::commit::{CommitId, PublicKey, PUBLIC_KEY_LEN};
use crate::error::{Error, Result};
use crate::graph::Graph;
use crate::item::ItemId;
use crate::schema::StoredSchema;
use crate::state::{Collection, State};
use crate::store::Storage;
use crate::value::Name;
use std::collections::BTreeSet;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

/// Read a snapshot's meta section (everything but the items), checking its magic, version,
/// structure and checksum. The items stay in the file: every collection of the graph's state
/// holds the directory of its blocks, cold (`cold.rs`), and `blocks.rs` loads them on demand.
pub fn read<S: Storage>(s: &S) -> Result<SnapshotData> {
    let len = s.len()?;
    if len < (HEAD_LEN + FOOT_LEN) as u64 {
        return Err(Error::decode("snapshot", "too short"));
    }
    let head = s.read_vec(0, HEAD_LEN)?;
    let mut r = Reader::new(&head, "snapshot");
    if r.take(8)? != SNAPSHOT_MAGIC {
        return Err(r.err("bad magic"));
    }
    let v = r.u32()?;
    if v != SNAPSHOT_VERSION {
        return Err(r.err(format!("unsupported version {v}")));
    }
    let foot = s.read_vec(len - FOOT_LEN as u64, FOOT_LEN)?;
    let mut r = Reader::new(&foot, "snapshot");
    let (meta_offset, crc) = (r.u64()?, r.u32()?);
    let meta_end = len - FOOT_LEN as u64;
    if meta_offset < HEAD_LEN as u64 || meta_offset > meta_end {
        return Err(Error::decode("snapshot", "meta offset out of range"));
    }
    let meta = s.read_vec(meta_offset, (meta_end - meta_offset) as usize)?;
    if crate::hashing::block_sum(&meta) != crc {
        return Err(Error::decode("snapshot", "checksum mismatch"));
    }
    decode_meta(&meta, meta_offset, s)
}

/// The meta section: header fields, the commit table (its segments read from `src`), the field
/// names, the directory. Blocks and segments must lie between the header and `meta_offset`.
fn decode_meta<S: Storage>(meta: &[u8], meta_offset: u64, src: &S) -> Result<SnapshotData> {
    let mut r = Reader::new(meta, "snapshot");
    let (log_len, anchor) = header(&mut r)?;
    let mut graph = Graph::default();
    let mut spans = Vec::new();
    let table = commit_table(&mut r, &mut graph, (src, meta_offset), &mut spans)?;
    let names = name_table(&mut r)?;
    let ncoll = r.count(2, usize::MAX)?;
    let mut collections = BTreeMap::new();
    for _ in 0..ncoll {
        let name = r.str()?.to_owned();
        if collections
            .last_key_value()
            .is_some_and(|(l, _)| *l >= name)
        {
            return Err(r.err("collections not strictly ascending"));
        }
        let blocks = directory(&mut r, meta_offset)?;
        spans.extend(
            blocks
                .iter()
                .map(|b| (b.offset, b.offset + u64::from(b.len))),
        );
        let mut c = Collection::from_cold(blocks);
        c.far = far_counts(&mut r)?;
        collections.insert(name, c);
    }
    let bounds = (HEAD_LEN as u64, meta_offset);
    let indexes = indexes::read_directory(&mut r, bounds, &collections, &mut spans)?;
    r.finish()?;
    // Blocks never overlap (after an appended snapshot they are not in file order).
    spans.sort_unstable();
    if spans.windows(2).any(|w| w[0].1 > w[1].0) {
        return Err(Error::decode("snapshot", "blocks overlap"));
    }
    let stamps = commit_stamps(&graph.authors, &graph.commits);
    let tables = ColdTables {
        names,
        commits: graph.commits.len(),
        log_len,
    };
    graph.state = State::from_parts(collections, stamps, Some(tables));
    Ok(SnapshotData {
        log_len,
        anchor,
        graph,
        indexes,
        table,
    })
}

/// A collection's far values per field (`Collection::far`, docs/design.md §6.6): names
/// ascending, counts at least 1.
fn far_counts(r: &mut Reader<'_>) -> Result<BTreeMap<String, usize>> {
    let mut far = BTreeMap::new();
    for _ in 0..r.count(2, usize::MAX)? {
        let field = r.str()?.to_owned();
        let n = usize::try_from(r.varint()?).map_err(|_| r.err("bad far count"))?;
        if n == 0 || far.last_key_value().is_some_and(|(l, _)| *l >= field) {
            return Err(r.err("bad far counts"));
        }
        far.insert(field, n);
    }
    Ok(far)
}

/// One collection's block directory: blocks between the header and `meta_offset`, id ranges
/// ascending and disjoint.
fn directory(r: &mut Reader<'_>, meta_offset: u64) -> Result<Vec<ColdBlock>> {
    let nb = r.count(4 + 4 + 4, usize::MAX)?;
    let mut blocks: Vec<ColdBlock> = Vec::with_capacity(nb);
    for _ in 0..nb {
        let b = ColdBlock {
            first: ItemId::new(r.str()?),
            last: ItemId::new(r.str()?),
            offset: r.varint()?,
            len: u32::try_from(r.varint()?).map_err(|_| r.err("block too long"))?,
            count: u32::try_from(r.varint()?).map_err(|_| r.err("bad block count"))?,
            live: u32::try_from(r.varint()?).map_err(|_| r.err("bad block count"))?,
            crc: r.u32()?,
        };
        let in_order = blocks.last().is_none_or(|l| l.last < b.first);
        let sane = b.first <= b.last
            && b.count >= 1
            && b.live <= b.count
            && u64::from(b.count) * MIN_ITEM_BYTES <= u64::from(b.len);
        let inside = b.offset >= HEAD_LEN as u64
            && b.offset
                .checked_add(u64::from(b.len))
                .is_some_and(|e| e <= meta_offset);
        if !in_order || !sane || !inside {
            return Err(r.err("bad block directory entry"));
        }
        blocks.push(b);
    }
    Ok(blocks)
}

/// Magic and version (at the start of the file); the footer: `u64` meta offset, `u32` checksum.
pub(super) const HEAD_LEN: usize = 12;
pub(super) const FOOT_LEN: usize = 12;
/// The fewest bytes an item takes in a block: `lp(id)`, reset, last, flags, field and history
/// counts.
const MIN_ITEM_BYTES: u64 = 6;

/// `log_len` and the anchor.
fn header(r: &mut Reader<'_>) -> Result<(u64, Option<(u64, u32)>)> {
    let log_len = r.u64()?;
    let anchor = match r.u8()? {
        0 => None,
        1 => Some((r.u64()?, r.u32()?)),
        _ => return Err(r.err("bad anchor flag")),
    };
    Ok((log_len, anchor))
}

/// Authors, access lists, the commit table (`commits.rs`; heads are derived: the commits no
/// other names as a parent), seal offsets and the seal cover. Returns the table's segments.
fn commit_table<S: Storage>(
    r: &mut Reader<'_>,
    graph: &mut Graph,
    (src, meta_offset): (&S, u64),
    spans: &mut Vec<(u64, u64)>,
) -> Result<Vec<TableSegment>> {
    let na = r.count(PUBLIC_KEY_LEN, u32::MAX as usize)?;
    for _ in 0..na {
        let pk = PublicKey(r.array()?);
        graph.author_index(pk);
    }
    access_lists(r, graph)?;
    let table = commits::read(r, src, (HEAD_LEN as u64, meta_offset), graph, spans)?;
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
    Ok(table)
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
    let mut acl = Acl::default();
    if flag(r)? {
        acl.founder = Some(PublicKey(r.array()?));
    }
    let nm = r.count(PUBLIC_KEY_LEN + 1, usize::MAX)?;
    for _ in 0..nm {
        let k = PublicKey(r.array()?);
        let reg = register(r, |r| {
            Role::from_code(r.u8()?).ok_or_else(|| r.err("bad role"))
        })?;
        if acl.members.last_key_value().is_some_and(|(l, _)| *l >= k) {
            return Err(r.err("access-list members not strictly ascending"));
        }
        acl.members.insert(k, reg);
    }
    acl.public = register(r, |r| Ok((flag(r)?, flag(r)?)))?;
    let ns = r.count(2, usize::MAX)?;
    for _ in 0..ns {
        let c = crate::codec::utf8(r.lp()?)
            .ok_or_else(|| r.err("a stored schema's collection is not UTF-8"))?
            .to_string();
        let reg = register(r, |r| StoredSchema::from_bytes(&c, r.lp()?))?;
        if acl.schemas.last_key_value().is_some_and(|(l, _)| *l >= c) {
            return Err(r.err("stored schemas not strictly ascending"));
        }
        acl.schemas.insert(c, reg);
    }
    invites(r, &mut acl)?;
    Ok(acl)
}

/// The invites (version 8), in strictly ascending id order, each one's redemptions in
/// strictly ascending commit id order.
fn invites(r: &mut Reader<'_>, acl: &mut Acl) -> Result<()> {
    let ni = r.count(INVITE_ID_LEN + 2, usize::MAX)?;
    for _ in 0..ni {
        let id: InviteId = r.array()?;
        let def = register(r, |r| {
            Ok(match r.u8()? {
                0 => None,
                1 => Some(InviteDef {
                    key: PublicKey(r.array()?),
                    role: role(r)?,
                    expires: r.u64()?,
                    uses: u32::try_from(r.varint()?).map_err(|_| r.err("bad invite uses"))?,
                }),
                _ => return Err(r.err("bad invite flag")),
            })
        })?;
        let nr = r.count(32 + PUBLIC_KEY_LEN + 2, usize::MAX)?;
        let mut redeemed = BTreeMap::new();
        for _ in 0..nr {
            let c = CommitId(r.array()?);
            let red = Redemption {
                key: PublicKey(r.array()?),
                role: role(r)?,
                uses: u32::try_from(r.varint()?).map_err(|_| r.err("bad invite uses"))?,
            };
            if redeemed.last_key_value().is_some_and(|(l, _)| *l >= c) {
                return Err(r.err("redemptions not strictly ascending"));
            }
            redeemed.insert(c, red);
        }
        if acl.invites.last_key_value().is_some_and(|(l, _)| *l >= id) {
            return Err(r.err("invites not strictly ascending"));
        }
        acl.invites.insert(id, InviteState { def, redeemed });
    }
    Ok(())
}

/// A role byte that names a role (not a revocation).
fn role(r: &mut Reader<'_>) -> Result<Role> {
    match Role::from_code(r.u8()?) {
        Some(Some(role)) => Ok(role),
        _ => Err(r.err("bad role")),
    }
}

/// An entry's uncovered writes (ascending ids), each with the ids it covers (ascending).
fn register<T>(
    r: &mut Reader<'_>,
    value: impl Fn(&mut Reader<'_>) -> Result<T>,
) -> Result<Register<T>> {
    let n = r.count(32 + 2, usize::MAX)?;
    let mut reg = Register::default();
    for _ in 0..n {
        let id = CommitId(r.array()?);
        let value = value(r)?;
        let nc = r.count(32, usize::MAX)?;
        let mut covers = BTreeSet::new();
        for _ in 0..nc {
            let c = CommitId(r.array()?);
            if covers.last().is_some_and(|l| *l >= c) {
                return Err(r.err("covered writes not strictly ascending"));
            }
            covers.insert(c);
        }
        if reg.heads.last().is_some_and(|l: &Write<T>| l.id >= id) {
            return Err(r.err("access-list writes not strictly ascending"));
        }
        reg.heads.push(Write {
            id,
            value,
            covers: Arc::new(covers),
        });
    }
    Ok(reg)
}

/// A byte that must be 0 or 1.
fn flag(r: &mut Reader<'_>) -> Result<bool> {
    match r.u8()? {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(r.err("bad flag byte")),
    }
}

/// The field names, each once (ascending, then the names added by appended snapshots).
fn name_table(r: &mut Reader<'_>) -> Result<Vec<Name>> {
    let nn = r.count(1, usize::MAX)?;
    let mut names: Vec<Name> = Vec::with_capacity(nn);
    let mut seen = HashSet::with_capacity(nn);
    for _ in 0..nn {
        let n = Name::new(r.str()?);
        if !seen.insert(n.clone()) {
            return Err(r.err("field name repeated"));
        }
        names.push(n);
    }
    Ok(names)
}
