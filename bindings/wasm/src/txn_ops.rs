//! The JSON form of a transaction sent by the page, parsed in one pass:
//!
//! ```json
//! [["put", "items/1", {"title": "a"}],
//!  ["update", "items/2", {"count": 3}],
//!  ["delete", "items/3"],
//!  ["unset", "items/2", "title"],
//!  ["setAdd", "items/2", "tags", ["x", "y"]],
//!  ["setRemove", "items/2", "tags", ["z"]]]
//! ```

use crate::json::bad_json;
use ibexdb::Value;
use ibexdb::{Error, Txn};
use serde::de::{self, DeserializeSeed, Deserializer, SeqAccess, Visitor};
use std::fmt;

/// One write of a transaction.
pub enum TxnOp {
    Put(String, Value),
    Update(String, Value),
    Delete(String),
    Unset(String, String),
    SetAdd(String, String, Vec<String>),
    SetRemove(String, String, Vec<String>),
}

struct OpVisitor;

fn need<'de, A: SeqAccess<'de>, T: serde::Deserialize<'de>>(
    seq: &mut A,
    what: &str,
) -> Result<T, A::Error> {
    seq.next_element::<T>()?
        .ok_or_else(|| de::Error::custom(format!("transaction op is missing its {what}")))
}

impl<'de> Visitor<'de> for OpVisitor {
    type Value = TxnOp;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a transaction op [kind, key, ...]")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<TxnOp, A::Error> {
        let kind: String = need(&mut seq, "kind")?;
        let key: String = need(&mut seq, "key")?;
        let value = |seq: &mut A| -> Result<Value, A::Error> {
            seq.next_element::<Value>()?
                .ok_or_else(|| de::Error::custom("transaction op is missing its value"))
        };
        let op = match kind.as_str() {
            "put" => TxnOp::Put(key, value(&mut seq)?),
            "update" => TxnOp::Update(key, value(&mut seq)?),
            "delete" => TxnOp::Delete(key),
            "unset" => TxnOp::Unset(key, need(&mut seq, "field")?),
            "setAdd" => TxnOp::SetAdd(key, need(&mut seq, "field")?, need(&mut seq, "elements")?),
            "setRemove" => {
                TxnOp::SetRemove(key, need(&mut seq, "field")?, need(&mut seq, "elements")?)
            }
            other => {
                return Err(de::Error::custom(format!(
                    "unknown transaction op {other:?}"
                )))
            }
        };
        if seq.next_element::<de::IgnoredAny>()?.is_some() {
            return Err(de::Error::custom("transaction op has too many elements"));
        }
        Ok(op)
    }
}

struct OpsVisitor;

impl<'de> Visitor<'de> for OpsVisitor {
    type Value = Vec<TxnOp>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of transaction ops")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<TxnOp>, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(65536));
        while let Some(op) = seq.next_element_seed(OpSeed)? {
            out.push(op);
        }
        Ok(out)
    }
}

struct OpSeed;

impl<'de> DeserializeSeed<'de> for OpSeed {
    type Value = TxnOp;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<TxnOp, D::Error> {
        d.deserialize_seq(OpVisitor)
    }
}

/// Parse the ops of a transaction.
pub fn parse(text: &str) -> Result<Vec<TxnOp>, Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let ops = de.deserialize_seq(OpsVisitor).map_err(|e| bad_json(&e))?;
    de.end().map_err(|e| bad_json(&e))?;
    Ok(ops)
}

fn object(key: &str, v: Value) -> Result<ibexdb::Map, Error> {
    match v {
        Value::Map(m) => Ok(m),
        other => Err(Error::InvalidValue {
            path: key.to_string(),
            reason: format!("an item must be an object, got a {}", other.type_name()),
        }),
    }
}

/// Build a core transaction from parsed ops.
pub fn build(ops: Vec<TxnOp>) -> Result<Txn, Error> {
    let mut txn = Txn::new();
    for op in ops {
        match op {
            TxnOp::Put(k, v) => {
                let m = object(&k, v)?;
                txn.put(&k, m)?;
            }
            TxnOp::Update(k, v) => {
                let m = object(&k, v)?;
                txn.update(&k, m)?;
            }
            TxnOp::Delete(k) => {
                txn.delete(&k)?;
            }
            TxnOp::Unset(k, f) => {
                txn.unset(&k, &f)?;
            }
            TxnOp::SetAdd(k, f, e) => {
                txn.set_add(&k, &f, e)?;
            }
            TxnOp::SetRemove(k, f, e) => {
                txn.set_remove(&k, &f, e)?;
            }
        }
    }
    Ok(txn)
}
