//! [`ItemMap`]: a collection's items by id, in id order — a [`Chunked`] map (`chunked.rs` says
//! why not std's `BTreeMap`).

use crate::chunked::{Builder, Chunked, Pos, Slot};
use crate::item::{Item, ItemId};

/// A collection's items (tombstones included) in id order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ItemMap(Chunked<ItemId, Item>);

/// Run `$search` with `$f` comparing a key with `$id`: for an id short enough to be held
/// inline, as two inline names (two word compares), otherwise as bytes (no allocation for the
/// key). A macro, so that each comparison is inlined.
macro_rules! find {
    ($id:expr, |$f:ident| $search:expr) => {{
        let id: &str = $id;
        if id.len() <= ItemId::INLINE {
            let k = ItemId::new(id);
            let $f = |e: &ItemId| e.cmp(&k);
            $search
        } else {
            let $f = |e: &ItemId| e.as_bytes().cmp(id.as_bytes());
            $search
        }
    }};
}

impl ItemMap {
    pub const fn new() -> ItemMap {
        ItemMap(Chunked::new())
    }

    pub fn get(&self, id: &str) -> Option<&Item> {
        find!(id, |f| self.0.get(f))
    }

    /// Where `id` is (`Ok`) or would be inserted (`Err`).
    pub fn search(&self, id: &str) -> Result<Pos, Pos> {
        find!(id, |f| self.0.search(f))
    }

    /// The item at `p`, from [`ItemMap::search`] or [`ItemMap::insert_at`] with no change
    /// in between.
    pub fn at_mut(&mut self, p: Pos) -> &mut Item {
        self.0.at_mut(p)
    }

    /// Insert the item `id` at `p`, the `Err` of [`ItemMap::search`] for `id` with no change
    /// in between; where it is.
    pub fn insert_at(&mut self, p: Pos, id: ItemId, item: Item) -> Pos {
        self.0.insert_at(p, id, item)
    }

    /// In id order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&ItemId, &Item)> + Clone + '_ {
        self.0.iter()
    }

    /// In id order, with each item's slot; `None` past 2^24 chunks (`Chunked::slots`).
    pub fn slots(&self) -> Option<impl Iterator<Item = (Slot, &ItemId, &Item)> + '_> {
        self.0.slots()
    }

    /// The item at `s`, from [`ItemMap::slots`] with no change in between.
    pub fn at_slot(&self, s: Slot) -> (&ItemId, &Item) {
        self.0.at_slot(s)
    }

    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &ItemId> + Clone + '_ {
        self.0.keys()
    }

    pub fn values(&self) -> impl DoubleEndedIterator<Item = &Item> + Clone + '_ {
        self.0.iter().map(|(_, v)| v)
    }

    /// The items a [`Builder`] was given (in id order).
    pub fn from_built(b: Builder<ItemId, Item>) -> ItemMap {
        ItemMap(b.finish())
    }

    /// The last id, if any.
    pub fn last_id(&self) -> Option<&ItemId> {
        self.0.last()
    }

    /// Append the chunks of `run`, whose ids all sort after every id here.
    pub fn append_run(&mut self, run: ItemMap) {
        debug_assert!(self
            .last_id()
            .is_none_or(|l| run.0.first().is_none_or(|f| l < f)));
        self.0.append(run.0);
    }

    /// Move the items of `loaded` in. Each of its chunks spans a range of ids that holds no
    /// id of `self` (what a snapshot block's items satisfy: `cold.rs`).
    pub fn merge_loaded(&mut self, loaded: ItemMap) {
        self.0.merge_disjoint(loaded.0);
    }
}
