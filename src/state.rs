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

use crate::commit::{Commit, CommitId, FieldOp, Op, Stamp};
use crate::value::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};

/// Per-field merge metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldMeta {
    /// Stamp of the newest assignment (or reset) of this field.
    pub stamp: Stamp,
    /// For set fields: each element's add dots (all newer than or equal to `stamp`).
    pub dots: Option<BTreeMap<String, Vec<Stamp>>>,
}

/// One item: its visible value plus what the merge needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// Visible fields. Empty map for a deleted item.
    pub value: Map,
    /// Stamp and kind of the newest reset (put or delete).
    pub reset: Stamp,
    pub reset_is_delete: bool,
    /// Newest stamp of any write to this item.
    pub last: Stamp,
    /// `None` means "every field was written by the reset at `reset` and nothing else": the
    /// metadata is implied by `value`. Saves memory for the common put-only item.
    pub meta: Option<Box<BTreeMap<String, FieldMeta>>>,
    /// Indices (in the repository's commit table) of the commits that changed this item.
    pub history: Vec<u32>,
}

impl Item {
    fn new() -> Item {
        Item {
            value: Map::new(),
            reset: Stamp::ZERO,
            reset_is_delete: false,
            last: Stamp::ZERO,
            meta: None,
            history: Vec::new(),
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

    /// Metadata made explicit.
    pub fn expanded_meta(&self) -> BTreeMap<String, FieldMeta> {
        match &self.meta {
            Some(m) => (**m).clone(),
            None => self
                .value
                .iter()
                .map(|(k, v)| {
                    let dots = match v {
                        Value::Set(s) => {
                            Some(s.iter().map(|e| (e.clone(), vec![self.reset])).collect())
                        }
                        _ => None,
                    };
                    (
                        k.clone(),
                        FieldMeta {
                            stamp: self.reset,
                            dots,
                        },
                    )
                })
                .collect(),
        }
    }

    /// Drop explicit metadata when `value` implies it.
    fn normalize(&mut self) {
        let Some(m) = &self.meta else { return };
        let implied = m.len() == self.value.len()
            && m.iter().all(|(k, fm)| {
                fm.stamp == self.reset
                    && match (self.value.get(k), &fm.dots) {
                        (Some(Value::Set(s)), Some(d)) => {
                            s.len() == d.len() && d.values().all(|ds| ds == &[self.reset])
                        }
                        (Some(Value::Set(_)), None) | (None, _) => false,
                        (Some(_), d) => d.is_none(),
                    }
            });
        if implied {
            self.meta = None;
        }
    }

    fn apply(&mut self, op: &Op, s: Stamp) {
        if s > self.last {
            self.last = s;
        }
        match op {
            Op::Put(_) | Op::Delete => {
                if s < self.reset {
                    return;
                }
                self.reset = s;
                self.reset_is_delete = matches!(op, Op::Delete);
                if self.meta.is_none() {
                    // Every field is at the old reset < s: all of it goes.
                    self.value.clear();
                } else {
                    let mut meta = self.expanded_meta();
                    let names: Vec<String> = meta.keys().cloned().collect();
                    for n in names {
                        assign(&mut self.value, &mut meta, &n, None, s, self.reset);
                    }
                    self.meta = Some(Box::new(meta));
                }
                if let Op::Put(m) = op {
                    if self.meta.is_none() {
                        self.value = m.clone();
                    } else {
                        let mut meta = *self.meta.take().unwrap();
                        for (k, v) in m {
                            assign(&mut self.value, &mut meta, k, Some(v), s, self.reset);
                        }
                        self.meta = Some(Box::new(meta));
                    }
                }
            }
            Op::Patch(p) => {
                let mut meta = self.expanded_meta();
                for (k, fop) in p {
                    match fop {
                        FieldOp::Assign(v) => {
                            assign(&mut self.value, &mut meta, k, Some(v), s, self.reset)
                        }
                        FieldOp::Unset => {
                            assign(&mut self.value, &mut meta, k, None, s, self.reset)
                        }
                        FieldOp::SetEdit { add, remove } => {
                            set_edit(&mut self.value, &mut meta, k, add, remove, s, self.reset)
                        }
                    }
                }
                self.meta = Some(Box::new(meta));
            }
        }
        self.normalize();
    }
}

/// Assign `v` (None = absent) to field `k` at stamp `s`, unless an assignment or reset at least
/// as new exists. Set adds newer than `s` survive.
fn assign(
    value: &mut Map,
    meta: &mut BTreeMap<String, FieldMeta>,
    k: &str,
    v: Option<&Value>,
    s: Stamp,
    reset: Stamp,
) {
    let floor = meta.get(k).map_or(reset, |m| m.stamp.max(reset));
    if s < floor {
        return;
    }
    let mut newer: BTreeMap<String, Vec<Stamp>> = BTreeMap::new();
    if let Some(FieldMeta { dots: Some(d), .. }) = meta.get(k) {
        for (e, ds) in d {
            let keep: Vec<Stamp> = ds.iter().copied().filter(|x| *x > s).collect();
            if !keep.is_empty() {
                newer.insert(e.clone(), keep);
            }
        }
    }
    let dots = match v {
        Some(Value::Set(elems)) => {
            for e in elems {
                let ds = newer.entry(e.clone()).or_default();
                ds.push(s);
                ds.sort();
            }
            Some(newer)
        }
        _ if !newer.is_empty() => Some(newer),
        _ => None,
    };
    match (&dots, v) {
        (Some(d), _) => {
            value.insert(k.to_owned(), Value::Set(d.keys().cloned().collect()));
        }
        (None, Some(v)) => {
            value.insert(k.to_owned(), v.clone());
        }
        (None, None) => {
            value.remove(k);
        }
    }
    meta.insert(k.to_owned(), FieldMeta { stamp: s, dots });
}

fn set_edit(
    value: &mut Map,
    meta: &mut BTreeMap<String, FieldMeta>,
    k: &str,
    add: &BTreeSet<String>,
    remove: &BTreeMap<String, Vec<Stamp>>,
    s: Stamp,
    reset: Stamp,
) {
    let fm = meta.entry(k.to_owned()).or_insert(FieldMeta {
        stamp: Stamp::ZERO,
        dots: None,
    });
    if let Some(d) = &mut fm.dots {
        for (e, observed) in remove {
            if let Some(ds) = d.get_mut(e) {
                ds.retain(|x| !observed.contains(x));
                if ds.is_empty() {
                    d.remove(e);
                }
            }
        }
    }
    let floor = fm.stamp.max(reset);
    if !add.is_empty() && s >= floor {
        let d = fm.dots.get_or_insert_with(BTreeMap::new);
        for e in add {
            let ds = d.entry(e.clone()).or_default();
            if !ds.contains(&s) {
                ds.push(s);
                ds.sort();
            }
        }
    }
    match &fm.dots {
        Some(d) => {
            value.insert(k.to_owned(), Value::Set(d.keys().cloned().collect()));
        }
        None => {
            // Only removes against a non-set field: nothing changes. Drop an empty placeholder.
            if fm.stamp == Stamp::ZERO && !value.contains_key(k) {
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

/// One collection's items.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Collection {
    pub items: BTreeMap<String, Item>,
    live: usize,
}

impl Collection {
    /// Number of visible items (O(1)).
    pub fn count(&self) -> usize {
        self.live
    }
    /// Visible items in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Map)> {
        self.items
            .iter()
            .filter_map(|(k, it)| it.visible().map(|v| (k.as_str(), v)))
    }
    pub fn get(&self, id: &str) -> Option<&Map> {
        self.items.get(id)?.visible()
    }
    pub(crate) fn insert_item(&mut self, id: String, item: Item) {
        if item.is_live() {
            self.live += 1;
        }
        if let Some(old) = self.items.insert(id, item) {
            if old.is_live() {
                self.live -= 1;
            }
        }
    }
}

/// All collections.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct State {
    pub collections: BTreeMap<String, Collection>,
}

impl State {
    pub fn new() -> State {
        State::default()
    }

    pub fn collection(&self, name: &str) -> Option<&Collection> {
        self.collections.get(name)
    }

    pub fn get(&self, collection: &str, id: &str) -> Option<&Map> {
        self.collections.get(collection)?.get(id)
    }

    /// Raw item including tombstones and metadata.
    pub fn item(&self, collection: &str, id: &str) -> Option<&Item> {
        self.collections.get(collection)?.items.get(id)
    }

    /// Apply a commit. `index` is its position in the commit table (for history).
    pub fn apply(&mut self, commit: &Commit, id: &CommitId, index: u32, sink: &mut dyn ChangeSink) {
        let s = commit.stamp(id);
        for ch in &commit.changes {
            let coll = match self.collections.get_mut(&ch.collection) {
                Some(c) => c,
                None => self.collections.entry(ch.collection.clone()).or_default(),
            };
            let watch = sink.watches(&ch.collection);
            let item = match coll.items.get_mut(&ch.id) {
                Some(i) => i,
                None => coll.items.entry(ch.id.clone()).or_insert_with(Item::new),
            };
            let was_live = item.is_live() && item.last != Stamp::ZERO;
            let old = if watch && was_live {
                Some(item.value.clone())
            } else {
                None
            };
            item.apply(&ch.op, s);
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
                    sink.changed(&ch.collection, &ch.id, old.as_ref(), new);
                }
            }
        }
    }

    /// SHA-256 over every visible item (collection, id, value) in key order. Equal on any two
    /// replicas that hold the same commits.
    pub fn hash(&self) -> [u8; 32] {
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

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commit::Change;
    use crate::crypto::Identity;
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
