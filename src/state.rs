//! The materialized, convergent state of a repository.
//!
//! Merge rule (docs/design.md, "Merge rule"): every write carries the [`Stamp`] of its commit.
//! - `Put` and `Delete` are item-level resets: they act as an assignment at their stamp to every
//!   field of the item (absent for the fields a put does not name, and for all fields of a
//!   delete), including fields this replica has not seen yet. A field write older than the
//!   newest reset is ignored.
//! - Field assignments are last-writer-wins by stamp.
//! - Set fields merge per element, add-wins: each element keeps the stamps ("dots") of the adds
//!   that put it there; a remove deletes only the dots its writer had observed, so a concurrent
//!   add survives. An assignment at stamp `s` keeps only dots newer than `s`; when a scalar
//!   assignment is older than a set add, the field is a set.
//! - An item is deleted when its newest write of any kind is a delete.
//!
//! Each rule is a function of the set of writes, not of their order, so replicas holding the same
//! commits hold the same state. Commits are applied in causal order (parents first), which the
//! remove-by-observed-dots rule relies on.

use crate::chunked::Slot;
use crate::cold::{BlockAt, ColdBlock, ColdBlocks, ColdTables};
use crate::commit::{Commit, CommitId, FieldOp, Op, Stamp};
use crate::item_map::ItemMap;
use crate::value::{Map, Name, Value};
use sha2::{Digest, Sha256};
use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

/// Per-field merge metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldMeta {
    /// Stamp of the newest assignment (or reset) of this field: set elements added before it
    /// are gone.
    pub stamp: Stamp,
    /// Stamp of the newest write of any kind (assignment or set add); its kind decides
    /// whether the field is a scalar or a set. Always `>= stamp`.
    pub top: Stamp,
    /// `Some` when the field is a set: each element's add dots (all `>= stamp`).
    pub dots: Option<BTreeMap<Name, Vec<Stamp>>>,
}

/// A reference to the stamp of a commit of the repository's commit table: 0 is
/// [`Stamp::ZERO`] (never written), `k ≥ 1` the stamp of commit `k − 1` ([`State::stamp`]).
/// Every commit has a unique stamp, so two references are equal exactly when their stamps are;
/// held in every item instead of two 24-byte stamps.
pub type StampRef = u32;

/// One item: its visible value plus what the merge needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// Visible fields. Empty map for a deleted item.
    pub value: Map,
    /// The newest reset (put or delete): its commit, and its kind.
    pub reset: StampRef,
    pub reset_is_delete: bool,
    /// The commit of the newest write (by stamp) to this item.
    pub last: StampRef,
    /// `None` means "every field was written by the reset at `reset` and nothing else": the
    /// metadata is implied by `value`. Saves memory for the common put-only item: boxed, the
    /// field is one pointer instead of an empty `BTreeMap`'s three words.
    #[allow(clippy::box_collection)]
    pub meta: Option<Box<BTreeMap<Name, FieldMeta>>>,
    /// Indices (in the repository's commit table) of the commits that changed this item.
    pub history: History,
}

impl Item {
    fn new() -> Item {
        Item {
            value: Map::new(),
            reset: 0,
            reset_is_delete: false,
            last: 0,
            meta: None,
            history: History::default(),
        }
    }

    /// Whether the item is visible (not deleted).
    pub fn is_live(&self) -> bool {
        !(self.reset_is_delete && self.reset == self.last)
    }

    /// The visible value, or `None` when deleted.
    pub fn visible(&self) -> Option<&Map> {
        self.is_live().then_some(&self.value)
    }

    /// Metadata made explicit (`stamps`: the table the item's references point into).
    pub fn expanded_meta(&self, stamps: &[Stamp]) -> BTreeMap<Name, FieldMeta> {
        expand(
            self.meta.as_deref(),
            &self.value,
            stamp_of(stamps, self.reset),
        )
    }

    /// Drop explicit metadata when `value` implies it.
    fn normalize(&mut self, reset: Stamp) {
        let Some(m) = &self.meta else { return };
        let implied = m.len() == self.value.len()
            && m.iter().all(|(k, fm)| {
                fm.stamp == reset
                    && fm.top == reset
                    && match (self.value.get(k), &fm.dots) {
                        (Some(Value::Set(s)), Some(d)) => {
                            s.len() == d.len() && d.values().all(|ds| ds == &[reset])
                        }
                        (Some(Value::Set(_)), None) | (None, _) => false,
                        (Some(_), d) => d.is_none(),
                    }
            });
        if implied {
            self.meta = None;
        }
    }

    /// Apply a write of the commit `r` (whose stamp is `s`; `stamps` is the table `r` and the
    /// item's references point into). An owned `op` is moved into the item instead of cloned
    /// (the common put of a new item then costs no allocation).
    fn apply(&mut self, op: OpIn<'_>, s: Stamp, r: StampRef, stamps: &[Stamp]) {
        let op_ref = op.as_ref();
        if s > stamp_of(stamps, self.last) {
            self.last = r;
        }
        let old_reset = stamp_of(stamps, self.reset);
        match op_ref {
            Op::Put(_) | Op::Delete => {
                if s < old_reset {
                    return;
                }
                self.reset = r;
                self.reset_is_delete = matches!(op_ref, Op::Delete);
                if self.meta.is_none() {
                    // Every field is at the old reset < s: all of it goes. A put replaces the
                    // whole value: move it in when we own it.
                    match op {
                        OpIn::Owned(Op::Put(m)) => self.value = m,
                        OpIn::Borrowed(Op::Put(m)) => self.value = m.clone(),
                        _ => self.value.clear(),
                    }
                    return;
                }
                // The metadata is expanded at the old reset; the new one is `s`.
                let mut meta = expand(self.meta.as_deref(), &self.value, old_reset);
                let names: Vec<Name> = meta.keys().cloned().collect();
                // Last field first: each removal from the sorted vector then shifts only the
                // fields after it that survived (set elements added after the reset), instead of
                // the whole rest of the item. Fields are independent; the order is free.
                for n in names.into_iter().rev() {
                    assign(&mut self.value, &mut meta, &n, None, s, s);
                }
                if let Op::Put(m) = op_ref {
                    for (k, v) in m {
                        assign(&mut self.value, &mut meta, k, Some(v), s, s);
                    }
                }
                self.meta = Some(Box::new(meta));
                self.normalize(s);
            }
            Op::Patch(p) => {
                let mut meta = expand(self.meta.as_deref(), &self.value, old_reset);
                for (k, fop) in p {
                    match fop {
                        FieldOp::Assign(v) => {
                            assign(&mut self.value, &mut meta, k, Some(v), s, old_reset)
                        }
                        FieldOp::Unset => assign(&mut self.value, &mut meta, k, None, s, old_reset),
                        FieldOp::SetEdit { add, remove } => {
                            set_edit(&mut self.value, &mut meta, k, add, remove, s, old_reset)
                        }
                    }
                }
                self.meta = Some(Box::new(meta));
                self.normalize(old_reset);
            }
        }
    }
}

/// The stamp a [`StampRef`] points to in `stamps`.
fn stamp_of(stamps: &[Stamp], r: StampRef) -> Stamp {
    match r {
        0 => Stamp::ZERO,
        r => stamps[r as usize - 1],
    }
}

/// An item's metadata made explicit, given its value and the stamp of its reset.
fn expand(
    meta: Option<&BTreeMap<Name, FieldMeta>>,
    value: &Map,
    reset: Stamp,
) -> BTreeMap<Name, FieldMeta> {
    match meta {
        Some(m) => m.clone(),
        None => value
            .iter()
            .map(|(k, v)| {
                let dots = match v {
                    Value::Set(s) => Some(s.iter().map(|e| (e.clone(), vec![reset])).collect()),
                    _ => None,
                };
                (
                    k.clone(),
                    FieldMeta {
                        stamp: reset,
                        top: reset,
                        dots,
                    },
                )
            })
            .collect(),
    }
}

/// The indices (in the repository's commit table) of the commits that changed an item, oldest
/// first. Most items are changed a few times: up to [`History::INLINE`] indices are held
/// inline, without an allocation of their own. Reads as a `[u32]`.
#[derive(Clone)]
pub struct History(HistRepr);

#[derive(Clone)]
enum HistRepr {
    Inline {
        len: u8,
        buf: [u32; History::INLINE],
    },
    Heap(Vec<u32>),
}

impl History {
    /// Indices held without an allocation (the most that keep `History` as small as a `Vec`).
    pub const INLINE: usize = 3;

    pub fn push(&mut self, index: u32) {
        match &mut self.0 {
            HistRepr::Inline { len, buf } if (*len as usize) < Self::INLINE => {
                buf[*len as usize] = index;
                *len += 1;
            }
            HistRepr::Inline { len, buf } => {
                let mut v = Vec::with_capacity(2 * Self::INLINE);
                v.extend_from_slice(&buf[..*len as usize]);
                v.push(index);
                self.0 = HistRepr::Heap(v);
            }
            HistRepr::Heap(v) => v.push(index),
        }
    }

    pub fn as_slice(&self) -> &[u32] {
        match &self.0 {
            HistRepr::Inline { len, buf } => &buf[..*len as usize],
            HistRepr::Heap(v) => v,
        }
    }
}

impl Default for History {
    fn default() -> History {
        History(HistRepr::Inline {
            len: 0,
            buf: [0; History::INLINE],
        })
    }
}

impl std::ops::Deref for History {
    type Target = [u32];
    fn deref(&self) -> &[u32] {
        self.as_slice()
    }
}

impl<'a> IntoIterator for &'a History {
    type Item = &'a u32;
    type IntoIter = std::slice::Iter<'a, u32>;
    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

impl FromIterator<u32> for History {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> History {
        let mut h = History::default();
        for i in iter {
            h.push(i);
        }
        h
    }
}

impl From<Vec<u32>> for History {
    fn from(v: Vec<u32>) -> History {
        if v.len() <= Self::INLINE {
            v.into_iter().collect()
        } else {
            History(HistRepr::Heap(v))
        }
    }
}

impl PartialEq for History {
    fn eq(&self, other: &History) -> bool {
        self.as_slice() == other.as_slice()
    }
}
impl Eq for History {}

impl std::fmt::Debug for History {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_slice(), f)
    }
}

/// A write handed to [`Item::apply`]: borrowed (the caller keeps the commit) or owned (the
/// commit is consumed, its values move into the state).
enum OpIn<'a> {
    #[cfg_attr(not(any(test, feature = "testing")), allow(dead_code))]
    Borrowed(&'a Op),
    Owned(Op),
}

impl OpIn<'_> {
    fn as_ref(&self) -> &Op {
        match self {
            OpIn::Borrowed(op) => op,
            OpIn::Owned(op) => op,
        }
    }
}

/// Assign `v` (None = absent) to field `k` at stamp `s`.
///
/// Per field, with `clear` = the newest assignment (resets count) and `top` = the newest write
/// of any kind: the field's kind (scalar or set) is the kind of `top`; set elements are the
/// add dots at or after `clear` that no remove observed. Each is a max over the set of
/// writes, so the result does not depend on the order writes arrive in.
fn assign(
    value: &mut Map,
    meta: &mut BTreeMap<Name, FieldMeta>,
    k: &str,
    v: Option<&Value>,
    s: Stamp,
    reset: Stamp,
) {
    let (clear, top) = meta
        .get(k)
        .map_or((reset, reset), |m| (m.stamp.max(reset), m.top.max(reset)));
    if s < clear {
        return;
    }
    let old_dots = meta.get_mut(k).and_then(|m| m.dots.take());
    let mut dots = None;
    if s >= top {
        // This assignment is the newest write (or the put half of a reset at the same stamp):
        // it decides the kind.
        if let Some(Value::Set(elems)) = v {
            dots = Some(elems.iter().map(|e| (e.clone(), vec![s])).collect());
        }
    } else {
        // A newer set add exists: the field stays a set; this assignment only clears the
        // elements added before it (and contributes its own, if it assigns a set).
        let mut d: BTreeMap<Name, Vec<Stamp>> = old_dots.unwrap_or_default();
        d.retain(|_, ds| {
            ds.retain(|x| *x > s);
            !ds.is_empty()
        });
        if let Some(Value::Set(elems)) = v {
            for e in elems {
                let ds = d.entry(e.clone()).or_default();
                ds.push(s);
                ds.sort();
            }
        }
        dots = Some(d);
    }
    match (&dots, v) {
        (Some(d), _) => {
            value.insert(Name::new(k), Value::Set(d.keys().cloned().collect()));
        }
        (None, Some(v)) => {
            value.insert(Name::new(k), v.clone());
        }
        (None, None) => {
            value.remove(k);
        }
    }
    meta.insert(
        Name::new(k),
        FieldMeta {
            stamp: s,
            top: top.max(s),
            dots,
        },
    );
}

fn set_edit(
    value: &mut Map,
    meta: &mut BTreeMap<Name, FieldMeta>,
    k: &str,
    add: &BTreeSet<String>,
    remove: &BTreeMap<String, Vec<Stamp>>,
    s: Stamp,
    reset: Stamp,
) {
    let fm = meta.entry(Name::new(k)).or_insert(FieldMeta {
        stamp: Stamp::ZERO,
        top: Stamp::ZERO,
        dots: None,
    });
    if let Some(d) = &mut fm.dots {
        for (e, observed) in remove {
            if let Some(ds) = d.get_mut(e.as_str()) {
                ds.retain(|x| !observed.contains(x));
                if ds.is_empty() {
                    d.remove(e.as_str());
                }
            }
        }
    }
    if !add.is_empty() && s >= fm.stamp.max(reset) {
        if s > fm.top.max(reset) {
            // The newest write is a set add: the field is a set from here on.
            fm.top = s;
            if fm.dots.is_none() {
                fm.dots = Some(BTreeMap::new());
            }
        }
        // Otherwise `top` is itself a set write (an assignment newer than `stamp` would
        // have raised `stamp`), so `dots` is already `Some`.
        let d = fm.dots.get_or_insert_with(BTreeMap::new);
        for e in add {
            let ds = d.entry(Name::new(e)).or_default();
            if !ds.contains(&s) {
                ds.push(s);
                ds.sort();
            }
        }
    }
    match &fm.dots {
        Some(d) => {
            value.insert(Name::new(k), Value::Set(d.keys().cloned().collect()));
        }
        None => {
            // Only removes against a non-set field: nothing changes. Drop an empty placeholder.
            if fm.stamp == Stamp::ZERO && fm.top == Stamp::ZERO && !value.contains_key(k) {
                meta.remove(k);
            }
        }
    }
}

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

/// An item's id inside its collection: a [`Name`]. Ids of up to [`Name::INLINE`] bytes are
/// stored inline, so a lookup compares bytes held in the tree node itself instead of following
/// a pointer per comparison (the cache misses that dominate a lookup in a large collection), and
/// a short id costs no allocation. Ordered bytewise, like `str`.
pub type ItemId = Name;

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
    /// Whether a commit changed the collection since the snapshot the state was opened from,
    /// or since the last snapshot written (`State::untouch`): while it has not, the
    /// snapshot's persisted indexes describe it (docs/design.md §8).
    touched: bool,
}

/// Equal when the items (and cold blocks) are: `touched` is bookkeeping of this replica.
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
            touched: false,
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

    /// Block `at` is loaded (its items are added next): it leaves the cold blocks.
    pub(crate) fn take_cold(&mut self, at: BlockAt) {
        self.cold.take(at);
    }

    /// Every cold block is loaded (their items are added next).
    pub(crate) fn take_all_cold(&mut self) {
        self.cold.take_all();
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
        self.cold.is_some()
    }

    /// Bytes of the snapshot file the cold blocks occupy.
    pub(crate) fn cold_bytes(&self) -> u64 {
        let blocks = self.collections.values().flat_map(|c| c.cold.iter());
        blocks.map(|b| u64::from(b.len)).sum()
    }

    /// Forget the cold tables once the last cold block is loaded.
    /// A snapshot of the state was written: no collection has changed since.
    pub(crate) fn untouch(&mut self) {
        for c in self.collections.values_mut() {
            c.touched = false;
        }
    }

    pub(crate) fn drop_cold_tables_if_done(&mut self) {
        if self.collections.values().all(|c| c.cold.is_empty()) {
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
        for ch in &commit.changes {
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
        for ch in commit.changes {
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
    pub fn hash(&self) -> [u8; 32] {
        debug_assert!(!self.has_cold(), "a hash of a state not loaded");
        let mut h = Sha256::new();
        let mut w = crate::codec::Writer::new();
        for (cname, c) in &self.collections {
            for (id, v) in c.iter() {
                w.buf.clear();
                w.lp(cname.as_bytes());
                w.lp(id.as_bytes());
                Value::Map(v.clone()).encode(&mut w);
                h.update(&w.buf);
            }
        }
        h.finalize().into()
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
    use crate::commit::Change;
    use crate::commit::Identity;
    use crate::map;

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
    fn history_is_a_small_vec() {
        // As small as a `Vec` on 64-bit targets; on 32-bit ones (wasm32) the tag costs 4 bytes.
        let slack = if cfg!(target_pointer_width = "32") {
            4
        } else {
            0
        };
        assert!(std::mem::size_of::<History>() <= std::mem::size_of::<Vec<u32>>() + slack);
        let mut h = History::default();
        let mut v = Vec::new();
        for i in 0..20u32 {
            assert_eq!(h.as_slice(), v.as_slice());
            assert_eq!(h, History::from(v.clone()));
            h.push(i * 7);
            v.push(i * 7);
        }
        assert_eq!(&*h, v.as_slice());
        assert_eq!((&h).into_iter().count(), 20);
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
