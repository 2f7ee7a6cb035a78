//! Tests of the sync module over in-memory repositories: the wire codec (`wire.rs`), the
//! session handshake (`session.rs`), and `Hub` and `Client` together (`hub.rs`).

use super::*;
use crate::access::Role;
use crate::commit::{CommitId, Identity, PublicKey};
use crate::error::{AuthErrorKind, Error, PermissionErrorKind, ProtocolErrorKind};
use crate::repo::{Admission, Clock, Repo, RepoOptions};
use crate::store::MemStorage;
use crate::txn::Txn;
use crate::{map, Value};

const T0: u64 = 1_700_000_000_000;
const URL: &str = "ws://sync.test:8787/";
const REPO: &str = "r";

fn clock() -> Clock {
    let mut t = T0;
    Box::new(move || {
        t += 1;
        t
    })
}

fn ident(n: u8) -> Identity {
    Identity::from_entropy(&[n; 48])
}

fn signed(n: u8) -> Repo<MemStorage> {
    let opts = RepoOptions::new(REPO, Some(ident(n)), clock());
    Repo::open(MemStorage::new(), None, opts).unwrap()
}

fn server() -> Hub<MemStorage> {
    let mut opts = RepoOptions::new(REPO, None, clock());
    opts.accept_trusted = false;
    Hub::new(Repo::open(MemStorage::new(), None, opts).unwrap()).unwrap()
}

fn write(r: &mut Repo<MemStorage>, key: &str, n: i64) {
    let mut t = Txn::new();
    t.put(key, map! { "n" => n }.as_map()).unwrap();
    r.commit(t).unwrap();
}

fn kind(e: Error) -> ProtocolErrorKind {
    match e {
        Error::Protocol { kind, .. } => kind,
        e => panic!("expected a protocol error, got {e:?}"),
    }
}

fn permission(e: Error) -> PermissionErrorKind {
    match e {
        Error::Permission { kind, .. } => kind,
        e => panic!("expected a permission error, got {e:?}"),
    }
}

fn id(n: u8) -> CommitId {
    CommitId([n; 32])
}

fn proof() -> SessionProof {
    SessionProof::sign(&ident(1), [7; NONCE_LEN], URL, "team-1.notes_v2")
}

fn hosts() -> Vec<String> {
    vec!["sync.test:8787".to_string()]
}

fn expected<'a>(nonce: &'a [u8; NONCE_LEN], hosts: &'a [String], now_ms: u64) -> Expected<'a> {
    Expected {
        nonce,
        issued_ms: T0,
        now_ms,
        max_age_ms: 10_000,
        hosts,
    }
}

fn auth_kind(e: Error) -> AuthErrorKind {
    match e {
        Error::Auth { kind, .. } => kind,
        e => panic!("expected an auth error, got {e:?}"),
    }
}

mod hub;
mod session;
mod wire;
