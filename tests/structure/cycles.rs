//! The import graph of a crate and its cycles.
//!
//! A node is a module file; an edge `a → b` is a path in `a` that names `b` or an item of `b`
//! (followed through `use` re-exports to the module that defines it). Cycles are looked for
//! among siblings, at every level of the tree: under a module `p`, each child of `p` stands for
//! itself and everything below it, and `x → y` when anything in `x` names anything in `y`. So
//! a cycle is found wherever it runs (between two files, or between two folders through any of
//! their files), while a module and its own children are one unit and may name each other: the
//! parent declares and re-exports them, they extend its types.

use crate::scan::{Crate, ModPath};
use std::collections::BTreeMap;
use std::fmt::Write;

/// An edge between two modules, with the first place that makes it.
#[derive(Clone)]
pub struct Edge {
    pub from: ModPath,
    pub to: ModPath,
    pub file: String,
    pub line: usize,
}

/// Every edge of a crate, one per (from, to) pair (the first reference found).
pub fn edges(k: &Crate) -> Vec<Edge> {
    let mut out: BTreeMap<(ModPath, ModPath), Edge> = BTreeMap::new();
    for (from, m) in &k.modules {
        for r in &m.references {
            let Some(to) = resolve(k, &r.path, 8) else {
                continue;
            };
            if &to != from {
                out.entry((from.clone(), to.clone()))
                    .or_insert_with(|| Edge {
                        from: from.clone(),
                        to,
                        file: m.file.display().to_string(),
                        line: r.line,
                    });
            }
        }
    }
    out.into_values().collect()
}

/// The module that defines what `path` names: the longest prefix that is a module, followed
/// through that module's `use` when the next segment is a name it imports. `None` when it is
/// another crate's.
fn resolve(k: &Crate, path: &[String], hops: usize) -> Option<ModPath> {
    let mut n = path.len();
    while n > 0 && !k.modules.contains_key(&path[..n]) {
        n -= 1;
    }
    let module = path[..n].to_vec();
    if n == path.len() || hops == 0 {
        return Some(module);
    }
    match k.modules[&module].imports.get(&path[n]) {
        Some(Some(target)) if target.as_slice() != &path[..=n] => {
            let mut p = target.clone();
            p.extend_from_slice(&path[n + 1..]);
            resolve(k, &p, hops - 1)
        }
        Some(None) => None,
        _ => Some(module),
    }
}

pub fn name(p: &[String]) -> String {
    if p.is_empty() {
        "crate".to_string()
    } else {
        p.join("::")
    }
}

/// The cycles of a crate, one description per strongly connected group of siblings.
pub fn cycles(k: &Crate) -> Vec<String> {
    let all = edges(k);
    let mut out = Vec::new();
    for parent in k.modules.keys() {
        let units: Vec<ModPath> = k
            .modules
            .keys()
            .filter(|m| m.len() == parent.len() + 1 && m.starts_with(parent))
            .cloned()
            .collect();
        let unit_of = |m: &ModPath| -> Option<usize> {
            if m.len() <= parent.len() || !m.starts_with(parent) {
                return None;
            }
            units.iter().position(|u| m[..=parent.len()] == u[..])
        };
        let mut graph: BTreeMap<(usize, usize), Edge> = BTreeMap::new();
        for e in &all {
            if let (Some(a), Some(b)) = (unit_of(&e.from), unit_of(&e.to)) {
                if a != b {
                    graph.entry((a, b)).or_insert_with(|| e.clone());
                }
            }
        }
        for group in strongly_connected(units.len(), &graph) {
            out.push(describe(k, parent, &units, &group, &graph));
        }
    }
    out
}

/// One cycle through the group, each step with the reference that makes it.
fn describe(
    k: &Crate,
    parent: &ModPath,
    units: &[ModPath],
    group: &[usize],
    graph: &BTreeMap<(usize, usize), Edge>,
) -> String {
    let members: Vec<String> = group.iter().map(|&u| name(&units[u])).collect();
    let mut s = format!("{}: {{{}}}", k.name, members.join(", "));
    let _ = write!(s, " (siblings under `{}`)", name(parent));
    let cycle = cycle_through(group, graph);
    let rest = graph
        .keys()
        .filter(|(a, b)| group.contains(a) && group.contains(b) && !cycle.contains(&(*a, *b)));
    s.push_str("\n  a cycle:");
    for (i, &(a, b)) in cycle.iter().chain(rest).enumerate() {
        if i == cycle.len() {
            s.push_str("\n  and the group's other steps:");
        }
        let e = &graph[&(a, b)];
        let _ = write!(
            s,
            "\n    {} → {}   ({}:{}: {} names {})",
            name(&units[a]),
            name(&units[b]),
            e.file,
            e.line,
            name(&e.from),
            name(&e.to)
        );
    }
    s
}

/// A shortest cycle through the group's first member (breadth-first search back to it).
fn cycle_through(group: &[usize], graph: &BTreeMap<(usize, usize), Edge>) -> Vec<(usize, usize)> {
    let start = group[0];
    let mut prev: BTreeMap<usize, usize> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(a) = queue.pop_front() {
        for &(x, b) in graph.keys() {
            if x != a || !group.contains(&b) {
                continue;
            }
            if b == start {
                let mut steps = vec![(a, start)];
                let mut at = a;
                while at != start {
                    let p = prev[&at];
                    steps.push((p, at));
                    at = p;
                }
                steps.reverse();
                return steps;
            }
            if let std::collections::btree_map::Entry::Vacant(v) = prev.entry(b) {
                v.insert(a);
                queue.push_back(b);
            }
        }
    }
    Vec::new()
}

/// Tarjan's strongly connected components of more than one node.
fn strongly_connected(n: usize, graph: &BTreeMap<(usize, usize), Edge>) -> Vec<Vec<usize>> {
    struct T<'a> {
        graph: &'a BTreeMap<(usize, usize), Edge>,
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(t: &mut T<'_>, v: usize) {
        t.index[v] = Some(t.next);
        t.low[v] = t.next;
        t.next += 1;
        t.stack.push(v);
        t.on_stack[v] = true;
        let succ: Vec<usize> = t
            .graph
            .keys()
            .filter(|(a, _)| *a == v)
            .map(|(_, b)| *b)
            .collect();
        for w in succ {
            match t.index[w] {
                None => {
                    visit(t, w);
                    t.low[v] = t.low[v].min(t.low[w]);
                }
                Some(i) if t.on_stack[w] => t.low[v] = t.low[v].min(i),
                _ => {}
            }
        }
        if Some(t.low[v]) == t.index[v] {
            let mut group = Vec::new();
            loop {
                let w = t.stack.pop().expect("v is on the stack");
                t.on_stack[w] = false;
                group.push(w);
                if w == v {
                    break;
                }
            }
            if group.len() > 1 {
                group.sort();
                t.out.push(group);
            }
        }
    }
    let mut t = T {
        graph,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if t.index[v].is_none() {
            visit(&mut t, v);
        }
    }
    t.out
}
