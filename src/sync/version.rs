//! The protocol version: byte 0 of every message (docs/design.md §12.2), and a part of the
//! bytes a session proof signs (§12.3), so the message codec and the handshake both build on it.

/// The protocol version this code speaks. Version 5 added the attachment messages
/// (`AttachOffer`, `AttachWant`, `AttachChunk`, `AttachGet`, `AttachError`). Version 4 added the `Hello`'s create flag (a
/// repository is created only by a verified root pushed by a session that said it creates);
/// version 3 made an `Error` carry the error's name and
/// kind as fields of their own (version 2 had one text, "Name: message"); version 2 added the
/// authenticated handshake (`Challenge`, `Hello` with a proof, `Welcome`).
pub const PROTOCOL_VERSION: u8 = 5;
