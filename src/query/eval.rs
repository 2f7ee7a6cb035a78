//! Compiled filters, sort comparators and projections. Evaluation borrows item maps; nothing is
//! cloned while filtering or comparing.

use super::ast::{bad, Filter, Pred, Query, SortKey};
use super::cursor::Cursor;
use super::keys::KeySel;
use super::text::Search;
use crate::error::Result;
use crate::value::{Map, Name, Value};
use std::cmp::Ordering;
use std::mem::discriminant;

/// A pre-split field path.
#[derive(Debug, Clone)]
pub(crate) struct CPath {
    segs: Box<[Box<str>]>,
}

impl CPath {
    pub fn new(path: &str) -> CPath {
        CPath {
            segs: path.split('.').map(Box::from).collect(),
        }
    }

    /// The value at this path inside `m` (`None` when missing or crossing a non-map).
    #[inline]
    pub fn get<'a>(&self, m: &'a Map) -> Option<&'a Value> {
        let mut v = m.get(&self.segs[0])?;
        for s in &self.segs[1..] {
            match v {
                Value::Map(inner) => v = inner.get(s)?,
                _ => return None,
            }
        }
        Some(v)
    }

    /// Insert `v` at this path into `out`, creating intermediate maps.
    fn insert(&self, out: &mut Map, v: Value) {
        let mut cur = out;
        for s in &self.segs[..self.segs.len() - 1] {
            let slot = cur
                .entry(Name::new(s))
                .or_insert_with(|| Value::Map(Map::new()));
            if !matches!(slot, Value::Map(_)) {
                *slot = Value::Map(Map::new());
            }
            let Value::Map(m) = slot else { unreachable!() };
            cur = m;
        }
        cur.insert(Name::new(&self.segs[self.segs.len() - 1]), v);
    }
}

/// Order of two optional values: missing first, then [`Value::total_cmp`].
#[inline]
pub(crate) fn cmp_opt(a: Option<&Value>, b: Option<&Value>) -> Ordering {
    match (a, b) {
        (Some(a), Some(b)) => a.total_cmp(b),
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
    }
}

#[inline]
fn eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        _ => a.total_cmp(b) == Ordering::Equal,
    }
}

#[derive(Debug, Clone)]
pub(crate) enum CPred {
    Eq(Value),
    Ne(Value),
    Lt(Value),
    Lte(Value),
    Gt(Value),
    Gte(Value),
    /// Sorted by total order, deduplicated.
    In(Vec<Value>),
    Contains(String),
    Prefix(String),
    Includes(String),
    /// A one-byte substring (memchr).
    IncludesByte(u8),
    /// A full-text search (`text.rs`), evaluated by tokenizing the value.
    Match(Box<Search>),
}

impl CPred {
    fn new(p: &Pred) -> CPred {
        match p {
            Pred::Eq(v) => CPred::Eq(v.clone()),
            Pred::Ne(v) => CPred::Ne(v.clone()),
            Pred::Lt(v) => CPred::Lt(v.clone()),
            Pred::Lte(v) => CPred::Lte(v.clone()),
            Pred::Gt(v) => CPred::Gt(v.clone()),
            Pred::Gte(v) => CPred::Gte(v.clone()),
            Pred::In(vs) => {
                let mut vs = vs.clone();
                vs.sort_by(Value::total_cmp);
                vs.dedup_by(|a, b| a.total_cmp(b) == Ordering::Equal);
                CPred::In(vs)
            }
            Pred::Contains(s) => CPred::Contains(s.clone()),
            Pred::Prefix(s) => CPred::Prefix(s.clone()),
            Pred::Includes(s) if s.len() == 1 => CPred::IncludesByte(s.as_bytes()[0]),
            Pred::Includes(s) => CPred::Includes(s.clone()),
            // Validated when parsed: an invalid search matches nothing.
            Pred::Match(s) => CPred::Match(Box::new(Search::parse("", s).unwrap_or(Search {
                exact: vec![String::new()],
                prefix: None,
            }))),
        }
    }

    #[inline]
    fn test(&self, v: Option<&Value>) -> bool {
        let range = |x: &Value, ok: fn(Ordering) -> bool| {
            v.is_some_and(|v| discriminant(v) == discriminant(x) && ok(v.total_cmp(x)))
        };
        match self {
            CPred::Eq(x) => v.is_some_and(|v| eq(v, x)),
            CPred::Ne(x) => !v.is_some_and(|v| eq(v, x)),
            CPred::Lt(x) => range(x, Ordering::is_lt),
            CPred::Lte(x) => range(x, Ordering::is_le),
            CPred::Gt(x) => range(x, Ordering::is_gt),
            CPred::Gte(x) => range(x, Ordering::is_ge),
            CPred::In(xs) => v.is_some_and(|v| {
                if xs.len() <= 8 {
                    xs.iter().any(|x| eq(v, x))
                } else {
                    xs.binary_search_by(|x| x.total_cmp(v)).is_ok()
                }
            }),
            CPred::Contains(e) => match v {
                Some(Value::Set(s)) => s.contains(e),
                Some(Value::List(l)) => l.iter().any(|x| matches!(x, Value::String(s) if s == e)),
                _ => false,
            },
            CPred::Prefix(p) => matches!(v, Some(Value::String(s)) if s.starts_with(p.as_str())),
            CPred::Includes(p) => matches!(v, Some(Value::String(s)) if s.contains(p.as_str())),
            CPred::IncludesByte(b) => {
                matches!(v, Some(Value::String(s)) if s.as_bytes().contains(b))
            }
            CPred::Match(s) => s.test(v),
        }
    }
}

/// A filter ready to evaluate.
#[derive(Debug, Clone)]
pub(crate) enum CFilter {
    And(Vec<CFilter>),
    Or(Vec<CFilter>),
    Not(Box<CFilter>),
    Pred(CPath, CPred),
}

impl CFilter {
    pub fn new(f: &Filter) -> CFilter {
        match f {
            Filter::And(fs) if fs.len() == 1 => CFilter::new(&fs[0]),
            Filter::And(fs) => CFilter::And(fs.iter().map(CFilter::new).collect()),
            Filter::Or(fs) if fs.len() == 1 => CFilter::new(&fs[0]),
            Filter::Or(fs) => CFilter::Or(fs.iter().map(CFilter::new).collect()),
            Filter::Not(f) => CFilter::Not(Box::new(CFilter::new(f))),
            Filter::Field { path, pred } => CFilter::Pred(CPath::new(path), CPred::new(pred)),
        }
    }

    #[inline]
    pub fn matches(&self, m: &Map) -> bool {
        match self {
            CFilter::Pred(p, c) => c.test(p.get(m)),
            CFilter::And(fs) => fs.iter().all(|f| f.matches(m)),
            CFilter::Or(fs) => fs.iter().any(|f| f.matches(m)),
            CFilter::Not(f) => !f.matches(m),
        }
    }
}

/// Whether `m` matches an optional filter.
#[inline]
pub(crate) fn matches(f: &Option<CFilter>, m: &Map) -> bool {
    f.as_ref().is_none_or(|f| f.matches(m))
}

#[derive(Debug, Clone)]
pub(crate) struct CSort {
    pub path: CPath,
    pub desc: bool,
    pub field: String,
}

/// Compare two items by sort keys, then id ascending.
#[inline]
pub(crate) fn cmp_items(keys: &[CSort], a: (&str, &Map), b: (&str, &Map)) -> Ordering {
    for k in keys {
        let o = cmp_opt(k.path.get(a.1), k.path.get(b.1));
        if o != Ordering::Equal {
            return if k.desc { o.reverse() } else { o };
        }
    }
    a.0.cmp(b.0)
}

/// The error for sorting on a set.
pub(crate) fn set_sort_error(field: &str, id: &str) -> crate::error::Error {
    bad(format!(
        "cannot sort on field {field:?}: it holds a set (item {id:?}); sets have no sort order"
    ))
}

/// Fail if `m` holds a set at a sort path.
#[inline]
pub(crate) fn check_sortable(keys: &[CSort], id: &str, m: &Map) -> Result<()> {
    for k in keys {
        if let Some(Value::Set(_)) = k.path.get(m) {
            return Err(set_sort_error(&k.field, id));
        }
    }
    Ok(())
}

/// A compiled query.
#[derive(Debug, Clone)]
pub(crate) struct Compiled {
    pub filter: Option<CFilter>,
    pub sort: Vec<CSort>,
    pub select: Option<Vec<CPath>>,
    /// `$id` (with `in`'s ids sorted).
    pub key: Option<KeySel>,
    pub after: Option<Cursor>,
}

impl Compiled {
    pub fn new(q: &Query) -> Result<Compiled> {
        q.validate()?;
        Ok(Compiled {
            filter: q.filter.as_ref().map(CFilter::new),
            sort: compile_sort(&q.sort),
            select: q
                .select
                .as_ref()
                .map(|s| s.iter().map(|p| CPath::new(p)).collect()),
            key: q.key.as_ref().map(KeySel::compiled),
            after: q.after.clone(),
        })
    }

    /// Whether `(id, m)` passes the conditions outside the filter: `$id` and `after`.
    #[inline]
    pub fn extra(&self, id: &str, m: &Map) -> bool {
        self.key.as_ref().is_none_or(|k| k.test(id))
            && self
                .after
                .as_ref()
                .is_none_or(|a| after_cursor(a, &self.sort, id, m))
    }

    /// Whether `(id, m)` is a match of the query (before offset and limit).
    #[inline]
    pub fn accept(&self, id: &str, m: &Map) -> bool {
        self.key.as_ref().is_none_or(|k| k.test(id))
            && matches(&self.filter, m)
            && self
                .after
                .as_ref()
                .is_none_or(|a| after_cursor(a, &self.sort, id, m))
    }

    /// The row value returned for `m` (projected when `select` is given).
    pub fn project(&self, m: &Map) -> Map {
        match &self.select {
            None => m.clone(),
            Some(paths) => {
                let mut out = Map::new();
                for p in paths {
                    if let Some(v) = p.get(m) {
                        p.insert(&mut out, v.clone());
                    }
                }
                out
            }
        }
    }
}

/// Whether the row `(id, m)` comes strictly after the cursor `c` in the order of `keys`.
#[inline]
pub(crate) fn after_cursor(c: &Cursor, keys: &[CSort], id: &str, m: &Map) -> bool {
    for (k, v) in keys.iter().zip(&c.keys) {
        let o = cmp_opt(k.path.get(m), v.as_ref());
        if o != Ordering::Equal {
            return (if k.desc { o.reverse() } else { o }) == Ordering::Greater;
        }
    }
    id > c.id.as_str()
}

pub(crate) fn compile_sort(sort: &[SortKey]) -> Vec<CSort> {
    sort.iter()
        .map(|k| CSort {
            path: CPath::new(&k.field),
            desc: k.desc,
            field: k.field.clone(),
        })
        .collect()
}
