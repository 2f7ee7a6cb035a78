//! Replaying log frames into a commit graph (open, and `verify()`'s shadow replay;
//! docs/design.md §7.4 step 4). The local log is trusted on open: seal signatures, the seals'
//! repository and the permission rule are checked only when verifying.

use super::causal::{missing_parents, Stored, Waiting};
use crate::access::{check_commit_bytes, is_void};
use crate::commit::{Commit, CommitId, Seal};
use crate::error::{Error, Result};
use crate::graph::Graph;
use crate::state::NoSink;
use crate::store::log::{FRAME_COMMIT, FRAME_HEADER_LEN, FRAME_SEAL};

/// What `verify()`'s replay checks on top of open's.
pub(super) struct Proof<'a> {
    /// The repository every seal must be made for.
    pub repo: &'a str,
    /// Seals at offsets below this one had their signatures verified by the caller
    /// (`Repo::verify_vouched`); 0 for `verify()`, which verifies every signature itself.
    pub vouched_below: u64,
}

/// Loads the cold items a commit writes before it is applied (open's replay of the log tail
/// over a snapshot's state; `repo/warm.rs`).
pub(super) type Warm<'a> = &'a mut dyn FnMut(&mut Graph, &Commit) -> Result<()>;

/// Apply one log frame. Commits whose parents come later in the log (possible after a
/// repair, or when a received parent completed a hole) wait for them in `wait`. `verify`
/// is set when `verify()` replays: then seal signatures (unless vouched for) and
/// repositories and the permission rule are checked too. `warm`, if given, runs before each
/// commit is applied.
pub(super) fn replay_frame(
    graph: &mut Graph,
    wait: &mut Waiting,
    kind: u8,
    offset: u64,
    payload: &[u8],
    verify: Option<&Proof>,
    warm: Option<Warm<'_>>,
) -> Result<()> {
    match kind {
        FRAME_COMMIT => {
            let mut none = |_: &mut Graph, _: &Commit| Ok(());
            let warm = warm.unwrap_or(&mut none);
            replay_commit(graph, wait, offset, payload, verify.is_some(), warm)
        }
        FRAME_SEAL => {
            let seal = Seal::decode(payload).map_err(|e| at(offset, e))?;
            if let Some(proof) = verify {
                check_seal(&seal, offset, proof)?;
            }
            graph.add_seal(&seal, offset);
            Ok(())
        }
        k => Err(corrupt(offset, &format!("unknown frame kind {k}"))),
    }
}

/// A logged seal's signature (unless the caller vouched for it) and repository.
fn check_seal(seal: &Seal, offset: u64, proof: &Proof) -> Result<()> {
    if offset >= proof.vouched_below {
        seal.verify().map_err(|e| at(offset, e))?;
    }
    if seal.repo != proof.repo {
        return Err(Error::VerifyFailed {
            reason: format!(
                "the seal at offset {offset} was made for repository {:?}, not {:?}",
                seal.repo, proof.repo
            ),
        });
    }
    Ok(())
}

/// Add a logged commit to the graph; when verifying, first check it against the permission
/// rule (docs/design.md §6.4).
/// `bytes`: the commit's, for one decoded access-only (its stored-schema check reads them).
fn apply_logged(
    graph: &mut Graph,
    (mut commit, id, offset): (Commit, CommitId, u64),
    bytes: Option<&[u8]>,
    verify: bool,
    warm: Warm<'_>,
) -> Result<()> {
    if verify {
        check_logged(graph, (&commit, &id, offset), bytes)?;
    }
    graph.open_sealed(&mut commit, &id);
    warm(graph, &commit)?;
    graph.add_commit(commit, id, offset, bytes, &mut NoSink);
    for (id, index, late) in graph.take_opened() {
        warm(graph, &late)?;
        graph.apply_late(&id, index, late, &mut NoSink);
    }
    // Nothing compares values during a replay: every large value is released (`large.rs`);
    // the repository takes back those of collections that keep theirs (`far.rs`). An
    // encrypted commit's bytes hold no plaintext value: nothing of it is released.
    if let Some(b) = bytes {
        crate::large::release(
            &mut graph.state,
            b,
            offset + FRAME_HEADER_LEN as u64,
            &|_, _| false,
        )?;
    }
    Ok(())
}

fn check_logged(
    graph: &Graph,
    (commit, id, offset): (&Commit, &CommitId, u64),
    bytes: Option<&[u8]>,
) -> Result<()> {
    let parents: Vec<u32> = commit.parents.iter().map(|p| graph.by_id[p]).collect();
    let fail = |why: String| Error::VerifyFailed {
        reason: format!("commit {} at offset {offset} {why}", id.to_hex()),
    };
    let after = match check_commit_bytes(&graph.past_acl(&parents), commit, id, bytes) {
        Ok(after) => after,
        // A commit the rule refuses is stored without effect (§6.4), but never a root.
        Err(e) if is_void(&e) && !parents.is_empty() => return Ok(()),
        Err(e) => return Err(fail(format!("breaks the permission rule: {e}"))),
    };
    let second_root = parents.is_empty() && !graph.commits.is_empty();
    if second_root && (after.owned() || graph.current_acl().owned()) {
        return Err(fail("is a second root of an owned repository".into()));
    }
    Ok(())
}

fn replay_commit(
    graph: &mut Graph,
    wait: &mut Waiting,
    offset: u64,
    payload: &[u8],
    verify: bool,
    warm: Warm<'_>,
) -> Result<()> {
    let (commit, id) = wait.decode(payload).map_err(|e| at(offset, e))?;
    if graph.by_id.contains_key(&id) || wait.contains(&id) {
        return Err(corrupt(offset, "duplicate commit in log"));
    }
    let missing = missing_parents(graph, &commit);
    if !missing.is_empty() {
        let stored = if wait.access_only() {
            Stored::Logged(offset, payload.to_vec())
        } else {
            Stored::InLog(offset)
        };
        wait.defer(commit, id, stored, &missing);
        return Ok(());
    }
    apply_logged(graph, (commit, id, offset), Some(payload), verify, warm)?;
    let mut stack = vec![id];
    while let Some(a) = stack.pop() {
        for (c, cid, stored) in wait.ready(&a)? {
            let (Stored::InLog(o) | Stored::Logged(o, _)) = &stored else {
                unreachable!("replay defers only logged commits")
            };
            apply_logged(graph, (c, cid, *o), stored.bytes(), verify, warm)?;
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
pub(super) fn at(offset: u64, e: Error) -> Error {
    match e {
        Error::Decode { what, reason } => corrupt(offset, &format!("{what}: {reason}")),
        e => e,
    }
}
