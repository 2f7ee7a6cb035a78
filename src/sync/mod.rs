//! The sync protocol: binary messages and the two transport-free state machines that use them,
//! [`Hub`] (the server's side of one repository) and [`Client`] (a peer's side). Nothing here
//! knows about sockets, tasks or time: the server binary and the browser worker move the bytes.
//!
//! **Reconciliation.** The server numbers the commits of each repository by their position in
//! its commit table (1, 2, 3, …: the order in which it applied them, parents before children);
//! that number is the *sequence*. A client keeps the highest sequence it has seen (its *cursor*,
//! 0 = nothing) and resumes with it: the server streams every commit after the cursor, with the
//! seals that cover them, then every commit it stores later. In the other direction the client
//! pushes, in its own commit-table order, every commit the server has not acknowledged or sent
//! it. The server verifies a push with [`Repo::receive`] (seals, ids, causal buffering), flushes
//! it to storage, and only then acknowledges it and relays it to the repository's subscribers.
//! Design document §12 gives the byte layout of every message.
//!
//! | file        | what                                                           |
//! |-------------|----------------------------------------------------------------|
//! | `version.rs`| the protocol version, shared by the codec and the handshake    |
//! | `wire.rs`   | the messages and their codec                                   |
//! | `hub.rs`    | [`Hub`], the server's side                                     |
//! | `client.rs` | [`Client`], a peer's side                                      |
//! | `session.rs`| the authenticated handshake: challenge and signed answer       |
//! | `seals.rs`  | which stored seals to send along with which commits            |
//! | `bundle.rs` | the `IBEXBND1` bundle: a whole history in one byte string      |

mod bundle;
mod client;
mod hub;
mod seals;
mod session;
#[cfg(test)]
mod tests;
mod version;
mod wire;

pub use bundle::{decode_bundle, encode_bundle, Bundle};
pub use client::{Client, ClientEvent};
pub use hub::{Hub, PushOutcome};
pub use session::{url_authority, Expected, SessionProof, NONCE_LEN};
pub use version::PROTOCOL_VERSION;
pub use wire::ATTACH_CHUNK_BYTES;
pub use wire::{check_repo_name, ErrorCode, Message, Rights, MAX_MESSAGE_BYTES, MAX_REPO_NAME};
