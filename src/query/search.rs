//! The engine's side of `text` indexes (`text.rs`): declaring them, building them on first use,
//! keeping them current, and running a query whose `where` has a `match` on a text-indexed path
//! (the matches found in the index, ranked by BM25 unless the query sorts).

use super::ast::{Filter, Pred, Query};
use super::collect::Collector;
use super::eval::{check_sortable, matches, CFilter, Compiled};
use super::page::page_result;
use super::plan::{conjuncts, Access, Plan, SortMethod};
use super::text::Search;
use super::text_index::TextIndex;
use super::{Items, Partial, QueryEngine};
use crate::error::{Error, Result};
use crate::state::{Collection, State};
use crate::value::Map;
use std::cell::OnceCell;
use std::collections::BTreeMap;

/// One collection's declared text indexes, built on first use like the sorted ones.
#[derive(Debug, Default)]
pub(crate) struct Texts {
    paths: Vec<String>,
    built: OnceCell<BTreeMap<String, TextIndex>>,
}

impl Texts {
    fn get(&self, coll: Option<&Collection>) -> &BTreeMap<String, TextIndex> {
        self.built.get_or_init(|| {
            self.paths
                .iter()
                .map(|p| (p.clone(), TextIndex::build(p, coll)))
                .collect()
        })
    }
}

/// What a text index found for a query: matches with their scores (index order), and the rest
/// of the filter to check on each.
pub(crate) struct TextHits<'s> {
    pub path: &'s str,
    pub hits: Vec<(&'s str, f32)>,
    pub residual: Option<CFilter>,
}

/// The `match` conjunct of `filter` on a path of `paths`, and the other conjuncts.
fn split_match<'q>(
    filter: &'q Filter,
    paths: &[String],
) -> Option<(&'q str, &'q str, Vec<Filter>)> {
    let mut cs = Vec::new();
    conjuncts(filter, &mut cs);
    let i = cs.iter().position(
        |f| matches!(f, Filter::Field { path, pred: Pred::Match(_) } if paths.contains(path)),
    )?;
    let Filter::Field {
        path,
        pred: Pred::Match(s),
    } = cs[i]
    else {
        unreachable!("found above")
    };
    let rest = cs
        .iter()
        .enumerate()
        .filter(|(j, _)| *j != i)
        .map(|(_, f)| (*f).clone())
        .collect();
    Some((path.as_str(), s.as_str(), rest))
}

impl QueryEngine {
    /// (Re)declare the text-indexed paths of a collection (invalid paths ignored). They are
    /// built on first use, from the state as it is then.
    pub fn set_text_indexes(&mut self, collection: &str, paths: &[String]) {
        let mut valid: Vec<String> = Vec::new();
        for p in paths {
            if super::ast::check_path(p, "index").is_ok() && !valid.contains(p) {
                valid.push(p.clone());
            }
        }
        if valid.is_empty() {
            self.texts.remove(collection);
            return;
        }
        let old = self.texts.remove(collection).unwrap_or_default();
        let keep = old.paths == valid;
        self.texts.insert(
            collection.to_string(),
            if keep {
                old
            } else {
                Texts {
                    paths: valid,
                    built: OnceCell::new(),
                }
            },
        );
    }

    /// Whether `collection` has text indexes declared and not built (building reads every
    /// item: the collection must be loaded first).
    pub(crate) fn texts_unbuilt(&self, collection: &str) -> bool {
        self.texts
            .get(collection)
            .is_some_and(|t| t.built.get().is_none())
    }

    /// The paths of `collection`'s declared text indexes.
    pub(crate) fn text_paths(&self, collection: &str) -> &[String] {
        self.texts.get(collection).map_or(&[], |t| &t.paths[..])
    }

    pub(crate) fn texts_built(&self, collection: &str) -> bool {
        self.texts
            .get(collection)
            .is_some_and(|t| t.built.get().is_some())
    }

    /// The matches of the query's `match` on a text-indexed path, when it has one; `None` when
    /// no text index serves it. The collection must be loaded when the index is not built.
    pub(crate) fn text_hits<'s>(
        &'s self,
        collection: &str,
        coll: &Collection,
        filter: Option<&Filter>,
    ) -> Result<Option<TextHits<'s>>> {
        let (Some(t), Some(f)) = (self.texts.get(collection), filter) else {
            return Ok(None);
        };
        let Some((path, s, rest)) = split_match(f, &t.paths) else {
            return Ok(None);
        };
        if t.built.get().is_none() && !coll.cold().is_empty() {
            // A build now would miss the items still in the snapshot's blocks: the caller
            // loads the collection first (`run_text`, `Repo::explain`, `Repo::subscribe`).
            debug_assert!(false, "a text index built over a collection not loaded");
            return Ok(None);
        }
        let ix = &t.get(Some(coll))[path];
        let search = Search::parse(path, s)?;
        let hits = ix
            .search(&search)
            .into_iter()
            .map(|(o, score)| (ix.id(o), score))
            .collect();
        Ok(Some(TextHits {
            path: &ix.path,
            hits,
            residual: (!rest.is_empty()).then(|| CFilter::new(&Filter::And(rest))),
        }))
    }

    /// Run `q` through a text index, if one serves it (`None` otherwise).
    pub(crate) fn run_text(
        &self,
        coll: &Collection,
        q: &Query,
        c: &Compiled,
    ) -> Result<Option<Partial>> {
        let Some(t) = self.texts.get(&q.collection) else {
            return Ok(None);
        };
        let Some(f) = &q.filter else {
            return Ok(None);
        };
        if split_match(f, &t.paths).is_none() {
            return Ok(None);
        }
        if t.built.get().is_none() && !coll.cold().is_empty() {
            return Ok(Some(Partial::NeedAll));
        }
        if q.sort.is_empty() && q.after.is_some() {
            return Err(super::ast::bad(
                "after needs a sort with \"match\": rank order has no stable cursor (sort by a \
                 field to page)",
            ));
        }
        let th = self
            .text_hits(&q.collection, coll, Some(f))?
            .expect("a match on a text-indexed path");
        let items = Items::new(coll, usize::MAX);
        let mut picked: Vec<(&str, &Map, f32)> = Vec::new();
        for &(id, score) in &th.hits {
            if let Some(m) = items.get(id) {
                if matches(&th.residual, m) && c.extra(id, m) {
                    picked.push((id, m, score));
                }
            }
        }
        let cold = items.cold.into_inner();
        if !cold.is_empty() {
            return Ok(Some(Partial::Need(
                cold.into_iter().map(str::to_string).collect(),
            )));
        }
        let k = q.limit.map(|l| q.offset.saturating_add(l));
        let plan = text_plan(coll, q, &th);
        let ordered: Vec<(&str, &Map)> = if q.sort.is_empty() {
            // Rank order: score descending, then id.
            let by_rank = |a: &(&str, &Map, f32), b: &(&str, &Map, f32)| {
                b.2.total_cmp(&a.2).then(a.0.cmp(b.0))
            };
            if let Some(k) = k.filter(|k| *k < picked.len()) {
                if k > 0 {
                    picked.select_nth_unstable_by(k - 1, by_rank);
                }
                picked.truncate(k);
            }
            picked.sort_unstable_by(by_rank);
            picked.into_iter().map(|(id, m, _)| (id, m)).collect()
        } else {
            let mut col = Collector::new(&c.sort, k);
            for (id, m, _) in picked {
                check_sortable(&c.sort, id, m)?;
                col.push(id, m);
            }
            col.finish()
        };
        let mut res = page_result(q, c, ordered, plan);
        if q.sort.is_empty() {
            res.cursor = None;
        }
        Ok(Some(Partial::Done(res)))
    }

    /// The plan of a query a text index serves.
    pub(crate) fn explain_text(&self, coll: &Collection, q: &Query) -> Result<Option<Plan>> {
        Ok(self
            .text_hits(&q.collection, coll, q.filter.as_ref())?
            .map(|th| text_plan(coll, q, &th)))
    }

    /// Apply one item's change to the collection's text indexes, if built.
    pub(crate) fn texts_changed(
        &mut self,
        collection: &str,
        id: &str,
        old: Option<&Map>,
        new: Option<&Map>,
    ) {
        if let Some(ixs) = self
            .texts
            .get_mut(collection)
            .and_then(|t| t.built.get_mut())
        {
            for ix in ixs.values_mut() {
                ix.changed(id, old, new);
            }
        }
    }

    /// Compare every built text index with one rebuilt from `state`.
    pub(crate) fn verify_texts(&self, state: &State) -> Result<()> {
        for (c, t) in &self.texts {
            let Some(ixs) = t.built.get() else {
                continue;
            };
            for (path, ix) in ixs {
                if let Some(d) = ix.diff(&TextIndex::build(path, state.collection(c))) {
                    return Err(Error::VerifyFailed {
                        reason: format!("text index on {c}.{path} differs from the state: {d}"),
                    });
                }
            }
        }
        Ok(())
    }
}

fn text_plan(coll: &Collection, q: &Query, th: &TextHits<'_>) -> Plan {
    let k = q.limit.map(|l| q.offset.saturating_add(l));
    Plan {
        access: Access::Text {
            path: th.path.to_string(),
        },
        estimated_rows: th.hits.len(),
        collection_rows: coll.count(),
        residual_filter: th.residual.is_some() || q.after.is_some(),
        sort: match (q.sort.is_empty(), k) {
            (true, _) => SortMethod::Rank,
            (false, Some(k)) => SortMethod::TopK(k),
            (false, None) => SortMethod::Full,
        },
    }
}
