//! The binary form of a transaction (`Txn::from_bytes`, docs/design.md §3.3) from outside the
//! crate: random items written the way a host writes them (fields and set elements in any
//! order) commit and read back as the same maps; random damage to valid bytes is an error,
//! never a panic, and never a partial commit.
//!
//! Seeded: a failure prints its seed; rerun one with `IBEX_SEED=<seed>`.

mod common;

use common::{for_seeds, signed, Rng};
use ibexdb::{Error, Map, MemStorage, Name, Repo, Txn, Value};

const T_NULL: u8 = 0;
const T_FALSE: u8 = 1;
const T_TRUE: u8 = 2;
const T_NUMBER: u8 = 3;
const T_STRING: u8 = 4;
const T_LIST: u8 = 5;
const T_MAP: u8 = 6;
const T_SET: u8 = 7;
const T_BYTES: u8 = 8;
const TXN_OP_PUT: u8 = 1;

/// A host's writer: `lp`, varints, and values with map fields and set elements shuffled.
struct HostWriter<'r> {
    out: Vec<u8>,
    rng: &'r mut Rng,
}

impl HostWriter<'_> {
    fn varint(&mut self, mut n: usize) {
        while n >= 0x80 {
            self.out.push((n as u8 & 0x7f) | 0x80);
            n >>= 7;
        }
        self.out.push(n as u8);
    }
    fn lp(&mut self, s: &str) {
        self.varint(s.len());
        self.out.extend_from_slice(s.as_bytes());
    }
    fn value(&mut self, v: &Value) {
        match v {
            Value::Null => self.out.push(T_NULL),
            Value::Bool(false) => self.out.push(T_FALSE),
            Value::Bool(true) => self.out.push(T_TRUE),
            Value::Number(n) => {
                self.out.push(T_NUMBER);
                self.out.extend_from_slice(&n.to_bits().to_le_bytes());
            }
            Value::String(s) => {
                self.out.push(T_STRING);
                self.lp(s);
            }
            Value::Bytes(b) => {
                self.out.push(T_BYTES);
                self.varint(b.len());
                self.out.extend_from_slice(b);
            }
            Value::List(l) => {
                self.out.push(T_LIST);
                self.varint(l.len());
                for x in l {
                    self.value(x);
                }
            }
            Value::Map(m) => self.map(m),
            Value::Set(s) => {
                let mut elems: Vec<&Name> = s.iter().collect();
                self.rng.shuffle(&mut elems);
                self.out.push(T_SET);
                self.varint(elems.len());
                for e in elems {
                    self.lp(e);
                }
            }
            Value::Far(_) => unreachable!("a test's values are in memory"),
        }
    }
    fn map(&mut self, m: &Map) {
        let mut fields: Vec<(&Name, &Value)> = m.iter().collect();
        self.rng.shuffle(&mut fields);
        self.out.push(T_MAP);
        self.varint(fields.len());
        for (k, v) in fields {
            self.lp(k);
            self.value(v);
        }
    }
}

fn random_string(rng: &mut Rng) -> String {
    const PARTS: [&str; 8] = ["a", "b", "é", "日本", "😀", "x y", "long-ish text ", ""];
    (0..rng.below(6))
        .map(|_| PARTS[rng.below(PARTS.len() as u64) as usize])
        .collect()
}

fn random_value(rng: &mut Rng, depth: u32) -> Value {
    match rng.below(if depth > 3 { 4 } else { 7 }) {
        0 => Value::Null,
        1 => Value::Bool(rng.chance(50)),
        2 => Value::Number((rng.below(2_000_001) as f64 - 1e6) / 8.0),
        3 if rng.chance(25) => Value::from(
            (0..rng.below(5))
                .map(|_| rng.below(256) as u8)
                .collect::<Vec<u8>>(),
        ),
        3 => Value::from(random_string(rng).as_str()),
        4 => Value::List(
            (0..rng.below(4))
                .map(|_| random_value(rng, depth + 1))
                .collect(),
        ),
        5 => Value::Map(random_map(rng, depth + 1)),
        _ => Value::set((0..rng.below(5)).map(|_| random_string(rng))),
    }
}

fn random_map(rng: &mut Rng, depth: u32) -> Map {
    (0..rng.below(6))
        .map(|i| {
            (
                format!("f{}", rng.below(8) + i * 8),
                random_value(rng, depth),
            )
        })
        .collect()
}

/// Random items under `items/<n>` and the bytes of one transaction putting them all.
fn random_txn(rng: &mut Rng, n: u64) -> (Vec<(String, Map)>, Vec<u8>) {
    let items: Vec<(String, Map)> = (0..n)
        .map(|i| (format!("items/{i}"), random_map(rng, 0)))
        .collect();
    let mut w = HostWriter {
        out: vec![ibexdb::TXN_BYTES_VERSION],
        rng,
    };
    for (k, m) in &items {
        w.out.push(TXN_OP_PUT);
        w.lp(k);
        w.map(m);
    }
    (items, w.out)
}

fn repo() -> Repo<MemStorage> {
    Repo::open(MemStorage::new(), None, signed(1)).unwrap()
}

#[test]
fn random_items_written_in_any_order_read_back_as_written() {
    for_seeds("txn_bytes round trip", 0..200, |seed| {
        let mut rng = Rng(seed);
        let n = 1 + rng.below(20);
        let (items, bytes) = random_txn(&mut rng, n);
        let mut r = repo();
        r.commit(Txn::from_bytes(&bytes).unwrap()).unwrap();
        for (k, m) in &items {
            assert_eq!(r.get(k).unwrap(), Some(m), "{k}");
        }
    });
}

#[test]
fn damaged_bytes_are_errors_never_panics_or_partial_commits() {
    for_seeds("txn_bytes damage", 0..2000, |seed| {
        let mut rng = Rng(seed);
        let n = 1 + rng.below(4);
        let (_, mut bytes) = random_txn(&mut rng, n);
        for _ in 0..1 + rng.below(3) {
            let at = rng.below(bytes.len() as u64) as usize;
            match rng.below(4) {
                0 => bytes[at] ^= 1 << rng.below(8),
                1 => bytes.truncate(at.max(1)),
                2 => bytes.insert(at, rng.below(256) as u8),
                _ => bytes[at] = [0x00, 0x7f, 0x80, 0xff][rng.below(4) as usize],
            }
        }
        let mut r = repo();
        let before = r.item_count();
        match Txn::from_bytes(&bytes) {
            Ok(txn) => {
                // What decodes is an ordinary transaction: it commits whole or not at all.
                let writes = txn.len();
                match r.commit(txn) {
                    Ok(_) => assert!(r.item_count() <= before + writes),
                    Err(_) => assert_eq!(r.item_count(), before, "a failed commit wrote"),
                }
            }
            Err(Error::Decode { what, .. }) => assert_eq!(what, "transaction"),
            Err(Error::InvalidValue { .. } | Error::InvalidKey { .. }) => {}
            Err(e) => panic!("unexpected error for damaged bytes: {e:?}"),
        }
    });
}
