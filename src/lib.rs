//! ibexdb core: values and schemas, signed commits, convergent state, the crash-safe log,
//! snapshots and queries. Pure Rust: no wasm-bindgen, web-sys or tokio in here.

pub mod error;
pub mod fault;
pub mod log;
pub mod storage;
pub mod txn;

pub use error::{
    Error, ProtocolErrorKind, Result, SignatureErrorKind, StorageError, StorageErrorKind,
};
pub use storage::{MemStorage, Storage};
pub mod codec;
pub mod commit;
pub mod key;
pub mod query;
pub mod repo;
pub mod schema;
pub mod snapshot;
pub mod state;
pub mod sync;
pub mod value;

pub use commit::{CommitId, Seal};
pub use commit::{Identity, PublicKey};
pub use log::Recovery;
pub use repo::{Durability, Repo, RepoOptions};
pub use schema::Schema;
pub use txn::Txn;
pub use value::{Map, Name, Set, Value};
