//! Item keys: `collection/id`.

use crate::error::{Error, Result};

/// Longest collection name in bytes.
pub const MAX_COLLECTION: usize = 64;
/// Longest id in bytes.
pub const MAX_ID: usize = 512;

/// Split and validate `collection/id`. Collections are 1–64 bytes of `[A-Za-z0-9_-]`; ids are
/// 1–512 bytes of UTF-8 without control characters (they may contain `/`).
pub fn split_key(key: &str) -> Result<(&str, &str)> {
    let bad = |reason: &str| {
        Err(Error::InvalidKey {
            key: key.chars().take(600).collect(),
            reason: reason.to_string(),
        })
    };
    let Some((coll, id)) = key.split_once('/') else {
        return bad("expected collection/id");
    };
    if let Err(reason) = check_collection(coll) {
        return bad(&reason);
    }
    if id.is_empty() {
        return bad("id is empty");
    }
    if id.len() > MAX_ID {
        return bad(&format!("id longer than {MAX_ID} bytes"));
    }
    if id.chars().any(char::is_control) {
        return bad("id contains a control character");
    }
    Ok((coll, id))
}

/// Validate a collection name on its own.
pub fn validate_collection(coll: &str) -> Result<()> {
    check_collection(coll).map_err(|reason| Error::InvalidKey {
        key: coll.chars().take(100).collect(),
        reason,
    })
}

fn check_collection(coll: &str) -> std::result::Result<(), String> {
    if coll.is_empty() {
        return Err("collection is empty".into());
    }
    if coll.len() > MAX_COLLECTION {
        return Err(format!("collection longer than {MAX_COLLECTION} bytes"));
    }
    if !coll
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err("collection may hold only letters, digits, '_' and '-'".into());
    }
    Ok(())
}

/// Longest repository name in bytes.
pub const MAX_REPO_NAME: usize = 128;

/// A repository name: 1–128 bytes of `A–Z a–z 0–9 . _ -`, starting with a letter or digit (it
/// names a directory in OPFS and a file on the server, and is bound into every seal). Anything
/// else is `InvalidKeyError`.
pub fn check_repo_name(name: &str) -> Result<()> {
    let b = name.as_bytes();
    let ok = !b.is_empty()
        && b.len() <= MAX_REPO_NAME
        && b[0].is_ascii_alphanumeric()
        && b.iter()
            .all(|&c| c.is_ascii_alphanumeric() || c == b'.' || c == b'_' || c == b'-');
    if ok {
        return Ok(());
    }
    Err(Error::InvalidKey {
        key: name.chars().take(140).collect(),
        reason: format!(
            "a repository name is 1-{MAX_REPO_NAME} bytes of A-Z a-z 0-9 . _ -, starting with a letter or digit"
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys() {
        assert_eq!(split_key("items/1").unwrap(), ("items", "1"));
        assert_eq!(split_key("a/b/c").unwrap(), ("a", "b/c"));
        for bad in ["", "items", "/x", "items/", "it ems/1", "items/\n"] {
            assert!(
                matches!(split_key(bad), Err(Error::InvalidKey { .. })),
                "{bad:?}"
            );
        }
        assert!(split_key(&format!("c/{}", "x".repeat(513))).is_err());
    }
}
