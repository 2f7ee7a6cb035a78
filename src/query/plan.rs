//! The planner: pick an index (or a scan) for a query, and describe the choice.

use super::ast::{Filter, Pred, SortKey};
use super::entry::{Entry, IKey};
use super::index::Index;
use crate::value::{Name, Value};
use serde_json::{json, Value as J};
use std::collections::BTreeMap;
use std::ops::Bound;

/// How the candidate items are found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// The collection does not exist: nothing to read.
    Empty,
    /// Every item, in id order.
    Scan,
    /// Index entries with keys in one range (`eq`, `lt`..`gte` on the path, intersected).
    IndexRange { path: String },
    /// Index entries for each value of an `in`.
    IndexIn { path: String },
    /// Index entries for strings with a prefix.
    IndexPrefix { path: String },
    /// Set-element entries for one element (`contains`).
    IndexContains { path: String },
    /// The whole index of the first sort key, walked in sort order until the window is full.
    IndexOrder { path: String, desc: bool },
    /// `$id`: the listed ids looked up (`eq`, `in`), or the ids with a prefix walked in order.
    Key { op: &'static str },
    /// A `text` index's matches for a `match` (`text.rs`).
    Text { path: String },
}

/// How results are put in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortMethod {
    /// Already in id order (scan without a sort).
    IdOrder,
    /// Already in sort order (index walk).
    Index,
    /// A bounded heap of `k` = offset + limit rows.
    TopK(usize),
    /// A full sort of the matches.
    Full,
    /// BM25 rank order (a `match` served by a text index, without `sort`).
    Rank,
}

/// Which path a query took. `Debug` for logs, [`Plan::to_json`] for `explain()` in JS.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub access: Access,
    /// Items the access path is expected to visit (an estimate for `IndexOrder`).
    pub estimated_rows: usize,
    /// Visible items in the collection.
    pub collection_rows: usize,
    /// Whether every candidate is re-checked against the filter (false when the index range
    /// is exactly the filter).
    pub residual_filter: bool,
    pub sort: SortMethod,
}

impl Plan {
    /// The index path used, if any.
    pub fn index(&self) -> Option<&str> {
        match &self.access {
            Access::IndexRange { path }
            | Access::IndexIn { path }
            | Access::IndexPrefix { path }
            | Access::IndexContains { path }
            | Access::IndexOrder { path, .. }
            | Access::Text { path } => Some(path),
            Access::Empty | Access::Scan | Access::Key { .. } => None,
        }
    }

    /// `{"access":"index","index":"count","op":"range","estimatedRows":..,"collectionRows":..,
    /// "residualFilter":..,"sort":"topk","k":100}`; `access` is `index`, `scan` or `empty`.
    pub fn to_json(&self) -> J {
        let (access, op) = match &self.access {
            Access::Empty => ("empty", None),
            Access::Scan => ("scan", None),
            Access::IndexRange { .. } => ("index", Some("range")),
            Access::IndexIn { .. } => ("index", Some("in")),
            Access::IndexPrefix { .. } => ("index", Some("prefix")),
            Access::IndexContains { .. } => ("index", Some("contains")),
            Access::IndexOrder { desc, .. } => {
                ("index", Some(if *desc { "order desc" } else { "order" }))
            }
            Access::Key { op } => ("key", Some(*op)),
            Access::Text { .. } => ("index", Some("match")),
        };
        let mut o = json!({
            "access": access,
            "estimatedRows": self.estimated_rows,
            "collectionRows": self.collection_rows,
            "residualFilter": self.residual_filter,
            "sort": match self.sort {
                SortMethod::IdOrder => "id",
                SortMethod::Index => "index",
                SortMethod::TopK(_) => "topk",
                SortMethod::Full => "full",
                SortMethod::Rank => "rank",
            },
        });
        if let Some(ix) = self.index() {
            o["index"] = J::String(ix.to_string());
        }
        if let Some(op) = op {
            o["op"] = J::String(op.to_string());
        }
        if let SortMethod::TopK(k) = self.sort {
            o["k"] = J::from(k as u64);
        }
        o
    }
}

/// A set of index entries that contains every match.
#[derive(Debug, Clone)]
pub(crate) enum Source<'q> {
    Range { lo: Bound<IKey>, hi: Bound<IKey> },
    In(Vec<IKey>),
    Prefix(&'q str),
    Contains(&'q str),
}

impl Source<'_> {
    /// Call `f` with each candidate id until it returns false.
    pub fn for_each<'i>(&self, ix: &'i Index, mut f: impl FnMut(&'i Entry) -> bool) {
        match self {
            Source::Range { lo, hi } => {
                for e in ix.values.range(lo, hi) {
                    if !f(e) {
                        return;
                    }
                }
            }
            Source::In(keys) => {
                for k in keys {
                    let b = Bound::Included(k.clone());
                    for e in ix.values.range(&b, &b) {
                        if !f(e) {
                            return;
                        }
                    }
                }
            }
            Source::Prefix(p) => {
                for e in ix.values.prefix(p) {
                    if !f(e) {
                        return;
                    }
                }
            }
            Source::Contains(el) => {
                let b = Bound::Included(IKey::Val(Value::String(Name::new(el))));
                for e in ix.elems.range(&b, &b) {
                    if !f(e) {
                        return;
                    }
                }
            }
        }
    }

    /// Number of entries, counting at most `cap` (a block of the snapshot wholly inside is
    /// counted without being read, `lazy.rs`).
    pub fn count(&self, ix: &Index, cap: usize) -> usize {
        match self {
            Source::Range { lo, hi } => ix.values.count_range(lo, hi, cap),
            Source::In(keys) => {
                let mut n = 0;
                for k in keys {
                    let b = Bound::Included(k.clone());
                    n += ix.values.count_range(&b, &b, cap - n);
                    if n >= cap {
                        break;
                    }
                }
                n
            }
            Source::Prefix(p) => ix.values.count_prefix(p, cap),
            Source::Contains(el) => {
                let b = Bound::Included(IKey::Val(Value::String(Name::new(el))));
                ix.elems.count_range(&b, &b, cap)
            }
        }
    }

    fn access(&self, path: &str) -> Access {
        let path = path.to_string();
        match self {
            Source::Range { .. } => Access::IndexRange { path },
            Source::In(_) => Access::IndexIn { path },
            Source::Prefix(_) => Access::IndexPrefix { path },
            Source::Contains(_) => Access::IndexContains { path },
        }
    }
}

/// The bounds of `v`'s type in the total order (range operators match only their type).
pub(crate) fn type_bounds(v: &Value) -> (Bound<IKey>, Bound<IKey>) {
    let k = |v: Value| IKey::Val(v);
    match v {
        Value::Number(_) => (
            Bound::Included(k(Value::Number(f64::NEG_INFINITY))),
            Bound::Included(k(Value::Number(f64::INFINITY))),
        ),
        Value::String(_) => (
            Bound::Included(k(Value::String(Name::default()))),
            Bound::Excluded(k(Value::Bytes(Default::default()))),
        ),
        Value::Bytes(_) => (
            Bound::Included(k(Value::Bytes(Default::default()))),
            Bound::Excluded(k(Value::List(Vec::new()))),
        ),
        Value::Bool(_) => (
            Bound::Included(k(Value::Bool(false))),
            Bound::Included(k(Value::Bool(true))),
        ),
        // Validation rejects other operand types for ranges; `eq` never asks.
        _ => (Bound::Unbounded, Bound::Unbounded),
    }
}

fn bound_key(b: &Bound<IKey>) -> Option<&IKey> {
    match b {
        Bound::Included(k) | Bound::Excluded(k) => Some(k),
        Bound::Unbounded => None,
    }
}

/// The tighter of two lower (`lower = true`) or upper bounds.
pub(crate) fn tighter(a: Bound<IKey>, b: Bound<IKey>, lower: bool) -> Bound<IKey> {
    match (bound_key(&a), bound_key(&b)) {
        (None, _) => b,
        (_, None) => a,
        (Some(x), Some(y)) => match x.cmp(y) {
            std::cmp::Ordering::Equal => {
                if matches!(a, Bound::Excluded(_)) {
                    a
                } else {
                    b
                }
            }
            o => {
                if (o == std::cmp::Ordering::Greater) == lower {
                    a
                } else {
                    b
                }
            }
        },
    }
}

/// The key range a range-like predicate selects, if it is one.
fn pred_range(p: &Pred) -> Option<(Bound<IKey>, Bound<IKey>)> {
    let k = |v: &Value| IKey::Val(v.clone());
    Some(match p {
        Pred::Eq(v) => (Bound::Included(k(v)), Bound::Included(k(v))),
        Pred::Lt(v) => (type_bounds(v).0, Bound::Excluded(k(v))),
        Pred::Lte(v) => (type_bounds(v).0, Bound::Included(k(v))),
        Pred::Gt(v) => (Bound::Excluded(k(v)), type_bounds(v).1),
        Pred::Gte(v) => (Bound::Included(k(v)), type_bounds(v).1),
        _ => return None,
    })
}

/// The top-level conjuncts of a filter (nested `and`s flattened).
pub(crate) fn conjuncts<'q>(f: &'q Filter, out: &mut Vec<&'q Filter>) {
    match f {
        Filter::And(fs) => fs.iter().for_each(|f| conjuncts(f, out)),
        f => out.push(f),
    }
}

/// A candidate source on one index, and whether it is exactly the whole filter.
pub(crate) struct Candidate<'q, 'i> {
    pub source: Source<'q>,
    pub index: &'i Index,
    pub covers: bool,
}

/// Every index-servable candidate source for `filter`.
pub(crate) fn candidates<'q, 'i>(
    filter: &'q Filter,
    indexes: &'i BTreeMap<String, Index>,
) -> Vec<Candidate<'q, 'i>> {
    let mut cs = Vec::new();
    conjuncts(filter, &mut cs);
    let total = cs.len();
    let mut ranges: BTreeMap<&str, (Bound<IKey>, Bound<IKey>, usize)> = BTreeMap::new();
    let mut out = Vec::new();
    for c in cs {
        let Filter::Field { path, pred } = c else {
            continue;
        };
        let Some(ix) = indexes.get(path) else {
            continue;
        };
        if let Some((lo, hi)) = pred_range(pred) {
            match ranges.remove(path.as_str()) {
                None => {
                    ranges.insert(path, (lo, hi, 1));
                }
                Some((l0, h0, n)) => {
                    ranges.insert(path, (tighter(l0, lo, true), tighter(h0, hi, false), n + 1));
                }
            }
            continue;
        }
        let source = match pred {
            Pred::In(vs) => {
                let mut keys: Vec<IKey> = vs.iter().map(|v| IKey::Val(v.clone())).collect();
                keys.sort();
                keys.dedup();
                Source::In(keys)
            }
            Pred::Prefix(p) => Source::Prefix(p),
            Pred::Contains(e) => Source::Contains(e),
            _ => continue,
        };
        out.push(Candidate {
            source,
            index: ix,
            covers: total == 1,
        });
    }
    for (path, (lo, hi, n)) in ranges {
        out.push(Candidate {
            source: Source::Range { lo, hi },
            index: &indexes[path],
            covers: n == total,
        });
    }
    out
}

/// What the planner decided.
pub(crate) enum Choice<'q, 'i> {
    Scan,
    Source(Candidate<'q, 'i>),
    Ordered(&'i Index),
}

fn isqrt(n: usize) -> usize {
    (n as f64).sqrt() as usize
}

/// Relative cost of visiting one item through an index (entry walk + item lookup by id)
/// against one step of a scan.
const LOOKUP_COST: usize = 4;

/// Choose an access path. `k` is offset + limit when a limit is given.
pub(crate) fn choose<'q, 'i>(
    n: usize,
    indexes: Option<&'i BTreeMap<String, Index>>,
    filter: Option<&'q Filter>,
    sort: &[SortKey],
    k: Option<usize>,
) -> (Choice<'q, 'i>, Plan) {
    let mut plan = Plan {
        access: Access::Scan,
        estimated_rows: n,
        collection_rows: n,
        residual_filter: filter.is_some(),
        sort: match (sort.is_empty(), k) {
            (true, _) => SortMethod::IdOrder,
            (false, Some(k)) => SortMethod::TopK(k),
            (false, None) => SortMethod::Full,
        },
    };
    let Some(indexes) = indexes else {
        return (Choice::Scan, plan);
    };
    let ordered: Option<&Index> = match (sort.first(), k) {
        (Some(first), Some(_)) if sort.iter().all(|s| indexes.contains_key(&s.field)) => {
            indexes.get(&first.field)
        }
        _ => None,
    };
    // When a walk in order (by index, or by id for a scan without sort) can stop after k
    // matches, a candidate set only pays off when smaller than about sqrt(k * n).
    let early_stop = ordered.is_some() || (sort.is_empty() && k.is_some());
    let cap = match k {
        Some(k) if early_stop => (2 * isqrt(k.saturating_mul(n)) + k).min(n / 2 + 1),
        _ => n / 2 + 1,
    };
    let mut best: Option<(Candidate, usize)> = None;
    if let Some(f) = filter {
        for c in candidates(f, indexes) {
            let limit = best.as_ref().map_or(cap, |b| b.1);
            let e = c.source.count(c.index, limit);
            if e < limit {
                best = Some((c, e));
            }
        }
    }
    let est_matches = best.as_ref().map_or(n, |b| b.1).max(1);
    let walk_cost =
        k.map(|k| (k as u128 * n as u128 / est_matches as u128).min(n as u128) as usize);
    let source_cost = best.as_ref().map(|b| b.1 * LOOKUP_COST);
    let ordered_cost = ordered.and(walk_cost).map(|w| w * LOOKUP_COST);
    let scan_cost = match walk_cost {
        Some(w) if sort.is_empty() => w,
        _ => n,
    };
    let min = [Some(scan_cost), source_cost, ordered_cost]
        .into_iter()
        .flatten()
        .min()
        .unwrap();
    if source_cost == Some(min) {
        let (c, e) = best.unwrap();
        plan.access = c.source.access(&c.index.path);
        plan.estimated_rows = e;
        plan.residual_filter = !c.covers;
        return (Choice::Source(c), plan);
    }
    if ordered_cost == Some(min) && ordered_cost.is_some() {
        let ix = ordered.unwrap();
        plan.access = Access::IndexOrder {
            path: ix.path.clone(),
            desc: sort[0].desc,
        };
        plan.estimated_rows = walk_cost.unwrap();
        plan.sort = SortMethod::Index;
        return (Choice::Ordered(ix), plan);
    }
    plan.estimated_rows = scan_cost;
    (Choice::Scan, plan)
}
