//! The attachment messages of the sync protocol (version 5; docs/design.md §12.2, *Attachment
//! bytes*): an upload is `AttachOffer` → `AttachWant{offset}` → `AttachChunk`s from that offset →
//! `AttachWant{offset = size}` once the server holds the bytes; a download is `AttachGet` →
//! `AttachChunk`s to the end. A refusal of either is an `AttachError` naming the hash, and the
//! session goes on.

use super::wire::{decode_error, write_error, ErrorCode, Message};
use crate::codec::{Reader, Writer};
use crate::error::{Error, Result};

pub const TYPE_ATTACH_OFFER: u8 = 8;
pub const TYPE_ATTACH_WANT: u8 = 9;
pub const TYPE_ATTACH_CHUNK: u8 = 10;
pub const TYPE_ATTACH_GET: u8 = 11;
pub const TYPE_ATTACH_ERROR: u8 = 12;

/// Largest `AttachChunk` body: 256 KiB (under the server's default `--max-message-bytes`
/// of 16 MiB; a server configured below a chunk's message refuses it as too large).
pub const ATTACH_CHUNK_BYTES: usize = 256 << 10;

impl Message {
    /// An `AttachError` about `hash` for a core error: its code, name, kind and text.
    pub fn attach_error(hash: [u8; 32], e: &Error) -> Message {
        Message::AttachError {
            hash,
            code: ErrorCode::of(e),
            name: e.name().to_string(),
            kind: e.kind().map(str::to_string),
            message: e.to_string(),
        }
    }
}

pub(super) fn encode(w: &mut Writer, m: &Message) {
    match m {
        Message::AttachOffer { hash, size } => {
            w.bytes(hash);
            w.varint(*size);
        }
        Message::AttachWant { hash, offset } => {
            w.bytes(hash);
            w.varint(*offset);
        }
        Message::AttachChunk {
            hash,
            offset,
            bytes,
        } => {
            w.bytes(hash);
            w.varint(*offset);
            w.lp(bytes);
        }
        Message::AttachGet { hash, size, offset } => {
            w.bytes(hash);
            w.varint(*size);
            w.varint(*offset);
        }
        Message::AttachError {
            hash,
            code,
            name,
            kind,
            message,
        } => {
            w.bytes(hash);
            write_error(w, *code, name, kind.as_deref(), message);
        }
        _ => unreachable!("not an attachment message"),
    }
}

pub(super) fn decode(ty: u8, r: &mut Reader<'_>) -> Result<Message> {
    let hash = r.array::<32>()?;
    Ok(match ty {
        TYPE_ATTACH_OFFER => Message::AttachOffer {
            hash,
            size: r.varint()?,
        },
        TYPE_ATTACH_WANT => Message::AttachWant {
            hash,
            offset: r.varint()?,
        },
        TYPE_ATTACH_CHUNK => {
            let offset = r.varint()?;
            let bytes = r.lp()?;
            if bytes.len() > ATTACH_CHUNK_BYTES {
                return Err(r.err("attachment chunk larger than ATTACH_CHUNK_BYTES"));
            }
            Message::AttachChunk {
                hash,
                offset,
                bytes: bytes.to_vec(),
            }
        }
        TYPE_ATTACH_GET => {
            let size = r.varint()?;
            let offset = r.varint()?;
            if offset > size {
                return Err(r.err("attachment offset past its size"));
            }
            Message::AttachGet { hash, size, offset }
        }
        _ => match decode_error(r)? {
            Message::Error {
                code,
                name,
                kind,
                message,
            } => Message::AttachError {
                hash,
                code,
                name,
                kind,
                message,
            },
            _ => unreachable!("decode_error returns an Error"),
        },
    })
}
