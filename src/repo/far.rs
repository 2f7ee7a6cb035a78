//! Large values off the heap (docs/design.md §6.6, `large.rs`): where the repository releases
//! a commit's large values into references to the log, and where it loads them back — for a
//! read (`get`, a query's rows), or for good before anything compares them.

use super::Repo;
use crate::error::Result;
use crate::large;
use crate::query::QueryResult;
use crate::store::log::FRAME_HEADER_LEN;
use crate::store::Storage;
use crate::value::Map;

impl<S: Storage> Repo<S> {
    /// After the commit `payload` was applied from the log frame at `frame_at`: release its
    /// large values (`large::release`), but those of the fields the query engine keeps.
    pub(super) fn release_far(&mut self, payload: &[u8], frame_at: u64) -> Result<()> {
        if payload.len() < large::FAR_MIN || self.opts.access_only {
            return Ok(());
        }
        // The fields the query engine keeps in memory, per collection (`None`: all of them).
        let kept: Vec<(String, Option<Vec<String>>)> = self
            .graph
            .state
            .collections
            .keys()
            .map(|c| (c.clone(), self.query.kept_fields(c)))
            .collect();
        let pinned = |c: &str, f: &str| {
            kept.iter()
                .any(|(kc, k)| kc == c && k.as_ref().is_none_or(|fs| fs.iter().any(|x| x == f)))
        };
        let at = frame_at + FRAME_HEADER_LEN as u64;
        large::release(&mut self.graph.state, payload, at, &pinned)?;
        Ok(())
    }

    /// Before an operation compares `fields` of `collection` (`None`: any field), load their
    /// far values back into memory, for good, with those of the fields the query engine keeps.
    pub(super) fn far_guard(&mut self, collection: &str, fields: Option<&[&str]>) -> Result<()> {
        let far = self
            .graph
            .state
            .collection(collection)
            .is_some_and(|c| !c.far.is_empty());
        if !far {
            return Ok(());
        }
        match (fields, self.query.kept_fields(collection)) {
            (None, _) | (_, None) => self.unfar(collection, None),
            (Some(f), Some(k)) => {
                let mut all: Vec<&str> = f.to_vec();
                all.extend(k.iter().map(String::as_str));
                self.unfar(collection, Some(&all))
            }
        }
    }

    /// Load the far values of `collection` in `fields` (all for `None`) back into memory. Its
    /// cold blocks may hold some too (a snapshot keeps them far, §8): the collection is loaded
    /// first, so no block loaded later brings one of those fields back far.
    pub(super) fn unfar(&mut self, collection: &str, fields: Option<&[&str]>) -> Result<()> {
        let cold_far = self.graph.state.collection(collection).is_some_and(|c| {
            !c.cold().is_empty()
                && c.far
                    .keys()
                    .any(|k| fields.is_none_or(|f| f.contains(&k.as_str())))
        });
        if cold_far {
            self.warm_collection(collection)?;
        }
        let log = &self.log;
        let read = |at, b: &mut [u8]| log.read_at(at, b);
        large::unfar(&mut self.graph.state, collection, fields, &read)
    }

    /// `m` with its far values loaded, when it has any.
    pub(super) fn resolved(&self, m: &Map) -> Result<Option<Map>> {
        if !large::has_far(m) {
            return Ok(None);
        }
        let log = &self.log;
        large::resolve(&|at, b| log.read_at(at, b), m).map(Some)
    }

    /// A query's rows with their far values loaded.
    pub(super) fn resolve_rows(&self, mut r: QueryResult) -> Result<QueryResult> {
        for (_, m) in &mut r.rows {
            if let Some(v) = self.resolved(m)? {
                *m = v;
            }
        }
        Ok(r)
    }

    /// The item `collection/id` (loaded), with its far values loaded into the repository's
    /// scratch map when it has any.
    pub(super) fn get_resolved(&mut self, collection: &str, id: &str) -> Result<Option<&Map>> {
        let Some(m) = self.graph.state.get(collection, id) else {
            return Ok(None);
        };
        match self.resolved(m)? {
            None => Ok(self.graph.state.get(collection, id)),
            Some(v) => {
                self.far_scratch = v;
                Ok(Some(&self.far_scratch))
            }
        }
    }

    /// A positioned read of the log (for `large::load`).
    pub(super) fn log_reader(&self) -> impl Fn(u64, &mut [u8]) -> Result<()> + '_ {
        |at, b| self.log.read_at(at, b)
    }
}
