//! Replaying log frames into a commit graph (open, and `verify()`'s shadow replay;
//! docs/design.md §7.4 step 4). The local log is trusted on open: seal signatures are checked
//! only when verifying.

use super::causal::{missing_parents, Stored, Waiting};
use crate::commit::{Commit, Seal};
use crate::error::{Error, Result};
use crate::graph::Graph;
use crate::state::NoSink;
use crate::store::log::{FRAME_COMMIT, FRAME_SEAL};

/// Apply one log frame. Commits whose parents come later in the log (possible after a
/// repair, or when a received parent completed a hole) wait for them in `wait`.
pub(super) fn replay_frame(
    graph: &mut Graph,
    wait: &mut Waiting,
    kind: u8,
    offset: u64,
    payload: &[u8],
    verify_sigs: bool,
) -> Result<()> {
    match kind {
        FRAME_COMMIT => replay_commit(graph, wait, offset, payload),
        FRAME_SEAL => {
            let seal = Seal::decode(payload).map_err(|e| at(offset, e))?;
            if verify_sigs {
                seal.verify().map_err(|e| at(offset, e))?;
            }
            graph.add_seal(&seal, offset);
            Ok(())
        }
        k => Err(corrupt(offset, &format!("unknown frame kind {k}"))),
    }
}

fn replay_commit(graph: &mut Graph, wait: &mut Waiting, offset: u64, payload: &[u8]) -> Result<()> {
    let (commit, id) = Commit::decode(payload).map_err(|e| at(offset, e))?;
    if graph.by_id.contains_key(&id) || wait.contains(&id) {
        return Err(corrupt(offset, "duplicate commit in log"));
    }
    let missing = missing_parents(graph, &commit);
    if !missing.is_empty() {
        wait.defer(commit, id, Stored::InLog(offset), &missing);
        return Ok(());
    }
    graph.add_commit(commit, id, offset, &mut NoSink);
    let mut stack = vec![id];
    while let Some(a) = stack.pop() {
        for (c, cid, stored) in wait.ready(&a) {
            let Stored::InLog(o) = stored else {
                unreachable!("replay defers only logged commits")
            };
            graph.add_commit(c, cid, o, &mut NoSink);
            stack.push(cid);
        }
    }
    Ok(())
}

fn corrupt(offset: u64, reason: &str) -> Error {
    Error::Corrupt {
        offset,
        next_valid: None,
        reason: reason.to_string(),
    }
}

/// A decode error at `offset` of the log is log corruption.
fn at(offset: u64, e: Error) -> Error {
    match e {
        Error::Decode { what, reason } => corrupt(offset, &format!("{what}: {reason}")),
        e => e,
    }
}
