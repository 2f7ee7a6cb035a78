//! One item of a collection: its id, its visible value, and the stamps the merge rules
//! (`merge.rs`) keep per item and per field, referring into the commit table (`state.rs`).

use crate::commit::Stamp;
use crate::value::{Map, Name, Value};
use std::collections::BTreeMap;

/// An item's id inside its collection: a [`Name`]. Ids of up to [`Name::INLINE`] bytes are
/// stored inline, so a lookup compares bytes held in the tree node itself instead of following
/// a pointer per comparison (the cache misses that dominate a lookup in a large collection), and
/// a short id costs no allocation. Ordered bytewise, like `str`.
pub type ItemId = Name;

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
/// [`Stamp::ZERO`] (never written), `k ≥ 1` the stamp of commit `k − 1` (`State::stamps`).
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
    pub(crate) fn new() -> Item {
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
}

/// The stamp a [`StampRef`] points to in `stamps`.
pub(crate) fn stamp_of(stamps: &[Stamp], r: StampRef) -> Stamp {
    match r {
        0 => Stamp::ZERO,
        r => stamps[r as usize - 1],
    }
}

/// An item's metadata made explicit, given its value and the stamp of its reset.
pub(crate) fn expand(
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
        // A commit applied late (an encrypted repository's commit opened when its epoch key
        // arrived, docs/design.md §6.8) takes its place: the list stays in commit order.
        let s = match &mut self.0 {
            HistRepr::Inline { len, buf } => &mut buf[..*len as usize],
            HistRepr::Heap(v) => v.as_mut_slice(),
        };
        let mut i = s.len() - 1;
        while i > 0 && s[i - 1] > s[i] {
            s.swap(i - 1, i);
            i -= 1;
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
