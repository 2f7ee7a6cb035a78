//! Convergence: replicas that receive the same commits, in any order and with duplicates,
//! end with identical state. Seeded multi-peer simulations; a failure prints its seed
//! (rerun one with IBEX_SEED=n).

mod common;
use common::*;
use ibexdb::{Map, MemStorage, Repo, RepoOptions, Role, Txn, Value};

const KEYS: u64 = 6;
const FIELDS: [&str; 4] = ["a", "b", "c", "s"];

fn random_value(rng: &mut Rng, depth: u32) -> Value {
    match rng.below(if depth > 1 { 5 } else { 7 }) {
        0 => Value::Null,
        1 => Value::Bool(rng.chance(50)),
        2 => Value::from(rng.below(100) as i64),
        3 => Value::from(format!("v{}", rng.below(10))),
        4 => Value::set((0..rng.below(3)).map(|_| format!("e{}", rng.below(5)))),
        5 => Value::List(
            (0..rng.below(3))
                .map(|_| random_value(rng, depth + 1))
                .collect(),
        ),
        _ => {
            let mut m = Map::new();
            for _ in 0..rng.below(3) {
                m.insert(
                    format!("k{}", rng.below(3)).into(),
                    random_value(rng, depth + 1),
                );
            }
            Value::Map(m)
        }
    }
}

fn random_txn(rng: &mut Rng, r: &mut Repo<MemStorage>) -> Txn {
    let mut t = Txn::new();
    for _ in 0..1 + rng.below(3) {
        let key = format!("t/k{}", rng.below(KEYS));
        let exists = r.get(&key).unwrap().is_some();
        let field = FIELDS[rng.below(FIELDS.len() as u64) as usize];
        match rng.below(8) {
            0 | 1 => {
                let mut m = Map::new();
                for f in FIELDS {
                    if rng.chance(60) {
                        m.insert(f.into(), random_value(rng, 0));
                    }
                }
                t.put(&key, m).unwrap();
            }
            2 => {
                t.delete(&key).unwrap();
            }
            3 if exists => {
                let mut m = Map::new();
                m.insert(field.into(), random_value(rng, 0));
                t.update(&key, m).unwrap();
            }
            4 if exists => {
                t.unset(&key, field).unwrap();
            }
            5 | 6 => {
                let is_set = matches!(
                    r.get(&key).unwrap().and_then(|m| m.get(field)),
                    None | Some(Value::Set(_))
                );
                if is_set {
                    t.set_add(&key, field, [format!("e{}", rng.below(5))])
                        .unwrap();
                }
            }
            _ => {
                let is_set = matches!(
                    r.get(&key).unwrap().and_then(|m| m.get(field)),
                    Some(Value::Set(_))
                );
                if is_set {
                    t.set_remove(
                        &key,
                        field,
                        [format!("e{}", rng.below(3)), format!("e{}", rng.below(5))],
                    )
                    .unwrap();
                }
            }
        }
    }
    t
}

/// Send a random subset of `from`'s commits (shuffled, some duplicated) to `to`.
fn gossip(rng: &mut Rng, from: &Repo<MemStorage>, to: &mut Repo<MemStorage>, all: bool) {
    let (commits, seals) = from.export().unwrap();
    let mut batch: Vec<_> = commits
        .into_iter()
        .filter(|_| all || rng.chance(50))
        .collect();
    let dups: Vec<_> = batch.iter().filter(|_| rng.chance(20)).cloned().collect();
    batch.extend(dups);
    rng.shuffle(&mut batch);
    // Deliver in a few chunks, each with every seal (seals may also arrive more than once).
    while !batch.is_empty() {
        let n = (1 + rng.below(batch.len() as u64)) as usize;
        let chunk: Vec<_> = batch.drain(..n).collect();
        to.receive(&chunk, &seals).unwrap();
    }
}

/// In signed mode a repository has one owner and one root (docs/design.md §6.4): replica 0
/// founds it, lets every other replica write, and they all start from that history.
fn found(rs: &mut [Repo<MemStorage>]) {
    if rs[0].is_trusted_mode() {
        return; // unowned repositories: every replica may start its own root
    }
    for i in 1..rs.len() {
        let k = rs[i].author();
        rs[0].grant(&k, Role::Writer).unwrap();
    }
    rs[0].seal().unwrap();
    let (commits, seals) = rs[0].export().unwrap();
    for r in &mut rs[1..] {
        r.receive(&commits, &seals).unwrap();
    }
}

fn scenario(seed: u64, replicas: usize, steps: usize, opts: impl Fn(u8) -> RepoOptions) {
    let mut rng = Rng(seed);
    let mut rs: Vec<Repo<MemStorage>> = (0..replicas)
        .map(|i| Repo::open(MemStorage::new(), None, opts(i as u8 + 1)).unwrap())
        .collect();
    found(&mut rs);
    for _ in 0..steps {
        let i = rng.below(replicas as u64) as usize;
        if rng.chance(70) {
            let t = random_txn(&mut rng, &mut rs[i]);
            rs[i].commit(t).unwrap();
            if rng.chance(30) {
                rs[i].seal().unwrap();
            }
        } else {
            let j = rng.below(replicas as u64) as usize;
            if i != j {
                rs[i].seal().unwrap();
                let (a, b) = if i < j {
                    let (l, r) = rs.split_at_mut(j);
                    (&l[i], &mut r[0])
                } else {
                    let (l, r) = rs.split_at_mut(i);
                    (&r[0], &mut l[j])
                };
                gossip(&mut rng, a, b, false);
            }
        }
    }
    for r in &mut rs {
        r.seal().unwrap();
    }
    // Full exchange in random orders until everyone has everything.
    for i in 0..replicas {
        for j in 0..replicas {
            if i != j {
                let (a, b) = if i < j {
                    let (l, r) = rs.split_at_mut(j);
                    (&l[i], &mut r[0])
                } else {
                    let (l, r) = rs.split_at_mut(i);
                    (&r[0], &mut l[j])
                };
                gossip(&mut rng, a, b, true);
            }
        }
    }
    let h0 = rs[0].state_hash().unwrap();
    let hashes: Vec<[u8; 32]> = rs.iter_mut().map(|r| r.state_hash().unwrap()).collect();
    for (i, r) in rs.iter().enumerate() {
        assert_eq!(r.pending(), 0, "replica {i} still waits for parents");
        assert_eq!(
            r.commit_count(),
            rs[0].commit_count(),
            "replica {i} commit count"
        );
        assert_eq!(r.heads(), rs[0].heads(), "replica {i} heads");
        if hashes[i] != h0 {
            for k in 0..KEYS {
                let id = format!("k{k}");
                let (x, y) = (r.state().item("t", &id), rs[0].state().item("t", &id));
                if x.map(|i| i.visible()) != y.map(|i| i.visible()) {
                    eprintln!("t/{id}\n replica {i}: {x:#?}\n replica 0: {y:#?}");
                    break;
                }
            }
            panic!("replica {i} diverged (seed {seed})");
        }
        assert_eq!(
            r.state().collection("t").map(|c| c
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect::<Vec<_>>()),
            rs[0].state().collection("t").map(|c| c
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect::<Vec<_>>()),
        );
    }
    // Every replica survives a reopen from its own log and re-proves itself.
    for mut r in rs {
        let hash = r.state_hash().unwrap();
        let (log, _) = r.close().unwrap();
        let mut again = Repo::open(log, None, opts(99)).unwrap();
        assert_eq!(again.state_hash().unwrap(), hash);
        again.verify().unwrap();
    }
}

#[test]
fn replicas_converge_trusted() {
    for_seeds("replicas_converge_trusted", 0..400, |seed| {
        scenario(seed, 2 + (seed % 3) as usize, 60, trusted)
    });
}

#[test]
fn replicas_converge_signed() {
    // Signing costs ~0.5 ms natively: fewer, longer runs.
    for_seeds("replicas_converge_signed", 1000..1020, |seed| {
        scenario(seed, 3, 80, |n| {
            let mut o = signed(n);
            o.accept_trusted = false;
            o
        })
    });
}

/// A field written concurrently as a scalar and as a set whose last element is then removed:
/// the outcome must not depend on delivery order (a regression found in review).
#[test]
fn scalar_and_emptied_set_converge() {
    let at = |n: u8, t: u64| {
        let mut o = trusted(n);
        o.clock = clock(t);
        Repo::open(MemStorage::new(), None, o).unwrap()
    };
    let mut a = at(1, T0);
    let mut t = Txn::new();
    t.put("t/a", Map::new()).unwrap();
    a.commit(t).unwrap();
    let (base, _) = a.export().unwrap();
    let mut b = at(2, T0 + 1000);
    b.receive(&base, &[]).unwrap();
    let mut t = Txn::new();
    t.update(
        "t/a",
        [("k".to_string(), Value::from("y"))].into_iter().collect(),
    )
    .unwrap();
    b.commit(t).unwrap();
    let mut c = at(3, T0 + 2000);
    c.receive(&base, &[]).unwrap();
    let mut t = Txn::new();
    t.set_add("t/a", "k", ["e"]).unwrap();
    c.commit(t).unwrap();
    let mut t = Txn::new();
    t.set_remove("t/a", "k", ["e"]).unwrap();
    c.commit(t).unwrap();
    let (from_b, _) = b.export().unwrap();
    let (from_c, _) = c.export().unwrap();
    let mut x = at(4, T0 + 5000);
    x.receive(&from_c, &[]).unwrap();
    x.receive(&from_b, &[]).unwrap();
    let mut y = at(5, T0 + 5000);
    y.receive(&from_b, &[]).unwrap();
    y.receive(&from_c, &[]).unwrap();
    assert_eq!(x.state_hash().unwrap(), y.state_hash().unwrap());
    // The newest write to `k` was a set add, so `k` is a set (now empty).
    assert_eq!(
        x.get("t/a").unwrap().unwrap()["k"],
        Value::set(Vec::<String>::new())
    );
}
