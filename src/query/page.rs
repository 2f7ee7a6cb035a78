//! A query's page: the matches in order cut by `offset` and `limit`, projected, with the cursor
//! after its last row (keyset paging, `cursor.rs`).

use super::ast::Query;
use super::cursor::{fingerprint, Cursor};
use super::eval::Compiled;
use super::plan::Plan;
use super::QueryResult;
use crate::value::Map;

/// The page of `picked` (matches in order, `after` applied): `offset` rows skipped, at most
/// `limit` kept and projected; with a limit, the cursor after its last row.
pub(crate) fn page_result(
    q: &Query,
    c: &Compiled,
    picked: Vec<(&str, &Map)>,
    plan: Plan,
) -> QueryResult {
    let limit = q.limit.unwrap_or(usize::MAX);
    let page: Vec<(&str, &Map)> = picked.into_iter().skip(q.offset).take(limit).collect();
    let cursor = match (q.limit, page.last()) {
        (Some(_), Some((id, m))) => {
            let fp = fingerprint(
                &q.collection,
                q.sort.iter().map(|k| (k.field.as_str(), k.desc)),
            );
            let vals = c.sort.iter().map(|k| k.path.get(m).cloned()).collect();
            Some(Cursor::at(&fp, vals, id).text)
        }
        _ => None,
    };
    let rows = page
        .into_iter()
        .map(|(id, m)| (id.to_string(), c.project(m)))
        .collect();
    QueryResult { rows, plan, cursor }
}
