//! Tests of the wire codec and of `Hub` and `Client` together, over in-memory repositories.

use super::wire::TYPE_ACK;
use super::*;
use crate::commit::CommitId;
use crate::commit::Identity;
use crate::error::{Error, ProtocolErrorKind};
use crate::repo::Repo;
use crate::repo::{Clock, RepoOptions};
use crate::store::MemStorage;
use crate::txn::Txn;
use crate::{map, Value};

const T0: u64 = 1_700_000_000_000;

fn clock() -> Clock {
    let mut t = T0;
    Box::new(move || {
        t += 1;
        t
    })
}

fn signed(n: u8) -> Repo<MemStorage> {
    let opts = RepoOptions::new(Some(Identity::from_entropy(&[n; 48])), clock());
    Repo::open(MemStorage::new(), None, opts).unwrap()
}

fn server() -> Hub<MemStorage> {
    let mut opts = RepoOptions::new(None, clock());
    opts.accept_trusted = false;
    Hub::new(Repo::open(MemStorage::new(), None, opts).unwrap()).unwrap()
}

fn write(r: &mut Repo<MemStorage>, key: &str, n: i64) {
    let mut t = Txn::new();
    t.put(key, map! { "n" => n }.as_map()).unwrap();
    r.commit(t).unwrap();
}

fn kind(e: Error) -> ProtocolErrorKind {
    match e {
        Error::Protocol { kind, .. } => kind,
        e => panic!("expected a protocol error, got {e:?}"),
    }
}

fn id(n: u8) -> CommitId {
    CommitId([n; 32])
}

#[test]
fn every_message_round_trips() {
    let msgs = vec![
        Message::Hello {
            repo: "team-1.notes_v2".into(),
            cursor: 300,
        },
        Message::Commits {
            from: 4,
            to: 9,
            commits: vec![(id(1), vec![1, 2, 3]), (id(2), vec![])],
            seals: vec![vec![9; 10]],
        },
        Message::Push {
            commits: vec![(id(3), vec![7; 200])],
            seals: vec![],
        },
        Message::Ack {
            ids: vec![id(1), id(2)],
        },
        Message::Error {
            code: ErrorCode::Signature,
            message: "SignatureError: bad".into(),
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
    }
    .encode();
    assert_eq!(b, vec![1, 1, 2, b'a', b'b', 0xac, 0x02]);
}

#[test]
fn decode_rejects_bad_input_with_typed_errors() {
    let good = Message::Ack { ids: vec![id(1)] }.encode();
    let mut v = good.clone();
    v[0] = 2;
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
        kind(Message::decode(&[1]).unwrap_err()),
        ProtocolErrorKind::Malformed
    );
    let big = vec![1u8; MAX_MESSAGE_BYTES + 1];
    assert_eq!(
        kind(Message::decode(&big).unwrap_err()),
        ProtocolErrorKind::TooLarge
    );
    // A count larger than the input cannot make the decoder allocate.
    assert_eq!(
        kind(Message::decode(&[1, TYPE_ACK, 0xff, 0xff, 0xff, 0x0f]).unwrap_err()),
        ProtocolErrorKind::Malformed
    );
    // Bad repository names (path separators, leading dot, empty).
    for name in ["../x", ".hidden", "", "a/b", "é"] {
        let b = Message::Hello {
            repo: name.into(),
            cursor: 0,
        }
        .encode();
        assert_eq!(
            kind(Message::decode(&b).unwrap_err()),
            ProtocolErrorKind::Malformed
        );
    }
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

/// Deliver every message through encode/decode, as a transport would.
fn wire(m: Message) -> Message {
    Message::decode(&m.encode()).unwrap()
}

/// Connect `c` to `hub`, exchange until quiet. Returns what the client pushed.
fn sync(hub: &mut Hub<MemStorage>, c: &mut Client, r: &mut Repo<MemStorage>) -> usize {
    let Message::Hello { repo, cursor } = wire(c.connect()) else {
        unreachable!()
    };
    for m in hub.hello(&repo, cursor).unwrap() {
        c.handle(r, wire(m)).unwrap();
    }
    let mut pushed = 0;
    while let Some(m) = c.outgoing(r).unwrap() {
        let Message::Push { commits, seals } = wire(m) else {
            unreachable!()
        };
        pushed += commits.len();
        let out = hub.push(&commits, &seals).unwrap();
        c.handle(r, wire(Message::Ack { ids: out.ack })).unwrap();
        let skip = commits.iter().map(|(id, _)| *id).collect();
        for m in hub.range(out.from, out.to, &skip).unwrap() {
            c.handle(r, wire(m)).unwrap();
        }
    }
    pushed
}

#[test]
fn peers_converge_through_a_hub_and_resume_from_their_cursor() {
    let mut hub = server();
    let (mut a, mut b) = (signed(1), signed(2));
    let mut ca = Client::new("r", 0, 0).unwrap();
    let mut cb = Client::new("r", 0, 0).unwrap();
    for i in 0..5 {
        write(&mut a, &format!("t/a{i}"), i);
        write(&mut b, &format!("t/b{i}"), i);
        write(&mut b, "t/shared", i);
    }
    write(&mut a, "t/shared", 100);
    assert_eq!(sync(&mut hub, &mut ca, &mut a), 6);
    assert_eq!(sync(&mut hub, &mut cb, &mut b), 10);
    assert_eq!(sync(&mut hub, &mut ca, &mut a), 0);
    assert_eq!(a.state_hash(), b.state_hash());
    assert_eq!(a.state_hash(), hub.repo().state_hash());
    assert_eq!(hub.head(), 16);
    assert_eq!((ca.cursor(), cb.cursor()), (16, 16));
    assert_eq!(ca.push_from(), 16);
    // Resume: only what was missed is sent.
    write(&mut b, "t/late", 1);
    sync(&mut hub, &mut cb, &mut b);
    let msgs = hub.hello("r", ca.cursor()).unwrap();
    let n: usize = msgs
        .iter()
        .map(|m| match m {
            Message::Commits { commits, .. } => commits.len(),
            _ => 0,
        })
        .sum();
    assert_eq!(n, 1);
    sync(&mut hub, &mut ca, &mut a);
    assert_eq!(a.state_hash(), b.state_hash());
    // A fresh client state (cursor 0, push_from 0) re-syncs correctly: only duplicates.
    let mut fresh = Client::new("r", 0, 0).unwrap();
    sync(&mut hub, &mut fresh, &mut a);
    assert_eq!(hub.head(), 17);
    assert_eq!(a.state_hash(), hub.repo().state_hash());
}

#[test]
fn tampered_or_unsigned_pushes_are_refused_and_nothing_is_stored() {
    let mut hub = server();
    let mut a = signed(1);
    write(&mut a, "t/x", 1);
    a.seal().unwrap();
    let (commits, seals) = a.export().unwrap();
    // Tampered: one byte of the commit changed.
    let mut bad = commits.clone();
    let last = bad[0].1.len() - 1;
    bad[0].1[last] ^= 1;
    let e = hub.push(&bad, &seals).unwrap_err();
    assert!(
        matches!(e, Error::Signature { .. } | Error::Decode { .. }),
        "{e:?}"
    );
    // Unsigned: the seal left out.
    let e = hub.push(&commits, &[]).unwrap_err();
    assert_eq!(ErrorCode::of(&e), ErrorCode::Signature);
    assert!(Message::error(&e).encode().len() > 2);
    // Trusted-mode commits are refused by a hub that requires signatures.
    let mut opts = RepoOptions::new(None, clock());
    opts.trusted = true;
    let mut t = Repo::open(MemStorage::new(), None, opts).unwrap();
    write(&mut t, "t/y", 1);
    let e = hub.push(&t.export().unwrap().0, &[]).unwrap_err();
    assert_eq!(ErrorCode::of(&e), ErrorCode::Signature);
    assert_eq!(hub.head(), 0);
    assert_eq!(
        hub.repo().storage().bytes().len() as u64,
        hub.repo().log_len()
    );
    // The good push still goes through afterwards.
    let out = hub.push(&commits, &seals).unwrap();
    assert_eq!((out.from, out.to, out.ack.len()), (0, 1, 1));
}

#[test]
fn hello_from_a_client_ahead_of_the_server_resets_and_repushes() {
    let mut hub = server();
    let mut a = signed(1);
    write(&mut a, "t/x", 1);
    let mut c = Client::new("r", 50, 1).unwrap();
    assert_eq!(sync(&mut hub, &mut c, &mut a), 1);
    assert_eq!(hub.head(), 1);
    assert_eq!(c.cursor(), 1);
}

#[test]
fn commits_out_of_order_are_a_protocol_error() {
    let mut a = signed(1);
    let mut c = Client::new("r", 0, 0).unwrap();
    c.connect();
    c.handle(
        &mut a,
        Message::Hello {
            repo: "r".into(),
            cursor: 3,
        },
    )
    .unwrap();
    let e = c
        .handle(
            &mut a,
            Message::Commits {
                from: 2,
                to: 3,
                commits: vec![],
                seals: vec![],
            },
        )
        .unwrap_err();
    assert_eq!(kind(e), ProtocolErrorKind::Unexpected);
    let _ = Value::from(1i64);
}

/// Catch-up one `Hub::batch` at a time gives the same commits as `Hub::hello`.
#[test]
fn stepwise_catch_up_matches_hello() {
    let mut hub = server();
    let mut a = signed(1);
    let big = "x".repeat(300_000);
    for i in 0..8 {
        let mut t = Txn::new();
        t.put(&format!("t/{i}"), map! { "s" => big.as_str() }.as_map())
            .unwrap();
        a.commit(t).unwrap();
    }
    sync(&mut hub, &mut Client::new("r", 0, 0).unwrap(), &mut a);
    let (hello, from) = hub.subscribe("r", 99).unwrap();
    assert_eq!(
        (hello, from),
        (
            Message::Hello {
                repo: "r".into(),
                cursor: 8
            },
            0
        )
    );
    let (mut b, mut c) = (signed(2), Client::new("r", 0, 0).unwrap());
    c.connect();
    c.handle(&mut b, hub.subscribe("r", 0).unwrap().0).unwrap();
    let (mut at, mut messages) = (0, 0);
    while at < hub.head() {
        let m = hub
            .batch(at, hub.head(), &Default::default(), 1 << 20)
            .unwrap();
        let Message::Commits { to, .. } = &m else {
            unreachable!()
        };
        assert!(*to > at, "every batch advances");
        at = *to;
        messages += 1;
        c.handle(&mut b, wire(m)).unwrap();
    }
    assert!(messages >= 2, "about 1 MiB per message");
    assert_eq!(b.state_hash(), a.state_hash());
    assert!(
        hub.write_snapshot().is_ok_and(|written| !written),
        "no snapshot file"
    );
}
