//! Reads (docs/design.md §2, §10): items by key, an item's history, the state hash and heads,
//! and the query language run against the materialized state with the repository's indexes
//! (queries, counts, aggregates, explain, live queries). Reads touch storage only to load
//! cold items from the snapshot's blocks the first time they are needed (`warm.rs`), and in
//! `history()`, which re-reads the commits that touched the item.

use super::Repo;
use crate::commit::{Commit, CommitId, Op, PublicKey};
use crate::error::{Error, Result};
use crate::key::split_key;
use crate::query::{
    AggPartial, AggregateQuery, Filter, LiveChange, LiveId, Partial, Plan, Query, QueryResult,
};
use crate::store::Storage;
use crate::value::Map;

/// One entry of an item's history.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryEntry {
    pub commit: CommitId,
    pub author: PublicKey,
    pub hlc: u64,
    /// Wall-clock milliseconds (the physical part of the HLC).
    pub time_ms: u64,
    pub trusted: bool,
    pub op: Op,
}

impl<S: Storage> Repo<S> {
    /// The visible value at `key`.
    pub fn get(&mut self, key: &str) -> Result<Option<&Map>> {
        let (c, i) = split_key(key)?;
        self.warm_key(c, i)?;
        self.get_resolved(c, i)
    }

    /// Number of visible items, all collections together but the reserved `_acl` (the
    /// access list, see [`Repo::access`]) and `_schema` (the stored schemas).
    pub fn item_count(&self) -> usize {
        let reserved = [
            crate::access::ACL_COLLECTION,
            crate::schema::SCHEMA_COLLECTION,
        ];
        let n: usize = reserved
            .iter()
            .filter_map(|c| self.graph.state.collection(c))
            .map(|c| c.count())
            .sum();
        self.graph.state.len() - n
    }

    /// SHA-256 of the visible state; equal on replicas holding the same commits.
    pub fn state_hash(&mut self) -> Result<[u8; 32]> {
        self.warm_all()?;
        self.graph.state.hash_with(&|m| self.resolved(m))
    }

    pub fn heads(&self) -> Vec<CommitId> {
        self.graph.heads.iter().copied().collect()
    }

    pub fn commit_count(&self) -> usize {
        self.graph.commits.len()
    }

    pub fn has_commit(&self, id: &CommitId) -> bool {
        self.graph.by_id.contains_key(id)
    }

    /// The commits that changed `key`, oldest first.
    pub fn history(&mut self, key: &str) -> Result<Vec<HistoryEntry>> {
        let (c, i) = split_key(key)?;
        self.warm_key(c, i)?;
        let Some(item) = self.graph.state.item(c, i) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::with_capacity(item.history.len());
        for &idx in &item.history {
            let info = &self.graph.commits[idx as usize];
            let (_, payload) = self.log.read_frame(info.offset)?;
            let (mut commit, id) = Commit::decode(&payload)?;
            self.open_logged(&mut commit)?;
            let op = commit
                .changes
                .into_iter()
                .find(|ch| ch.collection == c && ch.id == i)
                .map(|ch| ch.op)
                .ok_or_else(|| Error::VerifyFailed {
                    reason: format!("commit {id:?} does not touch {key}"),
                })?;
            out.push(HistoryEntry {
                commit: id,
                author: commit.author,
                hlc: commit.hlc,
                time_ms: commit.hlc >> 16,
                trusted: commit.trusted,
                op,
            });
        }
        Ok(out)
    }

    // ----- queries (the language: docs/query-language.md) ---------------------------------

    /// Run a query: rows `(id, item)` and the plan it took.
    pub fn query(&mut self, q: &Query) -> Result<QueryResult> {
        // After an open, the indexes come from the snapshot and an index walk loads only the
        // blocks of its candidates: run, load what the answer needed, run again.
        self.far_guard(&q.collection, Some(&q.compared_fields()))?;
        self.restore_indexes(&q.collection);
        let r = self.with_indexes(&q.collection, |r| loop {
            if let Some(res) = r.query_partial(q)? {
                return Ok(res);
            }
            r.warm_collection(&q.collection)?;
        })?;
        self.resolve_rows(r)
    }

    /// Run `q` over the loaded items and the indexes, loading the blocks of the cold items an
    /// index walk needs and running again; `None` when it needs the whole collection.
    fn query_partial(&mut self, q: &Query) -> Result<Option<QueryResult>> {
        loop {
            match self.query.run_partial(&self.graph.state, q)? {
                Partial::Done(r) => return Ok(Some(r)),
                Partial::NeedAll => return Ok(None),
                Partial::Need(ids) => self.warm_ids(&q.collection, &ids)?,
            }
        }
    }

    /// The plan a query would take, without running it.
    pub fn explain(&mut self, q: &Query) -> Result<Plan> {
        // A plan needs the collection's count and its indexes, not its items: after an open,
        // the indexes restored from the snapshot serve; indexes still to build need the items.
        self.far_guard(&q.collection, Some(&q.compared_fields()))?;
        self.restore_indexes(&q.collection);
        if self.query.unbuilt_indexes(&q.collection).is_some()
            || self.query.texts_unbuilt(&q.collection)
        {
            self.warm_collection(&q.collection)?;
        }
        self.with_indexes(&q.collection, |r| r.query.explain(&r.graph.state, q))
    }

    /// Number of items of `collection` matching `filter` (all of them without one).
    pub fn count(&mut self, collection: &str, filter: Option<&Filter>) -> Result<usize> {
        crate::key::validate_collection(collection)?;
        let Some(f) = filter else {
            return self.query.count(&self.graph.state, collection, None);
        };
        let mut fields = Vec::new();
        f.fields(&mut fields);
        self.far_guard(collection, Some(&fields))?;
        // After an open, a filter that is one range of an index counts the index restored from
        // the snapshot. Another filter an index narrows runs as a query that returns no field,
        // which loads only its candidates' blocks; a filter no index serves loads the collection
        // and counts without building rows.
        self.restore_indexes(collection);
        self.with_indexes(collection, |r| r.count_restored(collection, f))
    }

    /// `count` with a filter, the collection's indexes restored if they can be.
    fn count_restored(&mut self, collection: &str, f: &Filter) -> Result<usize> {
        if let Some(n) = self.query.count_partial(&self.graph.state, collection, f)? {
            return Ok(n);
        }
        let q = Query {
            collection: collection.to_string(),
            filter: Some(f.clone()),
            sort: Vec::new(),
            limit: None,
            offset: 0,
            select: Some(Vec::new()),
            key: None,
            after: None,
        };
        if let Some(r) = self.query_partial(&q)? {
            return Ok(r.rows.len());
        }
        self.warm_collection(collection)?;
        self.query.count(&self.graph.state, collection, Some(f))
    }

    /// The ids of `collection`, in order.
    pub fn keys(&mut self, collection: &str) -> Result<Vec<String>> {
        crate::key::validate_collection(collection)?;
        // After an open, the ids of items still in the snapshot are read in its blocks in
        // place (docs/design.md §8, *Scans*); a block that fails loads the collection instead.
        if let Some(ids) = self.keys_in_place(collection) {
            return Ok(ids);
        }
        self.warm_collection(collection)?;
        Ok(self.query.keys(&self.graph.state, collection))
    }

    /// Run an aggregate query; the result in its JSON form.
    pub fn aggregate(&mut self, q: &AggregateQuery) -> Result<serde_json::Value> {
        // After an open, an unfiltered aggregate reads its fields from the snapshot's blocks
        // without loading the items (docs/design.md §8, *Scans*).
        self.far_guard(&q.collection, Some(&q.compared_fields()))?;
        self.restore_indexes(&q.collection);
        self.with_indexes(&q.collection, |r| loop {
            match r.query.aggregate_partial(&r.graph.state, q)? {
                AggPartial::Done(j) => return Ok(j),
                AggPartial::NeedAll => r.warm_collection(&q.collection)?,
                AggPartial::Scan(paths) => r.scan_fields(&q.collection, &paths)?,
            }
        })
    }

    /// Start a live query: its id and current rows. Its changes are reported by
    /// [`Repo::take_live_changes`] after every write or receive that touches them.
    pub fn subscribe(&mut self, q: Query) -> Result<(LiveId, Vec<(String, Map)>)> {
        // A live query compares values from now on: its collection keeps them in memory.
        self.far_guard(&q.collection, None)?;
        // A live query of listed ids (`$id`) needs only their items: it reads no other.
        if let Some(ids) = q.key.as_ref().and_then(|k| k.ids()) {
            let ids: Vec<String> = ids.into_iter().map(str::to_string).collect();
            for id in &ids {
                self.warm_key(&q.collection, id)?;
            }
            return self.query.subscribe(&self.graph.state, q);
        }
        self.warm_collection(&q.collection)?;
        // A live query registers itself: it reads its indexes whole first, not in rounds.
        self.materialize_indexes(&q.collection, true);
        self.query.subscribe(&self.graph.state, q)
    }

    /// Stop a live query; false if it was not running.
    pub fn unsubscribe(&mut self, id: LiveId) -> bool {
        self.query.unsubscribe(id)
    }

    /// The changes of every live query since the last call.
    pub fn take_live_changes(&mut self) -> Vec<(LiveId, LiveChange)> {
        self.query.take_live_changes()
    }
}
