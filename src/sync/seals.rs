//! Which stored seals cover which commits, so that signed commits travel with the seals of
//! their authors (a push from a client, catch-up and relays from the hub).

use crate::commit::{CommitId, PublicKey, Seal};
use crate::error::Result;
use crate::repo::Repo;
use crate::store::Storage;
use std::collections::{BTreeSet, HashMap};

/// Which stored seals cover which commits, kept up to date incrementally from the repository's
/// seal list (which only grows).
#[derive(Default)]
pub(super) struct SealIndex {
    indexed: usize,
    authors: Vec<PublicKey>,
    cover: HashMap<CommitId, Vec<u32>>,
}

impl SealIndex {
    pub(super) fn refresh<S: Storage>(&mut self, repo: &Repo<S>) -> Result<()> {
        while self.indexed < repo.seal_count() {
            let seal = Seal::decode(&repo.seal_bytes(self.indexed)?)?;
            let i = self.authors.len() as u32;
            self.authors.push(seal.author);
            for id in &seal.ids {
                self.cover.entry(*id).or_default().push(i);
            }
            self.indexed += 1;
        }
        Ok(())
    }

    /// The stored seals that cover the commits at these commit-table positions for their
    /// authors (trusted commits need none).
    pub(super) fn seals_for<S: Storage>(
        &self,
        repo: &Repo<S>,
        positions: &[usize],
    ) -> Result<Vec<Vec<u8>>> {
        let core = repo.graph();
        let mut need = BTreeSet::new();
        for &p in positions {
            let c = &core.commits[p];
            if c.trusted {
                continue;
            }
            let author = &core.authors[c.author as usize];
            if let Some(v) = self.cover.get(&c.id) {
                if let Some(&s) = v.iter().find(|&&s| self.authors[s as usize] == *author) {
                    need.insert(s);
                }
            }
        }
        need.into_iter()
            .map(|s| repo.seal_bytes(s as usize))
            .collect()
    }
}
