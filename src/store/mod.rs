//! Storage (docs/design.md §7-8): the synchronous [`Storage`] trait and its backends, the
//! append-only log of commit and seal frames (`log.rs`), and the snapshot file that lets open
//! skip replaying history (`snapshot/`).

#[cfg(feature = "testing")]
pub(crate) mod fault;
#[cfg(not(target_arch = "wasm32"))]
mod file;
pub(crate) mod log;
pub(crate) mod snapshot;
mod storage;

#[cfg(not(target_arch = "wasm32"))]
pub use file::FileStorage;
pub use log::Recovery;
pub use storage::{MemStorage, Storage};
