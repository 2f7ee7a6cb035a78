//! `Hub` and `Client` together: convergence, refusals, roles, catch-up.

use super::*;

/// Deliver every message through encode/decode, as a transport would.
fn wire(m: Message) -> Message {
    Message::decode(&m.encode()).unwrap()
}

/// Handshake `c` with `hub` as a server would; returns the session and the hub's reply (or
/// its refusal).
fn handshake(
    hub: &Hub<MemStorage>,
    c: &mut Client,
    r: &mut Repo<MemStorage>,
) -> (Option<PublicKey>, Result<Vec<Message>, Error>) {
    c.connect();
    let nonce = [5; NONCE_LEN];
    let challenge = Message::Challenge {
        nonce,
        server_time_ms: T0,
    };
    let ev = c.handle(r, wire(challenge)).unwrap();
    assert!(matches!(ev, ClientEvent::Challenged { .. }));
    let Message::Hello {
        repo, cursor, auth, ..
    } = wire(c.outgoing(r).unwrap().unwrap())
    else {
        unreachable!()
    };
    let h = hosts();
    let session = auth.map(|p| p.verify(&expected(&nonce, &h, T0), &repo).unwrap());
    (session, hub.hello(&repo, cursor, session.as_ref()))
}

/// Connect `c` to `hub`, exchange until quiet. Returns what the client pushed.
fn sync(hub: &mut Hub<MemStorage>, c: &mut Client, r: &mut Repo<MemStorage>) -> usize {
    try_sync(hub, c, r).unwrap()
}

fn try_sync(
    hub: &mut Hub<MemStorage>,
    c: &mut Client,
    r: &mut Repo<MemStorage>,
) -> Result<usize, Error> {
    let (session, reply) = handshake(hub, c, r);
    for m in reply? {
        c.handle(r, wire(m))?;
    }
    let admission = Admission::Server {
        session,
        allow_unowned: false,
    };
    let mut pushed = 0;
    while let Some(m) = c.outgoing(r).unwrap() {
        let Message::Push { commits, seals } = wire(m) else {
            unreachable!()
        };
        pushed += commits.len();
        let out = match hub.push(&admission, &commits, &seals) {
            Ok(out) => out,
            Err(e) => {
                c.handle(r, wire(Message::error(&e))).unwrap();
                return Err(e);
            }
        };
        c.handle(r, wire(Message::Ack { ids: out.ack })).unwrap();
        let skip = commits.iter().map(|(id, _)| *id).collect();
        for m in hub.range(out.from, out.to, &skip).unwrap() {
            c.handle(r, wire(m)).unwrap();
        }
    }
    Ok(pushed)
}

fn client() -> Client {
    Client::new(REPO, URL, 0, 0).unwrap()
}

#[test]
fn peers_converge_through_a_hub_and_resume_from_their_cursor() {
    let mut hub = server();
    let (mut a, mut b) = (signed(1), signed(2));
    let (mut ca, mut cb) = (client(), client());
    // A creates the repository (its first commit makes it the owner) and lets B write.
    write(&mut a, "t/a", 0);
    a.grant(&b.author(), Role::Writer).unwrap();
    assert_eq!(sync(&mut hub, &mut ca, &mut a), 2);
    assert_eq!(sync(&mut hub, &mut cb, &mut b), 0);
    for i in 0..5 {
        write(&mut a, &format!("t/a{i}"), i);
        write(&mut b, &format!("t/b{i}"), i);
        write(&mut b, "t/shared", i);
    }
    write(&mut a, "t/shared", 100);
    assert_eq!(sync(&mut hub, &mut ca, &mut a), 6);
    assert_eq!(sync(&mut hub, &mut cb, &mut b), 10);
    assert_eq!(sync(&mut hub, &mut ca, &mut a), 0);
    assert_eq!(a.state_hash().unwrap(), b.state_hash().unwrap());
    assert_eq!(
        a.state_hash().unwrap(),
        hub.repo_mut().state_hash().unwrap()
    );
    assert_eq!(hub.head(), 18);
    assert_eq!((ca.cursor(), cb.cursor()), (18, 18));
    assert_eq!(ca.push_from(), 18);
    // Resume: only what was missed is sent.
    write(&mut b, "t/late", 1);
    sync(&mut hub, &mut cb, &mut b);
    let msgs = hub.hello(REPO, ca.cursor(), Some(&a.author())).unwrap();
    let n: usize = msgs
        .iter()
        .map(|m| match m {
            Message::Commits { commits, .. } => commits.len(),
            _ => 0,
        })
        .sum();
    assert_eq!(n, 1);
    sync(&mut hub, &mut ca, &mut a);
    assert_eq!(a.state_hash().unwrap(), b.state_hash().unwrap());
    // A fresh client state (cursor 0, push_from 0) re-syncs correctly: only duplicates.
    let mut fresh = client();
    sync(&mut hub, &mut fresh, &mut a);
    assert_eq!(hub.head(), 19);
    assert_eq!(
        a.state_hash().unwrap(),
        hub.repo_mut().state_hash().unwrap()
    );
}

#[test]
fn tampered_unsigned_or_foreign_pushes_are_refused_and_nothing_is_stored() {
    let mut hub = server();
    let mut a = signed(1);
    write(&mut a, "t/x", 1);
    a.seal().unwrap();
    let (commits, seals) = a.export().unwrap();
    let me = Admission::Server {
        session: Some(a.author()),
        allow_unowned: false,
    };
    // Tampered: one byte of the commit changed.
    let mut bad = commits.clone();
    let last = bad[0].1.len() - 1;
    bad[0].1[last] ^= 1;
    let e = hub.push(&me, &bad, &seals).unwrap_err();
    assert!(
        matches!(e, Error::Signature { .. } | Error::Decode { .. }),
        "{e:?}"
    );
    // Unsigned: the seal left out.
    let e = hub.push(&me, &commits, &[]).unwrap_err();
    assert_eq!(ErrorCode::of(&e), ErrorCode::Signature);
    assert!(Message::error(&e).encode().len() > 2);
    // Trusted-mode commits are refused by a hub that requires signatures.
    let mut opts = RepoOptions::new(REPO, None, clock());
    opts.trusted = true;
    let mut t = Repo::open(MemStorage::new(), None, opts).unwrap();
    write(&mut t, "t/y", 1);
    let e = hub.push(&me, &t.export().unwrap().0, &[]).unwrap_err();
    assert_eq!(ErrorCode::of(&e), ErrorCode::Signature);
    // The same history sealed for another repository: refused by its seals.
    let mut opts = RepoOptions::new("elsewhere", Some(ident(1)), clock());
    opts.trusted = false;
    let mut other = Repo::open(MemStorage::new(), None, opts).unwrap();
    write(&mut other, "t/x", 1);
    other.seal().unwrap();
    let (oc, os) = other.export().unwrap();
    let e = hub.push(&me, &oc, &os).unwrap_err();
    assert!(
        matches!(
            &e,
            Error::Signature {
                kind: crate::SignatureErrorKind::WrongRepository,
                ..
            }
        ),
        "{e:?}"
    );
    // A session with no right in A's repository cannot push it; nor an unowned root.
    let stranger = Admission::Server {
        session: Some(ident(9).public()),
        allow_unowned: false,
    };
    let e = hub.push(&stranger, &commits, &seals).unwrap_err();
    assert_eq!(permission(e), PermissionErrorKind::CannotWrite);
    let mut opts = RepoOptions::new(REPO, None, clock());
    opts.trusted = true;
    let mut open_repo = Repo::open(MemStorage::new(), None, opts).unwrap();
    write(&mut open_repo, "t/z", 1);
    let mut opts = RepoOptions::new(REPO, None, clock());
    opts.accept_trusted = true;
    let mut hub2 = Hub::new(Repo::open(MemStorage::new(), None, opts).unwrap()).unwrap();
    let anyone = Admission::Server {
        session: None,
        allow_unowned: false,
    };
    let unowned = open_repo.export().unwrap().0;
    let e = hub2.push(&anyone, &unowned, &[]).unwrap_err();
    assert_eq!(permission(e), PermissionErrorKind::CannotCreate);
    let anyone = Admission::Server {
        session: None,
        allow_unowned: true,
    };
    assert_eq!(hub2.push(&anyone, &unowned, &[]).unwrap().to, 1);
    assert_eq!(hub.head(), 0);
    assert_eq!(
        hub.repo().storage().bytes().len() as u64,
        hub.repo().log_len()
    );
    // The good push still goes through afterwards.
    let out = hub.push(&me, &commits, &seals).unwrap();
    assert_eq!((out.from, out.to, out.ack.len()), (0, 1, 1));
}

#[test]
fn members_read_and_write_by_role_and_revocation_stops_a_writer() {
    let mut hub = server();
    let (mut owner, mut w, mut r, mut x) = (signed(1), signed(2), signed(3), signed(4));
    write(&mut owner, "t/0", 0);
    owner.grant(&w.author(), Role::Writer).unwrap();
    owner.grant(&r.author(), Role::Reader).unwrap();
    let (mut co, mut cw, mut cr, mut cx) = (client(), client(), client(), client());
    sync(&mut hub, &mut co, &mut owner);
    // A stranger cannot even read. That refusal of its session does not pause its pushes
    // (only a refused push does).
    let (_, reply) = handshake(&hub, &mut cx, &mut x);
    let e = reply.unwrap_err();
    cx.handle(&mut x, wire(Message::error(&e))).unwrap();
    assert!(!cx.refused());
    assert_eq!(permission(e), PermissionErrorKind::CannotRead);
    // The reader reads; its own writes are refused locally, before anything is written.
    sync(&mut hub, &mut cr, &mut r);
    assert_eq!(r.state_hash().unwrap(), owner.state_hash().unwrap());
    let mut t = Txn::new();
    t.put("t/r", map! { "n" => 1i64 }.as_map()).unwrap();
    assert_eq!(
        permission(r.commit(t).unwrap_err()),
        PermissionErrorKind::CannotWrite
    );
    // The writer writes; it may not change the access list.
    sync(&mut hub, &mut cw, &mut w);
    write(&mut w, "t/w1", 1);
    let e = w.grant(&x.author(), Role::Reader).unwrap_err();
    assert_eq!(permission(e), PermissionErrorKind::CannotAdminister);
    assert_eq!(sync(&mut hub, &mut cw, &mut w), 1);
    // Made a reader: a write made concurrently (before the change reached the writer) is
    // valid by the rule but refused by the server's admission rule; pushing stops instead of
    // retrying forever.
    owner.grant(&w.author(), Role::Reader).unwrap();
    sync(&mut hub, &mut co, &mut owner);
    write(&mut w, "t/w2", 2);
    let head = hub.head();
    let e = try_sync(&mut hub, &mut cw, &mut w).unwrap_err();
    assert_eq!(permission(e), PermissionErrorKind::CannotWrite);
    assert_eq!(hub.head(), head);
    assert!(cw.refused());
    // The change has arrived: the replica now refuses its own writes.
    let mut t = Txn::new();
    t.put("t/w3", map! { "n" => 3i64 }.as_map()).unwrap();
    assert_eq!(
        permission(w.commit(t).unwrap_err()),
        PermissionErrorKind::CannotWrite
    );
    // Revoked entirely: it may not even read.
    owner.revoke(&w.author()).unwrap();
    sync(&mut hub, &mut co, &mut owner);
    let e = try_sync(&mut hub, &mut cw, &mut w).unwrap_err();
    assert_eq!(permission(e), PermissionErrorKind::CannotRead);
    // Granted again: pushing resumes.
    owner.grant(&w.author(), Role::Writer).unwrap();
    sync(&mut hub, &mut co, &mut owner);
    sync(&mut hub, &mut cw, &mut w);
    assert!(!cw.refused());
    sync(&mut hub, &mut co, &mut owner);
    assert_eq!(w.state_hash().unwrap(), owner.state_hash().unwrap());
}

#[test]
fn public_switches_open_a_repository_to_anyone() {
    let mut hub = server();
    let (mut owner, mut x) = (signed(1), signed(4));
    write(&mut owner, "t/0", 0);
    owner.set_public(true, false).unwrap();
    let (mut co, mut cx) = (client(), client());
    sync(&mut hub, &mut co, &mut owner);
    assert_eq!(sync(&mut hub, &mut cx, &mut x), 0);
    assert_eq!(x.state_hash().unwrap(), owner.state_hash().unwrap());
    let mut t = Txn::new();
    t.put("t/x", map! { "n" => 1i64 }.as_map()).unwrap();
    assert!(x.commit(t).is_err());
    owner.set_public(true, true).unwrap();
    sync(&mut hub, &mut co, &mut owner);
    sync(&mut hub, &mut cx, &mut x);
    write(&mut x, "t/x", 1);
    assert_eq!(sync(&mut hub, &mut cx, &mut x), 1);
    assert!(hub.rights(None).read);
}

#[test]
fn a_second_root_is_refused_as_another_repository() {
    let mut hub = server();
    let (mut a, mut b) = (signed(1), signed(2));
    write(&mut a, "t/a", 1);
    write(&mut b, "t/b", 1);
    let (mut ca, mut cb) = (client(), client());
    sync(&mut hub, &mut ca, &mut a);
    a.grant(&b.author(), Role::Writer).unwrap();
    sync(&mut hub, &mut ca, &mut a);
    // B founded its own repository offline: even as a writer, it cannot join; A's root is
    // refused by B's replica (and B's by the server).
    let e = try_sync(&mut hub, &mut cb, &mut b).unwrap_err();
    assert_eq!(permission(e), PermissionErrorKind::ForeignRoot);
    b.seal().unwrap();
    let (commits, seals) = b.export().unwrap();
    let admission = Admission::Server {
        session: Some(b.author()),
        allow_unowned: false,
    };
    let e = hub.push(&admission, &commits, &seals).unwrap_err();
    assert_eq!(permission(e), PermissionErrorKind::ForeignRoot);
}

#[test]
fn hello_from_a_client_ahead_of_the_server_resets_and_repushes() {
    let mut hub = server();
    let mut a = signed(1);
    write(&mut a, "t/x", 1);
    let mut c = Client::new(REPO, URL, 50, 1).unwrap();
    assert_eq!(sync(&mut hub, &mut c, &mut a), 1);
    assert_eq!(hub.head(), 1);
    assert_eq!(c.cursor(), 1);
}

#[test]
fn out_of_order_messages_are_protocol_errors() {
    let mut a = signed(1);
    let mut c = client();
    c.connect();
    c.handle(
        &mut a,
        Message::Welcome {
            repo: REPO.into(),
            head: 3,
            rights: Rights::default(),
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
    let challenge = Message::Challenge {
        nonce: [1; NONCE_LEN],
        server_time_ms: T0,
    };
    assert_eq!(
        kind(c.handle(&mut a, challenge).unwrap_err()),
        ProtocolErrorKind::Unexpected
    );
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
    a.set_public(true, false).unwrap();
    sync(&mut hub, &mut client(), &mut a);
    let (welcome, from) = hub.subscribe(REPO, 99, None).unwrap();
    assert_eq!(
        (welcome, from),
        (
            Message::Welcome {
                repo: REPO.into(),
                head: 9,
                rights: Rights {
                    read: true,
                    write: false,
                    administer: false
                }
            },
            0
        )
    );
    let (mut b, mut c) = (signed(2), client());
    c.connect();
    c.handle(&mut b, hub.subscribe(REPO, 0, None).unwrap().0)
        .unwrap();
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
    assert_eq!(b.state_hash().unwrap(), a.state_hash().unwrap());
    assert!(
        hub.write_snapshot().is_ok_and(|written| !written),
        "no snapshot file"
    );
}

#[test]
fn a_client_whose_host_verified_the_seals_receives_like_any_other() {
    let mut hub = server();
    let (mut owner, mut r) = (signed(1), signed(3));
    write(&mut owner, "t/0", 0);
    owner.grant(&r.author(), Role::Reader).unwrap();
    let (mut co, mut cr) = (client(), client());
    sync(&mut hub, &mut co, &mut owner);
    let (_, reply) = handshake(&hub, &mut cr, &mut r);
    for m in reply.unwrap() {
        cr.handle_vouched(&mut r, wire(m)).unwrap();
    }
    assert_eq!(cr.cursor(), hub.head());
    assert_eq!(r.state_hash().unwrap(), owner.state_hash().unwrap());
    assert_eq!(r.verify().unwrap().commits, 2);
}

#[test]
fn rows_from_the_servers_own_store_skip_only_the_signature_check() {
    let mut a = signed(1);
    write(&mut a, "t/x", 1);
    a.seal().unwrap();
    let (commits, seals) = a.export().unwrap();
    // A seal whose signature is wrong: a peer's push is refused…
    let mut forged = seals.clone();
    let last = forged[0].len() - 1;
    forged[0][last] ^= 1;
    let e = server()
        .push(&Admission::Peer, &commits, &forged)
        .unwrap_err();
    assert_eq!(ErrorCode::of(&e), ErrorCode::Signature);
    // …rows of the store were verified by the node that stored them: taken in.
    let mut hub = server();
    assert_eq!(hub.push_stored(&commits, &forged).unwrap().to, 1);
    // Everything else is still checked: a changed commit does not match its id, and a commit
    // with no seal covering it is unsigned.
    let mut hub = server();
    let mut bad = commits.clone();
    let last = bad[0].1.len() - 1;
    bad[0].1[last] ^= 1;
    assert!(hub.push_stored(&bad, &seals).is_err());
    assert_eq!(
        ErrorCode::of(&hub.push_stored(&commits, &[]).unwrap_err()),
        ErrorCode::Signature
    );
    assert_eq!(hub.head(), 0);
}
