//! The `text` index (`text.rs` tokenizes): an inverted index from folded terms to the items
//! holding them, with term frequencies and value lengths for BM25 ranking (k1 = 1.2, b = 0.75).

use super::eval::CPath;
use super::text::{for_each_token, Search};
use crate::state::Collection;
use crate::value::{Map, Value};
use std::collections::{BTreeMap, HashMap};

const K1: f32 = 1.2;
const B: f32 = 0.75;

/// Items holding one term, by ordinal (ascending), with the term's frequency in each.
#[derive(Debug, Clone, Default, PartialEq)]
struct Posting {
    ords: Vec<u32>,
    tfs: Vec<u32>,
}

impl Posting {
    fn insert(&mut self, ord: u32, tf: u32) {
        if self.ords.last().is_none_or(|l| *l < ord) {
            self.ords.push(ord);
            self.tfs.push(tf);
            return;
        }
        match self.ords.binary_search(&ord) {
            Ok(i) => self.tfs[i] = tf,
            Err(i) => {
                self.ords.insert(i, ord);
                self.tfs.insert(i, tf);
            }
        }
    }

    fn remove(&mut self, ord: u32) {
        if let Ok(i) = self.ords.binary_search(&ord) {
            self.ords.remove(i);
            self.tfs.remove(i);
        }
    }

    fn tf(&self, ord: u32) -> Option<u32> {
        self.ords.binary_search(&ord).ok().map(|i| self.tfs[i])
    }
}

/// A `text` index on one path: every item whose value there is a string, by its terms.
#[derive(Debug, Clone)]
pub(crate) struct TextIndex {
    pub path: String,
    cpath: CPath,
    terms: BTreeMap<Box<str>, Posting>,
    /// Item id -> ordinal.
    ords: HashMap<Box<str>, u32>,
    /// Ordinal -> (id, number of tokens); `None` for a free ordinal.
    docs: Vec<Option<(Box<str>, u32)>>,
    free: Vec<u32>,
    total_len: u64,
}

/// The distinct tokens of `s` and their counts, and the number of tokens.
fn term_counts(s: &str, buf: &mut String) -> (Vec<(String, u32)>, u32) {
    let mut toks: Vec<String> = Vec::new();
    for_each_token(s, buf, |t| toks.push(t.to_string()));
    let n = toks.len() as u32;
    toks.sort_unstable();
    let mut out: Vec<(String, u32)> = Vec::with_capacity(toks.len());
    for t in toks {
        match out.last_mut() {
            Some((l, c)) if *l == t => *c += 1,
            _ => out.push((t, 1)),
        }
    }
    (out, n)
}

fn text_of<'a>(cpath: &CPath, m: &'a Map) -> Option<&'a str> {
    match cpath.get(m) {
        Some(Value::String(s)) => Some(s.as_str()),
        _ => None,
    }
}

impl TextIndex {
    pub fn new(path: &str) -> TextIndex {
        TextIndex {
            path: path.to_string(),
            cpath: CPath::new(path),
            terms: BTreeMap::new(),
            ords: HashMap::new(),
            docs: Vec::new(),
            free: Vec::new(),
            total_len: 0,
        }
    }

    /// The index of `path` over the visible items of `coll` (loaded whole).
    pub fn build(path: &str, coll: Option<&Collection>) -> TextIndex {
        let mut ix = TextIndex::new(path);
        let mut buf = String::new();
        if let Some(c) = coll {
            for (id, m) in c.iter() {
                if let Some(s) = text_of(&ix.cpath, m) {
                    ix.add(id, s, &mut buf);
                }
            }
        }
        ix
    }

    /// Number of items indexed.
    pub fn count(&self) -> usize {
        self.ords.len()
    }

    fn add(&mut self, id: &str, s: &str, buf: &mut String) {
        let (counts, n) = term_counts(s, buf);
        let ord = match self.free.pop() {
            Some(o) => {
                self.docs[o as usize] = Some((id.into(), n));
                o
            }
            None => {
                self.docs.push(Some((id.into(), n)));
                (self.docs.len() - 1) as u32
            }
        };
        self.ords.insert(id.into(), ord);
        self.total_len += n as u64;
        for (t, tf) in counts {
            match self.terms.get_mut(t.as_str()) {
                Some(p) => p.insert(ord, tf),
                None => {
                    self.terms.insert(
                        t.into_boxed_str(),
                        Posting {
                            ords: vec![ord],
                            tfs: vec![tf],
                        },
                    );
                }
            }
        }
    }

    fn remove(&mut self, id: &str, s: &str, buf: &mut String) {
        let Some(ord) = self.ords.remove(id) else {
            return;
        };
        let (counts, n) = term_counts(s, buf);
        for (t, _) in counts {
            if let Some(p) = self.terms.get_mut(t.as_str()) {
                p.remove(ord);
                if p.ords.is_empty() {
                    self.terms.remove(t.as_str());
                }
            }
        }
        self.total_len -= n as u64;
        self.docs[ord as usize] = None;
        self.free.push(ord);
    }

    /// Apply one item's change (`None` = absent or deleted).
    pub fn changed(&mut self, id: &str, old: Option<&Map>, new: Option<&Map>) {
        let os = old.and_then(|m| text_of(&self.cpath, m));
        let ns = new.and_then(|m| text_of(&self.cpath, m));
        if os == ns {
            return;
        }
        let mut buf = String::new();
        if let Some(s) = os {
            self.remove(id, s, &mut buf);
        }
        if let Some(s) = ns {
            self.add(id, s, &mut buf);
        }
    }

    /// The id of ordinal `ord` (from [`TextIndex::search`]).
    pub fn id(&self, ord: u32) -> &str {
        self.docs[ord as usize].as_ref().map_or("", |d| &d.0)
    }

    /// BM25's idf of a term held by `df` of the indexed items.
    fn idf(&self, df: usize) -> f32 {
        let n = self.ords.len() as f32;
        let df = df as f32;
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    /// A term's BM25 score in item `ord`, given its idf and frequency there.
    #[inline]
    fn bm25(&self, idf: f32, tf: u32, ord: u32, avgdl: f32) -> f32 {
        let dl = self.docs[ord as usize].as_ref().map_or(0, |d| d.1) as f32;
        let tf = tf as f32;
        idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * dl / avgdl))
    }

    /// The terms `prefix` expands to (itself included when it is a term).
    fn expand<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = &'a Posting> + 'a {
        self.terms
            .range::<str, _>((
                std::ops::Bound::Included(prefix),
                std::ops::Bound::Unbounded,
            ))
            .take_while(move |(t, _)| t.starts_with(prefix))
            .map(|(_, p)| p)
    }

    /// The items matching `s` with their BM25 scores, in ordinal order.
    pub fn search(&self, s: &Search) -> Vec<(u32, f32)> {
        let n = self.ords.len();
        if n == 0 {
            return Vec::new();
        }
        let avgdl = (self.total_len as f32 / n as f32).max(1.0);
        let mut lists: Vec<&Posting> = Vec::with_capacity(s.exact.len());
        for t in &s.exact {
            match self.terms.get(t.as_str()) {
                Some(p) => lists.push(p),
                None => return Vec::new(),
            }
        }
        lists.sort_by_key(|p| p.ords.len());
        let mut cand: Vec<(u32, f32)> = match lists.first() {
            None => match &s.prefix {
                None => {
                    return self
                        .docs
                        .iter()
                        .enumerate()
                        .filter(|(_, d)| d.is_some())
                        .map(|(o, _)| (o as u32, 0.0))
                        .collect()
                }
                Some(p) => return self.prefix_union(p, avgdl),
            },
            Some(first) => {
                let idf = self.idf(first.ords.len());
                first
                    .ords
                    .iter()
                    .zip(&first.tfs)
                    .map(|(&o, &tf)| (o, self.bm25(idf, tf, o, avgdl)))
                    .collect()
            }
        };
        for p in &lists[1..] {
            let idf = self.idf(p.ords.len());
            cand.retain_mut(|(o, score)| match p.tf(*o) {
                Some(tf) => {
                    *score += self.bm25(idf, tf, *o, avgdl);
                    true
                }
                None => false,
            });
            if cand.is_empty() {
                return cand;
            }
        }
        if let Some(prefix) = &s.prefix {
            // The best score of the prefix's terms in each candidate (-1: none holds one).
            let mut best = vec![-1.0f32; cand.len()];
            let terms: Vec<&Posting> = self.expand(prefix).collect();
            let total: usize = terms.iter().map(|p| p.ords.len()).sum();
            if total <= cand.len() {
                // Few entries: look each up among the candidates.
                for p in &terms {
                    let idf = self.idf(p.ords.len());
                    for (&o, &tf) in p.ords.iter().zip(&p.tfs) {
                        if let Ok(i) = cand.binary_search_by_key(&o, |c| c.0) {
                            best[i] = best[i].max(self.bm25(idf, tf, o, avgdl));
                        }
                    }
                }
            } else if terms.len().saturating_mul(cand.len()) <= self.docs.len() / 4 {
                // Few terms: merge each posting list with the candidates.
                for p in &terms {
                    let idf = self.idf(p.ords.len());
                    let (mut i, mut j) = (0, 0);
                    while i < cand.len() && j < p.ords.len() {
                        match cand[i].0.cmp(&p.ords[j]) {
                            std::cmp::Ordering::Less => i += 1,
                            std::cmp::Ordering::Greater => j += 1,
                            std::cmp::Ordering::Equal => {
                                let sc = self.bm25(idf, p.tfs[j], p.ords[j], avgdl);
                                best[i] = best[i].max(sc);
                                i += 1;
                                j += 1;
                            }
                        }
                    }
                }
            } else {
                // Many terms and candidates: one slot per ordinal.
                let mut dense = vec![-1.0f32; self.docs.len()];
                for p in &terms {
                    let idf = self.idf(p.ords.len());
                    for (&o, &tf) in p.ords.iter().zip(&p.tfs) {
                        let sc = self.bm25(idf, tf, o, avgdl);
                        let d = &mut dense[o as usize];
                        *d = d.max(sc);
                    }
                }
                for (b, (o, _)) in best.iter_mut().zip(&cand) {
                    *b = dense[*o as usize];
                }
            }
            let mut i = 0;
            cand.retain_mut(|(_, score)| {
                let b = best[i];
                i += 1;
                *score += b;
                b >= 0.0
            });
        }
        cand
    }

    /// Every item holding a term that starts with `prefix`, scored by its best such term.
    fn prefix_union(&self, prefix: &str, avgdl: f32) -> Vec<(u32, f32)> {
        let total: usize = self.expand(prefix).map(|p| p.ords.len()).sum();
        if total > self.docs.len() / 4 {
            // Dense: one slot per ordinal.
            let mut best = vec![-1.0f32; self.docs.len()];
            for p in self.expand(prefix) {
                let idf = self.idf(p.ords.len());
                for (&o, &tf) in p.ords.iter().zip(&p.tfs) {
                    let s = self.bm25(idf, tf, o, avgdl);
                    let b = &mut best[o as usize];
                    *b = b.max(s);
                }
            }
            return best
                .into_iter()
                .enumerate()
                .filter(|(_, b)| *b >= 0.0)
                .map(|(o, b)| (o as u32, b))
                .collect();
        }
        let mut all: Vec<(u32, f32)> = Vec::with_capacity(total);
        for p in self.expand(prefix) {
            let idf = self.idf(p.ords.len());
            all.extend(
                p.ords
                    .iter()
                    .zip(&p.tfs)
                    .map(|(&o, &tf)| (o, self.bm25(idf, tf, o, avgdl))),
            );
        }
        all.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
        all.dedup_by_key(|x| x.0);
        all
    }

    /// Describe the first difference from `other` (a rebuilt index), if any.
    pub fn diff(&self, other: &TextIndex) -> Option<String> {
        let norm = |ix: &TextIndex| -> BTreeMap<String, BTreeMap<String, u32>> {
            ix.terms
                .iter()
                .map(|(t, p)| {
                    let m = p
                        .ords
                        .iter()
                        .zip(&p.tfs)
                        .map(|(&o, &tf)| (ix.id(o).to_string(), tf))
                        .collect();
                    (t.to_string(), m)
                })
                .collect()
        };
        if self.count() != other.count() || self.total_len != other.total_len {
            return Some(format!(
                "{} items / {} tokens maintained, {} / {} expected",
                self.count(),
                self.total_len,
                other.count(),
                other.total_len
            ));
        }
        let (a, b) = (norm(self), norm(other));
        if a != b {
            let t = a
                .iter()
                .find(|(t, p)| b.get(*t) != Some(p))
                .map(|x| x.0.clone())
                .or_else(|| b.keys().find(|t| !a.contains_key(*t)).cloned());
            return Some(format!("the postings of term {t:?} differ"));
        }
        None
    }
}
