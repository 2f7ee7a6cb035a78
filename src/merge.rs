//! The merge rules: how a write of a commit changes an item (`item.rs`).
//!
//! Merge rule (docs/design.md, "Merge rule"): every write carries the [`Stamp`] of its commit.
//! - `Put` and `Delete` are item-level resets: they act as an assignment at their stamp to every
//!   field of the item (absent for the fields a put does not name, and for all fields of a
//!   delete), including fields this replica has not seen yet. A field write older than the
//!   newest reset is ignored.
//! - Field assignments are last-writer-wins by stamp.
//! - Set fields merge per element, add-wins: each element keeps the stamps ("dots") of the adds
//!   that put it there; a remove deletes only the dots its writer had observed, so a concurrent
//!   add survives. An assignment at stamp `s` keeps only dots newer than `s`; when a scalar
//!   assignment is older than a set add, the field is a set.
//! - An item is deleted when its newest write of any kind is a delete.
//!
//! Each rule is a function of the set of writes, not of their order, so replicas holding the same
//! commits hold the same state. Commits are applied in causal order (parents first), which the
//! remove-by-observed-dots rule relies on.

use crate::commit::{FieldOp, Op, Stamp};
use crate::item::{expand, stamp_of, FieldMeta, Item, StampRef};
use crate::value::{Map, Name, Value};
use std::collections::{BTreeMap, BTreeSet};

/// A write handed to [`Item::apply`]: borrowed (the caller keeps the commit) or owned (the
/// commit is consumed, its values move into the state).
pub(crate) enum OpIn<'a> {
    #[cfg_attr(not(any(test, feature = "testing")), allow(dead_code))]
    Borrowed(&'a Op),
    Owned(Op),
}

impl OpIn<'_> {
    fn as_ref(&self) -> &Op {
        match self {
            OpIn::Borrowed(op) => op,
            OpIn::Owned(op) => op,
        }
    }
}

impl Item {
    /// Drop explicit metadata when `value` implies it.
    fn normalize(&mut self, reset: Stamp) {
        let Some(m) = &self.meta else { return };
        let implied = m.len() == self.value.len()
            && m.iter().all(|(k, fm)| {
                fm.stamp == reset
                    && fm.top == reset
                    && match (self.value.get(k), &fm.dots) {
                        (Some(Value::Set(s)), Some(d)) => {
                            s.len() == d.len() && d.values().all(|ds| ds == &[reset])
                        }
                        (Some(Value::Set(_)), None) | (None, _) => false,
                        (Some(_), d) => d.is_none(),
                    }
            });
        if implied {
            self.meta = None;
        }
    }

    /// Apply a write of the commit `r` (whose stamp is `s`; `stamps` is the table `r` and the
    /// item's references point into). An owned `op` is moved into the item instead of cloned
    /// (the common put of a new item then costs no allocation).
    pub(crate) fn apply(&mut self, op: OpIn<'_>, s: Stamp, r: StampRef, stamps: &[Stamp]) {
        let op_ref = op.as_ref();
        if s > stamp_of(stamps, self.last) {
            self.last = r;
        }
        let old_reset = stamp_of(stamps, self.reset);
        match op_ref {
            Op::Put(_) | Op::Delete => {
                if s < old_reset {
                    return;
                }
                self.reset = r;
                self.reset_is_delete = matches!(op_ref, Op::Delete);
                if self.meta.is_none() {
                    // Every field is at the old reset < s: all of it goes. A put replaces the
                    // whole value: move it in when we own it.
                    match op {
                        OpIn::Owned(Op::Put(m)) => self.value = m,
                        OpIn::Borrowed(Op::Put(m)) => self.value = m.clone(),
                        _ => self.value.clear(),
                    }
                    return;
                }
                // The metadata is expanded at the old reset; the new one is `s`.
                let mut meta = expand(self.meta.as_deref(), &self.value, old_reset);
                let names: Vec<Name> = meta.keys().cloned().collect();
                // Last field first: each removal from the sorted vector then shifts only the
                // fields after it that survived (set elements added after the reset), instead of
                // the whole rest of the item. Fields are independent; the order is free.
                for n in names.into_iter().rev() {
                    assign(&mut self.value, &mut meta, &n, None, s, s);
                }
                if let Op::Put(m) = op_ref {
                    for (k, v) in m {
                        assign(&mut self.value, &mut meta, k, Some(v), s, s);
                    }
                }
                self.meta = Some(Box::new(meta));
                self.normalize(s);
            }
            Op::Patch(p) => {
                let mut meta = expand(self.meta.as_deref(), &self.value, old_reset);
                for (k, fop) in p {
                    match fop {
                        FieldOp::Assign(v) => {
                            assign(&mut self.value, &mut meta, k, Some(v), s, old_reset)
                        }
                        FieldOp::Unset => assign(&mut self.value, &mut meta, k, None, s, old_reset),
                        FieldOp::SetEdit { add, remove } => {
                            set_edit(&mut self.value, &mut meta, k, add, remove, s, old_reset)
                        }
                    }
                }
                self.meta = Some(Box::new(meta));
                self.normalize(old_reset);
            }
        }
    }
}

/// Assign `v` (None = absent) to field `k` at stamp `s`.
///
/// Per field, with `clear` = the newest assignment (resets count) and `top` = the newest write
/// of any kind: the field's kind (scalar or set) is the kind of `top`; set elements are the
/// add dots at or after `clear` that no remove observed. Each is a max over the set of
/// writes, so the result does not depend on the order writes arrive in.
fn assign(
    value: &mut Map,
    meta: &mut BTreeMap<Name, FieldMeta>,
    k: &str,
    v: Option<&Value>,
    s: Stamp,
    reset: Stamp,
) {
    let (clear, top) = meta
        .get(k)
        .map_or((reset, reset), |m| (m.stamp.max(reset), m.top.max(reset)));
    if s < clear {
        return;
    }
    let old_dots = meta.get_mut(k).and_then(|m| m.dots.take());
    let mut dots = None;
    if s >= top {
        // This assignment is the newest write (or the put half of a reset at the same stamp):
        // it decides the kind.
        if let Some(Value::Set(elems)) = v {
            dots = Some(elems.iter().map(|e| (e.clone(), vec![s])).collect());
        }
    } else {
        // A newer set add exists: the field stays a set; this assignment only clears the
        // elements added before it (and contributes its own, if it assigns a set).
        let mut d: BTreeMap<Name, Vec<Stamp>> = old_dots.unwrap_or_default();
        d.retain(|_, ds| {
            ds.retain(|x| *x > s);
            !ds.is_empty()
        });
        if let Some(Value::Set(elems)) = v {
            for e in elems {
                let ds = d.entry(e.clone()).or_default();
                ds.push(s);
                ds.sort();
            }
        }
        dots = Some(d);
    }
    match (&dots, v) {
        (Some(d), _) => {
            value.insert(Name::new(k), Value::Set(d.keys().cloned().collect()));
        }
        (None, Some(v)) => {
            value.insert(Name::new(k), v.clone());
        }
        (None, None) => {
            value.remove(k);
        }
    }
    meta.insert(
        Name::new(k),
        FieldMeta {
            stamp: s,
            top: top.max(s),
            dots,
        },
    );
}

fn set_edit(
    value: &mut Map,
    meta: &mut BTreeMap<Name, FieldMeta>,
    k: &str,
    add: &BTreeSet<String>,
    remove: &BTreeMap<String, Vec<Stamp>>,
    s: Stamp,
    reset: Stamp,
) {
    let fm = meta.entry(Name::new(k)).or_insert(FieldMeta {
        stamp: Stamp::ZERO,
        top: Stamp::ZERO,
        dots: None,
    });
    if let Some(d) = &mut fm.dots {
        for (e, observed) in remove {
            if let Some(ds) = d.get_mut(e.as_str()) {
                ds.retain(|x| !observed.contains(x));
                if ds.is_empty() {
                    d.remove(e.as_str());
                }
            }
        }
    }
    if !add.is_empty() && s >= fm.stamp.max(reset) {
        if s > fm.top.max(reset) {
            // The newest write is a set add: the field is a set from here on.
            fm.top = s;
            if fm.dots.is_none() {
                fm.dots = Some(BTreeMap::new());
            }
        }
        // Otherwise `top` is itself a set write (an assignment newer than `stamp` would
        // have raised `stamp`), so `dots` is already `Some`.
        let d = fm.dots.get_or_insert_with(BTreeMap::new);
        for e in add {
            let ds = d.entry(Name::new(e)).or_default();
            if !ds.contains(&s) {
                ds.push(s);
                ds.sort();
            }
        }
    }
    match &fm.dots {
        Some(d) => {
            value.insert(Name::new(k), Value::Set(d.keys().cloned().collect()));
        }
        None => {
            // Only removes against a non-set field: nothing changes. Drop an empty placeholder.
            if fm.stamp == Stamp::ZERO && fm.top == Stamp::ZERO && !value.contains_key(k) {
                meta.remove(k);
            }
        }
    }
}
