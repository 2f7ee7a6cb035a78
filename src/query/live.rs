//! Live queries: the full sorted match set in an order-statistics tree (a treap with subtree
//! sizes), so that the rank of any item, and the item at any rank, cost O(log n). A commit's
//! changes update the tree as they arrive; [`LiveQuery::flush`] then works out the window's
//! change set from the touched items plus the few untouched items that crossed a window edge.

use super::ast::Query;
use super::eval::{cmp_opt, CSort, Compiled};
use crate::value::{Map, Value};
use serde_json::{json, Value as J};
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

/// Identifies a live query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LiveId(pub u64);

/// What happened to a live query's rows (the window `offset..offset+limit` of its results)
/// since the last report. Positions are indexes into the new rows.
///
/// To update the previous rows (see [`LiveChange::apply`]): replace the values of `changed`
/// ids; remove the `removed` and `moved` ids; then insert `added` and `moved` rows at their
/// new positions in ascending order of position. Rows not mentioned keep their relative
/// order. `moved` rows always appear in `changed` too (their value changed).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LiveChange {
    /// (id, value, new position), ascending by position.
    pub added: Vec<(String, Map, usize)>,
    /// Ids that left the window.
    pub removed: Vec<String>,
    /// (id, value, new position) of rows that stayed in the window and were written to.
    pub changed: Vec<(String, Map, usize)>,
    /// (id, old position, new position) of rows that stayed but whose sort keys changed.
    pub moved: Vec<(String, usize, usize)>,
}

impl LiveChange {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.removed.is_empty()
            && self.changed.is_empty()
            && self.moved.is_empty()
    }

    /// `{"added":[{"id","value","pos"}],"removed":[id],"changed":[{"id","value","pos"}],
    /// "moved":[{"id","from","to"}]}`.
    pub fn to_json(&self) -> J {
        let rows = |v: &[(String, Map, usize)]| {
            J::Array(
                v.iter()
                    .map(|(id, m, pos)| json!({"id": id, "value": m, "pos": pos}))
                    .collect(),
            )
        };
        json!({
            "added": rows(&self.added),
            "removed": self.removed,
            "changed": rows(&self.changed),
            "moved": self.moved.iter()
                .map(|(id, from, to)| json!({"id": id, "from": from, "to": to}))
                .collect::<Vec<_>>(),
        })
    }

    /// Apply to the rows as they were before this change (what a client does).
    pub fn apply(&self, rows: &mut Vec<(String, Map)>) {
        let changed: HashMap<&str, &Map> = self
            .changed
            .iter()
            .map(|(id, m, _)| (id.as_str(), m))
            .collect();
        for (id, m) in rows.iter_mut() {
            if let Some(v) = changed.get(id.as_str()) {
                *m = (*v).clone();
            }
        }
        let removed: HashSet<&str> = self.removed.iter().map(String::as_str).collect();
        let moved: HashSet<&str> = self.moved.iter().map(|m| m.0.as_str()).collect();
        let mut moving: HashMap<String, Map> = HashMap::new();
        rows.retain_mut(|(id, m)| {
            if moved.contains(id.as_str()) {
                moving.insert(id.clone(), std::mem::take(m));
                false
            } else {
                !removed.contains(id.as_str())
            }
        });
        let mut ins: Vec<(usize, String, Map)> = self
            .added
            .iter()
            .map(|(id, m, p)| (*p, id.clone(), m.clone()))
            .collect();
        for (id, _, to) in &self.moved {
            let m = moving.remove(id).unwrap_or_default();
            ins.push((*to, id.clone(), m));
        }
        ins.sort_by_key(|x| x.0);
        for (p, id, m) in ins {
            let p = p.min(rows.len());
            rows.insert(p, (id, m));
        }
    }
}

/// A match's position key: its sort values and id. The first sort value is held inline so
/// that most comparisons touch no other memory.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct SEntry {
    pub first: Option<Value>,
    pub rest: Box<[Option<Value>]>,
    pub id: String,
}

impl SEntry {
    /// `keys` are the values of the sort keys, in order.
    #[cfg(test)]
    pub fn new(mut keys: Vec<Option<Value>>, id: String) -> SEntry {
        let first = if keys.is_empty() {
            None
        } else {
            keys.remove(0)
        };
        SEntry {
            first,
            rest: keys.into_boxed_slice(),
            id,
        }
    }
}

const NIL: u32 = u32::MAX;

#[derive(Debug, Clone)]
struct Node {
    e: SEntry,
    v: Map,
    prio: u32,
    size: u32,
    l: u32,
    r: u32,
}

/// An order-statistics treap over (sort entry -> row value).
#[derive(Debug, Clone)]
pub(crate) struct OrderTree {
    nodes: Vec<Node>,
    free: Vec<u32>,
    root: u32,
    desc: Box<[bool]>,
    rng: u64,
}

impl OrderTree {
    pub fn new(desc: Box<[bool]>) -> OrderTree {
        OrderTree {
            nodes: Vec::new(),
            free: Vec::new(),
            root: NIL,
            desc,
            rng: 0x9E37_79B9_7F4A_7C15,
        }
    }

    /// Build from entries already in order.
    pub fn from_sorted(desc: Box<[bool]>, items: Vec<(SEntry, Map)>) -> OrderTree {
        let mut t = OrderTree::new(desc);
        let n = items.len();
        let mut prios: Vec<u32> = (0..n).map(|_| t.next_prio()).collect();
        prios.sort_unstable_by(|a, b| b.cmp(a));
        t.nodes = items
            .into_iter()
            .map(|(e, v)| Node {
                e,
                v,
                prio: 0,
                size: 1,
                l: NIL,
                r: NIL,
            })
            .collect();
        t.root = t.build(0, n);
        // Heap-order the priorities: breadth first gets the largest.
        let mut queue = std::collections::VecDeque::new();
        if t.root != NIL {
            queue.push_back(t.root);
        }
        let mut i = 0;
        while let Some(x) = queue.pop_front() {
            t.nodes[x as usize].prio = prios[i];
            i += 1;
            for c in [t.nodes[x as usize].l, t.nodes[x as usize].r] {
                if c != NIL {
                    queue.push_back(c);
                }
            }
        }
        t
    }

    fn build(&mut self, lo: usize, hi: usize) -> u32 {
        if lo >= hi {
            return NIL;
        }
        let mid = lo + (hi - lo) / 2;
        let l = self.build(lo, mid);
        let r = self.build(mid + 1, hi);
        let n = &mut self.nodes[mid];
        n.l = l;
        n.r = r;
        n.size = (hi - lo) as u32;
        mid as u32
    }

    fn next_prio(&mut self) -> u32 {
        // xorshift64*
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        (self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) as u32
    }

    #[inline]
    pub fn cmp(&self, a: &SEntry, b: &SEntry) -> Ordering {
        if let Some(&desc) = self.desc.first() {
            let o = cmp_opt(a.first.as_ref(), b.first.as_ref());
            if o != Ordering::Equal {
                return if desc { o.reverse() } else { o };
            }
            for (i, (x, y)) in a.rest.iter().zip(b.rest.iter()).enumerate() {
                let o = cmp_opt(x.as_ref(), y.as_ref());
                if o != Ordering::Equal {
                    return if self.desc[i + 1] { o.reverse() } else { o };
                }
            }
        }
        a.id.cmp(&b.id)
    }

    pub fn len(&self) -> usize {
        self.sz(self.root) as usize
    }

    #[inline]
    fn sz(&self, t: u32) -> u32 {
        if t == NIL {
            0
        } else {
            self.nodes[t as usize].size
        }
    }

    #[inline]
    fn upd(&mut self, t: u32) {
        let (l, r) = (self.nodes[t as usize].l, self.nodes[t as usize].r);
        self.nodes[t as usize].size = 1 + self.sz(l) + self.sz(r);
    }

    /// Split `t` into (< e, >= e).
    fn split(&mut self, t: u32, e: &SEntry) -> (u32, u32) {
        if t == NIL {
            return (NIL, NIL);
        }
        if self.cmp(&self.nodes[t as usize].e, e) == Ordering::Less {
            let (a, b) = self.split(self.nodes[t as usize].r, e);
            self.nodes[t as usize].r = a;
            self.upd(t);
            (t, b)
        } else {
            let (a, b) = self.split(self.nodes[t as usize].l, e);
            self.nodes[t as usize].l = b;
            self.upd(t);
            (a, t)
        }
    }

    fn merge(&mut self, a: u32, b: u32) -> u32 {
        if a == NIL {
            return b;
        }
        if b == NIL {
            return a;
        }
        if self.nodes[a as usize].prio > self.nodes[b as usize].prio {
            let r = self.merge(self.nodes[a as usize].r, b);
            self.nodes[a as usize].r = r;
            self.upd(a);
            a
        } else {
            let l = self.merge(a, self.nodes[b as usize].l);
            self.nodes[b as usize].l = l;
            self.upd(b);
            b
        }
    }

    fn alloc(&mut self, e: SEntry, v: Map, prio: u32) -> u32 {
        let node = Node {
            e,
            v,
            prio,
            size: 1,
            l: NIL,
            r: NIL,
        };
        match self.free.pop() {
            Some(i) => {
                self.nodes[i as usize] = node;
                i
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        }
    }

    /// Insert (the entry must not be present).
    pub fn insert(&mut self, e: SEntry, v: Map) {
        let prio = self.next_prio();
        self.root = self.ins(self.root, e, v, prio);
    }

    fn ins(&mut self, t: u32, e: SEntry, v: Map, prio: u32) -> u32 {
        if t == NIL {
            return self.alloc(e, v, prio);
        }
        if prio > self.nodes[t as usize].prio {
            let (a, b) = self.split(t, &e);
            let n = self.alloc(e, v, prio);
            self.nodes[n as usize].l = a;
            self.nodes[n as usize].r = b;
            self.upd(n);
            return n;
        }
        if self.cmp(&e, &self.nodes[t as usize].e) == Ordering::Less {
            let c = self.ins(self.nodes[t as usize].l, e, v, prio);
            self.nodes[t as usize].l = c;
        } else {
            let c = self.ins(self.nodes[t as usize].r, e, v, prio);
            self.nodes[t as usize].r = c;
        }
        self.upd(t);
        t
    }

    /// Remove an entry, returning its value.
    pub fn remove(&mut self, e: &SEntry) -> Option<Map> {
        let (root, v) = self.rm(self.root, e);
        self.root = root;
        v
    }

    fn rm(&mut self, t: u32, e: &SEntry) -> (u32, Option<Map>) {
        if t == NIL {
            return (NIL, None);
        }
        match self.cmp(e, &self.nodes[t as usize].e) {
            Ordering::Equal => {
                let (l, r) = (self.nodes[t as usize].l, self.nodes[t as usize].r);
                let m = self.merge(l, r);
                let node = &mut self.nodes[t as usize];
                let v = std::mem::take(&mut node.v);
                node.e = SEntry::default();
                self.free.push(t);
                (m, Some(v))
            }
            Ordering::Less => {
                let (c, v) = self.rm(self.nodes[t as usize].l, e);
                self.nodes[t as usize].l = c;
                if v.is_some() {
                    self.upd(t);
                }
                (t, v)
            }
            Ordering::Greater => {
                let (c, v) = self.rm(self.nodes[t as usize].r, e);
                self.nodes[t as usize].r = c;
                if v.is_some() {
                    self.upd(t);
                }
                (t, v)
            }
        }
    }

    fn find(&self, e: &SEntry) -> u32 {
        let mut t = self.root;
        while t != NIL {
            match self.cmp(e, &self.nodes[t as usize].e) {
                Ordering::Equal => return t,
                Ordering::Less => t = self.nodes[t as usize].l,
                Ordering::Greater => t = self.nodes[t as usize].r,
            }
        }
        NIL
    }

    pub fn get(&self, e: &SEntry) -> Option<&Map> {
        let t = self.find(e);
        (t != NIL).then(|| &self.nodes[t as usize].v)
    }

    pub fn get_mut(&mut self, e: &SEntry) -> Option<&mut Map> {
        let t = self.find(e);
        (t != NIL).then(|| &mut self.nodes[t as usize].v)
    }

    /// Number of entries strictly before `e`.
    pub fn rank(&self, e: &SEntry) -> usize {
        let mut t = self.root;
        let mut r = 0usize;
        while t != NIL {
            let n = &self.nodes[t as usize];
            if self.cmp(&n.e, e) == Ordering::Less {
                r += self.sz(n.l) as usize + 1;
                t = n.r;
            } else {
                t = n.l;
            }
        }
        r
    }

    /// Visit entries with ranks in `start..end` in order.
    pub fn visit(&self, start: usize, end: usize, f: &mut dyn FnMut(usize, &SEntry, &Map)) {
        self.visit_at(self.root, 0, start, end, f);
    }

    fn visit_at(
        &self,
        t: u32,
        base: usize,
        start: usize,
        end: usize,
        f: &mut dyn FnMut(usize, &SEntry, &Map),
    ) {
        if t == NIL || start >= end {
            return;
        }
        let n = &self.nodes[t as usize];
        let here = base + self.sz(n.l) as usize;
        if start < here {
            self.visit_at(n.l, base, start, end, f);
        }
        if start <= here && here < end {
            f(here, &n.e, &n.v);
        }
        if end > here + 1 {
            self.visit_at(n.r, here + 1, start, end, f);
        }
    }

    /// Every entry in order (for verification).
    pub fn entries(&self) -> Vec<(&SEntry, &Map)> {
        let mut out = Vec::with_capacity(self.len());
        fn walk<'a>(t: &'a OrderTree, x: u32, out: &mut Vec<(&'a SEntry, &'a Map)>) {
            if x == NIL {
                return;
            }
            let n = &t.nodes[x as usize];
            walk(t, n.l, out);
            out.push((&n.e, &n.v));
            walk(t, n.r, out);
        }
        walk(self, self.root, &mut out);
        out
    }
}

/// The first and latest state of an item touched since the last flush.
#[derive(Debug, Clone)]
struct Touch {
    /// Its entry when the batch began (if it matched).
    old: Option<SEntry>,
    /// Its entry now (if it matches).
    new: Option<SEntry>,
}

/// One subscribed query.
#[derive(Debug, Clone)]
pub(crate) struct LiveQuery {
    pub query: Query,
    pub compiled: Compiled,
    pub tree: OrderTree,
    touched: HashMap<String, Touch>,
}

impl LiveQuery {
    pub fn new(query: Query, compiled: Compiled, matches: Vec<(SEntry, Map)>) -> LiveQuery {
        let desc: Box<[bool]> = compiled.sort.iter().map(|k| k.desc).collect();
        let mut matches = matches;
        let probe = OrderTree::new(desc.clone());
        matches.sort_by(|a, b| probe.cmp(&a.0, &b.0));
        LiveQuery {
            query,
            compiled,
            tree: OrderTree::from_sorted(desc, matches),
            touched: HashMap::new(),
        }
    }

    pub fn entry(compiled: &Compiled, id: &str, m: &Map) -> SEntry {
        let key = |k: &CSort| k.path.get(m).cloned();
        SEntry {
            first: compiled.sort.first().and_then(key),
            rest: compiled.sort.iter().skip(1).map(key).collect(),
            id: id.to_string(),
        }
    }

    fn window(&self) -> (usize, usize) {
        let o = self.query.offset;
        (
            o,
            self.query.limit.map_or(usize::MAX, |l| o.saturating_add(l)),
        )
    }

    /// The current rows.
    pub fn rows(&self) -> Vec<(String, Map)> {
        let (start, end) = self.window();
        let mut out = Vec::new();
        self.tree.visit(start, end, &mut |_, e, m| {
            out.push((e.id.clone(), m.clone()))
        });
        out
    }

    /// Apply one item's change to the match set.
    pub fn changed(&mut self, id: &str, old: Option<&Map>, new: Option<&Map>) {
        let c = &self.compiled;
        let old_e = old
            .filter(|m| c.accept(id, m))
            .map(|m| Self::entry(c, id, m));
        let new_m = new.filter(|m| c.accept(id, m));
        let new_e = new_m.map(|m| Self::entry(c, id, m));
        if old_e.is_none() && new_e.is_none() {
            return;
        }
        let value = new_m.map(|m| c.project(m));
        match (&old_e, &new_e, value) {
            (Some(o), Some(n), Some(v)) if self.tree.cmp(o, n) == Ordering::Equal => {
                match self.tree.get_mut(o) {
                    Some(slot) => {
                        if *slot == v {
                            return; // nothing visible changed (e.g. an unselected field)
                        }
                        *slot = v;
                    }
                    None => self.tree.insert(n.clone(), v),
                }
            }
            (_, _, v) => {
                if let Some(o) = &old_e {
                    self.tree.remove(o);
                }
                if let (Some(n), Some(v)) = (&new_e, v) {
                    self.tree.insert(n.clone(), v);
                }
            }
        }
        match self.touched.get_mut(id) {
            Some(t) => t.new = new_e,
            None => {
                self.touched.insert(
                    id.to_string(),
                    Touch {
                        old: old_e,
                        new: new_e,
                    },
                );
            }
        }
    }

    /// The change set of the window since the last flush, if anything changed.
    pub fn flush(&mut self) -> Option<LiveChange> {
        if self.touched.is_empty() {
            return None;
        }
        let touched = std::mem::take(&mut self.touched);
        let tree = &self.tree;
        let cmp = |a: &&SEntry, b: &&SEntry| tree.cmp(a, b);
        let mut olds: Vec<&SEntry> = touched.values().filter_map(|t| t.old.as_ref()).collect();
        let mut news: Vec<&SEntry> = touched.values().filter_map(|t| t.new.as_ref()).collect();
        olds.sort_by(cmp);
        news.sort_by(cmp);
        let less = |v: &[&SEntry], e: &SEntry| v.partition_point(|x| tree.cmp(x, e).is_lt());
        // The old tree is (new tree - news) + olds: translate a new-tree rank into an old one.
        let old_rank = |e: &SEntry, new_rank: usize| new_rank + less(&olds, e) - less(&news, e);
        let (start, end) = self.window();
        let inw = |r: usize| r >= start && r < end;
        let mut ch = LiveChange::default();
        for (id, t) in &touched {
            let before = t
                .old
                .as_ref()
                .map(|e| old_rank(e, tree.rank(e)))
                .filter(|r| inw(*r));
            let after = t
                .new
                .as_ref()
                .map(|e| (e, tree.rank(e)))
                .filter(|r| inw(r.1));
            match (before, after) {
                (Some(from), Some((e, to))) => {
                    let v = tree.get(e).cloned().unwrap_or_default();
                    ch.changed.push((id.clone(), v, to - start));
                    if tree.cmp(t.old.as_ref().unwrap(), e) != Ordering::Equal {
                        ch.moved.push((id.clone(), from - start, to - start));
                    }
                }
                (Some(_), None) => ch.removed.push(id.clone()),
                (None, Some((e, to))) => {
                    let v = tree.get(e).cloned().unwrap_or_default();
                    ch.added.push((id.clone(), v, to - start));
                }
                (None, None) => {}
            }
        }
        // Untouched items shift by at most `t` ranks: only those near a window edge can cross.
        let t = touched.len();
        let n = tree.len();
        let mut spans = Vec::new();
        if start > 0 {
            spans.push((start.saturating_sub(t), start.saturating_add(t).min(n)));
        }
        if end != usize::MAX {
            spans.push((end.saturating_sub(t), end.saturating_add(t).min(n)));
        }
        if spans.len() == 2 && spans[1].0 < spans[0].1 {
            spans = vec![(spans[0].0, spans[1].1)];
        }
        for (a, b) in spans {
            tree.visit(a, b, &mut |new_rank, e, v| {
                if touched.contains_key(&e.id) {
                    return;
                }
                let was = inw(old_rank(e, new_rank));
                let is = inw(new_rank);
                if was && !is {
                    ch.removed.push(e.id.clone());
                } else if is && !was {
                    ch.added.push((e.id.clone(), v.clone(), new_rank - start));
                }
            });
        }
        ch.added.sort_by_key(|x| x.2);
        ch.changed.sort_by_key(|x| x.2);
        ch.moved.sort_by_key(|x| x.2);
        ch.removed.sort();
        (!ch.is_empty()).then_some(ch)
    }
}
