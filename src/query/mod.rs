//! Declarative queries, sorted secondary indexes, aggregates and live queries.
//!
//! Queries are plain data: the page builds them as JSON and sends them to the worker, which
//! parses them with [`Query::from_json`] and runs them against the materialized
//! [`State`] with a [`QueryEngine`]. The engine keeps the declared indexes and the live queries
//! current as commits are applied (local or remote): it is the state's [`ChangeSink`].
//!
//! The query language (properties, `where` and its operators, order, `count`, aggregates,
//! indexes and the planner's choice, `explain`'s plan, live queries and their change sets) is
//! specified once, in `docs/query-language.md`; this module implements it:
//!
//! | file             | what                                                              |
//! |------------------|-------------------------------------------------------------------|
//! | `mod.rs`         | [`QueryEngine`]: declared indexes, running a query, top-k, counts |
//! | `ast.rs`         | the query's syntax tree and its JSON form                         |
//! | `eval.rs`        | compiled filters, sort comparators, projections                   |
//! | `entry.rs`       | an index's entries and their order, its numeric stats             |
//! | `index.rs`       | a sorted secondary index, kept current by the change feed         |
//! | `index_build.rs` | building an index, or restoring it from a snapshot                |
//! | `lazy.rs`        | an index's entries still in a snapshot's blocks, read on demand   |
//! | `restored.rs`    | the engine's side of lazily restored indexes (notes, reads)       |
//! | `plan.rs`        | the planner: index candidates, costs, the [`Plan`]                |
//! | `agg.rs`         | aggregates, and the running aggregates of unindexed paths         |
//! | `keys.rs`        | `$id` in a where: a condition on ids                              |
//! | `by_id.rs`       | running a query with `$id`: lookups, no scan                      |
//! | `cursor.rs`      | keyset paging's opaque cursor (`after`)                           |
//! | `page.rs`        | a page of rows: offset, limit, projection, the cursor after it    |
//! | `collect.rs`     | collecting matches in sort order (top-k heap or full sort)        |
//! | `text.rs`        | full-text search: folding tokenizer, the parsed search            |
//! | `text_index.rs`  | the `text` index: inverted index, BM25                            |
//! | `search.rs`      | the engine's text indexes: declared, built, kept, queried         |
//! | `live.rs`        | live queries: the match set in an order-statistics tree           |
//! | `tests*.rs`      | unit tests: JSON round trips, errors, indexed and scanned agree;  |
//! |                  | `$id` and paging (`tests_page.rs`), full-text (`tests_text.rs`)   |

mod agg;
mod ast;
mod by_id;
mod collect;
mod cursor;
mod entry;
mod eval;
mod index;
mod index_build;
mod keys;
mod lazy;
mod live;
mod page;
mod plan;
mod restored;
mod search;
mod text;
mod text_index;

pub use ast::{AggOp, AggregateQuery, Filter, Pred, Query, SortKey, OPERATORS};
pub use cursor::Cursor;
pub use keys::KeySel;
pub use live::{LiveChange, LiveId};
pub use plan::{Access, Plan, SortMethod};

use crate::error::{Error, Result};
use crate::state::{ChangeSink, Collection, State};
use crate::value::Map;
pub(crate) use agg::FieldAgg;
use collect::Collector;
use entry::{Entry, IKey};
use eval::{check_sortable, cmp_items, matches, set_sort_error, CFilter, Compiled};
pub(crate) use index::Index;
use live::LiveQuery;
use plan::{choose, Choice};
use std::cell::{OnceCell, RefCell};
use std::collections::BTreeMap;
use std::ops::Bound;

/// The answer to a [`Query`].
#[derive(Debug, Clone, PartialEq)]
pub struct QueryResult {
    /// (id, value), the value projected when the query has `select`.
    pub rows: Vec<(String, Map)>,
    pub plan: Plan,
    /// With a limit and at least one row: the cursor after the last row, for `after` (`page.rs`).
    pub cursor: Option<String>,
}

impl QueryResult {
    /// `{"rows": [{"id": .., "value": {..}}], "plan": {..}}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "rows": rows_to_json(&self.rows),
            "plan": self.plan.to_json(),
            "cursor": self.cursor,
        })
    }
}

/// `[{"id": .., "value": {..}}, ...]`.
pub fn rows_to_json(rows: &[(String, Map)]) -> serde_json::Value {
    serde_json::Value::Array(
        rows.iter()
            .map(|(id, m)| serde_json::json!({"id": id, "value": m}))
            .collect(),
    )
}

/// One collection's declared indexes. They are built from the state on first use (a query,
/// count, aggregate, live query or explain on the collection), not when declared: opening a
/// repository does not pay for indexes the session never uses, and the build reads the state as
/// it is then. Once built they are maintained by every applied commit.
#[derive(Debug, Default)]
struct Declared {
    /// Valid, distinct paths, in declaration order.
    paths: Vec<String>,
    built: OnceCell<BTreeMap<String, Index>>,
}

impl Declared {
    fn get(&self, coll: Option<&Collection>) -> &BTreeMap<String, Index> {
        self.built.get_or_init(|| {
            self.paths
                .iter()
                .map(|p| (p.clone(), Index::build(p, coll)))
                .collect()
        })
    }
}

/// Indexes per collection plus live queries. See the module docs.
#[derive(Debug, Default)]
pub struct QueryEngine {
    indexes: BTreeMap<String, Declared>,
    /// Per collection, the running aggregates of paths that unfiltered aggregates read without
    /// an index ([`FieldAgg`]): built on first use, maintained like indexes.
    field_aggs: RefCell<BTreeMap<String, BTreeMap<String, FieldAgg>>>,
    /// Per collection, the declared `text` indexes (`search.rs`).
    texts: BTreeMap<String, search::Texts>,
    lives: BTreeMap<LiveId, LiveQuery>,
    live_colls: BTreeMap<String, Vec<LiveId>>,
    next_live: u64,
}

/// The items a query reads. A collection opened from a snapshot may still hold items in the
/// snapshot's blocks (`cold.rs`): a read of one is noted instead of answered, and the query's
/// answer is then incomplete — the repository loads the noted items' blocks and runs it again
/// (`Repo::query`). After `budget` notes the query may stop early.
pub(crate) struct Items<'a> {
    coll: &'a Collection,
    cold: RefCell<Vec<&'a str>>,
    budget: usize,
}

impl<'a> Items<'a> {
    /// Every item of `coll`, which must be loaded whole (no item is ever noted).
    pub(crate) fn loaded(coll: &'a Collection) -> Items<'a> {
        Items::new(coll, usize::MAX)
    }

    fn new(coll: &'a Collection, budget: usize) -> Items<'a> {
        Items {
            coll,
            cold: RefCell::new(Vec::new()),
            budget,
        }
    }

    /// The visible item `id`; `None` when absent, or cold (then noted).
    fn get(&self, id: &'a str) -> Option<&'a Map> {
        match self.coll.lookup(id) {
            Some(m) => m,
            None => {
                self.cold.borrow_mut().push(id);
                None
            }
        }
    }

    /// Whether enough cold items were noted to stop.
    fn spent(&self) -> bool {
        self.cold.borrow().len() >= self.budget
    }
}

/// Call `f` for each item matching `filter` among the candidates of `choice`, until it returns
/// `Ok(false)` (or `items` has noted enough cold items). Index candidates come in index order,
/// a scan in id order (a scan needs the collection loaded whole).
pub(crate) fn for_each_match<'a>(
    items: &Items<'a>,
    choice: &Choice<'_, 'a>,
    filter: &Option<CFilter>,
    mut f: impl FnMut(&'a str, &'a Map) -> Result<bool>,
) -> Result<()> {
    match choice {
        Choice::Source(c) => {
            let mut res = Ok(());
            c.source.for_each(c.index, |e: &'a Entry| {
                let id = e.id();
                match items.get(id) {
                    Some(m) if c.covers || matches(filter, m) => match f(id, m) {
                        Ok(go) => go,
                        Err(err) => {
                            res = Err(err);
                            false
                        }
                    },
                    _ => !items.spent(),
                }
            });
            res
        }
        Choice::Ordered(ix) => {
            for e in ix.values.walk(false) {
                if let Some(m) = items.get(e.id()) {
                    if matches(filter, m) && !f(e.id(), m)? {
                        break;
                    }
                } else if items.spent() {
                    break;
                }
            }
            Ok(())
        }
        Choice::Scan => {
            for (id, m) in items.coll.iter() {
                if matches(filter, m) && !f(id, m)? {
                    break;
                }
            }
            Ok(())
        }
    }
}

/// An aggregate's answer over a collection that may not be loaded whole.
pub(crate) enum AggPartial {
    Done(serde_json::Value),
    /// Build the field aggregates of these top-level fields first (`FieldAgg::add_loaded`, and
    /// the snapshot's blocks scanned for the rest), install them, and ask again.
    Scan(Vec<String>),
    /// The answer needs the whole collection.
    NeedAll,
}

/// A query's answer over a collection that may not be loaded whole.
pub(crate) enum Partial {
    Done(QueryResult),
    /// The answer needs these cold items: load their blocks and run the query again.
    Need(Vec<String>),
    /// The answer needs the whole collection (a scan, or indexes still to build).
    NeedAll,
}

impl QueryEngine {
    pub fn new() -> Self {
        Self::default()
    }

    /// (Re)declare the indexed paths of a collection; invalid paths are ignored. When the
    /// collection's indexes were built already, those on paths declared before are kept and
    /// new ones are built now; otherwise all are built on first use (see [`Declared`]).
    pub fn set_indexes(&mut self, collection: &str, paths: &[String], state: &State) {
        let old = self.indexes.remove(collection).unwrap_or_default();
        let mut valid: Vec<String> = Vec::new();
        for p in paths {
            if ast::check_path(p, "index").is_ok() && !valid.contains(p) {
                valid.push(p.clone());
            }
        }
        if valid.is_empty() {
            return;
        }
        let built = OnceCell::new();
        if let Some(mut old) = old.built.into_inner() {
            let coll = state.collection(collection);
            let map = valid
                .iter()
                .map(|p| {
                    let ix = old.remove(p).unwrap_or_else(|| Index::build(p, coll));
                    (p.clone(), ix)
                })
                .collect();
            let _ = built.set(map);
        }
        self.indexes.insert(
            collection.to_string(),
            Declared {
                paths: valid,
                built,
            },
        );
    }

    #[cfg(any(test, feature = "testing"))]
    /// The indexed paths of a collection, in key order.
    pub fn indexed_paths(&self, collection: &str) -> Vec<String> {
        let mut p = self
            .indexes
            .get(collection)
            .map(|d| d.paths.clone())
            .unwrap_or_default();
        p.sort();
        p
    }

    #[cfg(any(test, feature = "testing"))]
    /// Build every declared index that is not built yet (they are otherwise built on first
    /// use), e.g. ahead of queries, in idle time.
    pub fn build_indexes(&self, state: &State) {
        for (c, d) in &self.indexes {
            d.get(state.collection(c));
        }
    }

    /// The declared index paths of `collection` while its indexes are not built (`None`
    /// otherwise, or with none declared).
    /// The top-level fields whose values the engine keeps or compares as changes come
    /// (docs/design.md §6.6): `None` for every field (a live query or running aggregates read
    /// any path of the changed items), else those of the declared indexes and text indexes.
    pub(crate) fn kept_fields(&self, collection: &str) -> Option<Vec<String>> {
        if self.live_colls.contains_key(collection)
            || self.field_aggs.borrow().contains_key(collection)
        {
            return None;
        }
        let declared = self.indexes.get(collection).map(|d| &d.paths[..]);
        let paths = declared
            .unwrap_or(&[])
            .iter()
            .chain(self.text_paths(collection));
        Some(paths.map(|p| ast::first_segment(p).to_string()).collect())
    }

    pub(crate) fn unbuilt_indexes(&self, collection: &str) -> Option<&[String]> {
        let d = self.indexes.get(collection)?;
        d.built.get().is_none().then_some(&d.paths[..])
    }

    /// Install `collection`'s indexes restored from a snapshot, when they are not built yet
    /// and `built` holds exactly the declared paths; whether it did.
    pub(crate) fn install_indexes(
        &mut self,
        collection: &str,
        built: BTreeMap<String, Index>,
    ) -> bool {
        let Some(d) = self.indexes.get(collection) else {
            return false;
        };
        let all = built.len() == d.paths.len() && d.paths.iter().all(|p| built.contains_key(p));
        all && d.built.get().is_none() && d.built.set(built).is_ok()
    }

    /// Every built index: (collection, path, index).
    pub(crate) fn built_indexes(&self) -> impl Iterator<Item = (&str, &str, &Index)> {
        self.indexes
            .iter()
            .filter_map(|(c, d)| d.built.get().map(|m| (c, m)))
            .flat_map(|(c, m)| m.iter().map(move |(p, ix)| (c.as_str(), p.as_str(), ix)))
    }

    /// Whether `collection`'s declared indexes have been built (they are on first use).
    pub fn indexes_built(&self, collection: &str) -> bool {
        self.indexes
            .get(collection)
            .is_some_and(|d| d.built.get().is_some())
    }

    /// The collection's indexes, built now if this is their first use.
    fn indexes_of(
        &self,
        collection: &str,
        coll: Option<&Collection>,
    ) -> Option<&BTreeMap<String, Index>> {
        Some(self.indexes.get(collection)?.get(coll))
    }

    fn plan_for<'q, 's>(&'s self, coll: &Collection, q: &'q Query) -> (Choice<'q, 's>, Plan) {
        let k = q.limit.map(|l| q.offset.saturating_add(l));
        let (choice, mut plan) = choose(
            coll.count(),
            self.indexes_of(&q.collection, Some(coll)),
            q.filter.as_ref(),
            &q.sort,
            k,
        );
        // `after` is checked on every candidate.
        plan.residual_filter |= q.after.is_some();
        (choice, plan)
    }

    fn empty_plan() -> Plan {
        Plan {
            access: Access::Empty,
            estimated_rows: 0,
            collection_rows: 0,
            residual_filter: false,
            sort: SortMethod::IdOrder,
        }
    }

    /// Run a query over a loaded state (the repository runs [`QueryEngine::run_partial`],
    /// which may meet items still in a snapshot's blocks).
    #[cfg(any(test, feature = "testing"))]
    pub fn run(&self, state: &State, q: &Query) -> Result<QueryResult> {
        match self.run_partial(state, q)? {
            Partial::Done(r) => Ok(r),
            Partial::Need(_) | Partial::NeedAll => Err(Error::InvalidQuery {
                reason: format!("collection {} is not loaded", q.collection),
            }),
        }
    }

    /// Run a query over a collection that may still have items in a snapshot's blocks: the
    /// answer, or which items it needs first. A scan needs the whole collection, and so do
    /// indexes not built yet (building reads every item); an index walk needs only the items
    /// of its candidates.
    pub(crate) fn run_partial(&self, state: &State, q: &Query) -> Result<Partial> {
        let c = Compiled::new(q)?;
        let Some(coll) = state.collection(&q.collection) else {
            return Ok(Partial::Done(QueryResult {
                rows: Vec::new(),
                plan: Self::empty_plan(),
                cursor: None,
            }));
        };
        if let Some(key) = &q.key {
            return by_id::run(coll, q, &c, key);
        }
        if let Some(p) = self.run_text(coll, q, &c)? {
            return Ok(p);
        }
        let cold = !coll.cold().is_empty();
        if cold && self.unbuilt_indexes(&q.collection).is_some() {
            return Ok(Partial::NeedAll);
        }
        let (choice, plan) = self.plan_for(coll, q);
        if cold && matches!(choice, Choice::Scan) {
            return Ok(Partial::NeedAll);
        }
        let k = q.limit.map(|l| q.offset.saturating_add(l));
        // An ordered walk stops once the window is full: it may stop noting cold items once
        // they alone could fill it. Other index plans collect every candidate.
        let budget = match (&choice, k) {
            (Choice::Ordered(_), Some(k)) => k.max(64),
            _ => usize::MAX,
        };
        let items = Items::new(coll, budget);
        let picked: Vec<(&str, &Map)> = match &choice {
            Choice::Ordered(ix) => self.walk_ordered(&items, ix, q, &c)?,
            Choice::Scan if c.sort.is_empty() => {
                // Id order already: stop once the window is full.
                let mut out = Vec::new();
                let want = k.unwrap_or(usize::MAX);
                for_each_match(&items, &choice, &c.filter, |id, m| {
                    if c.extra(id, m) {
                        out.push((id, m));
                    }
                    Ok(out.len() < want)
                })?;
                out
            }
            _ => {
                let mut col = Collector::new(&c.sort, k);
                for_each_match(&items, &choice, &c.filter, |id, m| {
                    if c.extra(id, m) {
                        check_sortable(&c.sort, id, m)?;
                        col.push(id, m);
                    }
                    Ok(true)
                })?;
                col.finish()
            }
        };
        let cold_ids = items.cold.into_inner();
        if !cold_ids.is_empty() {
            let ids = cold_ids.into_iter().map(str::to_string).collect();
            return Ok(Partial::Need(ids));
        }
        Ok(Partial::Done(page::page_result(q, &c, picked, plan)))
    }

    /// Walk the first sort key's index in order until offset + limit matches are collected
    /// (finishing the last group of equal keys, which is ordered by the other keys and id).
    fn walk_ordered<'a>(
        &'a self,
        items: &Items<'a>,
        ix: &'a Index,
        q: &Query,
        c: &Compiled,
    ) -> Result<Vec<(&'a str, &'a Map)>> {
        let indexes = self
            .indexes_of(&q.collection, Some(items.coll))
            .expect("an ordered walk uses an index of this collection");
        // Sets sort last in every index: a matching one makes the query invalid.
        for s in &c.sort {
            for e in indexes[&s.field].set_entries() {
                if let Some(m) = items.get(e.id()) {
                    if matches(&c.filter, m) {
                        return Err(set_sort_error(&s.field, e.id()));
                    }
                }
            }
        }
        let k = q.offset.saturating_add(q.limit.unwrap_or(usize::MAX));
        let rest = &c.sort[1..];
        let mut out: Vec<(&str, &Map)> = Vec::new();
        let mut group: Vec<(&str, &Map)> = Vec::new();
        let mut gkey: Option<&IKey> = None;
        // After a cursor, the walk starts at the cursor's first sort value (its group of equal
        // values is then filtered by `after`): a page deep into the order costs no more.
        let iter: Box<dyn Iterator<Item = &Entry> + '_> = match &c.after {
            Some(cur) => {
                let k = cur.keys.first().cloned().flatten();
                let b = Bound::Included(k.map_or(IKey::Missing, IKey::Val));
                if c.sort[0].desc {
                    Box::new(ix.values.range(&Bound::Unbounded, &b).rev())
                } else {
                    Box::new(ix.values.range(&b, &Bound::Unbounded))
                }
            }
            None => ix.values.walk(c.sort[0].desc),
        };
        let flush = |group: &mut Vec<(&'a str, &'a Map)>, out: &mut Vec<(&'a str, &'a Map)>| {
            if group.len() > 1 {
                group.sort_unstable_by(|a, b| cmp_items(rest, *a, *b));
            }
            out.append(group);
        };
        for e in iter {
            if gkey.is_some_and(|g| *g != e.key) {
                flush(&mut group, &mut out);
                if out.len() >= k {
                    break;
                }
            }
            gkey = Some(&e.key);
            let id = e.id();
            match items.get(id) {
                Some(m) if c.accept(id, m) => group.push((id, m)),
                Some(_) => {}
                None if items.spent() => break,
                None => {}
            }
        }
        flush(&mut group, &mut out);
        Ok(out)
    }

    /// The plan `run` would use.
    pub fn explain(&self, state: &State, q: &Query) -> Result<Plan> {
        q.validate()?;
        Ok(match state.collection(&q.collection) {
            None => Self::empty_plan(),
            Some(coll) => match &q.key {
                Some(key) => by_id::plan(coll, q, key),
                None => match self.explain_text(coll, q)? {
                    Some(p) => p,
                    None => self.plan_for(coll, q).1,
                },
            },
        })
    }

    /// Number of items matching `filter` (all items in O(1) without one). A filter that is
    /// exactly one index range is answered by counting index entries.
    pub fn count(&self, state: &State, collection: &str, filter: Option<&Filter>) -> Result<usize> {
        if let Some(f) = filter {
            f.validate()?;
        }
        let Some(coll) = state.collection(collection) else {
            return Ok(0);
        };
        let Some(f) = filter else {
            return Ok(coll.count());
        };
        let indexes = self.indexes_of(collection, Some(coll));
        if let Some(ixs) = indexes {
            if let Some(c) = plan::candidates(f, ixs).into_iter().find(|c| c.covers) {
                return Ok(c.source.count(c.index, usize::MAX));
            }
        }
        let (choice, _) = choose(coll.count(), indexes, Some(f), &[], None);
        let cf = Some(CFilter::new(f));
        let mut n = 0;
        for_each_match(&Items::loaded(coll), &choice, &cf, |_, _| {
            n += 1;
            Ok(true)
        })?;
        Ok(n)
    }

    /// `count` of a collection that may still have items in a snapshot's blocks: the answer
    /// when every item is loaded, or when `filter` is exactly one range of an index already
    /// built (restored from the snapshot), which counts entries and reads no item; `None` when
    /// the items are needed.
    pub(crate) fn count_partial(
        &self,
        state: &State,
        collection: &str,
        filter: &Filter,
    ) -> Result<Option<usize>> {
        filter.validate()?;
        let cold = state
            .collection(collection)
            .is_some_and(|c| !c.cold().is_empty());
        if !cold {
            return self.count(state, collection, Some(filter)).map(Some);
        }
        if !self.indexes_built(collection) {
            return Ok(None);
        }
        let Some(ixs) = self.indexes_of(collection, state.collection(collection)) else {
            return Ok(None);
        };
        let covering = plan::candidates(filter, ixs).into_iter().find(|c| c.covers);
        Ok(covering.map(|c| c.source.count(c.index, usize::MAX)))
    }

    /// Ids in key order.
    pub fn keys(&self, state: &State, collection: &str) -> Vec<String> {
        state
            .collection(collection)
            .map(|c| c.iter().map(|(id, _)| id.to_string()).collect())
            .unwrap_or_default()
    }

    /// An aggregate over a collection that may still have items in a snapshot's blocks: the
    /// answer, the field aggregates it needs first (`AggPartial::Scan`, see `agg::needs`), or
    /// every item.
    pub(crate) fn aggregate_partial(
        &self,
        state: &State,
        q: &AggregateQuery,
    ) -> Result<AggPartial> {
        q.validate()?;
        let cold = state
            .collection(&q.collection)
            .is_some_and(|c| !c.cold().is_empty());
        if !cold {
            return Ok(AggPartial::Done(self.aggregate(state, q)?));
        }
        if self.unbuilt_indexes(&q.collection).is_some() {
            return Ok(AggPartial::NeedAll);
        }
        let indexes = self.indexes_of(&q.collection, state.collection(&q.collection));
        let all = self.field_aggs.borrow();
        let empty = BTreeMap::new();
        let cache = all.get(&q.collection).unwrap_or(&empty);
        let needed = agg::needs(q, indexes, cache);
        drop(all);
        Ok(match needed {
            Ok(paths) if paths.is_empty() => AggPartial::Done(self.aggregate(state, q)?),
            Ok(paths) => AggPartial::Scan(paths),
            Err(()) => AggPartial::NeedAll,
        })
    }

    /// Install a field aggregate built by the repository over a partly loaded collection.
    pub(crate) fn install_field_agg(&self, collection: &str, f: FieldAgg) {
        let mut all = self.field_aggs.borrow_mut();
        let cache = all.entry(collection.to_string()).or_default();
        cache.insert(f.path().to_string(), f);
    }

    /// Aggregates: `{"name": value, ..}`, or `{"groups": [{"key": .., "name": ..}, ..]}`.
    pub fn aggregate(&self, state: &State, q: &AggregateQuery) -> Result<serde_json::Value> {
        q.validate()?;
        let coll = state.collection(&q.collection);
        let indexes = self.indexes_of(&q.collection, coll);
        let mut all = self.field_aggs.borrow_mut();
        let cache = all.entry(q.collection.clone()).or_default();
        let r = agg::aggregate(coll, indexes, q, cache);
        if cache.is_empty() {
            all.remove(&q.collection);
        }
        r
    }

    /// Start a live query; returns its id and initial rows (equal to `run(q).rows`).
    pub fn subscribe(&mut self, state: &State, q: Query) -> Result<(LiveId, Vec<(String, Map)>)> {
        let c = Compiled::new(&q)?;
        let mut found = Vec::new();
        if let (Some(coll), Some(key)) = (state.collection(&q.collection), &c.key) {
            // The repository loaded the listed ids' blocks (or the whole collection) first.
            let mut cold = Vec::new();
            by_id::for_each_selected(coll, key, &mut cold, |id, m| {
                if c.accept(id, m) {
                    check_sortable(&c.sort, id, m)?;
                    found.push((LiveQuery::entry(&c, id, m), c.project(m)));
                }
                Ok(true)
            })?;
            debug_assert!(cold.is_empty(), "a live query's ids are loaded first");
        } else if let Some(th) = match state.collection(&q.collection) {
            Some(coll) => self.text_hits(&q.collection, coll, q.filter.as_ref())?,
            None => None,
        } {
            // A `match` a text index serves: its matches, not a scan.
            let coll = state.collection(&q.collection).expect("found above");
            for (id, _) in &th.hits {
                if let Some(m) = coll.get(id) {
                    if matches(&th.residual, m) && c.extra(id, m) {
                        check_sortable(&c.sort, id, m)?;
                        found.push((LiveQuery::entry(&c, id, m), c.project(m)));
                    }
                }
            }
        } else if let Some(coll) = state.collection(&q.collection) {
            let (choice, _) = choose(
                coll.count(),
                self.indexes_of(&q.collection, Some(coll)),
                q.filter.as_ref(),
                &[],
                None,
            );
            for_each_match(&Items::loaded(coll), &choice, &c.filter, |id, m| {
                if c.extra(id, m) {
                    check_sortable(&c.sort, id, m)?;
                    found.push((LiveQuery::entry(&c, id, m), c.project(m)));
                }
                Ok(true)
            })?;
        }
        let id = LiveId(self.next_live);
        self.next_live += 1;
        let coll = q.collection.clone();
        let lq = LiveQuery::new(q, c, found);
        let rows = lq.rows();
        self.lives.insert(id, lq);
        self.live_colls.entry(coll).or_default().push(id);
        Ok((id, rows))
    }

    /// Stop a live query; false if it was not subscribed.
    pub fn unsubscribe(&mut self, id: LiveId) -> bool {
        let Some(lq) = self.lives.remove(&id) else {
            return false;
        };
        let coll = &lq.query.collection;
        if let Some(ids) = self.live_colls.get_mut(coll) {
            ids.retain(|x| *x != id);
            if ids.is_empty() {
                self.live_colls.remove(coll);
            }
        }
        true
    }

    #[cfg(any(test, feature = "testing"))]
    /// The current rows of a live query.
    pub fn live_rows(&self, id: LiveId) -> Option<Vec<(String, Map)>> {
        self.lives.get(&id).map(LiveQuery::rows)
    }

    /// Change sets accumulated since the last call (one per live query that changed), in
    /// subscription order. Changes from several commits, or several changes to one item,
    /// are merged.
    pub fn take_live_changes(&mut self) -> Vec<(LiveId, LiveChange)> {
        self.lives
            .iter_mut()
            .filter_map(|(id, lq)| lq.flush().map(|c| (*id, c)))
            .collect()
    }

    /// Rebuild every index (and every live query's match set) from `state` and compare with
    /// the maintained ones.
    pub fn verify_indexes(&self, state: &State) -> Result<()> {
        // Indexes not built yet hold nothing to compare: their first use builds them from the
        // state.
        for (c, ixs) in self
            .indexes
            .iter()
            .filter_map(|(c, d)| Some((c, d.built.get()?)))
        {
            for (path, ix) in ixs {
                let fresh = Index::build(path, state.collection(c));
                if let Some(d) = ix.diff(&fresh) {
                    return Err(Error::VerifyFailed {
                        reason: format!("index on {c}.{path} differs from the state: {d}"),
                    });
                }
            }
        }
        self.verify_texts(state)?;
        for (c, aggs) in self.field_aggs.borrow().iter() {
            let Some(coll) = state.collection(c) else {
                continue;
            };
            for (path, f) in aggs {
                if let Some(d) = f.diff(&FieldAgg::build(path, coll)) {
                    return Err(Error::VerifyFailed {
                        reason: format!(
                            "running aggregates of {c}.{path} differ from the state: {d}"
                        ),
                    });
                }
            }
        }
        for (id, lq) in &self.lives {
            let mut fresh = Vec::new();
            if let Some(coll) = state.collection(&lq.query.collection) {
                for (iid, m) in coll.iter() {
                    if lq.compiled.accept(iid, m) {
                        fresh.push((
                            LiveQuery::entry(&lq.compiled, iid, m),
                            lq.compiled.project(m),
                        ));
                    }
                }
            }
            fresh.sort_by(|a, b| lq.tree.cmp(&a.0, &b.0));
            let held = lq.tree.entries();
            let same = held.len() == fresh.len()
                && held
                    .iter()
                    .zip(&fresh)
                    .all(|(a, b)| *a.0 == b.0 && *a.1 == b.1);
            if !same {
                let first = held
                    .iter()
                    .zip(&fresh)
                    .position(|(a, b)| *a.0 != b.0 || *a.1 != b.1)
                    .unwrap_or(held.len().min(fresh.len()));
                return Err(Error::VerifyFailed {
                    reason: format!(
                        "live query {} on {:?} holds {} matches, the state has {}; first \
                         difference at position {first}",
                        id.0,
                        lq.query.collection,
                        held.len(),
                        fresh.len()
                    ),
                });
            }
        }
        Ok(())
    }
}

impl ChangeSink for QueryEngine {
    fn watches(&self, collection: &str) -> bool {
        self.indexes_built(collection)
            || self.texts_built(collection)
            || self.live_colls.contains_key(collection)
            || self.field_aggs.borrow().contains_key(collection)
    }

    fn changed(&mut self, collection: &str, id: &str, old: Option<&Map>, new: Option<&Map>) {
        if let Some(ixs) = self
            .indexes
            .get_mut(collection)
            .and_then(|d| d.built.get_mut())
        {
            for ix in ixs.values_mut() {
                ix.changed(id, old, new);
            }
        }
        self.texts_changed(collection, id, old, new);
        if let Some(aggs) = self.field_aggs.get_mut().get_mut(collection) {
            for f in aggs.values_mut() {
                f.changed(old, new);
            }
        }
        if let Some(ids) = self.live_colls.get(collection) {
            for lid in ids {
                if let Some(lq) = self.lives.get_mut(lid) {
                    lq.changed(id, old, new);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_page;
#[cfg(test)]
mod tests_text;
