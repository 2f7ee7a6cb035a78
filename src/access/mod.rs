//! Who may read and write a repository (docs/design.md §6.4): the one permission rule, used
//! alike by the browser engine, the sync server and every other replica.
//!
//! Permissions are data. The reserved collection `_acl` holds one item per member,
//! `_acl/<public key hex>` = `{"role": "owner" | "writer" | "reader"}`, and the item
//! `_acl/public` = `{"read": bool, "write": bool}`. A grant is a put, a revocation a delete;
//! they travel in ordinary signed commits, so they sync, merge and verify like any data.
//!
//! **The rule** ([`check_commit`]). A commit counts only if its author was allowed to make it by
//! the access list of its causal past: the merge of the `_acl` writes of every counted commit
//! it descends from. No write wins by its clock: per entry, a write supersedes those in its own
//! causal past, and among concurrent writes the least privilege wins (a revocation beats a
//! grant); only the founder changes its own role. The root commit (the one without parents)
//! founds the repository: if it makes its own author owner, the repository is *owned* and that
//! author is its founder; a root without that claim founds an *unowned* repository, open to
//! everyone, whose access list nobody can change. In an owned repository, changing items needs
//! the role writer or owner (or the public write switch) and changing `_acl` needs owner.
//! Because a commit's causal past is fixed by its ancestry, every replica decides the same way,
//! whatever the order of delivery. A commit that does not count is stored without effect, so
//! the commits built on it connect; a revocation concurrent with a write does not undo that
//! write. A sync server adds an admission rule for *new* commits: a key revoked in the server's
//! current access list cannot push, not even on top of an old history, unless an honest
//! descendant in the same push vouches for the commit (`Repo::receive_as`).
//!
//! | file       | what                                                               |
//! |------------|--------------------------------------------------------------------|
//! | `role.rs`  | [`Role`]: a member's role                                          |
//! | `acl.rs`   | [`Acl`]: an access list, the merge of `_acl` writes (causal order)  |
//! | `invite.rs`| invites: a role for whoever proves possession of a one-time secret  |
//! | `redeem.rs`| the rule for a redemption; a redemption built from a link alone    |
//! | `parse.rs` | what a change to `_acl` means ([`AclWrite`]), and its shape rules  |
//! | `rule.rs`  | [`check_commit`]: the rule itself                                  |
//! | `table.rs` | [`AclTable`]: the access list after each commit, interned          |

mod acl;
mod invite;
mod parse;
mod redeem;
mod role;
mod rule;
mod table;

pub use acl::Acl;
pub use acl::{InviteState, InviteStatus, Redemption};
pub(crate) use acl::{Register, Write};
pub use invite::{
    invite_id, invite_identity, proof_message, prove, InviteDef, InviteId, INVITE_ID_LEN,
    INVITE_PREFIX, INVITE_SECRET_LEN, MAX_INVITE_USES,
};
pub use parse::{
    invite_value, member_value, parse_change, public_value, redeem_value, AclWrite, ACL_COLLECTION,
    PUBLIC_ID,
};
pub use redeem::{check_redemption, redeemer, redemption_commit};
pub use role::Role;
pub(crate) use rule::judge;
pub use rule::{check_commit, check_commit_bytes, is_void};
pub use table::AclTable;
