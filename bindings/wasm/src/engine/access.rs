//! The access list (docs/design.md §6.4): grants, revocations, the public switches, and the
//! members as JSON. Each change is one ordinary commit (buffered until `flush`), sealed and
//! synced like any other.

use super::Engine;
use crate::error::{IntoJs, JsResult};
use ibexdb::{Error, PublicKey, Role};
use serde_json::json;
use wasm_bindgen::prelude::*;

/// A public key from its hex form (98 digits).
pub(super) fn public_key(hex: &str) -> Result<PublicKey, Error> {
    key(hex)
}

fn key(hex: &str) -> Result<PublicKey, Error> {
    let bad = || Error::InvalidValue {
        path: "publicKey".into(),
        reason: "a public key is 98 hex digits (a compressed P-384 point)".into(),
    };
    let bytes = ibexdb::from_hex(hex).ok_or_else(bad)?;
    PublicKey::from_bytes(&bytes).map_err(|_| bad())
}

pub(super) fn role(name: &str) -> Result<Role, Error> {
    Role::parse(name).ok_or_else(|| Error::InvalidValue {
        path: "role".into(),
        reason: format!("a role is \"owner\", \"writer\" or \"reader\", got {name:?}"),
    })
}

#[wasm_bindgen]
impl Engine {
    /// Give the key (hex) a role (`owner`, `writer`, `reader`). Only an owner may.
    pub fn grant(&mut self, public_key: &str, role_name: &str) -> JsResult<()> {
        // The role first: a bad role is named as such whatever the key.
        let r = role(role_name).js()?;
        let k = key(public_key).js()?;
        self.repo_mut()?.grant(&k, r).js()?;
        Ok(())
    }

    /// Take the key's role away (refused for the last owner).
    pub fn revoke(&mut self, public_key: &str) -> JsResult<()> {
        let k = key(public_key).js()?;
        self.repo_mut()?.revoke(&k).js()?;
        Ok(())
    }

    /// Set the public switches: anyone may read / write.
    #[wasm_bindgen(js_name = setPublic)]
    pub fn set_public(&mut self, read: bool, write: bool) -> JsResult<()> {
        self.repo_mut()?.set_public(read, write).js()?;
        Ok(())
    }

    /// `{"owned": bool, "public": {"read", "write"}, "members": [{"publicKey", "role"}]}`.
    pub fn members(&self) -> JsResult<String> {
        let acl = self.repo()?.access();
        let (read, write) = acl.public();
        let members: Vec<_> = acl
            .members()
            .map(|(k, r)| json!({"publicKey": k.to_hex(), "role": r.name()}))
            .collect();
        let out = json!({"owned": acl.owned(), "public": {"read": read, "write": write}, "members": members});
        Ok(out.to_string())
    }
}
