//! The canonical binary encoding of values (docs/design.md §3.2): one encoding per value, so
//! equal values have equal bytes.

use super::{validate_field_name, Map, Name, Set, Value, MAX_DEPTH};
use crate::codec::{Reader, Writer};
use crate::error::Result;

pub(crate) const T_NULL: u8 = 0;
pub(crate) const T_FALSE: u8 = 1;
pub(crate) const T_TRUE: u8 = 2;
pub(crate) const T_NUMBER: u8 = 3;
pub(crate) const T_STRING: u8 = 4;
pub(crate) const T_LIST: u8 = 5;
pub(crate) const T_MAP: u8 = 6;
pub(crate) const T_SET: u8 = 7;
/// Added after the others (old data never holds it): `lp(bytes)`.
pub(crate) const T_BYTES: u8 = 8;
/// A [`Value::Far`]: never in a commit, so every value decoder refuses it as an unknown tag;
/// a snapshot block holds it as a top-level field (`large::write_ref`, `large::read_ref`):
/// `u8` bytes?, `u64` at, `u32` len, `u32` crc.
pub(crate) const T_FAR: u8 = 9;

impl Value {
    /// Append the canonical encoding.
    pub fn encode(&self, w: &mut Writer) {
        match self {
            Value::Null => w.u8(T_NULL),
            Value::Bool(false) => w.u8(T_FALSE),
            Value::Bool(true) => w.u8(T_TRUE),
            Value::Number(n) => {
                w.u8(T_NUMBER);
                w.u64(n.to_bits());
            }
            Value::String(s) => {
                w.u8(T_STRING);
                w.lp(s.as_bytes());
            }
            Value::Bytes(b) => {
                w.u8(T_BYTES);
                w.lp(b);
            }
            Value::List(l) => {
                w.u8(T_LIST);
                w.varint(l.len() as u64);
                for v in l {
                    v.encode(w);
                }
            }
            Value::Map(m) => {
                w.u8(T_MAP);
                w.varint(m.len() as u64);
                for (k, v) in m {
                    w.lp(k.as_bytes());
                    v.encode(w);
                }
            }
            Value::Set(s) => {
                w.u8(T_SET);
                w.varint(s.len() as u64);
                for e in s {
                    w.lp(e.as_bytes());
                }
            }
            Value::Far(f) => {
                debug_assert!(false, "a far value encoded: it must be loaded first");
                w.u8(T_FAR);
                w.u8(u8::from(f.bytes));
                w.u64(f.at);
                w.u32(f.len);
                w.u32(f.crc);
            }
        }
    }

    /// Length of the canonical encoding, without encoding.
    pub fn encoded_len(&self) -> usize {
        fn lp(n: usize) -> usize {
            varint_len(n as u64) + n
        }
        match self {
            Value::Null | Value::Bool(_) => 1,
            Value::Number(_) => 9,
            Value::String(s) => 1 + lp(s.len()),
            Value::Bytes(b) => 1 + lp(b.len()),
            Value::List(l) => {
                1 + varint_len(l.len() as u64) + l.iter().map(Value::encoded_len).sum::<usize>()
            }
            Value::Map(m) => Value::map_encoded_len(m),
            Value::Set(s) => {
                1 + varint_len(s.len() as u64) + s.iter().map(|e| lp(e.len())).sum::<usize>()
            }
            // What the loaded value encodes to.
            Value::Far(f) => 1 + lp(f.len as usize),
        }
    }

    /// Length of the canonical encoding of `Value::Map(m)`.
    pub fn map_encoded_len(m: &Map) -> usize {
        1 + varint_len(m.len() as u64)
            + m.iter()
                .map(|(k, v)| varint_len(k.len() as u64) + k.len() + v.encoded_len())
                .sum::<usize>()
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::new();
        self.encode(&mut w);
        w.into_inner()
    }

    /// Decode one value, rejecting non-canonical forms (unsorted or duplicate map keys and set
    /// elements, non-finite or negative-zero numbers, excessive depth).
    pub fn decode(r: &mut Reader<'_>) -> Result<Value> {
        Self::decode_at::<false>(r, 0)
    }

    /// Decode one value a host wrote (a transaction's bytes, docs/design.md §3.3): the same
    /// tags, but map keys and set elements in any order (sorted here; a repeated key keeps its
    /// last value, a repeated element is one) and `-0` read as `0`.
    pub(crate) fn decode_host(r: &mut Reader<'_>) -> Result<Value> {
        Self::decode_at::<true>(r, 0)
    }

    /// `HOST`: the host's order (above), else the canonical form. A constant, so the canonical
    /// decoder (snapshot blocks, received commits) carries no test of it.
    fn decode_at<const HOST: bool>(r: &mut Reader<'_>, depth: usize) -> Result<Value> {
        if depth > MAX_DEPTH {
            return Err(r.err("value nested too deeply"));
        }
        Ok(match r.u8()? {
            T_NULL => Value::Null,
            T_FALSE => Value::Bool(false),
            T_TRUE => Value::Bool(true),
            T_NUMBER => Value::Number(decode_number::<HOST>(r)?),
            T_STRING => Value::String(Name::new(r.str()?)),
            T_BYTES => Value::Bytes(r.lp()?.into()),
            T_LIST => {
                let n = r.count(1, usize::MAX)?;
                let mut l = Vec::with_capacity(n);
                for _ in 0..n {
                    l.push(Self::decode_at::<HOST>(r, depth + 1)?);
                }
                Value::List(l)
            }
            T_MAP => Value::Map(Self::decode_map::<HOST>(r, depth)?),
            T_SET if HOST => Value::Set(decode_host_set(r)?),
            T_SET => Value::Set(decode_str_set(r)?),
            t => return Err(r.err(format!("unknown value tag {t}"))),
        })
    }

    fn decode_map<const HOST: bool>(r: &mut Reader<'_>, depth: usize) -> Result<Map> {
        let n = r.count(2, usize::MAX)?;
        if HOST {
            let mut fields = Vec::with_capacity(n);
            for _ in 0..n {
                let k = Name::new(r.str()?);
                fields.push((k, Self::decode_at::<true>(r, depth + 1)?));
            }
            // Sorted once; of a repeated key the last value is kept.
            return Ok(fields.into_iter().collect());
        }
        let mut m = Map::with_capacity(n);
        let mut last: Option<&str> = None;
        for _ in 0..n {
            let k = r.str()?;
            if last.is_some_and(|l| l >= k) {
                return Err(r.err("map keys not strictly ascending"));
            }
            last = Some(k);
            let v = Self::decode_at::<false>(r, depth + 1)?;
            m.push_ordered(Name::new(k), v);
        }
        Ok(m)
    }
}

/// A finite number; canonically never `-0`, which a host's bytes may hold (read as `0`).
fn decode_number<const HOST: bool>(r: &mut Reader<'_>) -> Result<f64> {
    let n = f64::from_bits(r.u64()?);
    if !n.is_finite() {
        return Err(r.err(if HOST {
            "a number that is not finite"
        } else {
            "non-canonical number"
        }));
    }
    if n == 0.0 && n.is_sign_negative() {
        if !HOST {
            return Err(r.err("non-canonical number"));
        }
        return Ok(0.0);
    }
    Ok(n)
}

/// A host's set: elements in any order, sorted and deduplicated.
fn decode_host_set(r: &mut Reader<'_>) -> Result<Set> {
    let n = r.count(1, usize::MAX)?;
    let mut elems = Vec::with_capacity(n);
    for _ in 0..n {
        elems.push(Name::new(r.str()?));
    }
    Ok(elems.into_iter().collect())
}

fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Step over one encoded value without building it (a scan that reads one field of each
/// item: `store/snapshot/scan.rs`). Structure and bounds are checked; canonical form is not
/// (the value is not used).
pub(crate) fn skip_value(r: &mut Reader<'_>, depth: usize) -> Result<()> {
    if depth > MAX_DEPTH {
        return Err(r.err("value nested too deeply"));
    }
    match r.u8()? {
        T_NULL | T_FALSE | T_TRUE => {}
        T_NUMBER => {
            r.take(8)?;
        }
        T_STRING | T_BYTES => {
            r.lp()?;
        }
        T_LIST => {
            for _ in 0..r.count(1, usize::MAX)? {
                skip_value(r, depth + 1)?;
            }
        }
        T_MAP => {
            for _ in 0..r.count(2, usize::MAX)? {
                r.lp()?;
                skip_value(r, depth + 1)?;
            }
        }
        T_SET => {
            for _ in 0..r.count(1, usize::MAX)? {
                r.lp()?;
            }
        }
        t => return Err(r.err(format!("unknown value tag {t}"))),
    }
    Ok(())
}

/// Check one value without building it, for a replica that does not keep it (a sync server's
/// copy of the items outside `_acl`, docs/design.md §12.4): every rule of the canonical
/// [`Value::decode`] and of [`Value::validate`] (field names of nested maps), with no
/// allocation per element, so what it costs does not grow with the value. `at` names the
/// field in an invalid-value error (built only then). The caller measures the value's bytes
/// by the reader's position (its canonical encoding is what it read).
pub(crate) fn check_value(r: &mut Reader<'_>, depth: usize, at: &dyn Fn() -> String) -> Result<()> {
    if depth > MAX_DEPTH {
        return Err(r.err("value nested too deeply"));
    }
    match r.u8()? {
        T_NULL | T_FALSE | T_TRUE => {}
        T_NUMBER => {
            decode_number::<false>(r)?;
        }
        T_STRING => {
            r.str()?;
        }
        T_BYTES => {
            r.lp()?;
        }
        T_LIST => {
            for _ in 0..r.count(1, usize::MAX)? {
                check_value(r, depth + 1, at)?;
            }
        }
        T_MAP => {
            let mut last: Option<&str> = None;
            for _ in 0..r.count(2, usize::MAX)? {
                let k = r.str()?;
                if last.is_some_and(|l| l >= k) {
                    return Err(r.err("map keys not strictly ascending"));
                }
                last = Some(k);
                if validate_field_name(k, "").is_err() {
                    validate_field_name(k, &at())?;
                }
                check_value(r, depth + 1, at)?;
            }
        }
        T_SET => {
            check_str_set(r, &mut |_| {})?;
        }
        t => return Err(r.err(format!("unknown value tag {t}"))),
    }
    Ok(())
}

/// A value's shape, for the stored-schema check of a change nobody keeps (a sync server's,
/// docs/design.md §2.4): the value itself for null, booleans and numbers (an integer field looks
/// at the number), an empty one of its kind otherwise. Steps over the whole value, checking it
/// as [`check_value`] does; costs nothing whatever the value's size.
pub(crate) fn shallow_value(r: &mut Reader<'_>, at: &dyn Fn() -> String) -> Result<Value> {
    let mut peek = r.clone();
    let v = match peek.u8()? {
        T_NULL => Value::Null,
        T_FALSE => Value::Bool(false),
        T_TRUE => Value::Bool(true),
        T_NUMBER => Value::Number(decode_number::<false>(&mut peek)?),
        T_STRING => Value::String(Name::new("")),
        T_BYTES => Value::Bytes(std::sync::Arc::from(&[][..])),
        T_LIST => Value::List(Vec::new()),
        T_MAP => Value::Map(Map::new()),
        T_SET => Value::Set(Set::new()),
        t => return Err(r.err(format!("unknown value tag {t}"))),
    };
    check_value(r, 0, at)?;
    Ok(v)
}

/// Check a strictly ascending set of strings without building it; `each` sees every element.
pub(crate) fn check_str_set<'a>(r: &mut Reader<'a>, each: &mut dyn FnMut(&'a str)) -> Result<()> {
    let n = r.count(1, usize::MAX)?;
    let mut last: Option<&str> = None;
    for _ in 0..n {
        let e = r.str()?;
        if last.is_some_and(|l| l >= e) {
            return Err(r.err("set elements not strictly ascending"));
        }
        last = Some(e);
        each(e);
    }
    Ok(())
}

/// The length of the varint encoding of `v`.
pub(crate) fn varint_bytes(v: u64) -> usize {
    varint_len(v)
}

/// Decode a strictly ascending set of strings.
pub(crate) fn decode_str_set(r: &mut Reader<'_>) -> Result<Set> {
    let n = r.count(1, usize::MAX)?;
    let mut s = Set::with_capacity(n);
    let mut last: Option<&str> = None;
    for _ in 0..n {
        let e = r.str()?;
        if last.is_some_and(|l| l >= e) {
            return Err(r.err("set elements not strictly ascending"));
        }
        last = Some(e);
        s.push_ordered(Name::new(e));
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::map;

    #[test]
    fn skipping_a_value_steps_over_exactly_its_bytes() {
        let v = map! { "a" => 1i64, "b" => "x", "l" => Value::List(vec![Value::Null, "yy".into()]),
        "m" => map! {"c" => true}, "s" => Value::set(["p", "q"]) };
        let mut w = Writer::new();
        v.encode(&mut w);
        w.u8(0xAB);
        let mut r = Reader::new(&w.buf, "value");
        skip_value(&mut r, 0).unwrap();
        assert_eq!(r.u8().unwrap(), 0xAB);
        r.finish().unwrap();
        assert!(skip_value(&mut Reader::new(&[9], "value"), 0).is_err());
        assert!(skip_value(&mut Reader::new(&[T_STRING, 5, b'a'], "value"), 0).is_err());
    }

    #[test]
    fn encoding_round_trips_and_rejects_noncanonical() {
        let v = map! { "a" => 1i64, "b" => "x", "s" => Value::set(["p", "q"]) };
        let b = v.to_bytes();
        let mut r = Reader::new(&b, "value");
        assert_eq!(Value::decode(&mut r).unwrap(), v);
        r.finish().unwrap();
        // Unsorted set.
        let mut w = Writer::new();
        w.u8(T_SET);
        w.varint(2);
        w.lp(b"q");
        w.lp(b"p");
        assert!(Value::decode(&mut Reader::new(&w.buf, "value")).is_err());
        // Negative zero.
        let mut w = Writer::new();
        w.u8(T_NUMBER);
        w.u64((-0.0f64).to_bits());
        assert!(Value::decode(&mut Reader::new(&w.buf, "value")).is_err());
    }

    /// `check_value` accepts what `Value::decode` + `validate` accept, refuses what either
    /// refuses, and consumes the same bytes.
    #[test]
    fn checking_in_place_agrees_with_decoding() {
        let deep = (0..MAX_DEPTH + 1).fold(Value::Null, |v, _| Value::List(vec![v]));
        let good = [
            map! { "a" => 1i64, "b" => "x", "s" => Value::set(["p", "q"]) },
            Value::List(vec![
                Value::Null,
                Value::from(true),
                Value::from(2.5),
                map! {},
            ]),
            (0..MAX_DEPTH).fold(Value::Null, |v, _| Value::List(vec![v])),
        ];
        let raw = |f: &dyn Fn(&mut Writer)| {
            let mut w = Writer::new();
            f(&mut w);
            w.into_inner()
        };
        let bad = [
            deep.to_bytes(),
            raw(&|w| {
                w.u8(T_NUMBER);
                w.u64((-0.0f64).to_bits());
            }),
            raw(&|w| {
                w.u8(T_NUMBER);
                w.u64(f64::NAN.to_bits());
            }),
            raw(&|w| {
                w.u8(T_MAP);
                w.varint(2);
                w.lp(b"b");
                w.u8(T_NULL);
                w.lp(b"a");
                w.u8(T_NULL);
            }),
            raw(&|w| {
                w.u8(T_MAP);
                w.varint(1);
                w.lp(b"a.b");
                w.u8(T_NULL);
            }),
            raw(&|w| {
                w.u8(T_SET);
                w.varint(2);
                w.lp(b"x");
                w.lp(b"x");
            }),
            raw(&|w| {
                w.u8(T_LIST);
                w.varint(3);
                w.u8(T_NULL);
            }),
            raw(&|w| w.u8(9)),
            raw(&|w| {
                w.u8(T_STRING);
                w.lp(&[0xff, 0xfe]);
            }),
        ];
        let at = String::new;
        for v in &good {
            let b = v.to_bytes();
            let mut r = Reader::new(&b, "value");
            check_value(&mut r, 0, &at).unwrap();
            r.finish().unwrap();
        }
        for b in &bad {
            let decoded = Value::decode(&mut Reader::new(b, "value")).and_then(|v| v.validate(""));
            assert!(decoded.is_err(), "{b:?} decodes");
            assert!(
                check_value(&mut Reader::new(b, "value"), 0, &at).is_err(),
                "{b:?}"
            );
        }
    }

    #[test]
    fn encoded_len_matches() {
        let v = map! { "a" => 1i64, "b" => "x".repeat(200), "s" => Value::set(["p", "q"]),
        "l" => Value::List(vec![Value::Null, Value::from(true)]) };
        assert_eq!(v.encoded_len(), v.to_bytes().len());
    }

    /// Bytes: tag 8, any bytes (not UTF-8 checked); skipping and checking step over them.
    #[test]
    fn bytes_encode_as_tag_8() {
        let v = Value::from(&[0xff, 0, 0xc3][..]);
        assert_eq!(v.to_bytes(), [T_BYTES, 3, 0xff, 0, 0xc3]);
        assert_eq!(Value::from(Vec::new()).to_bytes(), [T_BYTES, 0]);
        assert_eq!(v.encoded_len(), 5);
        for bad in [&[T_BYTES][..], &[T_BYTES, 2, 0], &[T_BYTES, 0x80]] {
            assert!(Value::decode(&mut Reader::new(bad, "value")).is_err());
            assert!(check_value(&mut Reader::new(bad, "value"), 0, &String::new).is_err());
            assert!(skip_value(&mut Reader::new(bad, "value"), 0).is_err());
        }
    }

    /// Values written before bytes existed encode as they did (commit ids of old data stay).
    #[test]
    fn old_values_encode_unchanged() {
        let v = map! { "a" => 1i64, "b" => "x", "s" => Value::set(["p"]), "l" => Value::List(vec![Value::Null]) };
        let want: &[u8] = &[
            T_MAP, 4, 1, b'a', T_NUMBER, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 1, b'b', T_STRING, 1, b'x',
            1, b'l', T_LIST, 1, T_NULL, 1, b's', T_SET, 1, 1, b'p',
        ];
        assert_eq!(v.to_bytes(), want);
    }

    mod props {
        use super::*;
        use proptest::prelude::*;
        use std::cmp::Ordering;

        fn scalar() -> impl Strategy<Value = Value> {
            prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::Bool),
                (-3i64..4).prop_map(|n| Value::from(n as f64 / 2.0)),
                "[ab\\x00é]{0,3}".prop_map(Value::from),
                proptest::collection::vec(
                    prop_oneof![Just(0u8), Just(1), Just(0x7f), Just(0xff)],
                    0..4
                )
                .prop_map(Value::from),
                proptest::collection::vec("[ab]{0,2}", 0..3).prop_map(Value::set),
            ]
        }

        fn value() -> impl Strategy<Value = Value> {
            scalar().prop_recursive(3, 24, 4, |inner| {
                prop_oneof![
                    proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::List),
                    proptest::collection::btree_map("[a-c]{1,2}", inner, 0..4).prop_map(|m| {
                        Value::Map(m.into_iter().map(|(k, v)| (Name::from(k), v)).collect())
                    }),
                ]
            })
        }

        proptest! {
            /// Every value decodes to itself from its encoding, which `encoded_len` measures
            /// and `check_value` and `skip_value` step over exactly; JSON (base64) too.
            #[test]
            fn encoding_round_trips(v in value()) {
                let b = v.to_bytes();
                prop_assert_eq!(v.encoded_len(), b.len());
                let mut r = Reader::new(&b, "value");
                prop_assert_eq!(&Value::decode(&mut r).unwrap(), &v);
                r.finish().unwrap();
                let mut r = Reader::new(&b, "value");
                check_value(&mut r, 0, &String::new).unwrap();
                r.finish().unwrap();
                let mut r = Reader::new(&b, "value");
                skip_value(&mut r, 0).unwrap();
                r.finish().unwrap();
                let text = serde_json::to_string(&v).unwrap();
                let back: Value = serde_json::from_str(&text).unwrap();
                prop_assert_eq!(back, v);
            }

            /// `total_cmp` is a total order that agrees with the encoding's equality, and
            /// orders bytes as their slices do.
            #[test]
            fn order_is_consistent(a in value(), b in value(), c in value()) {
                let ab = a.total_cmp(&b);
                prop_assert_eq!(ab, b.total_cmp(&a).reverse());
                prop_assert_eq!(ab == Ordering::Equal, a.to_bytes() == b.to_bytes());
                if ab != Ordering::Greater && b.total_cmp(&c) != Ordering::Greater {
                    prop_assert_ne!(a.total_cmp(&c), Ordering::Greater);
                }
                if let (Value::Bytes(x), Value::Bytes(y)) = (&a, &b) {
                    prop_assert_eq!(ab, x[..].cmp(&y[..]));
                }
            }
        }
    }
}
