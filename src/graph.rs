//! The commit graph: the in-memory model rebuilt from the log, i.e. the commit table (one
//! [`CommitInfo`] per applied commit, parents before children), the author table, the seal
//! bookkeeping, the heads, and the materialized [`State`] the commits produce.
//!
//! It sits below both the store (the snapshot file encodes and decodes a `Graph`,
//! `store/snapshot/`) and the repository (which grows it from the log and from peers,
//! `repo/`). `verify()` rebuilds one from scratch and compares it with the live one.

use crate::access::{judge, Acl, AclTable};
use crate::commit::{Commit, CommitId, PublicKey, Seal};
use crate::state::{ChangeSink, State};
use std::collections::{BTreeSet, HashMap};

/// What the repository keeps about each commit.
#[derive(Debug, Clone, PartialEq)]
pub struct CommitInfo {
    pub id: CommitId,
    /// Offset of the commit's frame in the log.
    pub offset: u64,
    pub hlc: u64,
    /// Index into the author table.
    pub author: u32,
    pub trusted: bool,
    /// Covered by a seal of its author stored in this repository.
    pub sealed: bool,
    /// Indices of the parents in the commit table.
    pub parents: Vec<u32>,
    /// The access list after this commit (index into [`Graph::acls`]; docs/design.md §6.4).
    pub acl: u32,
    /// Whether the commit counts: its author was allowed to make it by the access list of its
    /// causal past. A commit that does not count is kept (its descendants connect) and has no
    /// effect on the items or the access list.
    pub counts: bool,
}

/// The in-memory model rebuilt from the log: commit graph plus materialized state.
/// `verify()` rebuilds one from scratch and compares it with the live one.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Graph {
    pub state: State,
    pub commits: Vec<CommitInfo>,
    pub by_id: HashMap<CommitId, u32>,
    pub authors: Vec<PublicKey>,
    pub author_idx: HashMap<PublicKey, u32>,
    pub seal_offsets: Vec<u64>,
    pub heads: BTreeSet<CommitId>,
    /// Ids covered by a stored seal whose commit has not arrived yet, with the sealing authors.
    pub seal_cover: HashMap<CommitId, Vec<PublicKey>>,
    /// The access lists the commits produced, interned.
    pub acls: AclTable,
    /// The merge of every commit's access list: the access list of the whole graph.
    pub acl: u32,
    /// The epoch keys this device holds (docs/design.md §6.8); `None` on a replica without an
    /// identity or that keeps only the access list.
    pub(crate) keyring: Option<Box<crate::crypt::Keyring>>,
}

impl Graph {
    /// Before a commit is applied (docs/design.md §6.8): learn the epoch keys its `_keys` items
    /// wrap to this device, then replace its sealed chunks by the data changes they hold. A
    /// commit this device cannot decrypt is applied without its data, and the error is kept
    /// (`Repo::decrypt_failures`).
    pub(crate) fn open_sealed(&mut self, commit: &mut Commit, id: &CommitId) {
        let Some(mut k) = self.keyring.take() else {
            return;
        };
        for e in k.learn(commit, self.current_acl()) {
            k.fail(*id, e);
        }
        // Applied next (`add_commit`), as this index.
        k.open_applied(commit, id, self.commits.len() as u32);
        self.keyring = Some(k);
    }

    /// The commits kept for want of a key that open now (docs/design.md §6.8): their data
    /// changes, to load (`warm`) and apply with [`Graph::apply_late`].
    pub(crate) fn take_opened(&mut self) -> Vec<(CommitId, u32, Commit)> {
        self.keyring
            .as_mut()
            .map_or_else(Vec::new, |k| k.take_opened())
    }

    /// Apply the data changes of commit `index`, opened after it was added: as a commit
    /// delivered late (the merge does not depend on the order, §6.3). Nothing when the commit
    /// does not count.
    pub(crate) fn apply_late(
        &mut self,
        id: &CommitId,
        index: u32,
        commit: Commit,
        sink: &mut dyn ChangeSink,
    ) {
        if self.commits[index as usize].counts {
            self.state.apply_owned(commit, id, index, sink);
        }
    }

    pub(crate) fn author_index(&mut self, pk: PublicKey) -> u32 {
        if let Some(&i) = self.author_idx.get(&pk) {
            return i;
        }
        let i = self.authors.len() as u32;
        self.authors.push(pk);
        self.author_idx.insert(pk, i);
        i
    }

    /// Record a commit whose parents are all present and, if it counts (§6.4), apply it to the
    /// state (consuming the commit: its values move into the state). `bytes`: its encoded
    /// form, for a commit decoded access-only (the rule reads the shapes of its elided changes
    /// from them, `access::check_commit_bytes`).
    pub(crate) fn add_commit(
        &mut self,
        mut commit: Commit,
        id: CommitId,
        offset: u64,
        bytes: Option<&[u8]>,
        sink: &mut dyn ChangeSink,
    ) -> u32 {
        let author = self.author_index(commit.author);
        let parents: Vec<u32> = commit.parents.iter().map(|p| self.by_id[p]).collect();
        // A commit whose sealed data this device opened is judged as it travels (§6.8).
        let sealed = self.keyring.as_ref().is_some_and(|k| k.opened == Some(id));
        let (acl, counts) = if sealed {
            let mut wire = crate::crypt::Keyring::wire_view(&mut commit);
            // No bytes: the marker stands for sealed data, which no stored schema reads.
            let judged = self.acl_of(&wire, &id, &parents, None);
            commit.parents = std::mem::take(&mut wire.parents);
            judged
        } else {
            self.acl_of(&commit, &id, &parents, bytes)
        };
        if !counts {
            // Stored and stamped, but none of its writes applies.
            commit.changes.clear();
        }
        let sealed = match self.seal_cover.remove(&id) {
            Some(authors) => authors.contains(&commit.author),
            None => false,
        };
        let idx = self.commits.len() as u32;
        self.commits.push(CommitInfo {
            id,
            offset,
            hlc: commit.hlc,
            author,
            trusted: commit.trusted,
            sealed,
            parents,
            acl,
            counts,
        });
        self.by_id.insert(id, idx);
        for p in &commit.parents {
            self.heads.remove(p);
        }
        self.heads.insert(id);
        self.state.apply_owned(commit, &id, idx, sink);
        idx
    }

    /// The access list after `commit` (whose parents have these indices), interned, and
    /// whether the commit counts (a commit that does not keeps its past's list). Most commits
    /// change nothing: they share their parent's list.
    fn acl_of(
        &mut self,
        commit: &Commit,
        id: &CommitId,
        parents: &[u32],
        bytes: Option<&[u8]>,
    ) -> (u32, bool) {
        let first = parents.first().map_or(0, |&p| self.commits[p as usize].acl);
        let same = parents
            .iter()
            .all(|&p| self.commits[p as usize].acl == first);
        let merged = (!same).then(|| self.past_acl(parents));
        let past = merged.as_ref().unwrap_or(self.acls.get(first));
        let verdict = judge(past, commit, id, bytes);
        let counts = verdict.is_ok();
        let acl = match (verdict, merged) {
            (Ok(Some(after)), _) => self.acls.intern(after),
            (_, Some(past)) => self.acls.intern(past),
            (_, None) => first,
        };
        if acl != self.acl {
            let all = self.acls.past([self.acl, acl]);
            self.acl = self.acls.intern(all);
        }
        (acl, counts)
    }

    /// The access list of the causal past of a commit with these parents (commit-table
    /// indices).
    pub(crate) fn past_acl(&self, parents: &[u32]) -> Acl {
        self.acls
            .past(parents.iter().map(|&p| self.commits[p as usize].acl))
    }

    /// The access list of the whole graph (every commit's writes merged).
    pub(crate) fn current_acl(&self) -> &Acl {
        self.acls.get(self.acl)
    }

    /// Whether `id` is known to be sealed by `author` (stored commit, or stored seal whose
    /// commit has not arrived).
    pub(crate) fn is_sealed_by(&self, id: &CommitId, author: &PublicKey) -> bool {
        match self.by_id.get(id) {
            Some(&i) => {
                let c = &self.commits[i as usize];
                c.sealed && self.authors[c.author as usize] == *author
            }
            None => self.seal_cover.get(id).is_some_and(|a| a.contains(author)),
        }
    }

    /// Record a seal stored at `offset`: mark the commits it covers (by their own author).
    pub(crate) fn add_seal(&mut self, seal: &Seal, offset: u64) {
        self.seal_offsets.push(offset);
        for id in &seal.ids {
            match self.by_id.get(id) {
                Some(&i) => {
                    let info = &mut self.commits[i as usize];
                    if self.authors[info.author as usize] == seal.author {
                        info.sealed = true;
                    }
                }
                None => {
                    let v = self.seal_cover.entry(*id).or_default();
                    if !v.contains(&seal.author) {
                        v.push(seal.author);
                    }
                }
            }
        }
    }
}
