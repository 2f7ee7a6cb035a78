//! `verify()` (docs/design.md §9): re-read the whole log, rebuild a shadow commit graph from
//! scratch, and prove that the snapshot, the live graph, the live state and every index equal
//! what that replay gives.

use super::causal::Waiting;
use super::indexes::snapshot_index_differs;
use super::replay::{replay_frame, Proof};
use super::Repo;
use crate::error::{Error, Result, SignatureErrorKind};
use crate::graph::Graph;
use crate::item::ItemId;
use crate::state::State;
use crate::store::log::FRAME_SEAL;
use crate::store::snapshot;
use crate::store::Storage;
use std::collections::BTreeSet;

/// What `verify()` proved.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct VerifyReport {
    pub commits: usize,
    pub seals: usize,
    /// Seal signatures the core verified.
    pub signatures_verified: usize,
    /// Seal signatures the caller verified and the core took as proven
    /// ([`Repo::verify_vouched`]); 0 for `verify()`.
    pub signatures_vouched: usize,
    pub trusted_commits: usize,
    /// Local commits not yet sealed (they will be; not an error).
    pub unsealed: usize,
    pub items: usize,
    pub log_bytes: u64,
    /// A snapshot file was checked against a replay of the log prefix it covers.
    pub snapshot_checked: bool,
}

impl VerifyReport {
    /// One more seal, its signature verified here or (`vouched`) by the caller.
    fn count_seal(&mut self, vouched: bool) {
        self.seals += 1;
        if vouched {
            self.signatures_vouched += 1;
        } else {
            self.signatures_verified += 1;
        }
    }
}

impl<S: Storage> Repo<S> {
    /// Re-prove the whole repository: every frame checksum, every commit hash, every seal
    /// signature, that every signed commit is sealed by its author, that the snapshot equals a
    /// replay of the log prefix it covers, that the live state equals a full replay, and that
    /// every index matches the state.
    pub fn verify(&mut self) -> Result<VerifyReport> {
        self.verify_proving(0)
    }

    /// `verify()`, taking the signatures of the seals at log offsets below `vouched_below` as
    /// verified by the caller (`verify_vouched`); every other check runs.
    pub(super) fn verify_proving(&mut self, vouched_below: u64) -> Result<VerifyReport> {
        self.warm_all()?;
        let mut report = VerifyReport {
            log_bytes: self.log.len(),
            ..VerifyReport::default()
        };
        let shadow = self.replay_all(&mut report, vouched_below)?;
        self.check_seals_of(&shadow, &mut report)?;
        report.commits = shadow.commits.len();
        if shadow.commits != self.graph.commits || shadow.heads != self.graph.heads {
            return Err(Error::VerifyFailed {
                reason: "the commit table differs from a replay of the log".into(),
            });
        }
        let same = crate::large::same_state(&self.log_reader(), &shadow.state, &self.graph.state)?;
        if !same {
            let key = first_difference(&shadow.state, &self.graph.state);
            return Err(Error::VerifyFailed {
                reason: format!("the state differs from a full replay of the log (first at {key})"),
            });
        }
        self.materialize_all_indexes();
        self.query.verify_indexes(&self.graph.state)?;
        report.items = self.item_count();
        Ok(report)
    }

    /// Replay every frame of the log into a new graph, verifying seal signatures (those below
    /// `vouched_below` excepted), and compare the snapshot (if one decodes) with the replay of
    /// the prefix it covers.
    fn replay_all(&mut self, report: &mut VerifyReport, vouched_below: u64) -> Result<Graph> {
        let scan = self.log.scan_all()?;
        let snap = match &self.snap {
            Some(s) if s.len()? > 0 => snapshot::read(s).ok().map(|d| (d, s)),
            _ => None,
        };
        let mut shadow = Graph {
            keyring: self.fresh_keyring(),
            ..Graph::default()
        };
        let mut shadow_wait = Waiting::new(self.opts.access_only);
        let mut snap_done = false;
        let log_storage = self.log.storage();
        let check_snap = |shadow: &Graph, done: &mut bool, pos: u64| -> Result<()> {
            if let Some((d, src)) = &snap {
                if !*done && pos >= d.log_len {
                    *done = true;
                    if !snapshot::holds(d, *src, shadow, log_storage) {
                        return Err(Error::VerifyFailed {
                            reason: format!(
                                "the snapshot differs from a replay of the first {} log bytes",
                                d.log_len
                            ),
                        });
                    }
                    if let Some(ix) = snapshot_index_differs(d, *src, shadow) {
                        return Err(Error::VerifyFailed {
                            reason: format!(
                                "the snapshot's index {ix} differs from one built from the items"
                            ),
                        });
                    }
                }
            }
            Ok(())
        };
        let name = self.opts.name.clone();
        let proof = Proof {
            repo: &name,
            vouched_below,
        };
        let log = &self.log;
        scan.each(&|at, b| log.read_at(at, b), &mut |f| {
            check_snap(&shadow, &mut snap_done, f.offset)?;
            if f.kind == FRAME_SEAL {
                report.count_seal(f.offset < vouched_below);
            }
            replay_frame(
                &mut shadow,
                &mut shadow_wait,
                f.kind,
                f.offset,
                f.payload,
                Some(&proof),
                None,
            )?;
            Ok(true)
        })?;
        check_snap(&shadow, &mut snap_done, u64::MAX)?;
        report.snapshot_checked = snap_done && snap.is_some();
        Ok(shadow)
    }

    /// Every signed commit of the replay is sealed by its author, except this replica's own
    /// commits still waiting for `seal()`; trusted commits are counted.
    fn check_seals_of(&self, shadow: &Graph, report: &mut VerifyReport) -> Result<()> {
        for c in &shadow.commits {
            if c.trusted {
                report.trusted_commits += 1;
            } else if !c.sealed {
                if shadow.authors[c.author as usize] == self.author && self.unsealed.contains(&c.id)
                {
                    report.unsealed += 1;
                } else {
                    return Err(Error::sig(
                        SignatureErrorKind::Missing,
                        format!("commit {} is not sealed by its author", c.id.to_hex()),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The first key (`collection/id`) whose item differs between two states.
fn first_difference(a: &State, b: &State) -> String {
    let names: BTreeSet<&String> = a.collections.keys().chain(b.collections.keys()).collect();
    for n in names {
        let (ca, cb) = (a.collections.get(n), b.collections.get(n));
        let ids: BTreeSet<&ItemId> = ca
            .into_iter()
            .flat_map(|c| c.items.keys())
            .chain(cb.into_iter().flat_map(|c| c.items.keys()))
            .collect();
        for id in ids {
            if ca.and_then(|c| c.items.get(id)) != cb.and_then(|c| c.items.get(id)) {
                return format!("{n}/{id}");
            }
        }
    }
    "collection counts".into()
}
