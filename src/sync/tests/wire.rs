//! The messages: their layout, their bounds, and the errors and codes they carry.

use super::*;
use crate::sync::wire::TYPE_ACK;

#[test]
fn every_message_round_trips() {
    let msgs = vec![
        Message::Challenge {
            nonce: [3; NONCE_LEN],
            server_time_ms: T0,
        },
        Message::Hello {
            repo: "team-1.notes_v2".into(),
            cursor: 300,
            auth: None,
            create: false,
        },
        Message::Hello {
            repo: "team-1.notes_v2".into(),
            cursor: 0,
            auth: Some(proof()),
            create: false,
        },
        Message::Welcome {
            repo: "r".into(),
            head: 12,
            rights: Rights {
                read: true,
                write: true,
                administer: false,
            },
        },
        Message::Commits {
            from: 4,
            to: 9,
            commits: vec![(id(1), vec![1, 2, 3]), (id(2), vec![])],
            seals: vec![vec![9; crate::commit::Seal::MIN_BYTES]],
        },
        Message::Push {
            commits: vec![(id(3), vec![7; 200])],
            seals: vec![],
        },
        Message::Ack {
            ids: vec![id(1), id(2)],
        },
        Message::Error {
            code: ErrorCode::Permission,
            name: "PermissionError".into(),
            kind: Some("cannot-write".into()),
            message: "no".into(),
        },
        Message::Error {
            code: ErrorCode::Other,
            name: "QueryError".into(),
            kind: None,
            message: String::new(),
        },
    ];
    for m in msgs {
        let b = m.encode();
        assert_eq!(b[0], PROTOCOL_VERSION);
        assert_eq!(Message::decode(&b).unwrap(), m);
    }
}

#[test]
fn hello_layout_is_as_documented() {
    let b = Message::Hello {
        repo: "ab".into(),
        cursor: 300,
        auth: None,
        create: false,
    }
    .encode();
    assert_eq!(
        b,
        vec![PROTOCOL_VERSION, 1, 2, b'a', b'b', 0xac, 0x02, 0, 0]
    );
}

#[test]
fn error_layout_is_as_documented() {
    let b = Message::Error {
        code: ErrorCode::Limit,
        name: "LimitError".into(),
        kind: Some("push rate".into()),
        message: "over".into(),
    }
    .encode();
    let mut want = vec![PROTOCOL_VERSION, 5, 10, 10];
    want.extend(b"LimitError");
    want.push(9);
    want.extend(b"push rate");
    want.push(4);
    want.extend(b"over");
    assert_eq!(b, want);
    // No kind: an empty string.
    let b = Message::Error {
        code: ErrorCode::Unavailable,
        name: "UnavailableError".into(),
        kind: None,
        message: String::new(),
    }
    .encode();
    assert_eq!(&b[..3], [PROTOCOL_VERSION, 5, 11]);
    assert_eq!(&b[b.len() - 2..], [0, 0]);
}

#[test]
fn an_error_message_carries_the_core_errors_fields() {
    let cases = [
        (
            Error::Permission {
                kind: PermissionErrorKind::CannotWrite,
                detail: "no".into(),
            },
            ErrorCode::Permission,
            Some("cannot-write"),
        ),
        (
            Error::Limit {
                what: "push rate".into(),
                detail: "slow down".into(),
            },
            ErrorCode::Limit,
            Some("push rate"),
        ),
        (
            Error::sig(crate::SignatureErrorKind::WrongRepository, "elsewhere"),
            ErrorCode::Signature,
            Some("wrong-repository"),
        ),
        (
            Error::Unavailable {
                detail: "later".into(),
            },
            ErrorCode::Unavailable,
            None,
        ),
    ];
    for (e, code, kind) in cases {
        let m = Message::decode(&Message::error(&e).encode()).unwrap();
        let want = Message::Error {
            code,
            name: e.name().into(),
            kind: kind.map(str::to_string),
            message: e.to_string(),
        };
        assert_eq!(m, want);
    }
}

#[test]
fn error_fields_are_bounded_and_names_are_letters() {
    let error = |name: &str, kind: &str, message: &str| {
        let mut w = crate::codec::Writer::new();
        w.u8(PROTOCOL_VERSION);
        w.u8(5);
        w.varint(8);
        w.lp(name.as_bytes());
        w.lp(kind.as_bytes());
        w.lp(message.as_bytes());
        Message::decode(&w.into_inner())
    };
    assert!(error("PermissionError", "cannot-read", "no").is_ok());
    let long_name = "E".repeat(65);
    let long_kind = "k".repeat(65);
    let long_text = "t".repeat(4097);
    for (name, kind_, text) in [
        ("", "", ""),
        ("Bad Name", "", ""),
        ("Error1", "", ""),
        ("Érreur", "", ""),
        (long_name.as_str(), "", ""),
        ("LimitError", long_kind.as_str(), ""),
        ("LimitError", "", long_text.as_str()),
    ] {
        let e = error(name, kind_, text).unwrap_err();
        assert_eq!(kind(e), ProtocolErrorKind::Malformed, "{name:?} {kind_:?}");
    }
    // The encoder cuts an over-long text at a character boundary, so what it sends decodes.
    let m = Message::Error {
        code: ErrorCode::Other,
        name: "StorageError".into(),
        kind: None,
        message: "é".repeat(3000),
    };
    let Message::Error { message, .. } = Message::decode(&m.encode()).unwrap() else {
        panic!("not an error")
    };
    assert_eq!(message, "é".repeat(2048));
}

#[test]
fn decode_rejects_bad_input_with_typed_errors() {
    let good = Message::Ack { ids: vec![id(1)] }.encode();
    let mut v = good.clone();
    v[0] = 1;
    assert_eq!(
        kind(Message::decode(&v).unwrap_err()),
        ProtocolErrorKind::Version
    );
    let mut v = good.clone();
    v[1] = 99;
    assert_eq!(
        kind(Message::decode(&v).unwrap_err()),
        ProtocolErrorKind::UnknownType
    );
    let mut v = good.clone();
    v.push(0);
    assert_eq!(
        kind(Message::decode(&v).unwrap_err()),
        ProtocolErrorKind::TrailingBytes
    );
    assert_eq!(
        kind(Message::decode(&good[..good.len() - 1]).unwrap_err()),
        ProtocolErrorKind::Malformed
    );
    assert_eq!(
        kind(Message::decode(&[2]).unwrap_err()),
        ProtocolErrorKind::Malformed
    );
    let big = vec![2u8; MAX_MESSAGE_BYTES + 1];
    assert_eq!(
        kind(Message::decode(&big).unwrap_err()),
        ProtocolErrorKind::TooLarge
    );
    // A count larger than the input cannot make the decoder allocate.
    assert_eq!(
        kind(Message::decode(&[PROTOCOL_VERSION, TYPE_ACK, 0xff, 0xff, 0xff, 0x0f]).unwrap_err()),
        ProtocolErrorKind::Malformed
    );
    // Bad repository names (path separators, leading dot, empty) have their own error, which
    // travels with the code `InvalidRepository`.
    for name in ["../x", ".hidden", "", "a/b", "é", "-x"] {
        let b = Message::Hello {
            repo: name.into(),
            cursor: 0,
            auth: None,
            create: false,
        }
        .encode();
        let e = Message::decode(&b).unwrap_err();
        assert_eq!(e.name(), "InvalidKeyError", "{name:?}");
        assert_eq!(ErrorCode::of(&e), ErrorCode::InvalidRepository);
    }
    // A bad authentication flag, a bad create flag, a bad rights byte.
    let b = Message::Hello {
        repo: "r".into(),
        cursor: 0,
        auth: None,
        create: true,
    }
    .encode();
    for at in [b.len() - 2, b.len() - 1] {
        let mut bad = b.clone();
        bad[at] = 2;
        assert_eq!(
            kind(Message::decode(&bad).unwrap_err()),
            ProtocolErrorKind::Malformed
        );
    }
    let mut b = Message::Welcome {
        repo: "r".into(),
        head: 0,
        rights: Rights::default(),
    }
    .encode();
    *b.last_mut().unwrap() = 8;
    assert_eq!(
        kind(Message::decode(&b).unwrap_err()),
        ProtocolErrorKind::Malformed
    );
    // A range that ends before it starts, or holds fewer sequences than commits.
    let b = Message::Commits {
        from: 5,
        to: 4,
        commits: vec![],
        seals: vec![],
    }
    .encode();
    assert_eq!(
        kind(Message::decode(&b).unwrap_err()),
        ProtocolErrorKind::Malformed
    );
    let b = Message::Commits {
        from: 5,
        to: 5,
        commits: vec![(id(1), vec![])],
        seals: vec![],
    }
    .encode();
    assert_eq!(
        kind(Message::decode(&b).unwrap_err()),
        ProtocolErrorKind::Malformed
    );
    assert_eq!(
        Error::protocol(ProtocolErrorKind::Version, "x").name(),
        "ProtocolError"
    );
}

// ----- the codes the page reads ---------------------------------------------------------------

/// `www/lib/errors.js` keeps the class of each error code (`SYNC_CODES`, for a name it does not
/// know): each must be a name the core sends with that code, and every code but `Other` must
/// have one.
#[test]
fn the_js_sync_codes_match_the_error_codes() {
    use std::collections::{BTreeMap, BTreeSet};
    let mut names: BTreeMap<u64, BTreeSet<&str>> = BTreeMap::new();
    let examples = crate::error::tests::examples();
    for e in &examples {
        let code = ErrorCode::of(e);
        assert_eq!(
            ErrorCode::from_u64(code as u64),
            code,
            "{code:?} reads back"
        );
        if code != ErrorCode::Other {
            names.entry(code as u64).or_default().insert(e.name());
        }
    }
    let codes: BTreeSet<u64> = (0..=255u64)
        .map(ErrorCode::from_u64)
        .filter(|c| *c != ErrorCode::Other)
        .map(|c| c as u64)
        .collect();
    assert_eq!(
        codes,
        names.keys().copied().collect(),
        "every code has an example"
    );
    use crate::error::tests::{errors_js, js_object};
    let table: BTreeMap<u64, String> = js_object(&errors_js(), "const SYNC_CODES = {")
        .iter()
        .filter_map(|l| {
            let (code, name) = l.split_once(": ")?;
            Some((code.parse().ok()?, name.trim_matches('\'').to_string()))
        })
        .collect();
    assert_eq!(
        table.keys().copied().collect::<BTreeSet<u64>>(),
        codes,
        "errors.js SYNC_CODES: {table:?}"
    );
    for (code, name) in &table {
        assert!(
            names[code].contains(name.as_str()),
            "errors.js SYNC_CODES[{code}] = {name}, but the core sends {:?} with it",
            names[code]
        );
    }
}

#[test]
fn attachment_messages_round_trip_and_bound_their_chunks() {
    use crate::sync::wire::ATTACH_CHUNK_BYTES;
    let e = Error::Limit {
        what: "attachment size".into(),
        detail: "over".into(),
    };
    let msgs = vec![
        Message::AttachOffer {
            hash: [1; 32],
            size: 1 << 40,
        },
        Message::AttachWant {
            hash: [2; 32],
            offset: 7,
        },
        Message::AttachChunk {
            hash: [3; 32],
            offset: 9,
            bytes: vec![5; ATTACH_CHUNK_BYTES],
        },
        Message::AttachChunk {
            hash: [3; 32],
            offset: 0,
            bytes: vec![],
        },
        Message::AttachGet {
            hash: [4; 32],
            size: 10,
            offset: 10,
            length: 1 << 20,
        },
        Message::attach_error([6; 32], &e),
    ];
    for m in msgs {
        let b = m.encode();
        assert_eq!(b[0], PROTOCOL_VERSION);
        assert_eq!(Message::decode(&b).unwrap(), m);
    }
    // `AttachOffer{hash 00…, size 300}` = 05 08, 32 zero bytes, ac 02.
    let b = Message::AttachOffer {
        hash: [0; 32],
        size: 300,
    }
    .encode();
    assert_eq!(b.len(), 36);
    assert_eq!((&b[..2], &b[34..]), (&[5u8, 8][..], &[0xacu8, 0x02][..]));
    let over = Message::AttachChunk {
        hash: [3; 32],
        offset: 0,
        bytes: vec![0; ATTACH_CHUNK_BYTES + 1],
    };
    assert!(
        Message::decode(&over.encode()).is_err(),
        "chunk over the bound"
    );
    let past = Message::AttachGet {
        hash: [4; 32],
        size: 10,
        offset: 11,
        length: 1,
    };
    assert!(
        Message::decode(&past.encode()).is_err(),
        "offset past the size"
    );
}
