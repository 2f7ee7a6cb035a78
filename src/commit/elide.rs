//! A commit decoded keeping some collections ([`Commit::decode_keeping`], docs/design.md §12.4):
//! a sync server keeps the access list and the stored schemas, not the items, so the changes
//! to other collections are checked where they lie in the bytes (every rule of the decoder and
//! of a received write) and never built. A stranger's commit then costs the server what the
//! `_acl` and `_schema` changes cost, not one value per element of a list. When the stored
//! schemas apply to a commit, their check reads the elided changes' shapes from its bytes
//! again ([`Commit::visit_shapes`]), one change at a time.
//!
//! [`Commit::decode_keeping`]: super::Commit::decode_keeping

use super::encode::COMMIT_FIELD_ATTACH;
use super::encode::{Decoder, COMMIT_FIELD_ASSIGN, COMMIT_FIELD_SET_EDIT, COMMIT_FIELD_UNSET};
use super::encode::{COMMIT_OP_DELETE, COMMIT_OP_PATCH, COMMIT_OP_PUT};
use super::{Change, FieldOp, Op, ShapeVisitor, Stamp};
use crate::error::{Error, Result};
use crate::value::{check_item_size, check_str_set, check_value, shallow_value, varint_bytes};

impl Change {
    /// The marker that stands for the changes [`super::Commit::decode_keeping`] checked and did
    /// not build: empty collection and id (no real change has them), never applied.
    pub fn elided() -> Change {
        Change {
            collection: String::new(),
            id: String::new(),
            op: Op::Delete,
        }
    }

    /// The marker of elided changes among which at least one writes an application
    /// collection (a name not starting with `_`): what an encrypted repository's rule looks
    /// for (docs/design.md §6.8).
    pub fn elided_data() -> Change {
        Change {
            collection: String::new(),
            id: "*".into(),
            op: Op::Delete,
        }
    }

    /// Whether this is the [`Change::elided`] (or [`Change::elided_data`]) marker.
    pub fn is_elided(&self) -> bool {
        self.collection.is_empty()
    }

    /// Whether this is the [`Change::elided_data`] marker.
    pub fn elides_data(&self) -> bool {
        self.collection.is_empty() && self.id == "*"
    }
}

impl<'a> Decoder<'a> {
    /// The changes of [`super::Commit::decode_keeping`]: those of the collections `keep` names
    /// built (an op longer than its collection's bound refused first; each change passed to
    /// `check` at once, so refused ones never pile up), the others checked in place, then one
    /// [`Change::elided`] if there were any.
    pub(super) fn kept_changes(
        &mut self,
        keep: &[(&str, usize)],
        check: &dyn Fn(&Change) -> Result<()>,
    ) -> Result<Vec<Change>> {
        let nc = self.r.count(3, usize::MAX)?;
        let mut changes = Vec::new();
        let mut last: Option<(&'a str, &'a str)> = None;
        let mut data = false;
        let mut app = false;
        for _ in 0..nc {
            let (coll, id) = self.key(last)?;
            last = Some((coll, id));
            let start = self.r.clone();
            self.check_op(coll, id)?;
            let Some(&(_, max)) = keep.iter().find(|(k, _)| *k == coll) else {
                data = true;
                app |= !coll.starts_with('_');
                continue;
            };
            if self.r.pos() - start.pos() > max {
                return Err(Error::invalid_value(
                    &format!("{coll}/{id}"),
                    format!("a change of {coll} takes at most {max} bytes"),
                ));
            }
            self.r = start;
            let change = Change {
                collection: coll.to_owned(),
                id: id.to_owned(),
                op: self.op()?,
            };
            check(&change)?;
            changes.push(change);
        }
        if app {
            changes.push(Change::elided_data());
        } else if data {
            changes.push(Change::elided());
        }
        Ok(changes)
    }

    /// The changes of [`super::Commit::decode_one`]: the change `coll/id` built if its op
    /// takes at most `max` bytes, every change checked in place.
    pub(super) fn one_change(&mut self, coll: &str, id: &str, max: usize) -> Result<Vec<Change>> {
        let nc = self.r.count(3, usize::MAX)?;
        let mut out = Vec::new();
        let mut last: Option<(&'a str, &'a str)> = None;
        for _ in 0..nc {
            let (c, i) = self.key(last)?;
            last = Some((c, i));
            let start = self.r.clone();
            self.check_op(c, i)?;
            if c == coll && i == id && self.r.pos() - start.pos() <= max {
                let end = self.r.clone();
                self.r = start;
                let op = self.op()?;
                self.r = end;
                out.push(Change {
                    collection: c.to_owned(),
                    id: i.to_owned(),
                    op,
                });
            }
        }
        Ok(out)
    }

    /// [`super::Commit::visit_shapes`]: every change checked in place; those of the collections
    /// `v` wants reported field by field.
    pub(super) fn shapes(&mut self, v: &mut dyn ShapeVisitor) -> Result<()> {
        let nc = self.r.count(3, usize::MAX)?;
        let mut last: Option<(&'a str, &'a str)> = None;
        for _ in 0..nc {
            let (coll, id) = self.key(last)?;
            last = Some((coll, id));
            if !v.wanted(coll) {
                self.check_op(coll, id)?;
                continue;
            }
            let at = |name: &str| format!("{coll}/{id}.{name}");
            match self.r.u8()? {
                COMMIT_OP_PUT => {
                    v.begin(coll, true);
                    let mut last = None;
                    for _ in 0..self.r.count(2, usize::MAX)? {
                        let name = self.put_field_name(&mut last)?;
                        let value = shallow_value(&mut self.r, &|| at(name))?;
                        v.field(coll, name, &FieldOp::Assign(value))?;
                    }
                }
                COMMIT_OP_DELETE => continue,
                COMMIT_OP_PATCH => {
                    v.begin(coll, false);
                    let mut last = None;
                    for _ in 0..self.r.count(2, usize::MAX)? {
                        let name = self.field_name(&mut last)?;
                        let op = match self.field_code(name)? {
                            COMMIT_FIELD_ATTACH => {
                                // Not a field of the item's schema: checked, not reported.
                                self.attach_body()?;
                                continue;
                            }
                            COMMIT_FIELD_ASSIGN => {
                                FieldOp::Assign(shallow_value(&mut self.r, &|| at(name))?)
                            }
                            COMMIT_FIELD_UNSET => FieldOp::Unset,
                            COMMIT_FIELD_SET_EDIT => {
                                self.check_set_edit()?;
                                FieldOp::SetEdit {
                                    add: Default::default(),
                                    remove: Default::default(),
                                }
                            }
                            t => return Err(self.r.err(format!("unknown field op {t}"))),
                        };
                        v.field(coll, name, &op)?;
                    }
                }
                t => return Err(self.r.err(format!("unknown op {t}"))),
            }
            v.end(coll)?;
        }
        Ok(())
    }

    /// Step over one change's op, checking what decoding it and receiving it would check:
    /// the op's form, each value ([`check_value`]) and the item's size.
    fn check_op(&mut self, coll: &str, id: &str) -> Result<()> {
        let size = match self.r.u8()? {
            COMMIT_OP_PUT => {
                let n = self.r.count(2, usize::MAX)?;
                // As `Value::map_encoded_len` counts the map the put writes.
                let mut size = 1 + varint_bytes(n as u64);
                let mut last = None;
                for _ in 0..n {
                    let name = self.put_field_name(&mut last)?;
                    size += varint_bytes(name.len() as u64) + name.len();
                    size += self.check_field(coll, id, name)?;
                }
                size
            }
            COMMIT_OP_DELETE => 0,
            COMMIT_OP_PATCH => {
                let n = self.r.count(2, usize::MAX)?;
                if n == 0 {
                    return Err(self.r.err("empty patch"));
                }
                let mut size = 0;
                let mut last = None;
                for _ in 0..n {
                    let name = self.field_name(&mut last)?;
                    size += match self.field_code(name)? {
                        COMMIT_FIELD_ATTACH => {
                            let from = self.r.pos();
                            self.attach_body()?;
                            self.r.pos() - from
                        }
                        COMMIT_FIELD_ASSIGN => self.check_field(coll, id, name)?,
                        COMMIT_FIELD_UNSET => 0,
                        COMMIT_FIELD_SET_EDIT => self.check_set_edit()?,
                        t => return Err(self.r.err(format!("unknown field op {t}"))),
                    };
                }
                size
            }
            t => return Err(self.r.err(format!("unknown op {t}"))),
        };
        check_item_size(coll, id, size)
    }

    /// One field's value, checked; its encoded length.
    fn check_field(&mut self, coll: &str, id: &str, name: &str) -> Result<usize> {
        let at = || format!("{coll}/{id}.{name}");
        let from = self.r.pos();
        check_value(&mut self.r, 0, &at)?;
        Ok(self.r.pos() - from)
    }

    /// A set edit's form (as `Decoder::set_edit`); the size a received write counts for it.
    fn check_set_edit(&mut self) -> Result<usize> {
        let r = &mut self.r;
        let mut size = 0;
        check_str_set(r, &mut |e| size += e.len() + 5)?;
        let nr = r.count(2, usize::MAX)?;
        let mut last_e: Option<&str> = None;
        for _ in 0..nr {
            let e = r.str()?;
            if last_e.is_some_and(|l| l >= e) {
                return Err(r.err("removed elements not ascending"));
            }
            last_e = Some(e);
            let mut prev: Option<Stamp> = None;
            for _ in 0..r.count(24, usize::MAX)? {
                let s = Stamp::decode(r)?;
                if prev.is_some_and(|l| l >= s) {
                    return Err(r.err("dots not strictly ascending"));
                }
                prev = Some(s);
            }
        }
        Ok(size)
    }
}
