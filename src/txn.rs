//! Transactions: a builder that collects writes to many items. Writes to the same key coalesce
//! so a commit holds at most one change per key; the repository validates and commits it
//! atomically.

use crate::error::Result;
use crate::item::ItemId;
use crate::key::split_key;
use crate::value::{Map, Set, Value};
use std::collections::{BTreeMap, BTreeSet};

/// A pending change to one field.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldWrite {
    Assign(Value),
    Unset,
    /// Elements to add and to remove (the remove's observed dots are filled in at commit).
    SetEdit {
        add: BTreeSet<String>,
        remove: BTreeSet<String>,
    },
}

/// A pending change to one item.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    Put(Map),
    Delete,
    /// `must_exist`: fail with NotFound at commit if the item does not exist (an `update`).
    Patch {
        fields: BTreeMap<String, FieldWrite>,
        must_exist: bool,
    },
}

/// A set of writes committed atomically as one commit.
#[derive(Debug, Clone, Default)]
pub struct Txn {
    /// Collection, then id (key order). Ids are [`ItemId`]s: a short id is held inline, so
    /// adding a write to a large transaction compares bytes in the tree node instead of
    /// chasing a pointer per comparison, and costs no allocation for the id.
    pub(crate) writes: BTreeMap<String, BTreeMap<ItemId, Write>>,
}

impl Txn {
    pub fn new() -> Txn {
        Txn::default()
    }

    pub fn is_empty(&self) -> bool {
        self.writes.values().all(BTreeMap::is_empty)
    }

    pub fn len(&self) -> usize {
        self.writes.values().map(BTreeMap::len).sum()
    }

    fn entry(&mut self, key: &str) -> Result<&mut Write> {
        let (c, i) = split_key(key)?;
        if !self.writes.contains_key(c) {
            self.writes.insert(c.to_owned(), BTreeMap::new());
        }
        let items = self.writes.get_mut(c).expect("inserted above");
        Ok(items.entry(ItemId::new(i)).or_insert_with(|| Write::Patch {
            fields: BTreeMap::new(),
            must_exist: false,
        }))
    }

    /// The writes in key order, as `((collection, id), write)`.
    pub(crate) fn into_writes(self) -> impl Iterator<Item = ((String, String), Write)> {
        self.writes.into_iter().flat_map(|(coll, items)| {
            items
                .into_iter()
                .map(move |(id, w)| ((coll.clone(), id.as_str().to_owned()), w))
        })
    }

    /// Replace the whole item at `key`.
    pub fn put(&mut self, key: &str, value: Map) -> Result<&mut Self> {
        value_check(&value)?;
        *self.entry(key)? = Write::Put(value);
        Ok(self)
    }

    /// Delete the item at `key`.
    pub fn delete(&mut self, key: &str) -> Result<&mut Self> {
        *self.entry(key)? = Write::Delete;
        Ok(self)
    }

    /// Change the given fields of an existing item (NotFound at commit if it does not exist).
    pub fn update(&mut self, key: &str, fields: Map) -> Result<&mut Self> {
        value_check(&fields)?;
        for (k, v) in fields {
            self.field(key, k.into(), FieldWrite::Assign(v), true)?;
        }
        Ok(self)
    }

    /// Record attachment `name` of the item at `key` (docs/design.md §6.7): its bytes must be
    /// stored by the host first. The item must exist at commit (`NotFound`). Not in the same
    /// transaction as a put or delete of the item (`InvalidValue`): a put resets attachments.
    pub fn attach(
        &mut self,
        key: &str,
        name: &str,
        a: &crate::attach::Attachment,
    ) -> Result<&mut Self> {
        crate::attach::validate_attachment_name(name)?;
        crate::attach::validate_media_type(&a.media_type)?;
        if a.size > crate::attach::MAX_ATTACHMENT_SIZE {
            return Err(crate::error::Error::invalid_value("size", "above 2^53 - 1"));
        }
        self.attachment_write(
            key,
            name,
            FieldWrite::Assign(crate::attach::descriptor_value(a)),
        )
    }

    /// Remove attachment `name` of the item at `key` (an unset of its field; the item must exist).
    pub fn detach(&mut self, key: &str, name: &str) -> Result<&mut Self> {
        crate::attach::validate_attachment_name(name)?;
        self.attachment_write(key, name, FieldWrite::Unset)
    }

    fn attachment_write(&mut self, key: &str, name: &str, w: FieldWrite) -> Result<&mut Self> {
        if matches!(self.entry(key)?, Write::Put(_) | Write::Delete) {
            return Err(crate::error::Error::invalid_value(
                key,
                "an attachment cannot change in the transaction that puts or deletes its item",
            ));
        }
        self.field(key, crate::attach::attachment_field(name), w, true)?;
        Ok(self)
    }

    /// Remove one field.
    pub fn unset(&mut self, key: &str, field: &str) -> Result<&mut Self> {
        crate::value::validate_field_name(field, field)?;
        self.field(key, field.to_owned(), FieldWrite::Unset, true)?;
        Ok(self)
    }

    /// Add elements to a set field (creating the set, or the item, if needed).
    pub fn set_add<I: IntoIterator<Item = S>, S: Into<String>>(
        &mut self,
        key: &str,
        field: &str,
        elems: I,
    ) -> Result<&mut Self> {
        self.set_edit(
            key,
            field,
            elems.into_iter().map(Into::into).collect(),
            BTreeSet::new(),
        )
    }

    /// Remove elements from a set field (only the adds this replica has seen: add-wins).
    pub fn set_remove<I: IntoIterator<Item = S>, S: Into<String>>(
        &mut self,
        key: &str,
        field: &str,
        elems: I,
    ) -> Result<&mut Self> {
        self.set_edit(
            key,
            field,
            BTreeSet::new(),
            elems.into_iter().map(Into::into).collect(),
        )
    }

    fn set_edit(
        &mut self,
        key: &str,
        field: &str,
        add: BTreeSet<String>,
        remove: BTreeSet<String>,
    ) -> Result<&mut Self> {
        crate::value::validate_field_name(field, field)?;
        self.field(
            key,
            field.to_owned(),
            FieldWrite::SetEdit { add, remove },
            false,
        )?;
        Ok(self)
    }

    fn field(&mut self, key: &str, name: String, w: FieldWrite, must_exist: bool) -> Result<()> {
        let entry = self.entry(key)?;
        match entry {
            Write::Put(m) => apply_to_map(m, name, w),
            Write::Delete => {
                let mut m = Map::new();
                apply_to_map(&mut m, name, w);
                *entry = Write::Put(m);
            }
            Write::Patch {
                fields,
                must_exist: me,
            } => {
                *me |= must_exist;
                match (fields.get_mut(&name), w) {
                    (
                        Some(FieldWrite::SetEdit { add, remove }),
                        FieldWrite::SetEdit {
                            add: a2,
                            remove: r2,
                        },
                    ) => {
                        for e in r2 {
                            add.remove(&e);
                            remove.insert(e);
                        }
                        for e in a2 {
                            add.insert(e);
                        }
                    }
                    (
                        Some(FieldWrite::Assign(Value::Set(s))),
                        FieldWrite::SetEdit { add, remove },
                    ) => {
                        // One pass, not one shift of the vector per removed element.
                        s.retain(|e| !remove.contains(e.as_str()));
                        s.extend(add);
                    }
                    (_, w) => {
                        fields.insert(name, w);
                    }
                }
            }
        }
        Ok(())
    }
}

/// Apply a field write to a whole-item value being put.
fn apply_to_map(m: &mut Map, name: String, w: FieldWrite) {
    match w {
        FieldWrite::Assign(v) => {
            m.insert(name.into(), v);
        }
        FieldWrite::Unset => {
            m.remove(&name);
        }
        FieldWrite::SetEdit { add, remove } => {
            let slot = m
                .entry(name.into())
                .or_insert_with(|| Value::Set(Set::new()));
            if !matches!(slot, Value::Set(_)) {
                *slot = Value::Set(Set::new());
            }
            if let Value::Set(s) = slot {
                s.retain(|e| !remove.contains(e.as_str()));
                s.extend(add);
            }
        }
    }
}

fn value_check(m: &Map) -> Result<()> {
    for (k, v) in m {
        crate::value::validate_field_name(k, k)?;
        v.validate(k)?;
    }
    Ok(())
}
