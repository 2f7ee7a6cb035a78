//! The materialized, convergent state of a repository: its collections of items (`item.rs`),
//! and the stamps of the commits they refer to. Commits are applied here, one write at a time,
//! by the merge rules (`merge.rs`).

use crate::chunked::Slot;
use crate::cold::{BlockAt, CleanBlocks, ColdBlock, ColdBlocks, ColdTables};
use crate::commit::{Commit, CommitId, Stamp};
use crate::item::{Item, ItemId, StampRef};
use crate::item_map::ItemMap;
use crate::merge::OpIn;
use crate::value::{Map, Name, Value};
use sha2::{Digest, Sha256};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// Receives every visible change as commits are applied (indexes, live queries).
pub trait ChangeSink {
    /// Whether changes to `collection` are wanted (lets bulk loads skip the work).
    fn watches(&self, collection: &str) -> bool;
    /// `old`/`new` are the visible values before/after (None = absent or deleted).
    fn changed(&mut self, collection: &str, id: &str, old: Option<&Map>, new: Option<&Map>);
}

/// A sink that wants nothing.
pub struct NoSink;
impl ChangeSink for NoSink {
    fn watches(&self, _: &str) -> bool {
        false
    }
    fn changed(&mut self, _: &str, _: &str, _: Option<&Map>, _: Option<&Map>) {}
}

/// An id from a borrowed or owned string, reusing an owned string's allocation when the id is
/// too long to be held inline.
fn id_from_cow(s: Cow<'_, str>) -> ItemId {
    match s {
        Cow::Owned(o) => Name::from_string(o),
        Cow::Borrowed(b) => Name::new(b),
    }
}

/// One collection's items: those loaded, and the index of those still in the snapshot's
/// blocks (`cold.rs`; empty unless the repository was opened from a snapshot).
#[derive(Debug, Clone, Default)]
pub struct Collection {
    pub items: ItemMap,
    /// Visible items, loaded or cold.
    live: usize,
    cold: ColdBlocks,
    /// Loaded blocks no change has touched (an appended snapshot lists them where they are).
    clean: CleanBlocks,
    /// Whether a commit changed the collection since the snapshot the state was opened from,
    /// or since the last snapshot written (`State::untouch`): while it has not, the
    /// snapshot's persisted indexes describe it (docs/design.md §8).
    touched: bool,
    /// Per top-level field, the far values (docs/design.md §6.6, `large.rs`) released into
    /// loaded items, or held by cold blocks (the snapshot lists them), since the field's last
    /// `unfar` (an upper bound: a write that replaces one does not count down). A field absent
    /// holds none, loaded or cold.
    pub(crate) far: BTreeMap<String, usize>,
}

/// Equal when the items (and cold blocks) are: `touched` and the clean blocks are bookkeeping
/// of this replica.
impl PartialEq for Collection {
    fn eq(&self, other: &Collection) -> bool {
        self.items == other.items && self.live == other.live && self.cold == other.cold
    }
}

impl Collection {
    /// Number of visible items (O(1); cold items included).
    pub fn count(&self) -> usize {
        self.live
    }
    /// Visible items in key order. The collection must be loaded (no cold block).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Map)> {
        debug_assert!(self.cold.is_empty(), "a scan of a collection not loaded");
        self.items
            .iter()
            .filter_map(|(k, it)| it.visible().map(|v| (k.as_str(), v)))
    }
    /// Visible items in key order with their slots (places that stay valid while the
    /// collection does not change); `None` when the collection is too large for slots. The
    /// collection must be loaded.
    pub(crate) fn slots(&self) -> Option<impl Iterator<Item = (Slot, &str, &Map)>> {
        debug_assert!(self.cold.is_empty(), "a scan of a collection not loaded");
        let it = self.items.slots()?;
        Some(it.filter_map(|(s, k, it)| it.visible().map(|v| (s, k.as_str(), v))))
    }

    /// The visible item at `s`, from [`Collection::slots`] with no change in between.
    pub(crate) fn at_slot(&self, s: Slot) -> (&str, &Map) {
        let (k, it) = self.items.at_slot(s);
        (k.as_str(), &it.value)
    }

    /// The visible item `id`; its block, if any, must be loaded.
    pub fn get(&self, id: &str) -> Option<&Map> {
        debug_assert!(self.cold.of(id).is_none(), "a read of a cold key");
        self.items.get(id)?.visible()
    }

    /// A collection whose items are all in the snapshot's `blocks` (sorted, disjoint).
    pub(crate) fn from_cold(blocks: Vec<ColdBlock>) -> Collection {
        Collection {
            items: ItemMap::new(),
            live: blocks.iter().map(|b| b.live as usize).sum(),
            cold: ColdBlocks::new(blocks),
            clean: CleanBlocks::default(),
            touched: false,
            far: BTreeMap::new(),
        }
    }

    /// Whether a commit changed the collection since the last snapshot (see the field).
    pub fn touched(&self) -> bool {
        self.touched
    }

    /// Whether the visible item `id` is loaded (`Some(Some)`), absent (`Some(None)`) or in a
    /// cold block (`None`).
    pub(crate) fn lookup(&self, id: &str) -> Option<Option<&Map>> {
        match self.items.get(id) {
            Some(it) => Some(it.visible()),
            None if self.cold.of(id).is_some() => None,
            None => Some(None),
        }
    }

    /// The cold blocks.
    pub fn cold(&self) -> &ColdBlocks {
        &self.cold
    }

    /// The cold block whose range covers `id`.
    pub(crate) fn cold_block_of(&self, id: &str) -> Option<BlockAt> {
        self.cold.of(id)
    }

    /// Block `at` is loaded (its items are added next): it leaves the cold blocks for the
    /// clean ones.
    pub(crate) fn take_cold(&mut self, at: BlockAt) {
        self.clean.insert(self.cold.get(at).clone());
        self.cold.take(at);
    }

    /// Every cold block is loaded (their items are added next).
    pub(crate) fn take_all_cold(&mut self) {
        for b in self.cold.iter() {
            self.clean.insert(b.clone());
        }
        self.cold.take_all();
    }

    /// The loaded blocks no change has touched.
    pub fn clean(&self) -> &CleanBlocks {
        &self.clean
    }

    /// Add the items of blocks taken out of the index (ids ascending, none loaded yet; their
    /// visible ones are counted already). Many items at once rebuild the tree in one pass.
    pub(crate) fn insert_loaded(&mut self, items: ItemMap) {
        self.items.merge_loaded(items);
    }
}

/// All collections, and the stamps of the commits their items refer to.
#[derive(Debug, Clone, Default)]
pub struct State {
    pub collections: BTreeMap<String, Collection>,
    /// The stamp of every commit applied, by commit-table index ([`StampRef`] `k` is
    /// `stamps[k − 1]`).
    stamps: Vec<Stamp>,
    /// What cold items refer to (`Some` while any collection has a cold block).
    cold: Option<Box<ColdTables>>,
}

/// Two states are equal when their items are: the stamp tables are derived from the commit
/// tables, which `verify()` compares on their own.
impl PartialEq for State {
    fn eq(&self, other: &State) -> bool {
        self.collections == other.collections
    }
}

impl State {
    /// Whether the state holds no item outside `_acl` and `_schema` (an access-only
    /// repository's, `RepoOptions::access_only`).
    pub(crate) fn only_access_list(&self) -> bool {
        self.collections
            .keys()
            .all(|c| c == crate::access::ACL_COLLECTION || c == crate::schema::SCHEMA_COLLECTION)
    }

    /// A state made of decoded collections whose items refer to `stamps` (the snapshot).
    pub(crate) fn from_parts(
        collections: BTreeMap<String, Collection>,
        stamps: Vec<Stamp>,
        cold: Option<ColdTables>,
    ) -> State {
        let cold = cold
            .filter(|_| collections.values().any(|c| !c.cold.is_empty()))
            .map(Box::new);
        State {
            collections,
            stamps,
            cold,
        }
    }

    /// The tables cold items refer to; `None` when every item is loaded.
    pub(crate) fn cold_tables(&self) -> Option<&ColdTables> {
        self.cold.as_deref()
    }

    /// Whether any item is still cold.
    pub fn has_cold(&self) -> bool {
        self.collections.values().any(|c| !c.cold.is_empty())
    }

    /// Bytes of the snapshot file the cold and the clean blocks occupy: what an appended
    /// snapshot keeps where it is.
    pub(crate) fn kept_block_bytes(&self) -> u64 {
        let cold = self.collections.values().flat_map(|c| c.cold.iter());
        let cold: u64 = cold.map(|b| u64::from(b.len)).sum();
        cold + self
            .collections
            .values()
            .map(|c| c.clean.bytes())
            .sum::<u64>()
    }

    /// A snapshot was written whose directory lists, per collection, `written` (every block
    /// that is not cold: their items are loaded and unchanged), and whose items refer to
    /// `tables`. Without a snapshot file left (`written` empty everywhere and nothing cold),
    /// the tables are dropped.
    pub(crate) fn snapshot_written(
        &mut self,
        written: BTreeMap<String, Vec<ColdBlock>>,
        tables: ColdTables,
    ) {
        for (name, c) in &mut self.collections {
            c.clean
                .replace(written.get(name).into_iter().flatten().cloned());
        }
        let kept = self
            .collections
            .values()
            .any(|c| !c.cold.is_empty() || !c.clean.is_empty());
        self.cold = kept.then(|| Box::new(tables));
    }

    /// Where the cold and clean item blocks are in the snapshot file, as (offset, len).
    pub(crate) fn kept_blocks(&self) -> Vec<(u64, u32)> {
        let mut out = Vec::new();
        for c in self.collections.values() {
            out.extend(
                c.cold
                    .iter()
                    .chain(c.clean.iter())
                    .map(|b| (b.offset, b.len)),
            );
        }
        out
    }

    /// The cold and clean blocks moved in the file: `to(offset)` is each one's new offset.
    pub(crate) fn relocate_blocks(&mut self, to: &dyn Fn(u64) -> u64) {
        for c in self.collections.values_mut() {
            c.cold.relocate(to);
            c.clean.relocate(to);
        }
    }

    /// The snapshot file no longer holds the loaded items (it was emptied, or its write
    /// failed): no block is clean.
    pub(crate) fn forget_clean(&mut self) {
        for c in self.collections.values_mut() {
            c.clean = CleanBlocks::default();
        }
        self.drop_cold_tables_if_done();
    }

    /// Forget the cold tables once the last cold block is loaded.
    /// A snapshot of the state was written: no collection has changed since.
    pub(crate) fn untouch(&mut self) {
        for c in self.collections.values_mut() {
            c.touched = false;
        }
    }

    pub(crate) fn drop_cold_tables_if_done(&mut self) {
        let done = |c: &Collection| c.cold.is_empty() && c.clean.is_empty();
        if self.collections.values().all(done) {
            self.cold = None;
        }
    }

    /// The commit-table stamps the items' [`StampRef`]s point into.
    pub fn stamps(&self) -> &[Stamp] {
        &self.stamps
    }

    /// Record the stamp of commit `index` and return its reference.
    fn stamp_ref(&mut self, index: u32, s: Stamp) -> StampRef {
        let i = index as usize;
        if i >= self.stamps.len() {
            self.stamps.resize(i + 1, Stamp::ZERO);
        }
        self.stamps[i] = s;
        index + 1
    }

    #[cfg(any(test, feature = "testing"))]
    pub fn new() -> State {
        State::default()
    }

    pub fn collection(&self, name: &str) -> Option<&Collection> {
        self.collections.get(name)
    }

    pub(crate) fn collection_mut(&mut self, name: &str) -> Option<&mut Collection> {
        self.collections.get_mut(name)
    }

    pub fn get(&self, collection: &str, id: &str) -> Option<&Map> {
        self.collections.get(collection)?.get(id)
    }

    /// Raw item including tombstones and metadata.
    pub fn item(&self, collection: &str, id: &str) -> Option<&Item> {
        let c = self.collections.get(collection)?;
        debug_assert!(c.cold_block_of(id).is_none(), "a read of a cold key");
        c.items.get(id)
    }

    /// Apply a commit. `index` is its position in the commit table (for history). The
    /// repository uses [`State::apply_owned`]; this borrowing form serves tests and benches.
    #[cfg(any(test, feature = "testing"))]
    pub fn apply(&mut self, commit: &Commit, id: &CommitId, index: u32, sink: &mut dyn ChangeSink) {
        let s = commit.stamp(id);
        let r = self.stamp_ref(index, s);
        for ch in commit.changes.iter().filter(|c| !c.is_elided()) {
            let id = Cow::Borrowed(ch.id.as_str());
            self.apply_change(
                &ch.collection,
                id,
                OpIn::Borrowed(&ch.op),
                (s, r),
                index,
                sink,
            );
        }
    }

    /// [`State::apply`] consuming the commit: its values move into the state instead of being
    /// cloned.
    pub fn apply_owned(
        &mut self,
        commit: Commit,
        id: &CommitId,
        index: u32,
        sink: &mut dyn ChangeSink,
    ) {
        let s = commit.stamp(id);
        let r = self.stamp_ref(index, s);
        // The marker of changes an access-only decode did not build is not applied.
        for ch in commit.changes.into_iter().filter(|c| !c.is_elided()) {
            let id = Cow::Owned(ch.id);
            self.apply_change(&ch.collection, id, OpIn::Owned(ch.op), (s, r), index, sink);
        }
    }

    /// One change (not inlined into the commit's loop: V8 tiering, src/hashing.rs).
    #[inline(never)]
    fn apply_change(
        &mut self,
        collection: &str,
        mut id: Cow<'_, str>,
        op: OpIn<'_>,
        (s, r): (Stamp, StampRef),
        index: u32,
        sink: &mut dyn ChangeSink,
    ) {
        let State {
            collections,
            stamps,
            ..
        } = self;
        let coll = match collections.get_mut(collection) {
            Some(c) => c,
            None => collections.entry(collection.to_owned()).or_default(),
        };
        let watch = sink.watches(collection);
        debug_assert!(coll.cold_block_of(&id).is_none(), "a write to a cold key");
        coll.touched = true;
        coll.clean.dirty(&id);
        let item = match coll.items.search(&id) {
            Ok(p) => coll.items.at_mut(p),
            Err(p) => {
                // Move an owned long id into the map unless the sink still needs it.
                let key = if watch || id.len() <= ItemId::INLINE {
                    ItemId::new(&id)
                } else {
                    id_from_cow(std::mem::take(&mut id))
                };
                let p = coll.items.insert_at(p, key, Item::new());
                coll.items.at_mut(p)
            }
        };
        let was_live = item.is_live() && item.last != 0;
        let old = if watch && was_live {
            Some(item.value.clone())
        } else {
            None
        };
        item.apply(op, s, r, stamps);
        item.history.push(index);
        let now_live = item.is_live();
        match (was_live, now_live) {
            (false, true) => coll.live += 1,
            (true, false) => coll.live -= 1,
            _ => {}
        }
        if watch {
            let new = item.visible();
            if old.as_ref() != new {
                sink.changed(collection, &id, old.as_ref(), new);
            }
        }
    }

    /// SHA-256 over every visible item (collection, id, value) in key order. Equal on any two
    /// replicas that hold the same commits.
    #[cfg(test)]
    pub fn hash(&self) -> [u8; 32] {
        self.hash_with(&|_| Ok(None)).unwrap()
    }

    /// The hash of the visible state; `resolve` loads an item's large values (it returns
    /// `None` for an item with none: docs/design.md §6.6).
    pub fn hash_with(
        &self,
        resolve: &dyn Fn(&Map) -> crate::error::Result<Option<Map>>,
    ) -> crate::error::Result<[u8; 32]> {
        debug_assert!(!self.has_cold(), "a hash of a state not loaded");
        let mut h = Sha256::new();
        let mut w = crate::codec::Writer::new();
        for (cname, c) in &self.collections {
            for (id, v) in c.iter() {
                w.buf.clear();
                w.lp(cname.as_bytes());
                w.lp(id.as_bytes());
                let v = resolve(v)?.unwrap_or_else(|| v.clone());
                Value::Map(v).encode(&mut w);
                h.update(&w.buf);
            }
        }
        Ok(h.finalize().into())
    }

    /// Number of visible items in all collections.
    pub fn len(&self) -> usize {
        self.collections.values().map(|c| c.live).sum()
    }

    #[cfg(any(test, feature = "testing"))]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commit::Identity;
    use crate::commit::{Change, FieldOp, Op};
    use crate::map;
    use std::collections::BTreeSet;

    fn commit(hlc: u64, changes: Vec<(&str, Op)>) -> (Commit, CommitId) {
        let c = Commit {
            trusted: true,
            author: Identity::from_entropy(&[1; 48]).public(),
            hlc,
            parents: vec![],
            changes: changes
                .into_iter()
                .map(|(id, op)| Change {
                    collection: "t".into(),
                    id: id.into(),
                    op,
                })
                .collect(),
        };
        let id = CommitId::of(&c.encode());
        (c, id)
    }

    fn apply_all(cs: &[(Commit, CommitId)]) -> State {
        let mut s = State::new();
        for (i, (c, id)) in cs.iter().enumerate() {
            s.apply(c, id, i as u32, &mut NoSink);
        }
        s
    }

    fn patch(k: &str, f: FieldOp) -> Op {
        Op::Patch([(k.to_string(), f)].into_iter().collect())
    }

    #[test]
    fn lww_fields_and_resets_commute() {
        let cs = vec![
            commit(
                10,
                vec![("a", Op::Put(map! {"x" => 1i64, "y" => 2i64}.as_map()))],
            ),
            commit(
                12,
                vec![("a", patch("x", FieldOp::Assign(Value::from(5i64))))],
            ),
            commit(11, vec![("a", Op::Put(map! {"z" => 3i64}.as_map()))]),
            commit(13, vec![("b", Op::Delete)]),
            commit(9, vec![("b", Op::Put(map! {"q" => 1i64}.as_map()))]),
        ];
        let s1 = apply_all(&cs);
        let mut rev = cs.clone();
        rev.reverse();
        let s2 = apply_all(&rev);
        assert_eq!(s1.hash(), s2.hash());
        assert_eq!(
            s1.get("t", "a").cloned().map(Value::Map),
            Some(map! {"x" => 5i64, "z" => 3i64})
        );
        assert_eq!(s1.get("t", "b"), None);
        assert_eq!(s1.collection("t").unwrap().count(), 1);
    }

    #[test]
    fn ids_from_owned_or_borrowed_strings() {
        // `ItemId` is a `Name`: its size and order are tested in `value/name.rs`.
        let long = "z".repeat(40);
        assert_eq!(id_from_cow(Cow::Owned(long.clone())).as_str(), long);
        assert_eq!(id_from_cow(Cow::Borrowed("short")).as_str(), "short");
        assert_eq!(id_from_cow(Cow::Owned("s".into())), ItemId::new("s"));
    }

    #[test]
    fn sets_are_add_wins() {
        let (c0, id0) = commit(
            10,
            vec![("a", Op::Put(map! {"s" => Value::set(["p"])}.as_map()))],
        );
        let dot = c0.stamp(&id0);
        let rm = commit(
            12,
            vec![(
                "a",
                patch(
                    "s",
                    FieldOp::SetEdit {
                        add: BTreeSet::new(),
                        remove: [("p".to_string(), vec![dot])].into_iter().collect(),
                    },
                ),
            )],
        );
        let add = commit(
            11,
            vec![(
                "a",
                patch(
                    "s",
                    FieldOp::SetEdit {
                        add: ["p".to_string(), "q".to_string()].into_iter().collect(),
                        remove: BTreeMap::new(),
                    },
                ),
            )],
        );
        let base = (c0, id0);
        let s1 = apply_all(&[base.clone(), rm.clone(), add.clone()]);
        let s2 = apply_all(&[base, add, rm]);
        assert_eq!(s1.hash(), s2.hash());
        assert_eq!(
            s1.get("t", "a").unwrap().get("s"),
            Some(&Value::set(["p", "q"]))
        );
    }
}
