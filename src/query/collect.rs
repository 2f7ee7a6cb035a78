//! Collecting matches in sort order: a bounded heap of the best `k` (top-k), or all of them.

use super::eval::{cmp_items, CSort};
use crate::value::Map;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// An item in the top-k heap, ordered by the query's sort (the heap's top is the worst kept).
struct Ranked<'a, 's> {
    id: &'a str,
    m: &'a Map,
    keys: &'s [CSort],
}
impl Ord for Ranked<'_, '_> {
    fn cmp(&self, other: &Self) -> Ordering {
        cmp_items(self.keys, (self.id, self.m), (other.id, other.m))
    }
}
impl PartialOrd for Ranked<'_, '_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl PartialEq for Ranked<'_, '_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Ranked<'_, '_> {}

/// Collects matches and yields them in sort order: a bounded heap when `k` is known.
pub(crate) struct Collector<'a, 's> {
    keys: &'s [CSort],
    k: Option<usize>,
    heap: BinaryHeap<Ranked<'a, 's>>,
    all: Vec<(&'a str, &'a Map)>,
}

impl<'a, 's> Collector<'a, 's> {
    pub(crate) fn new(keys: &'s [CSort], k: Option<usize>) -> Self {
        Collector {
            keys,
            k,
            heap: BinaryHeap::with_capacity(k.unwrap_or(0).min(1 << 16) + 1),
            all: Vec::new(),
        }
    }

    #[inline]
    pub(crate) fn push(&mut self, id: &'a str, m: &'a Map) {
        match self.k {
            None => self.all.push((id, m)),
            Some(0) => {}
            Some(k) => {
                let r = Ranked {
                    id,
                    m,
                    keys: self.keys,
                };
                if self.heap.len() < k {
                    self.heap.push(r);
                } else if let Some(mut top) = self.heap.peek_mut() {
                    if r < *top {
                        *top = r;
                    }
                }
            }
        }
    }

    pub(crate) fn finish(self) -> Vec<(&'a str, &'a Map)> {
        match self.k {
            None => {
                let mut all = self.all;
                let keys = self.keys;
                all.sort_unstable_by(|a, b| cmp_items(keys, *a, *b));
                all
            }
            Some(_) => self
                .heap
                .into_sorted_vec()
                .into_iter()
                .map(|r| (r.id, r.m))
                .collect(),
        }
    }
}
