//! Commits (docs/design.md §4: transactions over many items) and seals (§5: one signature over
//! a batch of commit ids). The encoder emits exactly one encoding per commit and the decoder
//! rejects any other (`encode.rs`), so a commit id (SHA-256 of the bytes, `id.rs`) names the
//! content unambiguously. Seals are in `seal.rs`, the keys that sign them in `crypto.rs`.

mod crypto;
mod elide;
mod encode;
mod id;
mod seal;

pub use crypto::{
    from_hex, hex, Identity, PublicKey, Signature, PUBLIC_KEY_LEN, SIGNATURE_LEN,
    UNCOMPRESSED_KEY_LEN,
};
pub use id::{CommitId, Stamp};
pub use seal::{Seal, MAX_SEAL_IDS};

use crate::value::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Commit format version.
pub const COMMIT_VERSION: u8 = 1;
/// Largest encoded commit.
pub const MAX_COMMIT_BYTES: usize = 64 << 20;
/// Most parents a commit may have.
pub const MAX_PARENTS: usize = 4096;
pub(crate) const FLAG_TRUSTED: u8 = 1;

/// A change to one field inside a [`Op::Patch`].
#[derive(Debug, Clone, PartialEq)]
pub enum FieldOp {
    /// Set the field to a value (a `Value::Set` replaces the whole set).
    Assign(Value),
    /// Remove the field.
    Unset,
    /// Add and remove elements of a set field. `remove` lists, for each element, the add stamps
    /// ("dots") the writer had observed: a concurrent add is not removed (add-wins).
    SetEdit {
        add: BTreeSet<String>,
        remove: BTreeMap<String, Vec<Stamp>>,
    },
}

/// What a commit does to one item.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// Replace the whole item.
    Put(Map),
    /// Delete the item (a tombstone ordered like any write).
    Delete,
    /// Change some fields.
    Patch(BTreeMap<String, FieldOp>),
}

/// One item's change inside a commit.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub collection: String,
    pub id: String,
    pub op: Op,
}

/// A transaction: parents, author, clock, and changes (sorted by key, one per key).
#[derive(Debug, Clone, PartialEq)]
pub struct Commit {
    /// Marked unsigned by design ("trusted mode"); verifying peers reject it unless configured.
    pub trusted: bool,
    pub author: PublicKey,
    pub hlc: u64,
    pub parents: Vec<CommitId>,
    pub changes: Vec<Change>,
}

impl Commit {
    /// The stamp every write of this commit carries.
    pub fn stamp(&self, id: &CommitId) -> Stamp {
        Stamp {
            hlc: self.hlc,
            author: self.author.tag(),
            commit: id.tag(),
        }
    }
}

/// What [`Commit::visit_shapes`] reports of a commit's changes: those of the collections
/// it wants, field by field, each value as its shape (`value::shallow_value`: numbers as they
/// are, other values empty of their kind; a set edit empty). Deletes are not reported.
pub(crate) trait ShapeVisitor {
    /// Whether the changes of `collection` are reported.
    fn wanted(&self, collection: &str) -> bool;
    /// A put (`put`) or a patch of `collection` begins.
    fn begin(&mut self, collection: &str, put: bool);
    /// One of its fields, ascending: a put's value as `Assign`, or a patch's field op.
    fn field(&mut self, collection: &str, name: &str, op: &FieldOp) -> crate::error::Result<()>;
    /// The change of `collection` ends.
    fn end(&mut self, collection: &str) -> crate::error::Result<()>;
}

/// The attachments a commit's attach ops record (in the order of its changes): what a sync
/// server checks an offered upload against (docs/design.md §12.2, *Attachment bytes*).
pub fn attachments_in(commit: &Commit) -> Vec<crate::attach::Attachment> {
    use crate::attach::{descriptor_of, is_attachment_field};
    let mut out = Vec::new();
    for c in &commit.changes {
        if let Op::Patch(fields) = &c.op {
            for (name, op) in fields {
                if let (true, FieldOp::Assign(v)) = (is_attachment_field(name), op) {
                    out.extend(descriptor_of(v));
                }
            }
        }
    }
    out
}
