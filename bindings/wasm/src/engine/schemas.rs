//! Stored, versioned schemas and migrations (docs/design.md §2.4): the application's declared
//! version, upgrades, and the items a migration has left to do. The migrations themselves are
//! the page's functions: the page reads what is pending, maps it, and writes it back.

use super::Engine;
use crate::error::{to_js, IntoJs, JsResult};
use crate::json::{parse_json, to_string};
use ibexdb::{Error, Value};
use serde_json::json;
use wasm_bindgen::prelude::*;

/// `{"collection": schema, ...}` as (collection, schema) pairs.
fn schema_list(text: &str) -> Result<Vec<(String, serde_json::Value)>, Error> {
    match parse_json(text)? {
        serde_json::Value::Object(o) => Ok(o.into_iter().collect()),
        _ => Err(Error::InvalidValue {
            path: "schemas".into(),
            reason: "must be an object {collection: schema}".into(),
        }),
    }
}

#[wasm_bindgen]
impl Engine {
    /// Declare the schema version the application understands and its schemas.
    #[wasm_bindgen(js_name = declareApp)]
    pub fn declare_app(&mut self, version: u32, schemas: &str) -> JsResult<()> {
        let list = schema_list(schemas).js()?;
        self.repo_mut()?.declare_app(version, &list).js()
    }

    /// `{"version": n, "app": n | null, "commits": n, "mayUpgrade": bool, "mayWrite": bool, "schemas":
    /// {collection: version}, "readOnly": null | {name, message, stored, version}}`.
    #[wasm_bindgen(js_name = schemaInfo)]
    pub fn schema_info(&self) -> JsResult<String> {
        let repo = self.repo()?;
        let schemas: serde_json::Map<String, serde_json::Value> = repo
            .stored_schemas()
            .into_iter()
            .map(|(c, v, _)| (c, json!(v)))
            .collect();
        let read_only = repo.read_only().map(|e| match &e {
            Error::SchemaVersion {
                stored, version, ..
            } => json!({"name": e.name(), "message": e.to_string(), "stored": stored, "version": version}),
            _ => json!({"name": e.name(), "message": e.to_string()}),
        });
        let acl = repo.access();
        let may_write = if repo.is_trusted_mode() {
            !acl.owned() || acl.public().1
        } else {
            acl.can_write(&repo.author())
        };
        let out = json!({
            "version": repo.schema_version(),
            "app": repo.app_version(),
            "commits": repo.commit_count(),
            "mayUpgrade": repo.may_store_schemas(),
            "mayWrite": may_write,
            "schemas": schemas,
            "readOnly": read_only,
        });
        Ok(out.to_string())
    }

    /// Whether a commit at commit-table index `since` or later was written under a version
    /// below `target` (a migration pass has something new to look at).
    #[wasm_bindgen(js_name = olderCommitsSince)]
    pub fn older_commits_since(&self, since: u32, target: u32) -> JsResult<bool> {
        Ok(self.repo()?.older_commits_since(since as usize, target))
    }

    /// Check migrated items of `collection` (JSON `[[id, item], ...]`) against the declared
    /// schemas before an upgrade writes anything: `SchemaError` naming the first bad item.
    #[wasm_bindgen(js_name = checkMigrated)]
    pub fn check_migrated(&self, collection: &str, rows: &str) -> JsResult<()> {
        let rows: Vec<(String, Value)> =
            serde_json::from_str(rows).map_err(|e| to_js(&crate::json::bad_json(&e)))?;
        let repo = self.repo()?;
        for (id, v) in rows {
            if let Value::Map(m) = v {
                repo.check_declared(collection, &id, &m).js()?;
            }
        }
        Ok(())
    }

    /// Store the schemas (JSON `{collection: schema}`) at `version` in one commit (an
    /// upgrade; owners only). Returns whether anything was written.
    #[wasm_bindgen(js_name = storeSchemas)]
    pub fn store_schemas(&mut self, version: u32, schemas: &str) -> JsResult<bool> {
        let list = schema_list(schemas).js()?;
        Ok(self
            .repo_mut()?
            .store_schemas(version, &list)
            .js()?
            .is_some())
    }

    /// The items of `collection` to migrate to version `target` (`steps`: JSON list of the
    /// versions that have a migration): JSON `[[id, fromVersion, item], ...]`, `item` null
    /// for an item to delete (an older application deleted it concurrently).
    #[wasm_bindgen(js_name = migrationPending)]
    pub fn migration_pending(
        &mut self,
        collection: &str,
        steps: &str,
        target: u32,
    ) -> JsResult<String> {
        let steps: Vec<u32> =
            serde_json::from_str(steps).map_err(|e| to_js(&crate::json::bad_json(&e)))?;
        let pending = self
            .repo_mut()?
            .migration_pending(collection, &steps, target, usize::MAX)
            .js()?;
        let mut out = String::from("[");
        for (i, p) in pending.into_iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push('[');
            out.push_str(&to_string(&p.id));
            out.push_str(&format!(",{},", p.from));
            match p.value {
                Some(m) => out.push_str(&to_string(&Value::Map(m))),
                None => out.push_str("null"),
            }
            out.push(']');
        }
        out.push(']');
        Ok(out)
    }
}
