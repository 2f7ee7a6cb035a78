//! Aggregates: one pass over the matches, borrowing values (no clones until the output).

use super::ast::{AggOp, AggregateQuery};
use super::entry::{IKey, NumStats};
use super::eval::{cmp_opt, CFilter, CPath};
use super::index::Index;
use super::plan::{candidates, choose, tighter, type_bounds, Source};
use super::{for_each_match, Items};
use crate::error::Result;
use crate::state::Collection;
use crate::value::{to_tree, Map, Value};
use serde_json::Value as J;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::ops::Bound;

#[derive(Debug, Clone, Default)]
struct Acc<'a> {
    n: u64,
    sum: f64,
    nums: u64,
    min: Option<&'a Value>,
    max: Option<&'a Value>,
}

impl<'a> Acc<'a> {
    #[inline]
    fn add(&mut self, op: &AggOp, v: Option<&'a Value>) {
        match op {
            AggOp::Count(None) => self.n += 1,
            AggOp::Count(Some(_)) => {
                if v.is_some_and(|v| !matches!(v, Value::Null)) {
                    self.n += 1
                }
            }
            AggOp::Sum(_) | AggOp::Avg(_) => {
                if let Some(Value::Number(x)) = v {
                    self.sum += x;
                    self.nums += 1;
                }
            }
            AggOp::Min(_) => {
                if let Some(v) = v.filter(|v| !matches!(v, Value::Null)) {
                    if self.min.is_none_or(|m| v.total_cmp(m) == Ordering::Less) {
                        self.min = Some(v);
                    }
                }
            }
            AggOp::Max(_) => {
                if let Some(v) = v.filter(|v| !matches!(v, Value::Null)) {
                    if self.max.is_none_or(|m| v.total_cmp(m) == Ordering::Greater) {
                        self.max = Some(v);
                    }
                }
            }
        }
    }

    fn result(&self, op: &AggOp) -> J {
        match op {
            AggOp::Count(_) => J::from(self.n),
            AggOp::Sum(_) => to_tree(&Value::Number(self.sum)),
            AggOp::Avg(_) if self.nums == 0 => J::Null,
            AggOp::Avg(_) => to_tree(&Value::Number(self.sum / self.nums as f64)),
            AggOp::Min(_) => self.min.map_or(J::Null, to_tree),
            AggOp::Max(_) => self.max.map_or(J::Null, to_tree),
        }
    }
}

/// Group key: missing and null form one group (printed as null).
#[derive(Debug, Clone, Copy)]
struct GKey<'a>(Option<&'a Value>);
impl Ord for GKey<'_> {
    fn cmp(&self, other: &Self) -> Ordering {
        cmp_opt(self.0, other.0)
    }
}
impl PartialOrd for GKey<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl PartialEq for GKey<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for GKey<'_> {}

fn output(q: &AggregateQuery, accs: &[Acc]) -> serde_json::Map<String, J> {
    q.aggregates
        .iter()
        .zip(accs)
        .map(|((name, op), a)| (name.clone(), a.result(op)))
        .collect()
}

/// If every aggregate reads one indexed path (or is `count: true`), and the filter is absent or
/// exactly a range on that path, the answer comes from the index alone: min and max from the
/// ends of the range, counts and sums from the maintained stats (no filter) or one tight pass
/// over the range's entries.
fn index_fast_path<'a>(
    q: &AggregateQuery,
    indexes: &'a BTreeMap<String, Index>,
) -> Option<Vec<Acc<'a>>> {
    if q.group_by.is_some() {
        return None;
    }
    let mut path: Option<&str> = None;
    for (_, op) in &q.aggregates {
        if let Some(p) = op.path() {
            if path.is_some_and(|x| x != p) {
                return None;
            }
            path = Some(p);
        }
    }
    let ix = indexes.get(path?)?;
    let (lo, hi) = match &q.filter {
        None => (Bound::Unbounded, Bound::Unbounded),
        Some(f) => {
            let c = candidates(f, indexes)
                .into_iter()
                .find(|c| c.covers && std::ptr::eq(c.index, ix))?;
            let Source::Range { lo, hi } = c.source else {
                return None;
            };
            (lo, hi)
        }
    };
    let whole = q.filter.is_none();
    // Present, non-null values: keys above null.
    let null = Bound::Excluded(IKey::Val(Value::Null));
    let nn_lo = tighter(lo.clone(), null, true);
    let present = || ix.values.range(&nn_lo, &hi);
    let (num_lo, num_hi) = type_bounds(&Value::Number(0.0));
    let numbers = || {
        ix.values.range(
            &tighter(lo.clone(), num_lo.clone(), true),
            &tighter(hi.clone(), num_hi.clone(), false),
        )
    };
    let mut all: Option<u64> = None;
    let mut sums: Option<(f64, u64)> = None;
    let mut accs = Vec::with_capacity(q.aggregates.len());
    for (_, op) in &q.aggregates {
        let mut a = Acc::default();
        match op {
            AggOp::Count(None) => {
                a.n = *all.get_or_insert_with(|| {
                    if whole {
                        ix.values.len() as u64
                    } else {
                        ix.values.count_range(&lo, &hi, usize::MAX) as u64
                    }
                })
            }
            AggOp::Count(Some(_)) => a.n = ix.values.count_range(&nn_lo, &hi, usize::MAX) as u64,
            AggOp::Sum(_) | AggOp::Avg(_) => {
                let (sum, n) = *sums.get_or_insert_with(|| match ix.stats.sum() {
                    Some(s) if whole => s,
                    _ => numbers().fold((0.0, 0), |(s, n), e| match &e.key {
                        IKey::Val(Value::Number(x)) => (s + x, n + 1),
                        _ => (s, n),
                    }),
                });
                a.sum = sum;
                a.nums = n;
            }
            AggOp::Min(_) => a.min = present().next().and_then(|e| e.key.as_opt()),
            AggOp::Max(_) => a.max = present().next_back().and_then(|e| e.key.as_opt()),
        }
        accs.push(a);
    }
    Some(accs)
}

/// Most field aggregates kept per collection ([`FieldAgg`]); past it, aggregates on further
/// paths scan.
pub(crate) const MAX_FIELD_AGGS: usize = 32;

/// Running aggregates of one path of one collection, for unfiltered, ungrouped aggregates on a
/// path without an index. Built by one scan on first use, then maintained by every visible
/// change (the query engine's change feed): counting, summing or bounding the path again costs
/// O(1) instead of a scan. A few words per path: no per-item memory.
#[derive(Debug, Clone)]
pub(crate) struct FieldAgg {
    path: String,
    cpath: CPath,
    /// Items whose value at the path is present and not null.
    present: u64,
    /// Count and exact integer sum of the numbers (as an index keeps them).
    nums: NumStats,
    /// Smallest / largest present non-null value: `None` while unknown (a change removed the
    /// current one; the next aggregate that needs it rescans), `Some(None)` when there is none.
    min: Option<Option<Value>>,
    max: Option<Option<Value>>,
}

impl FieldAgg {
    /// One scan of the collection.
    pub(crate) fn build(path: &str, coll: &Collection) -> FieldAgg {
        let mut f = FieldAgg::empty(path);
        for (_, m) in coll.iter() {
            f.add(f.cpath.get(m));
        }
        f
    }

    /// Nothing added yet: fed by [`FieldAgg::add_loaded`] and [`FieldAgg::add_value`] when the
    /// collection's items are partly still in a snapshot's blocks (`Repo::aggregate`).
    pub(crate) fn empty(path: &str) -> FieldAgg {
        FieldAgg {
            path: path.to_string(),
            cpath: CPath::new(path),
            present: 0,
            nums: NumStats::default(),
            min: Some(None),
            max: Some(None),
        }
    }

    /// Add the collection's loaded visible items.
    pub(crate) fn add_loaded(&mut self, coll: &Collection) {
        for it in coll.items.values() {
            if let Some(m) = it.visible() {
                self.add(self.cpath.get(m));
            }
        }
    }

    /// Add one visible item's value at the path (read from a snapshot block).
    pub(crate) fn add_value(&mut self, v: Option<&Value>) {
        self.add(v);
    }

    pub(crate) fn path(&self) -> &str {
        &self.path
    }

    fn add(&mut self, v: Option<&Value>) {
        let Some(v) = v.filter(|v| !matches!(v, Value::Null)) else {
            return;
        };
        self.present += 1;
        self.nums.update(Some(v), true);
        if let Some(m) = &mut self.min {
            if m.as_ref().is_none_or(|x| v.total_cmp(x) == Ordering::Less) {
                *m = Some(v.clone());
            }
        }
        if let Some(m) = &mut self.max {
            if m.as_ref()
                .is_none_or(|x| v.total_cmp(x) == Ordering::Greater)
            {
                *m = Some(v.clone());
            }
        }
    }

    fn remove(&mut self, v: Option<&Value>) {
        let Some(v) = v.filter(|v| !matches!(v, Value::Null)) else {
            return;
        };
        self.present -= 1;
        self.nums.update(Some(v), false);
        for end in [&mut self.min, &mut self.max] {
            if matches!(end, Some(Some(x)) if v.total_cmp(x) == Ordering::Equal) {
                *end = None;
            }
        }
        if self.present == 0 {
            self.min = Some(None);
            self.max = Some(None);
        }
    }

    /// An item changed from `old` to `new` (None: absent or deleted).
    pub(crate) fn changed(&mut self, old: Option<&Map>, new: Option<&Map>) {
        let (a, b) = (
            old.and_then(|m| self.cpath.get(m)),
            new.and_then(|m| self.cpath.get(m)),
        );
        if a != b {
            let (a, b) = (a.cloned(), b.cloned());
            self.remove(a.as_ref());
            self.add(b.as_ref());
        }
    }

    /// Rescan for the unknown ends.
    fn settle(&mut self, coll: &Collection) {
        if self.min.is_some() && self.max.is_some() {
            return;
        }
        let fresh = FieldAgg::build(&self.path, coll);
        self.min = fresh.min;
        self.max = fresh.max;
    }

    /// `Some(difference)` when this differs from `fresh` (a rebuild; unknown ends are not
    /// compared).
    pub(crate) fn diff(&self, fresh: &FieldAgg) -> Option<String> {
        if self.present != fresh.present || self.nums != fresh.nums {
            return Some(format!(
                "{} present values and {:?}, the state has {} and {:?}",
                self.present, self.nums, fresh.present, fresh.nums
            ));
        }
        for (name, held, f) in [
            ("min", &self.min, &fresh.min),
            ("max", &self.max, &fresh.max),
        ] {
            if held.as_ref().is_some_and(|h| Some(h) != f.as_ref()) {
                return Some(format!("{name} {held:?}, the state has {f:?}"));
            }
        }
        None
    }
}

/// Answer an unfiltered, ungrouped aggregate from the collection's field aggregates (`cache`,
/// built here on first use), or `None` when it cannot (a filter or group, a non-exact sum, or
/// too many paths).
fn from_field_aggs(
    coll: &Collection,
    q: &AggregateQuery,
    cache: &mut BTreeMap<String, FieldAgg>,
) -> Option<J> {
    if q.group_by.is_some() || q.filter.is_some() {
        return None;
    }
    for (_, op) in &q.aggregates {
        if let Some(p) = op.path() {
            if !cache.contains_key(p) {
                if cache.len() >= MAX_FIELD_AGGS {
                    return None;
                }
                cache.insert(p.to_string(), FieldAgg::build(p, coll));
            }
        }
    }
    let mut out = serde_json::Map::new();
    for (name, op) in &q.aggregates {
        let f = op.path().and_then(|p| cache.get_mut(p));
        let r = match (op, f) {
            (AggOp::Count(None), _) => J::from(coll.count() as u64),
            (AggOp::Count(Some(_)), Some(f)) => J::from(f.present),
            (AggOp::Sum(_), Some(f)) => to_tree(&Value::Number(f.nums.sum()?.0)),
            (AggOp::Avg(_), Some(f)) => match f.nums.sum()? {
                (_, 0) => J::Null,
                (s, n) => to_tree(&Value::Number(s / n as f64)),
            },
            (AggOp::Min(_), Some(f)) => {
                f.settle(coll);
                f.min.as_ref()?.as_ref().map_or(J::Null, to_tree)
            }
            (AggOp::Max(_), Some(f)) => {
                f.settle(coll);
                f.max.as_ref()?.as_ref().map_or(J::Null, to_tree)
            }
            _ => return None,
        };
        out.insert(name.clone(), r);
    }
    Some(J::Object(out))
}

/// The distinct paths the aggregates read, and which one each reads.
struct Reads {
    paths: Vec<CPath>,
    which: Vec<Option<usize>>,
}

impl Reads {
    fn new(q: &AggregateQuery) -> Reads {
        let mut names: Vec<&str> = Vec::new();
        let which = q
            .aggregates
            .iter()
            .map(|(_, op)| {
                op.path().map(|p| {
                    names.iter().position(|x| *x == p).unwrap_or_else(|| {
                        names.push(p);
                        names.len() - 1
                    })
                })
            })
            .collect();
        Reads {
            paths: names.into_iter().map(CPath::new).collect(),
            which,
        }
    }
}

/// Add one item to the accumulators, reading each distinct path once.
#[inline]
fn feed<'a>(
    accs: &mut [Acc<'a>],
    aggs: &[(String, AggOp)],
    reads: &Reads,
    buf: &mut Vec<Option<&'a Value>>,
    m: &'a Map,
) {
    buf.clear();
    buf.extend(reads.paths.iter().map(|p| p.get(m)));
    for ((a, (_, op)), w) in accs.iter_mut().zip(aggs).zip(&reads.which) {
        a.add(op, w.and_then(|i| buf[i]));
    }
}

/// What an aggregate needs before it can run over a collection whose items are not all
/// loaded: nothing (`Ok` of no paths: the count, an index or the field aggregates answer it),
/// the field aggregates of these top-level fields (`Ok(paths)`: each one scan, which the
/// repository makes over the snapshot's blocks without loading them), or every item (`Err`).
pub(crate) fn needs(
    q: &AggregateQuery,
    indexes: Option<&BTreeMap<String, Index>>,
    cache: &BTreeMap<String, FieldAgg>,
) -> std::result::Result<Vec<String>, ()> {
    if q.group_by.is_some() {
        return Err(());
    }
    if q.aggregates.iter().all(|(_, op)| *op == AggOp::Count(None)) && q.filter.is_none() {
        return Ok(Vec::new());
    }
    if indexes.and_then(|ix| index_fast_path(q, ix)).is_some() {
        return Ok(Vec::new());
    }
    if q.filter.is_some() {
        return Err(());
    }
    let mut missing: Vec<String> = Vec::new();
    for (_, op) in &q.aggregates {
        let Some(p) = op.path() else { continue };
        match (cache.get(p), op) {
            (None, _) if !p.contains('.') => {
                if !missing.iter().any(|m| m == p) {
                    missing.push(p.to_string());
                }
            }
            (None, _) => return Err(()),
            (Some(f), AggOp::Sum(_) | AggOp::Avg(_)) if f.nums.sum().is_none() => return Err(()),
            (Some(f), AggOp::Min(_)) if f.min.is_none() => return Err(()),
            (Some(f), AggOp::Max(_)) if f.max.is_none() => return Err(()),
            (Some(_), _) => {}
        }
    }
    if cache.len() + missing.len() > MAX_FIELD_AGGS {
        return Err(());
    }
    Ok(missing)
}

/// `cache`: the collection's field aggregates, used (and grown) when no index serves an
/// unfiltered, ungrouped aggregate.
pub(crate) fn aggregate<'a>(
    coll: Option<&'a Collection>,
    indexes: Option<&'a BTreeMap<String, Index>>,
    q: &AggregateQuery,
    cache: &mut BTreeMap<String, FieldAgg>,
) -> Result<J> {
    let empty_groups = || serde_json::json!({ "groups": [] });
    let Some(coll) = coll else {
        return Ok(match q.group_by {
            Some(_) => empty_groups(),
            None => J::Object(output(q, &vec![Acc::default(); q.aggregates.len()])),
        });
    };
    if q.group_by.is_none() {
        if q.filter.is_none() && q.aggregates.iter().all(|(_, op)| *op == AggOp::Count(None)) {
            let a = Acc {
                n: coll.count() as u64,
                ..Acc::default()
            };
            return Ok(J::Object(output(q, &vec![a; q.aggregates.len()])));
        }
        if let Some(accs) = indexes.and_then(|ix| index_fast_path(q, ix)) {
            return Ok(J::Object(output(q, &accs)));
        }
        if let Some(r) = from_field_aggs(coll, q, cache) {
            return Ok(r);
        }
    }
    let reads = Reads::new(q);
    let mut buf = Vec::with_capacity(reads.paths.len());
    let filter: Option<CFilter> = q.filter.as_ref().map(CFilter::new);
    let (choice, _) = choose(coll.count(), indexes, q.filter.as_ref(), &[], None);
    let mut feed =
        |accs: &mut [Acc<'a>], m: &'a Map| feed(accs, &q.aggregates, &reads, &mut buf, m);
    match &q.group_by {
        None => {
            let mut accs = vec![Acc::default(); q.aggregates.len()];
            for_each_match(&Items::loaded(coll), &choice, &filter, |_, m| {
                feed(&mut accs, m);
                Ok(true)
            })?;
            Ok(J::Object(output(q, &accs)))
        }
        Some(g) => {
            let gp = CPath::new(g);
            let mut groups: BTreeMap<GKey, Vec<Acc>> = BTreeMap::new();
            for_each_match(&Items::loaded(coll), &choice, &filter, |_, m| {
                let k = GKey(gp.get(m).filter(|v| !matches!(v, Value::Null)));
                let accs = groups
                    .entry(k)
                    .or_insert_with(|| vec![Acc::default(); q.aggregates.len()]);
                feed(accs, m);
                Ok(true)
            })?;
            let out: Vec<J> = groups
                .iter()
                .map(|(k, accs)| {
                    let mut o = serde_json::Map::new();
                    o.insert("key".into(), k.0.map_or(J::Null, to_tree));
                    o.extend(output(q, accs));
                    J::Object(o)
                })
                .collect();
            Ok(serde_json::json!({ "groups": out }))
        }
    }
}
