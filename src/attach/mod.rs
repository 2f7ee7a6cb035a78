//! Attachments (docs/design.md §6.7): files stored beside an item, outside the commit log.
//!
//! The bytes live in content-addressed files of the host (OPFS in the browser); the commit
//! records only a **descriptor** — SHA-256 of the bytes, their size and their media type — so a
//! seal over the commit covers the content. In the commit an attachment is the field op
//! `COMMIT_FIELD_ATTACH` (§4.1) on a field of the item whose name is the attachment's name
//! behind [`ATTACHMENT_PREFIX`], a character no user field name may hold (control characters
//! are refused, `value::validate_field_name`): attachments share the per-field merge rules of
//! §6.2 (last writer wins per `(key, name)`; a detach is an unset; a put or delete of the item
//! resets them) and are hidden from the item's visible value by the hosts' readers.
//!
//! In memory, an attach is `FieldOp::Assign` of the descriptor as a map
//! `{hash: bytes(32), size: number, type: string}` ([`descriptor_value`]); the commit codec
//! writes it with its own op code and fixed layout and refuses any other op on such a field
//! (but an unset), so the encoding stays canonical.

mod stream;

pub use stream::Sha256Stream;

use crate::error::{Error, Result};
use crate::value::{Map, Name, Value};

pub use crate::value::{is_attachment_field, ATTACHMENT_PREFIX};
/// Longest attachment name, in UTF-8 bytes.
pub const MAX_ATTACHMENT_NAME: usize = 255;
/// Longest media type, in UTF-8 bytes.
pub const MAX_ATTACHMENT_TYPE: usize = 255;
/// Largest attachment size a descriptor may claim (2^53 − 1: exact as a JavaScript number).
pub const MAX_ATTACHMENT_SIZE: u64 = (1 << 53) - 1;

/// What a commit records of one attachment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    /// SHA-256 of the bytes.
    pub hash: [u8; 32],
    /// Length of the bytes.
    pub size: u64,
    /// Media type (`""` when unknown).
    pub media_type: String,
}

/// Check an attachment name: 1..=255 bytes, no control characters ('.' and '/' are allowed:
/// names are file names such as `photo.jpg`, not paths into the item).
pub fn validate_attachment_name(name: &str) -> Result<()> {
    let bad = |reason: &str| {
        Err(Error::invalid_value(
            "name",
            format!("attachment name {name:?} {reason}"),
        ))
    };
    if name.is_empty() {
        return bad("is empty");
    }
    if name.len() > MAX_ATTACHMENT_NAME {
        return bad("is longer than 255 bytes");
    }
    if name.chars().any(char::is_control) {
        return bad("contains a control character");
    }
    Ok(())
}

/// Check a media type: at most 255 bytes, no control characters.
pub fn validate_media_type(t: &str) -> Result<()> {
    if t.len() > MAX_ATTACHMENT_TYPE || t.chars().any(char::is_control) {
        return Err(Error::invalid_value(
            "type",
            "a media type is at most 255 bytes without control characters",
        ));
    }
    Ok(())
}

/// The field name that holds attachment `name`.
pub fn attachment_field(name: &str) -> String {
    let mut f = String::with_capacity(name.len() + 1);
    f.push(ATTACHMENT_PREFIX);
    f.push_str(name);
    f
}

/// The attachment name a field name holds, if it is an attachment's.
pub fn attachment_name(field: &str) -> Option<&str> {
    field.strip_prefix(ATTACHMENT_PREFIX)
}

/// A field name as a commit may hold it: a user field name, or an attachment's.
pub(crate) fn validate_stored_field_name(name: &str) -> Result<()> {
    match attachment_name(name) {
        Some(a) => validate_attachment_name(a),
        None => crate::value::validate_field_name(name, ""),
    }
}

/// The descriptor as the value an item's attachment field holds.
pub fn descriptor_value(a: &Attachment) -> Value {
    let mut m = Map::new();
    m.insert(Name::new("hash"), Value::Bytes(a.hash.to_vec().into()));
    m.insert(Name::new("size"), Value::Number(a.size as f64));
    m.insert(Name::new("type"), Value::String(Name::new(&a.media_type)));
    Value::Map(m)
}

/// The descriptor an attachment field's value holds, or `None` when the value is not one.
pub fn descriptor_of(v: &Value) -> Option<Attachment> {
    let Value::Map(m) = v else { return None };
    if m.len() != 3 {
        return None;
    }
    let hash: [u8; 32] = match m.get("hash")? {
        Value::Bytes(b) => b.as_ref().try_into().ok()?,
        _ => return None,
    };
    let size = match m.get("size")? {
        Value::Number(n) if *n >= 0.0 && n.fract() == 0.0 && *n <= MAX_ATTACHMENT_SIZE as f64 => {
            *n as u64
        }
        _ => return None,
    };
    let media_type = match m.get("type")? {
        Value::String(s) => s.as_str().to_owned(),
        _ => return None,
    };
    Some(Attachment {
        hash,
        size,
        media_type,
    })
}

/// The attachments an item's value holds, by name (ascending).
pub fn attachments_of(value: &Map) -> Vec<(&str, Attachment)> {
    value
        .iter()
        .filter_map(|(k, v)| Some((attachment_name(k)?, descriptor_of(v)?)))
        .collect()
}

/// Whether a map holds any attachment field (the hosts' readers then leave them out).
pub fn has_attachments(value: &Map) -> bool {
    value.iter().any(|(k, _)| is_attachment_field(k))
}
