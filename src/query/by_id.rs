//! Running a query with `$id` (`keys.rs`): the listed ids looked up, or the ids with a prefix
//! walked in order; the rest of the query (filter, `after`, sort, page) applied to those items.

use super::ast::Query;
use super::collect::Collector;
use super::eval::{check_sortable, Compiled};
use super::keys::KeySel;
use super::page::page_result;
use super::plan::{Access, Plan, SortMethod};
use super::Partial;
use crate::error::Result;
use crate::state::Collection;
use crate::value::Map;

/// The plan of a query with `$id`: no index, no scan of other ids.
pub(crate) fn plan(coll: &Collection, q: &Query, key: &KeySel) -> Plan {
    let k = q.limit.map(|l| q.offset.saturating_add(l));
    Plan {
        access: Access::Key { op: key.op_name() },
        estimated_rows: key.ids().map_or(coll.count(), |v| v.len()),
        collection_rows: coll.count(),
        residual_filter: q.filter.is_some() || q.after.is_some(),
        sort: match (q.sort.is_empty(), k) {
            (true, _) => SortMethod::IdOrder,
            (false, Some(k)) => SortMethod::TopK(k),
            (false, None) => SortMethod::Full,
        },
    }
}

/// Call `f` with each visible item `key` selects, in id order: the listed ids looked up, or
/// the ids with the prefix walked (the collection must then be loaded whole). A listed id whose
/// item is still in a snapshot's block is pushed to `cold` instead.
pub(crate) fn for_each_selected<'a>(
    coll: &'a Collection,
    key: &'a KeySel,
    cold: &mut Vec<String>,
    mut f: impl FnMut(&'a str, &'a Map) -> Result<bool>,
) -> Result<()> {
    match key.ids() {
        Some(ids) => {
            for id in ids {
                match coll.lookup(id) {
                    Some(Some(m)) => {
                        if !f(id, m)? {
                            break;
                        }
                    }
                    Some(None) => {}
                    None => cold.push(id.to_string()),
                }
            }
        }
        None => {
            let KeySel::Prefix(p) = key else {
                unreachable!("only a prefix lists no ids")
            };
            let p = p.as_str();
            for (id, m) in coll
                .iter()
                .skip_while(|(id, _)| *id < p)
                .take_while(|(id, _)| id.starts_with(p))
            {
                if !f(id, m)? {
                    break;
                }
            }
        }
    }
    Ok(())
}

/// Run a query with `$id` (see [`for_each_selected`]).
pub(crate) fn run(coll: &Collection, q: &Query, c: &Compiled, key: &KeySel) -> Result<Partial> {
    if matches!(key, KeySel::Prefix(_)) && !coll.cold().is_empty() {
        return Ok(Partial::NeedAll);
    }
    let k = q.limit.map(|l| q.offset.saturating_add(l));
    let mut col = Collector::new(&c.sort, k);
    let mut cold = Vec::new();
    let ckey = c.key.as_ref().expect("compiled with the query's key");
    for_each_selected(coll, ckey, &mut cold, |id, m| {
        if c.accept(id, m) {
            check_sortable(&c.sort, id, m)?;
            col.push(id, m);
        }
        Ok(true)
    })?;
    if !cold.is_empty() {
        return Ok(Partial::Need(cold));
    }
    Ok(Partial::Done(page_result(
        q,
        c,
        col.finish(),
        plan(coll, q, key),
    )))
}
