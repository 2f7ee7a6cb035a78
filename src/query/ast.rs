//! Query syntax trees and their JSON form (parse and print).

use super::cursor::{fingerprint, Cursor};
use super::keys::{split_where, KeySel, ID_FIELD};
use crate::error::{Error, Result};
use crate::value::{from_tree, to_tree, Value};
use serde_json::Value as J;

pub(crate) fn bad(reason: impl Into<String>) -> Error {
    Error::InvalidQuery {
        reason: reason.into(),
    }
}

/// The JSON type name of `j`, for error messages.
fn jtype(j: &J) -> &'static str {
    match j {
        J::Null => "null",
        J::Bool(_) => "boolean",
        J::Number(_) => "number",
        J::String(_) => "string",
        J::Array(_) => "array",
        J::Object(_) => "object",
    }
}

/// Check a field path: non-empty dot-separated segments.
/// The top-level field a dotted path starts with.
pub(crate) fn first_segment(path: &str) -> &str {
    path.split('.').next().unwrap_or(path)
}

impl Filter {
    /// The top-level fields its conditions read.
    pub(crate) fn fields<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Filter::And(v) | Filter::Or(v) => v.iter().for_each(|f| f.fields(out)),
            Filter::Not(f) => f.fields(out),
            Filter::Field { path, .. } => out.push(first_segment(path)),
        }
    }
}

impl Query {
    /// The top-level fields it compares (filter, sort, and so `after`), not those it returns.
    pub(crate) fn compared_fields(&self) -> Vec<&str> {
        let mut out = Vec::new();
        if let Some(f) = &self.filter {
            f.fields(&mut out);
        }
        out.extend(self.sort.iter().map(|k| first_segment(&k.field)));
        out
    }
}

impl AggregateQuery {
    /// The top-level fields it reads.
    pub(crate) fn compared_fields(&self) -> Vec<&str> {
        let mut out = Vec::new();
        if let Some(f) = &self.filter {
            f.fields(&mut out);
        }
        out.extend(
            self.aggregates
                .iter()
                .filter_map(|(_, a)| a.path())
                .map(first_segment),
        );
        out.extend(self.group_by.as_deref().map(first_segment));
        out
    }
}

pub(crate) fn check_path(path: &str, what: &str) -> Result<()> {
    if path.is_empty() || path.split('.').any(str::is_empty) {
        return Err(bad(format!(
            "{what}: {path:?} is not a field path (non-empty names separated by '.')"
        )));
    }
    Ok(())
}

/// The operator names accepted inside a field's operator object.
pub const OPERATORS: [&str; 11] = [
    "eq", "ne", "lt", "lte", "gt", "gte", "in", "contains", "prefix", "includes", "match",
];

/// A condition on one field's value. Semantics (see the module docs): a missing field matches
/// only `ne`; range operators only match values of the operand's type.
#[derive(Debug, Clone, PartialEq)]
pub enum Pred {
    /// Equal under [`Value::total_cmp`] (so `1` equals `1.0`; lists, maps and sets deeply).
    Eq(Value),
    /// Not `Eq` (also true when the field is missing).
    Ne(Value),
    /// Same type as the operand (number, string, boolean or bytes) and less.
    Lt(Value),
    Lte(Value),
    Gt(Value),
    Gte(Value),
    /// `Eq` to any of the listed values.
    In(Vec<Value>),
    /// A set with this element, or a list with this string as an element.
    Contains(String),
    /// A string starting with this prefix.
    Prefix(String),
    /// A string containing this substring.
    Includes(String),
    /// A string holding every token of this search, the last as a prefix (`text.rs`).
    Match(String),
}

impl Pred {
    /// The operator's JSON name.
    pub fn op_name(&self) -> &'static str {
        match self {
            Pred::Eq(_) => "eq",
            Pred::Ne(_) => "ne",
            Pred::Lt(_) => "lt",
            Pred::Lte(_) => "lte",
            Pred::Gt(_) => "gt",
            Pred::Gte(_) => "gte",
            Pred::In(_) => "in",
            Pred::Contains(_) => "contains",
            Pred::Prefix(_) => "prefix",
            Pred::Includes(_) => "includes",
            Pred::Match(_) => "match",
        }
    }

    fn operand_json(&self) -> J {
        match self {
            Pred::Eq(v) | Pred::Ne(v) | Pred::Lt(v) | Pred::Lte(v) | Pred::Gt(v) | Pred::Gte(v) => {
                to_tree(v)
            }
            Pred::In(vs) => J::Array(vs.iter().map(to_tree).collect()),
            Pred::Contains(s) | Pred::Prefix(s) | Pred::Includes(s) | Pred::Match(s) => {
                J::String(s.clone())
            }
        }
    }

    fn parse(path: &str, op: &str, operand: &J) -> Result<Pred> {
        let value = |j: &J| {
            from_tree(j).map_err(|e| {
                bad(format!(
                    "operand of {op:?} on field {path:?} is not a valid value: {e}"
                ))
            })
        };
        let want = |what: &str| {
            bad(format!(
                "operator {op:?} on field {path:?} needs {what} operand, got {} {}",
                article(jtype(operand)),
                jtype(operand)
            ))
        };
        let string = || match operand {
            J::String(s) => Ok(s.clone()),
            _ => Err(want("a string")),
        };
        Ok(match op {
            "eq" => Pred::Eq(value(operand)?),
            "ne" => Pred::Ne(value(operand)?),
            "lt" | "lte" | "gt" | "gte" => {
                let bytes =
                    matches!(operand, J::Object(o) if o.len() == 1 && o.contains_key("$bytes"));
                if !bytes && !matches!(operand, J::Number(_) | J::String(_) | J::Bool(_)) {
                    return Err(want("a number, string, boolean or bytes"));
                }
                let v = value(operand)?;
                match op {
                    "lt" => Pred::Lt(v),
                    "lte" => Pred::Lte(v),
                    "gt" => Pred::Gt(v),
                    _ => Pred::Gte(v),
                }
            }
            "in" => match operand {
                J::Array(a) => Pred::In(a.iter().map(value).collect::<Result<_>>()?),
                _ => return Err(want("an array")),
            },
            "contains" => Pred::Contains(string()?),
            "prefix" => Pred::Prefix(string()?),
            "includes" => Pred::Includes(string()?),
            "match" => {
                let s = string()?;
                super::text::Search::parse(path, &s)?;
                Pred::Match(s)
            }
            other => {
                return Err(bad(format!(
                    "unknown operator {other:?} on field {path:?} (expected one of {})",
                    OPERATORS.join(", ")
                )))
            }
        })
    }

    /// Check operand types (for predicates built in code rather than parsed).
    pub(crate) fn validate(&self, path: &str) -> Result<()> {
        match self {
            Pred::Lt(v) | Pred::Lte(v) | Pred::Gt(v) | Pred::Gte(v) => {
                if !matches!(
                    v,
                    Value::Number(_) | Value::String(_) | Value::Bool(_) | Value::Bytes(_)
                ) {
                    return Err(bad(format!(
                        "operator {:?} on field {path:?} needs a number, string, boolean or \
                         bytes operand, got {} {}",
                        self.op_name(),
                        article(v.type_name()),
                        v.type_name()
                    )));
                }
                if let Value::Number(n) = v {
                    if !n.is_finite() {
                        return Err(bad(format!(
                            "operand of {:?} on field {path:?} must be finite",
                            self.op_name()
                        )));
                    }
                }
                Ok(())
            }
            Pred::Match(s) => super::text::Search::parse(path, s).map(|_| ()),
            _ => Ok(()),
        }
    }
}

fn article(t: &str) -> &'static str {
    if t.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

/// A `where` clause.
#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    /// All must hold (an empty `And` matches everything).
    And(Vec<Filter>),
    /// At least one must hold (an empty `Or` matches nothing).
    Or(Vec<Filter>),
    Not(Box<Filter>),
    /// A condition on the value at a dotted field path.
    Field {
        path: String,
        pred: Pred,
    },
}

impl Filter {
    /// Shorthand for a field condition.
    pub fn field(path: impl Into<String>, pred: Pred) -> Filter {
        Filter::Field {
            path: path.into(),
            pred,
        }
    }

    /// Parse a `where` object (see the module docs).
    pub fn from_json(j: &J) -> Result<Filter> {
        let obj = j.as_object().ok_or_else(|| {
            bad(format!(
                "a where clause must be an object, got {} {}",
                article(jtype(j)),
                jtype(j)
            ))
        })?;
        let mut parts = Vec::new();
        for (k, v) in obj {
            match k.as_str() {
                "and" | "or" => {
                    let arr = v.as_array().ok_or_else(|| {
                        bad(format!(
                            "{k:?} needs an array of where clauses, got {} {}",
                            article(jtype(v)),
                            jtype(v)
                        ))
                    })?;
                    let subs = arr.iter().map(Filter::from_json).collect::<Result<_>>()?;
                    parts.push(if k == "and" {
                        Filter::And(subs)
                    } else {
                        Filter::Or(subs)
                    });
                }
                "not" => parts.push(Filter::Not(Box::new(Filter::from_json(v)?))),
                ID_FIELD => {
                    return Err(bad(format!(
                        "{ID_FIELD} is allowed only at the top level of a query's where (not \
                         inside and/or/not, nor in count or aggregate)"
                    )))
                }
                path => {
                    check_path(path, "where")?;
                    match v {
                        J::Object(ops) if !is_literal(v) => {
                            if ops.is_empty() {
                                return Err(bad(format!(
                                    "empty operator object for field {path:?}"
                                )));
                            }
                            for (op, operand) in ops {
                                parts.push(Filter::Field {
                                    path: path.to_string(),
                                    pred: Pred::parse(path, op, operand)?,
                                });
                            }
                        }
                        literal => parts.push(Filter::Field {
                            path: path.to_string(),
                            pred: Pred::parse(path, "eq", literal)?,
                        }),
                    }
                }
            }
        }
        Ok(if parts.len() == 1 {
            parts.pop().unwrap()
        } else {
            Filter::And(parts)
        })
    }

    /// Print in the JSON form; `Filter::from_json(&f.to_json()) == f`.
    pub fn to_json(&self) -> J {
        let mut o = serde_json::Map::new();
        match self {
            Filter::And(fs) => {
                o.insert(
                    "and".into(),
                    J::Array(fs.iter().map(Filter::to_json).collect()),
                );
            }
            Filter::Or(fs) => {
                o.insert(
                    "or".into(),
                    J::Array(fs.iter().map(Filter::to_json).collect()),
                );
            }
            Filter::Not(f) => {
                o.insert("not".into(), f.to_json());
            }
            Filter::Field { path, pred } => {
                let mut ops = serde_json::Map::new();
                ops.insert(pred.op_name().into(), pred.operand_json());
                o.insert(path.clone(), J::Object(ops));
            }
        }
        J::Object(o)
    }

    /// Check paths and operand types.
    pub(crate) fn validate(&self) -> Result<()> {
        match self {
            Filter::And(fs) | Filter::Or(fs) => fs.iter().try_for_each(Filter::validate),
            Filter::Not(f) => f.validate(),
            Filter::Field { path, pred } => {
                if matches!(path.as_str(), "and" | "or" | "not") {
                    return Err(bad(format!(
                        "field name {path:?} is reserved in where clauses"
                    )));
                }
                check_path(path, "where")?;
                pred.validate(path)
            }
        }
    }
}

/// A set `{"$set": [...]}` or bytes `{"$bytes": "<base64>"}`: a value, not operators.
fn is_literal(j: &J) -> bool {
    matches!(j, J::Object(o) if o.len() == 1
        && (o.get("$set").is_some_and(J::is_array) || o.get("$bytes").is_some_and(J::is_string)))
}

/// One sort key. Order: missing < null < booleans < numbers < strings < bytes < lists < maps (the
/// [`Value::total_cmp`] order, with a missing field first); `desc` reverses it. Ties are broken
/// by item id ascending, whatever the direction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortKey {
    pub field: String,
    pub desc: bool,
}

impl SortKey {
    pub fn asc(field: impl Into<String>) -> SortKey {
        SortKey {
            field: field.into(),
            desc: false,
        }
    }
    pub fn desc(field: impl Into<String>) -> SortKey {
        SortKey {
            field: field.into(),
            desc: true,
        }
    }
}

/// A declarative query over one collection.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    pub collection: String,
    pub filter: Option<Filter>,
    pub sort: Vec<SortKey>,
    pub limit: Option<usize>,
    pub offset: usize,
    /// Field paths to return; `None` returns whole items.
    pub select: Option<Vec<String>>,
    /// `$id` in the `where`: a condition on item ids, served by lookups (`keys.rs`).
    pub key: Option<KeySel>,
    /// Keyset paging: only rows strictly after this position (`page.rs`).
    pub after: Option<Cursor>,
}

fn get_usize(o: &serde_json::Map<String, J>, k: &str) -> Result<Option<usize>> {
    match o.get(k) {
        None | Some(J::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| bad(format!("{k} must be a non-negative integer, got {v}"))),
    }
}

fn check_keys(o: &serde_json::Map<String, J>, allowed: &[&str], what: &str) -> Result<()> {
    for k in o.keys() {
        if !allowed.contains(&k.as_str()) {
            return Err(bad(format!(
                "unknown {what} property {k:?} (expected one of {})",
                allowed.join(", ")
            )));
        }
    }
    Ok(())
}

fn get_collection(o: &serde_json::Map<String, J>) -> Result<String> {
    match o.get("collection") {
        Some(J::String(s)) if !s.is_empty() => {
            // A name no key can hold is an error, not an empty result.
            crate::key::validate_collection(s)?;
            Ok(s.clone())
        }
        Some(v) => Err(bad(format!(
            "collection must be a non-empty string, got {v}"
        ))),
        None => Err(bad("collection is required")),
    }
}

fn get_filter(o: &serde_json::Map<String, J>) -> Result<Option<Filter>> {
    match o.get("where") {
        None | Some(J::Null) => Ok(None),
        Some(w) => {
            let f = Filter::from_json(w)?;
            f.validate()?;
            Ok(Some(f))
        }
    }
}

impl Query {
    /// A query returning every item of `collection` in id order.
    pub fn all(collection: impl Into<String>) -> Query {
        Query {
            collection: collection.into(),
            filter: None,
            sort: Vec::new(),
            limit: None,
            offset: 0,
            select: None,
            key: None,
            after: None,
        }
    }

    /// Parse the JSON form (see the module docs).
    pub fn from_json(j: &J) -> Result<Query> {
        let o = j.as_object().ok_or_else(|| {
            bad(format!(
                "a query must be an object, got {} {}",
                article(jtype(j)),
                jtype(j)
            ))
        })?;
        check_keys(
            o,
            &[
                "collection",
                "where",
                "sort",
                "limit",
                "offset",
                "select",
                "after",
            ],
            "query",
        )?;
        let collection = get_collection(o)?;
        let (key, filter) = match o.get("where") {
            None | Some(J::Null) => (None, None),
            Some(w) => {
                let (key, rest) = split_where(w)?;
                let filter = match rest {
                    None => None,
                    Some(r) => {
                        let f = Filter::from_json(&r)?;
                        f.validate()?;
                        Some(f)
                    }
                };
                (key, filter)
            }
        };
        let mut sort = Vec::new();
        match o.get("sort") {
            None | Some(J::Null) => {}
            Some(J::Array(keys)) => {
                for k in keys {
                    sort.push(match k {
                        J::String(s) => SortKey::asc(s.clone()),
                        J::Object(ko) => {
                            check_keys(ko, &["field", "desc"], "sort key")?;
                            let field = ko
                                .get("field")
                                .and_then(J::as_str)
                                .ok_or_else(|| bad("a sort key needs a \"field\" string"))?;
                            let desc = match ko.get("desc") {
                                None | Some(J::Null) => false,
                                Some(J::Bool(b)) => *b,
                                Some(v) => {
                                    return Err(bad(format!(
                                        "sort key \"desc\" must be a boolean, got {v}"
                                    )))
                                }
                            };
                            SortKey {
                                field: field.to_string(),
                                desc,
                            }
                        }
                        other => {
                            return Err(bad(format!(
                                "a sort key must be a field name or {{\"field\":..,\"desc\":..}}, \
                                 got {other}"
                            )))
                        }
                    });
                }
            }
            Some(v) => return Err(bad(format!("sort must be an array, got {v}"))),
        }
        let limit = get_usize(o, "limit")?;
        let offset = get_usize(o, "offset")?.unwrap_or(0);
        let select = match o.get("select") {
            None | Some(J::Null) => None,
            Some(J::Array(a)) => Some(
                a.iter()
                    .map(|p| {
                        p.as_str()
                            .map(str::to_string)
                            .ok_or_else(|| bad(format!("select must list field paths, got {p}")))
                    })
                    .collect::<Result<Vec<_>>>()?,
            ),
            Some(v) => return Err(bad(format!("select must be an array, got {v}"))),
        };
        let after = match o.get("after") {
            None | Some(J::Null) => None,
            Some(c) => {
                if offset != 0 {
                    return Err(bad(
                        "after and offset cannot be combined (after replaces offset)",
                    ));
                }
                let fp = fingerprint(&collection, sort.iter().map(|k| (k.field.as_str(), k.desc)));
                Some(Cursor::parse(c, &collection, &fp, sort.len())?)
            }
        };
        let q = Query {
            collection,
            filter,
            sort,
            limit,
            offset,
            select,
            key,
            after,
        };
        q.validate()?;
        Ok(q)
    }

    /// Check paths and operands (also done by every engine entry point).
    pub fn validate(&self) -> Result<()> {
        if let Some(f) = &self.filter {
            f.validate()?;
        }
        for k in &self.sort {
            check_path(&k.field, "sort")?;
        }
        for p in self.select.iter().flatten() {
            check_path(p, "select")?;
        }
        Ok(())
    }

    /// Print in the JSON form; `Query::from_json(&q.to_json()) == q`.
    pub fn to_json(&self) -> J {
        let mut o = serde_json::Map::new();
        o.insert("collection".into(), J::String(self.collection.clone()));
        let mut w = self.filter.as_ref().map(Filter::to_json);
        if let Some(k) = &self.key {
            // A filter prints as one object without `$id`: `$id` joins its entries.
            let mut wo = match w.take() {
                Some(J::Object(m)) => m,
                _ => serde_json::Map::new(),
            };
            wo.insert(ID_FIELD.into(), k.to_json());
            w = Some(J::Object(wo));
        }
        if let Some(w) = w {
            o.insert("where".into(), w);
        }
        if !self.sort.is_empty() {
            o.insert(
                "sort".into(),
                J::Array(
                    self.sort
                        .iter()
                        .map(|k| serde_json::json!({"field": k.field, "desc": k.desc}))
                        .collect(),
                ),
            );
        }
        if let Some(l) = self.limit {
            o.insert("limit".into(), J::from(l as u64));
        }
        if self.offset != 0 {
            o.insert("offset".into(), J::from(self.offset as u64));
        }
        if let Some(s) = &self.select {
            o.insert(
                "select".into(),
                J::Array(s.iter().map(|p| J::String(p.clone())).collect()),
            );
        }
        if let Some(c) = &self.after {
            o.insert("after".into(), J::String(c.text.clone()));
        }
        J::Object(o)
    }
}

/// One aggregate function.
#[derive(Debug, Clone, PartialEq)]
pub enum AggOp {
    /// `{"count": true}` counts matching items; `{"count": "path"}` counts those where the field
    /// is present and not null.
    Count(Option<String>),
    /// Sum of the numeric values (others ignored); 0 when none.
    Sum(String),
    /// Smallest present, non-null value in the total order; null when none.
    Min(String),
    /// Largest present, non-null value in the total order; null when none.
    Max(String),
    /// Mean of the numeric values; null when none.
    Avg(String),
}

impl AggOp {
    pub fn path(&self) -> Option<&str> {
        match self {
            AggOp::Count(p) => p.as_deref(),
            AggOp::Sum(p) | AggOp::Min(p) | AggOp::Max(p) | AggOp::Avg(p) => Some(p),
        }
    }
    fn name(&self) -> &'static str {
        match self {
            AggOp::Count(_) => "count",
            AggOp::Sum(_) => "sum",
            AggOp::Min(_) => "min",
            AggOp::Max(_) => "max",
            AggOp::Avg(_) => "avg",
        }
    }
}

/// Aggregates over the items matching a filter, optionally grouped by a field's value.
#[derive(Debug, Clone, PartialEq)]
pub struct AggregateQuery {
    pub collection: String,
    pub filter: Option<Filter>,
    /// (output name, function), in output order.
    pub aggregates: Vec<(String, AggOp)>,
    pub group_by: Option<String>,
}

impl AggregateQuery {
    /// Parse `{"collection":..,"where":..,"aggregates":{"name":{"sum":"path"},..},"groupBy":"path"}`.
    pub fn from_json(j: &J) -> Result<AggregateQuery> {
        let o = j.as_object().ok_or_else(|| {
            bad(format!(
                "an aggregate query must be an object, got {} {}",
                article(jtype(j)),
                jtype(j)
            ))
        })?;
        check_keys(
            o,
            &["collection", "where", "aggregates", "groupBy"],
            "aggregate query",
        )?;
        let collection = get_collection(o)?;
        let filter = get_filter(o)?;
        let group_by = match o.get("groupBy") {
            None | Some(J::Null) => None,
            Some(J::String(s)) => Some(s.clone()),
            Some(v) => return Err(bad(format!("groupBy must be a field path, got {v}"))),
        };
        let mut aggregates = Vec::new();
        match o.get("aggregates") {
            None | Some(J::Null) => {}
            Some(J::Object(a)) => {
                for (name, spec) in a {
                    let so = spec.as_object().filter(|so| so.len() == 1).ok_or_else(|| {
                        bad(format!(
                            "aggregate {name:?} must be an object with one function, \
                             e.g. {{\"sum\": \"count\"}}, got {spec}"
                        ))
                    })?;
                    let (f, arg) = so.iter().next().unwrap();
                    let path = || match arg {
                        J::String(s) => Ok(s.clone()),
                        v => Err(bad(format!(
                            "aggregate {name:?}: {f:?} needs a field path, got {v}"
                        ))),
                    };
                    let op = match f.as_str() {
                        "count" => match arg {
                            J::Bool(true) => AggOp::Count(None),
                            J::String(s) => AggOp::Count(Some(s.clone())),
                            v => {
                                return Err(bad(format!(
                                    "aggregate {name:?}: \"count\" needs true or a field path, \
                                     got {v}"
                                )))
                            }
                        },
                        "sum" => AggOp::Sum(path()?),
                        "min" => AggOp::Min(path()?),
                        "max" => AggOp::Max(path()?),
                        "avg" => AggOp::Avg(path()?),
                        other => {
                            return Err(bad(format!(
                                "aggregate {name:?}: unknown function {other:?} (expected one of \
                                 count, sum, min, max, avg)"
                            )))
                        }
                    };
                    aggregates.push((name.clone(), op));
                }
            }
            Some(v) => return Err(bad(format!("aggregates must be an object, got {v}"))),
        }
        let q = AggregateQuery {
            collection,
            filter,
            aggregates,
            group_by,
        };
        q.validate()?;
        Ok(q)
    }

    pub fn validate(&self) -> Result<()> {
        if let Some(f) = &self.filter {
            f.validate()?;
        }
        if let Some(g) = &self.group_by {
            check_path(g, "groupBy")?;
        }
        for (name, op) in &self.aggregates {
            if self.group_by.is_some() && name == "key" {
                return Err(bad(
                    "aggregate name \"key\" is reserved when groupBy is used",
                ));
            }
            if let Some(p) = op.path() {
                check_path(p, &format!("aggregate {name:?}"))?;
            }
        }
        Ok(())
    }

    pub fn to_json(&self) -> J {
        let mut o = serde_json::Map::new();
        o.insert("collection".into(), J::String(self.collection.clone()));
        if let Some(f) = &self.filter {
            o.insert("where".into(), f.to_json());
        }
        let mut a = serde_json::Map::new();
        for (name, op) in &self.aggregates {
            let arg = match op {
                AggOp::Count(None) => J::Bool(true),
                op => J::String(op.path().unwrap().to_string()),
            };
            let mut f = serde_json::Map::new();
            f.insert(op.name().into(), arg);
            a.insert(name.clone(), J::Object(f));
        }
        o.insert("aggregates".into(), J::Object(a));
        if let Some(g) = &self.group_by {
            o.insert("groupBy".into(), J::String(g.clone()));
        }
        J::Object(o)
    }
}
