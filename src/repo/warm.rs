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
use crate::store::snapshot;
use crate::store::Storage;

impl<S: Storage> Repo<S> {
    /// Load the block that may hold `collection/id`.
    pub(super) fn warm_key(&mut self, collection: &str, id: &str) -> Result<()> {
        if !self.graph.state.has_cold() {
            return Ok(());
        }
        let r = match &self.snap {
            Some(s) => snapshot::load_key(&mut self.graph.state, s, collection, id),
            None => Ok(()),
        };
        self.or_rebuild(r)
    }

    /// Load the blocks that may hold the items `changes` write.
    pub(super) fn warm_changes(&mut self, changes: &[Change]) -> Result<()> {
        if !self.graph.state.has_cold() {
            return Ok(());
        }
        let r = match &self.snap {
            Some(s) => snapshot::load_changes(&mut self.graph.state, s, changes),
            None => Ok(()),
        };
        self.or_rebuild(r)
    }

    /// Load every item of `collection`.
    pub(super) fn warm_collection(&mut self, collection: &str) -> Result<()> {
        if !self.graph.state.has_cold() {
            return Ok(());
        }
        let r = match &self.snap {
            Some(s) => snapshot::load_collection(&mut self.graph.state, s, collection),
            None => Ok(()),
        };
        self.or_rebuild(r)
    }

    /// Load every item still in the snapshot's blocks now, instead of when first needed.
    pub fn load_all(&mut self) -> Result<()> {
        self.warm_all()
    }

    /// Load every item.
    pub(super) fn warm_all(&mut self) -> Result<()> {
        if !self.graph.state.has_cold() {
            return Ok(());
        }
        let r = match &self.snap {
            Some(s) => snapshot::load_all(&mut self.graph.state, s),
            None => Ok(()),
        };
        self.or_rebuild(r)
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
        let mut graph = Graph::default();
        let mut wait = Waiting::default();
        for f in scan.frames() {
            replay_frame(
                &mut graph, &mut wait, f.kind, f.offset, f.payload, None, None,
            )?;
        }
        self.graph = graph;
        self.wait = wait;
        self.snapshot_log_len = 0;
        self.open_report.from_snapshot = false;
        Ok(())
    }
}
