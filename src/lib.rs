//! ibexdb core: values and schemas, signed commits, convergent state, the crash-safe log,
//! snapshots and queries. Pure Rust: no wasm-bindgen, web-sys or tokio in here.

pub mod error;
pub mod fault;
pub mod log;
pub mod storage;

pub use error::{Error, Result, SignatureErrorKind, StorageError, StorageErrorKind};
pub use storage::{MemStorage, Storage};
pub mod codec;
pub mod commit;
pub mod crypto;
pub mod key;
pub mod query;
pub mod schema;
pub mod state;
pub mod value;
