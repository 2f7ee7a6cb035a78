//! Random data, commits and queries (JSON, as the page would send them), from a seeded RNG.

use crate::{COLL, PATHS};
use ibexdb::testing::{ChangeSink, State};
use ibexdb::Identity;
use ibexdb::{Change, Commit, CommitId, FieldOp, Op};
use ibexdb::{Map, Value};
use rand::rngs::StdRng;
use rand::Rng;
use serde_json::{json, Value as J};
use std::collections::{BTreeMap, BTreeSet};

pub const STRS: [&str; 9] = ["", "a", "ab", "abc", "b", "ba", "x7", "7", "Ab"];
pub const ELEMS: [&str; 5] = ["a", "b", "c", "x", "ab"];
/// Bytes values: byte-wise order, a prefix first, bytes that are not UTF-8.
pub const BYTES: [&[u8]; 6] = [b"", b"\0", b"\0\x01", b"\x01", b"\xff", b"\0\xff"];

pub fn rnd_scalar(r: &mut StdRng) -> Value {
    match r.random_range(0..10) {
        0 => Value::Null,
        1 => Value::Bool(r.random_bool(0.5)),
        2..=5 => Value::from([-1.0, 0.0, 1.0, 2.0, 2.5, 3.0, 10.0][r.random_range(0..7)]),
        6 => Value::from(BYTES[r.random_range(0..BYTES.len())]),
        _ => Value::from(STRS[r.random_range(0..STRS.len())]),
    }
}

pub fn rnd_set(r: &mut StdRng) -> Value {
    let n = r.random_range(0..4);
    Value::set((0..n).map(|_| ELEMS[r.random_range(0..ELEMS.len())]))
}

pub fn rnd_value(r: &mut StdRng, depth: u32) -> Value {
    match r.random_range(0..12) {
        0 if depth < 2 => Value::List(
            (0..r.random_range(0..3))
                .map(|_| rnd_value(r, depth + 1))
                .collect(),
        ),
        1 if depth < 2 => {
            let mut m = Map::new();
            for k in ["x", "y"] {
                if r.random_bool(0.7) {
                    m.insert(k.into(), rnd_value(r, depth + 1));
                }
            }
            Value::Map(m)
        }
        2 => rnd_set(r),
        _ => rnd_scalar(r),
    }
}

/// Field values by field, with the types each field mostly holds.
pub fn rnd_field(r: &mut StdRng, field: &str) -> Value {
    let mixed = r.random_bool(0.15);
    match field {
        "a" if !mixed => {
            Value::from(r.random_range(-3..8) as f64 / if r.random_bool(0.2) { 2.0 } else { 1.0 })
        }
        "b" if !mixed => Value::from(STRS[r.random_range(0..STRS.len())]),
        "s" if !mixed => rnd_set(r),
        "s" => Value::List(
            (0..r.random_range(0..3))
                .map(|_| Value::from(ELEMS[r.random_range(0..ELEMS.len())]))
                .collect(),
        ),
        "n" if !mixed => {
            let mut m = Map::new();
            if r.random_bool(0.8) {
                m.insert("x".into(), Value::from(r.random_range(0..4) as i64));
            }
            if r.random_bool(0.5) {
                m.insert("y".into(), rnd_scalar(r));
            }
            Value::Map(m)
        }
        _ => rnd_value(r, 0),
    }
}

pub fn rnd_item(r: &mut StdRng) -> Map {
    let mut m = Map::new();
    for f in ["a", "b", "s", "n", "m"] {
        if r.random_bool(0.8) {
            m.insert(f.into(), rnd_field(r, f));
        }
    }
    m
}

pub fn author() -> ibexdb::PublicKey {
    Identity::from_entropy(&[1; 48]).public()
}

/// Apply one commit of `changes` (distinct ids).
pub fn commit(state: &mut State, sink: &mut dyn ChangeSink, hlc: u64, changes: Vec<(String, Op)>) {
    let c = Commit {
        trusted: true,
        author: author(),
        hlc,
        parents: vec![],
        changes: changes
            .into_iter()
            .map(|(id, op)| Change {
                collection: COLL.into(),
                id,
                op,
            })
            .collect(),
    };
    let id = CommitId::of(&c.encode());
    state.apply(&c, &id, hlc as u32, sink);
}

/// A random op for item `id`: puts, deletes, field assigns, unsets, set adds and removes.
pub fn rnd_op(r: &mut StdRng, state: &State, id: &str) -> Op {
    let exists = state.get(COLL, id).is_some();
    match r.random_range(0..10) {
        0..=2 => Op::Put(rnd_item(r)),
        3 if exists => Op::Delete,
        _ if !exists => Op::Put(rnd_item(r)),
        _ => {
            let mut p = BTreeMap::new();
            for _ in 0..r.random_range(1..3) {
                let f = ["a", "b", "s", "n", "m"][r.random_range(0..5)];
                let fop = match r.random_range(0..6) {
                    0 => FieldOp::Unset,
                    1 | 2 if f == "s" => {
                        let add = (0..r.random_range(1..3))
                            .map(|_| ELEMS[r.random_range(0..ELEMS.len())].to_string())
                            .collect();
                        FieldOp::SetEdit {
                            add,
                            remove: BTreeMap::new(),
                        }
                    }
                    3 if f == "s" => {
                        // Remove an element with the dots this replica has observed.
                        let meta = state.item(COLL, id).unwrap().expanded_meta(state.stamps());
                        let remove = meta
                            .get("s")
                            .and_then(|fm| fm.dots.clone())
                            .and_then(|d| d.into_iter().next())
                            .map(|(e, ds)| (e.to_string(), ds))
                            .into_iter()
                            .collect();
                        FieldOp::SetEdit {
                            add: BTreeSet::new(),
                            remove,
                        }
                    }
                    _ => FieldOp::Assign(rnd_field(r, f)),
                };
                p.insert(f.to_string(), fop);
            }
            Op::Patch(p)
        }
    }
}

pub fn rnd_commit(r: &mut StdRng, state: &State, pool: usize) -> Vec<(String, Op)> {
    let mut ids = BTreeSet::new();
    for _ in 0..r.random_range(1..5) {
        ids.insert(format!("k{:02}", r.random_range(0..pool)));
    }
    ids.into_iter()
        .map(|id| {
            let op = rnd_op(r, state, &id);
            (id, op)
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Random queries (JSON, as the page would send them)

pub fn rnd_operand_for(r: &mut StdRng, path: &str) -> Value {
    match r.random_range(0..4) {
        0 => rnd_value(r, 1),
        _ => match path {
            "s" => Value::from(ELEMS[r.random_range(0..ELEMS.len())]),
            "n" => rnd_field(r, "n"),
            "n.x" => Value::from(r.random_range(0..4) as i64),
            p => rnd_field(r, p),
        },
    }
}

pub fn rnd_range_operand(r: &mut StdRng, path: &str) -> J {
    match (path, r.random_range(0..6)) {
        (_, 0) => json!(STRS[r.random_range(0..STRS.len())]),
        (_, 1) => json!(r.random_bool(0.5)),
        (_, 5) => json!(Value::from(BYTES[r.random_range(0..BYTES.len())])),
        ("b", _) => json!(STRS[r.random_range(0..STRS.len())]),
        _ => json!(r.random_range(-3..8) as f64 / 2.0),
    }
}

pub fn rnd_cond(r: &mut StdRng, path: &str) -> (String, J) {
    let s = |r: &mut StdRng| {
        json!(ELEMS
            .iter()
            .chain(STRS.iter())
            .nth(r.random_range(0..14))
            .unwrap())
    };
    match r.random_range(0..11) {
        0 => ("eq".into(), json!(rnd_operand_for(r, path))),
        1 => ("ne".into(), json!(rnd_operand_for(r, path))),
        2 => ("lt".into(), rnd_range_operand(r, path)),
        3 => ("lte".into(), rnd_range_operand(r, path)),
        4 => ("gt".into(), rnd_range_operand(r, path)),
        5 => ("gte".into(), rnd_range_operand(r, path)),
        6 => (
            "in".into(),
            J::Array(
                (0..r.random_range(0..4))
                    .map(|_| json!(rnd_operand_for(r, path)))
                    .collect(),
            ),
        ),
        7 => ("contains".into(), s(r)),
        8 => ("prefix".into(), s(r)),
        9 => ("includes".into(), s(r)),
        _ => ("=".into(), json!(rnd_operand_for(r, path))), // literal shorthand
    }
}

pub fn rnd_where(r: &mut StdRng, depth: u32) -> J {
    let mut o = serde_json::Map::new();
    for _ in 0..r.random_range(1..3) {
        match r.random_range(0..8) {
            0 if depth < 2 => {
                let subs: Vec<J> = (0..r.random_range(0..3))
                    .map(|_| rnd_where(r, depth + 1))
                    .collect();
                o.insert("or".into(), J::Array(subs));
            }
            1 if depth < 2 => {
                let subs: Vec<J> = (0..r.random_range(1..3))
                    .map(|_| rnd_where(r, depth + 1))
                    .collect();
                o.insert("and".into(), J::Array(subs));
            }
            2 if depth < 2 => {
                o.insert("not".into(), rnd_where(r, depth + 1));
            }
            _ => {
                let path = PATHS[r.random_range(0..PATHS.len())];
                let mut ops = serde_json::Map::new();
                let mut literal = None;
                for _ in 0..r.random_range(1..3) {
                    let (op, v) = rnd_cond(r, path);
                    if op == "=" {
                        // `{path: literal}` cannot hold an object literal (read as operators).
                        if !v.is_object() || v.get("$set").is_some() {
                            literal = Some(v);
                        }
                    } else {
                        ops.insert(op, v);
                    }
                }
                match literal {
                    Some(l) if ops.is_empty() => o.insert(path.into(), l),
                    _ if ops.is_empty() => o.insert(path.into(), json!({"ne": 99})),
                    _ => o.insert(path.into(), J::Object(ops)),
                };
            }
        }
    }
    J::Object(o)
}

pub fn rnd_query(r: &mut StdRng, allow_set_sort: bool) -> J {
    let mut q = serde_json::Map::new();
    q.insert("collection".into(), json!(COLL));
    if r.random_bool(0.8) {
        q.insert("where".into(), rnd_where(r, 0));
    }
    if r.random_bool(0.7) {
        let keys: Vec<J> = (0..r.random_range(1..3))
            .map(|_| {
                let paths: &[&str] = if allow_set_sort {
                    &PATHS
                } else {
                    &["a", "b", "n.x", "n.y"]
                };
                json!({"field": paths[r.random_range(0..paths.len())], "desc": r.random_bool(0.5)})
            })
            .collect();
        q.insert("sort".into(), J::Array(keys));
    }
    if r.random_bool(0.6) {
        q.insert("limit".into(), json!(r.random_range(0..8)));
    }
    if r.random_bool(0.4) {
        q.insert("offset".into(), json!(r.random_range(0..5)));
    }
    if r.random_bool(0.3) {
        let sel: Vec<&str> = PATHS
            .iter()
            .copied()
            .filter(|_| r.random_bool(0.4))
            .collect();
        q.insert("select".into(), json!(sel));
    }
    J::Object(q)
}
