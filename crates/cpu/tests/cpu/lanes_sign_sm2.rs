//! SM2 signing in lanes against chainsig-weierstrass's `sign_prehashed_with_nonce` (the scalar
//! signer, itself checked against the standard's vectors and RustCrypto's `sm2`), byte for byte
//! and verdict for verdict: random (key, e, nonce) triples, and edge triples that reach every
//! refusal: nonces 0, n, n + 1 and 2²⁵⁶ − 1, r = 0 (e = −x₁ mod n), r + k = n (e = −k − x₁),
//! with keys 1, 2, n − 2 and digests 0, n − 1, n, 2²⁵⁶ − 1, in groups of every size 1..8.

use crate::support::{be, lanes_missing, order};
use chainsig_cpu::lanes::{self, LANES};
use chainsig_weierstrass::{sign_prehashed_with_nonce, SecretKey};
use num_bigint::BigUint;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;

type Triple = (SecretKey, [u8; 32], [u8; 32]);

fn n() -> BigUint {
    order(&chainsig_core::curve::SM2)
}

/// Lanes (groups of sizes cycling 1..=8 from `first`) against the scalar signer; the number of
/// signatures made.
fn compare(triples: &[Triple], first: usize, what: &str) -> usize {
    let mut groups = Vec::new();
    let (mut at, mut size) = (0, first);
    while at < triples.len() {
        groups.push((at, triples.len().min(at + size)));
        at += size;
        size = size % LANES + 1;
    }
    groups
        .par_iter()
        .map(|&(from, to)| {
            let group = &triples[from..to];
            let keys: Vec<&SecretKey> = group.iter().map(|t| &t.0).collect();
            let e: Vec<[u8; 32]> = group.iter().map(|t| t.1).collect();
            let k: Vec<[u8; 32]> = group.iter().map(|t| t.2).collect();
            let got = lanes::sign_sm2_with_nonces(&keys, &e, &k).expect("lanes available");
            assert_eq!(got.len(), group.len());
            let mut signed = 0;
            for (i, (key, e, k)) in group.iter().enumerate() {
                let want = sign_prehashed_with_nonce(key, e, k);
                assert_eq!(
                    got[i],
                    want,
                    "{what}: item {}, e {}, k {}",
                    from + i,
                    hex::encode(e),
                    hex::encode(k)
                );
                signed += want.is_some() as usize;
            }
            signed
        })
        .sum()
}

fn random_key(rng: &mut ChaCha20Rng) -> SecretKey {
    loop {
        if let Ok(key) = SecretKey::from_bytes(&rng.gen()) {
            return key;
        }
    }
}

/// x₁ of k·G, for k in [1, n − 2].
fn x1(k: &BigUint) -> BigUint {
    let key = SecretKey::from_bytes(&be(k)).expect("k in [1, n − 2]");
    BigUint::from_bytes_be(&key.public_key().x())
}

fn edge_triples(rng: &mut ChaCha20Rng) -> Vec<Triple> {
    let n = n();
    let top: BigUint = (BigUint::from(1u32) << 256) - 1u32;
    let keys: Vec<BigUint> = vec![BigUint::from(1u32), BigUint::from(2u32), &n - 2u32];
    let nonces = [
        BigUint::from(0u32),
        BigUint::from(1u32),
        BigUint::from(2u32),
        &n - 2u32,
        &n - 1u32,
        n.clone(),
        &n + 1u32,
        top.clone(),
    ];
    let digests = [BigUint::from(0u32), &n - 1u32, n.clone(), top];
    let mut out = Vec::new();
    for d in &keys {
        let key = || SecretKey::from_bytes(&be(d)).unwrap();
        for k in &nonces {
            for e in &digests {
                out.push((key(), be(e), be(k)));
            }
        }
        // r = 0 and r + k = n, for random k.
        for _ in 0..4 {
            let k = BigUint::from_bytes_be(&rng.gen::<[u8; 32]>()) % (&n - 2u32) + 1u32;
            let x = x1(&k) % &n;
            let r_zero = (&n - &x) % &n;
            let r_plus_k = (&n * 2u32 - &k - &x) % &n;
            out.push((key(), be(&r_zero), be(&k)));
            out.push((key(), be(&r_plus_k), be(&k)));
        }
    }
    out
}

fn random_triples(rng: &mut ChaCha20Rng, count: usize) -> Vec<Triple> {
    (0..count)
        .map(|_| (random_key(rng), rng.gen(), rng.gen()))
        .collect()
}

#[test]
fn sm2_lanes_sign_as_the_scalar_signer() {
    if lanes_missing() {
        return;
    }
    let mut rng = ChaCha20Rng::seed_from_u64(0x5a2);
    let random = random_triples(&mut rng, 20_000);
    let signed = compare(&random, 1, "random");
    assert!(signed > 19_990, "{signed} of 20000 random nonces signed");
    let mut edges = edge_triples(&mut rng);
    for first in 1..=LANES {
        compare(&edges, first, "edge");
    }
    edges.extend(random_triples(&mut rng, 200));
    for i in (1..edges.len()).rev() {
        edges.swap(i, rng.gen_range(0..=i));
    }
    let signed = compare(&edges, 5, "mixed");
    assert!(
        signed > 200,
        "{signed}: edge nonces both sign and are refused"
    );
}

/// The release-mode check: a million random (key, digest, nonce) triples, lanes against the
/// scalar SM2 signer. Run it with
/// `cargo test --release -p chainsig-cpu --test cpu -- lanes_sign_sm2:: --ignored --nocapture`.
#[test]
#[ignore = "tens of seconds in release mode; run by hand"]
fn a_million_sm2_triples_signed_in_lanes() {
    assert!(lanes::available(), "this CPU lacks AVX-512 IFMA");
    let started = std::time::Instant::now();
    let mut rng = ChaCha20Rng::seed_from_u64(0x5a2_0000);
    let triples = random_triples(&mut rng, 1_000_000);
    let signed = compare(&triples, 3, "million");
    assert!(
        signed > 999_000,
        "{signed} of a million random nonces signed"
    );
    println!(
        "{signed} SM2 signatures, lanes = the scalar signer byte for byte ({:.0?})",
        started.elapsed()
    );
}
