//! Keyset paging's cursor: `after` in a query, and the opaque cursor a page returns (`page.rs`
//! makes pages).
//!
//! A cursor names a position in a query's order: the sort values of a row and its id (ids break
//! ties, so the order is total). `after: cursor` keeps only the rows strictly after it, so a
//! page never repeats or skips a row that stayed put while other items were inserted or
//! deleted (an `offset` shifts under them). The cursor is a base64url text of
//! `[1, fingerprint, [[value] | [] per sort key], id]`; the fingerprint is a hash of the
//! collection and the sort keys, so a cursor of another query's order is refused.

use crate::error::{Error, Result};
use crate::value::{from_tree, to_tree, Value};
use serde_json::{json, Value as J};
use sha2::{Digest, Sha256};

fn bad(reason: String) -> Error {
    Error::InvalidQuery { reason }
}

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

/// The hash that ties a cursor to its query's collection and sort keys `(field, desc)`.
pub fn fingerprint<'a>(collection: &str, sort: impl Iterator<Item = (&'a str, bool)>) -> String {
    let mut h = Sha256::new();
    h.update(collection.as_bytes());
    for (field, desc) in sort {
        h.update([0u8, desc as u8]);
        h.update(field.as_bytes());
    }
    let d = h.finalize();
    d[..6].iter().map(|b| format!("{b:02x}")).collect()
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn b64_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for c in data.chunks(3) {
        let n = ((c[0] as u32) << 16)
            | ((*c.get(1).unwrap_or(&0) as u32) << 8)
            | (*c.get(2).unwrap_or(&0) as u32);
        for i in 0..=c.len() {
            out.push(B64[((n >> (18 - 6 * i)) & 63) as usize] as char);
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
    /// The cursor at the position `(vals, id)` of a query whose fingerprint is `fp`.
    pub fn at(fp: &str, vals: Vec<Option<Value>>, id: &str) -> Cursor {
        let j = json!([
            1,
            fp,
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

    /// Decode `after`'s operand for a query on `collection` with `sorts` sort keys and
    /// fingerprint `fp` ([`fingerprint`]).
    pub fn parse(j: &J, collection: &str, fp: &str, sorts: usize) -> Result<Cursor> {
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
        let [ver, parts_fp, vals, id] = &parts[..] else {
            return Err(malformed("not a cursor"));
        };
        if ver != &json!(1) {
            return Err(malformed("unknown cursor version"));
        }
        if parts_fp.as_str() != Some(fp) {
            return Err(bad(format!(
                "after: the cursor belongs to another query (a cursor is valid only for the \
                 collection {collection:?} and sort it was returned with)"
            )));
        }
        let (J::Array(vals), J::String(id)) = (vals, id) else {
            return Err(malformed("not a cursor"));
        };
        if vals.len() != sorts {
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
