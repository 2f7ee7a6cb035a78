//! The canonical commit encoding (docs/design.md §4.1): `Commit::encode` sorts and builds the
//! name tables, `Commit::decode` accepts nothing but that one form.

use super::{
    Change, Commit, CommitId, FieldOp, Op, PublicKey, ShapeVisitor, Stamp, COMMIT_VERSION,
};
use super::{FLAG_TRUSTED, PUBLIC_KEY_LEN};
use super::{MAX_COMMIT_BYTES, MAX_PARENTS};
use crate::codec::{Reader, Writer};
use crate::error::{Error, Result};
use crate::value::{decode_str_set, Map, Name, Value};
use std::collections::{BTreeMap, BTreeSet};

// A change's op code and a patch's field-op codes (§4.1). The transaction bytes a host hands the
// engine number their op kinds otherwise (`TXN_OP_*` in `txn_bytes.rs`, §3.3).
pub(super) const COMMIT_OP_PUT: u8 = 1;
pub(super) const COMMIT_OP_DELETE: u8 = 2;
pub(super) const COMMIT_OP_PATCH: u8 = 3;
pub(super) const COMMIT_FIELD_ASSIGN: u8 = 1;
pub(super) const COMMIT_FIELD_UNSET: u8 = 2;
pub(super) const COMMIT_FIELD_SET_EDIT: u8 = 3;
/// An attachment's descriptor (`attach/`): 32-byte SHA-256, `varint` size, `lp(type)`; only on
/// an attachment field, which takes nothing else but an unset.
pub(super) const COMMIT_FIELD_ATTACH: u8 = 4;

impl Commit {
    /// Canonical encoding. Parents and changes are sorted here; callers need not pre-sort.
    pub fn encode(&self) -> Vec<u8> {
        let tables = Tables::of(self);
        let mut w = Writer::with_capacity(128 + self.changes.len() * 64);
        w.u8(COMMIT_VERSION);
        w.u8(if self.trusted { FLAG_TRUSTED } else { 0 });
        w.bytes(&self.author.0);
        w.u64(self.hlc);
        let mut parents = self.parents.clone();
        parents.sort();
        parents.dedup();
        w.varint(parents.len() as u64);
        for p in &parents {
            w.bytes(&p.0);
        }
        tables.encode(&mut w);
        let mut order: Vec<&Change> = self.changes.iter().collect();
        order.sort_by(|a, b| (&a.collection, &a.id).cmp(&(&b.collection, &b.id)));
        w.varint(order.len() as u64);
        for c in order {
            w.varint(tables.colls[c.collection.as_str()]);
            w.lp(c.id.as_bytes());
            encode_op(&mut w, &c.op, &tables.names);
        }
        w.into_inner()
    }

    /// Decode and check canonical form. Returns the commit and its id.
    pub fn decode(bytes: &[u8]) -> Result<(Commit, CommitId)> {
        Self::decode_with(bytes, Mode::Full)
    }

    /// [`Commit::decode`] building only the changes of the collections `keep` names, each op at
    /// most its bytes (each change passed to `check` as soon as it is built): the access-only
    /// decode of a sync server (`Commit::decode_access_only`, in `access`, docs/design.md
    /// §12.4). Every rule of the decoder is checked, and so are the rules a received commit's
    /// items obey (structure, field names, finite numbers, `MAX_ITEM_BYTES` per change). The
    /// changes to other collections are checked in place and stand, if there are any, as one
    /// [`Change::elided`] marker at the end. What it costs is the kept changes plus a constant,
    /// whatever the commit's size. The result must not be encoded again (its id is the id of
    /// `bytes`).
    pub fn decode_keeping(
        bytes: &[u8],
        keep: &[(&str, usize)],
        check: &dyn Fn(&Change) -> Result<()>,
    ) -> Result<(Commit, CommitId)> {
        Self::decode_with(bytes, Mode::Keep(keep, check))
    }

    /// [`Commit::decode`] building only the change `collection/id`, if its op takes at most
    /// `max` bytes (none otherwise); every other change is checked in place. What a sync
    /// server's access-only replica reads of a root: its `_keys/config` (docs/design.md §6.8),
    /// at the cost of that one change whatever the root holds.
    pub(crate) fn decode_one(
        bytes: &[u8],
        collection: &str,
        id: &str,
        max: usize,
    ) -> Result<(Commit, CommitId)> {
        Self::decode_with(bytes, Mode::One(collection, id, max))
    }

    /// Report the changes of `bytes` (a commit [`Commit::decode`] accepts) of the collections
    /// `v` wants, field by field, as their shapes (the values' kinds, numbers as they are;
    /// [`ShapeVisitor`]): what the stored-schema check of a commit decoded access-only needs
    /// (docs/design.md §2.4). Nothing is built but one field's shape at a time.
    pub(crate) fn visit_shapes(bytes: &[u8], v: &mut dyn ShapeVisitor) -> Result<()> {
        Self::decode_with(bytes, Mode::Shapes(v)).map(|_| ())
    }

    /// [`Commit::decode`] without computing the id (the inner commit of a sealed blob,
    /// docs/design.md §6.8, has none).
    pub(crate) fn decode_unhashed(bytes: &[u8]) -> Result<Commit> {
        Self::decode_body(bytes, Mode::Full)
    }

    fn decode_with(bytes: &[u8], mode: Mode<'_>) -> Result<(Commit, CommitId)> {
        let commit = Self::decode_body(bytes, mode)?;
        Ok((commit, CommitId::of(bytes)))
    }

    fn decode_body(bytes: &[u8], mode: Mode<'_>) -> Result<Commit> {
        if bytes.len() > MAX_COMMIT_BYTES {
            return Err(Error::TooLarge {
                what: "commit".into(),
                size: bytes.len() as u64,
                limit: MAX_COMMIT_BYTES as u64,
            });
        }
        let mut r = Reader::new(bytes, "commit");
        let version = r.u8()?;
        if version != COMMIT_VERSION {
            return Err(r.err(format!("unsupported commit version {version}")));
        }
        let flags = r.u8()?;
        if flags & !FLAG_TRUSTED != 0 {
            return Err(r.err(format!("unknown commit flags {flags:#x}")));
        }
        let author = PublicKey(r.array::<PUBLIC_KEY_LEN>()?);
        let hlc = r.u64()?;
        let parents = decode_parents(&mut r)?;
        let mut d = Decoder::new(r)?;
        let changes = match mode {
            Mode::Full => d.changes()?,
            Mode::Keep(keep, check) => d.kept_changes(keep, check)?,
            Mode::One(coll, id, max) => d.one_change(coll, id, max)?,
            Mode::Shapes(v) => {
                d.shapes(v)?;
                Vec::new()
            }
        };
        d.finish()?;
        let commit = Commit {
            trusted: flags & FLAG_TRUSTED != 0,
            author,
            hlc,
            parents,
            changes,
        };
        Ok(commit)
    }
}

/// What `Commit::decode_with` builds of the changes.
enum Mode<'f> {
    /// Every change.
    Full,
    /// Those of these collections (each op at most so many bytes), checked as built.
    Keep(&'f [(&'f str, usize)], &'f dyn Fn(&Change) -> Result<()>),
    /// The one change of this collection and id, if its op takes at most so many bytes.
    One(&'f str, &'f str, usize),
    /// None: the shapes of the wanted collections' changes, reported.
    Shapes(&'f mut dyn ShapeVisitor),
}

/// The collection and field-name tables of a commit: every name used, ascending, with its
/// index.
struct Tables<'c> {
    colls: BTreeMap<&'c str, u64>,
    names: BTreeMap<&'c str, u64>,
}

impl<'c> Tables<'c> {
    fn of(commit: &'c Commit) -> Tables<'c> {
        let mut colls: BTreeSet<&str> = BTreeSet::new();
        let mut names: BTreeSet<&str> = BTreeSet::new();
        for c in &commit.changes {
            colls.insert(&c.collection);
            match &c.op {
                Op::Put(m) => names.extend(m.keys().map(Name::as_str)),
                Op::Patch(p) => names.extend(p.keys().map(String::as_str)),
                Op::Delete => {}
            }
        }
        Tables {
            colls: colls.into_iter().zip(0u64..).collect(),
            names: names.into_iter().zip(0u64..).collect(),
        }
    }

    fn encode(&self, w: &mut Writer) {
        for table in [&self.colls, &self.names] {
            w.varint(table.len() as u64);
            for n in table.keys() {
                w.lp(n.as_bytes());
            }
        }
    }
}

/// One change's op. Not inlined into the commit's loop (V8 tiering: src/hashing.rs).
#[inline(never)]
fn encode_op(w: &mut Writer, op: &Op, names: &BTreeMap<&str, u64>) {
    match op {
        Op::Put(m) => {
            w.u8(COMMIT_OP_PUT);
            w.varint(m.len() as u64);
            for (k, v) in m {
                w.varint(names[k.as_str()]);
                v.encode(w);
            }
        }
        Op::Delete => w.u8(COMMIT_OP_DELETE),
        Op::Patch(p) => {
            w.u8(COMMIT_OP_PATCH);
            w.varint(p.len() as u64);
            for (k, fop) in p {
                w.varint(names[k.as_str()]);
                match (crate::attach::is_attachment_field(k), fop) {
                    (true, FieldOp::Assign(v)) => {
                        let a = crate::attach::descriptor_of(v)
                            .expect("an attachment field is assigned a descriptor (Txn::attach)");
                        w.u8(COMMIT_FIELD_ATTACH);
                        w.bytes(&a.hash);
                        w.varint(a.size);
                        w.lp(a.media_type.as_bytes());
                    }
                    _ => encode_field_op(w, fop),
                }
            }
        }
    }
}

fn encode_field_op(w: &mut Writer, fop: &FieldOp) {
    match fop {
        FieldOp::Assign(v) => {
            w.u8(COMMIT_FIELD_ASSIGN);
            v.encode(w);
        }
        FieldOp::Unset => w.u8(COMMIT_FIELD_UNSET),
        FieldOp::SetEdit { add, remove } => {
            w.u8(COMMIT_FIELD_SET_EDIT);
            w.varint(add.len() as u64);
            for e in add {
                w.lp(e.as_bytes());
            }
            w.varint(remove.len() as u64);
            for (e, dots) in remove {
                w.lp(e.as_bytes());
                let mut d = dots.clone();
                d.sort();
                d.dedup();
                w.varint(d.len() as u64);
                for s in &d {
                    s.encode(w);
                }
            }
        }
    }
}

/// Parent ids, strictly ascending, at most [`MAX_PARENTS`].
fn decode_parents(r: &mut Reader<'_>) -> Result<Vec<CommitId>> {
    let np = r.count(32, MAX_PARENTS)?;
    let mut parents = Vec::with_capacity(np);
    for _ in 0..np {
        let p = CommitId(r.array()?);
        if parents.last().is_some_and(|l| *l >= p) {
            return Err(r.err("parents not strictly ascending"));
        }
        parents.push(p);
    }
    Ok(parents)
}

/// Decodes the tables and the changes that index into them, tracking which table entries are
/// used (every entry must be).
pub(super) struct Decoder<'a> {
    pub(super) r: Reader<'a>,
    colls: Vec<&'a str>,
    names: Vec<&'a str>,
    used_colls: Vec<bool>,
    used_names: Vec<bool>,
}

impl<'a> Decoder<'a> {
    /// Read both tables: strictly ascending, every collection and field name valid.
    fn new(mut r: Reader<'a>) -> Result<Decoder<'a>> {
        let colls = read_table(&mut r, "collection")?;
        for c in &colls {
            crate::key::validate_collection(c).map_err(|e| r.err(e.to_string()))?;
        }
        let names = read_table(&mut r, "field name")?;
        for n in &names {
            crate::attach::validate_stored_field_name(n).map_err(|e| r.err(e.to_string()))?;
        }
        Ok(Decoder {
            r,
            used_colls: vec![false; colls.len()],
            used_names: vec![false; names.len()],
            colls,
            names,
        })
    }

    /// The changes, strictly ascending by `(collection, id)`, each a valid key.
    fn changes(&mut self) -> Result<Vec<Change>> {
        let nc = self.r.count(3, usize::MAX)?;
        let mut changes: Vec<Change> = Vec::with_capacity(nc);
        for _ in 0..nc {
            let last = changes
                .last()
                .map(|l| (l.collection.as_str(), l.id.as_str()));
            let (coll, id) = self.key(last)?;
            let op = self.op()?;
            changes.push(Change {
                collection: coll.to_owned(),
                id: id.to_owned(),
                op,
            });
        }
        Ok(changes)
    }

    /// The next change's key: a valid one, after `last` (the previous change's).
    pub(super) fn key(&mut self, last: Option<(&str, &str)>) -> Result<(&'a str, &'a str)> {
        let ci = table_index(&mut self.r, self.colls.len())?;
        self.used_colls[ci] = true;
        let coll = self.colls[ci];
        let id = self.r.str()?;
        if !plain_id(id) {
            // Let the key rules name the problem (collections were checked above).
            let key = format!("{coll}/{id}");
            crate::key::split_key(&key).map_err(|e| self.r.err(e.to_string()))?;
        }
        if last.is_some_and(|l| l >= (coll, id)) {
            return Err(self.r.err("changes not strictly ascending by key"));
        }
        Ok((coll, id))
    }

    pub(super) fn op(&mut self) -> Result<Op> {
        Ok(match self.r.u8()? {
            COMMIT_OP_PUT => {
                let n = self.r.count(2, usize::MAX)?;
                let mut m = Map::with_capacity(n);
                let mut last = None;
                for _ in 0..n {
                    let name = self.put_field_name(&mut last)?;
                    m.insert(Name::new(name), Value::decode(&mut self.r)?);
                }
                Op::Put(m)
            }
            COMMIT_OP_DELETE => Op::Delete,
            COMMIT_OP_PATCH => {
                let n = self.r.count(2, usize::MAX)?;
                if n == 0 {
                    return Err(self.r.err("empty patch"));
                }
                let mut p = BTreeMap::new();
                let mut last = None;
                for _ in 0..n {
                    let name = self.field_name(&mut last)?;
                    p.insert(name.to_owned(), self.field_op(name)?);
                }
                Op::Patch(p)
            }
            t => return Err(self.r.err(format!("unknown op {t}"))),
        })
    }

    /// The next field name of a put or patch; `last` is the previous one's index (fields are
    /// strictly ascending).
    pub(super) fn field_name(&mut self, last: &mut Option<usize>) -> Result<&'a str> {
        let ni = table_index(&mut self.r, self.names.len())?;
        if last.is_some_and(|l| l >= ni) {
            return Err(self.r.err("fields not strictly ascending"));
        }
        *last = Some(ni);
        self.used_names[ni] = true;
        Ok(self.names[ni])
    }

    /// A put's next field name: never an attachment's (a put resets attachments, it does not
    /// carry them).
    pub(super) fn put_field_name(&mut self, last: &mut Option<usize>) -> Result<&'a str> {
        let name = self.field_name(last)?;
        if crate::attach::is_attachment_field(name) {
            return Err(self.r.err("an attachment field in a put"));
        }
        Ok(name)
    }

    /// The next field op's code, checked against the field it applies to: an attachment field
    /// takes an attach or an unset, any other field anything but an attach.
    pub(super) fn field_code(&mut self, name: &str) -> Result<u8> {
        let code = self.r.u8()?;
        let ok = if crate::attach::is_attachment_field(name) {
            matches!(code, COMMIT_FIELD_ATTACH | COMMIT_FIELD_UNSET)
        } else {
            code != COMMIT_FIELD_ATTACH
        };
        if !ok {
            return Err(self.r.err(format!("field op {code} on field {name:?}")));
        }
        Ok(code)
    }

    /// An attach's body: hash, size (at most 2^53 − 1), media type.
    pub(super) fn attach_body(&mut self) -> Result<crate::attach::Attachment> {
        let hash: [u8; 32] = self.r.array()?;
        let size = self.r.varint()?;
        if size > crate::attach::MAX_ATTACHMENT_SIZE {
            return Err(self.r.err("attachment size above 2^53 - 1"));
        }
        let media_type = self.r.str()?;
        crate::attach::validate_media_type(media_type).map_err(|e| self.r.err(e.to_string()))?;
        Ok(crate::attach::Attachment {
            hash,
            size,
            media_type: media_type.to_owned(),
        })
    }

    fn field_op(&mut self, name: &str) -> Result<FieldOp> {
        Ok(match self.field_code(name)? {
            COMMIT_FIELD_ATTACH => {
                FieldOp::Assign(crate::attach::descriptor_value(&self.attach_body()?))
            }
            COMMIT_FIELD_ASSIGN => FieldOp::Assign(Value::decode(&mut self.r)?),
            COMMIT_FIELD_UNSET => FieldOp::Unset,
            COMMIT_FIELD_SET_EDIT => self.set_edit()?,
            t => return Err(self.r.err(format!("unknown field op {t}"))),
        })
    }

    /// Elements to add (strictly ascending), then elements to remove (strictly ascending),
    /// each with the dots its writer observed (strictly ascending).
    fn set_edit(&mut self) -> Result<FieldOp> {
        let r = &mut self.r;
        let add = decode_str_set(r)?.into_iter().map(String::from).collect();
        let nr = r.count(2, usize::MAX)?;
        let mut remove = BTreeMap::new();
        let mut last_e: Option<&str> = None;
        for _ in 0..nr {
            let e = r.str()?;
            if last_e.is_some_and(|l| l >= e) {
                return Err(r.err("removed elements not ascending"));
            }
            last_e = Some(e);
            let nd = r.count(24, usize::MAX)?;
            let mut dots = Vec::with_capacity(nd);
            for _ in 0..nd {
                let s = Stamp::decode(r)?;
                if dots.last().is_some_and(|l| *l >= s) {
                    return Err(r.err("dots not strictly ascending"));
                }
                dots.push(s);
            }
            remove.insert(e.to_owned(), dots);
        }
        Ok(FieldOp::SetEdit { add, remove })
    }

    /// No trailing bytes, and every table entry used.
    fn finish(&self) -> Result<()> {
        self.r.finish()?;
        if self.used_colls.contains(&false) || self.used_names.contains(&false) {
            return Err(self.r.err("unused table entry"));
        }
        Ok(())
    }
}

/// Whether `id` certainly passes [`crate::key::split_key`]'s id rules (1..=MAX_ID bytes, no
/// control characters), checked without building the `collection/id` string. Anything else
/// goes through `split_key` itself.
fn plain_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= crate::key::MAX_ID
        && if id.is_ascii() {
            !id.bytes().any(|b| b.is_ascii_control())
        } else {
            !id.chars().any(char::is_control)
        }
}

fn read_table<'a>(r: &mut Reader<'a>, what: &str) -> Result<Vec<&'a str>> {
    let n = r.count(1, usize::MAX)?;
    let mut t: Vec<&str> = Vec::with_capacity(n);
    for _ in 0..n {
        let s = r.str()?;
        if t.last().is_some_and(|l| *l >= s) {
            return Err(r.err(format!("{what} table not strictly ascending")));
        }
        t.push(s);
    }
    Ok(t)
}

fn table_index(r: &mut Reader<'_>, len: usize) -> Result<usize> {
    let i = r.varint()?;
    if i >= len as u64 {
        return Err(r.err(format!("table index {i} out of range")));
    }
    Ok(i as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_id_agrees_with_the_key_rules() {
        let long = "x".repeat(crate::key::MAX_ID);
        let too_long = "x".repeat(crate::key::MAX_ID + 1);
        let ids = [
            "", "a", "a/b", "a b", "\u{0}", "a\nb", "\u{7f}", "\u{85}", "é", "x\u{9f}", "日本",
            &long, &too_long,
        ];
        for id in ids {
            let by_key = crate::key::split_key(&format!("c/{id}")).is_ok();
            assert_eq!(plain_id(id), by_key, "{id:?}");
        }
    }
}
