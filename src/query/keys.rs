//! `$id` in a query's `where`: a condition on the item's id, answered by looking the ids up (no
//! scan, no index; `by_id.rs` runs it). It is what lets one item be watched by a live query that
//! no write to another item of the collection touches (`ibexdb/react`'s `useItem`).

use crate::error::{Error, Result};
use serde_json::Value as J;

fn bad(reason: String) -> Error {
    Error::InvalidQuery { reason }
}

/// The reserved name of the id condition in a `where`.
pub const ID_FIELD: &str = "$id";

/// A condition on item ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySel {
    /// Exactly this id.
    Eq(String),
    /// One of these ids (sorted, deduplicated when compiled).
    In(Vec<String>),
    /// Ids starting with this prefix (bytewise).
    Prefix(String),
}

impl KeySel {
    /// Parse the operand of `$id`: a string (`eq`), or an object with exactly one of `eq`
    /// (string), `in` (array of strings), `prefix` (string).
    pub fn from_json(j: &J) -> Result<KeySel> {
        let string = |op: &str, j: &J| match j {
            J::String(s) => Ok(s.clone()),
            other => Err(bad(format!(
                "operator {op:?} on {ID_FIELD} needs a string operand, got {other}"
            ))),
        };
        match j {
            J::String(s) => Ok(KeySel::Eq(s.clone())),
            J::Object(o) if o.len() == 1 => {
                let (op, v) = o.iter().next().expect("one entry");
                match op.as_str() {
                    "eq" => Ok(KeySel::Eq(string(op, v)?)),
                    "prefix" => Ok(KeySel::Prefix(string(op, v)?)),
                    "in" => match v {
                        J::Array(a) => Ok(KeySel::In(
                            a.iter().map(|x| string(op, x)).collect::<Result<_>>()?,
                        )),
                        other => Err(bad(format!(
                            "operator \"in\" on {ID_FIELD} needs an array of ids, got {other}"
                        ))),
                    },
                    other => Err(bad(format!(
                        "unknown operator {other:?} on {ID_FIELD} (expected one of eq, in, prefix)"
                    ))),
                }
            }
            J::Object(o) => Err(bad(format!(
                "{ID_FIELD} needs exactly one operator (eq, in or prefix), got {}",
                o.len()
            ))),
            other => Err(bad(format!(
                "{ID_FIELD} needs an id string or {{\"eq\"|\"in\"|\"prefix\": ..}}, got {other}"
            ))),
        }
    }

    pub fn to_json(&self) -> J {
        match self {
            KeySel::Eq(s) => J::String(s.clone()),
            KeySel::In(v) => serde_json::json!({ "in": v }),
            KeySel::Prefix(p) => serde_json::json!({ "prefix": p }),
        }
    }

    /// The operator's name, for `explain`.
    pub fn op_name(&self) -> &'static str {
        match self {
            KeySel::Eq(_) => "eq",
            KeySel::In(_) => "in",
            KeySel::Prefix(_) => "prefix",
        }
    }

    /// Whether `id` satisfies it.
    #[inline]
    pub fn test(&self, id: &str) -> bool {
        match self {
            KeySel::Eq(k) => k == id,
            KeySel::In(ks) => ks.binary_search_by(|k| k.as_str().cmp(id)).is_ok(),
            KeySel::Prefix(p) => id.starts_with(p.as_str()),
        }
    }

    /// The same condition with `in`'s ids sorted and deduplicated (what [`KeySel::test`] needs).
    pub fn compiled(&self) -> KeySel {
        match self {
            KeySel::In(ks) => {
                let mut ks = ks.clone();
                ks.sort();
                ks.dedup();
                KeySel::In(ks)
            }
            k => k.clone(),
        }
    }

    /// The ids to look up, when it is a finite list (`eq`, `in`), in id order.
    pub fn ids(&self) -> Option<Vec<&str>> {
        match self {
            KeySel::Eq(k) => Some(vec![k.as_str()]),
            KeySel::In(ks) => {
                let mut v: Vec<&str> = ks.iter().map(String::as_str).collect();
                v.sort_unstable();
                v.dedup();
                Some(v)
            }
            KeySel::Prefix(_) => None,
        }
    }
}

/// Split `$id` off a query's `where` object: the id condition and the rest (`None` when the
/// rest is empty and `$id` was there, so the query has no other filter).
pub(crate) fn split_where(w: &J) -> Result<(Option<KeySel>, Option<J>)> {
    match w {
        J::Object(o) if o.contains_key(ID_FIELD) => {
            let key = KeySel::from_json(&o[ID_FIELD])?;
            let mut rest = o.clone();
            rest.remove(ID_FIELD);
            Ok((Some(key), (!rest.is_empty()).then_some(J::Object(rest))))
        }
        other => Ok((None, Some(other.clone()))),
    }
}
