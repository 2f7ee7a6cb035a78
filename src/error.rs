//! Typed errors. One umbrella [`Error`] with a stable [`Error::name`] per variant; the wasm
//! bindings turn each into a JS `Error` subclass with that `name`.

use std::fmt;

/// What went wrong with a storage backend.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StorageErrorKind {
    /// The backend cannot be used at all (e.g. OPFS missing, not a secure context).
    Unavailable,
    /// The disk or the origin's quota is full.
    QuotaExceeded,
    /// A read past the end of the data.
    OutOfBounds,
    /// Any other I/O failure.
    Io,
}

/// An error reported by a [`crate::store::Storage`] backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageError {
    pub kind: StorageErrorKind,
    pub message: String,
}

impl StorageError {
    pub fn new(kind: StorageErrorKind, message: impl Into<String>) -> Self {
        StorageError {
            kind,
            message: message.into(),
        }
    }
    pub fn io(message: impl Into<String>) -> Self {
        Self::new(StorageErrorKind::Io, message)
    }
}

impl fmt::Display for StorageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "storage error ({:?}): {}", self.kind, self.message)
    }
}

impl std::error::Error for StorageError {}

impl StorageErrorKind {
    /// The stable name carried to JS (`StorageError.kind`).
    pub fn name(&self) -> &'static str {
        match self {
            StorageErrorKind::Unavailable => "unavailable",
            StorageErrorKind::QuotaExceeded => "quota-exceeded",
            StorageErrorKind::OutOfBounds => "out-of-bounds",
            StorageErrorKind::Io => "io",
        }
    }
}

impl From<std::io::Error> for StorageError {
    fn from(e: std::io::Error) -> Self {
        let kind = match e.kind() {
            std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded => {
                StorageErrorKind::QuotaExceeded
            }
            std::io::ErrorKind::UnexpectedEof => StorageErrorKind::OutOfBounds,
            _ => StorageErrorKind::Io,
        };
        StorageError::new(kind, e.to_string())
    }
}

/// Why a commit or seal failed signature checks.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SignatureErrorKind {
    /// The bytes do not hash to the id they claim (tampered content).
    Tampered,
    /// A signature is present and well-formed but does not verify.
    BadSignature,
    /// The signature verifies only under a different key than the commit's author.
    WrongKey,
    /// A signed commit arrived without any seal covering it.
    Missing,
    /// A signature or public key could not be parsed.
    Malformed,
    /// The commit is marked trusted (unsigned) and this peer requires signatures.
    Unsigned,
    /// A seal was made for another repository (a history copied from elsewhere).
    WrongRepository,
}

impl SignatureErrorKind {
    /// The stable name carried to JS (`SignatureError.kind`).
    pub fn name(&self) -> &'static str {
        match self {
            SignatureErrorKind::Tampered => "tampered",
            SignatureErrorKind::BadSignature => "bad-signature",
            SignatureErrorKind::WrongKey => "wrong-key",
            SignatureErrorKind::Missing => "missing",
            SignatureErrorKind::Malformed => "malformed",
            SignatureErrorKind::Unsigned => "unsigned",
            SignatureErrorKind::WrongRepository => "wrong-repository",
        }
    }
}

/// Why the access rule refused something (docs/design.md §6.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PermissionErrorKind {
    /// The key (or an anonymous session) may not read the repository.
    CannotRead,
    /// The author may not change items of the repository.
    CannotWrite,
    /// The author may not change the access list.
    CannotAdminister,
    /// A second root: the commit founds another repository than the one it was sent to.
    ForeignRoot,
    /// The server does not let this session create the repository.
    CannotCreate,
    /// The server has no repository of that name, and the session did not offer to create it
    /// (its `Hello` had no create flag): nothing is opened or kept for the name.
    NotFound,
    /// The repository's root was not written by the founder the application expected
    /// (`RepoOptions::expected_founder`, JS `open(name, { owner })`): a squatter's repository.
    WrongFounder,
    /// A redemption of an invite that is not in its causal past, whose proof is not the
    /// invite key's signature, or that asks for another role than the invite's.
    InviteInvalid,
    /// A redemption stamped after its invite's expiry.
    InviteExpired,
    /// A redemption of an invite with no use left in the commit's causal past.
    InviteUsed,
    /// A redemption of a revoked invite.
    InviteRevoked,
}

impl PermissionErrorKind {
    /// The stable name carried to JS (`PermissionError.kind`).
    pub fn name(self) -> &'static str {
        match self {
            PermissionErrorKind::CannotRead => "cannot-read",
            PermissionErrorKind::CannotWrite => "cannot-write",
            PermissionErrorKind::CannotAdminister => "cannot-administer",
            PermissionErrorKind::ForeignRoot => "foreign-root",
            PermissionErrorKind::CannotCreate => "cannot-create",
            PermissionErrorKind::NotFound => "not-found",
            PermissionErrorKind::WrongFounder => "wrong-founder",
            PermissionErrorKind::InviteInvalid => "invite-invalid",
            PermissionErrorKind::InviteExpired => "invite-expired",
            PermissionErrorKind::InviteUsed => "invite-used",
            PermissionErrorKind::InviteRevoked => "invite-revoked",
        }
    }
}

/// Why a sync session's proof of key possession was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthErrorKind {
    /// The answer is not a valid signature by the key it names.
    BadSignature,
    /// The answer was made for another challenge (a replay).
    Replayed,
    /// The answer came after the challenge expired.
    Stale,
    /// The answer names another server (URL) than this one.
    WrongServer,
    /// The answer or its key could not be parsed.
    Malformed,
    /// The server requires a bearer token (`--auth-jwks`) and the connection offered none.
    TokenMissing,
    /// The bearer token is longer than the server accepts; refused unparsed.
    TokenTooLarge,
    /// The bearer token is malformed, uses another algorithm, or its signature does not verify.
    TokenInvalid,
    /// The bearer token's `exp` has passed.
    TokenExpired,
    /// The bearer token's `nbf` lies ahead.
    TokenNotYetValid,
    /// The bearer token's `aud` does not name this server's audience.
    WrongAudience,
    /// The bearer token's `iss` is not the configured issuer.
    WrongIssuer,
    /// The bearer token names a key (`kid`) the server does not hold.
    UnknownKey,
    /// The bearer token's claims do not name the repository.
    TokenScope,
    /// The bearer token's claims do not allow creating a repository.
    TokenCannotCreate,
    /// The client could not get a token from the app (its `syncToken` function threw, answered
    /// no usable string, or took too long): raised by the client, never sent by a server.
    TokenUnavailable,
}

impl AuthErrorKind {
    /// The stable name carried to JS (`AuthError.kind`).
    pub fn name(self) -> &'static str {
        match self {
            AuthErrorKind::BadSignature => "bad-signature",
            AuthErrorKind::Replayed => "replayed",
            AuthErrorKind::Stale => "stale",
            AuthErrorKind::WrongServer => "wrong-server",
            AuthErrorKind::Malformed => "malformed",
            AuthErrorKind::TokenMissing => "token-missing",
            AuthErrorKind::TokenTooLarge => "token-too-large",
            AuthErrorKind::TokenInvalid => "token-invalid",
            AuthErrorKind::TokenExpired => "token-expired",
            AuthErrorKind::TokenNotYetValid => "token-not-yet-valid",
            AuthErrorKind::WrongAudience => "wrong-audience",
            AuthErrorKind::WrongIssuer => "wrong-issuer",
            AuthErrorKind::UnknownKey => "unknown-key",
            AuthErrorKind::TokenScope => "token-scope",
            AuthErrorKind::TokenCannotCreate => "token-cannot-create",
            AuthErrorKind::TokenUnavailable => "token-unavailable",
        }
    }
}

/// Why a sync protocol message was refused (`crate::sync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProtocolErrorKind {
    /// The message's protocol version is not one this peer speaks.
    Version,
    /// The message type byte is not a known message type.
    UnknownType,
    /// The message body is malformed (truncated, bad varint, bad name, out-of-range field).
    Malformed,
    /// Bytes after the end of the message.
    TrailingBytes,
    /// The message is larger than `sync::MAX_MESSAGE_BYTES`.
    TooLarge,
    /// A message that is not valid in the session's current state (e.g. `Push` before `Hello`).
    Unexpected,
}

/// Why an encrypted repository's data could not be decrypted on this device (docs/design.md
/// §6.8). The commit's signature was valid: a tampered ciphertext is a `SignatureError`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecryptErrorKind {
    /// No key of the commit's epoch was wrapped to this device (a member revoked before it, or
    /// one no owner has given keys yet).
    MissingKey,
    /// A key wrapped to this device does not open (wrapped to another key, or not by its owner).
    Unwrap,
    /// The ciphertext does not authenticate under the epoch's key (written with a wrong key).
    Aead,
    /// A sealed chunk or a wrapped key is not of the documented form.
    Malformed,
    /// A commit of an encrypted repository carries data changes in plaintext (not sealed):
    /// refused at receive, by a sync server and by a local write (docs/design.md §6.8).
    Plaintext,
}

impl DecryptErrorKind {
    pub fn name(self) -> &'static str {
        match self {
            DecryptErrorKind::MissingKey => "missing-key",
            DecryptErrorKind::Unwrap => "unwrap",
            DecryptErrorKind::Aead => "aead",
            DecryptErrorKind::Malformed => "malformed",
            DecryptErrorKind::Plaintext => "plaintext",
        }
    }
}

/// The umbrella error type of the core.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// A key is not of the form `collection/id` or breaks a limit.
    InvalidKey { key: String, reason: String },
    /// A value breaks a structural rule (depth, size, non-finite number, bad field name).
    InvalidValue { path: String, reason: String },
    /// A write breaks the collection's schema. `field` names the field, `rule` the rule.
    Schema {
        collection: String,
        field: String,
        rule: String,
    },
    /// A schema definition itself is malformed.
    InvalidSchema { collection: String, reason: String },
    /// A schema version does not fit (docs/design.md §2.4): a stored schema written at a
    /// version below the repository's, or a write by an application that understands only
    /// `version` to a repository whose stored schemas are at `stored` (newer).
    SchemaVersion {
        stored: u32,
        version: u32,
        reason: String,
    },
    /// Something is larger than its limit.
    TooLarge { what: String, size: u64, limit: u64 },
    /// The item does not exist (for operations that need it to).
    NotFound { key: String },
    /// A commit or seal failed signature checks.
    Signature {
        kind: SignatureErrorKind,
        detail: String,
    },
    /// Bytes that should be a commit, seal, snapshot or message could not be decoded.
    Decode { what: String, reason: String },
    /// Damage in the middle of the log. `offset` is where the first bad frame starts,
    /// `next_valid` where the next verifiable frame was found.
    Corrupt {
        offset: u64,
        next_valid: Option<u64>,
        reason: String,
    },
    /// `verify()` found a mismatch.
    VerifyFailed { reason: String },
    /// A remote commit's clock is too far in the future.
    ClockSkew { hlc_ms: u64, now_ms: u64 },
    /// A query is malformed.
    InvalidQuery { reason: String },
    /// A storage backend failed.
    Storage(StorageError),
    /// The repository was closed.
    Closed,
    /// A sync protocol message was refused.
    Protocol {
        kind: ProtocolErrorKind,
        detail: String,
    },
    /// The access rule refused a read or a write.
    Permission {
        kind: PermissionErrorKind,
        detail: String,
    },
    /// A sync session could not prove possession of its key.
    Auth { kind: AuthErrorKind, detail: String },
    /// A resource limit was reached (`what` names the limit, e.g. `connections`).
    Limit { what: String, detail: String },
    /// The service cannot serve the request now (shutting down, a repository that cannot be
    /// opened); try again later.
    Unavailable { detail: String },
    /// An encrypted repository's data could not be decrypted on this device.
    Decrypt {
        kind: DecryptErrorKind,
        detail: String,
    },
}

impl Error {
    /// The stable name the error carries across the JS boundary.
    pub fn name(&self) -> &'static str {
        match self {
            Error::InvalidKey { .. } => "InvalidKeyError",
            Error::InvalidValue { .. } => "InvalidValueError",
            Error::Schema { .. } => "SchemaError",
            Error::InvalidSchema { .. } => "InvalidSchemaError",
            Error::SchemaVersion { .. } => "SchemaVersionError",
            Error::TooLarge { .. } => "TooLargeError",
            Error::NotFound { .. } => "NotFoundError",
            Error::Signature { .. } => "SignatureError",
            Error::Decode { .. } => "DecodeError",
            Error::Corrupt { .. } => "CorruptError",
            Error::VerifyFailed { .. } => "VerifyError",
            Error::ClockSkew { .. } => "ClockSkewError",
            Error::InvalidQuery { .. } => "QueryError",
            Error::Storage(e) => match e.kind {
                StorageErrorKind::QuotaExceeded => "QuotaExceededError",
                StorageErrorKind::Unavailable => "StorageUnavailableError",
                _ => "StorageError",
            },
            Error::Closed => "ClosedError",
            Error::Protocol { .. } => "ProtocolError",
            Error::Permission { .. } => "PermissionError",
            Error::Auth { .. } => "AuthError",
            Error::Limit { .. } => "LimitError",
            Error::Unavailable { .. } => "UnavailableError",
            Error::Decrypt { .. } => "DecryptError",
        }
    }

    /// What kind of this error it is, as JS reads it (`err.kind`; for a `LimitError`,
    /// `err.limit`): the signature, storage, permission or authentication kind's name, or the
    /// limit reached. `None` for the other errors.
    pub fn kind(&self) -> Option<&str> {
        match self {
            Error::Signature { kind, .. } => Some(kind.name()),
            Error::Storage(e) => Some(e.kind.name()),
            Error::Permission { kind, .. } => Some(kind.name()),
            Error::Auth { kind, .. } => Some(kind.name()),
            Error::Decrypt { kind, .. } => Some(kind.name()),
            Error::Limit { what, .. } => Some(what),
            _ => None,
        }
    }

    pub(crate) fn decode(what: &str, reason: impl Into<String>) -> Self {
        Error::Decode {
            what: what.to_string(),
            reason: reason.into(),
        }
    }

    pub(crate) fn protocol(kind: ProtocolErrorKind, detail: impl Into<String>) -> Self {
        Error::Protocol {
            kind,
            detail: detail.into(),
        }
    }

    pub(crate) fn sig(kind: SignatureErrorKind, detail: impl Into<String>) -> Self {
        Error::Signature {
            kind,
            detail: detail.into(),
        }
    }

    pub(crate) fn invalid_value(path: &str, reason: impl Into<String>) -> Self {
        Error::InvalidValue {
            path: path.to_string(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidKey { key, reason } => write!(f, "invalid key {key:?}: {reason}"),
            Error::InvalidValue { path, reason } => write!(f, "invalid value at {path}: {reason}"),
            Error::Schema {
                collection,
                field,
                rule,
            } => write!(f, "schema of {collection:?}: field {field:?} {rule}"),
            Error::InvalidSchema { collection, reason } => {
                write!(f, "invalid schema for {collection:?}: {reason}")
            }
            Error::SchemaVersion {
                stored,
                version,
                reason,
            } => write!(
                f,
                "schema version {version} (the repository's is {stored}): {reason}"
            ),
            Error::TooLarge { what, size, limit } => {
                write!(f, "{what} is too large: {size} bytes, limit {limit}")
            }
            Error::NotFound { key } => write!(f, "no item at {key:?}"),
            Error::Signature { kind, detail } => {
                write!(f, "signature check failed ({kind:?}): {detail}")
            }
            Error::Decode { what, reason } => write!(f, "cannot decode {what}: {reason}"),
            Error::Corrupt {
                offset,
                next_valid,
                reason,
            } => match next_valid {
                Some(n) => write!(
                    f,
                    "log damaged at offset {offset} ({reason}); next valid frame at {n}"
                ),
                None => write!(f, "log damaged at offset {offset} ({reason})"),
            },
            Error::VerifyFailed { reason } => write!(f, "verification failed: {reason}"),
            Error::ClockSkew { hlc_ms, now_ms } => write!(
                f,
                "commit clock {hlc_ms} ms is too far ahead of local time {now_ms} ms"
            ),
            Error::InvalidQuery { reason } => write!(f, "invalid query: {reason}"),
            Error::Storage(e) => write!(f, "{e}"),
            Error::Closed => write!(f, "the repository is closed"),
            Error::Protocol { kind, detail } => {
                write!(f, "sync protocol error ({kind:?}): {detail}")
            }
            Error::Permission { kind, detail } => {
                write!(f, "permission denied ({}): {detail}", kind.name())
            }
            Error::Auth { kind, detail } => {
                write!(
                    f,
                    "session authentication failed ({}): {detail}",
                    kind.name()
                )
            }
            Error::Limit { what, detail } => write!(f, "limit reached ({what}): {detail}"),
            Error::Unavailable { detail } => write!(f, "unavailable: {detail}"),
            Error::Decrypt { kind, detail } => {
                write!(f, "cannot decrypt ({}): {detail}", kind.name())
            }
        }
    }
}

impl std::error::Error for Error {}

impl From<StorageError> for Error {
    fn from(e: StorageError) -> Self {
        Error::Storage(e)
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// One error of each variant, and of each storage kind (three of them name classes of their
    /// own). `slot` below makes the list complete: see there.
    pub(crate) fn examples() -> Vec<Error> {
        let s = |what: &str| what.to_string();
        let storage = |kind| Error::Storage(StorageError::new(kind, "disk"));
        vec![
            Error::InvalidKey {
                key: s("k"),
                reason: s("r"),
            },
            Error::invalid_value("f", "r"),
            Error::Schema {
                collection: s("c"),
                field: s("f"),
                rule: s("r"),
            },
            Error::InvalidSchema {
                collection: s("c"),
                reason: s("r"),
            },
            Error::TooLarge {
                what: s("item"),
                size: 2,
                limit: 1,
            },
            Error::SchemaVersion {
                stored: 2,
                version: 1,
                reason: s("r"),
            },
            Error::NotFound { key: s("c/1") },
            Error::sig(SignatureErrorKind::Tampered, "x"),
            Error::decode("commit", "truncated"),
            Error::Corrupt {
                offset: 1,
                next_valid: None,
                reason: s("crc"),
            },
            Error::VerifyFailed { reason: s("r") },
            Error::ClockSkew {
                hlc_ms: 2,
                now_ms: 1,
            },
            Error::InvalidQuery { reason: s("r") },
            storage(StorageErrorKind::Io),
            storage(StorageErrorKind::OutOfBounds),
            storage(StorageErrorKind::QuotaExceeded),
            storage(StorageErrorKind::Unavailable),
            Error::Closed,
            Error::protocol(ProtocolErrorKind::Malformed, "x"),
            Error::Permission {
                kind: PermissionErrorKind::CannotWrite,
                detail: s("d"),
            },
            Error::Auth {
                kind: AuthErrorKind::Stale,
                detail: s("d"),
            },
            Error::Limit {
                what: s("connections"),
                detail: s("d"),
            },
            Error::Unavailable { detail: s("d") },
            Error::Decrypt {
                kind: DecryptErrorKind::Aead,
                detail: s("d"),
            },
        ]
    }

    /// Number of `Error` variants: the slots of `slot`.
    const VARIANTS: usize = 21;

    /// Each variant's slot. A variant added to `Error` does not compile here until it gets an
    /// arm; its arm needs a new slot (so `VARIANTS` grows), and that slot stays empty, failing
    /// `every_variant_has_an_example`, until `examples` has one of it.
    fn slot(e: &Error) -> usize {
        match e {
            Error::InvalidKey { .. } => 0,
            Error::InvalidValue { .. } => 1,
            Error::Schema { .. } => 2,
            Error::InvalidSchema { .. } => 3,
            Error::TooLarge { .. } => 4,
            Error::NotFound { .. } => 5,
            Error::Signature { .. } => 6,
            Error::Decode { .. } => 7,
            Error::Corrupt { .. } => 8,
            Error::VerifyFailed { .. } => 9,
            Error::ClockSkew { .. } => 10,
            Error::InvalidQuery { .. } => 11,
            Error::Storage(_) => 12,
            Error::Closed => 13,
            Error::Protocol { .. } => 14,
            Error::Permission { .. } => 15,
            Error::Auth { .. } => 16,
            Error::Limit { .. } => 17,
            Error::Unavailable { .. } => 18,
            Error::SchemaVersion { .. } => 19,
            Error::Decrypt { .. } => 20,
        }
    }

    #[test]
    fn every_variant_has_an_example() {
        let mut seen = [false; VARIANTS];
        for e in examples() {
            seen[slot(&e)] = true;
        }
        let missing: Vec<usize> = (0..VARIANTS).filter(|&i| !seen[i]).collect();
        assert!(
            missing.is_empty(),
            "no example of the variants in slots {missing:?}"
        );
    }

    /// `www/lib/errors.js`.
    pub(crate) fn errors_js() -> String {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/www/lib/errors.js");
        std::fs::read_to_string(path).unwrap()
    }

    /// The entries of the object literal that `opening` (e.g. `const X = {`) starts in `js`,
    /// one a line, without their commas.
    pub(crate) fn js_object(js: &str, opening: &str) -> Vec<String> {
        let start = js.find(opening).unwrap_or_else(|| panic!("no {opening}"));
        let body = &js[start..start + js[start..].find("};").unwrap()];
        let entries = body.lines().skip(1);
        let entries = entries.map(|l| l.trim().trim_end_matches(',').to_string());
        entries.filter(|l| !l.is_empty()).collect()
    }

    /// The names of `errors.js`'s `ERROR_CLASSES` (and of every class it declares).
    fn js_error_classes() -> (BTreeSet<String>, BTreeSet<String>) {
        let js = errors_js();
        let listed = js_object(&js, "export const ERROR_CLASSES = {");
        let declared = js
            .lines()
            .filter_map(|l| l.strip_prefix("export class ")?.split(' ').next())
            .map(str::to_string)
            .collect();
        (listed.into_iter().collect(), declared)
    }

    /// `www/lib/ibexdb.d.ts`.
    fn dts() -> String {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/www/lib/ibexdb.d.ts");
        std::fs::read_to_string(path).unwrap()
    }

    /// The string literals of the `readonly kind` union that `class` declares in the .d.ts.
    fn dts_kinds(class: &str) -> BTreeSet<String> {
        let d = dts();
        let opening = format!("export declare class {class} extends");
        let start = d.find(&opening).unwrap_or_else(|| panic!("no {opening}"));
        let body = &d[start..start + d[start..].find("\n}").unwrap()];
        let line = body
            .lines()
            .find(|l| l.contains("readonly kind"))
            .unwrap_or_else(|| panic!("{class} declares no kind"));
        line.split('\'')
            .skip(1)
            .step_by(2)
            .map(String::from)
            .collect()
    }

    /// Every kind of the three kinded classes, with an exhaustive match per enum: a kind added
    /// in Rust does not compile here until it is listed, and then fails the test until the
    /// .d.ts's union names it.
    fn rust_kinds() -> [(&'static str, BTreeSet<String>); 4] {
        use AuthErrorKind as A;
        use DecryptErrorKind as D;
        use PermissionErrorKind as P;
        use SignatureErrorKind as S;
        let sig = [
            S::Tampered,
            S::BadSignature,
            S::WrongKey,
            S::Missing,
            S::Malformed,
            S::Unsigned,
            S::WrongRepository,
        ];
        for k in &sig {
            match k {
                S::Tampered
                | S::BadSignature
                | S::WrongKey
                | S::Missing
                | S::Malformed
                | S::Unsigned
                | S::WrongRepository => {}
            }
        }
        let perm = [
            P::CannotRead,
            P::CannotWrite,
            P::CannotAdminister,
            P::ForeignRoot,
            P::CannotCreate,
            P::NotFound,
            P::WrongFounder,
            P::InviteInvalid,
            P::InviteExpired,
            P::InviteUsed,
            P::InviteRevoked,
        ];
        for k in &perm {
            match k {
                P::CannotRead
                | P::CannotWrite
                | P::CannotAdminister
                | P::ForeignRoot
                | P::CannotCreate
                | P::NotFound
                | P::WrongFounder
                | P::InviteInvalid
                | P::InviteExpired
                | P::InviteUsed
                | P::InviteRevoked => {}
            }
        }
        let auth = [
            A::BadSignature,
            A::Replayed,
            A::Stale,
            A::WrongServer,
            A::Malformed,
            A::TokenMissing,
            A::TokenTooLarge,
            A::TokenInvalid,
            A::TokenExpired,
            A::TokenNotYetValid,
            A::WrongAudience,
            A::WrongIssuer,
            A::UnknownKey,
            A::TokenScope,
            A::TokenCannotCreate,
            A::TokenUnavailable,
        ];
        for k in &auth {
            match k {
                A::BadSignature
                | A::Replayed
                | A::Stale
                | A::WrongServer
                | A::Malformed
                | A::TokenMissing
                | A::TokenTooLarge
                | A::TokenInvalid
                | A::TokenExpired
                | A::TokenNotYetValid
                | A::WrongAudience
                | A::WrongIssuer
                | A::UnknownKey
                | A::TokenScope
                | A::TokenCannotCreate
                | A::TokenUnavailable => {}
            }
        }
        let dec = [
            D::MissingKey,
            D::Unwrap,
            D::Aead,
            D::Malformed,
            D::Plaintext,
        ];
        for k in &dec {
            match k {
                D::MissingKey | D::Unwrap | D::Aead | D::Malformed | D::Plaintext => {}
            }
        }
        let names = |v: Vec<&'static str>| v.into_iter().map(String::from).collect();
        [
            (
                "SignatureError",
                names(sig.iter().map(|k| k.name()).collect()),
            ),
            (
                "PermissionError",
                names(perm.iter().map(|k| k.name()).collect()),
            ),
            ("AuthError", names(auth.iter().map(|k| k.name()).collect())),
            (
                "DecryptError",
                names(dec.iter().map(|k| k.name()).collect()),
            ),
        ]
    }

    /// The kinds an app can test (`e.kind`) are typed in the .d.ts: the same lists as the core's.
    #[test]
    fn the_dts_error_kinds_are_the_core_kinds() {
        for (class, rust) in rust_kinds() {
            assert_eq!(
                dts_kinds(class),
                rust,
                "ibexdb.d.ts {class}.kind against the core"
            );
        }
    }

    /// The page rebuilds an error by its name: every name the core gives an error must have
    /// its class in `errors.js`, and `errors.js` has no class the core does not name except
    /// its base class, the panic the worker reports and the page's own errors (a migration, a
    /// passphrase).
    #[test]
    fn the_js_error_classes_are_the_core_error_names() {
        let rust: BTreeSet<String> = examples().iter().map(|e| e.name().to_string()).collect();
        let (listed, declared) = js_error_classes();
        assert_eq!(
            listed, declared,
            "errors.js: ERROR_CLASSES against its classes"
        );
        let js_only: BTreeSet<String> = [
            "IbexError",
            "PanicError",
            "MigrationError",
            "PassphraseError",
            // The worker's, about attachment files (www/lib/worker/attach-ops.js).
            "AttachmentNotFoundError",
            "AttachmentUnavailableError",
        ]
        .map(String::from)
        .into();
        let want: BTreeSet<String> = rust.union(&js_only).cloned().collect();
        assert_eq!(listed, want, "errors.js ERROR_CLASSES against Error::name");
    }
}
