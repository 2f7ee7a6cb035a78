//! Stored, versioned schemas and migrations (docs/design.md §2.4).
//!
//! The schemas live in the reserved collection `_schema` (`schema/stored.rs`); the permission
//! rule checks every commit against those of its causal past (`access::judge`). Here: reading
//! them, the application's declared version (a replica whose application understands an older
//! version than the repository holds refuses its own writes: read-only), writing an upgrade,
//! and the migration of items written under an older version, as ordinary commits (eager).

use super::Repo;
use crate::commit::{CommitId, Op};
use crate::error::{Error, PermissionErrorKind, Result};
use crate::schema::{schema_value, Schema, StoredSchema, SCHEMA_COLLECTION};
use crate::store::Storage;
use crate::txn::Txn;
use crate::value::Map;

/// What the application declared at open: the version it understands and its schemas.
pub(super) struct AppSchemas {
    pub version: u32,
    pub schemas: Vec<(String, Map)>,
}

/// An item to migrate: its id, the version it was written under, and the value to migrate
/// (`None`: an older application deleted it concurrently with its migration: delete it).
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    pub id: String,
    pub from: u32,
    pub value: Option<Map>,
}

/// Why a replica cannot write (`Repo::read_only`).
fn too_new(stored: u32, app: u32) -> Error {
    Error::SchemaVersion {
        stored,
        version: app,
        reason: format!(
            "this application understands schema version {app}, the repository's schemas are at version {stored}: it is read-only here until the application is updated"
        ),
    }
}

impl<S: Storage> Repo<S> {
    /// The repository's schema version: the highest version among its stored schemas (0: no
    /// stored schema), as of every commit this replica holds.
    pub fn schema_version(&self) -> u32 {
        self.graph.current_acl().schema_version()
    }

    /// `collection`'s stored schema and its version.
    pub fn stored_schema(&self, collection: &str) -> Option<(u32, &Schema)> {
        let s = self.graph.current_acl().stored_schema(collection)?;
        Some((s.version, &s.schema))
    }

    /// Every stored schema: (collection, version, schema), in name order.
    pub fn stored_schemas(&self) -> Vec<(String, u32, Schema)> {
        self.graph
            .current_acl()
            .stored_schemas()
            .map(|(c, s)| (c.to_string(), s.version, (*s.schema).clone()))
            .collect()
    }

    /// The schema version written under by the commit at commit-table index `i`: the
    /// repository's version after it (its own `_schema` writes included).
    fn version_at(&self, i: u32) -> u32 {
        let acl = self.graph.commits[i as usize].acl;
        self.graph.acls.get(acl).schema_version()
    }

    /// Declare the version the application understands and its schemas (`open(name,
    /// {schemas, version})`): checked like an upgrade (`InvalidSchemaError` naming the
    /// collection, `SchemaVersionError` for version 0), nothing stored here. From then on, a
    /// local write to a repository whose schemas are at a newer version is refused
    /// ([`Repo::read_only`]), and the first commit of an empty repository stores these
    /// schemas (as it claims ownership: the creator's application defines them).
    pub fn declare_app(
        &mut self,
        version: u32,
        schemas: &[(String, serde_json::Value)],
    ) -> Result<()> {
        let schemas = schema_items(version, schemas)?;
        self.app = Some(AppSchemas { version, schemas });
        Ok(())
    }

    /// Check a migrated item of `collection` against the schema the application declared for
    /// it (`declare_app`), as a received put is checked (§2.4): what an upgrade checks before it
    /// writes anything. `SchemaError` naming the item's id and the field otherwise.
    pub fn check_declared(&self, collection: &str, id: &str, item: &Map) -> Result<()> {
        let Some(app) = self.app.as_ref() else {
            return Ok(());
        };
        let Some((_, m)) = app.schemas.iter().find(|(c, _)| c == collection) else {
            return Ok(());
        };
        let schema = StoredSchema::from_map(collection, m)?;
        let ch = crate::commit::Change {
            collection: collection.to_string(),
            id: id.to_string(),
            op: Op::Put(item.clone()),
        };
        crate::schema::check_change(&schema.schema, &ch).map_err(|e| match e {
            Error::Schema {
                collection,
                field,
                rule,
            } => Error::Schema {
                collection,
                field,
                rule: format!("{rule} (item {id:?})"),
            },
            e => e,
        })
    }

    /// Whether this replica may store schemas (an owner, or anyone in an unowned repository).
    pub fn may_store_schemas(&self) -> bool {
        let acl = self.graph.current_acl();
        !acl.owned() || (!self.opts.trusted && acl.can_administer(&self.author))
    }

    /// The version the application declared.
    pub fn app_version(&self) -> Option<u32> {
        self.app.as_ref().map(|a| a.version)
    }

    /// `Some(SchemaVersionError)` when the application understands an older schema version
    /// than the repository holds: local writes are refused (what it wrote before it learned of
    /// the new version stays, and counts: it was valid in its causal past).
    pub fn read_only(&self) -> Option<Error> {
        let app = self.app.as_ref()?.version;
        let stored = self.schema_version();
        (stored > app).then(|| too_new(stored, app))
    }

    /// The `_schema` puts of the declared schemas, added to the first commit of an empty
    /// repository (`Repo::commit`).
    pub(super) fn founding_schemas(&self, changes: &mut Vec<crate::commit::Change>) {
        let first = self.graph.commits.is_empty() && self.wait.len() == 0;
        let Some(app) = self.app.as_ref().filter(|_| first) else {
            return;
        };
        for (c, m) in &app.schemas {
            let written =
                |ch: &crate::commit::Change| ch.collection == SCHEMA_COLLECTION && ch.id == *c;
            if changes.iter().any(written) {
                continue;
            }
            changes.push(crate::commit::Change {
                collection: SCHEMA_COLLECTION.to_string(),
                id: c.clone(),
                op: Op::Put(m.clone()),
            });
        }
    }

    /// Store `schemas` at `version` in one commit (an upgrade): only an owner may (anyone, in
    /// an unowned repository). `SchemaVersionError` if `version` is 0 or below the
    /// repository's; `InvalidSchemaError` naming the collection for a malformed schema;
    /// nothing is stored on error. Schemas already stored as given are not written again
    /// (`None`: nothing to write).
    pub fn store_schemas(
        &mut self,
        version: u32,
        schemas: &[(String, serde_json::Value)],
    ) -> Result<Option<CommitId>> {
        let items = schema_items(version, schemas)?;
        let current = self.schema_version();
        if version < current {
            return Err(Error::SchemaVersion {
                stored: current,
                version,
                reason: format!(
                    "the repository's schemas are at version {current}: versions never go down"
                ),
            });
        }
        if let Some(app) = self.app_version().filter(|&a| version > a) {
            return Err(Error::SchemaVersion {
                stored: current,
                version,
                reason: format!("this application understands schema version {app}, not {version}"),
            });
        }
        if !self.may_store_schemas() {
            return Err(Error::Permission {
                kind: PermissionErrorKind::CannotAdminister,
                detail: "only an owner may change the stored schemas".into(),
            });
        }
        let acl = self.graph.current_acl();
        let mut txn = Txn::new();
        for (c, m) in items {
            let same = acl
                .stored_schema(&c)
                .is_some_and(|s| StoredSchema::from_map(&c, &m).is_ok_and(|n| n == *s));
            if !same {
                txn.put(&format!("{SCHEMA_COLLECTION}/{c}"), m)?;
            }
        }
        self.commit(txn)
    }

    /// The items of `collection` to migrate to version `target` (the repository's, or the one
    /// an upgrade is about to store), at most `limit`:
    /// those written under an older version that a migration step in `steps` (the versions
    /// that have one) lies above. An item is written under the version of its newest write's
    /// commit; an item whose newest write is at the current version but that has an
    /// older-version write concurrent with it (made offline on an older application, not in
    /// that write's causal past) is migrated again from that write: its put, or the item with
    /// the old patch's fields on top, so that the old edit is not lost.
    pub fn migration_pending(
        &mut self,
        collection: &str,
        steps: &[u32],
        target: u32,
        limit: usize,
    ) -> Result<Vec<Pending>> {
        let needs = |from: u32| steps.iter().any(|&s| s > from && s <= target);
        if target == 0 || !steps.iter().any(|&s| s <= target) {
            return Ok(Vec::new());
        }
        self.warm_collection(collection)?;
        self.unfar(collection, None)?;
        // Each commit's version, through its (interned) access list.
        let vers: Vec<u32> = self
            .graph
            .acls
            .lists()
            .map(|a| a.schema_version())
            .collect();
        let ver = |i: u32| vers[self.graph.commits[i as usize].acl as usize];
        let seen = self.seen_by_every_upgrade(target, &ver);
        let Some(coll) = self.graph.state.collection(collection) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        let mut concurrent = Vec::new();
        for (id, item) in coll.items.iter() {
            let Some(value) = item.visible() else {
                continue;
            };
            if out.len() + concurrent.len() >= limit {
                break;
            }
            let newest = item.last.checked_sub(1);
            let from = newest.map_or(0, ver);
            if from < target {
                if needs(from) {
                    out.push(Pending {
                        id: id.as_str().to_string(),
                        from,
                        value: Some(value.clone()),
                    });
                }
                continue;
            }
            // Older-version writes the newest write did not see (one every upgrade saw, every
            // commit at the target version saw).
            let Some(m) = newest else { continue };
            let unseen = |h: u32| !seen[h as usize] && !self.is_ancestor(h, m);
            let old = item
                .history
                .as_slice()
                .iter()
                .copied()
                .filter(|&h| h != m && needs(ver(h)) && unseen(h));
            if let Some(h) = old.max_by_key(|&h| self.graph.state.stamps()[h as usize]) {
                concurrent.push((id.as_str().to_string(), h, value.clone()));
            }
        }
        for (id, h, value) in concurrent {
            let from = self.version_at(h);
            let value = self.old_edit(collection, &id, h, value)?;
            out.push(Pending { id, from, value });
        }
        Ok(out)
    }

    /// The value to migrate again for an older-version write `h` of `collection/id` that the
    /// current value did not see: its put, `value` with its patch's assignments on top, or
    /// `None` for a delete (the migration's put must not bring back an item its user deleted).
    fn old_edit(&self, collection: &str, id: &str, h: u32, mut value: Map) -> Result<Option<Map>> {
        let (_, payload) = self.log.read_frame(self.graph.commits[h as usize].offset)?;
        let (mut commit, _) = crate::commit::Commit::decode(&payload)?;
        self.open_logged(&mut commit)?;
        let op = commit
            .changes
            .into_iter()
            .find(|c| c.collection == collection && c.id == id)
            .map(|c| c.op);
        match op {
            Some(Op::Put(m)) => return Ok(Some(m)),
            Some(Op::Delete) => return Ok(None),
            Some(Op::Patch(fields)) => {
                for (name, f) in fields {
                    match f {
                        crate::commit::FieldOp::Assign(v) => {
                            value.insert(name.into(), v);
                        }
                        crate::commit::FieldOp::Unset => {
                            value.remove(&name);
                        }
                        crate::commit::FieldOp::SetEdit { .. } => {}
                    }
                }
            }
            None => {}
        }
        Ok(Some(value))
    }

    /// Whether a commit at commit-table index `since` or later was written under a version
    /// below `target`: what a migration pass that covered the first `since` commits has left
    /// to look at (nothing, most of the time: only an older application's commits arrive so).
    pub fn older_commits_since(&self, since: usize, target: u32) -> bool {
        let vers: Vec<u32> = self
            .graph
            .acls
            .lists()
            .map(|a| a.schema_version())
            .collect();
        self.graph
            .commits
            .iter()
            .skip(since)
            .any(|c| vers[c.acl as usize] < target)
    }

    /// The commits in the causal past of every first commit at version `target` or above (a
    /// commit at that version descends from one of them, so it has each of these in its past).
    fn seen_by_every_upgrade(&self, target: u32, ver: &dyn Fn(u32) -> u32) -> Vec<bool> {
        let n = self.graph.commits.len();
        let mut common: Option<Vec<bool>> = None;
        for c in 0..n as u32 {
            let info = &self.graph.commits[c as usize];
            if ver(c) < target || info.parents.iter().any(|&p| ver(p) >= target) {
                continue;
            }
            let mut anc = vec![false; n];
            let mut stack = info.parents.clone();
            while let Some(x) = stack.pop() {
                if !std::mem::replace(&mut anc[x as usize], true) {
                    stack.extend(&self.graph.commits[x as usize].parents);
                }
            }
            common = Some(match common {
                None => anc,
                Some(mut c) => {
                    c.iter_mut().zip(&anc).for_each(|(a, b)| *a &= *b);
                    c
                }
            });
        }
        common.unwrap_or_else(|| vec![false; n])
    }

    /// Whether commit `a` is in the causal past of commit `b` (commit-table indices; parents
    /// come before children, so the walk stops below `a`).
    fn is_ancestor(&self, a: u32, b: u32) -> bool {
        if a >= b {
            return false;
        }
        let mut stack = vec![b];
        let mut seen = std::collections::HashSet::new();
        while let Some(x) = stack.pop() {
            for &p in &self.graph.commits[x as usize].parents {
                if p == a {
                    return true;
                }
                if p > a && seen.insert(p) {
                    stack.push(p);
                }
            }
        }
        false
    }

    /// Migrate `collection` to the repository's version (eager: as commits, docs/design.md
    /// §2.4): `f(step, id, item)` maps an item from version `step − 1` to `step`, for each
    /// step in `steps` above the item's version. Every migrated item is computed and checked
    /// against the stored schema before anything is written, so an error (a migration that
    /// fails, or returns an item the schema refuses) writes nothing; then the
    /// items are written `batch` per commit, `progress(done, total)` after each. A crash midway
    /// leaves whole commits: calling it again migrates what is left (the items still written
    /// under an older version). Returns the number of items written.
    pub fn migrate(
        &mut self,
        collection: &str,
        steps: &[u32],
        f: &mut dyn FnMut(u32, &str, Map) -> Result<Map>,
        batch: usize,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<usize> {
        if let Some(e) = self.read_only() {
            return Err(e);
        }
        let target = self.schema_version();
        let pending = self.migration_pending(collection, steps, target, usize::MAX)?;
        let mut steps = steps.to_vec();
        steps.sort_unstable();
        let mut out = Vec::with_capacity(pending.len());
        for p in pending {
            let Some(mut v) = p.value else {
                out.push((p.id, None));
                continue;
            };
            for &s in steps.iter().filter(|&&s| s > p.from && s <= target) {
                v = f(s, &p.id, v)?;
            }
            out.push((p.id, Some(v)));
        }
        // Every result against the stored schema before anything is written.
        if let Some(s) = self.graph.current_acl().stored_schema(collection) {
            for (id, v) in out.iter().filter_map(|(id, v)| Some((id, v.as_ref()?))) {
                let ch = crate::commit::Change {
                    collection: collection.to_string(),
                    id: id.clone(),
                    op: Op::Put(v.clone()),
                };
                crate::schema::check_change(&s.schema, &ch)?;
            }
        }
        let total = out.len();
        let mut done = 0;
        let mut it = out.into_iter().peekable();
        while it.peek().is_some() {
            let mut txn = Txn::new();
            for (id, v) in it.by_ref().take(batch.max(1)) {
                let key = format!("{collection}/{id}");
                match v {
                    Some(v) => txn.put(&key, v)?,
                    None => txn.delete(&key)?,
                };
                done += 1;
            }
            // Each batch durable before the next: a crash loses at most the batch in flight.
            self.commit(txn)?;
            self.flush()?;
            progress(done, total);
        }
        Ok(total)
    }
}

/// Check the declared schemas and build their `_schema` items: a version from 1, valid
/// collection names (not reserved), well-formed schemas; each error names what is wrong.
fn schema_items(
    version: u32,
    schemas: &[(String, serde_json::Value)],
) -> Result<Vec<(String, Map)>> {
    if version == 0 {
        return Err(Error::SchemaVersion {
            stored: 0,
            version,
            reason: "schema versions are whole numbers from 1".into(),
        });
    }
    let mut out = Vec::new();
    for (c, j) in schemas {
        crate::key::validate_collection(c)?;
        if c.starts_with('_') {
            return Err(Error::InvalidSchema {
                collection: c.clone(),
                reason: "collections starting with '_' are reserved".into(),
            });
        }
        if j.get("version").is_some() {
            return Err(Error::InvalidSchema {
                collection: c.clone(),
                reason: "unknown schema property \"version\" (the version is open()'s)".into(),
            });
        }
        Schema::from_json(c, j)?;
        let m = schema_value(version, j)?;
        StoredSchema::from_map(c, &m)?;
        out.push((c.clone(), m));
    }
    Ok(out)
}
