//! Loading cold items (docs/design.md §8, `cold.rs`): after an open from a snapshot, items stay
//! in the snapshot file's blocks until something needs them. Every read, write or scan of the
//! repository first loads what it touches: the block that may hold a key, a whole collection
//! before a query or a scan, everything before a snapshot, a hash or `verify()`.
//!
//! A block that cannot be loaded (damaged after open, or unreadable) makes the snapshot
//! useless: the repository rebuilds its state by replaying the whole log, which holds
//! everything the snapshot did, and goes on. The caller never sees the damage.

use super::causal::Waiting;
use super::replay::replay_frame;
use super::Repo;
use crate::commit::Change;
use crate::error::Result;
use crate::graph::Graph;
use crate::query::FieldAgg;
use crate::state::State;
use crate::store::snapshot;
use crate::store::Storage;

impl<S: Storage> Repo<S> {
    /// Load the block that may hold `collection/id`.
    pub(super) fn warm_key(&mut self, collection: &str, id: &str) -> Result<()> {
        self.warm_with(|state, s| snapshot::load_key(state, s, collection, id))
    }

    /// Load the blocks that may hold the items `changes` write.
    pub(super) fn warm_changes(&mut self, changes: &[Change]) -> Result<()> {
        self.warm_with(|state, s| snapshot::load_changes(state, s, changes))
    }

    /// Load the blocks that hold `ids` of `collection`; the whole collection if that loads
    /// nothing (so that a caller asking again always makes progress).
    pub(super) fn warm_ids(&mut self, collection: &str, ids: &[String]) -> Result<()> {
        let cold = |r: &Self| {
            r.graph
                .state
                .collection(collection)
                .map_or(0, |c| c.cold().len())
        };
        let before = cold(self);
        for id in ids {
            self.warm_key(collection, id)?;
        }
        if cold(self) == before {
            self.warm_collection(collection)?;
        }
        Ok(())
    }

    /// Build the field aggregates of `fields` of `collection` over its loaded items and, for
    /// the rest, over the snapshot's blocks read in place (`snapshot::scan_field`), and install
    /// them. A block that fails loads the collection instead (which rebuilds from the log).
    pub(super) fn scan_fields(&mut self, collection: &str, fields: &[String]) -> Result<()> {
        let Some(src) = &self.snap else {
            return self.warm_collection(collection);
        };
        let state = &self.graph.state;
        let mut built = Vec::with_capacity(fields.len());
        for f in fields {
            let mut agg = FieldAgg::empty(f);
            if let Some(c) = state.collection(collection) {
                agg.add_loaded(c);
            }
            let scanned =
                snapshot::scan_field(state, src, collection, f, &mut |v| agg.add_value(v));
            if scanned.is_err() {
                return self.warm_collection(collection);
            }
            built.push(agg);
        }
        for agg in built {
            self.query.install_field_agg(collection, agg);
        }
        Ok(())
    }

    /// The ids of `collection`'s visible items, in order, when some are still in the
    /// snapshot's blocks: the loaded ones merged with those read in the blocks in place
    /// (`snapshot::scan_ids`). `None` when none is cold, or a block fails.
    pub(super) fn keys_in_place(&self, collection: &str) -> Option<Vec<String>> {
        let src = self.snap.as_ref()?;
        let c = self.graph.state.collection(collection)?;
        if c.cold().is_empty() {
            return None;
        }
        let mut cold = Vec::with_capacity(c.count());
        let mut push = |id: &str| cold.push(id.to_string());
        snapshot::scan_ids(&self.graph.state, src, collection, &mut push).ok()?;
        let loaded = c.items.iter().filter(|(_, it)| it.visible().is_some());
        let mut loaded = loaded.map(|(id, _)| id.as_str()).peekable();
        let mut out = Vec::with_capacity(c.count());
        for id in cold {
            while let Some(l) = loaded.next_if(|l| *l < id.as_str()) {
                out.push(l.to_string());
            }
            out.push(id);
        }
        out.extend(loaded.map(str::to_string));
        Some(out)
    }

    /// Load every item of `collection`.
    pub(super) fn warm_collection(&mut self, collection: &str) -> Result<()> {
        self.warm_with(|state, s| snapshot::load_collection(state, s, collection))
    }

    /// Load every item still in the snapshot's blocks now, instead of when first needed.
    pub fn load_all(&mut self) -> Result<()> {
        self.warm_all()
    }

    /// Load every item.
    pub(super) fn warm_all(&mut self) -> Result<()> {
        self.warm_with(snapshot::load_all)
    }

    /// Run `load` against the snapshot file while any item is cold; rebuild from the log if it
    /// fails.
    fn warm_with(&mut self, load: impl FnOnce(&mut State, &S) -> Result<()>) -> Result<()> {
        if !self.graph.state.has_cold() {
            return Ok(());
        }
        let loaded = match &self.snap {
            Some(s) => load(&mut self.graph.state, s),
            None => Ok(()),
        };
        self.or_rebuild(loaded)
    }

    /// After a failed load, rebuild from the log.
    fn or_rebuild(&mut self, loaded: Result<()>) -> Result<()> {
        match loaded {
            Ok(()) => Ok(()),
            Err(_) => self.rebuild_from_log(),
        }
    }

    /// Replace the graph with a replay of the whole log (the snapshot is not used again; the
    /// next one is written from scratch). Received commits still waiting for their parents
    /// are dropped, as on close: they are not stored, and are received again.
    pub(super) fn rebuild_from_log(&mut self) -> Result<()> {
        self.log.write_pending()?;
        let scan = self.log.scan_all()?;
        let mut graph = Graph {
            keyring: self.fresh_keyring(),
            ..Graph::default()
        };
        let mut wait = Waiting::new(self.opts.access_only);
        let log = &self.log;
        scan.each(&|at, b| log.read_at(at, b), &mut |f| {
            replay_frame(
                &mut graph, &mut wait, f.kind, f.offset, f.payload, None, None,
            )?;
            Ok(true)
        })?;
        self.graph = graph;
        self.wait = wait;
        self.snapshot_log_len = 0;
        self.snap_indexes.clear();
        self.snap_table.clear();
        self.open_report.from_snapshot = false;
        // The replay released large values everywhere: the collections that compare them
        // take theirs back (`far.rs`).
        let names: Vec<String> = self.graph.state.collections.keys().cloned().collect();
        for c in names {
            self.far_guard(&c, Some(&[]))?;
        }
        Ok(())
    }
}
