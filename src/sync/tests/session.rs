//! The authenticated handshake: a proof verifies only for its challenge, server, repository and
//! time.

use super::*;

#[test]
fn a_session_proof_verifies_only_for_its_challenge_server_repository_and_time() {
    let nonce = [7; NONCE_LEN];
    let h = hosts();
    let p = SessionProof::sign(&ident(1), nonce, URL, REPO);
    assert_eq!(
        p.verify(&expected(&nonce, &h, T0 + 5), REPO).unwrap(),
        ident(1).public()
    );
    // Another connection's challenge: a replay.
    let other = [8; NONCE_LEN];
    let e = p.verify(&expected(&other, &h, T0), REPO).unwrap_err();
    assert_eq!(auth_kind(e), AuthErrorKind::Replayed);
    // Too late.
    let e = p
        .verify(&expected(&nonce, &h, T0 + 10_001), REPO)
        .unwrap_err();
    assert_eq!(auth_kind(e), AuthErrorKind::Stale);
    // Made for another server (a relay cannot reuse it).
    let relay = vec!["evil.test:443".to_string()];
    let e = p.verify(&expected(&nonce, &relay, T0), REPO).unwrap_err();
    assert_eq!(auth_kind(e), AuthErrorKind::WrongServer);
    // Made for another repository, or signed by another key than it names.
    let e = p.verify(&expected(&nonce, &h, T0), "other").unwrap_err();
    assert_eq!(auth_kind(e), AuthErrorKind::BadSignature);
    let mut forged = p.clone();
    forged.key = ident(2).public();
    let e = forged.verify(&expected(&nonce, &h, T0), REPO).unwrap_err();
    assert_eq!(auth_kind(e), AuthErrorKind::BadSignature);
    let mut junk = p.clone();
    junk.key = PublicKey([9; 49]);
    let e = junk.verify(&expected(&nonce, &h, T0), REPO).unwrap_err();
    assert_eq!(auth_kind(e), AuthErrorKind::Malformed);
    assert_eq!(
        Error::Auth {
            kind: AuthErrorKind::Stale,
            detail: String::new()
        }
        .name(),
        "AuthError"
    );
}

#[test]
fn url_authorities_are_normalized() {
    assert_eq!(
        url_authority("ws://Example.COM/x").unwrap(),
        "example.com:80"
    );
    assert_eq!(
        url_authority("wss://example.com").unwrap(),
        "example.com:443"
    );
    assert_eq!(
        url_authority("ws://127.0.0.1:8787/").unwrap(),
        "127.0.0.1:8787"
    );
    assert_eq!(url_authority("ws://[::1]:9/a?b").unwrap(), "[::1]:9");
    assert_eq!(url_authority("ws://[::1]/").unwrap(), "[::1]:80");
    for bad in ["http://x", "ws://", "ws://user@x/", "x"] {
        assert_eq!(url_authority(bad), None, "{bad}");
    }
}
