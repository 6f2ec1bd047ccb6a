//! The lane arithmetic against num-bigint, lane by lane, for all six moduli, on edge values (0, 1,
//! m − 1, m and up to 2²⁵⁶ − 1, which the lanes' [0, 2m) invariant admits) and random ones; and
//! the point code through u₁·G + u₂·Q against the scalar verifiers' expectations.

use super::field::Fe8;
use super::modulus::{
    from_radix52, to_radix52, LaneModulus, Sm2N, Sm2P, K256N, K256P, LIMBS, P256N, P256P,
};
use num_bigint::BigUint;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

fn big(l: &[u64; LIMBS]) -> BigUint {
    l.iter()
        .rev()
        .fold(BigUint::from(0u32), |acc, &x| (acc << 52) + x)
}

fn limbs(v: &BigUint) -> [u64; LIMBS] {
    let mut bytes = [0u8; 32];
    let b = v.to_bytes_be();
    bytes[32 - b.len()..].copy_from_slice(&b);
    super::modulus::radix52_from_be(&bytes)
}

/// Edge values and random ones, every one below 2²⁵⁶ (so below 2m).
fn samples(m: &BigUint, rng: &mut ChaCha20Rng) -> Vec<BigUint> {
    let two256 = BigUint::from(1u32) << 256;
    let mut v = vec![
        BigUint::from(0u32),
        BigUint::from(1u32),
        BigUint::from(2u32),
        m - 1u32,
        m.clone(),
        m + 1u32,
        &two256 - 1u32,
        &two256 - m,
        (m - 1u32) >> 1,
        BigUint::from((1u64 << 52) - 1),
        BigUint::from(1u32) << 255,
    ];
    while v.len() < 8 * 40 {
        let mut bytes = [0u8; 32];
        rng.fill(&mut bytes);
        if rng.gen_bool(0.3) {
            for limb in 0..4 {
                match rng.gen_range(0..3) {
                    0 => bytes[limb * 8..limb * 8 + 8].fill(0xff),
                    1 => bytes[limb * 8..limb * 8 + 8].fill(0),
                    _ => {}
                }
            }
        }
        v.push(BigUint::from_bytes_be(&bytes));
    }
    v
}

/// Runs every operation on one group of eight lanes and returns (name, lanes) pairs.
#[target_feature(enable = "avx512f,avx512ifma")]
fn ops<M: LaneModulus>(
    a: &[[u64; LIMBS]; 8],
    b: &[[u64; LIMBS]; 8],
) -> Vec<(&'static str, [[u64; LIMBS]; 8], u8)> {
    let (x, y) = (Fe8::<M>::load(a), Fe8::<M>::load(b));
    vec![
        ("mul", x.mul(&y).store(), 0),
        ("square", x.square().store(), 0),
        ("add", x.add(&y).store(), 0),
        ("sub", x.sub(&y).store(), 0),
        ("neg", x.neg().store(), 0),
        ("canonical", x.canonical().store(), 0),
        ("mont round trip", x.to_mont().out_of_mont().store(), 0),
        ("invert", x.to_mont().invert().out_of_mont().store(), 0),
        (
            "invert_public",
            x.to_mont().invert_public().out_of_mont().store(),
            0,
        ),
        ("is_zero", x.store(), x.is_zero()),
        ("equals", x.store(), x.equals(&y)),
    ]
}

fn check_modulus<M: LaneModulus>(name: &str, seed: u64) {
    let m = big(&M::M.m);
    let r_inv = (BigUint::from(1u32) << 260u32).modpow(&(&m - 2u32), &m);
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let xs = samples(&m, &mut rng);
    let mut ys = xs.clone();
    ys.rotate_left(3);
    let two_m = &m * 2u32;
    for (xg, yg) in xs.chunks(8).zip(ys.chunks(8)) {
        let a: [[u64; LIMBS]; 8] = core::array::from_fn(|l| limbs(&xg[l]));
        let b: [[u64; LIMBS]; 8] = core::array::from_fn(|l| limbs(&yg[l]));
        // SAFETY: the callers run only where `available()` holds.
        let results = unsafe { ops::<M>(&a, &b) };
        for (op, lanes, mask) in results {
            for l in 0..8 {
                let (x, y) = (&xg[l], &yg[l]);
                let got = big(&lanes[l]);
                assert!(
                    lanes[l].iter().all(|&v| v < 1 << 52),
                    "{name} {op}: limbs normalised"
                );
                let reduced = |v: &BigUint| v % &m;
                let (want, exact) = match op {
                    "mul" => ((x * y * &r_inv) % &m, false),
                    "square" => ((x * x * &r_inv) % &m, false),
                    "add" => ((x + y) % &m, false),
                    "sub" => ((x + &two_m * 2u32 - y) % &m, false),
                    "neg" => ((&two_m * 2u32 - x) % &m, false),
                    "canonical" | "mont round trip" => (reduced(x), true),
                    "invert" | "invert_public" => (reduced(x).modpow(&(&m - 2u32), &m), true),
                    "is_zero" => {
                        assert_eq!(
                            mask >> l & 1 == 1,
                            reduced(x) == BigUint::from(0u32),
                            "{name} is_zero {x}"
                        );
                        continue;
                    }
                    "equals" => {
                        assert_eq!(
                            mask >> l & 1 == 1,
                            reduced(x) == reduced(y),
                            "{name} equals {x} {y}"
                        );
                        continue;
                    }
                    _ => unreachable!(),
                };
                if exact {
                    assert_eq!(got, want, "{name} {op} of {x}, {y} (lane {l})");
                } else {
                    assert!(got < two_m, "{name} {op} of {x}, {y}: {got} not below 2m");
                    assert_eq!(&got % &m, want, "{name} {op} of {x}, {y} (lane {l})");
                }
            }
        }
    }
}

#[test]
fn field_arithmetic_matches_bigint_in_every_lane() {
    if !super::available() {
        eprintln!("skipped: this CPU lacks AVX-512 IFMA");
        return;
    }
    check_modulus::<Sm2P>("sm2 p", 1);
    check_modulus::<Sm2N>("sm2 n", 2);
    check_modulus::<P256P>("p256 p", 3);
    check_modulus::<P256N>("p256 n", 4);
    check_modulus::<K256P>("secp256k1 p", 5);
    check_modulus::<K256N>("secp256k1 n", 6);
}

#[test]
fn radix_conversion_round_trips() {
    let mut rng = ChaCha20Rng::seed_from_u64(9);
    for _ in 0..100 {
        let v: [u64; 4] = rng.gen();
        assert_eq!(from_radix52(&to_radix52(&v)), v);
    }
}

/// The eight-lane RFC 6979 nonces against the one-at-a-time function, byte for byte: random keys
/// and digests, digests at and above n (reduced first) and keys of extreme bytes.
#[test]
fn lane_nonces_are_the_scalar_nonces() {
    if !super::available() {
        eprintln!("skipped: this CPU lacks AVX-512 IFMA");
        return;
    }
    let n = chainsig_core::curve::SECP256K1.n;
    let mut rng = ChaCha20Rng::seed_from_u64(6979);
    for round in 0..300 {
        let mut keys = [[0u8; 32]; 8];
        let mut digests = [[0u8; 32]; 8];
        for lane in 0..8 {
            rng.fill(&mut keys[lane]);
            rng.fill(&mut digests[lane]);
            match (round + lane) % 7 {
                0 => digests[lane] = n,
                1 => digests[lane] = [0xff; 32],
                2 => keys[lane] = [0; 32],
                3 => keys[lane] = [0xff; 32],
                _ => {}
            }
        }
        let mut got = [[0u8; 32]; 8];
        // SAFETY: the CPU has the lanes (checked above).
        unsafe { super::nonce::nonces(&keys, &digests, &mut got) };
        for lane in 0..8 {
            let mut want = [0u8; 32];
            crate::rfc6979::nonce(&keys[lane], &digests[lane], 0, &mut want);
            assert_eq!(got[lane], want, "round {round}, lane {lane}");
        }
    }
}
