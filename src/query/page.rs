//! Keyset paging: `after` in a query, and the opaque cursor a page returns.
//!
//! A cursor names a position in a query's order: the sort values of a row and its id (ids break
//! ties, so the order is total). `after: cursor` keeps only the rows strictly after it, so a
//! page never repeats or skips a row that stayed put while other items were inserted or
//! deleted (an `offset` shifts under them). The cursor is a base64url text of
//! `[1, fingerprint, [[value] | [] per sort key], id]`; the fingerprint is a hash of the
//! collection and the sort keys, so a cursor of another query's order is refused.

use super::ast::{bad, Query, SortKey};
use super::eval::{cmp_opt, CSort, Compiled};
use super::live::SEntry;
use super::plan::Plan;
use super::QueryResult;
use crate::error::Result;
use crate::value::{from_tree, to_tree, Map, Value};
use serde_json::{json, Value as J};
use sha2::{Digest, Sha256};
use std::cmp::Ordering;

/// A decoded cursor: the sort values of the last row of a page and its id.
#[derive(Debug, Clone, PartialEq)]
pub struct Cursor {
    /// One per sort key; `None` = missing.
    pub keys: Vec<Option<Value>>,
    pub id: String,
    /// The encoded form (what `to_json` prints back).
    pub text: String,
}

/// Longest cursor text accepted (a cursor holds sort values, which may be long strings).
const MAX_CURSOR: usize = 64 * 1024;

fn fingerprint(collection: &str, sort: &[SortKey]) -> String {
    let mut h = Sha256::new();
    h.update(collection.as_bytes());
    for k in sort {
        h.update([0u8, k.desc as u8]);
        h.update(k.field.as_bytes());
    }
    let d = h.finalize();
    d[..6].iter().map(|b| format!("{b:02x}")).collect()
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn b64_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let n = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..=c.len() {
            out.push(B64[(n >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

fn b64_decode(s: &str) -> Option<Vec<u8>> {
    let val = |c: u8| B64.iter().position(|&x| x == c).map(|p| p as u32);
    let bytes = s.as_bytes();
    if bytes.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for c in bytes.chunks(4) {
        let mut n = 0u32;
        for (i, &b) in c.iter().enumerate() {
            n |= val(b)? << (18 - 6 * i);
        }
        for i in 0..c.len() - 1 {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    Some(out)
}

impl Cursor {
    /// The cursor just after row `(id, m)` of a query on `collection` ordered by `sort`.
    pub fn after_row(collection: &str, sort: &[SortKey], keys: &[CSort], id: &str, m: &Map) -> Cursor {
        let vals: Vec<Option<Value>> = keys.iter().map(|k| k.path.get(m).cloned()).collect();
        let j = json!([
            1,
            fingerprint(collection, sort),
            vals.iter()
                .map(|v| match v {
                    Some(v) => json!([to_tree(v)]),
                    None => json!([]),
                })
                .collect::<Vec<_>>(),
            id
        ]);
        Cursor {
            keys: vals,
            id: id.to_string(),
            text: b64_encode(j.to_string().as_bytes()),
        }
    }

    /// Decode `after`'s operand for a query on `collection` ordered by `sort`.
    pub fn parse(j: &J, collection: &str, sort: &[SortKey]) -> Result<Cursor> {
        let J::String(text) = j else {
            return Err(bad(format!(
                "after must be a cursor string returned with a page, got {j}"
            )));
        };
        if text.len() > MAX_CURSOR {
            return Err(bad(format!(
                "after: a cursor of {} bytes is longer than the {MAX_CURSOR} bytes a cursor can be",
                text.len()
            )));
        }
        let malformed = |why: &str| bad(format!("after: malformed cursor ({why})"));
        let raw = b64_decode(text).ok_or_else(|| malformed("not base64url"))?;
        let parsed: J = serde_json::from_slice(&raw).map_err(|_| malformed("not a cursor"))?;
        let J::Array(parts) = parsed else {
            return Err(malformed("not a cursor"));
        };
        let [ver, fp, vals, id] = &parts[..] else {
            return Err(malformed("not a cursor"));
        };
        if ver != &json!(1) {
            return Err(malformed("unknown cursor version"));
        }
        if fp.as_str() != Some(fingerprint(collection, sort).as_str()) {
            return Err(bad(format!(
                "after: the cursor belongs to another query (a cursor is valid only for the \
                 collection {collection:?} and sort it was returned with)"
            )));
        }
        let (J::Array(vals), J::String(id)) = (vals, id) else {
            return Err(malformed("not a cursor"));
        };
        if vals.len() != sort.len() {
            return Err(malformed("wrong number of sort values"));
        }
        let keys = vals
            .iter()
            .map(|v| match v {
                J::Array(a) if a.is_empty() => Ok(None),
                J::Array(a) if a.len() == 1 => from_tree(&a[0])
                    .map(Some)
                    .map_err(|_| malformed("bad sort value")),
                _ => Err(malformed("bad sort value")),
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Cursor {
            keys,
            id: id.clone(),
            text: text.clone(),
        })
    }

    /// Whether the row `(id, m)` comes strictly after the cursor in the order of `keys`.
    #[inline]
    pub fn before(&self, keys: &[CSort], id: &str, m: &Map) -> bool {
        for (k, c) in keys.iter().zip(&self.keys) {
            let o = cmp_opt(k.path.get(m), c.as_ref());
            if o != Ordering::Equal {
                return (if k.desc { o.reverse() } else { o }) == Ordering::Greater;
            }
        }
        id > self.id.as_str()
    }

    /// The cursor's position as a live query's sort entry.
    pub fn entry(&self) -> SEntry {
        SEntry {
            first: self.keys.first().cloned().flatten(),
            rest: self.keys.iter().skip(1).cloned().collect(),
            id: self.id.clone(),
        }
    }
}

/// The page of `picked` (matches in order, `after` applied): `offset` rows skipped, at most
/// `limit` kept and projected; with a limit, the cursor after its last row.
pub(crate) fn page_result(q: &Query, c: &Compiled, picked: Vec<(&str, &Map)>, plan: Plan) -> QueryResult {
    let limit = q.limit.unwrap_or(usize::MAX);
    let page: Vec<(&str, &Map)> = picked.into_iter().skip(q.offset).take(limit).collect();
    let cursor = match (q.limit, page.last()) {
        (Some(_), Some((id, m))) => {
            Some(Cursor::after_row(&q.collection, &q.sort, &c.sort, id, m).text)
        }
        _ => None,
    };
    let rows = page
        .into_iter()
        .map(|(id, m)| (id.to_string(), c.project(m)))
        .collect();
    QueryResult { rows, plan, cursor }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64url_round_trips() {
        for n in 0..40 {
            let data: Vec<u8> = (0..n).map(|i| (i * 37 + n) as u8).collect();
            assert_eq!(b64_decode(&b64_encode(&data)).unwrap(), data, "{n}");
        }
        assert!(b64_decode("a").is_none());
        assert!(b64_decode("a=bc").is_none());
    }
}
