//! The binary form of a transaction that a host hands the engine (docs/design.md §3.3): what
//! the JS `TxnBuilder` writes (www/lib/codec.js), decoded in one pass into a [`Txn`].
//!
//! It exists for speed: a 100,000-item load as JSON text cost ~145 ms in Chromium before the
//! engine saw it (JSON.stringify, the UTF-8 copy, the serde parse), as bytes a fraction of
//! that. Values are read by [`Value::decode_host`]: the tags of the canonical value encoding
//! (§3.2) without its ordering rules, so a writer does not sort. Malformed bytes are a
//! `Decode` error naming the byte; keys, field names and values are then checked by [`Txn`]'s
//! own methods, as for any other writer.

use crate::codec::Reader;
use crate::error::Result;
use crate::txn::Txn;
use crate::value::{Map, Value};

/// The first byte: the format's version.
pub const TXN_BYTES_VERSION: u8 = 1;

// The op kinds of the transaction bytes (§3.3). The commit format has op codes of its own, with
// other numbers (`COMMIT_OP_*` in `commit/encode.rs`, §4.1).
const TXN_OP_PUT: u8 = 1;
const TXN_OP_UPDATE: u8 = 2;
const TXN_OP_DELETE: u8 = 3;
const TXN_OP_UNSET: u8 = 4;
const TXN_OP_SET_ADD: u8 = 5;
const TXN_OP_SET_REMOVE: u8 = 6;

impl Txn {
    /// Decode a transaction from its binary form (see the module docs).
    pub fn from_bytes(bytes: &[u8]) -> Result<Txn> {
        let mut r = Reader::new(bytes, "transaction");
        let version = r.u8()?;
        if version != TXN_BYTES_VERSION {
            return Err(r.err(format!("unknown transaction format version {version}")));
        }
        let mut txn = Txn::new();
        while !r.is_empty() {
            op(&mut r, &mut txn)?;
        }
        Ok(txn)
    }
}

/// Decode one op and add it to `txn`. Not inlined: a function called once per op is optimized
/// by V8 after its first few hundred calls, a loop inlined into one call never (src/hashing.rs).
#[inline(never)]
fn op(r: &mut Reader<'_>, txn: &mut Txn) -> Result<()> {
    let kind = r.u8()?;
    let key = r.str()?;
    match kind {
        TXN_OP_PUT => txn.put(key, map(r)?)?,
        TXN_OP_UPDATE => txn.update(key, map(r)?)?,
        TXN_OP_DELETE => txn.delete(key)?,
        TXN_OP_UNSET => txn.unset(key, r.str()?)?,
        TXN_OP_SET_ADD => {
            let field = r.str()?;
            txn.set_add(key, field, elements(r)?)?
        }
        TXN_OP_SET_REMOVE => {
            let field = r.str()?;
            txn.set_remove(key, field, elements(r)?)?
        }
        other => return Err(r.err(format!("unknown transaction op {other}"))),
    };
    Ok(())
}

/// An item or a set of fields: a value that must be a map.
fn map(r: &mut Reader<'_>) -> Result<Map> {
    match Value::decode_host(r)? {
        Value::Map(m) => Ok(m),
        other => Err(r.err(format!(
            "an item must be a map, got a {}",
            other.type_name()
        ))),
    }
}

/// The elements of a set edit: `varint n`, then `n × lp(element)`.
fn elements<'a>(r: &mut Reader<'a>) -> Result<Vec<&'a str>> {
    let n = r.count(1, usize::MAX)?;
    (0..n).map(|_| r.str()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Writer;
    use crate::error::Error;
    use crate::txn::{FieldWrite, Write};
    use crate::value::{
        MAX_DEPTH, MAX_ITEM_BYTES, T_BYTES, T_MAP, T_NULL, T_NUMBER, T_SET, T_STRING,
    };

    fn lp(w: &mut Writer, s: &str) {
        w.lp(s.as_bytes());
    }

    /// `put items/a {title: "x", count: 2, tags: {"b", "a", "b"}}`, fields out of order.
    fn put_bytes() -> Vec<u8> {
        let mut w = Writer::new();
        w.u8(TXN_BYTES_VERSION);
        w.u8(TXN_OP_PUT);
        lp(&mut w, "items/a");
        w.u8(T_MAP);
        w.varint(3);
        lp(&mut w, "title");
        w.u8(T_STRING);
        lp(&mut w, "x");
        lp(&mut w, "count");
        w.u8(T_NUMBER);
        w.u64(2f64.to_bits());
        lp(&mut w, "tags");
        w.u8(T_SET);
        w.varint(3);
        for e in ["b", "a", "b"] {
            lp(&mut w, e);
        }
        w.into_inner()
    }

    /// The JS writer (`www/lib/txn.js`) spells these numbers again: each of its constants
    /// must equal the one the decoder reads.
    #[test]
    fn the_js_writer_uses_the_same_numbers() {
        use crate::value::{T_FALSE, T_LIST, T_TRUE};
        let rust = [
            ("VERSION", TXN_BYTES_VERSION),
            ("TXN_OP_PUT", TXN_OP_PUT),
            ("TXN_OP_UPDATE", TXN_OP_UPDATE),
            ("TXN_OP_DELETE", TXN_OP_DELETE),
            ("TXN_OP_UNSET", TXN_OP_UNSET),
            ("TXN_OP_SET_ADD", TXN_OP_SET_ADD),
            ("TXN_OP_SET_REMOVE", TXN_OP_SET_REMOVE),
            ("T_NULL", T_NULL),
            ("T_FALSE", T_FALSE),
            ("T_TRUE", T_TRUE),
            ("T_NUMBER", T_NUMBER),
            ("T_STRING", T_STRING),
            ("T_LIST", T_LIST),
            ("T_MAP", T_MAP),
            ("T_SET", T_SET),
            ("T_BYTES", T_BYTES),
            ("MAX_DEPTH", MAX_DEPTH as u8),
        ];
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/www/lib/txn.js");
        let js = std::fs::read_to_string(path).unwrap();
        let mut found: Vec<(String, u8)> = js
            .lines()
            .filter_map(|l| {
                let (name, n) = l
                    .strip_prefix("const ")?
                    .strip_suffix(';')?
                    .split_once(" = ")?;
                Some((name.to_string(), n.parse().ok()?))
            })
            .filter(|(name, _)| rust.iter().any(|(r, _)| r == name) || name.starts_with("TXN_OP_"))
            .collect();
        found.sort();
        let mut want: Vec<(String, u8)> = rust.iter().map(|(n, v)| (n.to_string(), *v)).collect();
        want.sort();
        assert_eq!(
            found, want,
            "www/lib/txn.js against src/txn_bytes.rs and value/encode.rs"
        );
        // The page refuses bytes an item cannot hold before copying them anywhere.
        let codec = std::fs::read_to_string(path.replace("txn.js", "codec.js")).unwrap();
        assert_eq!(MAX_ITEM_BYTES, 16 << 20);
        assert!(codec.contains("export const MAX_ITEM_BYTES = 16 << 20;"));
    }

    #[test]
    fn decodes_bytes_values() {
        let mut w = Writer::new();
        w.u8(TXN_BYTES_VERSION);
        w.u8(TXN_OP_PUT);
        lp(&mut w, "files/a");
        w.u8(T_MAP);
        w.varint(2);
        lp(&mut w, "empty");
        w.u8(T_BYTES);
        w.varint(0);
        lp(&mut w, "data");
        w.u8(T_BYTES);
        w.lp(&[0, 0xff, 0x80]);
        let txn = Txn::from_bytes(&w.into_inner()).unwrap();
        let mut want = Txn::new();
        let item = Map::from([
            ("data", Value::from(&[0u8, 0xff, 0x80][..])),
            ("empty", Value::from(Vec::new())),
        ]);
        want.put("files/a", item).unwrap();
        assert_eq!(txn.writes, want.writes);
        // Cut inside the bytes: a decode error.
        let cut = [1, TXN_OP_PUT, 1, b'k', T_MAP, 1, 1, b'b', T_BYTES, 3, 1, 2];
        assert!(matches!(Txn::from_bytes(&cut), Err(Error::Decode { .. })));
    }

    #[test]
    fn decodes_a_put_sorting_fields_and_set_elements() {
        let txn = Txn::from_bytes(&put_bytes()).unwrap();
        let mut want = Txn::new();
        let item = Map::from([
            ("count", Value::from(2i64)),
            ("tags", Value::set(["a", "b"])),
            ("title", Value::from("x")),
        ]);
        want.put("items/a", item).unwrap();
        assert_eq!(txn.writes, want.writes);
    }

    #[test]
    fn decodes_every_op_kind() {
        let mut w = Writer::new();
        w.u8(TXN_BYTES_VERSION);
        for (op, key) in [(TXN_OP_DELETE, "items/d"), (TXN_OP_UNSET, "items/u")] {
            w.u8(op);
            lp(&mut w, key);
        }
        lp(&mut w, "title");
        w.u8(TXN_OP_SET_ADD);
        lp(&mut w, "items/s");
        lp(&mut w, "tags");
        w.varint(2);
        lp(&mut w, "y");
        lp(&mut w, "x");
        w.u8(TXN_OP_UPDATE);
        lp(&mut w, "items/p");
        w.u8(T_MAP);
        w.varint(1);
        lp(&mut w, "n");
        w.u8(T_NUMBER);
        w.u64((-0f64).to_bits());
        let txn = Txn::from_bytes(&w.into_inner()).unwrap();
        let mut want = Txn::new();
        want.delete("items/d").unwrap();
        want.unset("items/u", "title").unwrap();
        want.set_add("items/s", "tags", ["x", "y"]).unwrap();
        want.update("items/p", Map::from([("n", Value::from(0i64))]))
            .unwrap();
        assert_eq!(txn.writes, want.writes);
        let Write::Patch { fields, .. } = &txn.writes["items"][&crate::item::ItemId::new("p")]
        else {
            panic!("an update is a patch");
        };
        let FieldWrite::Assign(Value::Number(n)) = fields["n"] else {
            panic!("assigns a number");
        };
        assert!(n.is_sign_positive(), "-0 is stored as 0");
    }

    #[test]
    fn malformed_bytes_are_decode_errors() {
        let good = put_bytes();
        let mut cases: Vec<(Vec<u8>, &str)> = vec![
            (vec![], "need 1 bytes"),
            (vec![2], "unknown transaction format version 2"),
            (vec![1, 9, 1, b'k'], "unknown transaction op 9"),
            (vec![1, TXN_OP_PUT, 7, b'i'], "exceeds the remaining input"),
            (
                vec![1, TXN_OP_PUT, 1, b'k', T_STRING, 1, b'x'],
                "an item must be a map",
            ),
            (vec![1, TXN_OP_PUT, 1, b'k', 42], "unknown value tag 42"),
            (vec![1, TXN_OP_PUT, 1, 0xff, T_MAP, 0], "invalid UTF-8"),
        ];
        // Cut anywhere after the version byte (alone, an empty transaction): a decode error
        // (which one depends on where), never a shorter put.
        for cut in 2..good.len() {
            cases.push((good[..cut].to_vec(), ""));
        }
        let mut nan = vec![1, TXN_OP_PUT, 1, b'k', T_MAP, 1, 1, b'n', T_NUMBER];
        nan.extend(f64::NAN.to_bits().to_le_bytes());
        cases.push((nan, "not finite"));
        let mut deep = vec![1, TXN_OP_PUT, 1, b'k'];
        for _ in 0..=MAX_DEPTH + 1 {
            deep.extend([T_MAP, 1, 1, b'a']);
        }
        deep.push(T_NULL);
        cases.push((deep, "nested too deeply"));
        for (bytes, want) in cases {
            match Txn::from_bytes(&bytes) {
                Err(Error::Decode { what, reason }) => {
                    assert_eq!(what, "transaction");
                    assert!(reason.contains(want), "{bytes:?}: {reason}");
                }
                other => panic!("{bytes:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn bad_keys_and_field_names_are_the_txn_errors() {
        let mut w = Writer::new();
        w.u8(TXN_BYTES_VERSION);
        w.u8(TXN_OP_PUT);
        lp(&mut w, "items/a");
        w.u8(T_MAP);
        w.varint(1);
        lp(&mut w, "a.b");
        w.u8(T_NULL);
        assert!(matches!(
            Txn::from_bytes(&w.into_inner()),
            Err(Error::InvalidValue { .. })
        ));
        let mut w = Writer::new();
        w.u8(TXN_BYTES_VERSION);
        w.u8(TXN_OP_DELETE);
        lp(&mut w, "no-collection");
        assert!(Txn::from_bytes(&w.into_inner()).is_err());
    }
}
