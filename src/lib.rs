//! ibexdb core: values and schemas, signed commits, convergent state, the crash-safe log,
//! snapshots, queries and the sync protocol. Pure Rust: no wasm-bindgen, web-sys or tokio in
//! here; the browser bindings (`bindings/wasm`) and the sync server (`server/`) are thin hosts.
//!
//! Every module is private; what a host needs is re-exported below, grouped by the chapter of
//! docs/design.md that describes it. The folder layout is listed in docs/design.md §1.

mod access;
mod attach;
mod chunked;
mod codec;
mod cold;
mod commit;
mod crypt;
mod error;
mod graph;
mod hashing;
mod item;
mod item_map;
mod key;
mod large;
mod merge;
mod query;
mod repo;
mod schema;
mod state;
mod store;
mod sync;
mod txn;
mod txn_bytes;
mod value;

// Errors: one enum, with a stable name per variant (`Error::name`) that the bindings expose.
pub use error::{
    AuthErrorKind, DecryptErrorKind, Error, PermissionErrorKind, ProtocolErrorKind, Result,
    SignatureErrorKind, StorageError, StorageErrorKind,
};

// §6.8 End-to-end encrypted repositories.
pub use crypt::{Random, CONFIG_ID, KEYS_COLLECTION, PAD, SEALED_COLLECTION};

// §3.1 Bytes from outside: UTF-8 checked with an ASCII fast path.
pub use codec::utf8;

// §2 Data model: keys, values, schemas, transactions.
pub use attach::{
    attachment_field, attachment_name, attachments_of, descriptor_of, has_attachments,
    is_attachment_field, validate_attachment_name, validate_media_type, Attachment, Sha256Stream,
    ATTACHMENT_PREFIX, MAX_ATTACHMENT_NAME, MAX_ATTACHMENT_SIZE,
};
pub use key::{MAX_COLLECTION, MAX_ID};
pub use schema::{schema_value, FieldSpec, FieldType, Schema, SCHEMA_COLLECTION};
pub use txn::Txn;
pub use txn_bytes::TXN_BYTES_VERSION;
pub use value::{
    with_bytes_sink, Far, Map, Name, Set, Value, MAX_DEPTH, MAX_FIELD_NAME, MAX_ITEM_BYTES,
};

// §4-5 Commits and seals.
pub use commit::{
    attachments_in, from_hex, hex, Change, Commit, CommitId, FieldOp, Identity, Op, PublicKey,
    Seal, Signature, MAX_COMMIT_BYTES, MAX_PARENTS, MAX_SEAL_IDS, SIGNATURE_LEN,
    UNCOMPRESSED_KEY_LEN,
};

// §6.4 Permissions: who may read and write.
pub use access::{
    check_commit, invite_id, invite_identity, invite_value, member_value, parse_change,
    proof_message, prove, public_value, redeem_value, redeemer, redemption_commit, Acl, AclWrite,
    InviteDef, InviteId, InviteState, InviteStatus, Redemption, Role, ACL_COLLECTION,
    INVITE_ID_LEN, INVITE_SECRET_LEN, MAX_INVITE_USES, PUBLIC_ID,
};

// §7-8 Storage.
#[cfg(not(target_arch = "wasm32"))]
pub use store::FileStorage;
pub use store::{MemStorage, Recovery, Storage};

// The repository.
#[cfg(not(target_arch = "wasm32"))]
pub use repo::system_clock;
pub use repo::{
    Admission, Clock, Durability, Export, HistoryEntry, OpenReport, Pending, ReceiveReport, Repo,
    RepoOptions, SealCheck, SealChecks, SealRequest, VerifyReport, ANONYMOUS,
    DEFAULT_MAX_PENDING_BYTES,
};

// §10 Queries.
pub use query::{
    Access, AggOp, AggregateQuery, Cursor, Filter, KeySel, LiveChange, LiveId, Plan, Pred, Query,
    QueryResult, SortKey, SortMethod, OPERATORS,
};

// §12 Sync.
pub use sync::{check_repo_name, decode_bundle, encode_bundle, Bundle};
pub use sync::{url_authority, Expected, SessionProof, NONCE_LEN};
pub use sync::{Client, ClientEvent, ErrorCode, Hub, Message, PushOutcome, Rights};
pub use sync::{ATTACH_CHUNK_BYTES, MAX_MESSAGE_BYTES, MAX_REPO_NAME, PROTOCOL_VERSION};

/// Test hooks, behind the `testing` feature (the crate's own tests and benches enable it):
/// the fault-injecting storage, the log's frame layer, the query engine and merge state on
/// their own, and the repository's commit graph. Not part of the shipped API.
#[cfg(feature = "testing")]
pub mod testing {
    pub use crate::graph::{CommitInfo, Graph};
    pub use crate::item::Item;
    pub use crate::query::QueryEngine;
    pub use crate::state::{ChangeSink, Collection, NoSink, State};
    pub use crate::store::fault::{FaultStorage, QuotaPool};
    pub use crate::store::log::{
        header_bytes, Log, Scan, FRAME_COMMIT, FRAME_HEADER_LEN, FRAME_PAD, FRAME_SEAL, HEADER_LEN,
        MAX_FRAME_PAYLOAD,
    };
    pub use crate::store::snapshot::index_blocks as snapshot_index_blocks;
    pub use crate::store::snapshot::table_segments as snapshot_table_segments;
    /// Key agreements (ECDH) made on the calling thread so far (encrypted repositories, §6.8).
    pub fn key_agreements() -> u64 {
        crate::crypt::key_agreements()
    }
    /// The snapshot's block checksum (docs/design.md §8, *Checksums*), to forge blocks in tests.
    pub fn snapshot_checksum(bytes: &[u8]) -> u32 {
        crate::hashing::block_sum(bytes)
    }
}
