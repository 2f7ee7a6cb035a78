//! The reference evaluator: interprets the JSON query directly, by brute force, for the
//! properties to compare the engine against.

use crate::{COLL, INDEXED};
use ibexdb::testing::State;
use ibexdb::{Error, Map, Value};
use serde_json::{json, Value as J};
use std::cmp::Ordering;

pub fn lookup<'a>(m: &'a Map, path: &str) -> Option<&'a Value> {
    let mut parts = path.split('.');
    let mut v = m.get(parts.next().unwrap())?;
    for p in parts {
        match v {
            Value::Map(inner) => v = inner.get(p)?,
            _ => return None,
        }
    }
    Some(v)
}

pub fn same_type(a: &Value, b: &Value) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

pub fn ref_op(op: &str, operand: &J, v: Option<&Value>) -> bool {
    let x = || serde_json::from_value::<Value>(operand.clone()).unwrap();
    let eq = |v: Option<&Value>, x: &Value| v.is_some_and(|v| v.total_cmp(x) == Ordering::Equal);
    let s = || operand.as_str().unwrap().to_string();
    match op {
        "eq" => eq(v, &x()),
        "ne" => !eq(v, &x()),
        "lt" | "lte" | "gt" | "gte" => {
            let x = x();
            let Some(v) = v.filter(|v| same_type(v, &x)) else {
                return false;
            };
            let o = v.total_cmp(&x);
            match op {
                "lt" => o == Ordering::Less,
                "lte" => o != Ordering::Greater,
                "gt" => o == Ordering::Greater,
                _ => o != Ordering::Less,
            }
        }
        "in" => operand
            .as_array()
            .unwrap()
            .iter()
            .any(|o| eq(v, &serde_json::from_value::<Value>(o.clone()).unwrap())),
        "contains" => match v {
            Some(Value::Set(set)) => set.contains(&s()),
            Some(Value::List(l)) => l.contains(&Value::from(s())),
            _ => false,
        },
        "prefix" => matches!(v, Some(Value::String(t)) if t.starts_with(&s())),
        "includes" => matches!(v, Some(Value::String(t)) if t.contains(&s())),
        _ => panic!("reference: unknown op {op}"),
    }
}

pub fn ref_match(w: &J, m: &Map) -> bool {
    w.as_object()
        .unwrap()
        .iter()
        .all(|(k, v)| match k.as_str() {
            "and" => v.as_array().unwrap().iter().all(|w| ref_match(w, m)),
            "or" => v.as_array().unwrap().iter().any(|w| ref_match(w, m)),
            "not" => !ref_match(v, m),
            path => {
                let val = lookup(m, path);
                match v {
                    J::Object(ops) if ops.get("$set").is_none() => {
                        ops.iter().all(|(op, operand)| ref_op(op, operand, val))
                    }
                    lit => ref_op("eq", lit, val),
                }
            }
        })
}

pub fn ref_cmp_opt(a: Option<&Value>, b: Option<&Value>) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, _) => Ordering::Less,
        (_, None) => Ordering::Greater,
        (Some(a), Some(b)) => a.total_cmp(b),
    }
}

pub fn ref_project(m: &Map, select: Option<&Vec<J>>) -> Map {
    let Some(sel) = select else { return m.clone() };
    let mut out = Map::new();
    for p in sel {
        let p = p.as_str().unwrap();
        if let Some(v) = lookup(m, p) {
            let parts: Vec<&str> = p.split('.').collect();
            let mut cur = &mut out;
            for part in &parts[..parts.len() - 1] {
                let e = cur
                    .entry((*part).into())
                    .or_insert_with(|| Value::Map(Map::new()));
                let Value::Map(inner) = e else { unreachable!() };
                cur = inner;
            }
            cur.insert(parts[parts.len() - 1].into(), v.clone());
        }
    }
    out
}

/// Rows, or Err(()) when the query must fail (a matching item holds a set at a sort path).
pub fn reference(state: &State, q: &J) -> Result<Vec<(String, Map)>, ()> {
    let Some(c) = state.collection(q["collection"].as_str().unwrap()) else {
        return Ok(vec![]);
    };
    let mut hits: Vec<(&str, &Map)> = c
        .iter()
        .filter(|(_, m)| q.get("where").is_none_or(|w| ref_match(w, m)))
        .collect();
    let sort: Vec<(String, bool)> = q
        .get("sort")
        .and_then(J::as_array)
        .map(|a| {
            a.iter()
                .map(|k| {
                    (
                        k["field"].as_str().unwrap().to_string(),
                        k["desc"].as_bool().unwrap_or(false),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    for (_, m) in &hits {
        if sort
            .iter()
            .any(|(f, _)| matches!(lookup(m, f), Some(Value::Set(_))))
        {
            return Err(());
        }
    }
    hits.sort_by(|a, b| {
        for (f, desc) in &sort {
            let o = ref_cmp_opt(lookup(a.1, f), lookup(b.1, f));
            if o != Ordering::Equal {
                return if *desc { o.reverse() } else { o };
            }
        }
        a.0.cmp(b.0)
    });
    let offset = q.get("offset").and_then(J::as_u64).unwrap_or(0) as usize;
    let limit = q
        .get("limit")
        .and_then(J::as_u64)
        .map_or(usize::MAX, |l| l as usize);
    let select = q.get("select").and_then(J::as_array);
    Ok(hits
        .into_iter()
        .skip(offset)
        .take(limit)
        .map(|(id, m)| (id.to_string(), ref_project(m, select)))
        .collect())
}

pub fn ref_count(state: &State, w: Option<&J>) -> usize {
    state.collection(COLL).map_or(0, |c| {
        c.iter()
            .filter(|(_, m)| w.is_none_or(|w| ref_match(w, m)))
            .count()
    })
}

pub fn indexed_paths() -> Vec<String> {
    INDEXED.iter().map(|s| s.to_string()).collect()
}

pub fn outcome(r: ibexdb::Result<ibexdb::QueryResult>) -> Result<Vec<(String, Map)>, ()> {
    match r {
        Ok(r) => Ok(r.rows),
        Err(Error::InvalidQuery { reason }) => {
            assert!(reason.contains("set"), "unexpected query error: {reason}");
            Err(())
        }
        Err(e) => panic!("unexpected error {e:?}"),
    }
}

pub fn ref_aggregate(state: &State, w: Option<&J>, path: &str) -> J {
    let mut n = 0u64;
    let mut c = 0u64;
    let mut sum = 0.0;
    let mut nums = 0u64;
    let mut lo: Option<&Value> = None;
    let mut hi: Option<&Value> = None;
    if let Some(coll) = state.collection(COLL) {
        for (_, m) in coll
            .iter()
            .filter(|(_, m)| w.is_none_or(|w| ref_match(w, m)))
        {
            n += 1;
            let v = lookup(m, path).filter(|v| **v != Value::Null);
            if let Some(v) = v {
                c += 1;
                if let Value::Number(x) = v {
                    sum += x;
                    nums += 1;
                }
                if lo.is_none_or(|l| v.total_cmp(l) == Ordering::Less) {
                    lo = Some(v);
                }
                if hi.is_none_or(|h| v.total_cmp(h) == Ordering::Greater) {
                    hi = Some(v);
                }
            }
        }
    }
    json!({"n": n, "c": c, "s": json!(Value::from(sum)),
           "lo": lo.map_or(J::Null, |v| json!(v)), "hi": hi.map_or(J::Null, |v| json!(v)),
           "m": if nums == 0 { J::Null } else { json!(Value::from(sum / nums as f64)) }})
}
