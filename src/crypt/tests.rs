//! The forms written before key ids (docs/design.md §6.8) still read: a wrap under the id
//! `<epoch>-<member>` and a sealed blob of version 1 (no key id, additional data
//! `"ibexdb-e2e/1"`); and a wrap whose id names another key than it holds is refused.

use super::*;

fn id(n: u8) -> Identity {
    Identity::generate(&[n; 48]).unwrap()
}

fn counter() -> impl FnMut(&mut [u8]) {
    let mut c = 0u8;
    move |b: &mut [u8]| {
        for x in b {
            c = c.wrapping_add(1);
            *x = c;
        }
    }
}

fn root_wrapping(owner: &Identity, id: String, v: Map) -> Commit {
    Commit {
        trusted: false,
        author: owner.public(),
        hlc: 1 << 16,
        parents: Vec::new(),
        changes: vec![Change {
            collection: KEYS_COLLECTION.into(),
            id,
            op: Op::Put(v),
        }],
    }
}

#[test]
fn a_legacy_wrap_and_a_version_1_blob_still_open() {
    let owner = id(1);
    let mut k = Keyring::new(owner.clone(), "r");
    let key = [7u8; KEY_LEN];
    let v = k
        .wrap_value(0, &key, &owner.public(), &mut counter())
        .unwrap();
    let legacy = format!("{:08x}-{}", 0, owner.public().to_hex());
    let root = root_wrapping(&owner, legacy, v);
    assert!(k.learn(&root, &Acl::default()).is_empty());
    assert!(k.holds(0, Some(&key_id(&key))));
    // A version 1 blob: u8 1, u32 epoch, nonce, ciphertext and tag under the v1 data.
    let mut m = Map::new();
    m.insert("title".into(), Value::from("legacy"));
    let data = vec![Change {
        collection: "tasks".into(),
        id: "a".into(),
        op: Op::Put(m),
    }];
    let inner = Commit {
        trusted: false,
        author: owner.public(),
        hlc: 5 << 16,
        parents: Vec::new(),
        changes: data.clone(),
    };
    let enc = inner.encode();
    let mut plain = (enc.len() as u32).to_be_bytes().to_vec();
    plain.extend_from_slice(&enc);
    plain.resize(4 + enc.len().div_ceil(PAD) * PAD, 0);
    let mut outer = Commit {
        changes: Vec::new(),
        parents: vec![CommitId([1; 32])],
        ..inner
    };
    let nonce = [3u8; NONCE_LEN];
    let ct = cipher::seal(&key, &nonce, &k.aad(&outer, 0, None), &plain);
    let mut blob = vec![1u8];
    blob.extend_from_slice(&0u32.to_be_bytes());
    blob.extend_from_slice(&nonce);
    blob.extend_from_slice(&ct);
    let mut c = Map::new();
    c.insert(CHUNK_FIELD.into(), Value::from(blob));
    outer.changes = vec![Change {
        collection: SEALED_COLLECTION.into(),
        id: "0000".into(),
        op: Op::Put(c),
    }];
    k.open(&mut outer).unwrap();
    assert_eq!(outer.changes, data);
}

#[test]
fn a_wrap_whose_id_names_another_key_is_refused() {
    let owner = id(1);
    let mut k = Keyring::new(owner.clone(), "r");
    let key = [7u8; KEY_LEN];
    let v = k
        .wrap_value(0, &key, &owner.public(), &mut counter())
        .unwrap();
    let wrong = wrap_id(0, &key_id(&[8u8; KEY_LEN]), &owner.public());
    let errors = k.learn(&root_wrapping(&owner, wrong, v), &Acl::default());
    assert!(matches!(
        errors.as_slice(),
        [Error::Decrypt {
            kind: DecryptErrorKind::Malformed,
            ..
        }]
    ));
    assert!(!k.has_keys());
}
