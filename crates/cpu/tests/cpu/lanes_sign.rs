//! secp256k1 signing in lanes against libsecp256k1's `sign_ecdsa_recoverable` (RFC 6979 nonce,
//! low s, recovery id), byte for byte: random (key, digest) pairs, edge keys (1, 2, n − 1, n − 2,
//! small powers of two, keys with the high bits set) against edge digests (0, 1, n − 1, n, n + 1,
//! 2²⁵⁶ − 1), in groups of every size from 1 to 8 so ragged groups are covered; and every
//! signature recovers its signer's address through the lanes' own recovery.

use crate::support::{be, lanes_missing, order};
use chainsig_core::RecoverItem;
use chainsig_cpu::ecdsa_secp256k1::SRule;
use chainsig_cpu::lanes::{self, LANES};
use num_bigint::BigUint;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use secp256k1::{Message, Secp256k1, SecretKey};

fn n() -> BigUint {
    order(&chainsig_core::curve::SECP256K1)
}

/// Signs `pairs` in lanes (groups of sizes cycling 1..=8 from `first`) and compares every
/// signature with libsecp256k1's; the number compared.
fn compare(pairs: &[(SecretKey, [u8; 32])], first: usize, what: &str) -> usize {
    let mut groups = Vec::new();
    let (mut at, mut size) = (0, first);
    while at < pairs.len() {
        groups.push((at, pairs.len().min(at + size)));
        at += size;
        size = size % LANES + 1;
    }
    let secp = Secp256k1::signing_only();
    groups
        .par_iter()
        .map(|&(from, to)| {
            let group = &pairs[from..to];
            let keys: Vec<&SecretKey> = group.iter().map(|(k, _)| k).collect();
            let digests: Vec<[u8; 32]> = group.iter().map(|(_, d)| *d).collect();
            let got = lanes::sign_secp256k1(&keys, &digests).expect("lanes available");
            assert_eq!(got.len(), group.len());
            for (i, (key, digest)) in group.iter().enumerate() {
                let want = secp.sign_ecdsa_recoverable(Message::from_digest(*digest), key);
                assert_eq!(
                    got[i].serialize_compact(),
                    want.serialize_compact(),
                    "{what}: item {} (group {from}..{to}), digest {}",
                    from + i,
                    hex::encode(digest)
                );
            }
            group.len()
        })
        .sum()
}

fn random_key(rng: &mut ChaCha20Rng) -> SecretKey {
    loop {
        if let Ok(key) = SecretKey::from_byte_array(rng.gen()) {
            return key;
        }
    }
}

fn random_pairs(rng: &mut ChaCha20Rng, count: usize) -> Vec<(SecretKey, [u8; 32])> {
    (0..count)
        .map(|_| {
            let mut digest: [u8; 32] = rng.gen();
            if rng.gen_bool(0.05) {
                digest[..16].fill(0xff); // at or above n: RFC 6979 and s reduce it
            }
            (random_key(rng), digest)
        })
        .collect()
}

fn edge_keys() -> Vec<SecretKey> {
    let n = n();
    let mut values: Vec<BigUint> = [1u32, 2, 3, 7, 8, 255, 256]
        .iter()
        .map(|&v| BigUint::from(v))
        .collect();
    values.extend([
        &n - 1u32,
        &n - 2u32,
        &n - 3u32,
        (&n - 1u32) >> 1,
        ((&n - 1u32) >> 1) + 1u32,
    ]);
    for bit in [31u32, 32, 51, 52, 63, 64, 103, 104, 127, 128, 200, 254, 255] {
        values.push(BigUint::from(1u32) << bit);
        values.push((BigUint::from(1u32) << bit) - 1u32);
    }
    // High-bit keys: all ones in the top limbs, just below n.
    values.push(&n - (BigUint::from(1u32) << 128));
    values.push((&n >> 128u32) << 128u32);
    values
        .iter()
        .map(|v| SecretKey::from_byte_array(be(v)).expect("in [1, n)"))
        .collect()
}

fn edge_digests(rng: &mut ChaCha20Rng) -> Vec<[u8; 32]> {
    let n = n();
    let top: BigUint = (BigUint::from(1u32) << 256) - 1u32;
    let mut v: Vec<[u8; 32]> = [
        BigUint::from(0u32),
        BigUint::from(1u32),
        &n - 1u32,
        n.clone(),
        &n + 1u32,
        top,
        (&n - 1u32) >> 1,
    ]
    .iter()
    .map(be)
    .collect();
    v.push(rng.gen());
    v
}

#[test]
fn lanes_sign_a_hundred_thousand_random_pairs_as_libsecp256k1() {
    if lanes_missing() {
        return;
    }
    let mut rng = ChaCha20Rng::seed_from_u64(0x5167);
    let pairs = random_pairs(&mut rng, 100_000);
    assert_eq!(compare(&pairs, 1, "random"), 100_000);
}

#[test]
fn lanes_sign_edge_keys_and_digests_as_libsecp256k1() {
    if lanes_missing() {
        return;
    }
    let mut rng = ChaCha20Rng::seed_from_u64(0xed9e);
    let keys = edge_keys();
    let digests = edge_digests(&mut rng);
    let mut pairs: Vec<(SecretKey, [u8; 32])> = keys
        .iter()
        .flat_map(|k| digests.iter().map(move |d| (*k, *d)))
        .collect();
    for first in 1..=LANES {
        compare(&pairs, first, "edge");
    }
    // Edge pairs shuffled among random ones, so every group mixes them.
    pairs.extend(random_pairs(&mut rng, 300));
    for i in (1..pairs.len()).rev() {
        pairs.swap(i, rng.gen_range(0..=i));
    }
    compare(&pairs, 3, "mixed");
}

#[test]
fn lane_signatures_recover_their_signer_and_carry_both_parities() {
    if lanes_missing() {
        return;
    }
    let mut rng = ChaCha20Rng::seed_from_u64(0x7ec);
    let secp = Secp256k1::new();
    let pairs = random_pairs(&mut rng, 8 * 50);
    let mut odd = 0;
    for group in pairs.chunks(LANES) {
        let keys: Vec<&SecretKey> = group.iter().map(|(k, _)| k).collect();
        let digests: Vec<[u8; 32]> = group.iter().map(|(_, d)| *d).collect();
        let sigs = lanes::sign_secp256k1(&keys, &digests).unwrap();
        let items: Vec<RecoverItem> = sigs
            .iter()
            .zip(&digests)
            .map(|(sig, digest)| {
                let (id, rs) = sig.serialize_compact();
                odd += i32::from(id) as usize;
                RecoverItem {
                    digest: *digest,
                    r: rs[..32].try_into().unwrap(),
                    s: rs[32..].try_into().unwrap(),
                    recovery_id: i32::from(id) as u8,
                }
            })
            .collect();
        let recovered = lanes::recover_items(SRule::LowOnly, &items).unwrap();
        for (k, (key, _)) in group.iter().enumerate() {
            let public = secp256k1::PublicKey::from_secret_key(&secp, key);
            let want = chainsig_core::Recovered::from_pubkey(public.serialize_uncompressed());
            assert_eq!(
                recovered[k],
                Some(want),
                "signature {k} recovers its signer"
            );
        }
    }
    assert!((100..300).contains(&odd), "{odd} odd recovery ids of 400");
}

/// The release-mode check: a million random pairs, lanes against libsecp256k1. Run it with
/// `cargo test --release -p chainsig-cpu --test cpu -- lanes_sign:: --ignored --nocapture`.
#[test]
#[ignore = "tens of seconds in release mode; run by hand"]
fn a_million_pairs_signed_in_lanes() {
    assert!(lanes::available(), "this CPU lacks AVX-512 IFMA");
    let started = std::time::Instant::now();
    let mut rng = ChaCha20Rng::seed_from_u64(0x51_0000);
    let pairs = random_pairs(&mut rng, 1_000_000);
    let compared = compare(&pairs, 5, "million");
    println!(
        "{compared} signatures, lanes = libsecp256k1 byte for byte ({:.0?})",
        started.elapsed()
    );
}
