//! Large values off the heap (docs/design.md §6.6, `large.rs`): where the repository releases
//! a commit's large values into references to the log, and where it loads them back — for a
//! read (`get`, a query's rows), or for good before anything compares them.

use super::Repo;
use crate::error::Result;
use crate::large;
use crate::query::QueryResult;
use crate::state::ChangeSink;
use crate::store::log::FRAME_HEADER_LEN;
use crate::store::Storage;
use crate::value::Map;

impl<S: Storage> Repo<S> {
    /// Whether `collection`'s large values stay in memory: something keeps or compares its
    /// values (declared indexes or text indexes, a live query, running aggregates).
    fn far_pinned(&self, collection: &str) -> bool {
        self.query.declares(collection) || self.query.watches(collection)
    }

    /// After the commit `payload` was applied from the log frame at `frame_at`: release its
    /// large values (`large::release`).
    pub(super) fn release_far(&mut self, payload: &[u8], frame_at: u64) -> Result<()> {
        if payload.len() < large::FAR_MIN || self.opts.access_only {
            return Ok(());
        }
        let pinned: Vec<String> = self
            .graph
            .state
            .collections
            .keys()
            .filter(|c| self.far_pinned(c))
            .cloned()
            .collect();
        let at = frame_at + FRAME_HEADER_LEN as u64;
        let pinned = |c: &str| pinned.iter().any(|p| p == c);
        large::release(&mut self.graph.state, payload, at, &pinned)?;
        Ok(())
    }

    /// Load `collection`'s far values back into memory, for good, when the operation about to
    /// run compares values (`plain`: it only hands rows out, in id order) or the collection
    /// keeps them (pinned).
    pub(super) fn far_guard(&mut self, collection: &str, plain: bool) -> Result<()> {
        let far = self
            .graph
            .state
            .collection(collection)
            .is_some_and(|c| c.far > 0);
        if far && (!plain || self.far_pinned(collection)) {
            self.unfar(collection)?;
        }
        Ok(())
    }

    /// Load every far value of `collection` back into memory.
    pub(super) fn unfar(&mut self, collection: &str) -> Result<()> {
        let log = &self.log;
        large::unfar(&mut self.graph.state, collection, &|at, b| {
            log.read_at(at, b)
        })
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
