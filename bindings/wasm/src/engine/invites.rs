//! Invites (docs/design.md §6.4 "Invites"): writing and revoking them (owners), listing them,
//! and the push a device that may not read yet sends to redeem one from a link alone.

use super::access::role;
use super::Engine;
use crate::error::{IntoJs, JsResult};
use ibexdb::{hex, redemption_commit, Error, InviteStatus, Message};
use serde_json::json;
use wasm_bindgen::prelude::*;

fn secret(b: &[u8]) -> Result<[u8; 32], Error> {
    b.try_into().map_err(|_| Error::InvalidValue {
        path: "secret".into(),
        reason: format!("an invite secret is 32 bytes, got {}", b.len()),
    })
}

fn bad_hex(path: &str, what: &str) -> Error {
    Error::InvalidValue {
        path: path.into(),
        reason: what.into(),
    }
}

#[wasm_bindgen]
impl Engine {
    /// Write an invite (owners only): `secret` is 32 random bytes from the page, never stored.
    /// Returns `{"id": hex, "commit": hex}` (the invite's id and the commit that wrote it).
    pub fn invite(
        &mut self,
        secret_bytes: &[u8],
        role_name: &str,
        expires: f64,
        uses: u32,
    ) -> JsResult<String> {
        let r = role(role_name).js()?;
        let s = secret(secret_bytes).js()?;
        let (id, c) = self.repo_mut()?.invite(&s, r, expires as u64, uses).js()?;
        let commit = c.map(|c| c.to_hex());
        Ok(json!({"id": hex(&id), "commit": commit}).to_string())
    }

    /// Revoke an invite (its id, 32 hex digits) before it is used up.
    #[wasm_bindgen(js_name = revokeInvite)]
    pub fn revoke_invite(&mut self, id_hex: &str) -> JsResult<()> {
        let id: [u8; 16] = ibexdb::from_hex(id_hex)
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| bad_hex("id", "an invite id is 32 hex digits"))
            .js()?;
        self.repo_mut()?.revoke_invite(&id).js()?;
        Ok(())
    }

    /// Redeem an invite whose commit this replica holds (a device that can already read): one
    /// commit granting this replica's key the invite's role; a used-up, expired, revoked or
    /// unknown invite is a typed `PermissionError` and nothing is written. False when nothing
    /// was written because this key already has the role or a higher one (`Repo::redeem`).
    pub fn redeem(&mut self, secret_bytes: &[u8]) -> JsResult<bool> {
        let s = secret(secret_bytes).js()?;
        Ok(self.repo_mut()?.redeem(&s).js()?.is_some())
    }

    /// `[{"id", "role", "expires", "uses", "used", "revoked"}]`, in id order.
    pub fn invites(&self) -> JsResult<String> {
        let acl = self.repo()?.access();
        let list: Vec<_> = acl
            .invites()
            .filter_map(|(id, st)| {
                let used = st.effective().count();
                match st.status()? {
                    InviteStatus::Open(d) => Some(json!({"id": hex(id), "role": d.role.name(),
                        "expires": d.expires, "uses": d.uses, "used": used, "revoked": false})),
                    InviteStatus::Revoked => Some(json!({"id": hex(id), "role": null,
                        "expires": null, "uses": null, "used": used, "revoked": true})),
                }
            })
            .collect();
        Ok(serde_json::Value::Array(list).to_string())
    }

    /// The encoded `Push` that redeems an invite from its link alone: this replica's key gets
    /// `role`, by a commit on the invite's commit (`commit_hex`), stamped now, sealed.
    #[wasm_bindgen(js_name = redemptionPush)]
    pub fn redemption_push(
        &self,
        secret_bytes: &[u8],
        role_name: &str,
        commit_hex: &str,
    ) -> JsResult<Vec<u8>> {
        let r = role(role_name).js()?;
        let s = secret(secret_bytes).js()?;
        let on = ibexdb::CommitId::from_hex(commit_hex)
            .ok_or_else(|| bad_hex("commit", "an invite's commit id is 64 hex digits"))
            .js()?;
        let repo = self.repo()?;
        let Some(me) = repo.identity() else {
            return Err(
                js_sys::Error::new("a trusted-mode replica cannot redeem an invite").into(),
            );
        };
        let now = js_sys::Date::now() as u64;
        let (id, bytes, seal) = redemption_commit(me, repo.name(), &s, r, vec![on], now);
        let m = Message::Push {
            commits: vec![(id, bytes)],
            seals: vec![seal],
        };
        Ok(m.encode())
    }
}
